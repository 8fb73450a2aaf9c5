"""Retrieval throughput: Ratio's BM25 vs bm25s called directly, dense encoding, FAISS search.

Usage: .venv/bin/python benchmarks/retrieval.py [--docs 20000] [--queries 2000] [--skip-dense]

The BM25 check is the acceptance test for the wrapper: on the same tokenized
data, Ratio's ``search`` must take at most 1.1x the time of bm25s's own
``retrieve``. Sentences come from the ingest output when it exists, else from a
naive split of the shared NeurIPS corpus.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpora" / "neurips" / "neurips-2025-00.jsonl.zst"


def sample_sentences(n: int) -> list[str]:
    """Up to ``n`` sentences: ingest output if present, else naive splits of the raw corpus."""
    ingested = sorted((REPO / "runs").glob("*/ingest/sentences/*.parquet"))
    if ingested:
        import pyarrow.parquet as pq

        out: list[str] = []
        for f in ingested:
            out += pq.read_table(f, columns=["text"]).column("text").to_pylist()
            if len(out) >= n:
                return out[:n]
        if len(out) >= n // 2:
            return out
    import zstandard

    out = []
    with open(CORPUS, "rb") as fh:
        reader = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(fh), encoding="utf-8")
        for line in reader:
            text = json.loads(line)["text"]
            for para in text.split("\n\n"):
                para = para.strip()
                if len(para) < 200 or para.startswith(("#", "|", "<", "$")):
                    continue
                for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", para):
                    if 40 <= len(s) <= 400:
                        out.append(s)
            if len(out) >= n:
                break
    return out[:n]


def timeit(fn, repeat: int = 5) -> float:
    """Best CPU time of ``repeat`` calls: process time, because the benchmark machine is
    shared and wall time swings with other load; every timed path here is single-threaded."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def interleaved(fns: dict[str, object], repeat: int = 7) -> dict[str, float]:
    """Best CPU time per function, alternating them so drifting load hits all alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t)
    return best


def bench_bm25(docs: list[str], queries: list[str], k: int, rows: list[tuple]) -> None:
    import bm25s
    import Stemmer

    from ratio.retrieval.bm25 import BM25Retriever

    ids = [f"d{i}" for i in range(len(docs))]
    ours = BM25Retriever()
    ours.index(ids, docs)
    stemmer = Stemmer.Stemmer("english")

    def tok():
        return bm25s.tokenize(
            queries, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )

    direct = bm25s.BM25()
    direct.index(
        bm25s.tokenize(docs, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    q_tokens = tok()
    # Same tokens both ways: bm25s's tokenizer output equals ours for unigrams.
    assert q_tokens == ours.tokenizer.tokenize(queries)
    n = len(queries)

    def direct_retrieve(model=direct):
        return model.retrieve(q_tokens, k=k, show_progress=False)

    # bm25s's compile(warmup=True) segfaults with numba 0.68; the constructor path works.
    numba_model = bm25s.BM25(backend="numba")
    numba_model.index(
        bm25s.tokenize(docs, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    direct_retrieve(numba_model)  # JIT warm-up
    ours.search_tokens(q_tokens, k)
    t = interleaved(
        {
            "numba": lambda: direct_retrieve(numba_model),
            "ours": lambda: ours.search_tokens(q_tokens, k),
            "ours_e2e": lambda: ours.search(queries, k),
        },
        repeat=7,
    )
    t_numba, t_ours_tok, t_ours_e2e = t["numba"], t["ours"], t["ours_e2e"]
    # bm25s's default numpy backend is ~40x slower: one timing each is enough
    t_direct = timeit(direct_retrieve, repeat=1)
    t_direct_e2e = timeit(lambda: direct.retrieve(tok(), k=k, show_progress=False), repeat=1)
    rows.append(("bm25s.retrieve (numpy), pre-tokenized", n / t_direct, "q/s", ""))
    rows.append(("bm25s.retrieve (numba), pre-tokenized", n / t_numba, "q/s", ""))
    best_direct = min(t_direct, t_numba)
    rows.append(
        (
            "ratio BM25 search_tokens, pre-tokenized",
            n / t_ours_tok,
            "q/s",
            f"time ratio vs best bm25s {t_ours_tok / best_direct:.2f}x",
        )
    )
    rows.append(("bm25s tokenize+retrieve (numpy)", n / t_direct_e2e, "q/s", ""))
    rows.append(
        (
            "ratio BM25 search (text in)",
            n / t_ours_e2e,
            "q/s",
            f"time ratio vs bm25s e2e {t_ours_e2e / t_direct_e2e:.2f}x",
        )
    )
    # the acceptance check
    ratio = t_ours_tok / best_direct
    rows.append(("BM25 acceptance (<= 1.1x)", ratio, "x", "PASS" if ratio <= 1.1 else "FAIL"))
    # sanity: identical scores
    res = ours.search_tokens(q_tokens[:50], k)
    d = direct.retrieve(q_tokens[:50], k=k, show_progress=False)
    pos = res.scores > 0
    assert np.allclose(np.where(pos, res.scores, 0), np.where(pos, d.scores, 0), atol=1e-4)


def bench_dense(sentences: list[str], rows: list[tuple], models: list[str]) -> None:
    import faiss

    from ratio.retrieval.dense import Encoder

    for name in models:
        try:
            enc = Encoder(name)
        except Exception as e:  # noqa: BLE001 - report and move on
            rows.append((f"encode {name}", float("nan"), "sent/s", f"skipped: {e}"))
            continue
        sample = sentences[: 2000 if enc.static else 128]
        enc.encode(sample[:16])  # warm up
        t = timeit(lambda s=sample, e=enc: e.encode(s), repeat=1)
        rows.append(
            (f"encode {name} [{enc.backend}]", len(sample) / t, "sent/s", f"n={len(sample)}")
        )
    rng = np.random.default_rng(0)
    for n_docs, dim in [(50_000, 384), (50_000, 768)]:
        x = rng.standard_normal((n_docs, dim), dtype=np.float32)
        faiss.normalize_L2(x)
        q = x[rng.choice(n_docs, 1000, replace=False)] + 0.1 * rng.standard_normal(
            (1000, dim), dtype=np.float32
        )
        flat = faiss.IndexFlatIP(dim)
        flat.add(x)
        t = timeit(lambda f=flat, q=q: f.search(q, 100), repeat=1)
        rows.append((f"faiss flat IP search {n_docs}x{dim}", len(q) / t, "q/s", "k=100"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument(
        "--models", default="all-MiniLM-L6-v2,potion-mpnet-256,all-mpnet-base-v2", help="comma list"
    )
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sents = sample_sentences(args.docs + args.queries)
    docs, queries = sents[: args.docs], sents[args.docs :]
    print(f"sample: {len(docs)} docs, {len(queries)} queries", file=sys.stderr)
    rows: list[tuple] = []
    bench_bm25(docs, queries, args.k, rows)
    if not args.skip_dense:
        bench_dense(sents, rows, args.models.split(","))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>10}  unit    note")
    for name, value, unit, note in rows:
        print(f"{name:<{width}}  {value:>10.2f}  {unit:<6}  {note}")


if __name__ == "__main__":
    main()
