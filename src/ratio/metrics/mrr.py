"""MRR@k: Reciprocal rank of the first relevant doc, 0 if none is in the top ``k`` (paper Eq. 6).

trec_eval's ``recip_rank`` has no cutoff: it equals ``mrr(qrels, ranking.truncate(k), k)``
only when computed on a ranking truncated to ``k``; ranx's ``mrr@k`` is the same as ours.

Tested by tests/metrics/test_kernels.py, tests/metrics/test_reference.py.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import reciprocal_rank_kernel
from ratio.metrics.ranking import Relevance, per_query


def mrr_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    return reciprocal_rank_kernel(rel.gains, k)


mrr = per_query(mrr_from_relevance)
