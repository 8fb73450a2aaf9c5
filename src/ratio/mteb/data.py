"""What one MTEB task holds: a move's queries, qrels and pool, exactly as ``ratio evaluate``
reads and cuts them. Needs no ``mteb``.

The queries (all of a relation's, or the seeded sample stratified by marker that a system's
``max_queries`` takes) and their qrels come from the benchmark reader
(:meth:`ratio.core.layout.Benchmark.relation_queries`, :meth:`~ratio.core.layout.Benchmark.qrels_dict`)
through :func:`ratio.evaluation.harness.sampled_queries`; the pool from
:func:`ratio.evaluation.harness.make_pool` with the golds the harness passes it: on the shared
pool every gold of every evaluated relation's queries, so a seeded sub-pool (``max_pool``) is
the one ``ratio evaluate`` searches for a system with the same ``max_pool``, ``max_queries``
and seed, and the same for all three moves.

Tested by tests/mteb/test_tasks.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ratio.core.config import BuildConfig, RunConfig, load_config
from ratio.core.io import RatioError
from ratio.core.layout import RunDir
from ratio.core.records import RELATIONS
from ratio.evaluation.harness import make_pool, sampled_queries

RunSource = RunDir | RunConfig | str | os.PathLike


@dataclass(frozen=True)
class MoveData:
    """One move's evaluation data on one split: the pool as the corpus, its queries, qrels."""

    relation: str
    split: str
    corpus_ids: list[str]
    corpus_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: dict[str, dict[str, int]]
    pool_key: str  # the harness's pool key: shared, shared-max<N>-seed<S>, oracle-...
    pool_description: str
    benchmark: str  # the split's folder
    revision: str  # the split stage's key digest (the build that made the benchmark)
    years: tuple[int, int] | None  # publication years of the queries' papers
    max_pool: int
    max_queries: int
    seed: int
    oracle: str


def run_dir_of(source: RunSource) -> tuple[RunDir, int]:
    """(the run directory, the build seed) of a run directory, a run config or its TOML file;
    a bare directory has the default build seed."""
    if isinstance(source, RunConfig):
        return RunDir.of(source), source.build.seed
    if isinstance(source, RunDir):
        return source, BuildConfig().seed
    path = os.fspath(source)
    if path.endswith(".toml"):
        config = load_config(path)
        return RunDir.of(config), config.build.seed
    return RunDir(Path(path).expanduser().resolve()), BuildConfig().seed


def _revision(run: RunDir) -> str:
    manifest = run.benchmark.manifest
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["key_digest"])
    except (OSError, ValueError, KeyError):
        return "unversioned"  # a benchmark written without `ratio build` (tests, hand-made)


def move_data(
    run_dir: RunSource,
    split: str = "test",
    *,
    relations: Sequence[str] = RELATIONS,
    max_pool: int = 0,
    max_queries: int = 0,
    seed: int | None = None,
    oracle: str = "none",
) -> dict[str, MoveData]:
    """Per relation, the data ``ratio evaluate`` evaluates a system with these ``max_pool``
    (0 = the full pool) and ``max_queries`` (0 = all queries) on; ``seed`` defaults to the
    config's ``build.seed`` (the harness's seed), or its default (13) for a bare directory.
    ``relations`` are the evaluated ones: a sub-pool keeps every gold of all of them, as the
    harness's does for its configured ``evaluate.relations``."""
    for r in relations:
        if r not in RELATIONS:
            raise RatioError(f"unknown relation {r!r}; known: {', '.join(RELATIONS)}")
    run, build_seed = run_dir_of(run_dir)
    seed = build_seed if seed is None else int(seed)
    bench = run.benchmark.load(split)
    per_rel = sampled_queries(bench, relations, max_queries, seed)
    all_golds = set().union(*(g for *_, g in per_rel.values()))
    revision = _revision(run)
    q_years = dict(
        zip(
            bench.queries.column("query_id").to_pylist(),
            bench.queries.column("year").to_pylist()
            if "year" in bench.queries.column_names
            else [None] * bench.queries.num_rows,
            strict=True,
        )
    )
    # the shared (sub-)pool is one for every relation, as the harness's; oracle pools are per
    # relation, each with that relation's golds
    shared = None
    if oracle == "none":
        shared = make_pool(
            bench, relation=None, oracle=oracle, golds=all_golds, max_pool=max_pool, seed=seed
        )
    out: dict[str, MoveData] = {}
    for rel in relations:
        qids, texts, qrels, golds = per_rel[rel]
        pool = shared or make_pool(
            bench, relation=rel, oracle=oracle, golds=golds, max_pool=max_pool, seed=seed
        )
        years = sorted({int(y) for q in qids if (y := q_years.get(q)) is not None})
        out[rel] = MoveData(
            relation=rel,
            split=split,
            corpus_ids=pool.ids,  # one list shared by the moves of a shared pool
            corpus_texts=pool.texts,
            query_ids=list(qids),
            query_texts=list(texts),
            qrels=qrels,
            pool_key=pool.key,
            pool_description=pool.description,
            benchmark=str(bench.directory),
            revision=revision,
            years=(years[0], years[-1]) if years else None,
            max_pool=max_pool,
            max_queries=max_queries,
            seed=seed,
            oracle=oracle,
        )
    return out
