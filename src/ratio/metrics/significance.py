"""Paired significance tests between two systems' per-query scores.

Both take aligned per-query arrays (e.g. ``evaluate_per_query(...).scores["mrr@10"]``
of two runs over the same qrels, which share ``query_ids``) and return two-sided
p-values. The randomization test is the standard IR choice (Smucker et al., 2007):
under H0 the system labels are exchangeable per query, so each difference's
sign is flipped at random. It is seeded, so a table is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ratio.metrics.evaluate import PerQuery


@dataclass(frozen=True)
class SignificanceResult:
    """``statistic``: mean difference (randomization) or t (t-test); ``p_value``: two-sided."""

    statistic: float
    p_value: float
    n: int


def _diffs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two 1-D arrays of equal length, got {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("no queries to compare")
    return a - b


def randomization_test(
    a: np.ndarray, b: np.ndarray, n_resamples: int = 10_000, seed: int = 0, chunk: int = 1000
) -> SignificanceResult:
    """Paired two-sided permutation (sign-flip) test on the mean difference.

    ``p = (1 + #{|mean of flipped| >= |observed|}) / (1 + n_resamples)``: the +1
    counts the observed labelling, so p is never 0 (Phipson & Smyth, 2010).
    """
    d = _diffs(a, b)
    observed = abs(d.mean())
    tol = 1e-12 * max(1.0, observed)  # flipped means equal to the observed one must count
    rng = np.random.default_rng(seed)
    extreme = 0
    done = 0
    while done < n_resamples:
        m = min(chunk, n_resamples - done)
        signs = rng.integers(0, 2, size=(m, d.size), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ d) / d.size
        extreme += int((means >= observed - tol).sum())
        done += m
    return SignificanceResult(float(d.mean()), (extreme + 1) / (n_resamples + 1), int(d.size))


def paired_t_test(a: np.ndarray, b: np.ndarray) -> SignificanceResult:
    """Paired two-sided Student t-test (equals ``scipy.stats.ttest_rel``).

    Identical systems (all differences 0) give ``t = 0, p = 1`` where scipy
    returns NaN; a constant non-zero difference gives ``t = ±inf, p = 0``.
    """
    from scipy.special import stdtr

    d = _diffs(a, b)
    n = d.size
    if n < 2:
        raise ValueError("the paired t-test needs at least 2 queries")
    mean = d.mean()
    sd = d.std(ddof=1)
    if sd == 0:
        if mean == 0:
            return SignificanceResult(0.0, 1.0, n)
        return SignificanceResult(float(np.copysign(np.inf, mean)), 0.0, n)
    t = mean / (sd / np.sqrt(n))
    p = 2.0 * stdtr(n - 1, -abs(t))
    return SignificanceResult(float(t), float(min(p, 1.0)), n)


def paired_scores(a: PerQuery, b: PerQuery, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-query ``metric`` of two systems aligned by query id.

    Both must cover the same queries (evaluate both runs against the same qrels);
    a mismatch raises rather than silently testing different query sets.
    """
    if set(a.query_ids) != set(b.query_ids):
        only = sorted(set(a.query_ids) ^ set(b.query_ids))
        raise ValueError(f"systems cover different queries ({len(only)} differ, e.g. {only[0]!r})")
    pos = {q: i for i, q in enumerate(b.query_ids)}
    order = np.fromiter((pos[q] for q in a.query_ids), dtype=np.int64, count=len(a.query_ids))
    return a.scores[metric], b.scores[metric][order]
