"""Per-marker precision tiers from the hand-labelled precision audits.

A marker's pairs are distant supervision; the audits (``tests/data/precision_audit*.jsonl``,
docs/precision-audit.md) measure how often they hold their relation. A marker whose audited
precision is below a stated threshold, on enough audited pairs, goes to the
``needs_validation`` tier: its pairs stay in train and validation, but enter the test split
only through the LLM-judged silver set (``ratio.judge.silver``); the split stage holds them
back in ``test/pending_queries.parquet``.

The tiers are data, derived from the audits by ``scripts/precision_audit.py tiers`` into
``data/tiers.tsv`` (its header states the threshold, the minimum number of audited pairs
and the audit files). Precision is counted on the audited pairs that still pass the mining
validity rules (``ratio.build.validity``), so a marker is judged on the pairs it yields
today. A marker without audited pairs, or with fewer than the minimum, stays ``core``.
A lexicon directory may carry its own ``tiers.tsv``; the shipped lexicon uses
``data/tiers.tsv``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ratio.io import RatioError
from ratio.lexicon.spans import normalize_marker

CORE = "core"
NEEDS_VALIDATION = "needs_validation"
TIERS = (CORE, NEEDS_VALIDATION)
TIERS_FILE = "tiers.tsv"
COLUMNS = (
    "marker",
    "relation",
    "tier",
    "audited",
    "valid",
    "precision",
    "wilson_low",
    "wilson_high",
    "dropped_by_rules",
)
_SETTING = re.compile(r"^#\s*(threshold|min_audited)\s*[:=]\s*(\S+)")


class TiersError(RatioError):
    """A tiers file is malformed; the message names the file and line."""


@dataclass(frozen=True)
class Tiers:
    """Loaded tiers: marker -> tier for the listed markers, and the file's stated settings."""

    tier: dict[str, str]
    threshold: float | None = None
    min_audited: int | None = None
    path: str = ""

    def needs_validation(self) -> list[str]:
        """Markers of the ``needs_validation`` tier, sorted."""
        return sorted(m for m, t in self.tier.items() if t == NEEDS_VALIDATION)


def load_tiers(path: str | os.PathLike) -> Tiers:
    """Read a tiers file; a bad row raises ``TiersError`` naming the file and line."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise TiersError(f"{p}: cannot read tiers: {e.strerror or e}") from e
    tier: dict[str, str] = {}
    settings: dict[str, str] = {}
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        if raw.startswith("#"):
            m = _SETTING.match(raw)
            if m:
                settings[m.group(1)] = m.group(2)
            continue
        cols = raw.split("\t")
        if tuple(cols) == COLUMNS:
            continue
        if len(cols) != len(COLUMNS):
            raise TiersError(
                f"{p}:{lineno}: expected {len(COLUMNS)} tab-separated columns {COLUMNS}, "
                f"got {len(cols)}"
            )
        marker, tier_name = normalize_marker(cols[0]), cols[2].strip()
        if tier_name not in TIERS:
            raise TiersError(f"{p}:{lineno}: unknown tier {tier_name!r}; expected one of {TIERS}")
        tier[marker] = tier_name
    try:
        threshold = float(settings["threshold"]) if "threshold" in settings else None
        min_audited = int(settings["min_audited"]) if "min_audited" in settings else None
    except ValueError as e:
        raise TiersError(f"{p}: bad threshold/min_audited header: {e}") from e
    return Tiers(tier, threshold, min_audited, str(p))
