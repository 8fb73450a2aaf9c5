from __future__ import annotations

import numpy as np
import pytest

from ratio.metrics import Ranking, RankingError
from ratio.metrics.fusion import fuse, minmax, rrf_fuse, score_fuse


def ranked(rows: list[list[tuple[str, float]]]) -> Ranking:
    """A run in the given order, as a retriever returns it (``-1``-padded rows)."""
    vocab = sorted({d for r in rows for d, _ in r})
    k = max(len(r) for r in rows)
    idx = np.full((len(rows), k), -1, dtype=np.int64)
    scores = np.full((len(rows), k), -np.inf)
    for i, r in enumerate(rows):
        for j, (d, s) in enumerate(r):
            idx[i, j], scores[i, j] = vocab.index(d), s
    return Ranking.from_ranked([str(i) for i in range(len(rows))], vocab, idx, scores)


A = ranked([[("a", 9.0), ("b", 5.0), ("c", 1.0)]])
B = ranked([[("c", 0.9), ("a", 0.8), ("d", 0.1)]])


def test_rrf_math():
    fused = rrf_fuse([A, B], k=4, rrf_k=60)
    expected = {
        "a": 1 / 61 + 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "b": 1 / 62,
        "d": 1 / 63,
    }
    ids = fused.doc_ids()[0].tolist()
    assert ids == ["a", "c", "b", "d"]
    np.testing.assert_allclose(fused.scores[0], [expected[d] for d in ids], rtol=1e-6)
    weighted = rrf_fuse([A, B], k=1, rrf_k=60, weights=[0.0, 1.0])
    assert weighted.doc_ids()[0, 0] == "c"


def test_minmax_score_fusion_math():
    np.testing.assert_allclose(minmax(np.array([9.0, 5.0, 1.0])), [1.0, 0.5, 0.0])
    np.testing.assert_allclose(minmax(np.array([3.0, 3.0])), [1.0, 1.0])
    fused = score_fuse([A, B], k=4)
    # a: 1 + 0.875, c: 0 + 1, b: 0.5 + 0, d: 0 + 0
    assert fused.doc_ids()[0].tolist() == ["a", "c", "b", "d"]
    np.testing.assert_allclose(fused.scores[0], [1.875, 1.0, 0.5, 0.0], rtol=1e-6)
    assert fuse([A, B], 4, "score").doc_ids().tolist() == fused.doc_ids().tolist()


def test_padding_is_ignored():
    padded = ranked([[("x", 2.0)], [("y", 1.0), ("z", 0.5)]])
    fused = rrf_fuse([padded, padded], k=2)
    assert fused.doc_ids()[0].tolist() == ["x", ""] and fused.scores[0, 1] == -np.inf


def test_ties_follow_each_runs_own_order_and_scores_are_float32():
    # equal scores: the retriever's order decides the ranks RRF sees, not trec_eval's
    tied = ranked([[("a", 1.0), ("b", 1.0)]])
    fused = rrf_fuse([tied, tied], k=2)
    assert fused.doc_ids()[0].tolist() == ["a", "b"]
    assert fused.in_trec_order().doc_ids()[0].tolist() == ["a", "b"]  # scores differ
    assert not fused.trec_order
    assert fused.scores[0, 0] == float(np.float32(2 / 61))


def test_fused_runs_must_rank_the_same_queries():
    with pytest.raises(RankingError, match="same queries"):
        rrf_fuse([A, ranked([[("a", 1.0)], [("b", 1.0)]])], k=2)
    with pytest.raises(RankingError, match="fusion must be"):
        fuse([A, B], 2, "max")
