"""Anaphora analysis (paper Appendix G, "Favoring anaphoric relations").

Does the judge accept pairs whose marker explicitly points back ("to address *this*
issue") more often than pairs with a bare marker? A 2x2 table of (anaphor, accepted)
and Fisher's exact test answer it per relation.

Tested by tests/judge/test_stats.py.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

ANAPHORS: tuple[str, ...] = ("this", "these", "such", "it", "the above")
_ANAPHOR_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(a) for a in ANAPHORS) + r")\b", re.IGNORECASE
)


def has_anaphor(text: str) -> bool:
    """True when ``text`` contains an explicit anaphor (this, these, such, it, the above)."""
    return bool(_ANAPHOR_RE.search(text or ""))


def anaphora_table(markers: Sequence[str], accepted: Sequence[bool]) -> dict:
    """Share of pairs whose marker has an anaphor, acceptance with/without, Fisher exact test."""
    from scipy.stats import fisher_exact

    if len(markers) != len(accepted):
        raise ValueError("markers and accepted differ in length")
    n = len(markers)
    cells = Counter((has_anaphor(m), bool(a)) for m, a in zip(markers, accepted, strict=True))
    aw, rw, ao, ro = (cells[f, a] for f in (True, False) for a in (True, False))
    out = {
        "n": n,
        "with_anaphor": aw + rw,
        "share_with_anaphor": (aw + rw) / n if n else float("nan"),
        "accept_rate_with": aw / (aw + rw) if aw + rw else float("nan"),
        "accept_rate_without": ao / (ao + ro) if ao + ro else float("nan"),
        "table": [[aw, rw], [ao, ro]],
        "odds_ratio": float("nan"),
        "p_value": float("nan"),
    }
    if (aw + rw) and (ao + ro):
        res = fisher_exact([[aw, rw], [ao, ro]], alternative="two-sided")
        out["odds_ratio"] = float(res.statistic)
        out["p_value"] = float(res.pvalue)
    return out
