"""MRR@k: Reciprocal rank of the first relevant doc, 0 if none is in the top ``k`` (paper Eq. 6).

trec_eval's ``recip_rank`` has no cutoff: it equals ``mrr(qrels, run.truncate(k), k)``
only when computed on a run truncated to ``k``; ranx's ``mrr@k`` is the same as ours.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import reciprocal_rank_kernel
from ratio.metrics.run import Qrels, Relevance, Run, relevance_matrix

__all__ = ["mrr", "mrr_from_relevance"]


def mrr_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    """MRR@k per query from an already aligned :class:`Relevance` matrix."""
    return reciprocal_rank_kernel(rel.gains, k)


def mrr(qrels: Qrels, run: Run, k: int) -> np.ndarray:
    """MRR@k per query, aligned with ``qrels.evaluated_query_ids``.

    Queries missing from ``run`` score 0; queries without a relevant doc are skipped.
    Take ``.mean()`` for the reported number.
    """
    return mrr_from_relevance(relevance_matrix(qrels, run, k), k)
