"""Hybrid retrieval: fuse the ranked lists of two (or more) retrievers.

``rrf`` is reciprocal-rank fusion, sum_i w_i / (rrf_k + rank_i), robust to
incomparable score scales. ``score`` min-max normalizes each list's scores per
query to [0, 1] and sums them (a candidate missing from a list gets 0 there).
Each component retrieves ``depth`` candidates (at least k) before fusion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ratio.retrieval.base import (
    RetrievalError,
    Retriever,
    SearchResult,
    build_retriever,
    pool_fingerprint,
    register_retriever,
)

FUSIONS = ("rrf", "score")


def _fuse_rows(
    results: list[SearchResult], k: int, contrib, weights: list[float] | None
) -> SearchResult:
    n = len(results[0])
    if any(len(r) != n for r in results):
        raise RetrievalError("fused results must cover the same queries")
    w = weights or [1.0] * len(results)
    out_ids = np.full((n, k), "", dtype=object)
    out_scores = np.full((n, k), -np.inf, dtype=np.float32)
    for q in range(n):
        fused: dict[str, float] = {}
        for wi, r in zip(w, results, strict=True):
            row_ids, row_scores = r.ids[q], r.scores[q]
            valid = row_ids != ""
            for doc, value in zip(row_ids[valid], contrib(row_scores[valid]), strict=True):
                fused[doc] = fused.get(doc, 0.0) + wi * float(value)
        ranked = sorted(fused.items(), key=lambda kv: -kv[1])[:k]  # stable: first seen wins ties
        for j, (doc, s) in enumerate(ranked):
            out_ids[q, j] = doc
            out_scores[q, j] = s
    return SearchResult(out_ids.astype(str), out_scores)


def rrf_fuse(
    results: list[SearchResult], k: int, rrf_k: int = 60, weights: list[float] | None = None
) -> SearchResult:
    """Reciprocal-rank fusion (Cormack et al., 2009); ranks are 1-based."""

    def contrib(scores: np.ndarray) -> np.ndarray:
        return 1.0 / (rrf_k + np.arange(1, len(scores) + 1))

    return _fuse_rows(results, k, contrib, weights)


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scores mapped to [0, 1]; a list of equal scores maps to all ones."""
    if len(scores) == 0:
        return scores.astype(np.float64)
    lo, hi = float(scores.min()), float(scores.max())
    if hi - lo <= 0:
        return np.ones(len(scores))
    return (scores.astype(np.float64) - lo) / (hi - lo)


def score_fuse(
    results: list[SearchResult], k: int, weights: list[float] | None = None
) -> SearchResult:
    """Sum of per-query min-max normalized scores."""
    return _fuse_rows(results, k, minmax, weights)


@register_retriever("hybrid")
class HybridRetriever(Retriever):
    def __init__(
        self,
        components: list[Retriever],
        name: str = "",
        fusion: str = "rrf",
        depth: int = 100,
        rrf_k: int = 60,
        weights: list[float] | None = None,
    ) -> None:
        super().__init__(name or "+".join(c.name for c in components))
        if len(components) < 2:
            raise RetrievalError(f"hybrid {self.name!r} needs at least two components")
        if fusion not in FUSIONS:
            raise RetrievalError(f"fusion must be one of {FUSIONS}, got {fusion!r}")
        if weights is not None and len(weights) != len(components):
            raise RetrievalError("one weight per component")
        self.components = components
        self.fusion = fusion
        self.depth = depth
        self.rrf_k = rrf_k
        self.weights = weights

    @classmethod
    def from_config(
        cls, system: Any, *, systems: dict[str, Any], cache_dir=None
    ) -> HybridRetriever:
        comps = []
        for c in system.components:
            if c not in systems:
                raise RetrievalError(
                    f"hybrid system {system.name!r}: component {c!r} is not a configured system"
                )
            if c == system.name:
                raise RetrievalError(f"hybrid system {system.name!r} lists itself as a component")
            comps.append(build_retriever(systems[c], systems=systems, cache_dir=cache_dir))
        return cls(comps, name=system.name, fusion=system.fusion)

    def params(self) -> dict[str, Any]:
        return {
            "fusion": self.fusion,
            "depth": self.depth,
            "rrf_k": self.rrf_k,
            "weights": self.weights,
            "components": [{"kind": c.kind, "name": c.name, **c.params()} for c in self.components],
        }

    def index(self, ids: list[str], texts: list[str]) -> None:
        """Index the components, skipping any that already hold exactly this pool."""
        fp = pool_fingerprint(ids, texts)
        for c in self.components:
            if c.fingerprint != fp or not c.n_docs:
                c.index(ids, texts)
        self._set_pool(ids, texts)

    def search(self, queries: list[str], k: int) -> SearchResult:
        self._check_indexed()
        k = self._top_k(k)
        depth = max(k, self.depth)
        lists = [c.search(queries, depth) for c in self.components]
        if self.fusion == "rrf":
            return rrf_fuse(lists, k, self.rrf_k, self.weights)
        return score_fuse(lists, k, self.weights)

    def _save(self, directory: Path) -> None:
        for i, c in enumerate(self.components):
            c.save(directory / "components" / str(i))

    @classmethod
    def _load(cls, directory: Path, meta: dict[str, Any], mmap: bool) -> HybridRetriever:
        p = meta["params"]
        comps = [
            Retriever.load(directory / "components" / str(i), mmap=mmap)
            for i in range(len(p["components"]))
        ]
        return cls(
            comps, fusion=p["fusion"], depth=p["depth"], rrf_k=p["rrf_k"], weights=p["weights"]
        )
