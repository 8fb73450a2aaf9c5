"""HitRate@k: 1 if at least one relevant doc is in the top ``k`` (trec ``success_k``, ranx ``hit_rate@k``).

The paper's Table 4 HR@10: fraction of queries with an accepted candidate.

Tested by tests/metrics/test_kernels.py, tests/metrics/test_reference.py.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import hit_rate_kernel
from ratio.metrics.ranking import Relevance, per_query


def hit_rate_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    return hit_rate_kernel(rel.gains, k)


hit_rate = per_query(hit_rate_from_relevance)
