"""The search path: named systems (BM25, hybrid, instructed) ranked through one IndexStore."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ratio.core.config import SystemConfig
from ratio.retrieval.base import RetrievalError, build_retriever
from ratio.retrieval.store import STORE_META, IndexStore, Pool, slug

DOCS = [
    "sparse retrieval with inverted indexes",
    "dense retrieval with learned embeddings",
    "hybrid retrieval combines sparse and dense signals",
    "cooking pasta requires salted boiling water",
]
POOL = Pool("shared", "four docs", [f"d{i}" for i in range(4)], DOCS)
SYSTEMS = {
    "uni": SystemConfig(name="uni", kind="bm25"),
    "bi": SystemConfig(name="bi", kind="bm25", ngram=2),
    "h": SystemConfig(name="h", kind="hybrid", components=["uni", "bi"], fusion="score"),
}


def store(tmp_path, systems=SYSTEMS) -> IndexStore:
    return IndexStore(systems, folder=lambda name, pool: tmp_path / slug(name) / pool.key)


def test_hybrid_fuses_its_components_and_indexes_are_reused(tmp_path):
    s = store(tmp_path)
    run = s.rank("h", POOL, ["hybrid sparse dense retrieval"], 3, ["q"])
    assert run.query_ids == ["q"] and run.doc_ids()[0, 0] == "d2"
    assert s.leaves("h") == ["uni", "bi"]
    assert sorted(s.live) == [("bi", "shared"), ("uni", "shared")]  # the hybrid has no index
    saved = json.loads((tmp_path / "uni" / "shared" / STORE_META).read_text())
    assert saved["fingerprint"] == POOL.fingerprint

    again = store(tmp_path).rank("h", POOL, ["hybrid sparse dense retrieval"], 3, ["q"])
    np.testing.assert_array_equal(run.doc_ids(), again.doc_ids())
    np.testing.assert_array_equal(run.scores, again.scores)


def test_a_changed_pool_or_system_rebuilds(tmp_path):
    store(tmp_path).rank("uni", POOL, ["sparse"], 2)
    meta = tmp_path / "uni" / "shared" / "retriever.json"
    first = meta.stat().st_mtime_ns
    store(tmp_path).rank("uni", POOL, ["sparse"], 2)
    assert meta.stat().st_mtime_ns == first
    bigger = Pool("shared", "five docs", [*POOL.ids, "d4"], [*DOCS, "sparse vectors"])
    store(tmp_path).rank("uni", bigger, ["sparse"], 2)
    assert json.loads(meta.read_text())["n_docs"] == 5
    other = {"uni": SystemConfig(name="uni", kind="bm25", ngram=3)}
    store(tmp_path, other).rank("uni", bigger, ["sparse"], 2)
    assert json.loads(meta.read_text())["params"]["ngram"] == 3


def test_hybrid_config_errors(tmp_path):
    bad = {
        **SYSTEMS,
        "missing": SystemConfig(name="missing", kind="hybrid", components=["uni", "nope"]),
        "one": SystemConfig(name="one", kind="hybrid", components=["uni"]),
        "loop": SystemConfig(name="loop", kind="hybrid", components=["uni", "loop"]),
    }
    s = store(tmp_path, bad)
    with pytest.raises(RetrievalError, match="'nope' is not a configured system"):
        s.rank("missing", POOL, ["x"], 1)
    with pytest.raises(RetrievalError, match="at least two"):
        s.rank("one", POOL, ["x"], 1)
    with pytest.raises(RetrievalError, match="includes itself"):
        s.rank("loop", POOL, ["x"], 1)
    with pytest.raises(RetrievalError, match="no system named"):
        s.rank("nothing", POOL, ["x"], 1)
    with pytest.raises(RetrievalError, match="unknown kind"):
        build_retriever(SystemConfig(name="x", kind="splade"))


def test_instructed_views_share_one_dense_index(tmp_path):
    """Two instructed views of one dense system: one index, each query read with its view's
    instruction in place of the dense system's prefix (a unified model serving two moves)."""
    from tests.conftest import MODELS

    model = MODELS / "potion-mpnet-256"
    if not model.is_dir():
        pytest.skip(f"{model} not downloaded")
    dense = SystemConfig(name="d", kind="dense", model=str(model), prefix="generic")
    systems = {
        "d": dense,
        "a": SystemConfig(name="a", kind="instructed", components=["d"], instruction="address: "),
        "b": SystemConfig(name="b", kind="instructed", components=["d"], instruction="broaden: "),
        "two": SystemConfig(name="two", kind="instructed", components=["d", "uni"]),
        "uni": SystemConfig(name="uni", kind="bm25"),
        "sparse": SystemConfig(name="sparse", kind="instructed", components=["uni"]),
    }
    s = store(tmp_path, systems)
    assert s.leaves("a") == ["d"]
    seen: list[str] = []
    encoder = s.retriever("d", POOL).retriever.encoder
    encode = encoder.encode
    encoder.encode = lambda texts: seen.extend(texts) or encode(texts)
    ra, rb = (s.rank(v, POOL, ["dense embeddings"], 4).scores[0] for v in ("a", "b"))
    s.rank("d", POOL, ["dense embeddings"], 4)
    assert seen == ["address: dense embeddings", "broaden: dense embeddings"] + [
        "query: dense embeddings"  # the dense system itself keeps its prefix setup
    ]
    assert not np.allclose(ra, rb)  # the instruction changes the query vector
    assert sorted(s.live) == [("d", "shared")]  # the views have no index of their own
    for bad in ("two", "sparse"):
        with pytest.raises(RetrievalError, match="exactly one dense component"):
            s.rank(bad, POOL, ["x"], 1)
