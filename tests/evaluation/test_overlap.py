"""Lexical overlap (Appendix F.1): tokens, Jaccard, top-k vs gold, Spearman, Figure 4 PNG."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ratio.core.io import RatioError
from ratio.evaluation.overlap import StemmedTokenSets, jaccard, lexical_overlap, plot_overlap
from ratio.metrics import Qrels, Ranking


def test_tokens_are_stemmed_without_stopwords() -> None:
    tok = StemmedTokenSets()
    (s,) = tok(["The Models are training on the running datasets, a b 42!"])
    assert s == frozenset({"model", "train", "run", "dataset", "42"})


def test_jaccard() -> None:
    assert jaccard(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset()) == 0.0


def make_case():
    queries = {
        "q1": "graph neural networks overfit small graphs",
        "q2": "language models hallucinate facts",
    }
    cands = {
        "a": "graph neural networks overfit on small graphs",  # 4/5 stems shared with q1
        "b": "neural networks are used",
        "c": "we propose a retrieval augmented approach",
        "g1": "we regularize graph networks",
        "d": "language models hallucinate facts often",
        "g2": "grounding reduces hallucination",
        "e": "unrelated sentence about cooking",
    }
    run = Ranking.from_dict(
        {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"d": 2.0, "e": 1.0}, "q_extra": {"a": 1.0}}
    )
    qrels = Qrels.from_dict({"q1": {"g1": 1}, "q2": {"g2": 1}, "q_missing": {"a": 1}})
    return queries, cands, run, qrels


def test_lexical_overlap_by_depth_and_gold() -> None:
    queries, cands, run, qrels = make_case()
    res = lexical_overlap(queries, cands, run, qrels, ks=(1, 2, 3))
    assert res.query_ids == ["q1", "q2"]  # q_missing not in run, q_extra not in qrels
    tok = StemmedTokenSets()
    Q = dict(zip(queries, tok(queries.values()), strict=True))
    C = dict(zip(cands, tok(cands.values()), strict=True))
    j = lambda q, c: jaccard(Q[q], C[c])  # noqa: E731
    assert res.per_rank[0].tolist() == pytest.approx([j("q1", "a"), j("q1", "b"), j("q1", "c")])
    assert res.per_rank[1, :2].tolist() == pytest.approx([j("q2", "d"), j("q2", "e")])
    assert math.isnan(res.per_rank[1, 2])
    assert res.topk[1] == pytest.approx((j("q1", "a") + j("q2", "d")) / 2)
    # q2 has only 2 candidates: its top-3 mean is over those 2
    assert res.topk[3] == pytest.approx(
        (np.mean([j("q1", c) for c in "abc"]) + np.mean([j("q2", c) for c in "de"])) / 2
    )
    assert res.gold == pytest.approx((j("q1", "g1") + j("q2", "g2")) / 2)
    assert res.delta(1) == pytest.approx(res.topk[1] - res.gold)
    assert res.spearman_rho < 0  # overlap falls with rank here
    d = res.to_dict()
    assert d["n_queries"] == 2 and set(d["topk"]) == {"1", "2", "3"}


def test_spearman_matches_scipy() -> None:
    from scipy.stats import spearmanr

    queries, cands, run, qrels = make_case()
    res = lexical_overlap(queries, cands, run, qrels, ks=(3,))
    ok = np.isfinite(res.per_rank)
    ranks = np.broadcast_to(np.arange(1, 4), res.per_rank.shape)[ok]
    assert res.spearman_rho == pytest.approx(spearmanr(ranks, res.per_rank[ok]).statistic)


def test_missing_texts_raise() -> None:
    queries, cands, run, qrels = make_case()
    del cands["g2"]
    with pytest.raises(RatioError, match="no text"):
        lexical_overlap(queries, cands, run, qrels)


def test_plot_writes_png(tmp_path) -> None:
    queries, cands, run, qrels = make_case()
    res = lexical_overlap(queries, cands, run, qrels, ks=(1, 2, 3))
    out = tmp_path / "fig4.png"
    plot_overlap(
        {"Specify": {"baseline": res, "tuned": res}, "Address": {"tuned": res}},
        out,
        title="Figure 4",
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 5000


def test_accepts_tables() -> None:
    import pyarrow as pa

    queries, cands, run, qrels = make_case()
    qt = pa.table({"query_id": list(queries), "text": list(queries.values())})
    ct = pa.table({"candidate_id": list(cands), "text": list(cands.values())})
    a = lexical_overlap(qt, ct, run, qrels, ks=(1, 3))
    b = lexical_overlap(queries, cands, run, qrels, ks=(1, 3))
    assert a.topk == b.topk and a.gold == b.gold
