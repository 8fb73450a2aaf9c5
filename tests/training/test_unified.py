"""The unified relation-conditioned model: trained on all relations, compared on test."""

from __future__ import annotations

import json

from ratio.core.config import SystemConfig
from ratio.core.layout import RunDir
from ratio.core.records import RELATIONS
from ratio.evaluation.harness import evaluate_systems
from ratio.retrieval.dense import DenseRetriever
from ratio.retrieval.models import model_key
from ratio.training.data import INSTRUCTIONS
from ratio.training.unified import compare, train_unified
from ratio.training.validation import relation_metric
from tests.training.conftest import make_config, write_benchmark


def test_unified_model_trains_on_all_relations_and_compares(tmp_path, static_model):
    root = write_benchmark(
        tmp_path / "run",
        {"address": 16, "broaden": 8, "specify": 16},
        {"address": 6, "broaden": 4, "specify": 6},
    )
    cfg = make_config(root)
    sel = train_unified(cfg, progress=False)["unified"]
    res = sel["results"][0]
    assert res["n_pairs"] == 40 and res["relations"] == ["address", "broaden", "specify"]
    # selection uses the macro average over relations; per-relation scores are kept
    assert {"address_mrr@10", "broaden_mrr@10", "specify_mrr@10"} <= set(res["best"])
    assert {relation_metric(r) for r in RELATIONS} <= set(sel["bm25_val"])  # BM25 per move too
    sig = json.loads((root / "models" / "unified" / "trial-0" / "signature.json").read_text())
    assert sig["query_prefixes"] == INSTRUCTIONS["short"]

    out = compare(cfg, out=tmp_path / "cmp")
    rows = {(r["setup"], r["relation"]): r for r in out.rows}
    assert ("generic-Baseline", "broaden") in rows
    assert rows[("generic-Unified (short)", "address")]["query_prefix"] == "address: "
    assert rows[("generic-Baseline", "address")]["query_prefix"] == "query: "
    assert rows[("BM25", "address")]["kind"] == "bm25"  # the reference row every move has
    assert {"vs_bm25_mrr@10", "vs_baseline_mrr@10"} <= set(
        rows[("generic-Unified (short)", "broaden")]
    )
    assert out.meta["skipped"] == [
        f"specialist {r}: no model at {root / 'models' / r / 'best'}"
        for r in ("specify", "address", "broaden")  # evaluate.relations order
    ]
    assert (tmp_path / "cmp" / "overlap.png").is_file()  # paper F.1 for every setup
    assert {"BM25", "generic-Baseline"} <= set(out.meta["overlap"]["address"])
    md = (tmp_path / "cmp" / "results.md").read_text()
    assert "Unified" in md and "Baseline" in md
    assert all(r["pool_size"] == 16 + 20 for r in out.rows)  # the test split's full pool


def test_compare_shares_the_embeddings_and_indexes_of_evaluate(tmp_path, static_model):
    """The cache key of a model + document prefix is what compare used when it built its own
    retrievers (``<model key>/prefix-<sha1(prefix)[:12]>``), so a pool encoded then, such as
    a full test pool, is read back, not encoded again; and a system ``[[evaluate.systems]]``
    names with the same settings lends compare its name, so both use one saved index."""
    root = write_benchmark(
        tmp_path / "run", {"address": 4}, {"address": 6, "broaden": 3, "specify": 6}
    )
    cfg = make_config(root)
    base = SystemConfig(name="base", kind="dense", model=str(static_model), prefix="generic")
    cfg.evaluate.systems = [base]
    bench = RunDir.of(cfg).benchmark.load("test")
    earlier = DenseRetriever(str(static_model), prefix="none", cache_dir=root / "embeddings")
    earlier.doc_prefix = "document: "  # compare's generic document prefix, set by hand
    earlier.index(bench.candidate_ids, bench.candidate_texts)
    docs = root / "embeddings" / model_key(static_model) / "prefix-2db4da75ebbc"
    cached = sorted(docs.iterdir())
    assert earlier.encoded == len(bench.candidate_ids) and cached

    compare(cfg, systems=("baseline",), out=tmp_path / "cmp")
    assert sorted(docs.iterdir()) == cached  # no document encoded again
    index = root / "indexes" / "base" / "test-shared" / "retriever.json"
    built = index.stat().st_mtime_ns
    evaluate_systems(cfg, write=False, progress=False)
    assert index.stat().st_mtime_ns == built  # evaluate reloaded compare's index
