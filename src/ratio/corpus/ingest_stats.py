"""What an ingested folder holds: papers and sentences per year and section, the drops, and
how a metadata sidecar met the papers; as ``stats.json`` fields and as Markdown.

Tested by tests/corpus/test_ingest.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from ratio.core.io import RatioError
from ratio.core.layout import IngestDir
from ratio.corpus.readers.metadata import metadata_lookup, row_for


def metadata_match(out: Path, source: str) -> dict:
    """How the sidecar's rows met the ingested papers: matches, papers without a row, rows
    without a paper (each listed by id, the first few)."""
    layout = IngestDir(out)
    lookup = metadata_lookup(layout.metadata)
    papers = pq.read_table(layout.papers, columns=["paper_id"])["paper_id"].to_pylist()
    rows = [row_for(pid, lookup) for pid in papers]
    without = [pid for pid, row in zip(papers, rows, strict=True) if row is None]
    used = {row["id"] for row in rows if row is not None}
    unused = sorted((r for rid, r in lookup.items() if rid not in used), key=lambda r: r["line"])
    messages = [f"{source}:{r['line']}: id {r['id']!r} matches no paper" for r in unused[:20]] + [
        f"paper {pid!r} has no row in {source}" for pid in without[:20]
    ]
    return {
        "file": source,
        "rows": len(lookup),
        "papers_matched": len(papers) - len(without),
        "papers_without_row": len(without),
        "rows_without_paper": len(unused),
        "messages": messages,
    }


def corpus_stats(
    out_dir: str | Path, drops: dict | None = None, errors: list | None = None
) -> dict:
    """Papers, sentences, per-year and per-section counts of an ingested directory."""
    import duckdb

    out = Path(out_dir)
    layout = IngestDir(out)
    sent_glob = str(layout.sentences / "*.parquet")
    pap_glob = str(layout.papers / "*.parquet")
    if not layout.sentence_shards():
        raise RatioError(f"{out}: no sentence shards found (run `ratio ingest` first)")
    con = duckdb.connect()
    n_papers = con.execute(f"SELECT count(*) FROM read_parquet('{pap_glob}')").fetchall()[0][0]
    n_sent = con.execute(f"SELECT count(*) FROM read_parquet('{sent_glob}')").fetchall()[0][0]
    per_year = con.execute(
        f"""
        SELECT p.year, p.papers, coalesce(s.sentences, 0) FROM
          (SELECT year, count(*) AS papers FROM read_parquet('{pap_glob}') GROUP BY year) p
        LEFT JOIN
          (SELECT year, count(*) AS sentences FROM read_parquet('{sent_glob}') GROUP BY year) s
        USING (year) ORDER BY p.year
        """
    ).fetchall()
    per_section = con.execute(
        f"""SELECT section_category, count(*), count(DISTINCT paper_id)
            FROM read_parquet('{sent_glob}') GROUP BY 1 ORDER BY 2 DESC"""
    ).fetchall()
    con.close()
    if drops is None and layout.stats.exists():
        old = json.loads(layout.stats.read_text())
        drops, errors = old.get("drops", {}), old.get("errors", [])
    return {
        "papers": n_papers,
        "sentences": n_sent,
        "per_year": [{"year": y, "papers": p, "sentences": s} for y, p, s in per_year],
        "per_section": [{"section": c, "sentences": n, "papers": p} for c, n, p in per_section],
        "drops": drops or {},
        "errors": (errors or [])[:100],
    }


def stats_markdown(stats: dict) -> str:
    lines = [
        f"Papers: **{stats['papers']:,}** · sentences: **{stats['sentences']:,}**",
        "",
        "| year | papers | sentences |",
        "|---|---:|---:|",
    ]
    lines += [f"| {r['year']} | {r['papers']:,} | {r['sentences']:,} |" for r in stats["per_year"]]
    lines += ["", "| section | sentences | papers |", "|---|---:|---:|"]
    lines += [
        f"| {r['section']} | {r['sentences']:,} | {r['papers']:,} |" for r in stats["per_section"]
    ]
    lines += ["", "| dropped item (reason) | count |", "|---|---:|"]
    lines += [f"| {k} | {v:,} |" for k, v in sorted(stats["drops"].items(), key=lambda kv: -kv[1])]
    if stats.get("errors"):
        lines += ["", "First input problems:", ""] + [f"- `{e}`" for e in stats["errors"][:20]]
    return "\n".join(lines) + "\n"
