"""The search path: a named system's index over a candidate pool, and its ranked list.

``ratio evaluate``, ``ratio train-compare`` and the search service all rank through an
:class:`IndexStore`. A system is a :class:`~ratio.core.config.SystemConfig`: BM25, dense, a hybrid
fusing other named systems, or an instructed view of one dense system (its index, queries read
with another prefix: a unified model serves every move from one index).

A leaf system's index is built once, kept in memory, saved to ``folder(name, pool)`` and
reloaded memory-mapped while the system's digest and the pool's fingerprint are those recorded
next to it. Dense models encode through the run's embedding cache, so every user of a run
encodes a candidate once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from ratio.core.config import SystemConfig
from ratio.core.io import RatioError, write_text_atomic
from ratio.metrics.fusion import fuse
from ratio.metrics.ranking import Ranking
from ratio.retrieval.base import (
    RetrievalError,
    Retriever,
    build_retriever,
    pool_fingerprint,
    read_meta,
)
from ratio.retrieval.dense import DenseRetriever
from ratio.retrieval.models import model_key, resolve_model

log = logging.getLogger(__name__)

STORE_META = "harness.json"  # next to a saved index: the system digest and pool it was built for
COMPOSITE = ("hybrid", "instructed")  # kinds that rank with other systems' indexes


def per_move(system: str, move: str) -> str:
    """The store name of ``system`` as it ranks for one ``move`` (``trained@specify``).

    ``ratio evaluate``, ``ratio train-compare`` and the service all name per-move systems so,
    and the service reports the same names, so one name means one ranking everywhere."""
    return f"{system}@{move}"


class IndexedPool(Protocol):
    """What the store needs of a candidate pool: a name for its folder, its content
    fingerprint, and its rows (read only when an index is built)."""

    key: str

    @property
    def fingerprint(self) -> str: ...

    @property
    def ids(self) -> list[str]: ...

    @property
    def texts(self) -> list[str]: ...


@dataclass
class Pool:
    """A candidate pool to index: its rows and a human-readable statement of what it is."""

    key: str  # directory-safe id of the pool, part of the index folder
    description: str
    ids: list[str]
    texts: list[str]

    @property
    def size(self) -> int:
        return len(self.ids)

    @cached_property
    def fingerprint(self) -> str:
        return pool_fingerprint(self.ids, self.texts)


def slug(name: str) -> str:
    """A system name made safe for paths and TREC run tags (no spaces or slashes)."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", name).strip("-.") or "system"


def system_digest(s: SystemConfig, systems: Mapping[str, SystemConfig]) -> str:
    """What a saved index of ``s`` was built from: its settings (not its name or pool cap),
    a hybrid's components, and a dense model's content key, so retraining a model in place
    invalidates its indexes."""
    d = s.identity()
    d.pop("name", None)
    d.pop("max_pool", None)  # the pool itself is fingerprinted separately
    d.pop("query_backend", None)  # encodes the queries, not the index
    if s.kind in COMPOSITE:
        d["components"] = [system_digest(systems[c], systems) for c in s.components if c in systems]
    if s.kind == "dense" and s.model:
        try:
            d["model_key"] = model_key(resolve_model(s.model)[0])
        except RatioError:
            pass
    return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Loaded:
    """A retriever ready to search, its load time, and the lock that serializes its searches."""

    retriever: Retriever
    load_s: float
    lock: threading.Lock = field(default_factory=threading.Lock)

    def turn(self) -> AbstractContextManager[Any]:
        """What a search holds: the lock, unless the retriever searches concurrently."""
        return nullcontext() if self.retriever.concurrent else self.lock


class IndexStore:
    """Named systems' retrievers over pools: in memory, reloaded from disk, or built.
    ``folder(name, pool)`` is where a system's index for a pool is saved; ``embeddings`` is
    the run's embedding cache. Thread-safe: one thread builds a given index while others wait,
    and a retriever's searches run one at a time unless it is ``concurrent``."""

    HYBRID_DEPTH = 100  # each component of a hybrid ranks at least this many before fusion

    def __init__(
        self,
        systems: Mapping[str, SystemConfig],
        *,
        folder: Callable[[str, IndexedPool], Path],
        embeddings: Path | None = None,
        cache_queries: bool = True,
        progress: bool = False,
    ) -> None:
        self.systems = dict(systems)
        self.folder, self.embeddings = folder, embeddings
        self.cache_queries, self.progress = cache_queries, progress
        self.live: dict[tuple[str, str], Loaded] = {}
        self._loading: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def define(self, system: SystemConfig) -> str:
        """Add (or replace) a named system, e.g. one a service derives per request; its name."""
        self.systems[system.name] = system
        return system.name

    def system(self, name: str) -> SystemConfig:
        s = self.systems.get(name)
        if s is None:
            raise RetrievalError(f"no system named {name!r}; known: {', '.join(self.systems)}")
        return s

    def leaves(self, name: str, _path: tuple[str, ...] = ()) -> list[str]:
        """The systems with an index that ranking ``name`` uses (itself, or a hybrid's parts)."""
        s = self.system(name)
        if s.kind not in COMPOSITE:
            return [name]
        return [x for c in self._components(s, _path) for x in self.leaves(c, (*_path, name))]

    def rank(
        self,
        name: str,
        pool: IndexedPool,
        queries: list[str],
        k: int,
        query_ids: Sequence[str] | None = None,
        _path: tuple[str, ...] = (),
    ) -> Ranking:
        """System ``name``'s top ``k`` candidates of ``pool`` for each query, in its own order."""
        s = self.system(name)
        if s.kind == "hybrid":
            depth, path = max(k, self.HYBRID_DEPTH), (*_path, name)
            parts = self._components(s, _path)
            runs = [self.rank(c, pool, queries, depth, query_ids, path) for c in parts]
            return fuse(runs, k, s.fusion, name=name)
        if s.kind == "instructed":
            (dense,) = self._components(s, _path)
            loaded = self.retriever(dense, pool)
            if not isinstance(loaded.retriever, DenseRetriever):
                raise RetrievalError(
                    f"instructed system {s.name!r}: component {dense!r} is not a dense system"
                )
            with loaded.turn():
                return loaded.retriever.search(queries, k, query_ids, query_prefix=s.instruction)
        loaded = self.retriever(name, pool)
        with loaded.turn():
            return loaded.retriever.search(queries, k, query_ids)

    def _components(self, s: SystemConfig, path: tuple[str, ...]) -> list[str]:
        if s.name in path:
            raise RetrievalError(f"{s.kind} system {s.name!r} includes itself")
        for c in s.components:
            if c not in self.systems:
                raise RetrievalError(
                    f"{s.kind} system {s.name!r}: component {c!r} is not a configured system"
                )
        if s.kind == "hybrid" and len(s.components) < 2:
            raise RetrievalError(f"hybrid system {s.name!r} needs at least two components")
        if s.kind == "instructed" and (
            len(s.components) != 1 or self.systems[s.components[0]].kind != "dense"
        ):
            raise RetrievalError(
                f"instructed system {s.name!r} needs exactly one dense component, "
                f"got {s.components!r}"
            )
        return list(s.components)

    def retriever(self, name: str, pool: IndexedPool) -> Loaded:
        """System ``name``'s retriever over ``pool``, loaded or built on first use."""
        key = (name, pool.key)
        loaded = self.live.get(key)
        if loaded is not None:
            return loaded
        with self._guard:
            lock = self._loading.setdefault(key, threading.Lock())
        with lock:  # one thread builds; others wait for it instead of building twice
            loaded = self.live.get(key)
            if loaded is None:
                t0 = time.perf_counter()
                r = self._load_or_build(self.system(name), pool)
                loaded = self.live[key] = Loaded(r, time.perf_counter() - t0)
        return loaded

    def _load_or_build(self, s: SystemConfig, pool: IndexedPool) -> Retriever:
        d = self.folder(s.name, pool)
        want = {"system_digest": system_digest(s, self.systems), "fingerprint": pool.fingerprint}
        sidecar = d / STORE_META
        if sidecar.is_file():
            try:
                have = json.loads(sidecar.read_text())
                if have == want and read_meta(d)["fingerprint"] == want["fingerprint"]:
                    r = self._adopt(Retriever.load(d, mmap=True), s)
                    log.info("reusing index %s", d)
                    return r
            except (ValueError, KeyError, RetrievalError) as e:
                log.warning("rebuilding index %s: %s", d, e)
        r = self._adopt(build_retriever(s, cache_dir=self.embeddings), s)
        if self.progress:
            log.info("indexing %s candidates for %s", f"{len(pool.ids):,}", s.name)
        r.index(pool.ids, pool.texts)
        try:
            r.save(d)
            write_text_atomic(sidecar, json.dumps(want, indent=2))
        except (OSError, NotImplementedError) as e:
            log.warning("index %s not saved (%s); it is used from memory", d, e)
        return r

    def _adopt(self, r: Retriever, s: SystemConfig) -> Retriever:
        r.name = s.name
        r.use_embedding_cache(self.embeddings, queries=self.cache_queries)
        if isinstance(r, DenseRetriever):
            r.query_backend = s.query_backend or r.backend
        return r
