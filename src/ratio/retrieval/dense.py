"""Dense retrieval: any sentence-transformers or model2vec model, FAISS inner-product search.

Embeddings are L2-normalized, so inner product is cosine similarity. Encodes go through the
on-disk :class:`~ratio.retrieval.cache.EmbeddingCache`, so re-indexing a pool or sub-pool never
re-encodes a text. A saved index reloads without loading the model until the first query.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ratio.metrics.ranking import Ranking
from ratio.retrieval.base import RetrievalError, Retriever, register_retriever
from ratio.retrieval.cache import EmbeddingCache
from ratio.retrieval.exported import (
    INT8_RECIPE,
    ExportedEncoder,
    OpenVinoSession,
    OrtSession,
    ensure_export,
    recipe_tag,
)
from ratio.retrieval.models import (
    PREFIX_SETUPS,
    ModelNotFoundError,
    is_static,
    model_key,
    prefixes,
    quiet_offline_hf,
    resolve_model,
)

# onnx / openvino: the fp32 model exported to ONNX (ratio.retrieval.exported), same vectors
# as torch up to float rounding, so they share torch's embedding cache. onnx-int8: dynamic
# int8 quantization, different vectors, so its own cache key. (An earlier torch
# quantize_dynamic path was dropped: mean cosine to fp32 0.934, 66% neighbour agreement.)
# torch-bf16: torch under bfloat16 autocast, its own cache key; fast only where the CPU has
# AVX512-BF16 or AMX (docs/benchmarks.md), so opt-in, never what `auto` picks.
BACKENDS = ("auto", "torch", "torch-bf16", "static", "onnx", "onnx-int8", "openvino")
EXPORTED = {"onnx": "fp32", "onnx-int8": "int8", "openvino": "fp32"}


def available_cores() -> int:
    """Cores this process may run on (cgroup/affinity aware), optionally capped by RATIO_THREADS."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 1
    cap = os.environ.get("RATIO_THREADS")
    return max(1, min(n, int(cap))) if cap else max(1, n)


class Encoder:
    """Texts → normalized float32 embeddings with one model. ``backend``: ``static`` (model2vec:
    as fast as sentence-transformers' StaticEmbedding, without torch), ``torch``, or a CPU
    runtime over the ONNX export (``onnx``, ``onnx-int8``, ``openvino``); ``auto`` picks static
    or torch by the model directory. ``key`` names the vectors in the embedding cache: the
    model's content key, plus the backend for a non-fp32 one. Thread-safe: exported backends
    run the graph in parallel; torch and static encode one at a time."""

    def __init__(
        self,
        model: str,
        backend: str = "auto",
        batch_size: int = 64,
        device: str | None = None,
        max_seq_length: int | None = 256,
    ) -> None:
        if backend not in BACKENDS:
            raise RetrievalError(f"unknown encoder backend {backend!r}; use one of {BACKENDS}")
        self.path, self.spec = resolve_model(model)
        self.static = is_static(self.path)
        if backend == "auto":
            backend = "static" if self.static else "torch"
        if self.static and backend != "static":
            raise RetrievalError(f"{self.path} is a static model2vec model; use backend 'static'")
        if backend == "static" and not self.static:
            raise RetrievalError(f"{self.path} is not a static model2vec model")
        self.backend, self.batch_size, self.device = backend, batch_size, device
        self.max_seq_length = max_seq_length
        self.content_key = model_key(self.path)
        self.key = self.content_key
        if EXPORTED.get(backend, "fp32") != "fp32":
            self.key += f"-{backend}-{recipe_tag(INT8_RECIPE)}"
        elif backend == "torch-bf16":
            self.key += "-bf16"
        self._model: Any = None
        self._lock = threading.RLock()  # the model's load; torch and static encodes

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> Any:
        quiet_offline_hf()
        if self.backend == "static":
            from model2vec import StaticModel

            return StaticModel.from_pretrained(str(self.path))
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(available_cores())
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.backend in EXPORTED:  # export and tokenization only; the runtimes run on CPU
            device = "cpu"
        m = SentenceTransformer(str(self.path), device=device, local_files_only=True)
        current = getattr(m, "max_seq_length", None)
        # sentences are short; a cap saves padding cost. Static models have no length
        # (infinite, without a setter), so they are left alone.
        if self.max_seq_length and isinstance(current, int) and current > self.max_seq_length:
            m.max_seq_length = self.max_seq_length
        if self.backend not in EXPORTED:
            return m
        onnx_file = ensure_export(m, self.content_key, EXPORTED[self.backend])
        runtime = OpenVinoSession if self.backend == "openvino" else OrtSession
        return ExportedEncoder(
            m, lambda threads: runtime(onnx_file, threads=threads), threads=available_cores()
        )

    @property
    def dim(self) -> int:
        if self.backend == "static" or self.backend in EXPORTED:
            return int(self.model.dim)
        return int(self.model.get_sentence_embedding_dimension())

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.backend in EXPORTED:
            int8 = EXPORTED[self.backend] == "int8"
            batch = INT8_RECIPE["batch_size"] if int8 else self.batch_size
            x = self.model.encode(texts, batch_size=batch)
        elif self.backend == "static":
            with self._lock:
                x = self.model.encode(texts, batch_size=max(self.batch_size, 1024))
            x = np.asarray(x, dtype=np.float32)
        else:
            import torch  # lazy: importing torch takes ~1.2 s; static and exported backends never need it

            bf16 = self.backend == "torch-bf16"
            device = self.model.device.type
            with self._lock, torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
                x = self.model.encode(
                    texts,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=False,
                    show_progress_bar=False,
                ).astype(np.float32, copy=False)
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return x / np.maximum(norms, 1e-12)


@register_retriever("dense")
class DenseRetriever(Retriever):
    """Bi-encoder retrieval with exact (``flat``) or approximate (``hnsw``) FAISS search."""

    def __init__(
        self,
        model: str,
        name: str = "",
        prefix: str = "none",
        index: str = "flat",
        cache_dir: str | os.PathLike | None = None,
        backend: str = "auto",
        batch_size: int = 64,
        cache_queries: bool = True,
        query_backend: str = "",
        hnsw_m: int = 32,
        ef_search: int = 128,
    ) -> None:
        super().__init__(name or Path(model).name)
        if prefix not in PREFIX_SETUPS:
            raise RetrievalError(f"prefix must be one of {PREFIX_SETUPS}, got {prefix!r}")
        if index not in ("flat", "hnsw"):
            raise RetrievalError(f"index must be 'flat' or 'hnsw', got {index!r}")
        for b in (backend, query_backend or backend):
            if b not in BACKENDS:
                raise RetrievalError(f"backend must be one of {BACKENDS}, got {b!r}")
        self.model_name, self.prefix_setup, self.index_type = model, prefix, index
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.backend = backend
        # queries may run through another runtime of the same model (int8: ~30% faster per
        # query, the same MRR on the benchmark; docs/serve.md); documents never do
        self.query_backend = query_backend or backend
        self.batch_size, self.cache_queries = batch_size, cache_queries
        self.hnsw_m, self.ef_search = hnsw_m, ef_search
        self._encoders: dict[str, Encoder] = {}
        self._encoder_lock = threading.Lock()
        self._caches: dict[tuple[str, str], EmbeddingCache] = {}
        self.faiss_index: Any = None
        _, spec = resolve_model(model)
        self.query_prefix, self.doc_prefix = prefixes(spec, prefix)

    @classmethod
    def from_config(cls, system: Any, *, cache_dir=None, **_: Any) -> DenseRetriever:
        return cls(
            system.model,
            name=system.name,
            prefix=system.prefix,
            index=system.index,
            cache_dir=cache_dir,
            backend=system.backend,
            query_backend=system.query_backend,
        )

    @property
    def encoder(self) -> Encoder:
        """The documents' encoder (and the queries', unless ``query_backend`` differs)."""
        return self._encoder_for(self.backend)

    def _encoder_for(self, backend: str) -> Encoder:
        with self._encoder_lock:
            if backend not in self._encoders:
                encoder = Encoder(self.model_name, backend=backend, batch_size=self.batch_size)
                self._encoders[backend] = encoder
            return self._encoders[backend]

    @property
    def concurrent(self) -> bool:
        # the encoder and FAISS are thread-safe; the embedding cache's writes are not
        return not (self.cache_queries and self.cache_dir)

    def params(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "model_key": self.encoder.key,
            "prefix": self.prefix_setup,
            "query_prefix": self.query_prefix,
            "doc_prefix": self.doc_prefix,
            "index": self.index_type,
            "backend": self.encoder.backend,
        }

    def use_embedding_cache(self, directory: Path | None, queries: bool = True) -> None:
        self.cache_dir = Path(directory) if directory else None
        self.cache_queries = queries
        self._caches = {}

    def _cache(self, prefix: str, encoder: Encoder) -> EmbeddingCache | None:
        if self.cache_dir is None:
            return None
        key = (encoder.key, prefix)
        if key not in self._caches:
            self._caches[key] = EmbeddingCache(self.cache_dir, *key)
        return self._caches[key]

    def embed(
        self, texts: list[str], prefix: str, use_cache: bool = True, queries: bool = False
    ) -> np.ndarray:
        """``texts`` encoded after ``prefix``, through the embedding cache when ``use_cache``;
        ``queries`` encodes with the queries' encoder."""
        encoder = self._encoder_for(self.query_backend) if queries else self.encoder
        cache = self._cache(prefix, encoder) if use_cache else None
        if cache is None:
            return encoder.encode([prefix + t for t in texts])
        return cache.get_or_encode(texts, encoder.encode, progress=True)

    @property
    def encoded(self) -> int:
        """Texts sent to the model through the cache by this instance."""
        return sum(c.encoded for c in self._caches.values())

    def index(self, ids: list[str], texts: list[str]) -> None:
        import faiss

        self._set_pool(ids, texts)
        faiss.omp_set_num_threads(available_cores())
        x = self.embed(texts, self.doc_prefix)
        idx: faiss.Index
        if self.index_type == "hnsw":
            idx = faiss.IndexHNSWFlat(x.shape[1], self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            idx.hnsw.efConstruction = 200
        else:
            idx = faiss.IndexFlatIP(x.shape[1])
        idx.add(np.ascontiguousarray(x))
        self.faiss_index = idx

    def search(
        self,
        queries: list[str],
        k: int,
        query_ids: Sequence[str] | None = None,
        query_prefix: str | None = None,
    ) -> Ranking:
        """``query_prefix`` replaces the prefix setup's for these queries (an instruction)."""
        import faiss

        self._check_indexed()
        k = self._top_k(k)
        prefix = self.query_prefix if query_prefix is None else query_prefix
        q = self.embed(queries, prefix, use_cache=self.cache_queries, queries=True)
        # per-call search parameters, not the index's own: searches run in parallel
        params = None
        if self.index_type == "hnsw":
            params = faiss.SearchParametersHNSW(efSearch=max(self.ef_search, k))  # type: ignore[attr-defined]
        q = np.ascontiguousarray(q, dtype=np.float32)
        scores, idx = self.faiss_index.search(q, k, params=params)
        valid = idx >= 0  # HNSW may return fewer than k
        scores = scores.astype(np.float32, copy=False)
        scores[~valid] = -np.inf
        return self._ranking(np.where(valid, idx, -1), scores, query_ids)

    def _save(self, directory: Path) -> None:
        import faiss

        faiss.write_index(self.faiss_index, str(directory / "faiss.index"))
        (directory / "encoder.json").write_text(json.dumps({"path": str(self.encoder.path)}))

    @classmethod
    def _load(cls, directory: Path, meta: dict[str, Any], mmap: bool) -> DenseRetriever:
        import faiss

        p = meta["params"]
        model = p["model"]
        enc = directory / "encoder.json"
        if enc.exists():
            try:
                resolve_model(model)
            except ModelNotFoundError:  # the registry name moved; use the saved directory
                model = json.loads(enc.read_text())["path"]
        r = cls(model, prefix=p["prefix"], index=p["index"], backend=p.get("backend", "auto"))
        flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if mmap else 0
        try:
            r.faiss_index = faiss.read_index(str(directory / "faiss.index"), flags)
        except RuntimeError:  # index type without mmap support
            r.faiss_index = faiss.read_index(str(directory / "faiss.index"))
        return r
