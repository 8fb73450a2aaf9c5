"""HitRate@k: 1 if at least one relevant doc is in the top ``k`` (trec ``success_k``, ranx ``hit_rate@k``).

The paper's Table 4 HR@10: fraction of queries with an accepted candidate.
"""

from __future__ import annotations

import numpy as np

from ratio.metrics._kernels import hit_rate_kernel
from ratio.metrics.run import Qrels, Relevance, Run, relevance_matrix

__all__ = ["hit_rate", "hit_rate_from_relevance"]


def hit_rate_from_relevance(rel: Relevance, k: int) -> np.ndarray:
    """HitRate@k per query from an already aligned :class:`Relevance` matrix."""
    return hit_rate_kernel(rel.gains, k)


def hit_rate(qrels: Qrels, run: Run, k: int) -> np.ndarray:
    """HitRate@k per query, aligned with ``qrels.evaluated_query_ids``.

    Queries missing from ``run`` score 0; queries without a relevant doc are skipped.
    Take ``.mean()`` for the reported number.
    """
    return hit_rate_from_relevance(relevance_matrix(qrels, run, k), k)
