"""Recall@k: Fraction of a query's relevant docs found in the top ``k`` (trec ``recall_k``).

With one gold per query (Ratio's setting) this is the paper's Eq. 5, which
coincides with Accuracy@k and HitRate@k.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import recall_kernel
from ratio.metrics.run import Qrels, Relevance, Run, relevance_matrix

__all__ = ["recall", "recall_from_relevance"]


def recall_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    """Recall@k per query from an already aligned :class:`Relevance` matrix."""
    return recall_kernel(rel.gains, rel.n_rel, k)


def recall(qrels: Qrels, run: Run, k: int) -> np.ndarray:
    """Recall@k per query, aligned with ``qrels.evaluated_query_ids``.

    Queries missing from ``run`` score 0; queries without a relevant doc are skipped.
    Take ``.mean()`` for the reported number.
    """
    return recall_from_relevance(relevance_matrix(qrels, run, k), k)
