"""Retrievers behind one interface: BM25 (bm25s), dense (sentence-transformers/model2vec +
FAISS) and hybrid fusion, plus the embedding cache and the model registry.

Dense and hybrid modules load on first use so BM25-only code never imports torch.
"""

from __future__ import annotations

from ratio.retrieval.base import (
    RetrievalError,
    Retriever,
    SearchResult,
    build_retriever,
    load_retriever,
    pool_fingerprint,
    register_retriever,
    retriever_kinds,
)
from ratio.retrieval.models import KNOWN_MODELS, ModelSpec, prefixes, resolve_model

__all__ = [
    "KNOWN_MODELS",
    "ModelSpec",
    "RetrievalError",
    "Retriever",
    "SearchResult",
    "build_retriever",
    "load_retriever",
    "pool_fingerprint",
    "prefixes",
    "register_retriever",
    "resolve_model",
    "retriever_kinds",
]
