"""Per-marker precision tiers from the hand-labelled precision audits.

The audits (``tests/data/precision_audit*.jsonl``, docs/precision-audit.md) measure how often
a marker's pairs hold their relation. A marker below its relation's precision threshold, on
enough audited pairs, goes to the ``needs_validation`` tier: its pairs stay in train and
validation but enter the test split only through the LLM-judged silver set
(``ratio.judge.silver``); the split stage holds them in ``test/pending_queries.parquet``.
The threshold is per relation because the precision targets are: a marker below its
relation's target would pull the published test pairs under it. ``data/tiers.tsv`` is derived
by ``scripts/precision_audit.py tiers`` (its header states the settings), counting only audited
pairs that still pass the mining validity rules (``ratio.build.validity``); a marker with too
few audited pairs stays ``core``. A lexicon directory may carry its own ``tiers.tsv``.

Tested by tests/build/test_precision_tiers.py, tests/judge/test_audit.py.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ratio.core.io import RatioError
from ratio.core.records import RELATIONS
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
_SETTING = re.compile(r"^#\s*(threshold|min_audited)\s*[:=]\s*(.+?)\s*$")


class TiersError(RatioError):
    """A tiers file is malformed; the message names the file and line."""


def parse_thresholds(text: str) -> dict[str, float]:
    """Per-relation thresholds from ``"0.85"`` (every relation) and/or ``"broaden=0.8"`` tokens.

    A bare value applies to every relation and ``relation=value`` overrides it, whatever the
    order; a relation left without a value is an error, so a header states all of them.
    """
    default: float | None = None
    given: dict[str, float] = {}
    for token in text.split():
        rel, _, value = token.rpartition("=")
        if rel and rel not in RELATIONS:
            raise ValueError(
                f"unknown relation {rel!r} in threshold {token!r}; expected {RELATIONS}"
            )
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"threshold {token!r} is not a number") from None
        if rel:
            given[rel] = number
        else:
            default = number
    if default is not None:
        given = {r: given.get(r, default) for r in RELATIONS}
    missing = [r for r in RELATIONS if r not in given]
    if missing:
        raise ValueError(f"no threshold for {', '.join(missing)} in {text!r}")
    return {r: given[r] for r in RELATIONS}


def format_thresholds(thresholds: dict[str, float]) -> str:
    """The header form ``address=0.9 broaden=0.8 specify=0.9`` that :func:`parse_thresholds` reads."""
    return " ".join(f"{r}={thresholds[r]:g}" for r in RELATIONS)


@dataclass(frozen=True)
class Tiers:
    """Marker -> tier for the listed markers, and the file's stated settings (``thresholds``:
    relation -> precision threshold, empty when the file states none)."""

    tier: dict[str, str]
    thresholds: dict[str, float] = field(default_factory=dict)
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
        thresholds = parse_thresholds(settings["threshold"]) if "threshold" in settings else {}
        min_audited = int(settings["min_audited"]) if "min_audited" in settings else None
    except ValueError as e:
        raise TiersError(f"{p}: bad threshold/min_audited header: {e}") from e
    return Tiers(tier, thresholds, min_audited, str(p))
