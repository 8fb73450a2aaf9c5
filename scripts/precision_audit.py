"""Precision audit of mined (query, gold) pairs: draw a seeded sample per relation, score labels.

Why: the marker lexicons are distant supervision; the only way to know how often a mined pair
really holds its relation is to read a random sample against the paper's definitions (section 3,
Appendix I.2). ``sample`` writes a JSONL file to be labelled by hand (``label`` true/false, ``note``
on every false); ``score`` prints per-relation precision with a Wilson 95% interval and
per-marker error counts. ``tiers`` turns the labelled files into per-marker precision and
writes the lexicon's precision tiers (``ratio.lexicon.tiers``): markers below their
relation's stated precision threshold go to ``needs_validation``. ``impact`` reads a built
benchmark and says, per relation, how many test queries a tiers file would hold back
compared with the build, and the estimated precision of the test queries still published.
``calibration`` turns labelled passes over one sample (two independent passes and their
adjudication) into the items and labels CSVs ``ratio judge calibrate`` reads: one item per
audited pair, its gold as the candidate (ids and texts from the build), one label row per
pass and pair. See docs/precision-audit.md.

    .venv/bin/python scripts/precision_audit.py sample --run runs/neurips --n 50 --seed 7 --out F
    .venv/bin/python scripts/precision_audit.py sample --split test --include-pending ... # raw test
    .venv/bin/python scripts/precision_audit.py score F
    .venv/bin/python scripts/precision_audit.py agree F_A F_B   # two passes: percent, kappa
    .venv/bin/python scripts/precision_audit.py tiers --threshold 0.9 --threshold broaden=0.8 \\
        --min-audited 10 --out src/ratio/lexicon/data/tiers.tsv \\
        tests/data/precision_audit_round3_adjudicated.jsonl \\
        tests/data/precision_audit_round1.jsonl tests/data/precision_audit.jsonl
    .venv/bin/python scripts/precision_audit.py impact --run runs/neurips-v2 \\
        --tiers src/ratio/lexicon/data/tiers.tsv FILES...
    .venv/bin/python scripts/precision_audit.py calibration --run runs/neurips-v2 \\
        --items tests/data/calibration/round3_items.csv \\
        --labels tests/data/calibration/round3_labels.csv   # default: the round-3 passes
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from ratio.build.validity import failed_rule
from ratio.io import atomic_path
from ratio.lexicon import load_lexicon
from ratio.lexicon.tiers import COLUMNS as TIER_COLUMNS
from ratio.lexicon.tiers import (
    CORE,
    NEEDS_VALIDATION,
    Tiers,
    format_thresholds,
    load_tiers,
    parse_thresholds,
)
from ratio.records import RELATIONS
from ratio.run import BenchmarkDir

SPLITS = ("train", "validation", "test")
DEFAULT_MIN_AUDITED = 10  # fewer audited pairs than this are no evidence about a marker
FIELDS = ("query_id", "relation", "marker", "query", "gold", "paper_id", "split", "label", "note")
ROUND3 = "tests/data/precision_audit_round3_{}.jsonl"
# the round-3 audit (docs/precision-audit.md): two independent passes and their adjudication
DEFAULT_PASSES = (
    (ROUND3.format("a"), "r3-a"),
    (ROUND3.format("b"), "r3-b"),
    (ROUND3.format("adjudicated"), "r3-adj"),
)
DEFAULT_CALIBRATION_RUN = Path("runs/neurips-v2")  # the build round 3 was drawn from


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


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Cohen's kappa of two annotators' binary labels (nan when chance agreement is 1)."""
    n = len(a)
    if n == 0 or n != len(b):
        raise ValueError("two label lists of the same, non-zero length are needed")
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    return (observed - chance) / (1 - chance) if chance < 1 else float("nan")


def agreement(a_rows: Iterable[dict], b_rows: Iterable[dict]) -> tuple[dict[str, dict], list]:
    """Per-relation agreement of two labelled passes over the same pairs (joined on
    ``query_id``; pairs unlabelled in either pass are skipped) and the disagreements as
    ``(row_a, row_b)``, in pass-A order."""
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


def raw_test_markers(queries: Path, held: Path) -> tuple[Counter, set[str]]:
    """A build's raw test queries per ``(relation, marker)`` (published and held together),
    and the markers its split held back in ``held`` (the tiers it was built with)."""
    counts: Counter = Counter()
    held_markers: set[str] = set()
    for path in (queries, held):
        if not path.exists():
            continue
        table = pq.read_table(path, columns=["relation", "marker"]).to_pylist()
        counts.update((q["relation"], q["marker"]) for q in table)
        if path == held:
            held_markers = {q["marker"] for q in table}
    return counts, held_markers


@dataclass(frozen=True)
class Published:
    """A relation's test queries under one set of held markers, and how good the published
    ones are estimated to be."""

    queries: int
    held: int
    estimate: float  # audited precision of the published markers, weighted by their queries
    valid: int  # of the audited pairs of the markers left published, those that hold
    audited: int  # the audited pairs of the markers left published

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.valid, self.audited)


def published(
    counts: Counter, held: set[str], stats: Sequence[MarkerPrecision], min_audited: int
) -> dict[str, Published]:
    """Per relation, the test queries left published when the ``held`` markers wait for the
    silver set, and their estimated precision.

    The estimate weights each published marker's audited precision by its test queries, the
    precision the test split would have if each marker's audit held. A marker with fewer
    than ``min_audited`` audited pairs is no estimate of itself, so the rare markers share
    the pooled precision of their relation's published rare markers (of all its published
    markers when none of those was audited).
    """
    out: dict[str, Published] = {}
    for rel in RELATIONS:
        core = [p for p in stats if p.relation == rel and p.marker not in held]
        own = {p.marker: p.precision for p in core if p.audited >= min_audited}
        rare = [p for p in core if p.audited < min_audited and p.audited]
        pool = rare or core
        pooled_n = sum(p.audited for p in pool)
        pooled = sum(p.valid for p in pool) / pooled_n if pooled_n else float("nan")
        queries = held_queries = 0
        weighted = 0.0
        for (r, marker), n in counts.items():
            if r != rel:
                continue
            if marker in held:
                held_queries += n
                continue
            queries += n
            weighted += n * own.get(marker, pooled)
        out[rel] = Published(
            queries,
            held_queries,
            weighted / queries if queries else float("nan"),
            sum(p.valid for p in core),
            sum(p.audited for p in core),
        )
    return out


def tier_impact(
    counts: Counter, held_now: set[str], tiers: Tiers, stats: Sequence[MarkerPrecision]
) -> dict[str, tuple[Published, Published]]:
    """Per relation, the build's test split as it is and as ``tiers`` would split it."""
    min_audited = tiers.min_audited if tiers.min_audited is not None else DEFAULT_MIN_AUDITED
    now = published(counts, held_now, stats, min_audited)
    new = published(counts, set(tiers.needs_validation()), stats, min_audited)
    return {rel: (now[rel], new[rel]) for rel in RELATIONS}


def impact_markdown(impact: dict[str, tuple[Published, Published]]) -> str:
    """The impact table of docs/precision-audit.md."""

    def audited(p: Published) -> str:
        if not p.audited:
            return "none audited"
        lo, hi = p.interval
        return f"{p.valid}/{p.audited} = {p.valid / p.audited:.3f} [{lo:.3f}, {hi:.3f}]"

    lines = [
        "| relation | test queries published / held: build | with the tiers | "
        "moved to pending | estimated precision: build | with the tiers | "
        "audited pairs of published markers (Wilson 95%): build | with the tiers |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for rel, (now, new) in impact.items():
        lines.append(
            f"| {rel} | {now.queries:,} / {now.held:,} | {new.queries:,} / {new.held:,} | "
            f"{new.held - now.held:+,} | {now.estimate:.3f} | {new.estimate:.3f} | "
            f"{audited(now)} | {audited(new)} |"
        )
    return "\n".join(lines)


def benchmark_golds(run: Path, query_ids: Iterable[str]) -> dict[str, list[dict]]:
    """Per wanted query id, every place a build holds it: ``split``, ``relation``, ``marker``,
    ``query`` (its text), ``candidate_id`` (its gold) and ``candidate`` (the gold's text in
    that split's pool, ``None`` when absent). Every split folder under ``run/benchmark`` is
    searched, published and held (``pending_queries.parquet``) queries alike."""
    wanted = sorted({q for q in query_ids if q})
    found: dict[str, list[dict]] = defaultdict(list)
    bench = BenchmarkDir(run / "benchmark")
    if not wanted or not bench.root.is_dir():
        return found
    cols = ["query_id", "text", "relation", "marker", "gold_id"]
    for split_dir in sorted(p for p in bench.root.iterdir() if p.is_dir()):
        split = bench.split(split_dir.name)
        hits: list[dict] = []
        for path in (split.queries, split.held_queries):
            if path.exists():
                filters = [("query_id", "in", wanted)]
                hits += pq.read_table(path, columns=cols, filters=filters).to_pylist()
        if not hits:
            continue
        gold_ids = sorted({q["gold_id"] for q in hits})
        texts: dict[str, str] = {}
        if split.candidates.exists():
            table = pq.read_table(
                split.candidates,
                columns=["candidate_id", "text"],
                filters=[("candidate_id", "in", gold_ids)],
            )
            texts = dict(
                zip(table["candidate_id"].to_pylist(), table["text"].to_pylist(), strict=True)
            )
        for q in hits:
            found[q["query_id"]].append(
                {
                    "split": split.name,
                    "relation": q["relation"],
                    "marker": q["marker"],
                    "query": q["text"],
                    "candidate_id": q["gold_id"],
                    "candidate": texts.get(q["gold_id"]),
                }
            )
    return found


@dataclass
class CalibrationSet:
    """The items and labels CSV rows made from labelled audit passes, and how many of the
    build's texts differed from the audit's (the build's are written)."""

    items: list[dict]
    labels: list[dict]
    query_text_differs: int = 0
    gold_text_differs: int = 0


def parse_pass(spec: str) -> tuple[Path, str]:
    """``FILE=NAME`` (split at the last ``=``) into the file and the annotator name."""
    path, sep, name = spec.rpartition("=")
    if not sep or not path or not name.strip():
        raise ValueError(f"expected FILE=NAME, got {spec!r}")
    return Path(path), name.strip()


def calibration_set(passes: Sequence[tuple[Path, str]], run: Path) -> CalibrationSet:
    """Items (one per audited pair, the gold as its candidate) and labels (one per labelled
    pair and pass, ``y``/``n``; unlabelled pairs get none) for ``ratio judge calibrate``.

    ``item_id`` is ``<relation>:<query_id>``; the candidate id is the query's gold in the
    build. A query the build does not hold, a pair whose relation or marker differs from the
    build's or between passes, and a pair labelled twice in one pass are errors naming the
    file and line (``SystemExit``). Texts come from the build; the audit's should be the same.
    """
    names = [name for _, name in passes]
    if len(set(names)) != len(names):
        raise SystemExit(f"annotator names must differ: {', '.join(names)}")
    numbered = [(path, name, read_labelled_lines(path)) for path, name in passes]
    golds = benchmark_golds(run, (r.get("query_id") for _, _, rows in numbered for _, r in rows))
    out = CalibrationSet([], [])
    items: dict[str, dict] = {}
    first_seen: dict[str, tuple[dict, str]] = {}  # query id -> (audit row, "file:line")
    for path, name, rows in numbered:
        labelled: dict[str, int] = {}
        for line, r in rows:
            where = f"{path}:{line}"
            qid = r.get("query_id")
            if not qid:
                raise SystemExit(f"{where}: no query_id")
            places = golds.get(qid, [])
            if not places:
                raise SystemExit(f"{where}: query {qid} is not in {run / 'benchmark'}")
            # the audit's own split first; a query held in two splits is the same pair
            place = next((p for p in places if p["split"] == r.get("split")), places[0])
            for f in ("relation", "marker"):
                if r.get(f) != place[f]:
                    raise SystemExit(
                        f"{where}: {f} {r.get(f)!r} of query {qid} differs from the build's "
                        f"{place[f]!r} ({place['split']})"
                    )
            if place["candidate"] is None:
                raise SystemExit(
                    f"{where}: gold {place['candidate_id']} of query {qid} is not in "
                    f"{BenchmarkDir(run / 'benchmark').split(place['split']).candidates}"
                )
            first, first_where = first_seen.setdefault(qid, (r, where))
            for f in ("relation", "marker", "query", "gold"):
                if r.get(f) != first.get(f):
                    raise SystemExit(f"{where}: {f} of query {qid} differs from {first_where}")
            item_id = f"{place['relation']}:{qid}"
            if item_id not in items:
                out.query_text_differs += r.get("query") != place["query"]
                out.gold_text_differs += r.get("gold") != place["candidate"]
                items[item_id] = {
                    "item_id": item_id,
                    "relation": place["relation"],
                    "query_id": qid,
                    "candidate_id": place["candidate_id"],
                    "query": place["query"],
                    "marker": place["marker"],
                    "candidate": place["candidate"],
                }
            if r.get("label") is None:
                continue
            if qid in labelled:
                raise SystemExit(f"{where}: query {qid} is labelled on line {labelled[qid]} too")
            labelled[qid] = line
            label = "y" if r["label"] else "n"
            out.labels.append(items[item_id] | {"annotator": name, "label": label, "time": ""})
    out.items = list(items.values())
    return out


def write_calibration(cal: CalibrationSet, items_out: Path, labels_out: Path) -> None:
    """Both CSVs, each through a temporary sibling renamed into place once it is complete."""
    from ratio.judge.annotate import ITEM_FIELDS, LABEL_FIELDS

    with (
        atomic_path(items_out) as items_tmp,
        atomic_path(labels_out) as labels_tmp,
    ):
        for tmp, fields, rows in (
            (items_tmp, ITEM_FIELDS, cal.items),
            (labels_tmp, LABEL_FIELDS, cal.labels),
        ):
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=fields)
                w.writeheader()
                w.writerows(rows)


def format_calibration(cal: CalibrationSet) -> str:
    """Items and labels per relation, and each annotator's y/n per relation."""
    items = Counter(r["relation"] for r in cal.items)
    labels = Counter(r["relation"] for r in cal.labels)
    lines = [f"{len(cal.items)} items, {len(cal.labels)} labels"]
    order = [r for r in RELATIONS if r in items] + sorted(set(items) - set(RELATIONS))
    for rel in order:
        lines.append(f"  {rel:<10} {items[rel]:>4} items  {labels[rel]:>4} labels")
    yn = Counter((r["annotator"], r["relation"], r["label"]) for r in cal.labels)
    for annot in dict.fromkeys(r["annotator"] for r in cal.labels):
        cells = [f"{rel} {yn[annot, rel, 'y']}y/{yn[annot, rel, 'n']}n" for rel in order]
        lines.append(f"  {annot:<10} " + "  ".join(cells))
    lines.append(
        f"texts from the build that differ from the audit: {cal.query_text_differs} queries, "
        f"{cal.gold_text_differs} golds"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("sample", help="draw a seeded sample per relation into a JSONL file")
    sp.add_argument("--run", type=Path, default=Path("runs/neurips"))
    sp.add_argument("--n", type=int, default=50)
    sp.add_argument("--seed", type=int, default=7)
    sp.add_argument("--out", type=Path, required=True)
    sp.add_argument(
        "--split", choices=SPLITS, action="append", help="only this split (repeatable; default all)"
    )
    sp.add_argument(
        "--include-pending",
        action="store_true",
        help="also draw from pending_queries.parquet (needs_validation test queries): the raw split",
    )
    sc = sub.add_parser("score", help="print per-relation precision of a labelled file")
    sc.add_argument("file", type=Path)
    ag = sub.add_parser("agree", help="agreement (percent, Cohen's kappa) of two labelled passes")
    ag.add_argument("file_a", type=Path)
    ag.add_argument("file_b", type=Path)
    ti = sub.add_parser("tiers", help="per-marker precision and the lexicon's precision tiers")
    ti.add_argument("files", type=Path, nargs="+", help="labelled audit files (JSONL)")
    ti.add_argument(
        "--threshold",
        action="append",
        metavar="[RELATION=]T",
        help="precision threshold: T for every relation, RELATION=T for one (repeatable; "
        "default 0.85)",
    )
    ti.add_argument("--min-audited", type=int, default=DEFAULT_MIN_AUDITED)
    ti.add_argument("--lexicon", type=Path, default=None, help="default: the shipped lexicon")
    ti.add_argument("--out", type=Path, help="write the tiers file here")
    ti.add_argument("--markdown", action="store_true", help="print the docs table")
    im = sub.add_parser(
        "impact", help="test queries a tiers file holds back in a build, and published precision"
    )
    im.add_argument("files", type=Path, nargs="+", help="labelled audit files (JSONL)")
    im.add_argument("--run", type=Path, required=True, help="a built run (reads benchmark/test)")
    im.add_argument("--tiers", type=Path, required=True, help="the tiers file to compare")
    im.add_argument("--lexicon", type=Path, default=None, help="default: the shipped lexicon")
    ca = sub.add_parser(
        "calibration",
        help="items and labels CSVs for `ratio judge calibrate` from labelled audit passes",
    )
    ca.add_argument(
        "--pass",
        dest="passes",
        action="append",
        metavar="FILE=NAME",
        help="a labelled audit file and its annotator name (repeatable; default: "
        + ", ".join(f"{f}={n}" for f, n in DEFAULT_PASSES)
        + ")",
    )
    ca.add_argument(
        "--run",
        type=Path,
        default=DEFAULT_CALIBRATION_RUN,
        help="the build the pairs were drawn from: query and gold ids and texts "
        f"(default {DEFAULT_CALIBRATION_RUN})",
    )
    ca.add_argument("--items", type=Path, required=True, help="the items CSV to write")
    ca.add_argument("--labels", type=Path, required=True, help="the labels CSV to write")
    args = ap.parse_args(argv)

    if args.cmd == "calibration":
        try:
            passes = [parse_pass(p) for p in args.passes] if args.passes else DEFAULT_PASSES
        except ValueError as e:
            ap.error(f"--pass: {e}")
        cal = calibration_set([(Path(f), n) for f, n in passes], args.run)
        write_calibration(cal, args.items, args.labels)
        print(format_calibration(cal))
        print(f"wrote {args.items} and {args.labels}", file=sys.stderr)
        return 0

    if args.cmd == "tiers":
        try:
            thresholds = parse_thresholds(" ".join(args.threshold or ["0.85"]))
        except ValueError as e:
            ap.error(f"--threshold: {e}")
        rows = [r for f in args.files for r in read_labelled(f)]
        stats = marker_precision(rows, load_lexicon(args.lexicon))
        text = format_tiers(stats, thresholds, args.min_audited, [str(f) for f in args.files])
        if args.out:
            args.out.write_text(text, encoding="utf-8")
            print(f"wrote {len(stats)} markers to {args.out}", file=sys.stderr)
        print(tiers_markdown(stats, thresholds, args.min_audited) if args.markdown else text)
        return 0

    if args.cmd == "impact":
        test = BenchmarkDir(args.run / "benchmark").split("test")
        if not test.queries.exists():
            print(f"no test queries at {test.queries}", file=sys.stderr)
            return 2
        tiers = load_tiers(args.tiers)
        rows = [r for f in args.files for r in read_labelled(f)]
        stats = marker_precision(rows, load_lexicon(args.lexicon))
        counts, held_now = raw_test_markers(test.queries, test.held_queries)
        print(impact_markdown(tier_impact(counts, held_now, tiers, stats)))
        return 0

    if args.cmd == "agree":
        stats, dis = agreement(read_labelled(args.file_a), read_labelled(args.file_b))
        print(format_agreement(stats, dis))
        return 0

    if args.cmd == "sample":
        splits = args.split or SPLITS
        pairs = load_pairs(args.run, splits, args.include_pending)
        if not pairs:
            where = f"{args.run}/benchmark ({', '.join(splits)})"
            print(f"no benchmark queries under {where}", file=sys.stderr)
            return 2
        sample = draw_sample(pairs, args.n, args.seed)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            for row in sample:
                fh.write(json.dumps({k: row[k] for k in FIELDS}, ensure_ascii=False) + "\n")
        print(f"wrote {len(sample)} pairs to {args.out}: {Counter(r['relation'] for r in sample)}")
        return 0
    print(format_report(score(read_labelled(args.file))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
