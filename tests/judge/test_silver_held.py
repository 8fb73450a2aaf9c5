"""Test queries held for validation (needs_validation markers) enter the silver set only."""

from __future__ import annotations

import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.core.io import write_parquet_atomic
from ratio.core.layout import RunDir
from ratio.judge.silver import build_silver
from tests.judge.test_pipeline import _judge


def test_held_queries_are_judged_and_kept_into_silver(bench_config, fake_openai):
    bench = RunDir.of(bench_config).benchmark
    test_dir = bench.split("test")
    queries = pq.read_table(test_dir.queries)
    qrels = pq.read_table(test_dir.qrels)
    held = pc.equal(queries["relation"], "broaden")
    held_ids = queries.filter(held)["query_id"]
    # what the split writes when the Broaden marker is in the needs_validation tier
    write_parquet_atomic(test_dir.held_queries, queries.filter(held))
    write_parquet_atomic(test_dir.queries, queries.filter(pc.invert(held)))
    write_parquet_atomic(
        test_dir.qrels,
        qrels.filter(pc.invert(pc.is_in(qrels["query_id"], held_ids))),
    )
    assert "broaden" not in bench.load("test").queries["relation"].to_pylist()

    res = build_silver(bench_config, _judge(bench_config, fake_openai))
    assert res.report["relations"]["broaden"]["available"] == 2
    assert res.kept["broaden"] == ["qb1"]
    silver = bench.load("silver")
    qrels = silver.qrels.to_pylist()
    kept = {r["query_id"]: r["candidate_id"] for r in qrels}
    assert kept["qb1"] == "cb1" and "qb2" not in kept
    assert "qb1" in silver.queries["query_id"].to_pylist()
