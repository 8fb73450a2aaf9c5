"""Ranking / Qrels containers: construction paths agree, ordering is trec_eval's, errors are clear."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ratio.core.schemas import QRELS
from ratio.metrics import Qrels, Ranking, RankingError, evaluate, relevance_matrix


def test_tie_order_is_score_desc_then_docid_desc() -> None:
    run = Ranking.from_dict({"q": {"a": 1.0, "b": 1.0, "c": 2.0, "10": 1.0, "9": 1.0}})
    assert [d for d, _ in run.ranked("q")] == ["c", "b", "a", "9", "10"]


def test_from_arrays_equals_from_dict_and_roundtrips() -> None:
    rng = np.random.default_rng(1)
    cands = np.array([f"c{i:03d}" for i in rng.permutation(200)])
    idx = np.stack([rng.choice(200, 30, replace=False) for _ in range(20)])
    scores = rng.integers(0, 5, size=idx.shape).astype(float)
    idx[3, 25:] = -1  # faiss-style padding
    qids = [f"q{i}" for i in range(20)]
    a = Ranking.from_arrays(qids, cands, idx, scores)
    as_dict = {
        q: {cands[j]: s for j, s in zip(idx[i], scores[i], strict=True) if j >= 0}
        for i, q in enumerate(qids)
    }
    b = Ranking.from_dict(as_dict)
    assert a.to_dict() == b.to_dict() == as_dict
    assert a.depth == 30 and (a.indices[3, 25:] == -1).all()
    assert list(a.to_dict()["q0"]) == [d for d, _ in b.ranked("q0")]
    c = Ranking.from_table(a.to_table())
    assert c.query_ids == qids and c.to_dict() == as_dict
    assert (np.diff(a.scores[0]) <= 0).all()


def test_truncate() -> None:
    run = Ranking.from_dict({"q": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}, "r": {"c": 1.0}})
    assert run.truncate(2).to_dict()["q"] == {"a": 4.0, "b": 3.0}


def test_invalid_runs_raise() -> None:
    with pytest.raises(RankingError, match="NaN"):
        Ranking.from_dict({"q": {"a": float("nan")}})
    with pytest.raises(RankingError, match="twice"):
        Ranking.from_arrays(["q"], ["a", "b"], np.array([[0, 0]]), np.array([[1.0, 2.0]]))
    with pytest.raises(RankingError, match="duplicate"):
        Ranking.from_arrays(["q"], ["a", "a"], np.array([[0, 1]]), np.array([[1.0, 2.0]]))
    with pytest.raises(RankingError, match="out of range"):
        Ranking.from_arrays(["q"], ["a"], np.array([[3]]), np.array([[1.0]]))
    with pytest.raises(RankingError, match="integers"):
        Qrels.from_dict({"q": {"a": 0.5}})
    with pytest.raises(RankingError, match="twice"):
        Qrels.from_table(
            pa.table({"query_id": ["q", "q"], "candidate_id": ["a", "a"], "relevance": [1, 1]})
        )


def test_qrels_table_roundtrip_and_evaluated_queries() -> None:
    d = {"q1": {"a": 1, "b": 0}, "q2": {"c": 0}, "q3": {"d": 2}}
    q = Qrels.from_dict(d)
    t = q.to_table()
    assert t.cast(QRELS).num_rows == 4
    assert Qrels.from_table(t).to_dict() == d
    assert q.evaluated_query_ids == ["q1", "q3"]
    assert q.n_relevant.tolist() == [1, 0, 1]


def test_missing_queries_count_as_zero_and_unjudged_are_ignored() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"x": 0}}
    run = {"q1": {"a": 1.0}, "q9": {"b": 1.0}, "q3": {"x": 1.0}}
    res = evaluate(qrels, run, ["recall@1", "mrr@10", "R@1", "mrr"])
    assert res == {"recall@1": 0.5, "mrr@10": 0.5, "R@1": 0.5, "mrr": 0.5}


def test_relevance_matrix_gains_and_ideal() -> None:
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 3, "c": 2, "z": 1}})
    run = Ranking.from_dict({"q": {"c": 3.0, "x": 2.0, "a": 1.0}})
    rel = relevance_matrix(qrels, run, 5)
    assert rel.gains.tolist() == [[2.0, 0.0, 1.0, 0.0, 0.0]]
    assert rel.ideal.tolist() == [[3.0, 2.0, 1.0, 1.0, 0.0]]
    assert rel.n_rel.tolist() == [4]


def test_empty_run_scores_zero() -> None:
    res = evaluate({"q": {"a": 1}}, {}, ["recall@10", "ndcg@10", "map@10", "P@10", "HR@10", "mrr"])
    assert set(res.values()) == {0.0}


def test_bad_metric_names() -> None:
    with pytest.raises(RankingError, match="unknown metric"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["bleu@4"])
    with pytest.raises(RankingError, match=">= 1"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["recall@0"])


def test_duplicate_query_ids_in_arrays_raise() -> None:
    with pytest.raises(RankingError, match="query_ids"):
        Ranking.from_arrays(["q", "q"], ["a"], np.array([[0], [0]]), np.array([[1.0], [1.0]]))


def test_empty_lists_and_tables() -> None:
    run = Ranking.from_dict({"q": {}, "p": {"c": 0.5, "d": 0.5}})
    assert run.to_dict() == {"q": {}, "p": {"d": 0.5, "c": 0.5}}
    t = run.to_table()
    assert t.column("rank").to_pylist() == [1, 2]
    assert Ranking.from_table(t).to_dict() == {
        "p": {"d": 0.5, "c": 0.5}
    }  # the long form has no empty lists


def test_from_ranked_keeps_the_rankers_ties_and_metrics_use_trec_order():
    run = Ranking.from_ranked(
        ["q"], ["a", "b", "c"], np.array([[0, 1, 2]]), np.array([[1.0, 1.0, 0.5]])
    )
    assert run.doc_ids()[0].tolist() == ["a", "b", "c"] and not run.trec_order
    trec = run.in_trec_order()
    assert trec.doc_ids()[0].tolist() == ["b", "a", "c"]  # ties: doc id descending
    assert trec.in_trec_order() is trec
    assert evaluate({"q": {"b": 1}}, run, ["recall@1"])["recall@1"] == 1.0
    assert Ranking.from_arrays(["q"], ["a", "b", "c"], np.array([[0, 1, 2]]), run.scores).trec_order


def test_from_ranked_is_the_same_run_for_a_few_results_of_a_big_pool_and_many_of_a_small():
    """A served query takes 10 of 820k ids (O(retrieved) work), an evaluation most of a pool
    (O(pool) work): both paths must build the same vocabulary and rows."""
    rng = np.random.default_rng(3)
    big = [f"c{i:06d}" for i in range(5000)]
    idx = rng.choice(5000, size=(2, 10), replace=False)
    idx[1, 7:] = -1  # padding, as faiss returns it
    scores = -np.sort(-rng.random((2, 10)), axis=1)
    few = Ranking.from_ranked(["q", "p"], big, idx, scores)  # 20 * 16 < 5000: the sparse path
    small = [big[i] for i in sorted(set(idx[idx >= 0].tolist()))]
    pos = {c: i for i, c in enumerate(small)}
    dense_idx = np.array([[pos[big[i]] if i >= 0 else -1 for i in row] for row in idx])
    many = Ranking.from_ranked(["q", "p"], small, dense_idx, scores)  # the O(pool) path
    assert few.vocab.tolist() == many.vocab.tolist() == small
    assert few.doc_ids().tolist() == many.doc_ids().tolist()
    assert few.doc_ids()[1, 7:].tolist() == ["", "", ""]
    assert few.to_dict() == many.to_dict()
