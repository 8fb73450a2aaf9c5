"""CPU encoding backends against fp32 torch: speed, and whether the top-10 lists stay the same.

Usage:
  .venv/bin/python benchmarks/encode.py [--config configs/neurips.toml] [--split test]
      [--model all-MiniLM-L6-v2] [--backends onnx,onnx-int8,openvino] [--n 2000]
      [--queries 1000] [--pool 20000] [--k 10] [--seed 13] [--batch-size 64] [--out FILE.json]

In one run, for fp32 torch (the reference) and each backend: encodes a seeded sub-pool of
``--pool`` candidates of the split and ``--queries`` seeded queries (no prefix, no embedding
cache), timing the first ``--n`` pool sentences (after a warm-up batch; loading and any
one-off ONNX export are timed apart). Reports sentences/s and the speed ratio to torch, the
mean and minimum cosine of each sub-pool vector to torch's, and, ranking the sub-pool for
every query by inner product, the share of queries whose top-k id list (in order) is
identical to torch's and the mean overlap@k (shared ids / k).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ratio.core.config import load_config
from ratio.core.layout import RunDir
from ratio.retrieval.dense import Encoder, available_cores

WARMUP = 64


def top_k(q: np.ndarray, pool: np.ndarray, k: int) -> np.ndarray:
    """Row indices of each query's k best pool rows, best first (ties: lower index first)."""
    out = np.empty((len(q), k), dtype=np.int64)
    for s in range(0, len(q), 256):
        scores = q[s : s + 256] @ pool.T
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        rows = np.arange(len(part))[:, None]
        order = np.lexsort((part, -scores[rows, part]), axis=1)
        out[s : s + 256] = part[rows, order]
    return out


def measure(model: str, backend: str, pool: list[str], queries: list[str], n: int, bs: int):
    enc = Encoder(model, backend=backend, batch_size=bs)
    t0 = time.perf_counter()
    enc.encode(pool[:WARMUP])  # loads (and, the first time, exports) the model
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    head = enc.encode(pool[:n])
    speed = n / (time.perf_counter() - t0)
    x = np.vstack([head, enc.encode(pool[n:])])
    return enc, x, enc.encode(queries), speed, load_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/neurips.toml")
    ap.add_argument("--split", default="test")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--backends", default="onnx,onnx-int8,openvino")
    ap.add_argument("--n", type=int, default=2000, help="pool sentences timed")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--pool", type=int, default=20000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.n > args.pool:
        ap.error("--n must not exceed --pool (the timed sentences are the pool's first)")

    cfg = load_config(args.config)
    bench = RunDir.of(cfg).benchmark.load(args.split)
    rng = np.random.default_rng(args.seed)
    cand = bench.candidates.column("text").to_pylist()
    qtext = bench.queries.column("text").to_pylist()
    pool = [cand[i] for i in rng.choice(len(cand), min(args.pool, len(cand)), replace=False)]
    queries = [
        qtext[i] for i in rng.choice(len(qtext), min(args.queries, len(qtext)), replace=False)
    ]
    print(
        f"{args.model}: timing {args.n} of a seeded {len(pool)}-sentence sub-pool of the "
        f"{args.split} pool ({len(cand)}), {len(queries)} seeded queries, k={args.k}, "
        f"batch {args.batch_size}, {available_cores()} threads, seed {args.seed}"
    )

    rows = []
    ref = ref_top = None
    for backend in ["torch", *[b for b in args.backends.split(",") if b and b != "torch"]]:
        enc, x, q, speed, load_s = measure(
            args.model, backend, pool, queries, args.n, args.batch_size
        )
        top = top_k(q, x, args.k)
        row = {
            "backend": backend,
            "cache_key": enc.key,
            "sentences_per_s": round(speed, 1),
            "load_s": round(load_s, 1),
        }
        if ref is None:
            ref, ref_top, ref_speed = x, top, speed
        else:
            cos = (x * ref).sum(axis=1)
            overlap = [len(set(a) & set(b)) / args.k for a, b in zip(top, ref_top, strict=True)]
            row |= {
                "speedup": round(speed / ref_speed, 2),
                "cos_mean": round(float(cos.mean()), 5),
                "cos_min": round(float(cos.min()), 5),
                "identical_top_k": round(float((top == ref_top).all(axis=1).mean()), 4),
                "overlap_at_k": round(float(np.mean(overlap)), 4),
            }
        rows.append(row)
        print(json.dumps(row), flush=True)

    k = args.k
    print(
        f"\n| backend | sentences/s | vs torch | cosine mean / min | identical top-{k} "
        f"| overlap@{k} |\n|---|---:|---:|---:|---:|---:|"
    )
    for r in rows:
        if r["backend"] == "torch":
            print(f"| torch (fp32, reference) | {r['sentences_per_s']:,.0f} | 1.00x | | | |")
            continue
        print(
            f"| {r['backend']} | {r['sentences_per_s']:,.0f} | {r['speedup']:.2f}x "
            f"| {r['cos_mean']:.5f} / {r['cos_min']:.5f} | {r['identical_top_k']:.1%} "
            f"| {r['overlap_at_k']:.3f} |"
        )
    if args.out:
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}))


if __name__ == "__main__":
    main()
