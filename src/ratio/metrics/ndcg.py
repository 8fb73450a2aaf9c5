"""nDCG@k: Normalised DCG at ``k`` with graded gains (trec ``ndcg_cut_k``, ranx ``ndcg@k``).

Gain is the relevance level (linear, negative levels count 0), discount
``1/log2(rank + 1)``; the ideal ranking sorts *all* of the query's qrels gains,
including relevant docs the ranking never retrieved.

Tested by tests/metrics/test_kernels.py, tests/metrics/test_reference.py.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import ndcg_kernel
from ratio.metrics.ranking import Relevance, per_query


def ndcg_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    return ndcg_kernel(rel.gains, rel.ideal, k)


ndcg = per_query(ndcg_from_relevance)
