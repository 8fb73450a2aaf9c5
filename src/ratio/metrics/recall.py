"""Recall@k: Fraction of a query's relevant docs found in the top ``k`` (trec ``recall_k``).

With one gold per query (Ratio's setting) this is the paper's Eq. 5, which
coincides with Accuracy@k and HitRate@k.

Tested by tests/metrics/test_kernels.py, tests/metrics/test_reference.py.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import recall_kernel
from ratio.metrics.ranking import Relevance, per_query


def recall_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    return recall_kernel(rel.gains, rel.n_rel, k)


recall = per_query(recall_from_relevance)
