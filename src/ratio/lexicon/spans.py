"""Sentence-initial pre-comma spans: the one definition shared by matcher and tools.

A marker is a comma-delimited phrase that opens a sentence ("To address this
issue, we ..."). Matcher, ``discover``, ``extend`` and ``neighbors`` must agree on
what "the span" is, or a tool would propose markers the matcher can never fire.

Tested by tests/lexicon/test_matcher.py.
"""

from __future__ import annotations

# Characters tolerated before the first word: whitespace, quotes, opening brackets,
# dashes and list bullets. They are skipped, never part of a marker.
LEADING_JUNK = " \t\r\n\"'`“”‘’«»([{*-–—•"


def normalize_marker(text: str) -> str:
    """Lowercase match form of a marker: no surrounding junk, single spaces, no trailing comma."""
    s = " ".join(text.lower().split())
    s = s.lstrip(LEADING_JUNK)
    s = s.rstrip(" ,")
    return s.replace("’", "'")


def leading_span(match_text: str, max_words: int = 7) -> str | None:
    """The sentence-initial pre-comma span of ``match_text`` (≤ ``max_words`` words).

    Returns the normalized span (see :func:`normalize_marker`), or ``None`` when
    the sentence has no comma, the span is empty, or it is longer than ``max_words``.
    """
    start = len(match_text) - len(match_text.lstrip(LEADING_JUNK))
    comma = match_text.find(",", start)
    if comma < 0:
        return None
    words = match_text[start:comma].split()
    if not words or len(words) > max_words:
        return None
    return normalize_marker(" ".join(words))
