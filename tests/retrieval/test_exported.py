"""ONNX/OpenVINO encoding backends: real exports of all-MiniLM-L6-v2, checked against torch."""

from __future__ import annotations

import numpy as np
import pytest

from ratio.retrieval.exported import ONNX_FILE, _built_once, _tensor_features, fast_tokenizer
from tests.conftest import MODELS
from tests.retrieval.test_dense import IDS, SENTENCES

pytest.importorskip("onnxruntime")
pytest.importorskip("faiss")

MINILM = MODELS / "all-MiniLM-L6-v2"
needs_minilm = pytest.mark.skipif(not MINILM.is_dir(), reason="all-MiniLM-L6-v2 not downloaded")


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """One export folder for the module, so the (slow) fp32 export happens once."""
    return tmp_path_factory.mktemp("exports")


@pytest.fixture
def in_exports(exports, monkeypatch):
    monkeypatch.setenv("RATIO_EXPORTS", str(exports))
    return exports


@pytest.fixture(scope="module")
def reference():
    from ratio.retrieval.dense import Encoder

    return Encoder("all-MiniLM-L6-v2", backend="torch").encode(SENTENCES)


def test_an_interrupted_build_leaves_nothing_and_a_finished_one_is_reused(tmp_path):
    def fails(d):
        (d / ONNX_FILE).write_bytes(b"half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        _built_once(tmp_path / "k" / "fp32", fails)
    assert list((tmp_path / "k").iterdir()) == []

    built = []
    _built_once(tmp_path / "k" / "fp32", lambda d: built.append((d / ONNX_FILE).write_bytes(b"x")))
    _built_once(tmp_path / "k" / "fp32", lambda d: built.append("again"))
    assert len(built) == 1 and (tmp_path / "k" / "fp32" / ONNX_FILE).read_bytes() == b"x"
    assert [p.name for p in (tmp_path / "k").iterdir()] == ["fp32"]


@needs_minilm
def test_the_rust_tokenizer_gives_sentence_transformers_arrays():
    """Served queries skip the transformers wrapper (~1.2 ms of ~13): the same ids, masks and
    type ids, truncated and padded the same way, or no fast path at all."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(MINILM), device="cpu", local_files_only=True)
    st.max_seq_length = 16  # most SENTENCES are longer: truncation is exercised
    fast = fast_tokenizer(st)
    assert fast is not None
    for batch in [[s] for s in SENTENCES] + [SENTENCES, ["Why?", SENTENCES[0]]]:
        want, _ = _tensor_features(st, batch)
        got = fast(batch)
        assert set(got) == set(want) == {"input_ids", "attention_mask", "token_type_ids"}
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
    assert (fast(SENTENCES)["attention_mask"] == 0).any()  # a padded batch was compared
    assert fast_tokenizer(st[1]) is None  # the pooling module: nothing to tokenize with


@pytest.mark.slow
@needs_minilm
@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_fp32_exports_match_torch(backend, in_exports, reference):
    if backend == "openvino":
        pytest.importorskip("openvino")
    from ratio.retrieval.dense import Encoder

    enc = Encoder("all-MiniLM-L6-v2", backend=backend)
    x = enc.encode(SENTENCES)
    assert x.shape == reference.shape == (20, 384)
    np.testing.assert_allclose(x, reference, atol=2e-5)
    assert enc.key == Encoder("all-MiniLM-L6-v2").key  # same vectors: torch's cache is reused
    assert (in_exports / enc.content_key / "fp32" / ONNX_FILE).is_file()


@pytest.mark.slow
@needs_minilm
def test_int8_is_close_to_fp32_and_cached_apart(in_exports, reference, tmp_path):
    from ratio.retrieval.dense import DenseRetriever, Encoder

    r = DenseRetriever("all-MiniLM-L6-v2", cache_dir=tmp_path / "emb", backend="onnx-int8")
    r.index(IDS, SENTENCES)
    x = r.embed(SENTENCES, "")
    cos = (x * reference).sum(axis=1)
    assert cos.min() > 0.995, cos  # measured: mean 0.9995 on a 3,000-sentence test sub-pool
    # a text's int8 vector does not depend on the texts encoded with it (cache-safe)
    np.testing.assert_array_equal(r.encoder.encode(SENTENCES[3:4]), x[3:4])

    def nearest(v):  # each sentence's nearest other sentence
        s = v @ v.T
        np.fill_diagonal(s, -1)
        return s.argmax(axis=1)

    assert (nearest(x) == nearest(reference)).mean() >= 0.9

    fp32_key = Encoder("all-MiniLM-L6-v2").key
    assert r.encoder.key.startswith(fp32_key + "-onnx-int8-")
    assert [p.name for p in (tmp_path / "emb").iterdir()] == [r.encoder.key]  # never fp32's


@needs_minilm
def test_the_config_picks_the_backend():
    from ratio.core.config import SystemConfig
    from ratio.retrieval.base import RetrievalError, build_retriever

    system = SystemConfig(name="d", kind="dense", model="all-MiniLM-L6-v2", backend="onnx-int8")
    r = build_retriever(system)
    assert r.encoder.backend == "onnx-int8" and "-onnx-int8-" in r.encoder.key
    assert r.encoder._model is None  # naming the cache does not load or export anything
    with pytest.raises(RetrievalError, match="backend must be one of"):
        build_retriever(
            SystemConfig(name="d", kind="dense", model="all-MiniLM-L6-v2", backend="int8")
        )


@pytest.mark.slow
@needs_minilm
def test_int8_queries_search_the_fp32_index(in_exports, tmp_path):
    """``query_backend``: the same model's int8 graph for queries only; the index and the
    embedding cache stay fp32 (served: the same MRR@10, ~30% less CPU per query)."""
    from ratio.retrieval.dense import DenseRetriever

    exact = DenseRetriever("all-MiniLM-L6-v2", backend="onnx", cache_dir=tmp_path / "emb")
    mixed = DenseRetriever(
        "all-MiniLM-L6-v2",
        backend="onnx",
        query_backend="onnx-int8",
        cache_dir=tmp_path / "emb",
        cache_queries=False,
    )
    exact.index(IDS, SENTENCES)
    mixed.index(IDS, SENTENCES)
    assert mixed.encoded == 0  # the pool came from the fp32 cache exact filled
    assert [p.name for p in (tmp_path / "emb").iterdir()] == [exact.encoder.key]
    queries = [s.lower() for s in SENTENCES]
    a, b = exact.search(queries, 5), mixed.search(queries, 5)
    assert (a.doc_ids()[:, 0] == b.doc_ids()[:, 0]).all()
    overlap = [len(set(x) & set(y)) / 5 for x, y in zip(a.doc_ids(), b.doc_ids(), strict=True)]
    assert np.mean(overlap) >= 0.9
    assert not np.array_equal(a.scores, b.scores)  # really another encoder
    assert mixed.params() == exact.params()  # what the saved index is built from


@pytest.mark.slow
@needs_minilm
def test_searches_from_threads_equal_serial_ones(in_exports):
    """A served dense retriever searches from several threads at once (the store takes no
    lock for it): the shared tokenizer and sessions must give the serial answers."""
    from concurrent.futures import ThreadPoolExecutor

    from ratio.retrieval.dense import DenseRetriever
    from ratio.retrieval.store import Loaded

    r = DenseRetriever("all-MiniLM-L6-v2", backend="onnx", index="hnsw", cache_queries=False)
    r.index(IDS, SENTENCES)
    assert r.concurrent and not isinstance(Loaded(r, 0.0).turn(), type(Loaded(r, 0.0).lock))
    queries = [s.upper() for s in SENTENCES] * 5
    serial = [r.search([q], 3).doc_ids()[0].tolist() for q in queries]
    with ThreadPoolExecutor(8) as pool:
        parallel = list(pool.map(lambda q: r.search([q], 3).doc_ids()[0].tolist(), queries))
    assert parallel == serial
    cached = DenseRetriever("all-MiniLM-L6-v2", backend="onnx", cache_dir="x")
    assert not cached.concurrent  # its query cache writes are not thread-safe
