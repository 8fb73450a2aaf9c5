"""``evaluate``: many metrics from one alignment of a ranking to its qrels.

Metric names are ``name@k`` (``recall@10``, ``mrr@100``, ``ndcg@10``, ``map@10``,
``precision@10``, ``hit_rate@10``) or a bare ``name`` meaning "no cutoff" (the
whole ranking depth; bare ``mrr`` is trec_eval's ``recip_rank``). Short aliases as
the paper writes them (``R@10``, ``M@10``, ``N@10``, ``P@10``, ``HR@10``) work too.

Averaging: the mean is over queries in ``qrels`` with at least one relevant doc. A
query in qrels that the ranking lacks scores 0 (pytrec_eval and ranx would drop it and
inflate the mean). Queries with no relevant doc are skipped (pytrec_eval and ranx keep
such a query, scoring 0, when the run contains it). Ranked queries absent from qrels are ignored.

Tested by tests/metrics/test_ranking.py, tests/metrics/test_reference.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ratio.metrics.hit_rate import hit_rate_from_relevance
from ratio.metrics.map import average_precision_from_relevance
from ratio.metrics.mrr import mrr_from_relevance
from ratio.metrics.ndcg import ndcg_from_relevance
from ratio.metrics.precision import precision_from_relevance
from ratio.metrics.ranking import Qrels, Ranking, RankingError, Relevance, relevance_matrix
from ratio.metrics.recall import recall_from_relevance

METRICS: dict[str, Callable[[Relevance, int], np.ndarray]] = {
    "recall": recall_from_relevance,
    "mrr": mrr_from_relevance,
    "ndcg": ndcg_from_relevance,
    "map": average_precision_from_relevance,
    "precision": precision_from_relevance,
    "hit_rate": hit_rate_from_relevance,
}

ALIASES: dict[str, str] = {
    "r": "recall",
    "m": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
    "n": "ndcg",
    "ndcg_cut": "ndcg",
    "ap": "map",
    "map_cut": "map",
    "p": "precision",
    "hr": "hit_rate",
    "hitrate": "hit_rate",
    "success": "hit_rate",
}

_NAME = re.compile(r"^\s*([A-Za-z_]+)\s*(?:@\s*(\d+))?\s*$")


def parse_metric(spec: str) -> tuple[str, int | None]:
    """``"R@10"`` -> ``("recall", 10)``; ``"mrr"`` -> ``("mrr", None)``."""
    m = _NAME.match(spec)
    if not m:
        raise RankingError(f"cannot parse metric {spec!r}; expected name@k, e.g. 'mrr@10'")
    name = ALIASES.get(m.group(1).lower(), m.group(1).lower())
    if name not in METRICS:
        raise RankingError(f"unknown metric {spec!r}; known: {', '.join(sorted(METRICS))}")
    k = int(m.group(2)) if m.group(2) is not None else None
    if k is not None and k < 1:
        raise RankingError(f"metric {spec!r}: cutoff must be >= 1")
    return name, k


@dataclass(frozen=True)
class PerQuery:
    """Per-query scores, rows aligned with ``query_ids``."""

    query_ids: list[str]
    scores: dict[str, np.ndarray]

    def mean(self) -> dict[str, float]:
        return {m: float(v.mean()) if v.size else 0.0 for m, v in self.scores.items()}


def evaluate_per_query(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    ranking: Ranking | Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] | str,
) -> PerQuery:
    """Per-query scores for every metric, from one relevance matrix at the largest cutoff."""
    q = qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)
    r = ranking if isinstance(ranking, Ranking) else Ranking.from_dict(ranking)
    specs = [metrics] if isinstance(metrics, str) else list(metrics)
    parsed = [parse_metric(s) for s in specs]
    depth = max([k if k is not None else max(r.depth, 1) for _, k in parsed] + [1])
    rel = relevance_matrix(q, r, depth)
    scores = {
        spec: METRICS[name](rel, k if k is not None else depth)
        for spec, (name, k) in zip(specs, parsed, strict=True)
    }
    return PerQuery(rel.query_ids, scores)


def evaluate(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    ranking: Ranking | Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] | str = ("recall@1", "recall@10", "mrr@10", "mrr@100"),
) -> dict[str, float]:
    """Mean of each metric over the evaluated queries (see module docstring)."""
    return evaluate_per_query(qrels, ranking, metrics).mean()
