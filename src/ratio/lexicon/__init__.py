"""Marker lexicons: shipped TSV data, validation, the compiled matcher and construction tools."""

from __future__ import annotations

from ratio.lexicon.matcher import MarkerMatch, MarkerMatcher
from ratio.lexicon.model import (
    LEXICON_RELATIONS,
    SOURCES,
    Lexicon,
    LexiconEntry,
    LexiconError,
    load_lexicon,
)
from ratio.lexicon.spans import leading_span, normalize_marker

__all__ = [
    "LEXICON_RELATIONS",
    "SOURCES",
    "Lexicon",
    "LexiconEntry",
    "LexiconError",
    "MarkerMatch",
    "MarkerMatcher",
    "leading_span",
    "load_lexicon",
    "normalize_marker",
]
