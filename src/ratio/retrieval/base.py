"""The retriever interface shared by BM25 and dense systems, and their registry.

An index is saved to a directory that reloads memory-mapped, so a process reuses it instead
of rebuilding it (see :mod:`ratio.retrieval.store`).

Tested by tests/retrieval/test_bm25.py, tests/retrieval/test_dense.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ratio.core.io import RatioError
from ratio.metrics.ranking import Ranking

META_FILE = "retriever.json"


class RetrievalError(RatioError):
    pass


def pool_fingerprint(ids: Sequence[str], texts: Sequence[str]) -> str:
    """A hash of the exact candidate pool, so a cached index is reused only for that pool."""
    h = hashlib.sha1()
    for i, t in zip(ids, texts, strict=True):
        h.update(f"{i}\x1f{t}\x1e".encode())
    return h.hexdigest()[:20]


class Retriever(ABC):
    """Index candidates once, then rank them for batches of queries."""

    kind: ClassVar[str] = ""

    def __init__(self, name: str = "") -> None:
        self.name = name or self.kind
        self.doc_ids: np.ndarray = np.array([], dtype=str)
        self.fingerprint = ""

    @abstractmethod
    def index(self, ids: list[str], texts: list[str]) -> None: ...

    @abstractmethod
    def search(self, queries: list[str], k: int, query_ids: Sequence[str] | None = None) -> Ranking:
        """Each query's top ``k`` candidates, best first, ties in the retriever's own order;
        ``query_ids`` name the ranking's rows (default ``"0"``, ``"1"``, ...)."""

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The settings that define this retriever (saved, and part of cache keys)."""

    @abstractmethod
    def _save(self, directory: Path) -> None: ...

    @classmethod
    @abstractmethod
    def _load(cls, directory: Path, meta: dict[str, Any], mmap: bool) -> Retriever: ...

    def use_embedding_cache(self, directory: Path | None, queries: bool = True) -> None:
        """Where a retriever that encodes texts keeps their embeddings (``queries``: the
        queries' too); retrievers that encode nothing ignore it."""
        return None

    @property
    def concurrent(self) -> bool:
        """Whether searches may run in several threads at once; else the store serializes
        them. A server's throughput on a few cores depends on it."""
        return False

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    def _set_pool(self, ids: list[str], texts: list[str]) -> None:
        if len(ids) != len(texts):
            raise RetrievalError(f"{len(ids)} ids but {len(texts)} texts")
        if len(set(ids)) != len(ids):
            raise RetrievalError("candidate ids must be unique")
        self.doc_ids = np.asarray(ids, dtype=str)
        self.fingerprint = pool_fingerprint(ids, texts)

    def _ranking(
        self, idx: np.ndarray, scores: np.ndarray, query_ids: Sequence[str] | None
    ) -> Ranking:
        """The ranking of a search: ``idx`` are pool positions per query, best first, ``-1`` padding."""
        qids = [str(i) for i in range(len(idx))] if query_ids is None else list(query_ids)
        return Ranking.from_ranked(qids, self.doc_ids, idx, scores, name=self.name)

    def _check_indexed(self) -> None:
        if not self.n_docs:
            raise RetrievalError(f"retriever {self.name!r} has no index; call index() or load()")

    def save(self, directory: str | os.PathLike) -> None:
        """Write the index to ``directory`` atomically (a crash leaves the old index intact)."""
        self._check_indexed()
        target = Path(directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        tmp.chmod(0o755)  # mkdtemp makes it private; an index is meant to be shared
        try:
            np.save(tmp / "doc_ids.npy", self.doc_ids)
            self._save(tmp)
            meta = {
                "kind": self.kind,
                "name": self.name,
                "params": self.params(),
                "n_docs": self.n_docs,
                "fingerprint": self.fingerprint,
            }
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True))
            old = target.with_name(f".{target.name}.old.{os.getpid()}")
            if target.exists():
                os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def load(cls, directory: str | os.PathLike, mmap: bool = True) -> Retriever:
        """Reload a saved index; with ``mmap`` large arrays stay on disk until touched."""
        d = Path(directory)
        meta = read_meta(d)
        _import_builtin()
        klass = _CLASSES.get(meta["kind"])
        if klass is None:
            raise RetrievalError(f"{d / META_FILE}: unknown retriever kind {meta['kind']!r}")
        if cls is not Retriever and not issubclass(klass, cls):
            raise RetrievalError(f"{d} holds a {meta['kind']!r} index, not {cls.kind!r}")
        r = klass._load(d, meta, mmap)
        r.name = meta.get("name", r.name)
        r.doc_ids = np.load(d / "doc_ids.npy", mmap_mode="r" if mmap else None)
        r.fingerprint = meta.get("fingerprint", "")
        return r

    def _top_k(self, k: int) -> int:
        return max(0, min(k, self.n_docs))


def read_meta(directory: Path) -> dict[str, Any]:
    p = Path(directory) / META_FILE
    if not p.is_file():
        raise RetrievalError(f"no saved index at {directory} (missing {META_FILE})")
    try:
        return json.loads(p.read_text())
    except ValueError as e:
        raise RetrievalError(f"{p}: unreadable index metadata: {e}") from e


def top_k_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of each row's k largest scores, ranked (ties: lower index first)."""
    n = scores.shape[1]
    k = min(k, n)
    if k == 0:
        return np.zeros((len(scores), 0), dtype=np.int64), np.zeros((len(scores), 0), scores.dtype)
    if k < n:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    else:
        part = np.broadcast_to(np.arange(n), scores.shape).copy()
    vals = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -vals), axis=1)
    idx = np.take_along_axis(part, order, axis=1)
    return idx, np.take_along_axis(scores, idx, axis=1)


_CLASSES: dict[str, type[Retriever]] = {}
_FACTORIES: dict[str, Callable[..., Retriever]] = {}


def register_retriever(kind: str, factory: Callable[..., Retriever] | None = None):
    """Register a retriever class (its ``load``) and a factory ``(system, *, cache_dir)``
    building it from a SystemConfig (a hybrid is not a retriever: the store fuses rankings)."""

    def deco(klass: type[Retriever]) -> type[Retriever]:
        klass.kind = kind
        _CLASSES[kind] = klass
        _FACTORIES[kind] = factory or getattr(klass, "from_config")  # noqa: B009
        return klass

    return deco


def build_retriever(system: Any, *, cache_dir: str | os.PathLike | None = None) -> Retriever:
    """An unindexed retriever for a ``SystemConfig``, chosen by its ``kind``."""
    _import_builtin()
    factory = _FACTORIES.get(system.kind)
    if factory is None:
        raise RetrievalError(
            f"system {system.name!r}: unknown kind {system.kind!r}; "
            f"known kinds: {', '.join(sorted(_FACTORIES))}"
        )
    return factory(system, cache_dir=cache_dir)


def _import_builtin() -> None:
    # lazy, a cycle: bm25 and dense import this module to register their factories
    from ratio.retrieval import bm25, dense  # noqa: F401
