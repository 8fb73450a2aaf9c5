"""MAP@k: Average precision cut at ``k`` (trec ``map_cut_k``, ranx ``map@k``).

Sum of precision@r over relevant ranks r <= k, divided by the number of
relevant docs in qrels (not by min(k, n_rel)), so a query with more relevant
docs than ``k`` cannot reach 1.

Tested by tests/metrics/test_kernels.py, tests/metrics/test_reference.py.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import average_precision_kernel
from ratio.metrics.ranking import Relevance, per_query


def average_precision_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    return average_precision_kernel(rel.gains, rel.n_rel, k)


average_precision = per_query(average_precision_from_relevance)
