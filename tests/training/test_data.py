"""Pairs, validation sub-pools and BM25 hard negatives from a benchmark in the real schemas."""

from __future__ import annotations

from ratio.run import RunDir
from ratio.training.data import (
    mine_hard_negatives,
    training_pairs,
    validation_set,
)
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
