"""Temporal split, shared candidate pools, qrels and the leakage check (paper §4.2, App. B.2).

A row goes to ``train`` when its date is on or before ``[split] train_end``, to
``validation`` up to ``validation_end``, to ``test`` up to ``test_end``; later or undated
rows are left out (and counted). A boundary is a year (its last day), a month (its last
day) or an ISO date. A paper known only by year or month is placed on the *last* day it can
have, so it is never put in an earlier split than its true date allows: this errs against
train→test contamination (with year-only data, pick year boundaries).

Each split gets queries (one per relation pair), one candidate pool shared by all relations
(every gold and distractor, one row per distinct match form) and qrels; ids are the content
hashes of :mod:`ratio.core.layout`. Leakage: validation or test text (query or candidate, by match
form) that occurs in an earlier split is dropped and counted, and the check is re-run on
the output, which must report zero.

An undated corpus is refused for a temporal split, naming the two ways out: dates from a
metadata sidecar, or ``[split] mode = "random"``, which assigns each *paper* (so no paper
spans two splits) by a seeded hash of its id (:func:`random_split`). Text leakage is still
removed, but nothing keeps later work out of train: the build report says so.
"""

from __future__ import annotations

import calendar
import dataclasses
import datetime as dt
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ratio.build._text import match_form
from ratio.build.dedup import (
    _source_sql,
    connect,
    copy_parquet,
    effective_date_sql,
    quote,
    spilling,
)
from ratio.core import schemas
from ratio.core.config import ConfigError, SplitConfig
from ratio.core.io import RatioError
from ratio.core.layout import (
    SPLITS,
    UNIT_HEX,
    BenchmarkDir,
    SplitDir,
    candidate_id_sql,
    paper_unit,
    query_id_sql,
)
from ratio.core.records import RELATIONS

_CAND_COLS = ", ".join(schemas.CANDIDATES.names)
_REL_LIST = ", ".join(f"'{r}'" for r in RELATIONS)


def parse_boundary(value: object, key: str) -> dt.date:
    """A ``[split]`` boundary as the last day it covers; bad values raise ConfigError."""
    s = str(value).strip()
    try:
        if re.fullmatch(r"\d{4}", s):
            return dt.date(int(s), 12, 31)
        if re.fullmatch(r"\d{4}-\d{2}", s):
            y, m = int(s[:4]), int(s[5:])
            return dt.date(y, m, calendar.monthrange(y, m)[1])
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
            return dt.date.fromisoformat(s)
    except ValueError as e:
        raise ConfigError(f"[split] {key} = {value!r} is not a valid date: {e}") from e
    raise ConfigError(
        f'[split] {key} = {value!r} is not a year ("2024"), month ("2024-09") or ISO date ("2024-12-31")'
    )


def boundaries(cfg: SplitConfig) -> dict[str, dt.date]:
    """Validated, strictly increasing boundaries ``{split: last day}``."""
    b = {s: parse_boundary(getattr(cfg, f"{s}_end"), f"{s}_end") for s in SPLITS}
    for early, late in (("train", "validation"), ("validation", "test")):
        if not b[early] < b[late]:
            raise ConfigError(
                f"[split] {early}_end ({getattr(cfg, f'{early}_end')}) must be before {late}_end "
                f"({getattr(cfg, f'{late}_end')}): the ranges would overlap or {late} would be empty"
            )
    return b


SPLIT_MODES = ("temporal", "random")


def check_mode(cfg: SplitConfig) -> None:
    """A valid ``mode`` and, for random, fractions that leave every split some papers."""
    if cfg.mode not in SPLIT_MODES:
        raise ConfigError(f"[split] mode = {cfg.mode!r}; known modes: {', '.join(SPLIT_MODES)}")
    if cfg.mode == "random":
        t, v = cfg.train_fraction, cfg.validation_fraction
        if not (0 < t < 1 and 0 < v < 1 and t + v < 1):
            raise ConfigError(
                f"[split] train_fraction = {t} and validation_fraction = {v} must be in (0, 1) "
                "with a sum below 1 (test gets the rest)"
            )


def split_key(cfg: SplitConfig, seed: int) -> dict:
    """The ``[split]`` fields a split depends on (cache key): a temporal split's key is the
    one it had before random splits existed, so existing builds stay up to date."""
    d = dataclasses.asdict(cfg)
    if cfg.mode == "temporal":
        for k in ("mode", "train_fraction", "validation_fraction"):
            d.pop(k)
    else:
        d["seed"] = seed
    return d


def random_split(paper_id: str, cfg: SplitConfig, seed: int) -> str:
    """The split of one paper under ``mode = "random"`` (the SQL below computes the same)."""
    u = paper_unit(paper_id, seed)
    if u < cfg.train_fraction:
        return "train"
    return "validation" if u < cfg.train_fraction + cfg.validation_fraction else "test"


def random_split_sql(cfg: SplitConfig, seed: int, paper_col: str = "paper_id") -> str:
    u = f"(('0x' || substr(sha1('{int(seed)}:' || {paper_col}), 1, {UNIT_HEX}))::UBIGINT / {16**UNIT_HEX}.0)"
    t = float(cfg.train_fraction)
    v = float(cfg.train_fraction + cfg.validation_fraction)
    return f"CASE WHEN {u} < {t!r} THEN 'train' WHEN {u} < {v!r} THEN 'validation' ELSE 'test' END"


def undated_error(what: str) -> RatioError:
    return RatioError(
        f'{what} has a year or date, so a temporal split ([split] mode = "temporal", the '
        "default) would be empty. Either give dates: a metadata file with id and year (or "
        'date) per paper, `ratio ingest --metadata FILE` or [corpus] metadata = "FILE"; or '
        'split papers at random: [split] mode = "random" (seeded by [build] seed, by paper so '
        "no paper spans two splits; temporal leakage control is then off)"
    )


def assign_split_sql(b: dict[str, dt.date], eff: str = "_eff") -> str:
    return (
        f"CASE WHEN {eff} <= DATE '{b['train']}' THEN 'train' "
        f"WHEN {eff} <= DATE '{b['validation']}' THEN 'validation' "
        f"WHEN {eff} <= DATE '{b['test']}' THEN 'test' ELSE NULL END"
    )


@dataclass
class SplitResult:
    out_dir: Path
    boundaries: dict[str, str]
    counts: dict[str, dict] = field(default_factory=dict)  # split -> counts
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> rows
    leakage_dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    final_leakage: int = 0
    random: dict | None = None  # mode = "random": seed and fractions (None: temporal)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        del d["out_dir"]
        if self.random is None:
            del d["random"]
        return d


def split_pairs(
    source: list[str | os.PathLike] | str | os.PathLike | pa.Table,
    out_dir: str | os.PathLike,
    cfg: SplitConfig,
    metadata: dict[str, str] | None = None,
    threads: int | None = None,
    seed: int = 13,
    hold: Sequence[str] = (),
) -> SplitResult:
    """Write ``<out_dir>/<split>/{queries,candidates,qrels}.parquet`` from deduplicated pairs.

    ``seed`` (``[build] seed``) is used by ``mode = "random"`` only. Test queries whose
    marker is in ``hold`` (the lexicon's ``needs_validation`` tier) go to
    ``test/pending_queries.parquet`` instead of ``test/queries.parquet`` and its qrels.
    """
    check_mode(cfg)
    b = boundaries(cfg)
    out = Path(out_dir)
    with spilling(threads, out / ".duckdb-tmp") as con:
        con.execute("CREATE TEMP TABLE hold (marker VARCHAR)")
        if hold:
            con.executemany("INSERT INTO hold VALUES (?)", [[m] for m in sorted(set(hold))])
        return _split(con, source, out, b, cfg, metadata, seed)


def _split(
    con,
    source,
    out: Path,
    b: dict,
    cfg: SplitConfig,
    metadata: dict[str, str] | None,
    seed: int,
) -> SplitResult:
    """The body of :func:`split_pairs` on an open connection."""
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    src = _source_sql(con, source)
    assign = assign_split_sql(b) if cfg.mode == "temporal" else random_split_sql(cfg, seed)
    con.execute(
        f"""CREATE TEMP TABLE p AS
        SELECT *, {assign} AS split FROM (
            SELECT *, {effective_date_sql()} AS _eff,
                relation IN ({_REL_LIST}) AS is_pair,
                {candidate_id_sql("gold_match")} AS candidate_id,
                CASE WHEN relation IN ({_REL_LIST})
                    THEN {query_id_sql("relation", "query_match", "gold_match")} END AS query_id
            FROM {src})"""
    )
    result = SplitResult(out_dir=out, boundaries={k: v.isoformat() for k, v in b.items()})
    if cfg.mode == "random":
        result.boundaries = {}
        result.random = {
            "seed": seed,
            "train_fraction": cfg.train_fraction,
            "validation_fraction": cfg.validation_fraction,
        }
    else:  # a random split places every row; a temporal one leaves some out
        total, dated = con.execute("SELECT count(*), count(_eff) FROM p").fetchone()
        if total and not dated:
            raise undated_error(f"none of the {total:,} mined rows")
        result.excluded = {
            "no_date": con.execute("SELECT count(*) FROM p WHERE _eff IS NULL").fetchone()[0],
            "after_test_end": con.execute(
                "SELECT count(*) FROM p WHERE _eff IS NOT NULL AND split IS NULL"
            ).fetchone()[0],
        }
    # Texts of earlier splits, growing as each split is finalized.
    con.execute("CREATE TEMP TABLE seen (m VARCHAR)")
    kinds = "SELECT count(*) FILTER (WHERE is_pair), count(*) FILTER (WHERE NOT is_pair) FROM p"
    for name in SPLITS:
        if name != "train":
            before = con.execute(f"{kinds} WHERE split = ?", [name]).fetchone()
            con.execute(
                """DELETE FROM p WHERE split = ? AND (
                    gold_match IN (SELECT m FROM seen) OR (is_pair AND query_match IN (SELECT m FROM seen)))""",
                [name],
            )
            after = con.execute(f"{kinds} WHERE split = ?", [name]).fetchone()
            result.leakage_dropped[name] = {
                "pairs": before[0] - after[0],
                "distractors": before[1] - after[1],
            }
        con.execute(
            """INSERT INTO seen SELECT gold_match FROM p WHERE split = ?
               UNION SELECT query_match FROM p WHERE split = ? AND is_pair""",
            [name, name],
        )
    result.final_leakage = leakage_count(con)
    if result.final_leakage:
        raise AssertionError(
            f"leakage check failed: {result.final_leakage} texts shared across splits"
        )

    for name in SPLITS:
        d = BenchmarkDir(out).split(name)
        d.root.mkdir(parents=True, exist_ok=True)
        meta = {**(metadata or {}), "ratio.split": name}
        # needs_validation markers reach the test queries only through the silver set
        not_held = " AND marker NOT IN (SELECT marker FROM hold)" if name == "test" else ""
        copy_parquet(con, _queries_sql(name, not_held), d.queries, meta)
        if name == "test":
            held = " AND marker IN (SELECT marker FROM hold)"
            copy_parquet(con, _queries_sql(name, held), d.held_queries, meta)
        copy_parquet(
            con,
            f"""SELECT {_CAND_COLS} FROM (
                   SELECT candidate_id, gold AS text, paper_id, year, section_category,
                       relation AS origin, marker, paragraph_idx, sentence_idx
                   FROM p WHERE split = '{name}'
                   QUALIFY row_number() OVER (PARTITION BY candidate_id
                       ORDER BY NOT is_pair, _eff, paper_id, paragraph_idx, sentence_idx, marker) = 1
               ) ORDER BY candidate_id""",
            d.candidates,
            meta,
        )
        copy_parquet(
            con,
            f"""SELECT query_id, candidate_id, CAST(1 AS TINYINT) AS relevance
               FROM p WHERE split = '{name}' AND is_pair{not_held} ORDER BY query_id""",
            d.qrels,
            meta,
        )
        result.counts[name] = split_counts(d.root)
    return result


def _queries_sql(name: str, where: str = "") -> str:
    return f"""SELECT query_id, query AS text, relation, marker, paper_id, year, section_category,
                   candidate_id AS gold_id
               FROM p WHERE split = '{name}' AND is_pair{where} ORDER BY relation, query_id"""


def leakage_count(con) -> int:
    """Texts of validation/test (queries or candidates) that also occur in an earlier split."""
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _texts AS
           SELECT DISTINCT split, gold_match AS m FROM p WHERE split IS NOT NULL
           UNION SELECT DISTINCT split, query_match FROM p WHERE split IS NOT NULL AND is_pair"""
    )
    order = "CASE split WHEN 'train' THEN 0 WHEN 'validation' THEN 1 ELSE 2 END"
    return con.execute(
        f"""SELECT count(*) FROM (SELECT *, {order} AS o FROM _texts) a
            JOIN (SELECT *, {order} AS o FROM _texts) b ON a.m = b.m AND a.o > b.o"""
    ).fetchone()[0]


def split_counts(split_dir: Path) -> dict:
    """Queries per relation, candidates per origin, totals: the numbers of Tables 1 and 6."""
    d = SplitDir(split_dir)
    q = pq.read_table(d.queries, columns=["relation"])
    c = pq.read_table(d.candidates, columns=["origin"])
    counts = {
        "queries": _value_counts(q["relation"]),
        "candidates_by_origin": _value_counts(c["origin"]),
        "queries_total": q.num_rows,
        "candidates_total": c.num_rows,
    }
    if d.held_queries.exists():
        h = pq.read_table(d.held_queries, columns=["relation"])
        counts["held_for_validation"] = _value_counts(h["relation"])
    return counts


def _value_counts(col: pa.ChunkedArray) -> dict[str, int]:
    if not len(col):
        return {}
    vc = col.combine_chunks().value_counts().to_pylist()
    return dict(sorted((str(x["values"]), int(x["counts"])) for x in vc))


def check_leakage(benchmark_dir: str | os.PathLike) -> int:
    """Independent re-check on written files: texts of a split also present in an earlier one."""
    bench = BenchmarkDir(Path(benchmark_dir))
    seen: set[str] = set()
    leaks = 0

    for name in SPLITS:
        texts: set[str] = set()
        for f in ("queries", "candidates"):
            p = bench.split(name).table(f)
            if p.exists():
                texts.update(
                    match_form(t) for t in pq.read_table(p, columns=["text"])["text"].to_pylist()
                )
        leaks += len(texts & seen)
        seen |= texts
    return leaks


# Partition columns of the Hive-style datasets under ``<benchmark>/dataset/`` (besides ``split``).
DATASET_PARTITIONS = {"queries": "relation", "candidates": "origin", "qrels": None}
DATASET_ORDER = {"queries": "relation, query_id", "candidates": "candidate_id", "qrels": "query_id"}


def write_datasets(
    bench_dir: str | os.PathLike,
    metadata: dict[str, str] | None = None,
    threads: int | None = None,
) -> Path:
    """Write the split files again as Hive-partitioned Parquet datasets; returns the root.

    ``<bench>/dataset/<table>/split=<s>/[relation=|origin=]<v>/part-0.parquet``, each file
    in the same order as the single file it comes from, so a cluster job (Ray Data, Spark,
    DuckDB with ``hive_partitioning``) reads one relation's queries or one origin's
    candidates without scanning the rest. The single files stay the ones Ratio reads.
    """
    bench = BenchmarkDir(Path(bench_dir))
    root = bench.dataset
    tmp_root = bench.root / ".dataset.tmp"
    shutil.rmtree(tmp_root, ignore_errors=True)
    with connect(threads) as con:
        for table, col in DATASET_PARTITIONS.items():
            for name in SPLITS:
                src = quote(bench.split(name).table(table))
                meta = {**(metadata or {}), "ratio.split": name}
                values = [None]
                if col:
                    sql = f"SELECT DISTINCT {col} FROM read_parquet('{src}') ORDER BY 1"
                    values = [r[0] for r in con.execute(sql).fetchall()]
                for v in values:
                    d = tmp_root / table / f"split={name}"
                    where = exclude = ""
                    if col:
                        d = d / f"{col}={v}"
                        where, exclude = f"WHERE {col} = '{quote(v)}'", f" EXCLUDE ({col})"
                    order = DATASET_ORDER[table]
                    sql = f"SELECT *{exclude} FROM read_parquet('{src}') {where} ORDER BY {order}"
                    copy_parquet(con, sql, d / "part-0.parquet", meta)
    shutil.rmtree(root, ignore_errors=True)
    tmp_root.rename(root)
    return root
