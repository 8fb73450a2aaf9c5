from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ratio.core import schemas
from ratio.core.config import RunConfig
from ratio.core.layout import (
    Benchmark,
    BenchmarkError,
    RunDir,
    candidate_id,
    candidate_id_sql,
    query_id,
    query_id_sql,
)

TEXTS = ["we propose linear attention", "für alle ε > 0", "", "a" * 500]


def test_ids_are_pinned_content_hashes():
    # the ids written into every built benchmark: changing them orphans every run on disk
    assert candidate_id("we propose linear attention") == "ca988e6240d35b4f2"
    assert query_id("address", "transformers scale", "we propose linear attention") == (
        "qedabff71c3f3f6ab"
    )


def test_sql_ids_equal_python_ids():
    con = duckdb.connect()
    for m in TEXTS:
        got = con.execute(f"SELECT {candidate_id_sql('?')}", [m]).fetchone()[0]
        assert got == candidate_id(m)
        got = con.execute(
            f"SELECT {query_id_sql('?', '?', '?')}", ["specify", m, "gold"]
        ).fetchone()
        assert got[0] == query_id("specify", m, "gold")


def test_layout_matches_docs(tmp_path):
    run = RunDir(tmp_path)
    rel = {
        "ingest sentences": run.ingest.sentence_shard("s0"),
        "ingest raw marker": run.ingest.raw_done("s0"),
        "boilerplate": run.ingest.boilerplate,
        "mine": run.mine_shard("s0"),
        "mine marker": run.mine_done("s0"),
        "dedup": run.dedup_pairs,
        "dedup manifest": run.manifest("dedup"),
        "split manifest": run.manifest("split"),
        "test pool": run.benchmark.split("test").candidates,
        "held": run.benchmark.split("test").held_queries,
        "silver judgments": run.benchmark.silver.judgments,
        "dataset": run.benchmark.dataset,
        "export": run.export_beir,
        "export manifest": run.manifest("export"),
        "reports manifest": run.manifest("reports"),
        "embeddings": run.embeddings,
        "index": run.index("bm25", "test-shared"),
        "eval": run.eval("test"),
        "serve pool": run.serve_pool("benchmark-all").pool_file,
        "judge cache": run.judge.cache,
        "models": run.models.best("address"),
    }
    assert {k: str(p.relative_to(tmp_path)) for k, p in rel.items()} == {
        "ingest sentences": "ingest/sentences/s0.parquet",
        "ingest raw marker": "ingest/raw/s0.done.json",
        "boilerplate": "ingest/boilerplate.parquet",
        "mine": "mine/s0.parquet",
        "mine marker": "mine/s0.done.json",
        "dedup": "dedup/pairs.parquet",
        "dedup manifest": "dedup/manifest.json",
        "split manifest": "benchmark/manifest.json",
        "test pool": "benchmark/test/candidates.parquet",
        "held": "benchmark/test/pending_queries.parquet",
        "silver judgments": "benchmark/silver/judgments.parquet",
        "dataset": "benchmark/dataset",
        "export": "export/beir",
        "export manifest": "export/beir/manifest.json",
        "reports manifest": "reports/manifest.json",
        "embeddings": "embeddings",
        "index": "indexes/bm25/test-shared",
        "eval": "eval/test",
        "serve pool": "serve/benchmark-all/pool.arrow",
        "judge cache": "judge/cache.sqlite",
        "models": "models/address/best",
    }


def test_config_overrides(tmp_path):
    cfg = RunConfig(base_dir=str(tmp_path))
    cfg.build.out = "run"
    cfg.train.base_model = "models/all-MiniLM-L6-v2"
    cfg.train.prefix = "generic"
    run = RunDir.of(cfg)
    assert run.root == tmp_path / "run"
    assert run.trained.root == tmp_path / "run" / "models" / "all-MiniLM-L6-v2-generic"
    assert run.judge.root == tmp_path / "run" / "judge"
    assert run.eval("validation") == tmp_path / "run" / "eval" / "validation"
    cfg.train.out = "trained"
    cfg.judge.out = "j"
    cfg.judge.cache = "cache.sqlite"
    cfg.evaluate.out = "ev"
    run = RunDir.of(cfg)
    assert run.trained.best("unified") == tmp_path / "trained" / "unified" / "best"
    assert run.judge.topk("address") == tmp_path / "j" / "topk" / "address"
    assert run.judge.cache == tmp_path / "cache.sqlite"
    assert run.eval("test") == tmp_path / "ev"


def _write_split(run: RunDir, split: str = "test", dup: bool = False) -> None:
    d = run.benchmark.split(split)
    d.root.mkdir(parents=True)
    gold = candidate_id("gold")
    cands = [gold, candidate_id("other")] + ([gold] if dup else [])
    texts = ["gold", "other", "gold"][: len(cands)]
    origins = ["pair", "distractor", "pair"][: len(cands)]
    pq.write_table(
        pa.table({"candidate_id": cands, "text": texts, "origin": origins}), d.candidates
    )
    q = query_id("address", "query", "gold")
    queries = pa.table(
        {
            "query_id": [q],
            "text": ["Query"],
            "relation": ["address"],
            "marker": ["to address this"],
            "paper_id": ["p"],
            "year": pa.array([2024], pa.int16()),
            "section_category": ["method"],
            "gold_id": [gold],
        },
        schema=schemas.QUERIES,
    )
    pq.write_table(queries, d.queries)
    pq.write_table(
        pa.table(
            {"query_id": [q], "candidate_id": [gold], "relevance": pa.array([1], pa.int8())},
            schema=schemas.QRELS,
        ),
        d.qrels,
    )
    held = queries.set_column(0, "query_id", pa.array(["qheld"])).set_column(
        2, "relation", pa.array(["broaden"])
    )
    pq.write_table(held, d.held_queries)


def test_benchmark_load_and_held_queries(tmp_path):
    run = RunDir(tmp_path)
    _write_split(run)
    bench = run.benchmark.load("test")
    assert isinstance(bench, Benchmark)
    assert bench.split == "test" and bench.directory == run.benchmark.split("test").root
    assert bench.candidate_texts == ["gold", "other"]
    qids, texts = bench.relation_queries("address")
    assert texts == ["Query"]
    assert bench.qrels_dict(qids) == {qids[0]: {candidate_id("gold"): 1}}
    full = bench.with_held_queries()
    assert full.queries["query_id"].to_pylist() == [qids[0], "qheld"]
    assert full.qrels_dict(["qheld"]) == {"qheld": {candidate_id("gold"): 1}}
    # "test+held" is the same view by name, for `ratio evaluate` and `train-compare`
    raw = run.benchmark.load("test+held")
    assert raw.relation_queries("broaden") == (["qheld"], ["Query"])
    assert raw.candidate_ids == bench.candidate_ids


def test_benchmark_errors(tmp_path):
    run = RunDir(tmp_path)
    with pytest.raises(BenchmarkError, match="benchmark/test/queries.parquet"):
        run.benchmark.load("test")
    _write_split(run, dup=True)
    with pytest.raises(BenchmarkError, match="duplicate candidate_id"):
        run.benchmark.load("test")
