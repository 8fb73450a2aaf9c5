"""The search engine over a tiny real benchmark: pool, context, filters, persistence, moves."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from ratio.core.config import load_config
from ratio.core.layout import UNIFIED, RunDir
from ratio.evaluation.harness import make_pool, sampled_queries
from ratio.serve.engine import (
    MOVES,
    SearchEngine,
    ServeError,
    UnknownRetrieverError,
)
from ratio.serve.trained import find_trained
from ratio.training.train import TRAINING_META
from ratio.training.validation import relation_metric
from tests.serve.conftest import STATIC_MODEL
from tests.serve.tinyrun import MODELS


def _sentences(cfg):
    return pq.read_table(sorted((cfg.parent / "run" / "ingest" / "sentences").glob("*.parquet")))


def _candidates(cfg, split=None):
    files = sorted((cfg.parent / "run" / "benchmark").glob(f"{split or '*'}/candidates.parquet"))
    return pq.read_table(files)


def test_pool_joins_papers_and_neighbouring_sentences(engine, tiny_config):
    cands = _candidates(tiny_config)
    assert engine.pool.n == cands.num_rows
    sents = _sentences(tiny_config).to_pylist()
    by_key = {(s["paper_id"], s["paragraph_idx"], s["sentence_idx"]): s for s in sents}
    papers = pq.read_table(sorted((tiny_config.parent / "run/ingest/papers").glob("*.parquet")))
    titles = dict(zip(papers["paper_id"].to_pylist(), papers["title"].to_pylist(), strict=True))
    rows = engine.pool.rows(list(range(engine.pool.n)))
    with_prev = with_next = 0
    for row in rows:
        key = (row["paper_id"], row["paragraph_idx"], row["sentence_idx"])
        prev = by_key.get((key[0], key[1], key[2] - 1))
        nxt = by_key.get((key[0], key[1], key[2] + 1))
        assert row["prev"] == (prev["text"] if prev else None)
        assert row["next"] == (nxt["text"] if nxt else None)
        assert row["section"] == by_key[key]["section"]
        assert row["title"] == titles[row["paper_id"]]
        assert row["venue"] == "NeurIPS"
        with_prev += prev is not None
        with_next += nxt is not None
    assert with_prev > 50 and with_next > 50  # the fixture keeps neighbours in the shards


def test_id_lookup_maps_every_candidate_to_its_row(engine):
    ids = engine.pool.column("candidate_id").to_pylist()
    assert engine.pool.rows_of(ids).tolist() == list(range(len(ids)))
    assert engine.pool.rows_of(["c_not_there", ids[3]]).tolist() == [-1, 3]


def test_exact_sentence_ranks_first_with_provenance(engine):
    row = engine.pool.rows([7])[0]
    res = engine.search(row["text"], "address", 5)
    top = res["results"][0]
    assert top["candidate_id"] == row["candidate_id"]
    assert top["title"] == row["title"] and top["year"] == row["year"]
    assert top["context"] == {"prev": row["prev"], "next": row["next"]}
    assert res["retriever"] == "bm25" and top["retriever"] == "bm25"
    assert [h["rank"] for h in res["results"]] == list(range(1, len(res["results"]) + 1))
    scores = [h["score"] for h in res["results"]]
    assert scores == sorted(scores, reverse=True)
    assert "not specific" in res["note"]  # no trained model in this run


def test_filters_exclude_paper_years_and_venue(engine):
    row = engine.pool.rows([7])[0]
    q = row["text"]
    res = engine.search(q, "broaden", 10, exclude_paper=row["paper_id"])
    assert res["results"] and all(h["paper_id"] != row["paper_id"] for h in res["results"])
    # the year filter must still fill k: the engine over-fetches past filtered-out hits
    old = engine.search(q, "broaden", 20, year_max=2023)["results"]
    assert len(old) == 20 and {h["year"] for h in old} == {2023}
    new = engine.search(q, "broaden", 5, year_min=2024, year_max=2030)["results"]
    assert new and {h["year"] for h in new} == {2025}
    assert engine.search(q, "specify", 5, venue="neurips")["results"]  # case-insensitive
    assert engine.search(q, "specify", 5, venue="ICML")["results"] == []
    empty = engine.search(q, "specify", 5, year_min=2025, year_max=2020)
    assert empty["results"] == [] and "no year matches" in empty["note"]


def test_bad_requests_raise_clear_errors(engine):
    with pytest.raises(ServeError, match="empty"):
        engine.search("  \n ", "address")
    with pytest.raises(ServeError, match="unknown move"):
        engine.search("x", "zoom")
    with pytest.raises(ServeError, match="between 1 and 100"):
        engine.search("x", "address", 0)
    with pytest.raises(ServeError, match="10,000"):
        engine.search("x" * 10_001, "address")
    with pytest.raises(UnknownRetrieverError, match="known: auto, bm25"):
        engine.search("x", "address", retriever="nope")
    with pytest.raises(UnknownRetrieverError, match="no trained model"):
        engine.search("x", "address", retriever="trained")


def test_dense_and_hybrid_rank_the_exact_sentence_first(engine):
    row = engine.pool.rows([11])[0]
    for name in ("dense", "hybrid", "static"):
        res = engine.search(row["text"], "specify", 5, retriever=name)
        assert res["retriever"] == name
        assert res["results"][0]["candidate_id"] == row["candidate_id"], name


def test_moves_returns_all_three(engine):
    out = engine.moves("one-run privacy auditing of machine learning", k=3)
    assert list(out["moves"]) == list(MOVES)
    assert all(len(r["results"]) == 3 for r in out["moves"].values())


def test_moves_ranks_once_with_a_move_agnostic_retriever(engine, monkeypatch):
    calls: list[str] = []
    rank = engine.store.rank

    def counted(name, *args, **kwargs):
        calls.append(name)
        return rank(name, *args, **kwargs)

    monkeypatch.setattr(engine.store, "rank", counted)
    query = "one-run privacy auditing of machine learning"
    out = engine.moves(query, k=3, retriever="bm25")
    assert calls == ["bm25"]  # one ranking serves the three moves
    first = [h["candidate_id"] for h in out["moves"]["address"]["results"]]
    assert all([h["candidate_id"] for h in r["results"]] == first for r in out["moves"].values())
    assert first == [
        h["candidate_id"] for h in engine.search(query, "specify", 3, "bm25")["results"]
    ]


def test_concurrent_searches_match_sequential(engine):
    queries = [r["text"] for r in engine.pool.rows(list(range(0, 120, 6)))]
    want = [[h["candidate_id"] for h in engine.search(q, "address", 5)["results"]] for q in queries]
    with ThreadPoolExecutor(8) as ex:
        got = list(
            ex.map(
                lambda q: [h["candidate_id"] for h in engine.search(q, "address", 5)["results"]],
                queries,
            )
        )
    assert got == want


def test_split_pool_and_sentence_collection(tiny_config):
    test_only = SearchEngine.open(tiny_config, split="test")
    assert test_only.pool.n == _candidates(tiny_config, "test").num_rows
    hits = test_only.search("privacy auditing", "address", 10)["results"]
    assert hits and {h["year"] for h in hits} == {2025}
    with pytest.raises(ServeError, match="splits with a pool: test, train"):
        SearchEngine.open(tiny_config, split="validation")

    sents = SearchEngine.open(tiny_config, source="sentences")
    n_unique = len(set(_sentences(tiny_config)["match"].to_pylist()))
    assert sents.pool.n == n_unique
    row = sents.pool.rows([40])[0]
    top = sents.search(row["text"], "specify", 1)["results"][0]
    assert top["candidate_id"] == row["candidate_id"] and top["section"] is not None


def test_a_collection_of_one_years_sentences_of_chosen_sections(tiny_config):
    """``[serve] years`` / ``sections`` narrow the ingested collection; the pool keeps its
    neighbours' context and its own folder, and an empty choice is an error naming the field."""
    sents = _sentences(tiny_config)
    in_2025 = sents.filter(pc.equal(sents["year"], 2025))
    top = Counter(in_2025["section_category"].to_pylist()).most_common(1)[0][0]
    over = {"serve.source": "sentences", "serve.years": [2025], "serve.sections": [top]}
    eng = SearchEngine.open(load_config(tiny_config, over))
    chosen = in_2025.filter(pc.equal(in_2025["section_category"], top))
    assert eng.pool.n == len(set(chosen["match"].to_pylist()))
    assert eng.pool.key == f"sentences-2025-{top}"
    assert set(eng.pool.column("year").to_pylist()) == {2025}
    assert set(eng.pool.column("section_category").to_pylist()) == {top}
    assert any(eng.pool.column("prev").to_pylist())  # neighbours from any section
    with pytest.raises(ServeError, match=r"has no sentences.*years = \[1999\]"):
        SearchEngine.open(load_config(tiny_config, {**over, "serve.years": [1999]}))
    with pytest.raises(ServeError, match='use them with source = "sentences"'):
        SearchEngine.open(load_config(tiny_config, {"serve.years": [2025]}))


def test_a_split_sub_pool_is_the_one_the_evaluation_searches(tiny_config):
    """``[serve] max_pool`` / ``max_queries`` serve the seeded sub-pool an ``[evaluate]``
    system with the same caps is scored on, so the service reuses the evaluation's vectors."""
    over = {"serve.split": "test", "serve.max_pool": 25, "serve.max_queries": 2}
    cfg = load_config(tiny_config, over)
    eng = SearchEngine.open(cfg)
    bench = RunDir.of(cfg).benchmark.load("test")
    queries = sampled_queries(bench, cfg.evaluate.relations, 2, cfg.build.seed)
    golds = set().union(*(g for *_, g in queries.values()))
    evaluated = make_pool(
        bench, relation=None, oracle="none", golds=golds, max_pool=25, seed=cfg.build.seed
    )
    assert len(evaluated.ids) == 25 < bench.candidates.num_rows
    assert sorted(eng.pool.ids) == sorted(evaluated.ids)
    assert golds <= set(eng.pool.ids)
    assert eng.pool.key == f"benchmark-test-max25-q2-seed{cfg.build.seed}"
    with pytest.raises(ServeError, match="max_pool / max_queries take a seeded sub-pool"):
        SearchEngine.open(load_config(tiny_config, {**over, "serve.source": "sentences"}))
    with pytest.raises(ServeError, match="must be >= 0"):
        SearchEngine.open(load_config(tiny_config, {**over, "serve.max_pool": -1}))


def test_indexes_persist_and_pool_rebuilds_when_inputs_change(tmp_path, tiny_config):
    cfg_dir = tmp_path / "copy"
    shutil.copytree(tiny_config.parent, cfg_dir, ignore=shutil.ignore_patterns("serve"))
    cfg = cfg_dir / "config.toml"
    first = SearchEngine.open(cfg, split="train", warm=["bm25"])
    idx = first.pool.dir
    saved = sorted((idx / "retrievers").iterdir())
    assert len(saved) == 1 and (saved[0] / "retriever.json").is_file()
    stamp = (
        (idx / "pool.arrow").stat().st_mtime_ns,
        (saved[0] / "retriever.json").stat().st_mtime_ns,
    )

    again = SearchEngine.open(cfg, split="train", warm=["bm25"])  # reuses both, rebuilds nothing
    assert stamp == (
        (idx / "pool.arrow").stat().st_mtime_ns,
        (saved[0] / "retriever.json").stat().st_mtime_ns,
    )
    assert again.pool.fingerprint == first.pool.fingerprint

    # a rebuilt benchmark (fewer candidates) invalidates the pool and its indexes
    cand_file = cfg_dir / "run/benchmark/train/candidates.parquet"
    t = pq.read_table(cand_file)
    pq.write_table(t.slice(0, 50), cand_file)
    os.utime(cand_file, ns=(stamp[0] + 10**9, stamp[0] + 10**9))
    fresh = SearchEngine.open(cfg, split="train")
    assert fresh.pool.n == 50 and fresh.pool.fingerprint != first.pool.fingerprint
    hits = fresh.search(t["text"][3].as_py(), "address", 100)["results"]
    assert len(hits) <= 50 and hits[0]["candidate_id"] == t["candidate_id"][3].as_py()


@pytest.mark.slow
def test_trained_model_is_each_moves_default(tmp_path, tiny_config):
    """A sentence-transformers folder at <out>/models/<move>/best becomes that move's default."""
    model = MODELS / "all-MiniLM-L6-v2"
    if not model.is_dir():
        pytest.skip(f"{model} not found")
    cfg_dir = tmp_path / "trained"
    shutil.copytree(tiny_config.parent, cfg_dir, ignore=shutil.ignore_patterns("serve"))
    (cfg_dir / "run/models/address").mkdir(parents=True)
    (cfg_dir / "run/models/address/best").symlink_to(model, target_is_directory=True)
    small = cfg_dir / "run/benchmark/small/candidates.parquet"  # encoding stays quick on CPU
    small.parent.mkdir()
    pq.write_table(_candidates(tiny_config, "test").slice(0, 40), small)
    eng = SearchEngine.open(cfg_dir / "config.toml", split="small")
    assert eng.info()["per_move"] == {"address": "trained", "broaden": "bm25", "specify": "bm25"}
    row = eng.pool.rows([4])[0]
    res = eng.search(row["text"], "address", 3)
    assert res["retriever"] == "trained" and res["note"] is None
    assert res["results"][0]["candidate_id"] == row["candidate_id"]
    assert eng.search(row["text"], "broaden", 3)["retriever"] == "bm25"
    hyb = eng.search(row["text"], "address", 3, retriever="hybrid")
    assert hyb["retriever"] == "hybrid" and hyb["note"] is None  # fuses BM25 with the trained model
    with pytest.raises(UnknownRetrieverError, match="trained moves: address"):
        eng.search("x", "specify", retriever="trained")


def test_training_layout_prefix_and_a_model_worse_than_baseline(tmp_path, tiny_config):
    """<train.out>/<move>/best with the training stage's records: the prefix setup is read
    from ratio_training.json; a model that lost to its baseline is not the ``auto`` choice."""
    cfg_dir = tmp_path / "layout"
    shutil.copytree(tiny_config.parent, cfg_dir, ignore=shutil.ignore_patterns("serve"))
    root = cfg_dir / "run/models/all-MiniLM-L6-v2-generic"  # train.out's default for this config
    scores = {
        "specify": (0.05, 0.08, None),
        "broaden": (0.2, 0.1, 0.15),
        "address": (0.3, 0.1, 0.4),
    }
    for move, (tuned, base, bm25) in scores.items():
        _specialist(root, move, tuned, base, bm25)
    found = find_trained(load_config(cfg_dir / "config.toml"))
    assert sorted(found) == ["address", "broaden", "specify"]
    assert found["specify"].worse_than_baseline and not found["broaden"].worse_than_baseline
    assert found["address"].worse_than_baseline  # beat its base model but not BM25
    assert found["broaden"].prefix == "generic"  # train.prefix (no ratio_training.json here)

    eng = SearchEngine.open(cfg_dir / "config.toml", split="test")
    assert eng.info()["per_move"] == {"address": "bm25", "broaden": "trained", "specify": "bm25"}
    row = eng.pool.rows([2])[0]
    assert eng.search(row["text"], "specify", 3, retriever="trained")["retriever"] == "trained"
    res = eng.search(row["text"], "broaden", 3)
    assert (
        res["retriever"] == "trained" and res["results"][0]["candidate_id"] == row["candidate_id"]
    )


def _specialist(root, move, tuned, base, bm25):
    """A specialist as training leaves it: ``<move>/best`` (here the static model) and the
    selection record with the validation MRR@10 of the tuned model, its base and BM25."""
    (root / move).mkdir(parents=True)
    (root / move / "best").symlink_to(MODELS / STATIC_MODEL, target_is_directory=True)
    sel = {
        "selected_trial": 0,
        "bm25_val_mrr@10": bm25,
        "trials": [{"trial": 0, "val_mrr@10": tuned, "baseline_val_mrr@10": base}],
    }
    (root / move / "selection.json").write_text(json.dumps(sel))


def _unified(root, tuned, base, bm25):
    """The unified model as training leaves it: ``unified/best`` linked to the selected trial
    (here a copy of the static model), its training record with per-move validation MRR@10
    of the tuned model and its base and the instructions, and selection.json with BM25's
    (``bm25``: per move, or one number when only the average over moves was recorded)."""
    best = root / UNIFIED / "trial-0" / "best"
    shutil.copytree(MODELS / STATIC_MODEL, best)
    (root / UNIFIED / "best").symlink_to("trial-0/best", target_is_directory=True)
    record = {
        "signature": {
            "base_model": str(MODELS / STATIC_MODEL),
            "prefix": "generic",
            "query_prefixes": {m: f"{m}: " for m in MOVES},
        },
        "best": {relation_metric(m): v for m, v in tuned.items()},
        "baseline": {relation_metric(m): v for m, v in base.items()},
    }
    (best / TRAINING_META).write_text(json.dumps(record))
    per_move = isinstance(bm25, dict)
    sel = {
        "selected_trial": 0,
        "bm25_val_mrr@10": sum(bm25.values()) / len(bm25) if per_move else bm25,
        **({"bm25_val": {relation_metric(m): v for m, v in bm25.items()}} if per_move else {}),
    }
    (root / UNIFIED / "selection.json").write_text(json.dumps(sel))


def test_auto_serves_the_unified_model_where_it_wins_on_validation(tmp_path, tiny_config):
    """Per move, ``auto`` serves whichever of BM25, the base model, the move's specialist and
    the unified model won on validation; the unified model serves from one pool index, each
    move's query read with that move's instruction."""
    cfg_dir = tmp_path / "unified"
    shutil.copytree(tiny_config.parent, cfg_dir, ignore=shutil.ignore_patterns("serve"))
    root = cfg_dir / "run/models/all-MiniLM-L6-v2-generic"
    # the NeurIPS run's shape: unified best on Specify, the specialist on Broaden; on
    # Address both lose to BM25 on the unified model's own (per-move) BM25 record
    _specialist(root, "specify", 0.36, 0.29, 0.28)
    _specialist(root, "broaden", 0.303, 0.274, 0.233)
    _specialist(root, "address", 0.20, 0.19, 0.18)
    _unified(
        root,
        tuned={"specify": 0.41, "broaden": 0.299, "address": 0.21},
        base={"specify": 0.29, "broaden": 0.248, "address": 0.2},
        bm25={"specify": 0.25, "broaden": 0.22, "address": 0.25},
    )
    eng = SearchEngine.open(cfg_dir / "config.toml", split="test", warm=["auto", "unified"])
    info = eng.info()
    assert info["per_move"] == {"address": "bm25", "broaden": "trained", "specify": "unified"}
    assert "unified" in info["retrievers"] and info["unified"]["specify"]["instruction"] == (
        "specify: "
    )
    assert info["validation_mrr@10"]["address"] == {
        "bm25": 0.25,  # the better of the two BM25 records (0.18 next to the specialist)
        "baseline": 0.2,
        "shipped": None,  # this tiny run's config serves none
        "unified": 0.21,
        "trained": 0.2,
    }

    seen: list[str] = []
    query = eng.pool.rows([2])[0]["text"]
    res = eng.search(query, "specify", 5)
    assert res["retriever"] == "unified" and res["note"] is None  # move-specific
    encoder = eng.store.retriever("unified", eng.pool).retriever.encoder
    encode = encoder.encode
    encoder.encode = lambda texts: seen.extend(texts) or encode(texts)
    spec = eng.search(query, "specify", 5)
    addr = eng.search(query, "address", 5, retriever="unified")  # explicit, not auto's choice
    assert addr["retriever"] == "unified" and addr["results"][0]["retriever"] == "unified"
    assert seen == [f"specify: {query}", f"address: {query}"]  # each move's instruction
    assert [h["score"] for h in spec["results"]] != [h["score"] for h in addr["results"]]
    assert [k for k in eng.store.live if k[0].startswith("unified")] == [("unified", eng.pool.key)]
    hyb = eng.search(query, "specify", 3, retriever="hybrid")
    assert hyb["note"] is None and "unified" in eng.store.leaves("hybrid@specify")
    assert eng.search(query, "broaden", 3)["retriever"] == "trained"
    assert eng.search(query, "address", 3)["retriever"] == "bm25"


def test_unified_model_alone_and_bm25_recorded_only_on_average(tmp_path, tiny_config):
    """Without specialists the unified model competes alone; a record holding only BM25's
    average over the moves is the floor for every move (and says so)."""
    cfg_dir = tmp_path / "unified-only"
    shutil.copytree(tiny_config.parent, cfg_dir, ignore=shutil.ignore_patterns("serve"))
    root = cfg_dir / "run/models/all-MiniLM-L6-v2-generic"
    _unified(
        root,
        tuned={"specify": 0.41, "broaden": 0.2, "address": 0.3},
        base={"specify": 0.29, "broaden": 0.25, "address": 0.2},
        bm25=0.236,
    )
    eng = SearchEngine.open(cfg_dir / "config.toml", split="test")
    info = eng.info()
    assert info["per_move"] == {
        "address": "unified",
        "broaden": "baseline@broaden",
        "specify": "unified",
    }
    assert info["unified"]["address"]["bm25_val_is_average_over_moves"]
    assert info["validation_mrr@10"]["broaden"]["bm25"] == 0.236
    assert "trained" not in info["retrievers"]
    with pytest.raises(UnknownRetrieverError, match="trained moves: none"):
        eng.search("x", "specify", retriever="trained")


def test_a_candidates_argument_is_relative_to_the_working_directory(tiny_config, monkeypatch):
    """`ratio serve --candidates runs/...` names a file from where the user stands; only the
    config's own `[serve] candidates` is relative to the config file."""
    test_file = tiny_config.parent / "run" / "benchmark" / "test" / "candidates.parquet"
    monkeypatch.chdir(tiny_config.parent.parent)
    rel = test_file.relative_to(tiny_config.parent.parent)
    eng = SearchEngine.open(tiny_config, candidates=str(rel))
    assert eng.pool.n == _candidates(tiny_config, "test").num_rows


def test_serve_index_dir_in_the_config_places_the_pool_relative_to_the_config(
    tmp_path, tiny_config
):
    """`[serve] index_dir` is read like every path in a config: relative to the config file."""
    cfg_dir = tmp_path / "copy"
    shutil.copytree(tiny_config.parent, cfg_dir, ignore=shutil.ignore_patterns("serve"))
    cfg = cfg_dir / "config.toml"
    cfg.write_text(cfg.read_text().replace("[serve]\n", '[serve]\nindex_dir = "served"\n'))
    eng = SearchEngine.open(cfg, split="test")
    assert eng.pool.dir == cfg_dir / "served" and (cfg_dir / "served" / "pool.arrow").is_file()


def test_serve_index_hnsw_serves_the_trained_models_from_an_approximate_index(
    tmp_path, tiny_config
):
    """`[serve] index = "hnsw"` is for the models the engine defines itself (specialist,
    unified, base): on a pool this small its answers equal the exact index's."""
    cfg_dir = tmp_path / "hnsw"
    shutil.copytree(tiny_config.parent, cfg_dir, ignore=shutil.ignore_patterns("serve"))
    root = cfg_dir / "run/models/all-MiniLM-L6-v2-generic"
    _specialist(root, "specify", 0.36, 0.29, 0.28)
    flat = SearchEngine.open(cfg_dir / "config.toml", split="test", warm=[])
    cfg = load_config(cfg_dir / "config.toml")
    cfg.serve.index = "hnsw"
    approx = SearchEngine.open(cfg, split="test", warm=[])
    query = flat.pool.rows([2])[0]["text"]
    want = flat.search(query, "specify", 5, retriever="trained")["results"]
    got = approx.search(query, "specify", 5, retriever="trained")["results"]
    assert [r["candidate_id"] for r in got] == [r["candidate_id"] for r in want]
    assert approx.store.retriever("trained@specify", approx.pool).retriever.index_type == "hnsw"
    # int8 queries reuse the saved index (it is the same index) and search concurrently
    cfg.serve.query_backend = "onnx-int8"
    int8q = SearchEngine.open(cfg, split="test", warm=[])
    int8q.resolve("trained", "specify")
    r = int8q.store.retriever("trained@specify", int8q.pool).retriever
    assert r.query_backend == "onnx-int8" and r.encoded == 0  # the index: not re-encoded
    assert r.concurrent  # served without a query cache: searched from many threads at once
    cfg.serve.index = "ivf"
    with pytest.raises(ServeError, match=r"\[serve\] index must be 'flat' or 'hnsw'"):
        SearchEngine.open(cfg, split="test", warm=[])
