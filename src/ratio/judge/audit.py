"""The hand-labelled precision audit of mined (query, gold) pairs (docs/precision-audit.md).

The marker lexicons are distant supervision: the only way to know how often a mined pair really
holds its relation is to read a seeded random sample against the paper's definitions (section 3,
Appendix I.2). The lexicon's precision tiers (``ratio.lexicon.tiers``, ``data/tiers.tsv``) that
the build reads are derived from those labels, so the sampling, the scoring and the derivation
live here, where tests call them and the shipped tiers can be checked against the audit files;
``scripts/precision_audit.py`` is only their command line. Everything here needs the labelled
JSONL files alone (and, to draw a sample, a build's splits); what reads a built benchmark to
judge a tiers file or make a calibration set is in ``ratio.judge.audit_build``.

Readers label the pairs by docs/annotation-guideline.md; :data:`FAILURE_KINDS` are its codes.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from ratio.build.validity import failed_rule
from ratio.core.records import RELATIONS
from ratio.judge.agreement import cohen_kappa
from ratio.lexicon.tiers import COLUMNS as TIER_COLUMNS
from ratio.lexicon.tiers import CORE, NEEDS_VALIDATION, format_thresholds

SPLITS = ("train", "validation", "test")
DEFAULT_MIN_AUDITED = 10  # fewer audited pairs than this are no evidence about a marker
FIELDS = ("query_id", "relation", "marker", "query", "gold", "paper_id", "split", "label", "note")

GUIDELINE = "docs/annotation-guideline.md"
# The primary failure kind of an invalid pair, per relation, in the order of the guideline's
# decision procedure (the first question a pair fails names it). The guideline's "Labels and
# failure kinds" table lists the same codes; a test keeps the two equal. An invalid pair's
# note starts with its code: "vague_gold: ...", or "adjudicated (A): vague_gold: ...".
FAILURE_KINDS: dict[str, tuple[str, ...]] = {
    "address": (
        "unassessable",
        "no_problem",
        "anaphor_hides_problem",
        "intention_or_diagnostic",
        "vague_gold",
        "misses_core_problem",
    ),
    "specify": (
        "unassessable",
        "inverse",
        "setup_or_deferral",
        "justification_or_contrast",
        "sibling_or_new_result",
    ),
    "broaden": (
        "unassessable",
        "lost_math",
        "topic_change",
        "inverse",
        "sibling_or_parallel",
    ),
}
_ADJUDICATED = re.compile(r"^adjudicated \([AB]\):\s*")


def failure_kind(relation: str, note: str) -> str | None:
    """The failure-kind code a note starts with (after an ``adjudicated (A|B):`` prefix), or
    None when it starts with none of ``relation``'s codes (valid pairs, notes before the codes)."""
    head = _ADJUDICATED.sub("", note.strip()).split(":", 1)[0].strip()
    return head if head in FAILURE_KINDS.get(relation, ()) else None


def reading_instructions() -> str:
    """What ``scripts/precision_audit.py sample`` tells the readers of the file it wrote."""
    kinds = "; ".join(f"{rel}: {', '.join(codes)}" for rel, codes in FAILURE_KINDS.items())
    return (
        f'label each pair by {GUIDELINE}: "label" true or false, and on every false pair a '
        f'"note" "<failure kind>: <reason>", the kind one of {kinds}'
    )


def wilson_interval(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for k successes out of n (better than Wald at small n / p near 1)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def load_pairs(
    run: Path, splits: Sequence[str] = SPLITS, include_pending: bool = False
) -> list[dict]:
    """The mined query/gold pairs of a build's ``splits``, in a deterministic order.

    With ``include_pending``, a split's ``pending_queries.parquet`` (test queries of
    ``needs_validation`` markers, held back for the silver filter) is read too: together
    with ``queries.parquet`` it is the raw, unfiltered split. Their golds are in the same
    ``candidates.parquet``; the marker tells the two apart (``data/tiers.tsv``).
    """
    cols = ["query_id", "text", "relation", "marker", "paper_id", "gold_id"]
    rows: list[dict] = []
    for split in splits:
        qpath = run / "benchmark" / split / "queries.parquet"
        ppath = run / "benchmark" / split / "pending_queries.parquet"
        cpath = run / "benchmark" / split / "candidates.parquet"
        if not qpath.exists():
            continue
        queries = pq.read_table(qpath, columns=cols).to_pylist()
        if include_pending and ppath.exists():
            queries += pq.read_table(ppath, columns=cols).to_pylist()
        gold_ids = {q["gold_id"] for q in queries}
        cands = pq.read_table(cpath, columns=["candidate_id", "text"]).to_pylist()
        gold_text = {c["candidate_id"]: c["text"] for c in cands if c["candidate_id"] in gold_ids}
        for q in queries:
            rows.append(
                {
                    "query_id": q["query_id"],
                    "relation": q["relation"],
                    "marker": q["marker"],
                    "query": q["text"],
                    "gold": gold_text.get(q["gold_id"], ""),
                    "paper_id": q["paper_id"],
                    "split": split,
                    "label": None,
                    "note": "",
                }
            )
    rows.sort(key=lambda r: (r["relation"], r["query_id"]))
    return rows


def draw_sample(pairs: Sequence[dict], n: int, seed: int) -> list[dict]:
    """Up to ``n`` pairs per relation, uniformly at random without replacement, seeded."""
    by_rel: dict[str, list[dict]] = defaultdict(list)
    for p in pairs:
        by_rel[p["relation"]].append(p)
    out: list[dict] = []
    for rel in RELATIONS:
        pool = by_rel.get(rel, [])
        rng = random.Random(f"{seed}:{rel}")
        out.extend(rng.sample(pool, min(n, len(pool))))
    return out


def read_labelled(path: Path) -> list[dict]:
    """Read an audit JSONL file; a malformed line is reported with its line number."""
    return [row for _, row in read_labelled_lines(path)]


def distinct_labelled(files: Iterable[Path]) -> list[dict]:
    """The labelled pairs of several audit files, each once: a pair labelled in several rounds
    keeps the label of the first file given (newest first), so it is not counted twice."""
    rows: dict[str, dict] = {}
    for f in files:
        for r in read_labelled(f):
            if r["label"] is not None:
                rows.setdefault(r["query_id"], r)
    return list(rows.values())


def read_labelled_lines(path: Path) -> list[tuple[int, dict]]:
    """:func:`read_labelled`'s rows with their line numbers in the file."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{i}: invalid JSON: {e}") from e
            if row.get("label") not in (True, False, None):
                raise SystemExit(f"{path}:{i}: label must be true, false or null")
            rows.append((i, row))
    return rows


def score(rows: Iterable[dict]) -> dict[str, dict]:
    """Per-relation precision (true / labelled) with Wilson 95% CI and per-marker error counts."""
    stats: dict[str, dict] = {}
    for r in rows:
        s = stats.setdefault(
            r["relation"],
            {"true": 0, "labelled": 0, "unlabelled": 0, "errors_by_marker": Counter()},
        )
        if r.get("label") is None:
            s["unlabelled"] += 1
            continue
        s["labelled"] += 1
        if r["label"]:
            s["true"] += 1
        else:
            s["errors_by_marker"][r["marker"]] += 1
    for s in stats.values():
        n = s["labelled"]
        s["precision"] = s["true"] / n if n else float("nan")
        s["ci95"] = wilson_interval(s["true"], n)
    return stats


def format_report(stats: dict[str, dict]) -> str:
    lines = ["relation   true/labelled  precision  wilson95"]
    order = [r for r in RELATIONS if r in stats] + sorted(set(stats) - set(RELATIONS))
    for rel in order:
        s = stats[rel]
        lo, hi = s["ci95"]
        extra = f"  ({s['unlabelled']} unlabelled)" if s["unlabelled"] else ""
        lines.append(
            f"{rel:<10} {s['true']:>4}/{s['labelled']:<8} {s['precision']:>9.3f}  "
            f"[{lo:.3f}, {hi:.3f}]{extra}"
        )
    for rel in order:
        errs = stats[rel]["errors_by_marker"]
        if errs:
            lines.append(f"\nerrors by marker ({rel}):")
            for marker, c in errs.most_common():
                lines.append(f"  {c:>3}  {marker}")
    return "\n".join(lines)


def agreement(a_rows: Iterable[dict], b_rows: Iterable[dict]) -> tuple[dict[str, dict], list]:
    """Per-relation agreement of two labelled passes over the same pairs (joined on
    ``query_id``; pairs unlabelled in either pass are skipped) and the disagreements as
    ``(row_a, row_b)``, in pass-A order.

    Kappa is :func:`ratio.judge.agreement.cohen_kappa`'s: when both passes give one and the same
    label to every pair of a relation, chance agreement is 1 and kappa is 1.0 (perfect
    agreement, no evidence beyond ``percent``), not nan."""
    b_by_id = {r["query_id"]: r for r in b_rows}
    pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    disagreements = []
    for ra in a_rows:
        rb = b_by_id.get(ra["query_id"])
        if rb is None or ra.get("label") is None or rb.get("label") is None:
            continue
        pairs[ra["relation"]].append((bool(ra["label"]), bool(rb["label"])))
        if bool(ra["label"]) != bool(rb["label"]):
            disagreements.append((ra, rb))
    stats = {}
    for rel, lab in pairs.items():
        a, b = [x for x, _ in lab], [y for _, y in lab]
        stats[rel] = {
            "n": len(lab),
            "agree": sum(x == y for x, y in lab),
            "percent": sum(x == y for x, y in lab) / len(lab),
            "kappa": cohen_kappa(a, b),
        }
    return stats, disagreements


def format_agreement(stats: dict[str, dict], disagreements: Sequence) -> str:
    lines = ["relation   agree/n   percent  kappa"]
    order = [r for r in RELATIONS if r in stats] + sorted(set(stats) - set(RELATIONS))
    for rel in order:
        s = stats[rel]
        lines.append(
            f"{rel:<10} {s['agree']:>4}/{s['n']:<4} {s['percent']:>7.3f}  {s['kappa']:.3f}"
        )
    if disagreements:
        lines.append(f"\n{len(disagreements)} disagreements (A / B):")
        for ra, rb in disagreements:
            lines.append(
                f"  {ra['relation']:<8} {ra['query_id']}  A={ra['label']!s:<5} "
                f"B={rb['label']!s:<5} [{ra['marker']}]  A: {ra.get('note', '')}  "
                f"B: {rb.get('note', '')}"
            )
    return "\n".join(lines)


@dataclass(frozen=True)
class MarkerPrecision:
    """Audited pairs of one marker: those the build still yields, how many are valid, and
    those the mining validity rules now drop (labelled, but no longer counted)."""

    marker: str
    relation: str
    audited: int
    valid: int
    dropped_by_rules: int = 0

    @property
    def precision(self) -> float:
        return self.valid / self.audited if self.audited else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.valid, self.audited)

    def tier(self, threshold: float, min_audited: int) -> str:
        if self.audited >= min_audited and self.precision < threshold:
            return NEEDS_VALIDATION
        return CORE


def marker_precision(rows: Iterable[dict], lexicon=None) -> list[MarkerPrecision]:
    """Per-marker precision over labelled rows (distinct ``query_id``; the first label wins).

    A pair that fails a mining validity rule (``ratio.build.validity``; the display-math flag
    is unknown here, so only the text rules apply) is counted apart: the build no longer
    yields it. With a ``lexicon``, markers no longer listed under the audited relation (moved
    to a distractor after an audit) are left out. Sorted by relation, most audited first.
    """
    seen: set[str] = set()
    counts: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        if r.get("label") is None or r["query_id"] in seen:
            continue
        seen.add(r["query_id"])
        rel, marker = r["relation"], r["marker"]
        if lexicon is not None and lexicon.relation_of(marker) != rel:
            continue
        c = counts.setdefault((rel, marker), [0, 0, 0])
        if failed_rule(rel, r["query"], r["gold"]) is not None:
            c[2] += 1
            continue
        c[0] += 1
        c[1] += bool(r["label"])
    out = [MarkerPrecision(m, rel, n, k, d) for (rel, m), (n, k, d) in counts.items()]
    out.sort(key=lambda p: (RELATIONS.index(p.relation), -p.audited, p.marker))
    return out


def format_tiers(
    stats: Sequence[MarkerPrecision],
    thresholds: dict[str, float],
    min_audited: int,
    sources: Sequence[str],
) -> str:
    """The lexicon's ``tiers.tsv``: a header stating how it was made, one row per marker."""
    lines = [
        "# Marker precision tiers (ratio.lexicon.tiers), derived from the precision audits by",
        "#   python scripts/precision_audit.py tiers --threshold [RELATION=]T --min-audited N FILES...",
        "# Do not edit by hand. A marker is needs_validation when at least min_audited of its",
        "# audited pairs pass the mining validity rules and their precision is below its",
        "# relation's threshold; markers not listed here are core. A pair labelled in several",
        "# files counts once, with the label of the first file.",
        f"# threshold: {format_thresholds(thresholds)}",
        f"# min_audited: {min_audited}",
        "# sources: " + " ".join(sources),
        "\t".join(TIER_COLUMNS),
    ]
    for p in stats:
        lo, hi = p.interval
        cells = [
            p.marker,
            p.relation,
            p.tier(thresholds[p.relation], min_audited),
            str(p.audited),
            str(p.valid),
            f"{p.precision:.3f}" if p.audited else "",
            f"{lo:.3f}",
            f"{hi:.3f}",
            str(p.dropped_by_rules),
        ]
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


def tiers_markdown(
    stats: Sequence[MarkerPrecision], thresholds: dict[str, float], min_audited: int
) -> str:
    """The per-marker table of docs/precision-audit.md."""
    lines = [
        "| relation | marker | audited | valid | precision | Wilson 95% | dropped by rules | tier |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    for p in stats:
        lo, hi = p.interval
        prec = f"{p.precision:.2f}" if p.audited else "–"
        tier = p.tier(thresholds[p.relation], min_audited)
        if tier == CORE and p.audited < min_audited:
            tier = "core (too few audited)"
        lines.append(
            f"| {p.relation} | {p.marker} | {p.audited} | {p.valid} | {prec} | "
            f"[{lo:.2f}, {hi:.2f}] | {p.dropped_by_rules} | {tier} |"
        )
    return "\n".join(lines)
