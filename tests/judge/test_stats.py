"""Agreement and test statistics against scipy / scikit-learn / published values."""

from __future__ import annotations

import math
import random

import pytest

from ratio.judge.agreement import (
    binary_scores,
    cohen_kappa,
    krippendorff_alpha_nominal,
    panel_scores,
)
from ratio.judge.anaphora import anaphora_table, has_anaphor
from ratio.judge.pairwise import FIRST, SECOND, aggregate, verdict_system
from ratio.judge.topk import judged_metrics, rank_biserial_mannwhitney, retriever_judge_agreement
from ratio.metrics import Ranking


def test_cohen_kappa_and_binary_scores_match_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = random.Random(0)
    for _ in range(20):
        a = [rng.random() < 0.6 for _ in range(50)]
        b = [x if rng.random() < 0.7 else not x for x in a]
        assert cohen_kappa(a, b) == pytest.approx(sk.cohen_kappa_score(a, b))
        s = binary_scores(a, b)
        assert s["f1"] == pytest.approx(sk.f1_score(a, b))
        assert s["precision"] == pytest.approx(sk.precision_score(a, b, zero_division=0))
        assert s["recall"] == pytest.approx(sk.recall_score(a, b))
        assert s["agreement"] == pytest.approx(sk.accuracy_score(a, b))


def test_krippendorff_alpha_nominal_known_value():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
    # 4 coders x 12 units with missing values; nominal alpha = 0.743.
    n = None
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    assert krippendorff_alpha_nominal(data) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha_nominal([[1, 0, 1, 1], [1, 0, 1, 1]]) == 1.0
    # by hand: coincidences o11=8, o00=4, o01=o10=2; n=16, n1=10, n0=6;
    # D_o = 4/16, D_e = 2*10*6/(16*15) = 0.5 -> alpha = 0.5 (Cohen's kappa here: 7/15)
    a, b = [1, 1, 0, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 1, 1, 1]
    assert krippendorff_alpha_nominal([a, b]) == pytest.approx(0.5)
    assert cohen_kappa(a, b) == pytest.approx(7 / 15)


def test_panel_scores_average_over_pairs():
    labels = {"a": {1: True, 2: False, 3: True}, "b": {1: True, 2: False, 3: False}}
    human = panel_scores(labels, [1, 2, 3], None)
    assert human["pairs"] == 1 and human["agreement"] == pytest.approx(2 / 3)
    prompt = panel_scores(labels, [1, 2, 3], {1: True, 2: False, 3: True})
    assert prompt["pairs"] == 2 and prompt["agreement"] == pytest.approx((1 + 2 / 3) / 2)


def test_fisher_exact_and_anaphors():
    from scipy.stats import fisher_exact

    assert has_anaphor("to address this issue") and has_anaphor("to overcome these limitations")
    assert has_anaphor("as a solution to the above") and not has_anaphor("to address")
    assert not has_anaphor("thistle") and not has_anaphor("for example")
    markers = ["to address this"] * 10 + ["to address"] * 6
    accepted = [True] * 8 + [False] * 2 + [True] * 1 + [False] * 5
    t = anaphora_table(markers, accepted)
    assert t["table"] == [[8, 2], [1, 5]]
    ref = fisher_exact([[8, 2], [1, 5]])
    assert t["odds_ratio"] == pytest.approx(ref.statistic) == pytest.approx(20.0)
    assert t["p_value"] == pytest.approx(ref.pvalue)
    assert t["accept_rate_with"] == 0.8 and t["share_with_anaphor"] == 10 / 16


def test_pairwise_counts_only_order_consistent_preferences():
    assert verdict_system("A", FIRST) == "x" and verdict_system("A", SECOND) == "y"
    assert verdict_system("B", SECOND) == "x" and verdict_system("tie", FIRST) == "tie"
    pairs = {
        "q1": {FIRST: "A", SECOND: "B"},  # x both times: a stable win for x
        "q2": {FIRST: "A", SECOND: "B"},
        "q3": {FIRST: "A", SECOND: "A"},  # position bias: unstable, no preference
        "q4": {FIRST: "B", SECOND: "A"},  # y both times
        "q5": {FIRST: "tie", SECOND: "tie"},  # stable tie
        "q6": {FIRST: None, SECOND: "A"},  # an invalid answer: not counted
    }
    r = aggregate(pairs)
    assert (r["wins_first_system"], r["wins_second_system"], r["stable_ties"]) == (2, 1, 1)
    assert r["win_rate"] == pytest.approx(2 / 3)
    assert r["stable"] == pytest.approx(4 / 5)
    assert r["slot_a"] == pytest.approx(6 / 9)
    from scipy.stats import binomtest

    assert r["win_p_value"] == pytest.approx(binomtest(2, 3, 0.5).pvalue)
    assert r["slot_a_p_value"] == pytest.approx(binomtest(6, 9, 0.5).pvalue)
    # Table 16 sanity: 240 vs 102 is significant far beyond 1e-4
    assert binomtest(240, 342, 0.5).pvalue < 1e-4


def test_judged_metrics_average_over_all_sampled_queries():
    run = Ranking.from_dict({"q1": {"a": 3, "b": 2, "c": 1}, "q2": {"d": 2, "e": 1}})
    m = judged_metrics(run, {"q1": {"a", "c"}}, ["q1", "q2"], 3)
    assert m["hit_rate@3"] == pytest.approx(0.5)
    assert m["precision@3"] == pytest.approx((2 / 3) / 2)
    assert m["mrr@3"] == pytest.approx(0.5)
    dcg, idcg = 1 + 1 / math.log2(4), 1 + 1 / math.log2(3)
    assert m["ndcg@3"] == pytest.approx(dcg / idcg / 2)
    assert m["map@3"] == pytest.approx((1 + 2 / 3) / 2 / 2)
    assert judged_metrics(run, {}, ["q1", "q2"], 3)["mrr@3"] == 0.0


def test_rank_biserial_and_retriever_judge_agreement():
    r = rank_biserial_mannwhitney([0.1, 0.2, 0.3], [0.5, 0.6, 0.7, 0.8])
    assert r["u"] == 0 and r["rank_biserial"] == pytest.approx(1.0) and r["p_value"] < 0.1
    assert rank_biserial_mannwhitney([0.5, 0.6], [0.5, 0.6])["rank_biserial"] == pytest.approx(0.0)
    lists = {"q1": ["g1", "x"], "q2": ["x"], "q3": ["g3"], "q4": ["y"]}
    gold = {"q1": "g1", "q2": "g2", "q3": "g3", "q4": "g4"}
    a = retriever_judge_agreement(lists, gold, {"q1": True, "q2": True, "q3": False, "q4": False})
    assert a["recall_accepted"] == 0.5 and a["recall_rejected"] == 0.5 and a["delta"] == 0.0
    assert a["odds_ratio"] == pytest.approx(1.0)
