"""Metric kernels: pure numpy over ``gains`` (``(n_queries, depth)``, relevance of the doc
at each rank, 0 for non-relevant or padding), one float64 score per query.

Definitions follow trec_eval (``relevance_level`` 1: relevant when the level is >= 1),
so the results equal pytrec_eval's to floating-point precision.

Tested by tests/metrics/test_kernels.py.
"""

from __future__ import annotations

import numpy as np


def _cut(m: np.ndarray, k: int) -> np.ndarray:
    if k < 1:
        raise ValueError(f"cutoff k must be >= 1, got {k}")
    return m[:, :k]


def hits_at(gains: np.ndarray, k: int) -> np.ndarray:
    """Relevant docs in the top ``k`` per query."""
    return (_cut(gains, k) > 0).sum(axis=1).astype(np.float64)


def recall_kernel(gains: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """Relevant retrieved in the top ``k`` / relevant in qrels (trec ``recall_k``)."""
    return hits_at(gains, k) / np.maximum(n_rel, 1)


def precision_kernel(gains: np.ndarray, k: int) -> np.ndarray:
    """Relevant in the top ``k`` / ``k``, even when fewer than ``k`` were retrieved (trec ``P_k``)."""
    return hits_at(gains, k) / k


def hit_rate_kernel(gains: np.ndarray, k: int) -> np.ndarray:
    """1 if any relevant doc is in the top ``k`` (trec ``success_k``)."""
    return np.any(_cut(gains, k) > 0, axis=1).astype(np.float64)


def reciprocal_rank_kernel(gains: np.ndarray, k: int) -> np.ndarray:
    """1 / rank of the first relevant doc within the top ``k``, else 0."""
    hit = _cut(gains, k) > 0
    first = hit.argmax(axis=1)
    return np.where(hit.any(axis=1), 1.0 / (first + 1.0), 0.0)


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def dcg_kernel(gains: np.ndarray, k: int) -> np.ndarray:
    """Sum of ``gain / log2(rank + 1)`` over the top ``k`` (linear gain, as trec_eval)."""
    g = _cut(gains, k)
    return g @ _discounts(g.shape[1])


def ndcg_kernel(gains: np.ndarray, ideal: np.ndarray, k: int) -> np.ndarray:
    """DCG@k / DCG@k of the ideal ranking (all qrels gains sorted descending)."""
    dcg, idcg = dcg_kernel(gains, k), dcg_kernel(ideal, k)
    out = np.zeros_like(dcg)
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out


def average_precision_kernel(gains: np.ndarray, n_rel: np.ndarray, k: int) -> np.ndarray:
    """Sum of precision at each relevant rank <= ``k`` / relevant in qrels (trec ``map_cut_k``)."""
    hit = (_cut(gains, k) > 0).astype(np.float64)
    ranks = np.arange(1, hit.shape[1] + 1, dtype=np.float64)
    prec = np.cumsum(hit, axis=1) / ranks
    return (prec * hit).sum(axis=1) / np.maximum(n_rel, 1)
