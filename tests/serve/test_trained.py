"""What ``auto`` serves for a move, from the validation records training wrote."""

from __future__ import annotations

from pathlib import Path

from ratio.serve.trained import TrainedModel, validation_winner

P = Path("model")


def test_the_best_on_validation_wins_and_ties_go_to_the_simpler():
    spec = TrainedModel(P, val=0.30, baseline_val=0.25, bm25_val=0.20)
    uni = TrainedModel(P, val=0.32, baseline_val=0.24, bm25_val=0.21)
    assert validation_winner(spec, uni) == "unified"
    assert validation_winner(spec, TrainedModel(P, val=0.28)) == "trained"
    assert validation_winner(spec, TrainedModel(P, val=0.30)) == "unified"  # cheaper to serve
    assert validation_winner(TrainedModel(P, val=0.25, baseline_val=0.25), None) == "baseline"
    assert validation_winner(TrainedModel(P, val=0.2, bm25_val=0.2, baseline_val=0.2), None) == (
        "bm25"
    )


def test_bm25_and_the_base_model_count_at_their_best_record():
    """A trained model must beat BM25 and its base wherever they were measured: the
    specialist's and the unified model's validation pools differ."""
    spec = TrainedModel(P, val=0.30, baseline_val=0.25, bm25_val=0.20)
    uni = TrainedModel(P, val=0.29, baseline_val=0.24, bm25_val=0.31, bm25_overall=True)
    assert validation_winner(spec, uni) == "bm25"
    assert validation_winner(spec, TrainedModel(P, val=0.29, baseline_val=0.33)) == "baseline"


def test_models_without_a_record_are_served_only_when_none_has_one():
    bare = TrainedModel(P)
    assert validation_winner(bare, None) == "trained"
    assert validation_winner(None, TrainedModel(P)) == "unified"
    assert validation_winner(bare, TrainedModel(P)) == "trained"
    assert validation_winner(bare, TrainedModel(P, val=0.3, bm25_val=0.2)) == "unified"
    assert validation_winner(bare, TrainedModel(P, val=0.1, bm25_val=0.2)) == "bm25"


def test_auto_compares_scores_from_one_validation_pool_only():
    """The local unified model's pool first, then the shipped model's, then a specialist's:
    a specialist validated on its own move's sub-pool is not ranked against them."""
    a, b, c = {"pool": "A"}, {"pool": "B"}, {"pool": "C"}
    spec = TrainedModel(P, val=0.40, baseline_val=0.2, bm25_val=0.2, pool=a)
    uni = TrainedModel(P, val=0.30, baseline_val=0.2, bm25_val=0.2, pool=b)
    assert validation_winner(spec, uni) == "unified"  # 0.40 came from another pool
    shipped_b = TrainedModel(P, val=0.31, baseline_val=0.2, bm25_val=0.2, pool=b)
    assert validation_winner(spec, uni, shipped_b) == "shipped"
    shipped_c = TrainedModel(P, val=0.50, baseline_val=0.2, bm25_val=0.2, pool=c)
    assert validation_winner(None, uni, shipped_c) == "unified"  # this run's data decides
    assert validation_winner(spec, None, shipped_c) == "shipped"
    assert validation_winner(None, None, shipped_c) == "shipped"
    # never a model that lost to BM25 or its base on that pool
    lost = TrainedModel(P, val=0.15, baseline_val=0.1, bm25_val=0.2, pool=c)
    assert validation_winner(None, None, lost) == "bm25"
    lost_to_base = TrainedModel(P, val=0.15, baseline_val=0.25, bm25_val=0.1, pool=c)
    assert validation_winner(None, None, lost_to_base) == "baseline"
