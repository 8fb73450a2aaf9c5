from __future__ import annotations

import numpy as np
import pytest

bm25s = pytest.importorskip("bm25s")
Stemmer = pytest.importorskip("Stemmer")

from ratio.retrieval.base import RetrievalError, Retriever  # noqa: E402
from ratio.retrieval.bm25 import BM25Retriever, Bm25Tokenizer  # noqa: E402

DOCS = [
    "We propose a contrastive objective that aligns query and passage embeddings.",
    "The model overfits when the training set is small, which limits generalization.",
    "To address this, we introduce data augmentation with paraphrased questions.",
    "Graph neural networks struggle with long-range dependencies between distant nodes.",
    "More generally, message passing architectures suffer from oversquashing.",
    "For example, on the Cora dataset accuracy drops by 12 points at depth eight.",
    "Retrieval augmented generation conditions a language model on retrieved documents.",
    "Sparse lexical retrievers such as BM25 remain strong baselines for scientific search.",
    "Training neural network models requires careful tuning of the learning rate.",
    "Network training of neural models is sensitive to rate tuning and learning schedules.",
    "Diffusion models generate images by iteratively denoising Gaussian noise.",
    "Our approach reduces the memory footprint of attention from quadratic to linear.",
]
IDS = [f"c{i:02d}" for i in range(len(DOCS))]
QUERIES = [
    "graph neural networks and long-range dependencies",
    "a strong sparse baseline for searching scientific papers",
    "denoising diffusion for image generation",
    "neural network training",
    "the of and",  # stopwords only
    "zzzunseen qqqword",  # no known token
]


def bm25s_reference():
    stemmer = Stemmer.Stemmer("english")
    model = bm25s.BM25()
    model.index(
        bm25s.tokenize(DOCS, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    q = bm25s.tokenize(
        QUERIES, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
    )
    return model, q


def test_tokenizer_matches_bm25s_for_unigrams():
    _, q = bm25s_reference()
    assert Bm25Tokenizer().tokenize(QUERIES) == q


def test_ngram_tokens_are_joined_stems_over_non_stopwords():
    (toks,) = Bm25Tokenizer(ngram=2).tokenize(["Training of the neural networks"])
    assert toks == ["train", "neural", "network", "train_neural", "neural_network"]
    (tri,) = Bm25Tokenizer(ngram=3).tokenize(["Training of the neural networks"])
    assert tri == ["train", "neural", "network", "train_neural_network"]


def test_planted_exact_match_ranks_first():
    planted = "Hierarchical sparse attention accelerates protein folding on commodity hardware."
    r = BM25Retriever(backend="sparse")
    r.index([*IDS, "planted"], [*DOCS, planted])
    res = r.search([planted, "sparse attention for protein folding"], k=5)
    assert res.doc_ids()[0, 0] == "planted"
    assert res.doc_ids()[1, 0] == "planted"
    assert np.all(np.diff(res.scores[0][np.isfinite(res.scores[0])]) <= 0)


def test_scores_equal_bm25s_scores():
    model, q = bm25s_reference()
    r = BM25Retriever(backend="sparse")
    r.index(IDS, DOCS)
    ours = r.score(QUERIES)
    for i, toks in enumerate(q):
        ref = model.get_scores(toks) if toks else np.zeros(len(DOCS))
        np.testing.assert_allclose(ours[i], ref, rtol=1e-5, atol=1e-6)
    # search returns exactly the positive-scored docs, best first
    res = r.search(QUERIES, k=len(DOCS))
    for i in range(len(QUERIES)):
        positive = np.sort(ours[i][ours[i] > 0])[::-1]
        got = res.scores[i][res.doc_ids()[i] != ""]
        np.testing.assert_allclose(got, positive, rtol=1e-6)
    assert (res.doc_ids()[4] == "").all() and (
        res.doc_ids()[5] == ""
    ).all()  # nothing shared with the query


def test_numba_kernel_equals_sparse_backend():
    a, b = BM25Retriever(backend="sparse"), BM25Retriever(backend="numba")
    a.index(IDS, DOCS)
    b.index(IDS, DOCS)
    for k in (1, 3, 5, len(DOCS)):
        ra, rb = a.search(QUERIES, k), b.search(QUERIES, k)
        np.testing.assert_allclose(ra.scores, rb.scores, rtol=1e-6)
    ra, rb = a.search(QUERIES, len(DOCS)), b.search(QUERIES, len(DOCS))
    for i in range(len(QUERIES)):  # same docs at the same scores (tie order may vary)
        sa = {
            (d, round(float(v), 4)) for d, v in zip(ra.doc_ids()[i], ra.scores[i], strict=True) if d
        }
        sb = {
            (d, round(float(v), 4)) for d, v in zip(rb.doc_ids()[i], rb.scores[i], strict=True) if d
        }
        assert sa == sb
    # exact ties (identical texts) rank the lower index first, whatever k
    dup = BM25Retriever(backend="numba")
    dup.index(["z", "y", "x", "w"], ["alpha beta", "gamma", "alpha beta", "alpha beta"])
    assert list(dup.search(["alpha"], 3).doc_ids()[0]) == ["z", "x", "w"]
    assert list(dup.search(["alpha"], 2).doc_ids()[0]) == ["z", "x"]


@pytest.mark.slow  # bm25s JIT-compiles its numba retrieval in every process
def test_bm25s_delegation_equals_sparse_backend():
    a, b = BM25Retriever(backend="sparse"), BM25Retriever(backend="bm25s")
    a.index(IDS, DOCS)
    b.index(IDS, DOCS)
    ra, rb = a.search(QUERIES, 5), b.search(QUERIES, 5)
    np.testing.assert_allclose(ra.scores, rb.scores, rtol=1e-6)
    assert [set(r[r != ""]) for r in ra.doc_ids()] == [set(r[r != ""]) for r in rb.doc_ids()]


def test_ngram_variants_differ():
    uni, bi, tri = (BM25Retriever(ngram=n, backend="sparse") for n in (1, 2, 3))
    for r in (uni, bi, tri):
        r.index(IDS, DOCS)
    q = ["models for training neural network"]
    s_uni, s_bi = uni.score(q)[0], bi.score(q)[0]
    assert not np.allclose(s_uni, s_bi)
    # docs 8 and 9 share the unigrams; only doc 8 has the bigram "neural_network"
    assert bi.search(q, 1).doc_ids()[0, 0] == "c08"
    assert "neural_network" in bi.vocab and "neural_network" not in uni.vocab
    assert any(t.count("_") == 2 for t in tri.vocab)
    assert uni.name == "bm25" and bi.name == "bm25-2gram"


def test_save_load_round_trip(tmp_path):
    r = BM25Retriever(ngram=2, backend="sparse")
    r.index(IDS, DOCS)
    before = r.search(QUERIES, 4)
    r.save(tmp_path / "idx")
    loaded = Retriever.load(tmp_path / "idx", mmap=True)
    assert isinstance(loaded, BM25Retriever)
    assert loaded.tokenizer.ngram == 2 and loaded.fingerprint == r.fingerprint
    assert isinstance(loaded.model.scores["data"], np.memmap)
    loaded.backend = "sparse"
    after = loaded.search(QUERIES, 4)
    np.testing.assert_array_equal(before.doc_ids(), after.doc_ids())
    np.testing.assert_array_equal(before.scores, after.scores)
    loaded.backend = "numba"  # the jitted kernel reads the memory-mapped arrays too
    np.testing.assert_allclose(loaded.search(QUERIES, 4).scores, before.scores, rtol=1e-6)


def test_load_in_a_fresh_process(tmp_path):
    """Loading must not depend on the retriever module having been imported already."""
    import subprocess
    import sys

    r = BM25Retriever(backend="sparse")
    r.index(IDS, DOCS)
    r.save(tmp_path / "idx")
    code = (
        "import sys; from ratio.retrieval.base import Retriever; "
        "r = Retriever.load(sys.argv[1]); r.backend = 'sparse'; "
        "print(r.kind, r.search(['graph neural networks'], 1).doc_ids()[0, 0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "idx")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["bm25", "c03"]


def test_k_larger_than_pool_and_errors(tmp_path):
    r = BM25Retriever(backend="sparse")
    with pytest.raises(RetrievalError):
        r.search(["x"], 3)
    r.index(IDS[:3], DOCS[:3])
    assert r.search(["contrastive objective"], 50).doc_ids().shape == (1, 3)
    with pytest.raises(RetrievalError):
        r.index(["a", "a"], ["x", "y"])
    with pytest.raises(RetrievalError):
        Retriever.load(tmp_path / "nothing")


def test_indexing_keeps_bm25s_debug_lines_out_of_a_cli_log(caplog):
    """bm25s sets its logger to DEBUG; under a CLI's root handler its lines reached the user."""
    import logging

    caplog.set_level(logging.DEBUG)  # a handler that passes every level, as basicConfig's does
    BM25Retriever().index(IDS, DOCS)
    assert not [r for r in caplog.records if r.name.startswith("bm25s")]
