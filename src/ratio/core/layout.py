"""The run directory: where every file of a run lives, the ids in it, and the benchmark reader.

This module is the only place that knows the layout under ``<build.out>``
(docs/architecture.md, "Run directory layout"): code asks a :class:`RunDir` for a path, so a
file is named once and a reader cannot drift from its writer. As in ir_datasets, the object
that knows where the benchmark tables are also reads them (:meth:`BenchmarkDir.load`). The
ids are content hashes; their DuckDB forms sit beside them so the two cannot diverge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.core.config import RunConfig
from ratio.core.io import RatioError
from ratio.core.schemas import QRELS, QUERIES

SPLITS: tuple[str, ...] = ("train", "validation", "test")
SILVER = "silver"  # the LLM-validated test queries (ratio.judge.silver), read like a split
TABLES: tuple[str, ...] = ("queries", "candidates", "qrels")
# Test queries of needs_validation markers (ratio.lexicon.tiers), held out of test/queries.parquet
# until the silver set (ratio.judge.silver) judges them; their golds stay in the test pool.
HELD_QUERIES = "pending_queries.parquet"
# "test+held": the test split with its held (needs_validation) queries added back, i.e. the
# raw mined test pairs. The published split leaves a held move with few queries (Broaden:
# 6 of 130 on the shared corpus); this view measures it on the raw pairs, clearly labelled.
HELD_SUFFIX = "+held"
MANIFEST = "manifest.json"
DONE_SUFFIX = ".done.json"
# The folder of each build stage, relative to the run directory; each holds MANIFEST.
STAGE_DIRS: dict[str, str] = {
    "ingest": "ingest",
    "mine": "mine",
    "dedup": "dedup",
    "split": "benchmark",
    "export": "export/beir",
    "reports": "reports",
}


# ------------------------------------------------------------------ ids

ID_HEX = 16  # hex digits of sha1 kept in an id


def candidate_id(match: str) -> str:
    """The id of a candidate sentence: a hash of its match form (shared across splits)."""
    return "c" + hashlib.sha1(match.encode("utf-8")).hexdigest()[:ID_HEX]


def query_id(relation: str, query_match: str, gold_match: str) -> str:
    """The id of a query: a hash of its relation, its match form and its gold's."""
    text = relation + query_match + gold_match
    return "q" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:ID_HEX]


def candidate_id_sql(match: str) -> str:
    """DuckDB expression equal to :func:`candidate_id` of the column/expression ``match``."""
    return f"'c' || substr(sha1({match}), 1, {ID_HEX})"


def query_id_sql(relation: str, query_match: str, gold_match: str) -> str:
    """DuckDB expression equal to :func:`query_id` of three columns/expressions."""
    return f"'q' || substr(sha1({relation} || {query_match} || {gold_match}), 1, {ID_HEX})"


def done_marker(directory: Path, shard: str) -> Path:
    """The completion marker of one shard's output in ``directory`` (written last)."""
    return directory / f"{shard}{DONE_SUFFIX}"


# ------------------------------------------------------------------ the benchmark tables


UNIT_HEX = 13  # hex digits of sha1 in a paper's coin: exact in a double and a DuckDB UBIGINT


def paper_unit(paper_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by the paper and the seed: the order-free coin that splits
    papers (``build.split``'s random split, its SQL twin, :meth:`Benchmark.paper_split`)."""
    return (
        int(hashlib.sha1(f"{seed}:{paper_id}".encode()).hexdigest()[:UNIT_HEX], 16) / 16**UNIT_HEX
    )


class BenchmarkError(RatioError):
    """A benchmark split that is missing or unreadable."""


_REQUIRED = {
    "queries": ("query_id", "text", "relation"),
    "candidates": ("candidate_id", "text", "origin"),
    "qrels": ("query_id", "candidate_id", "relevance"),
}


@dataclass
class Benchmark:
    """One split's queries, shared candidate pool and qrels, as columns."""

    split: str
    directory: Path
    queries: pa.Table
    candidates: pa.Table
    qrels: pa.Table

    @classmethod
    def read(cls, directory: Path, split: str) -> Benchmark:
        """Read and check ``directory/{queries,candidates,qrels}.parquet``."""
        files = SplitDir(directory)
        tables = {}
        for name, cols in _REQUIRED.items():
            p = files.table(name)
            if not p.is_file():
                raise BenchmarkError(
                    f"missing {p}; run `ratio build` first (or check build.out and evaluate.split)"
                )
            try:
                t = pq.read_table(p)
            except (OSError, pa.ArrowInvalid) as e:
                raise BenchmarkError(f"{p}: unreadable Parquet: {e}") from e
            missing = [c for c in cols if c not in t.column_names]
            if missing:
                raise BenchmarkError(f"{p}: missing column(s) {', '.join(missing)}")
            tables[name] = t
        ids = tables["candidates"].column("candidate_id").to_pylist()
        if len(set(ids)) != len(ids):
            raise BenchmarkError(f"{files.candidates}: duplicate candidate_id values")
        return cls(split, directory, tables["queries"], tables["candidates"], tables["qrels"])

    @property
    def files(self) -> SplitDir:
        """The split's folder, to name its files in messages or copy them."""
        return SplitDir(self.directory)

    @property
    def candidate_ids(self) -> list[str]:
        return self.candidates.column("candidate_id").to_pylist()

    @property
    def candidate_texts(self) -> list[str]:
        return self.candidates.column("text").to_pylist()

    def relation_queries(
        self, relation: str, max_queries: int = 0, seed: int = 0
    ) -> tuple[list[str], list[str]]:
        """The relation's queries; with ``max_queries``, a seeded sample stratified by marker
        (the paper's sampler), so slow models can be evaluated on a stated subset."""
        # lazy, a cycle: ratio.build imports this module (ids, layout); it also pulls duckdb
        from ratio.core.sampling import stratified_sample

        mask = np.asarray(self.queries.column("relation").to_pylist(), dtype=object) == relation
        t = self.queries.filter(pa.array(mask))
        if max_queries and t.num_rows > max_queries:
            t = stratified_sample(t, max_queries, seed)
        return t.column("query_id").to_pylist(), t.column("text").to_pylist()

    def qrels_dict(self, query_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        wanted = set(query_ids)
        out: dict[str, dict[str, int]] = {}
        for q, c, r in zip(
            self.qrels.column("query_id").to_pylist(),
            self.qrels.column("candidate_id").to_pylist(),
            self.qrels.column("relevance").to_pylist(),
            strict=True,
        ):
            if q in wanted:
                out.setdefault(q, {})[c] = int(r)
        return out

    def paper_split(self, share: float, seed: int) -> tuple[Benchmark, Benchmark]:
        """(a seeded ``share`` of the split's papers, the other papers), each with only its
        papers' queries, qrels and pool sentences.

        Papers, not queries, are divided: a held-out paper's sentences then never appear as
        a training gold or pool sentence, so a model fitted on one part can be validated on
        the other. A paper's side depends only on its id and the seed, not on the file order.
        """
        if not 0.0 < share < 1.0:
            raise BenchmarkError(f"paper share must be in (0, 1), got {share}")

        papers = set(self.queries["paper_id"].to_pylist()) | set(
            self.candidates["paper_id"].to_pylist()
        )
        side = {p: paper_unit(p, seed) < share for p in papers}  # one hash a paper

        def chosen(table: pa.Table) -> np.ndarray:
            return np.array([side[p] for p in table.column("paper_id").to_pylist()], dtype=bool)

        q_in, c_in = chosen(self.queries), chosen(self.candidates)
        parts = []
        for q_mask, c_mask in ((q_in, c_in), (~q_in, ~c_in)):
            queries = self.queries.filter(pa.array(q_mask))
            wanted = pa.array(sorted(set(queries.column("query_id").to_pylist())), pa.string())
            qrels = self.qrels.filter(pc.is_in(self.qrels["query_id"], value_set=wanted))
            parts.append(
                replace(
                    self,
                    queries=queries,
                    candidates=self.candidates.filter(pa.array(c_mask)),
                    qrels=qrels,
                )
            )
        return parts[0], parts[1]

    def with_held_queries(self) -> Benchmark:
        """The split's queries plus those held for validation (:data:`HELD_QUERIES`), with
        their qrels (gold = relevant): what the silver set samples from."""
        held_path = self.files.held_queries
        if not held_path.is_file():
            return self
        held = pq.read_table(held_path).select(QUERIES.names).cast(QUERIES)
        held_qrels = pa.table(
            {
                "query_id": held["query_id"],
                "candidate_id": held["gold_id"],
                "relevance": pa.array([1] * held.num_rows, pa.int8()),
            }
        ).cast(QRELS)
        return replace(
            self,
            queries=pa.concat_tables([self.queries.select(QUERIES.names).cast(QUERIES), held]),
            qrels=pa.concat_tables([self.qrels.select(QRELS.names).cast(QRELS), held_qrels]),
        )


# ------------------------------------------------------------------ folders


class _Path:
    """A fixed file or folder of a layout, ``root / parts``: each is named once, below."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    @overload
    def __get__(self, obj: None, owner: type) -> _Path: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Path: ...
    def __get__(self, obj: Any, owner: type) -> Path | _Path:
        return self if obj is None else obj.root.joinpath(*self.parts)


@dataclass(frozen=True)
class IngestDir:
    """``ingest/`` (or ``ratio ingest --out``): papers, raw and final sentences, stats."""

    root: Path
    papers = _Path("papers")
    raw = _Path("raw")
    sentences = _Path("sentences")
    boilerplate = _Path("boilerplate.parquet")
    stats = _Path("stats.json")
    metadata = _Path("metadata.parquet")  # the checked sidecar (--metadata / [corpus] metadata)
    manifest = _Path(MANIFEST)

    def raw_shard(self, shard: str) -> Path:
        return self.raw / f"{shard}.parquet"

    def raw_done(self, shard: str) -> Path:
        return done_marker(self.raw, shard)

    def sentence_shard(self, shard: str) -> Path:
        return self.sentences / f"{shard}.parquet"

    def sentence_shards(self) -> list[Path]:
        return sorted(self.sentences.glob("*.parquet"))

    def paper_shards(self) -> list[Path]:
        return sorted(self.papers.glob("*.parquet"))


@dataclass(frozen=True)
class SplitDir:
    """``benchmark/<split>/``: the three tables (and, for silver, the judged sample)."""

    root: Path
    queries = _Path("queries.parquet")
    candidates = _Path("candidates.parquet")
    qrels = _Path("qrels.parquet")
    held_queries = _Path(HELD_QUERIES)
    judgments = _Path("judgments.parquet")  # silver only: every judgment that decided it
    sample = _Path("sample.parquet")  # silver only: the stratified sample that was judged

    @property
    def name(self) -> str:
        return self.root.name

    def table(self, name: str) -> Path:
        return self.root / f"{name}.parquet"

    def load(self) -> Benchmark:
        return Benchmark.read(self.root, self.name)


@dataclass(frozen=True)
class BenchmarkDir:
    """``benchmark/``: one folder per split, the partitioned datasets and the manifest."""

    root: Path
    manifest = _Path(MANIFEST)
    dataset = _Path("dataset")  # the same tables as partitioned Parquet (split/relation/origin)

    def split(self, name: str) -> SplitDir:
        return SplitDir(self.root / name)

    @property
    def silver(self) -> SplitDir:
        return self.split(SILVER)

    def load(self, split: str) -> Benchmark:
        """``split``'s queries, candidate pool and qrels (:class:`BenchmarkError` if absent);
        ``"<split>+held"`` adds the split's held queries (:data:`HELD_SUFFIX`)."""
        base = split.removesuffix(HELD_SUFFIX)
        bench = self.split(base).load()
        return bench.with_held_queries() if base != split else bench

    def candidate_files(self) -> list[Path]:
        """Every split's ``candidates.parquet`` that exists (silver's included), sorted."""
        return sorted(self.root.glob("*/candidates.parquet"))


@dataclass(frozen=True)
class ServePoolDir:
    """``serve/<pool>/`` (or ``--index-dir``): the memory-mapped pool file and its indexes."""

    root: Path
    pool_file = _Path("pool.arrow")
    meta = _Path("pool.json")
    retrievers = _Path("retrievers")

    def array(self, name: str) -> Path:
        """A NumPy side array of the pool (``sorted_ids``, ``order``, ``years``, ...)."""
        return self.root / f"{name}.npy"


UNIFIED = "unified"  # the unified relation-conditioned model's target, beside the relations


@dataclass(frozen=True)
class ModelsDir:
    """Trained retrievers, one folder per target (a relation or :data:`UNIFIED`)."""

    root: Path

    def target(self, name: str) -> Path:
        return self.root / name

    def best(self, name: str) -> Path:
        """The selected model of a target (a sentence-transformers folder)."""
        return self.root / name / "best"

    def trial(self, name: str, index: int) -> Path:
        return self.root / name / f"trial-{index}"

    def selection(self, name: str) -> Path:
        """Which trial won and the validation scores it was chosen on."""
        return self.root / name / "selection.json"

    def compare(self, split: str) -> Path:
        """``ratio train compare`` outputs for one split."""
        return self.root / "compare" / split


@dataclass(frozen=True)
class JudgeDir:
    """``judge.out`` (``<build.out>/judge`` by default): LLM-judge outputs and cache."""

    root: Path
    cache_file: Path | None = None  # [judge] cache, when set
    calibration = _Path("calibration")
    lexicon = _Path("lexicon")
    annotate = _Path("annotate")

    @property
    def cache(self) -> Path:
        """Every judgment ever made, keyed by backend/model/prompt/input."""
        return self.cache_file or self.root / "cache.sqlite"

    def topk(self, relation: str) -> Path:
        return self.root / "topk" / relation

    def pairwise(self, relation: str) -> Path:
        return self.root / "pairwise" / relation


@dataclass(frozen=True)
class RunDir:
    """The layout of one run directory (``<build.out>``), with the config's overrides.

    ``train_out``, ``judge_out``, ``judge_cache`` and ``eval_out`` are the optional
    ``[train] out``, ``[judge] out``/``cache`` and ``[evaluate] out`` settings, already
    resolved; ``train_name`` names the default trained-models folder. :meth:`of` fills them
    from a config; ``RunDir(path)`` alone gives the plain layout.
    """

    root: Path
    train_out: Path | None = None
    train_name: str = ""
    judge_out: Path | None = None
    judge_cache: Path | None = None
    eval_out: Path | None = None
    # build stages
    mine = _Path("mine")
    # shard sha256s, memoized on (size, mtime)
    mine_fingerprints = _Path("mine", "_fingerprints.json")
    dedup = _Path("dedup")
    dedup_pairs = _Path("dedup", "pairs.parquet")
    # <split>/<relation>/{corpus,queries}.jsonl, qrels/<split>.tsv
    export_beir = _Path("export", "beir")
    reports = _Path("reports")
    # evaluation, training, serving
    embeddings = _Path("embeddings")  # the embedding cache shared by evaluate, train compare, serve
    indexes = _Path("indexes")
    serve = _Path("serve")

    @classmethod
    def of(cls, config: RunConfig) -> RunDir:
        """The run directory of a config (relative paths resolve against the config file)."""

        def opt(p: str) -> Path | None:
            return config.resolve(p) if p else None

        return cls(
            config.resolve(config.build.out),
            train_out=opt(config.train.out),
            train_name=f"{Path(config.train.base_model).name}-{config.train.prefix}",
            judge_out=opt(config.judge.out),
            judge_cache=opt(config.judge.cache),
            eval_out=opt(config.evaluate.out),
        )

    def manifest(self, stage: str) -> Path:
        """A stage's manifest (in its :data:`STAGE_DIRS` folder): its cache key, code and
        lexicon versions, counts."""
        return self.root / STAGE_DIRS[stage] / MANIFEST

    @property
    def ingest(self) -> IngestDir:
        return IngestDir(self.root / "ingest")

    def mine_shard(self, shard: str) -> Path:
        """Mined pairs incl. distractor candidates of one sentence shard (schemas.PAIRS)."""
        return self.mine / f"{shard}.parquet"

    def mine_done(self, shard: str) -> Path:
        return done_marker(self.mine, shard)

    @property
    def benchmark(self) -> BenchmarkDir:
        return BenchmarkDir(self.root / "benchmark")

    def index(self, system: str, pool: str) -> Path:
        """A persisted retriever index: ``indexes/<system slug>/<pool key>``."""
        return self.indexes / system / pool

    def eval(self, split: str) -> Path:
        """Where ``ratio evaluate`` writes: ``[evaluate] out``, else ``eval/<split>``."""
        return self.eval_out or self.root / "eval" / split

    @property
    def models(self) -> ModelsDir:
        """``models/``: where trained retrievers are looked for besides :attr:`trained`."""
        return ModelsDir(self.root / "models")

    @property
    def trained(self) -> ModelsDir:
        """Where training writes: ``[train] out``, else ``models/<base model>-<prefix>``."""
        return ModelsDir(self.train_out or self.root / "models" / self.train_name)

    def serve_pool(self, key: str) -> ServePoolDir:
        return ServePoolDir(self.serve / key)

    @property
    def judge(self) -> JudgeDir:
        return JudgeDir(self.judge_out or self.root / "judge", self.judge_cache)
