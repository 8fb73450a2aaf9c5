from __future__ import annotations

import numpy as np
import pytest

from ratio.retrieval.base import Retriever
from tests.conftest import MODELS

pytest.importorskip("faiss")

STATIC = MODELS / "potion-mpnet-256"
MINILM = MODELS / "all-MiniLM-L6-v2"
needs_static = pytest.mark.skipif(not STATIC.is_dir(), reason="potion-mpnet-256 not downloaded")

SENTENCES = [
    "Large language models hallucinate facts that are not supported by their sources.",
    "To address this, we ground generation in retrieved passages and cite them.",
    "Graph neural networks struggle with long-range dependencies.",
    "We add virtual nodes that connect every pair of distant vertices.",
    "Reinforcement learning agents need many environment interactions to learn.",
    "Model-based planning reduces the number of samples required.",
    "Protein structure prediction has improved dramatically with deep learning.",
    "AlphaFold predicts backbone coordinates with near-experimental accuracy.",
    "Training large vision transformers is expensive in memory.",
    "Gradient checkpointing trades compute for a smaller activation footprint.",
    "Federated learning keeps user data on device.",
    "Differential privacy bounds what an attacker can learn about any individual.",
    "Diffusion models generate images by iterative denoising.",
    "Classifier-free guidance trades diversity for sample fidelity.",
    "Sparse mixture-of-experts layers activate a few experts per token.",
    "Load balancing losses prevent experts from collapsing.",
    "Speech recognition systems degrade under accented speech.",
    "Self-supervised pretraining on untranscribed audio helps low-resource languages.",
    "Tabular data remains a domain where gradient boosted trees excel.",
    "Neural networks for tables need careful feature encoding.",
]
IDS = [f"c{i:02d}" for i in range(len(SENTENCES))]


@needs_static
def test_cache_avoids_reencoding_a_pool(tmp_path):
    from ratio.retrieval.dense import DenseRetriever

    r = DenseRetriever("potion-mpnet-256", cache_dir=tmp_path / "emb", prefix="generic")
    r.index(IDS, SENTENCES)
    assert r.encoded == 20
    res = r.search(["How can we make retrieval-augmented generation cite its sources?"], 3)
    assert r.encoded == 21  # the query, once

    again = DenseRetriever("potion-mpnet-256", cache_dir=tmp_path / "emb", prefix="generic")
    again.index(IDS, SENTENCES)
    res2 = again.search(["How can we make retrieval-augmented generation cite its sources?"], 3)
    assert again.encoded == 0
    np.testing.assert_array_equal(res.doc_ids(), res2.doc_ids())
    np.testing.assert_allclose(res.scores, res2.scores)

    # a sub-pool with two unseen texts encodes just those two
    sub = DenseRetriever("potion-mpnet-256", cache_dir=tmp_path / "emb", prefix="generic")
    sub.index([*IDS[:5], "n1", "n2"], [*SENTENCES[:5], "A brand new sentence.", "Another one."])
    assert sub.encoded == 2

    # another prefix setup is another cache
    other = DenseRetriever("potion-mpnet-256", cache_dir=tmp_path / "emb", prefix="none")
    other.index(IDS, SENTENCES)
    assert other.encoded == 20


@needs_static
def test_dense_ranks_and_round_trips(tmp_path):
    from ratio.retrieval.dense import DenseRetriever

    r = DenseRetriever("potion-mpnet-256", index="flat")
    r.index(IDS, SENTENCES)
    assert r.doc_prefix == "" and r.query_prefix == ""
    q = [SENTENCES[6], SENTENCES[12]]
    res = r.search(q, 5)
    assert list(res.doc_ids()[:, 0]) == ["c06", "c12"]  # a text is its own nearest neighbour
    np.testing.assert_allclose(res.scores[:, 0], 1.0, atol=1e-5)
    assert np.all(np.diff(res.scores, axis=1) <= 1e-6)
    r.save(tmp_path / "idx")
    loaded = Retriever.load(tmp_path / "idx", mmap=True)
    res2 = loaded.search(q, 5)
    np.testing.assert_array_equal(res.doc_ids(), res2.doc_ids())
    np.testing.assert_allclose(res.scores, res2.scores, rtol=1e-6)

    h = DenseRetriever("potion-mpnet-256", index="hnsw")
    h.index(IDS, SENTENCES)
    assert list(h.search(q, 5).doc_ids()[:, 0]) == ["c06", "c12"]


@needs_static
def test_generic_prefix_is_applied():
    from ratio.retrieval.dense import DenseRetriever

    r = DenseRetriever("potion-mpnet-256", prefix="generic")
    assert (r.query_prefix, r.doc_prefix) == ("query: ", "document: ")
    direct = r.encoder.encode(["query: " + SENTENCES[0]])
    np.testing.assert_allclose(r.embed([SENTENCES[0]], r.query_prefix), direct, rtol=1e-6)
    assert not np.allclose(r.embed([SENTENCES[0]], ""), direct)


@pytest.mark.slow
@pytest.mark.skipif(not MINILM.is_dir(), reason="all-MiniLM-L6-v2 not downloaded")
def test_sentence_transformers_model_and_cache(tmp_path):
    from ratio.retrieval.dense import DenseRetriever

    r = DenseRetriever("all-MiniLM-L6-v2", cache_dir=tmp_path)
    r.index(IDS, SENTENCES)
    res = r.search(["virtual nodes for long-range message passing in GNNs"], 2)
    assert res.doc_ids()[0, 0] in {"c02", "c03"}
    r2 = DenseRetriever("all-MiniLM-L6-v2", cache_dir=tmp_path)
    r2.index(IDS, SENTENCES)
    assert r2.encoded == 0 and r2.encoder._model is None  # the model was never loaded


@pytest.mark.slow
@pytest.mark.skipif(not MINILM.is_dir(), reason="all-MiniLM-L6-v2 not downloaded")
def test_bf16_vectors_are_close_to_fp32_but_cached_apart(tmp_path):
    """bf16 autocast rounds every matmul: near the fp32 vectors, never mistaken for them."""
    from ratio.retrieval.dense import DenseRetriever, Encoder

    fp32, bf16 = Encoder("all-MiniLM-L6-v2"), Encoder("all-MiniLM-L6-v2", backend="torch-bf16")
    assert bf16.key == fp32.key + "-bf16"
    a, b = fp32.encode(SENTENCES), bf16.encode(SENTENCES)
    assert b.dtype == np.float32 and np.allclose(np.linalg.norm(b, axis=1), 1, atol=1e-5)
    cos = (a * b).sum(axis=1)
    assert cos.min() > 0.999 and not np.array_equal(a, b)
    DenseRetriever("all-MiniLM-L6-v2", cache_dir=tmp_path).index(IDS, SENTENCES)
    r = DenseRetriever("all-MiniLM-L6-v2", cache_dir=tmp_path, backend="torch-bf16")
    r.index(IDS, SENTENCES)
    assert r.encoded == len(SENTENCES)  # the fp32 cache entries were not reused
