"""Corpus-wide de-duplication of mined pairs, before the temporal split (paper §4.2).

Two rules, both on normalized (match) forms so case and spacing variants collapse:

* a ``(query, gold)`` pair appears at most once, whatever its marker;
* a distractor candidate text appears at most once, and never when the same text is
  already the gold of a relation pair (it would be the same candidate twice).

The copy kept is always the earliest by (effective date, paper_id, paragraph_idx,
sentence_idx, marker), so the result is deterministic and independent of shard order.
DuckDB does the work out of core, so the same code serves a toy run and 366M pairs.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pyarrow as pa

from ratio import schemas
from ratio.io import atomic_path
from ratio.records import RELATIONS

_COLS = ", ".join(schemas.PAIRS.names)
_REL_LIST = ", ".join(f"'{r}'" for r in RELATIONS)
ORDER = "_eff NULLS LAST, paper_id, paragraph_idx, sentence_idx, marker, gold"


def effective_date_sql(date_col: str = "date", year_col: str = "year") -> str:
    """SQL DATE of a row: its ISO ``date``, else the last day of its month/year (see split.py)."""
    return f"""CASE
        WHEN length({date_col}) >= 10 AND TRY_CAST(substr({date_col}, 1, 10) AS DATE) IS NOT NULL
            THEN TRY_CAST(substr({date_col}, 1, 10) AS DATE)
        WHEN length({date_col}) = 7 AND TRY_CAST({date_col} || '-01' AS DATE) IS NOT NULL
            THEN last_day(TRY_CAST({date_col} || '-01' AS DATE))
        WHEN {year_col} IS NOT NULL THEN make_date(CAST({year_col} AS INTEGER), 12, 31)
        WHEN length({date_col}) = 4 AND TRY_CAST({date_col} AS INTEGER) IS NOT NULL
            THEN make_date(CAST({date_col} AS INTEGER), 12, 31)
        ELSE NULL END"""


def connect(
    threads: int | None = None, spill_dir: str | os.PathLike | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB that spills to ``spill_dir`` when a corpus does not fit in RAM."""
    con = duckdb.connect()
    con.execute(f"SET threads = {max(1, threads or os.cpu_count() or 1)}")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    if spill_dir is not None:
        Path(spill_dir).mkdir(parents=True, exist_ok=True)
        con.execute(f"SET temp_directory = '{spill_dir}'")
    return con


def _source_sql(
    con: duckdb.DuckDBPyConnection, source: Sequence[str | os.PathLike] | pa.Table
) -> str:
    if isinstance(source, pa.Table):
        con.register("_pairs_in", source.cast(schemas.PAIRS))
        return "_pairs_in"
    files = [str(p) for p in source]
    if not files:
        con.register("_pairs_in", schemas.PAIRS.empty_table())
        return "_pairs_in"
    quoted = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    return f"read_parquet([{quoted}])"


def dedup_sql(src: str) -> str:
    """The query selecting the deduplicated rows of ``src`` (PAIRS columns), earliest first."""
    return f"""
WITH src AS (SELECT *, {effective_date_sql()} AS _eff FROM {src}),
rel AS (
    SELECT * FROM src WHERE relation IN ({_REL_LIST})
    QUALIFY row_number() OVER (PARTITION BY query_match, gold_match ORDER BY {ORDER}) = 1
),
dis AS (
    SELECT s.* FROM (SELECT * FROM src WHERE relation NOT IN ({_REL_LIST})) s
    ANTI JOIN (SELECT DISTINCT gold_match FROM src WHERE relation IN ({_REL_LIST})) g
        ON s.gold_match = g.gold_match
    QUALIFY row_number() OVER (PARTITION BY s.gold_match ORDER BY {ORDER}) = 1
)
SELECT {_COLS} FROM (SELECT * FROM rel UNION ALL SELECT * FROM dis) ORDER BY {ORDER}
"""


def _stats(con: duckdb.DuckDBPyConnection, src: str, out: str) -> dict[str, int]:
    def count(table: str, rel: bool) -> int:
        neg = "" if rel else "NOT "
        return con.execute(
            f"SELECT count(*) FROM {table} WHERE relation {neg}IN ({_REL_LIST})"
        ).fetchone()[0]

    in_rel, in_dis = count(src, True), count(src, False)
    out_rel, out_dis = count(out, True), count(out, False)
    dis_as_gold = con.execute(
        f"SELECT count(*) FROM {src} s WHERE relation NOT IN ({_REL_LIST}) AND gold_match IN "
        f"(SELECT gold_match FROM {src} WHERE relation IN ({_REL_LIST}))"
    ).fetchone()[0]
    return {
        "input_pairs": in_rel,
        "input_distractors": in_dis,
        "pairs": out_rel,
        "distractors": out_dis,
        "duplicate_pairs": in_rel - out_rel,
        "duplicate_distractors": in_dis - out_dis - dis_as_gold,
        "distractors_equal_to_a_gold": dis_as_gold,
    }


def dedup_table(pairs: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """Deduplicate an in-memory PAIRS table; returns the kept rows and counts."""
    con = connect()
    src = _source_sql(con, pairs)
    out = con.sql(dedup_sql(src)).to_arrow_table().cast(schemas.PAIRS)
    con.register("_pairs_out", out)
    return out, _stats(con, src, "_pairs_out")


def dedup_files(
    inputs: Sequence[str | os.PathLike],
    out_path: str | os.PathLike,
    metadata: dict[str, str] | None = None,
    threads: int | None = None,
) -> dict[str, int]:
    """Deduplicate mined shard files into one Parquet file (out of core); returns counts."""
    spill = Path(out_path).parent / ".duckdb-tmp"
    con = connect(threads, spill)
    try:
        src = _source_sql(con, inputs)
        with atomic_path(out_path) as tmp:
            con.execute(
                f"COPY ({dedup_sql(src)}) TO '{tmp}' (FORMAT parquet, COMPRESSION zstd{kv(metadata)})"
            )
            stats = _stats(con, src, f"read_parquet('{tmp}')")
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    return stats


def kv(metadata: dict[str, str] | None) -> str:
    """DuckDB ``KV_METADATA`` clause for a COPY statement (provenance stamp)."""
    if not metadata:
        return ""
    items = ", ".join(
        f"'{k}': '{str(v).replace(chr(39), chr(39) * 2)}'" for k, v in metadata.items()
    )
    return f", KV_METADATA {{{items}}}"


def read_pairs(path: str | os.PathLike) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(Path(path)).cast(schemas.PAIRS)
