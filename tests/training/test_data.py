"""Pairs, validation sub-pools and BM25 hard negatives from a benchmark in the real schemas."""

from __future__ import annotations

import pytest

from ratio.core.layout import RunDir
from ratio.training.data import (
    TrainingError,
    mine_hard_negatives,
    training_pairs,
    validation_set,
)
from ratio.training.train import make_plans
from tests.training.conftest import make_config, write_benchmark


def test_pairs_prefixes_sampling_and_hard_negatives(tmp_path):
    root = write_benchmark(tmp_path / "run", {"address": 20, "specify": 10}, {"address": 5})
    bench = RunDir.of(make_config(root)).benchmark.load("train")
    pairs = training_pairs(
        bench, ["address"], query_prefixes={"address": "query: "}, doc_prefix="document: "
    )
    assert len(pairs) == 20
    cols = pairs.columns()
    assert cols["anchor"][0].startswith("query: Training ")
    assert cols["positive"][0].startswith("document: To fix this")
    sample = training_pairs(
        bench, ["address"], query_prefixes={"address": ""}, doc_prefix="", max_pairs=6, seed=1
    )
    again = training_pairs(
        bench, ["address"], query_prefixes={"address": ""}, doc_prefix="", max_pairs=6, seed=1
    )
    assert len(sample) == 6 and sample.anchors == again.anchors  # seeded
    hard = mine_hard_negatives(bench, pairs, k=3, seed=0)
    ds = hard.to_dataset()
    assert ds.column_names == ["anchor", "positive", "negative"]
    pool = set(bench.candidate_texts)
    for pos, neg in zip(hard.positives, hard.negatives, strict=True):
        assert neg != pos and neg in pool


def test_validation_sub_pool_holds_every_gold_plus_n_others(tmp_path):
    root = write_benchmark(tmp_path / "run", {"address": 4}, {"address": 12, "specify": 6})
    bench = RunDir.of(make_config(root)).benchmark.load("validation")
    vs = validation_set(
        bench, ["address"], query_prefixes={"address": "q: "}, doc_prefix="d: ", pool_size=7
    )
    golds = {g for d in vs.qrels.values() for g in d}
    assert len(vs.query_ids) == 12 and golds <= set(vs.pool_ids)
    assert len(vs.pool_ids) == 12 + 7
    assert all(t.startswith("d: ") for t in vs.pool_texts)
    capped = validation_set(
        bench,
        ["address"],
        query_prefixes={"address": ""},
        doc_prefix="",
        pool_size=0,
        max_queries=5,
    )
    assert len(capped.query_ids) == 5 and len(capped.pool_ids) == 5


def test_validation_papers_beyond_the_held_out_share_are_training_pairs(tmp_path):
    """train.validation_train_share: part of the validation papers' pairs join training,
    the other papers alone validate; no paper is on both sides."""
    root = write_benchmark(tmp_path / "run", {"address": 10}, {"address": 21, "specify": 14})
    bench = RunDir.of(make_config(root)).benchmark
    fit, held = bench.load("validation").paper_split(0.6, seed=13)
    fit_papers = set(fit.queries["paper_id"].to_pylist()) | set(
        fit.candidates["paper_id"].to_pylist()
    )
    held_papers = set(held.queries["paper_id"].to_pylist())
    assert fit_papers and held_papers and not fit_papers & held_papers
    assert set(held.candidates["paper_id"].to_pylist()) == held_papers
    assert fit.queries.num_rows + held.queries.num_rows == 35
    assert set(held.qrels["query_id"].to_pylist()) == set(held.queries["query_id"].to_pylist())
    again, _ = bench.load("validation").paper_split(0.6, seed=13)
    assert again.queries.equals(fit.queries)  # seeded
    prefs = {"address": "", "specify": ""}
    pairs = training_pairs(
        [bench.load("train"), fit], ["address", "specify"], query_prefixes=prefs, doc_prefix=""
    )
    assert len(pairs) == 10 + fit.queries.num_rows
    vs = validation_set(held, ["address"], query_prefixes=prefs, doc_prefix="", pool_size=100)
    assert set(vs.pool_ids) <= set(held.candidate_ids)


def test_make_plans_trains_on_part_of_validation(tmp_path, static_model):
    root = write_benchmark(tmp_path / "run", {"address": 10}, {"address": 21})
    plain = make_plans(make_config(root), "address")[0]
    shared = make_plans(make_config(root, validation_train_share=0.6), "address")[0]
    assert len(plain.pairs) == 10 and len(plain.valset.query_ids) == 21
    assert len(shared.pairs) + len(shared.valset.query_ids) == 31
    assert 10 < len(shared.pairs) < 31
    with pytest.raises(TrainingError, match="validation_train_share"):
        make_plans(make_config(root, validation_train_share=1.0), "address")
