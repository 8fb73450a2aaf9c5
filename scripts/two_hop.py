"""The two-hop measurement of docs/results.md: does a chain of moves reach what one move misses?

Usage:
  .venv/bin/python scripts/two_hop.py [--config configs/neurips.toml] [--split test]
      [--split validation] [--max-pool 20000] [--k 10] [--shipped models/ratio-moves-minilm-v1]

Per split: the two-hop pairs the benchmark holds (:func:`ratio.evaluation.chains.two_hop_pairs`),
a seeded sub-pool of ``--max-pool`` candidates holding every middle and end sentence
(0: the full pool), then per chain kind and system (BM25; the shipped move model, each move
queried with its instruction) Recall@k of the end through the chain and directly.
"""

from __future__ import annotations

import argparse
import json

from ratio.core.config import SystemConfig, load_config
from ratio.core.layout import RunDir
from ratio.evaluation.chains import measure_chains, two_hop_pairs
from ratio.evaluation.harness import index_store, make_pool, move_system, system_label
from ratio.retrieval.models import models_dirs
from ratio.retrieval.shipped import latest, load_shipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/neurips.toml")
    ap.add_argument("--split", action="append")
    ap.add_argument("--max-pool", type=int, default=20_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--shipped", default="")
    args = ap.parse_args()
    cfg = load_config(args.config)
    run = RunDir.of(cfg)
    folder = args.shipped or latest(models_dirs())
    shipped = load_shipped(folder)
    bm25 = SystemConfig(name=system_label(SystemConfig(kind="bm25")), kind="bm25")
    dense = SystemConfig(name=shipped.name, kind="dense", model=str(shipped.path))
    rows = []
    for split in args.split or ["test", "validation"]:
        bench = run.benchmark.load(split)
        hops = two_hop_pairs(bench)
        golds = {h.mid_id for h in hops} | {h.end_id for h in hops}
        pool = make_pool(
            bench,
            relation=None,
            oracle="none",
            golds=golds,
            max_pool=args.max_pool,
            seed=cfg.build.seed,
        )
        store = index_store(run, split, {bm25.name: bm25, dense.name: dense}, progress=True)
        for s in (bm25, dense):
            for r in measure_chains(
                store,
                pool,
                hops,
                lambda move, s=s, store=store: move_system(store, s, move),
                k=args.k,
            ):
                rows.append({"split": split, "system": s.name, "pool": pool.size, **r})
                print(json.dumps(rows[-1]))
    k = args.k
    print(
        f"\n| split | system | chain | pairs | pool | 1st step top-1 = middle | chain R@{k} "
        f"| chain with true middle R@{k} | direct, 2nd move R@{k} | direct, 1st move R@{k} |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        first, second = r["chain"].split(" → ")
        print(
            f"| {r['split']} | {r['system']} | {r['chain']} | {r['n']} | {r['pool']:,} "
            f"| {r['first_step_found_mid@1']:.2f} | {r[f'chain_recall@{k}']:.2f} "
            f"| {r[f'chain_with_true_mid_recall@{k}']:.2f} | {r[f'direct_{second}_recall@{k}']:.2f} "
            f"| {r[f'direct_{first}_recall@{k}']:.2f} |"
        )


if __name__ == "__main__":
    main()
