"""Paired randomization test between two systems' per-query scores (:func:`paired_scores`).

The standard IR choice (Smucker et al., 2007): under H0 the system labels are
exchangeable per query, so each difference's sign is flipped at random. It is seeded,
so a table is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ratio.metrics.evaluate import PerQuery


@dataclass(frozen=True)
class SignificanceResult:
    """``statistic``: the mean difference; ``p_value``: two-sided."""

    statistic: float
    p_value: float
    n: int


def randomization_test(
    a: np.ndarray, b: np.ndarray, n_resamples: int = 10_000, seed: int = 0, chunk: int = 1000
) -> SignificanceResult:
    """Paired two-sided permutation (sign-flip) test on the mean difference.

    ``p = (1 + #{|mean of flipped| >= |observed|}) / (1 + n_resamples)``: the +1
    counts the observed labelling, so p is never 0 (Phipson & Smyth, 2010).
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two 1-D arrays of equal length, got {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("no queries to compare")
    d = a - b
    observed = abs(d.mean())
    tol = 1e-12 * max(1.0, observed)  # flipped means equal to the observed one must count
    rng = np.random.default_rng(seed)
    extreme = 0
    for done in range(0, n_resamples, chunk):
        m = min(chunk, n_resamples - done)
        signs = rng.integers(0, 2, size=(m, d.size), dtype=np.int8) * 2 - 1
        extreme += int((np.abs(signs @ d) / d.size >= observed - tol).sum())
    return SignificanceResult(float(d.mean()), (extreme + 1) / (n_resamples + 1), int(d.size))


def paired_scores(a: PerQuery, b: PerQuery, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-query ``metric`` of two systems aligned by query id.

    Both must cover the same queries (evaluate both rankings against the same qrels);
    a mismatch raises rather than silently testing different query sets.
    """
    if set(a.query_ids) != set(b.query_ids):
        only = sorted(set(a.query_ids) ^ set(b.query_ids))
        raise ValueError(f"systems cover different queries ({len(only)} differ, e.g. {only[0]!r})")
    pos = {q: i for i, q in enumerate(b.query_ids)}
    order = np.fromiter((pos[q] for q in a.query_ids), dtype=np.int64, count=len(a.query_ids))
    return a.scores[metric], b.scores[metric][order]
