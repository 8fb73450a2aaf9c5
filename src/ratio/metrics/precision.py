"""Precision@k: Relevant docs in the top ``k`` divided by ``k`` (trec ``P_k``).

The denominator is ``k`` even when fewer than ``k`` docs were retrieved.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import precision_kernel
from ratio.metrics.run import Qrels, Relevance, Run, relevance_matrix

__all__ = ["precision", "precision_from_relevance"]


def precision_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    """Precision@k per query from an already aligned :class:`Relevance` matrix."""
    return precision_kernel(rel.gains, k)


def precision(qrels: Qrels, run: Run, k: int) -> np.ndarray:
    """Precision@k per query, aligned with ``qrels.evaluated_query_ids``.

    Queries missing from ``run`` score 0; queries without a relevant doc are skipped.
    Take ``.mean()`` for the reported number.
    """
    return precision_from_relevance(relevance_matrix(qrels, run, k), k)
