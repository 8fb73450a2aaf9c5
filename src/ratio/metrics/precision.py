"""Precision@k: Relevant docs in the top ``k`` divided by ``k`` (trec ``P_k``).

The denominator is ``k`` even when fewer than ``k`` docs were retrieved.

Tested by tests/metrics/test_kernels.py, tests/metrics/test_reference.py.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import precision_kernel
from ratio.metrics.ranking import Relevance, per_query


def precision_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    return precision_kernel(rel.gains, k)


precision = per_query(precision_from_relevance)
