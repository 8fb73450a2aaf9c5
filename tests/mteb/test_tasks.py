"""ratio.mteb: the three move tasks hold exactly the pool, queries and qrels ``ratio evaluate``
evaluates, and mteb's main score on them equals Ratio's own MRR@10 for the same model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ratio
from ratio.core.config import load_config
from ratio.core.layout import RunDir
from ratio.core.records import RELATIONS
from ratio.evaluation.harness import evaluate_systems, sub_pool_ids
from tests.conftest import MODELS, NEURIPS
from tests.serve.tinyrun import write_tiny_run

STATIC = MODELS / "potion-mpnet-256"
SUB = {"max_pool": 60, "max_queries": 8}  # a seeded sub-pool smaller than the tiny pool (180)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A tiny real run (3 NeurIPS 2025 papers in ``test``: 180 candidates, 45 queries a move)."""
    if not NEURIPS.is_dir():
        pytest.skip(f"shared corpus not found at {NEURIPS}")
    return write_tiny_run(tmp_path_factory.mktemp("mteb") / "run")


@pytest.fixture(scope="module")
def config(run) -> Path:
    """Ratio's evaluation of the static model on the full pool and on the seeded sub-pool."""
    cfg = run.parent / "config.toml"
    cfg.write_text(
        f'[build]\nout = "run"\nseed = 13\n\n[evaluate]\nsplit = "test"\nks = [1, 10, 100]\n'
        f'relations = ["address", "broaden", "specify"]\n\n'
        f'[[evaluate.systems]]\nname = "static"\nkind = "dense"\nmodel = "{STATIC}"\n\n'
        f'[[evaluate.systems]]\nname = "static-sub"\nkind = "dense"\nmodel = "{STATIC}"\n'
        f"max_pool = {SUB['max_pool']}\nmax_queries = {SUB['max_queries']}\n",
        encoding="utf-8",
    )
    return cfg


def test_importing_needs_no_mteb_and_tasks_names_the_extra(run):
    code = (
        "import sys\n"
        "sys.modules['mteb'] = None  # as if mteb were not installed\n"
        "import ratio.mteb\n"
        "try:\n"
        f"    ratio.mteb.tasks({str(run)!r})\n"
        "except ratio.mteb.MtebMissingError as e:\n"
        "    print('missing:', e)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(ratio.__file__).parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "missing:" in out.stdout and "ratio-ir[mteb]" in out.stdout


def test_tasks_hold_the_benchmarks_pool_queries_and_qrels(run):
    pytest.importorskip("mteb")
    from mteb import TaskMetadata

    from ratio.mteb import tasks

    bench = RunDir(run).benchmark.load("test")
    found = tasks(run)
    assert [t.metadata.name for t in found] == ["RatioAddress", "RatioBroaden", "RatioSpecify"]
    for task, rel in zip(found, RELATIONS, strict=True):
        md = TaskMetadata.model_validate(task.metadata.model_dump())  # pydantic validation
        assert md.type == "Retrieval" and md.main_score == "mrr_at_10"
        assert md.eval_splits == ["test"] and md.eval_langs == ["eng-Latn"]
        assert md.dataset["path"] == str(bench.directory)
        assert "Typed Ideation Operations" in md.description and md.bibtex_citation
        task.load_data()
        data = task.dataset["default"]["test"]
        qids, texts = bench.relation_queries(rel)
        assert len(data["corpus"]) == len(bench.candidate_ids) == 180
        assert data["corpus"]["id"] == bench.candidate_ids
        assert data["corpus"]["text"] == bench.candidate_texts
        assert len(data["queries"]) == len(qids) == 45
        assert data["queries"]["id"] == qids and data["queries"]["text"] == texts
        assert data["relevant_docs"] == bench.qrels_dict(qids)
        assert sum(len(d) for d in data["relevant_docs"].values()) == len(qids)

    # a sub-pool is the harness's seeded one (the service serves the same), shared by all moves
    sub = tasks(run, **SUB)
    assert [t.metadata.name for t in sub][0] == "RatioAddress-max60-q8-seed13"
    want = sub_pool_ids(bench, RELATIONS, SUB["max_pool"], SUB["max_queries"], 13)
    for task, rel in zip(sub, RELATIONS, strict=True):
        assert task.data.corpus_ids == want and len(want) == SUB["max_pool"]
        assert task.data.query_ids == bench.relation_queries(rel, SUB["max_queries"], 13)[0]
        assert len(task.data.query_ids) == SUB["max_queries"]


@pytest.mark.slow
@pytest.mark.skipif(not STATIC.is_dir(), reason=f"model potion-mpnet-256 not found under {MODELS}")
def test_mteb_main_score_equals_ratios_mrr_at_10(config):
    mteb = pytest.importorskip("mteb")
    from sentence_transformers import SentenceTransformer

    from ratio.mteb import tasks

    ratio_res = evaluate_systems(load_config(config), write=False, progress=False)
    # the model author's path: the same model folder through sentence-transformers
    # (StaticEmbedding), not Ratio's model2vec encoder
    model = SentenceTransformer(str(STATIC), device="cpu", local_files_only=True)
    for system, caps in (("static", {}), ("static-sub", SUB)):
        found = tasks(config, **caps)  # the config's seed, as the harness uses
        result = mteb.evaluate(model, found, cache=None, show_progress_bar=False)
        for task, res in zip(found, result.task_results, strict=True):
            rel = task.data.relation
            row = next(r for r in ratio_res.rows if r["system"] == system and r["relation"] == rel)
            scores = res.scores["test"][0]
            assert row["pool_size"] == len(task.data.corpus_ids)
            assert row["n_queries"] == len(task.data.query_ids)
            assert scores["main_score"] == scores["mrr_at_10"] > 0
            assert scores["main_score"] == pytest.approx(row["metrics"]["mrr@10"], abs=1e-6)
