"""Our metrics equal pytrec_eval's and ranx's on the same runs (to 1e-9).

Covers ties (trec_eval breaks them by doc id descending), queries whose gold is
never retrieved, graded relevance (nDCG), judged-non-relevant docs, and random
runs from seeded numpy and from hypothesis.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratio.metrics import Qrels, Ranking, evaluate_per_query

pytrec_eval = pytest.importorskip("pytrec_eval")
ranx = pytest.importorskip("ranx")

KS = (1, 3, 10)
TREC = {
    "recall": "recall",
    "precision": "P",
    "ndcg": "ndcg_cut",
    "map": "map_cut",
    "hit_rate": "success",
}
RANX = {
    "recall": "recall",
    "precision": "precision",
    "ndcg": "ndcg",
    "map": "map",
    "hit_rate": "hit_rate",
    "mrr": "mrr",
}


def trec_order(docs: dict[str, float]) -> list[tuple[str, float]]:
    """Reference ordering written independently of ours: score desc, then docid desc."""
    items = sorted(docs.items(), key=lambda x: x[0], reverse=True)
    return sorted(items, key=lambda x: -x[1])  # stable: keeps docid desc inside ties


def pytrec_per_query(qrels: dict, run: dict, k: int) -> dict[str, dict[str, float]]:
    measures = {f"{m}.{k}" for m in TREC.values()}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    # trec's recip_rank has no cutoff: evaluate it on the run truncated to k
    cut = {q: dict(trec_order(d)[:k]) for q, d in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
    out = {}
    for q, vals in res.items():
        out[q] = {m: vals[f"{t}_{k}"] for m, t in TREC.items()}
        out[q]["mrr"] = rr[q]["recip_rank"]
    return out


def ranx_per_query(qrels: dict, run: dict, k: int) -> dict[str, np.ndarray]:
    rq = {q: d for q, d in qrels.items() if any(v > 0 for v in d.values())}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ranx.evaluate(
            ranx.Qrels(rq),
            ranx.Run(run),
            [f"{m}@{k}" for m in RANX.values()],
            return_mean=False,
            make_comparable=True,
        ), sorted(rq)


def ours(qrels: dict, run: dict, k: int):
    names = [f"{m}@{k}" for m in RANX]
    pq = evaluate_per_query(Qrels.from_dict(qrels), Ranking.from_dict(run), names)
    return {q: {m: pq.scores[f"{m}@{k}"][i] for m in RANX} for i, q in enumerate(pq.query_ids)}


def assert_matches_pytrec(qrels: dict, run: dict) -> None:
    for k in KS:
        mine = ours(qrels, run, k)
        ref = pytrec_per_query(qrels, run, k)
        # pytrec_eval drops qrels queries absent from the run and keeps run queries
        # with no relevant doc (scored 0); we do the opposite (see evaluate.py).
        for q in set(ref) & set(mine):
            for m in RANX:
                assert mine[q][m] == pytest.approx(ref[q][m], abs=1e-9), (q, m, k)
        for q in set(ref) - set(mine):
            assert all(v == 0 for v in ref[q].values())
        for q in set(mine) - set(ref):
            assert q not in run and all(v == 0 for v in mine[q].values())


def assert_matches_ranx(qrels: dict, run: dict, tie_free: bool) -> None:
    """ranx keeps insertion order inside ties, so feed it our ranking unless tie-free."""
    r = (
        run
        if tie_free
        else {
            q: {d: float(len(items) - i) for i, (d, _) in enumerate(items)}
            for q, items in ((q, Ranking.from_dict(run).ranked(q)) for q in run)
        }
    )
    for k in KS:
        mine = ours(qrels, run, k)
        ref, qids = ranx_per_query(qrels, r, k)
        assert sorted(mine) == qids
        for m, rm in RANX.items():
            got = np.array([mine[q][m] for q in qids])
            np.testing.assert_allclose(got, ref[f"{rm}@{k}"], rtol=0, atol=1e-9, err_msg=f"{m}@{k}")


def random_case(seed: int, n_q: int = 60, n_docs: int = 40, ties: bool = True):
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(n_docs)] + ["9", "10", "100"]  # numeric ids: string order
    qrels, run = {}, {}
    for qi in range(n_q):
        q = f"q{qi}"
        judged = rng.choice(len(docs), size=rng.integers(1, 6), replace=False)
        qrels[q] = {docs[j]: int(rng.integers(0, 4)) for j in judged}
        if qi % 11 == 5:
            continue  # query absent from the run
        depth = int(rng.integers(0, 25))
        picked = rng.choice(len(docs), size=depth, replace=False)
        if ties:
            scores = rng.integers(0, 4, size=depth).astype(float)
        else:
            scores = rng.random(depth)
        run[q] = {docs[j]: float(s) for j, s in zip(picked, scores, strict=True)}
    run["q_unjudged"] = {"d1": 1.0}
    return qrels, run


def test_handcrafted_ties_and_grades() -> None:
    qrels = {
        "tie": {"b": 1},
        "num": {"10": 1},
        "graded": {"c": 2, "d": 1, "e": -1, "z": 3},
        "missed": {"gold": 1},
        "nonrel_only": {"a": 0},
        "many": {f"m{i}": 1 for i in range(15)},
    }
    run = {
        "tie": {"a": 1.0, "b": 1.0, "c": 1.0},  # trec ranks c, b, a
        "num": {"9": 1.0, "10": 1.0},  # "9" > "10" as strings: "10" is second
        "graded": {"e": 5.0, "d": 4.0, "y": 3.0, "c": 1.0},
        "missed": {"x": 2.0, "y": 1.0},
        "nonrel_only": {"a": 1.0},
        "many": {f"m{i}": float(i % 3) for i in range(15)},
    }
    assert_matches_pytrec(qrels, run)
    res = ours(qrels, run, 10)
    assert res["tie"]["mrr"] == 0.5 and res["num"]["mrr"] == 0.5
    assert res["missed"] == {m: 0.0 for m in RANX}
    assert "nonrel_only" not in res


@pytest.mark.parametrize("seed", range(4))
def test_random_runs_with_ties_match_pytrec_eval(seed: int) -> None:
    assert_matches_pytrec(*random_case(seed))


@pytest.mark.parametrize("seed", range(3))
def test_random_runs_match_ranx(seed: int) -> None:
    qrels, run = random_case(100 + seed, ties=False)
    assert_matches_ranx(qrels, run, tie_free=True)
    qrels, run = random_case(200 + seed, ties=True)
    assert_matches_ranx(qrels, run, tie_free=False)


@st.composite
def cases(draw):
    docs = draw(
        st.lists(
            st.sampled_from(list("abcdefghij") + ["10", "9", "x1"]),
            min_size=1,
            max_size=13,
            unique=True,
        )
    )
    n_q = draw(st.integers(1, 5))
    qrels, run = {}, {}
    for i in range(n_q):
        judged = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=4, unique=True))
        qrels[f"q{i}"] = {d: draw(st.integers(0, 3)) for d in judged}
        retrieved = draw(st.lists(st.sampled_from(docs), max_size=len(docs), unique=True))
        if retrieved:
            run[f"q{i}"] = {d: float(draw(st.integers(0, 2))) for d in retrieved}
    return qrels, run


@settings(max_examples=80, deadline=None)
@given(cases())
def test_hypothesis_runs_match_pytrec_eval(case) -> None:
    assert_matches_pytrec(*case)
