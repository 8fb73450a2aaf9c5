"""Kernels on hand-computed relevance matrices, and the per-metric wrappers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ratio.metrics import (
    Qrels,
    Ranking,
    average_precision,
    hit_rate,
    mrr,
    ndcg,
    precision,
    recall,
)
from ratio.metrics import _kernels as K

# two queries: q0 has relevant docs at ranks 2 (gain 2) and 4 (gain 1), 3 relevant in qrels;
# q1 retrieves nothing relevant, 1 relevant in qrels
GAINS = np.array([[0, 2, 0, 1, 0], [0, 0, 0, 0, 0]], dtype=float)
N_REL = np.array([3, 1])
IDEAL = np.array([[2, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=float)


def test_kernels_by_hand() -> None:
    assert K.recall_kernel(GAINS, N_REL, 2).tolist() == [1 / 3, 0]
    assert K.recall_kernel(GAINS, N_REL, 5).tolist() == [2 / 3, 0]
    assert K.precision_kernel(GAINS, 4).tolist() == [0.5, 0]
    assert K.precision_kernel(GAINS, 10).tolist() == [0.2, 0]  # k beyond depth: still / k
    assert K.hit_rate_kernel(GAINS, 1).tolist() == [0, 0]
    assert K.hit_rate_kernel(GAINS, 2).tolist() == [1, 0]
    assert K.reciprocal_rank_kernel(GAINS, 1).tolist() == [0, 0]
    assert K.reciprocal_rank_kernel(GAINS, 5).tolist() == [0.5, 0]
    assert K.average_precision_kernel(GAINS, N_REL, 5).tolist() == pytest.approx(
        [(1 / 2 + 2 / 4) / 3, 0]
    )
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert K.ndcg_kernel(GAINS, IDEAL, 5).tolist() == pytest.approx([dcg / idcg, 0])
    with pytest.raises(ValueError):
        K.recall_kernel(GAINS, N_REL, 0)


def test_wrappers_return_per_query_arrays() -> None:
    qrels = Qrels.from_dict({"q0": {"b": 2, "d": 1, "z": 1}, "q1": {"y": 1}, "q2": {"n": 0}})
    run = Ranking.from_dict(
        {"q0": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}, "q1": {"a": 1.0}}
    )
    assert recall(qrels, run, 5).tolist() == [2 / 3, 0]
    assert precision(qrels, run, 4).tolist() == [0.5, 0]
    assert hit_rate(qrels, run, 2).tolist() == [1, 0]
    assert mrr(qrels, run, 10).tolist() == [0.5, 0]
    assert average_precision(qrels, run, 5).tolist() == pytest.approx([1 / 3, 0])
    assert ndcg(qrels, run, 5)[0] == pytest.approx(
        (2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3) + 1 / math.log2(4))
    )
