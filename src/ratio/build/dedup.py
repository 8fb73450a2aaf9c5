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

import contextlib
import os
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.core import schemas
from ratio.core.io import atomic_path
from ratio.core.records import RELATIONS
from ratio.runner.executors import map_shards

_COLS = ", ".join(schemas.PAIRS.names)
_REL_LIST = ", ".join(f"'{r}'" for r in RELATIONS)
ORDER = "_eff NULLS LAST, paper_id, paragraph_idx, sentence_idx, marker, gold"
STATS = (  # the counts a dedup returns
    "input_pairs",
    "input_distractors",
    "pairs",
    "distractors",
    "duplicate_pairs",
    "duplicate_distractors",
    "distractors_equal_to_a_gold",
)


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


@contextlib.contextmanager
def spilling(threads: int | None, spill_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """:func:`connect`, closed and its spill folder removed on exit."""
    try:
        with connect(threads, spill_dir) as con:
            yield con
    finally:
        shutil.rmtree(spill_dir, ignore_errors=True)


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
        ).fetchall()[0][0]

    in_rel, in_dis = count(src, True), count(src, False)
    out_rel, out_dis = count(out, True), count(out, False)
    dis_as_gold = con.execute(
        f"SELECT count(*) FROM {src} s WHERE relation NOT IN ({_REL_LIST}) AND gold_match IN "
        f"(SELECT gold_match FROM {src} WHERE relation IN ({_REL_LIST}))"
    ).fetchall()[0][0]
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
    with spilling(threads, Path(out_path).parent / ".duckdb-tmp") as con:
        return _copy_deduped(con, inputs, out_path, metadata)


def _copy_deduped(
    con: duckdb.DuckDBPyConnection,
    inputs: Sequence[str | os.PathLike],
    out_path: str | os.PathLike,
    metadata: dict[str, str] | None = None,
) -> dict[str, int]:
    """Write the deduplicated ``inputs`` to ``out_path`` atomically; returns the counts."""
    src = _source_sql(con, inputs)
    copy_parquet(con, dedup_sql(src), out_path, metadata)
    return _stats(con, src, f"read_parquet('{quote(out_path)}')")


def copy_parquet(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    target: str | os.PathLike,
    metadata: dict[str, str] | None,
) -> None:
    """Write the rows of ``sql`` to the Parquet file ``target`` atomically, stamped with
    ``metadata``."""
    with atomic_path(target) as tmp:
        con.execute(
            f"COPY ({sql}) TO '{quote(tmp)}' (FORMAT parquet, COMPRESSION zstd{kv(metadata)})"
        )


def kv(metadata: dict[str, str] | None) -> str:
    """DuckDB ``KV_METADATA`` clause for a COPY statement (provenance stamp)."""
    if not metadata:
        return ""
    items = ", ".join(f"'{k}': '{quote(v)}'" for k, v in metadata.items())
    return f", KV_METADATA {{{items}}}"


# --------------------------------------------------------------------------- partitioned (Ray)
#
# Both dedup rules are keyed by ``gold_match`` (a pair's (query, gold) key refines it, and a
# distractor is dropped by its gold_match), so hash-partitioning rows by ``gold_match`` makes
# the partitions independent: deduplicating each one alone keeps exactly the rows the global
# query keeps. Map tasks bucket each mined shard, reduce tasks deduplicate one bucket each,
# and the driver writes the buckets, globally ordered, into the same single file.


def partition_shard(src: str, shuffle_dir: str, parts: int) -> dict:
    """Map task: write the rows of one mined shard into ``<shuffle_dir>/part=<k>/<shard>.parquet``.

    The bucket is DuckDB's ``hash(gold_match) % parts``, which is the same on every worker
    (unlike Python's salted ``hash``).
    """
    name = Path(src).stem
    with connect(1) as con:
        t = con.sql(
            f"SELECT *, CAST(hash(gold_match) % {int(parts)} AS INTEGER) AS _part "
            f"FROM read_parquet('{quote(src)}')"
        ).to_arrow_table()
    counts: dict[str, int] = {}
    for k in sorted(set(t["_part"].to_pylist())):
        rows = t.filter(pc.equal(t["_part"], k)).drop_columns(["_part"]).cast(schemas.PAIRS)
        target = Path(shuffle_dir) / f"part={k}" / f"{name}.parquet"
        with atomic_path(target) as tmp:
            pq.write_table(rows, tmp, compression="zstd")
        counts[str(k)] = rows.num_rows
    return {"shard": name, "rows": t.num_rows, "parts": counts}


def dedup_partition(part_dir: str, out_path: str) -> dict:
    """Reduce task: deduplicate one bucket into ``out_path``; returns its counts."""
    files = sorted(str(p) for p in Path(part_dir).glob("*.parquet"))
    with connect(1) as con:
        return {"shard": Path(part_dir).name, **_copy_deduped(con, files, out_path)}


def dedup_partitioned(
    inputs: Sequence[str | os.PathLike],
    out_path: str | os.PathLike,
    metadata: dict[str, str] | None = None,
    threads: int | None = None,
    executor: str = "ray",
    workers: int = 2,
    address: str = "",
    parts: int = 16,
) -> dict[str, int]:
    """:func:`dedup_files` as a hash-partitioned map/reduce over ``map_shards`` (any executor).

    Writes the same ``out_path`` byte for byte; the buckets live under
    ``<out dir>/.shuffle`` and ``<out dir>/.parts`` only while it runs.
    """
    out = Path(out_path)
    shuffle, part_out = out.parent / ".shuffle", out.parent / ".parts"
    for d in (shuffle, part_out):
        shutil.rmtree(d, ignore_errors=True)
    try:
        maps = [(str(p), str(shuffle), parts) for p in inputs]
        for _ in map_shards(partition_shard, maps, executor, workers, address):
            pass
        dirs = sorted(shuffle.glob("part=*"), key=lambda d: int(d.name.split("=")[1]))
        reduces = [(str(d), str(part_out / f"{d.name}.parquet")) for d in dirs]
        stats: Counter = Counter()
        for s in map_shards(dedup_partition, reduces, executor, workers, address):
            stats.update({k: v for k, v in s.items() if k != "shard"})
        with spilling(threads, out.parent / ".duckdb-tmp") as con:
            src = _source_sql(con, [r[1] for r in reduces])
            sql = (
                f"SELECT {_COLS} FROM (SELECT *, {effective_date_sql()} AS _eff FROM {src}) "
                f"ORDER BY {ORDER}"
            )
            copy_parquet(con, sql, out, metadata)
    finally:
        for d in (shuffle, part_out):
            shutil.rmtree(d, ignore_errors=True)
    return {k: stats[k] for k in STATS}


def quote(value: object) -> str:
    """``value`` inside a single-quoted SQL string literal."""
    return str(value).replace("'", "''")
