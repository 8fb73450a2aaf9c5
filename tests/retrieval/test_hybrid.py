from __future__ import annotations

import numpy as np
import pytest

from ratio.retrieval.base import RetrievalError, Retriever, SearchResult
from ratio.retrieval.bm25 import BM25Retriever
from ratio.retrieval.hybrid import HybridRetriever, minmax, rrf_fuse, score_fuse


def result(rows: list[list[tuple[str, float]]]) -> SearchResult:
    k = max(len(r) for r in rows)
    ids = np.full((len(rows), k), "", dtype="<U8")
    scores = np.full((len(rows), k), -np.inf, dtype=np.float32)
    for i, r in enumerate(rows):
        for j, (d, s) in enumerate(r):
            ids[i, j], scores[i, j] = d, s
    return SearchResult(ids, scores)


A = result([[("a", 9.0), ("b", 5.0), ("c", 1.0)]])
B = result([[("c", 0.9), ("a", 0.8), ("d", 0.1)]])


def test_rrf_math():
    fused = rrf_fuse([A, B], k=4, rrf_k=60)
    expected = {
        "a": 1 / 61 + 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "b": 1 / 62,
        "d": 1 / 63,
    }
    assert list(fused.ids[0]) == ["a", "c", "b", "d"]
    np.testing.assert_allclose(fused.scores[0], [expected[d] for d in fused.ids[0]], rtol=1e-6)
    weighted = rrf_fuse([A, B], k=1, rrf_k=60, weights=[0.0, 1.0])
    assert weighted.ids[0, 0] == "c"


def test_minmax_score_fusion_math():
    np.testing.assert_allclose(minmax(np.array([9.0, 5.0, 1.0])), [1.0, 0.5, 0.0])
    np.testing.assert_allclose(minmax(np.array([3.0, 3.0])), [1.0, 1.0])
    fused = score_fuse([A, B], k=4)
    # a: 1 + 0.875, c: 0 + 1, b: 0.5 + 0, d: 0 + 0
    assert list(fused.ids[0]) == ["a", "c", "b", "d"]
    np.testing.assert_allclose(fused.scores[0], [1.875, 1.0, 0.5, 0.0], rtol=1e-6)


def test_padding_is_ignored():
    padded = result([[("x", 2.0)], [("y", 1.0), ("z", 0.5)]])
    fused = rrf_fuse([padded, padded], k=2)
    assert list(fused.ids[0]) == ["x", ""] and fused.scores[0, 1] == -np.inf


DOCS = [
    "sparse retrieval with inverted indexes",
    "dense retrieval with learned embeddings",
    "hybrid retrieval combines sparse and dense signals",
    "cooking pasta requires salted boiling water",
]


def test_hybrid_retriever_indexes_components_once_and_round_trips(tmp_path):
    uni, bi = BM25Retriever(backend="sparse"), BM25Retriever(ngram=2, backend="sparse")
    uni.index([f"d{i}" for i in range(4)], DOCS)
    model_before = uni.model
    h = HybridRetriever([uni, bi], fusion="score")
    h.index([f"d{i}" for i in range(4)], DOCS)
    assert uni.model is model_before  # already held this pool: not re-indexed
    assert bi.n_docs == 4
    res = h.search(["hybrid sparse dense retrieval"], 3)
    assert res.ids[0, 0] == "d2"
    h.save(tmp_path / "h")
    loaded = Retriever.load(tmp_path / "h")
    assert isinstance(loaded, HybridRetriever) and loaded.fusion == "score"
    for c in loaded.components:
        c.backend = "sparse"
    res2 = loaded.search(["hybrid sparse dense retrieval"], 3)
    np.testing.assert_array_equal(res.ids, res2.ids)
    np.testing.assert_allclose(res.scores, res2.scores, rtol=1e-6)


def test_hybrid_config_errors():
    from ratio.config import SystemConfig
    from ratio.retrieval.base import build_retriever

    hyb = SystemConfig(name="h", kind="hybrid", components=["bm25", "missing"])
    with pytest.raises(RetrievalError, match="missing"):
        build_retriever(hyb, systems={"bm25": SystemConfig(name="bm25")})
    with pytest.raises(RetrievalError, match="unknown kind"):
        build_retriever(SystemConfig(name="x", kind="splade"))
    ok = build_retriever(
        SystemConfig(name="h", kind="hybrid", components=["a", "b"]),
        systems={"a": SystemConfig(name="a"), "b": SystemConfig(name="b", ngram=2)},
    )
    assert isinstance(ok, HybridRetriever) and [c.name for c in ok.components] == ["a", "b"]
