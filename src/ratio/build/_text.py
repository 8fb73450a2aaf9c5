"""The Appendix B.1 text operations mining applies, from ``ratio.corpus.text.normalize``.

Tested by tests/build/test_mine.py.
"""

from __future__ import annotations

from ratio.corpus.text.normalize import clean_gold_prefix, match_form, strip_intro_clause, too_short

__all__ = ["capitalize_first", "clean_gold_prefix", "match_form", "strip_intro_clause", "too_short"]


def capitalize_first(text: str) -> str:
    """Upper-case a leading lowercase word (a gold is a new sentence), but leave mixed-case or
    symbol-led tokens ("k-means", "mAP", "t-SNE") alone; same rule as ``normalize``."""
    t = text.strip()
    if t and t[0].islower() and (len(t) == 1 or t[1].islower() or t[1] in " ,'"):
        return t[0].upper() + t[1:]
    return t
