"""The search engine behind the HTTP API, the web page, ``ratio.search`` and the MCP tools.

It resolves the retriever a request names for the move (``auto``: whichever won on validation,
see :mod:`ratio.serve.trained`), ranks with the run's :class:`~ratio.retrieval.store.IndexStore`
(indexes under the pool folder's ``retrievers/``), maps candidate ids to pool rows and filters.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ratio.core.config import RunConfig, SystemConfig, load_config
from ratio.core.layout import RunDir
from ratio.core.records import RELATIONS
from ratio.retrieval.store import IndexStore, per_move, slug
from ratio.serve.pool import PoolFile, ServeError, pool_spec, prepare_pool
from ratio.serve.trained import (
    TrainedModel,
    find_shipped,
    find_trained,
    find_unified,
    validation_scores,
    validation_winner,
)

MOVES: tuple[str, ...] = RELATIONS
MAX_K = 100
MAX_CHAIN = 5  # moves in one chain (ratio.serve.chain): past a few, the path drifts off-topic
MAX_QUERY_CHARS = 10_000
DEFAULT_DENSE_MODEL = "all-MiniLM-L6-v2"
AUTO = "auto"
# What counts as blank around a query: ASCII whitespace only, so the rule is the same in
# Python, in the API's JSON Schema (QUERY_PATTERN) and in any client validating against it.
BLANK = " \t\n\r\f\v"
QUERY_PATTERN = r"[^ \t\n\r\f\v]"
# the pool columns a result shows as they are, in the response's order
HIT_COLUMNS = "candidate_id text paper_id title year venue url section section_category".split()
_FAISS_THREADS = int(os.environ.get("RATIO_SERVE_FAISS_THREADS", "1"))


class UnknownRetrieverError(ServeError):
    status = 422


def _single_query_threads() -> None:
    """One FAISS thread per search. A server ranks one query per request; OpenMP's team of
    spinning threads only adds latency then (6x on a busy 2-core machine), and requests
    already run in parallel on the threadpool. ``RATIO_SERVE_FAISS_THREADS`` overrides."""
    faiss = sys.modules.get("faiss")
    if faiss is not None:
        faiss.omp_set_num_threads(_FAISS_THREADS)


def _built(run: RunDir, source: str, split: str) -> bool:
    """Whether the run has what ``source`` serves (else :meth:`SearchEngine.open` builds it)."""
    if source == "sentences":
        return bool(run.ingest.sentence_shards())
    if split:
        return run.benchmark.split(split).candidates.is_file()
    return bool(run.benchmark.candidate_files())


def _build_first(cfg: RunConfig, progress: bool) -> None:
    """A fresh checkout serves right away: the build is deterministic, resumable and skips what
    is up to date, so serving an unbuilt run runs it first, as ``ratio build`` would."""
    # lazy: ratio.build pulls duckdb and every stage (~0.8 s); an up-to-date run never needs it
    from ratio.build import build

    print(
        f"nothing to serve under {RunDir.of(cfg).root} yet: building it first (`ratio build`; "
        "~4 min for the shared NeurIPS corpus on 2 cores)",
        file=sys.stderr,
    )
    build(cfg, progress=progress)


class SearchEngine:
    """Ranked, filtered, context-enriched search over one candidate pool, per ideation move."""

    def __init__(
        self,
        pool: PoolFile,
        *,
        systems: dict[str, SystemConfig],
        default: str = "bm25",
        trained: dict[str, TrainedModel] | None = None,
        unified: dict[str, TrainedModel] | None = None,
        shipped: dict[str, TrainedModel] | None = None,
        embedding_cache: Path | None = None,
        dense_index: str = "flat",
        dense_backend: str = "auto",
        dense_query_backend: str = "",
    ) -> None:
        if dense_index not in ("flat", "hnsw"):
            raise ServeError(f"[serve] index must be 'flat' or 'hnsw', got {dense_index!r}")
        self.pool = pool
        # index kind of the dense models the engine defines itself (trained, unified, base):
        # flat scans every vector per query; hnsw answers 8 clients on 2 cores in time
        self.dense_index = dense_index
        self.dense_backend = dense_backend  # their pool encoder (auto | torch | onnx | ...)
        self.dense_query_backend = dense_query_backend  # their queries' ("": the same)
        self.systems, self.default = systems, default
        self.trained = dict(trained or {})  # each move's specialist
        self.unified = dict(unified or {})  # the unified model, per move (one folder)
        self.shipped = dict(shipped or {})  # the shipped move model, per move (one folder)
        # the run's embedding cache (<build.out>/embeddings), shared with `ratio evaluate` and
        # `ratio train-compare`: a model they already encoded this pool with indexes in seconds
        self.store = IndexStore(
            systems,
            folder=lambda name, _pool: pool.where.retrievers / slug(name),
            embeddings=embedding_cache,
            cache_queries=False,  # user queries are not worth keeping
        )
        if default not in self.retriever_names():
            raise UnknownRetrieverError(
                f"default retriever {default!r} is not known; "
                f"known: {', '.join(self.retriever_names())}"
            )

    @classmethod
    def open(
        cls,
        config: RunConfig | str | os.PathLike | None = None,
        *,
        source: str | None = None,
        split: str | None = None,
        candidates: str | os.PathLike | None = None,
        retriever: str | None = None,
        index_dir: str | os.PathLike | None = None,
        warm: Sequence[str] = (),
        progress: bool = False,
    ) -> SearchEngine:
        """Open (building on first use) the pool and retrievers a run config describes. Options
        left as None come from ``[serve]`` in the config, so a TOML file alone can define a
        deployment. ``warm`` names retrievers to load now (``auto``: each move's default)."""
        cfg = config if isinstance(config, RunConfig) else load_config(config)
        serve = cfg.serve
        source = source or serve.source or "benchmark"
        split = split if split is not None else serve.split
        # an argument is a path as the caller typed it (relative to the working directory);
        # the config's own value is relative to the config file, like every path in it
        cand = candidates or (cfg.resolve(serve.candidates) if serve.candidates else None)
        index_dir = index_dir or (cfg.resolve(serve.index_dir) if serve.index_dir else None)
        if cand is None and not _built(RunDir.of(cfg), source, split) and cfg.corpus.inputs:
            _build_first(cfg, progress)
        spec = pool_spec(
            cfg,
            source=source,
            split=split,
            candidates=cand,
            index_dir=index_dir,
            years=serve.years,
            sections=serve.sections,
            max_pool=serve.max_pool,
            max_queries=serve.max_queries,
        )
        pool = prepare_pool(spec, progress=progress)
        dense_model = serve.model or next(
            (s.model for s in cfg.evaluate.systems if s.kind == "dense" and s.model),
            DEFAULT_DENSE_MODEL,
        )
        systems: dict[str, SystemConfig] = {
            "bm25": SystemConfig(name="bm25", kind="bm25"),
            "dense": SystemConfig(name="dense", kind="dense", model=dense_model),
            **{s.name: s for s in cfg.evaluate.systems if s.name},
        }
        eng = cls(
            pool,
            systems=systems,
            default=retriever or serve.retriever or "bm25",
            trained=find_trained(cfg),
            unified=find_unified(cfg),
            shipped=find_shipped(cfg),
            embedding_cache=RunDir.of(cfg).embeddings,
            dense_index=serve.index or "flat",
            dense_backend=serve.backend or "auto",
            dense_query_backend=serve.query_backend,
        )
        eng.warm(warm)
        return eng

    def warm(self, names: Iterable[str]) -> None:
        """Load (building if needed) the named retrievers for every move, and run one query
        through each so the model is in memory before the first real request."""
        done: set[str] = set()
        for name in names:
            for move in MOVES:
                for leaf in self.store.leaves(self.resolve(name, move)[1]):
                    if leaf not in done:
                        done.add(leaf)
                        self.store.rank(leaf, self.pool, ["warm up"], 1)

    def retriever_names(self) -> list[str]:
        """Names a request may pass as ``retriever``."""
        have = (("trained", self.trained), ("unified", self.unified), ("shipped", self.shipped))
        trained = [n for n, models in have if models]
        return list(dict.fromkeys([AUTO, *self.systems, "hybrid", *trained]))

    def resolve(self, name: str | None, move: str, _depth: int = 0) -> tuple[str, str]:
        """How retriever ``name`` answers for ``move``: the name responses report and the
        store system that ranks (per-move systems are named ``<name>@<move>``)."""
        if move not in MOVES:
            raise ServeError(f"unknown move {move!r}; expected one of {', '.join(MOVES)}")
        if _depth > 4:
            raise ServeError(f"retriever {name!r}: hybrid components nest too deeply")
        name = name or AUTO
        if name == AUTO:
            name = self.auto_choice(move)
        if name == per_move("baseline", move):
            t = self._baseline_of(move)
            if t is None:
                raise UnknownRetrieverError(f"no trained model for move {move!r} names its base")
            return name, self.store.define(self._dense(name, t.base_model, t.prefix))
        if name == "trained":
            if move not in self.trained:
                raise UnknownRetrieverError(
                    f"no trained model for move {move!r} (looked for a sentence-transformers "
                    f"folder <train.out>/{move}/best and <build.out>/models/{move}/best); "
                    f"trained moves: {', '.join(sorted(self.trained)) or 'none'}"
                )
            t = self.trained[move]
            return "trained", self.store.define(
                self._dense(per_move("trained", move), str(t.path), t.prefix)
            )
        if name in ("unified", "shipped"):
            return name, self._instructed(name, move)
        if name == "hybrid" and "hybrid" not in self.systems:
            choice = self.auto_choice(move)
            dense = choice if choice in ("trained", "unified", "shipped") else "dense"
            parts = [self.resolve(c, move, _depth + 1)[1] for c in ("bm25", dense)]
            hybrid = SystemConfig(name=per_move("hybrid", move), kind="hybrid", components=parts)
            return "hybrid", self.store.define(hybrid)
        system = self.systems.get(name)
        if system is None:
            raise UnknownRetrieverError(
                f"unknown retriever {name!r}; known: {', '.join(self.retriever_names())}"
            )
        if system.kind == "hybrid":
            parts = [self.resolve(c, move, _depth + 1)[1] for c in system.components]
            if len(parts) < 2:
                raise ServeError(f"hybrid system {name!r} needs at least two components")
            fused = SystemConfig(
                name=per_move(name, move), kind="hybrid", components=parts, fusion=system.fusion
            )
            return name, self.store.define(fused)
        return name, name

    def _dense(self, name: str, model: str, prefix: str) -> SystemConfig:
        """A dense system the engine defines itself (specialist, unified, base model), with the
        served index kind and encoder backend of ``[serve]``."""
        return SystemConfig(
            name=name,
            kind="dense",
            model=model,
            prefix=prefix,
            index=self.dense_index,
            backend=self.dense_backend,
            query_backend=self.dense_query_backend,
        )

    def _instructed(self, kind: str, move: str) -> str:
        """A model trained on every move (``unified``, or ``shipped``) for ``move``: one index
        of the pool that every move shares (``unified``, or the shipped folder's name),
        queried with the move's instruction (``<kind>@<move>``)."""
        t = (self.unified if kind == "unified" else self.shipped).get(move)
        if t is None:
            raise UnknownRetrieverError(
                "no unified model (looked for a sentence-transformers folder "
                "<train.out>/unified/best and <build.out>/models/unified/best)"
                if kind == "unified"
                else "no shipped model ([serve] shipped is none, or no models/ratio-moves-*-v<N>)"
            )
        leaf = t.name or kind
        self.store.define(self._dense(leaf, str(t.path), t.prefix))
        view = SystemConfig(
            name=per_move(kind, move),
            kind="instructed",
            components=[leaf],
            instruction=t.instruction,
        )
        return self.store.define(view)

    def _baseline_of(self, move: str) -> TrainedModel | None:
        """The trained model whose untuned base serves as ``baseline@<move>``."""
        models = (self.trained.get(move), self.unified.get(move), self.shipped.get(move))
        return next((t for t in models if t and t.base_model), None)

    def _records(self, move: str) -> tuple[TrainedModel | None, ...]:
        """(specialist, unified, shipped) for ``move``, as :func:`validation_winner` takes them."""
        return self.trained.get(move), self.unified.get(move), self.shipped.get(move)

    def auto_choice(self, move: str) -> str:
        """What ``auto`` means for ``move``: whichever of its specialist, the unified model, the
        shipped model, their untuned base and BM25 scored best on validation (:func:`validation_winner`);
        with nothing trained, the configured default, and when that is itself ``auto``, BM25
        (what every model must beat)."""
        records = self._records(move)
        if all(t is None for t in records):
            return "bm25" if self.default == AUTO else self.default
        choice = validation_winner(*records)
        if choice == "baseline":
            return per_move("baseline", move) if self._baseline_of(move) else "bm25"
        return choice

    def effective_name(self, name: str | None, move: str) -> str:
        """The retriever a request would actually use (``auto`` resolved)."""
        return self.resolve(name, move)[0]

    def _move_specific(self, system: str) -> bool:
        """Whether ``system`` ranks differently per move (a move's specialist, or the unified
        model with the move's instruction)."""
        s = self.store.system(system)
        if s.kind == "hybrid":
            return any(self._move_specific(c) for c in s.components)
        return system.startswith("trained@") or s.kind == "instructed"

    def search(
        self,
        query: str,
        move: str = "address",
        k: int = 10,
        retriever: str | None = None,
        *,
        year_min: int | None = None,
        year_max: int | None = None,
        venue: str | None = None,
        exclude_paper: str | Sequence[str] | None = None,
        _memo: dict | None = None,
    ) -> dict[str, Any]:
        """Top-k candidates for one query and move, after filters, with provenance and context.
        ``exclude_paper`` is one paper id or several (a chain's path)."""
        t0 = time.perf_counter()
        query = self.check_query(query)
        if not 1 <= int(k) <= MAX_K:
            raise ServeError(f"k must be between 1 and {MAX_K}, got {k}")
        name, system = self.resolve(retriever, move)
        if year_min is not None and year_max is not None and year_min > year_max:
            # an empty range, not an error: JSON Schema cannot say "min <= max", and a
            # client that states a valid schema request should get a valid answer
            note = f"year_min ({year_min}) > year_max ({year_max}): no year matches"
            return self._response(query, move, k, (name, system), [], t0, note)
        filters: dict[str, Any] = {"year_min": year_min, "year_max": year_max, "venue": venue}
        filters["exclude_paper"] = exclude_paper
        results = [
            {**hit, "retriever": name} for hit in self._ranked(system, query, k, filters, _memo)
        ]
        return self._response(query, move, k, (name, system), results, t0)

    def _ranked(
        self, system: str, query: str, k: int, filters: dict[str, Any], memo: dict | None
    ) -> list[dict[str, Any]]:
        """The top ``k`` pool rows ``system`` ranks for ``query`` that pass ``filters``. A
        filter drops hits, so the store is asked for more (4x, then 4x again) until ``k`` pass
        or the pool is exhausted. ``memo`` keeps the hits per system for one request, so
        :meth:`moves` encodes and ranks a query once per model, not once per move."""
        if memo is not None and system in memo:
            return memo[system]
        year_min, year_max = filters["year_min"], filters["year_max"]
        venue, exclude_paper = filters["venue"], filters["exclude_paper"]
        filtered = any(v not in (None, "") for v in filters.values())
        n = self.pool.n
        fetch = min(n, k if not filtered else max(4 * k, 50))
        _single_query_threads()  # OpenMP settings are per thread: set in this one
        while True:
            run = self.store.rank(system, self.pool, [query], fetch)
            ids, sc = run.doc_ids()[0], run.scores[0]
            rows = self.pool.rows_of(ids)
            keep = (ids != "") & (rows >= 0)  # "" pads missing results
            if filtered:
                keep &= self.pool.mask(rows, year_min, year_max, venue, exclude_paper)
            rows_k, scores_k = rows[keep], sc[keep]
            exhausted = fetch >= n or len(ids) < fetch or not all(ids)
            if len(rows_k) >= k or exhausted:
                break
            fetch = min(n, fetch * 4)
        hits = zip(self.pool.rows(rows_k[:k]), scores_k[:k], strict=True)
        out = [
            {
                "rank": rank,
                **{c: row[c] for c in HIT_COLUMNS},
                "context": {"prev": row["prev"], "next": row["next"]},
                "score": float(score) if np.isfinite(score) else 0.0,
            }
            for rank, (row, score) in enumerate(hits, 1)
        ]
        if memo is not None:
            memo[system] = out
        return out

    def _response(self, query, move, k, choice, results, t0, note=None) -> dict[str, Any]:
        name, system = choice
        if note is None and not self._move_specific(system):
            note = (
                f"'{name}' is not specific to the {move} move (no model trained for it), "
                f"so every move ranks by the same similarity"
            )
        return {
            "query": query,
            "move": move,
            "retriever": name,
            "k": k,
            "results": results,
            "took_ms": round((time.perf_counter() - t0) * 1000, 2),
            "note": note,
        }

    def moves(self, query: str, k: int = 10, retriever: str | None = None, **filters) -> dict:
        """The three moves side by side for one query."""
        t0 = time.perf_counter()
        memo: dict[str, list[dict[str, Any]]] = {}  # a move-agnostic retriever ranks once
        out = {m: self.search(query, m, k, retriever, **filters, _memo=memo) for m in MOVES}
        return {
            "query": self.check_query(query),
            "k": k,
            "moves": out,
            "took_ms": round((time.perf_counter() - t0) * 1000, 2),
        }

    def chain(self, query: str, moves: Sequence[str], **options: Any) -> dict[str, Any]:
        """Moves applied one after another, each to the previous step's chosen hit; one method
        so the API, the page, MCP and ``ratio.chain`` run the same code (options and errors:
        :func:`ratio.serve.chain.run_chain`)."""
        from ratio.serve.chain import run_chain  # chain.py builds on this module

        return run_chain(self, query, moves, **options)

    @staticmethod
    def check_query(query: str) -> str:
        """The query, stripped; public so a chain refuses the same queries as a search."""
        if not isinstance(query, str) or not query.strip(BLANK):
            raise ServeError("query is empty: give a research statement to search with")
        if len(query) > MAX_QUERY_CHARS:
            raise ServeError(
                f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}"
            )
        return query.strip(BLANK)

    def info(self) -> dict[str, Any]:
        return {
            "pool": {
                "candidates": self.pool.n,
                "fingerprint": self.pool.fingerprint,
                "directory": str(self.pool.dir),
                "venues": self.pool.venues,
                "with_context": self.pool.meta.get("with_context", False),
            },
            "moves": list(MOVES),
            "retrievers": self.retriever_names(),
            "default_retriever": self.default,
            "per_move": {m: self.effective_name(None, m) for m in MOVES},
            "trained": {
                m: {"path": str(t.path), "worse_than_baseline": t.worse_than_baseline}
                for m, t in sorted(self.trained.items())
            },
            "unified": {
                m: {
                    "path": str(t.path),
                    "instruction": t.instruction,
                    "worse_than_baseline": t.worse_than_baseline,
                    "bm25_val_is_average_over_moves": t.bm25_overall,
                }
                for m, t in sorted(self.unified.items())
            },
            "shipped": {
                m: {
                    "name": t.name,
                    "path": str(t.path),
                    "card": "/card",
                    "instruction": t.instruction,
                    "worse_than_baseline": t.worse_than_baseline,
                }
                for m, t in sorted(self.shipped.items())
            },
            # what auto chose among, per move (validation MRR@10 on one pool; None: not
            # recorded there)
            "validation_mrr@10": {
                m: validation_scores(*self._records(m))
                for m in MOVES
                if any(t is not None for t in self._records(m))
            },
            "loaded": {name: round(s.load_s, 3) for (name, _), s in self.store.live.items()},
            "max_k": MAX_K,
            "max_chain": MAX_CHAIN,
            "max_query_chars": MAX_QUERY_CHARS,
        }
