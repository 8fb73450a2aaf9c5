"""Retrieval metrics: compact rankings, vectorised kernels, TREC IO and significance tests.

Modelled on ranx: one module per metric, each with a numpy kernel in
``_kernels`` and a typed wrapper ``metric(qrels, ranking, k) -> per-query array``;
``evaluate`` computes many metrics from a single alignment. Results equal
pytrec_eval's and ranx's to 1e-9 (``tests/metrics/test_reference.py``).
"""

from __future__ import annotations

from ratio.metrics.evaluate import PerQuery, evaluate, evaluate_per_query, parse_metric
from ratio.metrics.hit_rate import hit_rate
from ratio.metrics.map import average_precision
from ratio.metrics.mrr import mrr
from ratio.metrics.ndcg import ndcg
from ratio.metrics.precision import precision
from ratio.metrics.ranking import Qrels, Ranking, RankingError, Relevance, relevance_matrix
from ratio.metrics.recall import recall

__all__ = [
    "PerQuery",
    "Qrels",
    "Ranking",
    "RankingError",
    "Relevance",
    "average_precision",
    "evaluate",
    "evaluate_per_query",
    "hit_rate",
    "mrr",
    "ndcg",
    "parse_metric",
    "precision",
    "recall",
    "relevance_matrix",
]
