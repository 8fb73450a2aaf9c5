"""What a precision audit says about a built benchmark (docs/precision-audit.md).

``ratio.judge.audit`` turns labelled samples into per-marker precision and the lexicon's tiers;
whether a tiers file is worth shipping depends on a build: how many test queries it would hold
back for the silver set, and how good the queries it leaves published are. The audited pairs
are also the human labels the judge is calibrated on (``ratio judge calibrate``), which needs
each pair's ids and texts as the build holds them. Both read a build's parquet files, so they
sit apart from the audit's own code, behind ``scripts/precision_audit.py impact`` and
``calibration``. The labels they read follow docs/annotation-guideline.md.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from ratio.core.io import atomic_path
from ratio.core.layout import BenchmarkDir
from ratio.core.records import RELATIONS
from ratio.judge.annotate import ITEM_FIELDS, LABEL_FIELDS
from ratio.judge.audit import (
    DEFAULT_MIN_AUDITED,
    MarkerPrecision,
    read_labelled_lines,
    wilson_interval,
)
from ratio.lexicon.tiers import Tiers

ROUND3 = "tests/data/precision_audit_round3_{}.jsonl"
# the round-3 audit (docs/precision-audit.md): two independent passes and their adjudication
DEFAULT_PASSES = (
    (ROUND3.format("a"), "r3-a"),
    (ROUND3.format("b"), "r3-b"),
    (ROUND3.format("adjudicated"), "r3-adj"),
)
DEFAULT_CALIBRATION_RUN = Path("runs/neurips-v2")  # the build round 3 was drawn from


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
    qids = {r.get("query_id") for _, _, rows in numbered for _, r in rows}
    golds = benchmark_golds(run, (str(q) for q in qids if q is not None))
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
