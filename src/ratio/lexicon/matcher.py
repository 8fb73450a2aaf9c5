"""The compiled marker matcher: which lexicon marker opens a sentence, if any.

Markers are comma-delimited, so a sentence can only match at a comma boundary.
Instead of testing every marker (thousands) against every sentence (hundreds of
millions), the matcher normalizes the few pre-comma prefixes of the sentence and
looks each one up in a dict: cost per sentence is independent of lexicon size.
"""

from __future__ import annotations

from dataclasses import dataclass

from ratio.lexicon.model import Lexicon
from ratio.lexicon.spans import LEADING_JUNK, normalize_marker


@dataclass(frozen=True, slots=True)
class MarkerMatch:
    """A marker found at the start of a sentence; ``text[start_of_rest:]`` is the remainder."""

    marker: str
    relation: str
    start_of_rest: int
    source: str = ""


class MarkerMatcher:
    """Match the longest lexicon marker that opens a sentence and ends at a comma."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self.version = lexicon.version
        self._table: dict[str, tuple[str, str]] = {
            e.marker: (e.relation, e.source) for e in lexicon.entries
        }
        longest = max((len(m) for m in self._table), default=0)
        # slack: the original text may carry extra spaces or junk the normal form drops
        self._max_chars = longest + 16
        # only markers with an inner comma ("that is, more generally") need later commas
        self._multi_comma = any("," in m for m in self._table)

    def match(self, text: str | None) -> MarkerMatch | None:
        """The longest marker that begins ``text`` and ends exactly at a comma, or ``None``."""
        if not text:
            return None
        start = len(text) - len(text.lstrip(LEADING_JUNK))
        limit = start + self._max_chars
        pos = text.find(",", start, limit)
        best: MarkerMatch | None = None
        table = self._table
        while pos >= 0:
            key = normalize_marker(text[start:pos])
            hit = table.get(key)
            if hit is not None:
                rest = len(text) - len(text[pos + 1 :].lstrip())  # after the comma's spaces
                best = MarkerMatch(key, hit[0], rest, hit[1])
            if not self._multi_comma:
                break
            pos = text.find(",", pos + 1, limit)
        return best

    def __len__(self) -> int:
        return len(self._table)
