"""Are the served moves different? Jaccard overlap of the top-k lists two moves return.

Usage:
  .venv/bin/python benchmarks/move_overlap.py [--config configs/neurips.toml] [--queries 200]
      [--k 10] [--seed 13] [--retriever auto] [--out FILE.json]

For each of N seeded test queries (drawn from the split the service serves, any relation),
asks the engine behind ``ratio serve`` for the top-k of Address, Broaden and Specify with the
given retriever, and reports the mean Jaccard overlap per pair of moves. A move-agnostic
retriever (BM25, an untuned model) scores 1.0: every move gets the same list. The BM25
reference is computed in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

from ratio.core.config import load_config
from ratio.core.layout import RunDir
from ratio.serve.engine import MOVES, SearchEngine


def jaccard(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def overlap(engine: SearchEngine, queries: list[str], k: int, retriever: str) -> dict:
    per_pair: dict[str, list[float]] = {f"{a}-{b}": [] for a, b in itertools.combinations(MOVES, 2)}
    used = {m: engine.effective_name(retriever, m) for m in MOVES}
    t0 = time.perf_counter()
    for q in queries:
        ids = {
            m: [r["candidate_id"] for r in engine.search(q, m, k, retriever)["results"]]
            for m in MOVES
        }
        for a, b in itertools.combinations(MOVES, 2):
            per_pair[f"{a}-{b}"].append(jaccard(ids[a], ids[b]))
    pairs = {p: float(np.mean(v)) for p, v in per_pair.items()}
    return {
        "retriever": retriever,
        "per_move": used,
        "mean_jaccard": float(np.mean(list(pairs.values()))),
        "per_pair": pairs,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/neurips.toml")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--retriever", default="auto")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    cfg = load_config(args.config)
    engine = SearchEngine.open(cfg, progress=True)
    split = cfg.serve.split or cfg.evaluate.split
    texts = RunDir.of(cfg).benchmark.load(split).queries.column("text").to_pylist()
    idx = np.random.default_rng(args.seed).permutation(len(texts))[: args.queries]
    queries = [texts[i] for i in idx]
    rows = [overlap(engine, queries, args.k, args.retriever)]
    if args.retriever != "bm25":
        rows.append(overlap(engine, queries, args.k, "bm25"))  # the move-agnostic reference
    doc = {"split": split, "queries": len(queries), "seed": args.seed, "k": args.k, "rows": rows}
    for r in rows:
        pairs = ", ".join(f"{p} {v:.3f}" for p, v in r["per_pair"].items())
        print(
            f"{r['retriever']:>8} ({r['per_move']}): mean Jaccard@{args.k} {r['mean_jaccard']:.3f} [{pairs}]"
        )
    if len(rows) == 2:
        print(f"ratio vs bm25: {rows[0]['mean_jaccard'] / max(rows[1]['mean_jaccard'], 1e-9):.2f}")
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
