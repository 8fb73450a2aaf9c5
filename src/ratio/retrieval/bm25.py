"""BM25 over stemmed, stopword-filtered tokens, with optional n-gram tokens (Appendix C).

Unigrams are tokenized exactly as ``bm25s.tokenize`` does, so scores equal bm25s's own.
Search backends over bm25s's score matrix, all giving its scores:

- ``bm25s``: bm25s's own numba retrieval, the fastest for big batches, but
  JIT-compiled anew in every process (10-30 s);
- ``numba``: our kernel (``_bm25_kernel``), compiled once per machine
  (``cache=True``) and so instant for one-off queries; ~1.1-1.4x bm25s's time;
- ``sparse``: batched sparse matrix products, when numba is missing.

``auto`` uses ``bm25s`` when a batch is big enough (queries x docs >= 5e8) for
the compile to pay off, else ``numba`` (see benchmarks/retrieval.py).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ratio.metrics.ranking import Ranking
from ratio.retrieval.base import RetrievalError, Retriever, register_retriever, top_k_rows

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
BACKENDS = ("auto", "bm25s", "numba", "sparse")
BM25S_JIT_MIN_WORK = 5e8  # queries x docs above which bm25s's per-process JIT pays off


def _has_numba() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


class Bm25Tokenizer:
    """Text → tokens: words, minus stopwords, Snowball-stemmed; ``ngram = n > 1`` adds the
    n-grams (only n, as in the paper's "unigrams+trigrams"), joined with ``_``."""

    def __init__(self, ngram: int = 1, stopwords: str = "english", stemmer: str = "english"):
        if ngram < 1:
            raise RetrievalError(f"ngram must be >= 1, got {ngram}")
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN

        self.ngram = ngram
        self.stopwords_lang = stopwords
        self.stemmer_lang = stemmer
        self._split = re.compile(TOKEN_PATTERN).findall
        self._stop = frozenset(STOPWORDS_EN) if stopwords == "english" else frozenset()
        self._stemmer = Stemmer.Stemmer(stemmer) if stemmer else None
        self._stems: dict[str, str] = {}

    def config(self) -> dict[str, Any]:
        return {"ngram": self.ngram, "stopwords": self.stopwords_lang, "stemmer": self.stemmer_lang}

    def tokenize(self, texts: list[str]) -> list[list[str]]:
        words_per_text = [[w for w in self._split(t.lower()) if w not in self._stop] for t in texts]
        new = [w for w in {w for ws in words_per_text for w in ws} if w not in self._stems]
        if new:
            stems = self._stemmer.stemWords(new) if self._stemmer else new
            self._stems.update(zip(new, stems, strict=True))
        out = []
        n = self.ngram
        for ws in words_per_text:
            toks = [self._stems[w] for w in ws]
            if n > 1 and len(toks) >= n:
                toks += ["_".join(toks[i : i + n]) for i in range(len(toks) - n + 1)]
            out.append(toks)
        return out


@register_retriever("bm25")
class BM25Retriever(Retriever):
    """Lucene-variant BM25 (bm25s defaults k1=1.5, b=0.75) over Ratio's tokenization."""

    def __init__(
        self,
        name: str = "",
        ngram: int = 1,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        batch_size: int = 256,
        backend: str = "auto",
    ) -> None:
        super().__init__(name or (f"bm25-{ngram}gram" if ngram > 1 else "bm25"))
        self.tokenizer = Bm25Tokenizer(ngram=ngram)
        self.k1, self.b, self.method = k1, b, method
        self.batch_size = batch_size
        if backend not in BACKENDS:
            raise RetrievalError(f"BM25 backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend
        self.model: Any = None  # a bm25s.BM25 once indexed or loaded (bm25s ships no types)
        self._matrix = None  # (vocab x docs) CSR view of the score matrix
        self._positive: bool | None = None

    @classmethod
    def from_config(cls, system: Any, **_: Any) -> BM25Retriever:
        return cls(name=system.name, ngram=system.ngram or 1)

    def params(self) -> dict[str, Any]:
        return {**self.tokenizer.config(), "k1": self.k1, "b": self.b, "method": self.method}

    def index(self, ids: list[str], texts: list[str]) -> None:
        import bm25s

        # bm25s sets its own logger to DEBUG at import: with a CLI's handler on the root
        # logger, "Building index from tokens" would reach the user's terminal
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self._set_pool(ids, texts)
        self.model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        self.model.index(self.tokenizer.tokenize(texts), show_progress=False)
        self._matrix = None
        self._positive = None

    @property
    def vocab(self) -> dict[str, int]:
        return self.model.vocab_dict

    def _term_matrix(self):
        """The score matrix as CSR (terms x docs): row t holds term t's per-doc scores."""
        if self._matrix is None:
            import scipy.sparse as sp

            s = self.model.scores
            n_terms = len(s["indptr"]) - 1
            self._matrix = sp.csr_matrix(
                (s["data"], s["indices"], s["indptr"]), shape=(n_terms, s["num_docs"]), copy=False
            )
        return self._matrix

    def _term_ids(self, token_lists: list[list[str]]) -> list[list[int]]:
        """Each query's vocabulary ids; unknown tokens drop out."""
        vocab = self.vocab
        return [[vocab[t] for t in toks if t in vocab and t] for toks in token_lists]

    def _token_matrix(self, token_lists: list[list[str]]):
        """Queries as a sparse (queries x terms) count matrix."""
        import scipy.sparse as sp

        ids = self._term_ids(token_lists)
        rows = [i for i, x in enumerate(ids) for _ in x]
        cols = [t for x in ids for t in x]
        data = np.ones(len(cols), dtype=np.float32)
        shape = (len(token_lists), self._term_matrix().shape[0])
        return sp.csr_matrix((data, (rows, cols)), shape=shape, dtype=np.float32)

    def score(self, queries: list[str]) -> np.ndarray:
        """Dense (queries x docs) BM25 scores, for small batches and tests."""
        self._check_indexed()
        matrix = self._token_matrix(self.tokenizer.tokenize(queries))
        return np.asarray((matrix @ self._term_matrix()).todense())

    def search(self, queries: list[str], k: int, query_ids: Sequence[str] | None = None) -> Ranking:
        """Top-k candidates per query; candidates sharing no term with a query are left out
        (their ranking would be arbitrary), so a list may be shorter than ``k``."""
        return self.search_tokens(self.tokenizer.tokenize(queries), k, query_ids)

    def search_tokens(
        self, token_lists: list[list[str]], k: int, query_ids: Sequence[str] | None = None
    ) -> Ranking:
        """:meth:`search` on already tokenized queries."""
        self._check_indexed()
        k = self._top_k(k)
        n = len(token_lists)
        backend = self.backend
        if backend == "auto":
            big = n * self.n_docs >= BM25S_JIT_MIN_WORK
            backend = ("bm25s" if big else "numba") if _has_numba() else "sparse"
        if n and k and backend == "bm25s":
            self.model.backend = "numba"
            res = self.model.retrieve(token_lists, k=k, show_progress=False)
            keep = res.scores > 0
            scores = res.scores.astype(np.float32, copy=False)
            scores[~keep] = -np.inf
            return self._ranking(np.where(keep, res.documents, -1), scores, query_ids)
        if n and k and backend == "numba":
            idx, scores = self._top_numba(token_lists, k)
        else:
            idx, scores = self._top_sparse(token_lists, k)
        return self._ranking(idx, scores, query_ids)

    def _top_sparse(self, token_lists: list[list[str]], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The numba-free path: batched sparse products, then a dense top-k per row."""
        n = len(token_lists)
        matrix = self._term_matrix()
        all_idx = np.full((n, k), -1, dtype=np.int64)
        all_scores = np.full((n, k), -np.inf, dtype=np.float32)
        for start in range(0, n, self.batch_size):
            batch = token_lists[start : start + self.batch_size]
            dense = (self._token_matrix(batch) @ matrix).toarray()
            idx, vals = top_k_rows(dense, k)
            keep = vals > 0
            all_idx[start : start + len(batch)] = np.where(keep, idx, -1)
            all_scores[start : start + len(batch)] = np.where(keep, vals, -np.inf)
        return all_idx, all_scores

    def _top_numba(self, token_lists: list[list[str]], k: int) -> tuple[np.ndarray, np.ndarray]:
        # lazy: the kernel imports numba and scipy (~1 s), which the numpy path never needs
        from ratio.retrieval._bm25_kernel import retrieve_topk

        ids = self._term_ids(token_lists)
        q_ptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in ids], out=q_ptr[1:])
        q_ids = np.fromiter((t for x in ids for t in x), dtype=np.int64, count=int(q_ptr[-1]))
        s = self.model.scores
        if self._positive is None:  # the kernel treats a zero score as "not touched"
            self._positive = bool(np.all(np.asarray(s["data"]) > 0))
        if not self._positive:
            return self._top_sparse(token_lists, k)
        out_idx = np.full((len(ids), k), -1, dtype=np.int64)
        out_val = np.full((len(ids), k), -np.inf, dtype=np.float32)
        retrieve_topk(
            np.asarray(s["indptr"]),
            np.asarray(s["indices"]),
            np.asarray(s["data"], dtype=np.float32),
            int(s["num_docs"]),
            q_ptr,
            q_ids,
            k,
            out_idx,
            out_val,
        )
        return out_idx, out_val

    def _save(self, directory: Path) -> None:
        self.model.save(str(directory / "bm25s"), show_progress=False)
        (directory / "tokenizer.json").write_text(json.dumps(self.tokenizer.config()))

    @classmethod
    def _load(cls, directory: Path, meta: dict[str, Any], mmap: bool) -> BM25Retriever:
        import bm25s

        p = meta["params"]
        r = cls(ngram=p["ngram"], k1=p["k1"], b=p["b"], method=p["method"])
        r.model = bm25s.BM25.load(str(directory / "bm25s"), mmap=mmap, show_progress=False)
        return r
