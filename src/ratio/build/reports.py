"""Markdown analogs of the paper's build tables, from the written benchmark.

* Table 1: queries per relation per split, and each split's shared candidate pool.
* Table 2: per relation and lexicon source, markers in the lexicon ("Cand.") vs
  markers that produced at least one benchmark row ("Data").
* Table 6: the full split, with golds per relation and per distractor category.
* ``build.md``: what each stage dropped (short, duplicate, leaked) and the final
  leakage count, which must be zero.

Tested by tests/build/test_random_split.py, tests/build/test_pipeline.py.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.build.validity import RULES
from ratio.core.io import write_text_atomic
from ratio.core.layout import SPLITS, BenchmarkDir
from ratio.core.records import DISTRACTORS, RELATIONS

SOURCE_LABELS = {
    "manual": "Manual",
    "extendable": "Extendable connective",
    "llm": "LLM-generated",
    "pattern": "Pattern expansion",
    "embedding": "Embedding discovery",
}
_ORDER = ("specify", "address", "broaden")  # the paper's row order
# per-shard mining counters, summed by the pipeline and listed in the build report
MINE_COUNTERS = (
    "sentences",
    "consecutive_pairs",
    "fired",
    "dropped_short_query",
    "dropped_short_gold",
    "rows",
)


def _n(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list]) -> str:
    out = [_row(header), _row(["---"] * len(header))]
    out += [_row(r) for r in rows]
    return "\n".join(out) + "\n"


def table1(counts: dict[str, dict]) -> str:
    """Queries per relation and split; the candidate pool is one number per split."""
    header = ["Relation"] + [f"{s} {k}" for s in SPLITS for k in ("queries", "candidates")]
    rows = []
    for i, rel in enumerate(_ORDER):
        row = [rel.capitalize()]
        for s in SPLITS:
            c = counts.get(s, {})
            row.append(_n(c.get("queries", {}).get(rel, 0)))
            row.append(_n(c.get("candidates_total", 0)) if i == 0 else "(shared)")
        rows.append(row)
    return (
        "# Table 1: temporal split with a shared candidate pool\n\n"
        + _table(header, rows)
        + "\nEach query has one gold; each split's pool is shared by all relations.\n"
    )


def marker_fires(benchmark_dir: str | os.PathLike) -> Counter:
    """Benchmark rows per marker over all splits (queries, plus distractor candidates)."""
    fires: Counter = Counter()
    bench = BenchmarkDir(Path(benchmark_dir))
    for s in SPLITS:
        q, c = bench.split(s).queries, bench.split(s).candidates
        if q.exists():
            fires.update(pq.read_table(q, columns=["marker"])["marker"].to_pylist())
        if c.exists():
            t = pq.read_table(c, columns=["marker", "origin"])
            t = t.filter(pc.is_in(t["origin"], value_set=pa.array(list(DISTRACTORS))))
            fires.update(t["marker"].to_pylist())
    return fires


def table2(lexicon, fires: dict[str, int]) -> str:
    """Lexicon markers ("Cand.") vs markers found in the benchmark ("Data"), by source."""
    cand: Counter = Counter()
    data: Counter = Counter()
    for e in lexicon.entries:
        cand[(e.relation, e.source)] += 1
        data[(e.relation, e.source)] += fires.get(e.marker, 0) > 0
    sources = sorted(
        dict.fromkeys(e.source for e in lexicon.entries),
        key=lambda s: list(SOURCE_LABELS).index(s) if s in SOURCE_LABELS else 99,
    )
    header = (
        ["Type"]
        + [f"{r.capitalize()} {k}" for r in RELATIONS for k in ("Cand.", "Data")]
        + ["Total Cand.", "Total Data"]
    )

    def cells(picked: list[str]) -> list[str]:
        """(Cand., Data) per relation summed over the ``picked`` sources, then both totals."""
        per_rel = [
            (sum(cand[(r, s)] for s in picked), sum(data[(r, s)] for s in picked))
            for r in RELATIONS
        ]
        total = (sum(c for c, _ in per_rel), sum(d for _, d in per_rel))
        return [_n(x) for pair in (*per_rel, total) for x in pair]

    rows = [[SOURCE_LABELS.get(src, src), *cells([src])] for src in sources]
    rows.append(["Total", *cells(sources)])
    drows = []
    for d in DISTRACTORS:
        c = sum(v for (r, _), v in cand.items() if r == d)
        f = sum(v for (r, _), v in data.items() if r == d)
        drows.append([d.replace("_", " ").capitalize(), _n(c), _n(f)])
    return (
        f"# Table 2: discourse markers, lexicon vs found in data\n\nLexicon version `{lexicon.version}`.\n\n"
        + _table(header, rows)
        + "\n## Distractor markers\n\n"
        + _table(["Category", "Cand.", "Data"], drows)
    )


def table6(counts: dict[str, dict]) -> str:
    """Full split: queries and golds per relation, golds per distractor category, pool sizes."""
    header = ["Partition"] + [
        f"{s} {k}" for s in SPLITS for k in ("queries", "golds", "candidates")
    ]
    rows = [
        ["Target relations"]
        + sum(([" ", " ", _n(counts.get(s, {}).get("candidates_total", 0))] for s in SPLITS), [])
    ]
    for rel in _ORDER:
        row = [rel.capitalize()]
        for s in SPLITS:
            c = counts.get(s, {})
            row += [
                _n(c.get("queries", {}).get(rel, 0)),
                _n(c.get("candidates_by_origin", {}).get(rel, 0)),
                "",
            ]
        rows.append(row)
    rows.append(["**Distractors**"] + [""] * (3 * len(SPLITS)))
    for d in DISTRACTORS:
        row = [d.replace("_", " ").capitalize()]
        for s in SPLITS:
            row += ["–", _n(counts.get(s, {}).get("candidates_by_origin", {}).get(d, 0)), ""]
        rows.append(row)
    allrow = ["All"]
    for s in SPLITS:
        c = counts.get(s, {})
        allrow += [
            _n(c.get("queries_total", 0)),
            _n(sum(c.get("candidates_by_origin", {}).values())),
            _n(c.get("candidates_total", 0)),
        ]
    rows.append(allrow)
    return (
        "# Table 6: full temporal split\n\n"
        + _table(header, rows)
        + "\nDistractors add golds to the pool but are never queries. Golds count distinct candidates,"
        " so a gold shared by two queries counts once.\n"
    )


def build_report(info: dict) -> str:
    """Drops per stage and the leakage verdict."""
    mine, dedup, split = info.get("mine", {}), info.get("dedup", {}), info.get("split", {})
    lines = ["# Build report", ""]
    lines += [
        f"- code version: `{info.get('code_version', '')}`",
        f"- lexicon version: `{info.get('lexicon_version', '')}`",
        "",
    ]
    lines += ["## Mining", ""]
    for k in ("shards", *MINE_COUNTERS):
        if k in mine:
            lines.append(f"- {k.replace('_', ' ')}: {_n(mine[k])}")
    if "dropped_invalid" in mine:
        lines += ["", validity_table(mine["dropped_invalid"])]
    lines += ["", "## De-duplication (whole corpus, before the split)", ""]
    order = (
        "input_pairs",
        "duplicate_pairs",
        "pairs",
        "input_distractors",
        "duplicate_distractors",
        "distractors_equal_to_a_gold",
        "distractors",
    )
    for k in sorted(dedup, key=lambda k: order.index(k) if k in order else len(order)):
        lines.append(f"- {k.replace('_', ' ')}: {_n(dedup[k])}")
    rnd = split.get("random")
    if rnd:
        t, v = rnd["train_fraction"], rnd["validation_fraction"]
        lines += ["", "## Random split (by paper)", ""]
        lines += [
            f"- papers assigned by a seeded hash of their id (seed {rnd['seed']}): "
            f"train {t:.0%}, validation {v:.0%}, test {1 - t - v:.0%}; no paper spans two splits",
            "- **temporal leakage control is off**: the corpus has no dates, so work published "
            'after a test paper can sit in train (`[split] mode = "random"`)',
        ]
    else:
        lines += ["", "## Temporal split", ""]
    for k in SPLITS:
        if k in split.get("boundaries", {}):
            lines.append(f"- {k} ends {split['boundaries'][k]}")
    for k, v in split.get("excluded", {}).items():
        lines.append(f"- rows left out ({k.replace('_', ' ')}): {_n(v)}")
    lines += ["", "## Leakage check", ""]
    dropped = split.get("leakage_dropped", {})
    for s, d in sorted(dropped.items(), key=lambda kv: SPLITS.index(kv[0])):
        lines.append(
            f"- {s}: dropped {_n(d.get('pairs', 0))} pairs and {_n(d.get('distractors', 0))} distractor "
            "candidates whose text occurs in an earlier split"
        )
    lines.append(
        f"- final leakage (texts shared with an earlier split): **{split.get('final_leakage', 0)}**"
    )
    if "needs_validation" in info:
        lines += ["", tiers_section(info["needs_validation"], split)]
    return "\n".join(lines) + "\n"


def validity_table(dropped: dict[str, dict[str, int]]) -> str:
    """Pairs each validity rule (``ratio.build.validity``) dropped at mining, per relation."""
    out = [
        "### Validity rules (a pair counts under the first rule it fails)",
        "",
        "| rule | " + " | ".join(RELATIONS) + " | total | drops |",
        "|---|" + "---:|" * (len(RELATIONS) + 1) + "---|",
    ]
    for rule in RULES:
        by_rel = dropped.get(rule.name, {})
        cells = [_n(by_rel.get(r, 0)) if r in rule.relations else "–" for r in RELATIONS]
        total = _n(sum(by_rel.values()))
        out.append(f"| `{rule.name}` | " + " | ".join(cells) + f" | {total} | {rule.description} |")
    return "\n".join(out)


def tiers_section(markers: list[str], split: dict) -> str:
    """The needs_validation markers and the test queries held back for the silver set."""
    held = split.get("counts", {}).get("test", {}).get("held_for_validation", {})
    out = ["## Precision tiers", ""]
    if not markers:
        return "\n".join([*out, "- no marker is in the needs_validation tier"]) + "\n"
    out.append(
        "- needs_validation markers (test queries only through the silver set): "
        + ", ".join(f"`{m}`" for m in markers)
    )
    out.append(
        "- test queries held in `test/pending_queries.parquet`: "
        + (", ".join(f"{r} {_n(n)}" for r, n in sorted(held.items())) or "0")
    )
    return "\n".join(out) + "\n"


def marker_table(lexicon, mined: dict[str, int], fires: dict[str, int]) -> str:
    """Per-marker TSV: rows mined (before dedup/split) and rows in the benchmark."""
    lines = ["marker\trelation\tsource\tmined\tbenchmark"]
    for e in sorted(lexicon.entries, key=lambda e: (e.relation, -mined.get(e.marker, 0), e.marker)):
        if mined.get(e.marker, 0) or fires.get(e.marker, 0):
            lines.append(
                f"{e.marker}\t{e.relation}\t{e.source}\t{mined.get(e.marker, 0)}\t{fires.get(e.marker, 0)}"
            )
    return "\n".join(lines) + "\n"


def write_reports(
    reports_dir: str | os.PathLike,
    benchmark_dir: str | os.PathLike,
    counts: dict,
    lexicon,
    info: dict,
    mined: dict[str, int] | None = None,
    provenance: dict[str, str] | None = None,
) -> list[Path]:
    """Write ``table1.md``, ``table2.md``, ``table6.md``, ``build.md`` and ``markers.tsv``.

    ``mined`` is rows per marker straight out of mining; ``provenance`` (a
    :func:`ratio.core.provenance.stamp`) goes into an HTML comment at the end of each Markdown file.
    """
    d = Path(reports_dir)
    fires = marker_fires(benchmark_dir)
    footer = ""
    if provenance:
        footer = "\n<!-- " + " ".join(f"{k}={v}" for k, v in sorted(provenance.items())) + " -->\n"
    docs = {
        "table1.md": table1(counts) + footer,
        "table2.md": table2(lexicon, fires) + footer,
        "table6.md": table6(counts) + footer,
        "build.md": build_report(info) + footer,
        "markers.tsv": marker_table(lexicon, mined or {}, fires),
    }
    for name, text in docs.items():
        write_text_atomic(d / name, text)
    return [d / name for name in docs]
