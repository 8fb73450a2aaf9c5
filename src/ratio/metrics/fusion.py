"""Fusion of ranked lists: one :class:`~ratio.metrics.ranking.Ranking` from several over the
same queries.

``rrf`` is reciprocal-rank fusion (Cormack et al., 2009), sum_i w_i / (rrf_k + rank_i),
robust to incomparable score scales. ``score`` min-max normalizes each list's scores
per query to [0, 1] and sums them (a candidate missing from a list gets 0 there).

Each input is read in its own order (a retriever's ranking keeps the retriever's
tie order), ties in the fused score keep the candidate seen first, and fused scores are
rounded to float32, the precision every retriever scores in, so a fused list equals
the one the hybrid retriever of earlier versions returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ratio.metrics.ranking import Ranking, RankingError

FUSIONS = ("rrf", "score")
RRF_K = 60


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scores mapped to [0, 1]; a list of equal scores maps to all ones."""
    if len(scores) == 0:
        return scores.astype(np.float64)
    lo, hi = float(scores.min()), float(scores.max())
    if hi - lo <= 0:
        return np.ones(len(scores))
    return (scores.astype(np.float64) - lo) / (hi - lo)


def rrf_fuse(
    rankings: Sequence[Ranking],
    k: int,
    rrf_k: int = RRF_K,
    weights: Sequence[float] | None = None,
    name: str = "",
) -> Ranking:
    """Reciprocal-rank fusion; ranks are 1-based."""
    return _fuse(rankings, k, lambda s: 1.0 / (rrf_k + np.arange(1, len(s) + 1)), weights, name)


def score_fuse(
    rankings: Sequence[Ranking], k: int, weights: Sequence[float] | None = None, name: str = ""
) -> Ranking:
    """Sum of per-query min-max normalized scores."""
    return _fuse(rankings, k, minmax, weights, name)


def fuse(rankings: Sequence[Ranking], k: int, fusion: str = "rrf", name: str = "") -> Ranking:
    """The top ``k`` of ``rankings`` fused by ``fusion`` (:data:`FUSIONS`), named ``name``."""
    if fusion not in FUSIONS:
        raise RankingError(f"fusion must be one of {FUSIONS}, got {fusion!r}")
    return (
        rrf_fuse(rankings, k, name=name) if fusion == "rrf" else score_fuse(rankings, k, name=name)
    )


def _fuse(
    rankings: Sequence[Ranking],
    k: int,
    contrib: Callable[[np.ndarray], np.ndarray],
    weights: Sequence[float] | None,
    name: str,
) -> Ranking:
    if not rankings:
        raise RankingError("nothing to fuse")
    query_ids = rankings[0].query_ids
    if any(r.query_ids != query_ids for r in rankings):
        raise RankingError("fused rankings must rank the same queries, in the same order")
    w = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(w) != len(rankings):
        raise RankingError("one weight per fused ranking")
    codes: dict[str, int] = {}
    idx = np.full((len(query_ids), k), -1, dtype=np.int64)
    out = np.full((len(query_ids), k), -np.inf, dtype=np.float32)
    for q in range(len(query_ids)):
        fused: dict[str, float] = {}
        for wi, ranking in zip(w, rankings, strict=True):
            row = ranking.indices[q]
            valid = row >= 0
            docs = ranking.vocab[row[valid]].tolist()
            for doc, value in zip(docs, contrib(ranking.scores[q][valid]), strict=True):
                fused[doc] = fused.get(doc, 0.0) + wi * float(value)
        ranked = sorted(fused.items(), key=lambda kv: -kv[1])[:k]  # stable: first seen wins ties
        for j, (doc, s) in enumerate(ranked):
            idx[q, j] = codes.setdefault(doc, len(codes))
            out[q, j] = s
    vocab = np.asarray(list(codes), dtype=object)
    name = name or "+".join(r.name for r in rankings)
    return Ranking.from_ranked(query_ids, vocab, idx, out, name=name)
