"""Paired randomization test: seeded and sensible; paired scores align by query id."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ratio.metrics.significance import randomization_test


def test_randomization_test_is_seeded_and_agrees_with_scipy_permutation() -> None:
    rng = np.random.default_rng(3)
    a = (rng.random(60) < 0.4).astype(float)  # binary per-query scores, like Recall@10
    b = (rng.random(60) < 0.25).astype(float)
    r1 = randomization_test(a, b, n_resamples=4000, seed=7)
    assert r1 == randomization_test(a, b, n_resamples=4000, seed=7)
    assert r1.statistic == pytest.approx(a.mean() - b.mean())
    ref = stats.permutation_test(
        (a, b),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=4000,
        random_state=0,
    ).pvalue
    assert abs(r1.p_value - ref) < 0.03  # both Monte Carlo estimates of the same p


def test_randomization_identical_and_clear_difference() -> None:
    a = np.linspace(0, 1, 30)
    assert randomization_test(a, a, n_resamples=500).p_value == 1.0
    p = randomization_test(a + 0.5, a, n_resamples=500).p_value
    assert p == pytest.approx(1 / 501)


def test_paired_scores_aligns_by_query_id() -> None:
    from ratio.metrics import evaluate_per_query
    from ratio.metrics.significance import paired_scores

    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    a = evaluate_per_query(qrels, {"q1": {"a": 1.0}, "q2": {"x": 1.0}}, ["mrr@10"])
    b = evaluate_per_query(qrels, {"q2": {"b": 1.0}}, ["mrr@10"])
    x, y = paired_scores(a, b, "mrr@10")
    assert x.tolist() == [1.0, 0.0, 0.0] and y.tolist() == [0.0, 1.0, 0.0]
    other = evaluate_per_query({"q1": {"a": 1}}, {}, ["mrr@10"])
    with pytest.raises(ValueError, match="different queries"):
        paired_scores(a, other, "mrr@10")
