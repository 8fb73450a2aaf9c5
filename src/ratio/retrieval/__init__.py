"""Retrievers behind one interface: BM25 (bm25s) and dense (sentence-transformers/model2vec +
FAISS), the index store that turns a named system (BM25, dense, trained model, hybrid) into
a ranked list, plus the embedding cache and the model registry.

The dense module loads on first use so BM25-only code never imports torch.
"""

from __future__ import annotations

from ratio.retrieval.base import (
    RetrievalError,
    Retriever,
    build_retriever,
    pool_fingerprint,
    register_retriever,
)
from ratio.retrieval.models import KNOWN_MODELS, ModelSpec, prefixes, resolve_model

__all__ = [
    "KNOWN_MODELS",
    "ModelSpec",
    "RetrievalError",
    "Retriever",
    "build_retriever",
    "pool_fingerprint",
    "prefixes",
    "register_retriever",
    "resolve_model",
]
