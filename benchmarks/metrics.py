"""Time Ratio's metrics against pytrec_eval and ranx on one synthetic run.

Usage: ``.venv/bin/python benchmarks/metrics.py [--queries 10000] [--depth 100]``.
Each library gets the same qrels/run and computes Recall@{1,10}, MRR@{10,100},
nDCG@10, MAP@10, P@10 (pytrec_eval: recip_rank is uncut, so MRR@100 equals it at
depth 100 and MRR@10 would need a second truncated run; we count only one
evaluator call, which favours pytrec_eval). Times are the best of ``--repeat``
runs; ranx's numba JIT is warmed up first. Results are cross-checked.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from ratio.metrics import Qrels, Ranking, evaluate

METRICS = ["recall@1", "recall@10", "mrr@10", "mrr@100", "ndcg@10", "map@10", "precision@10"]


def make_data(n_q: int, depth: int, n_docs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    docs = np.array([f"c{i:07d}" for i in range(n_docs)])
    idx = np.stack([rng.choice(n_docs, depth, replace=False) for _ in range(n_q)])
    scores = rng.random((n_q, depth))
    qids = [f"q{i:06d}" for i in range(n_q)]
    # one gold per query (Ratio's setting); half of them inside the retrieved list
    gold = np.where(
        rng.random(n_q) < 0.5,
        idx[np.arange(n_q), rng.integers(0, depth, n_q)],
        rng.integers(0, n_docs, n_q),
    )
    qrels = {q: {str(docs[g]): 1} for q, g in zip(qids, gold, strict=True)}
    run = {
        q: dict(zip(docs[idx[i]].tolist(), scores[i].tolist(), strict=True))
        for i, q in enumerate(qids)
    }
    return qids, docs, idx, scores, qrels, run


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    qids, docs, idx, scores, qrels_d, run_d = make_data(args.queries, args.depth, args.docs)
    print(
        f"{args.queries} queries x {args.depth} results, {len(METRICS)} metrics, best of {args.repeat}"
    )

    rows: list[tuple[str, float]] = []
    qrels = Qrels.from_dict(qrels_d)
    t, run = best_of(lambda: Ranking.from_arrays(qids, docs, idx, scores), args.repeat)
    rows.append(("ratio: Ranking.from_arrays (retriever output)", t))
    t, run2 = best_of(lambda: Ranking.from_dict(run_d), args.repeat)
    rows.append(("ratio: Ranking.from_dict", t))
    t, ours = best_of(lambda: evaluate(qrels, run, METRICS), args.repeat)
    rows.append(("ratio: evaluate (Ranking built)", t))
    t, _ = best_of(lambda: evaluate(qrels_d, run_d, METRICS), args.repeat)
    rows.append(("ratio: evaluate from dicts (incl. build)", t))

    import pytrec_eval

    measures = {"recall.1,10", "recip_rank", "ndcg_cut.10", "map_cut.10", "P.10"}
    t, ptrec = best_of(
        lambda: pytrec_eval.RelevanceEvaluator(qrels_d, measures).evaluate(run_d), args.repeat
    )
    rows.append(("pytrec_eval: evaluator + evaluate (dicts)", t))
    ev = pytrec_eval.RelevanceEvaluator(qrels_d, measures)
    t, _ = best_of(lambda: ev.evaluate(run_d), args.repeat)
    rows.append(("pytrec_eval: evaluate only", t))

    import ranx

    rmetrics = [m.replace("precision", "precision") for m in METRICS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(ranx.Qrels(qrels_d), ranx.Run(run_d), rmetrics)  # JIT warm-up
        rq = ranx.Qrels(qrels_d)
        rr = ranx.Run(run_d)
        t, rres = best_of(
            lambda: ranx.evaluate(rq, rr, rmetrics, make_comparable=False), args.repeat
        )
        rows.append(("ranx: evaluate only (Qrels/Run built)", t))
        t, _ = best_of(
            lambda: ranx.evaluate(ranx.Qrels(qrels_d), ranx.Run(run_d), rmetrics), args.repeat
        )
        rows.append(("ranx: evaluate from dicts (incl. build)", t))

    # cross-check (no ties: scores are continuous random)
    assert all(abs(ours[m] - rres[m]) < 1e-9 for m in METRICS), (ours, rres)
    pt_mrr = float(np.mean([v["recip_rank"] for v in ptrec.values()]))
    assert abs(ours["mrr@100"] - pt_mrr) < 1e-9

    base = dict(rows)
    print(f"{'step':48s} {'seconds':>9s}")
    for name, secs in rows:
        print(f"{name:48s} {secs:9.4f}")
    e2e = base["ratio: evaluate from dicts (incl. build)"]
    core = base["ratio: evaluate (Ranking built)"]
    print("\nratios (>1 means ratio is faster):")
    print(
        f"  dicts end-to-end   vs pytrec_eval: {base['pytrec_eval: evaluator + evaluate (dicts)'] / e2e:6.2f}x"
    )
    print(
        f"  dicts end-to-end   vs ranx:        {base['ranx: evaluate from dicts (incl. build)'] / e2e:6.2f}x"
    )
    print(f"  evaluate only      vs pytrec_eval: {base['pytrec_eval: evaluate only'] / core:6.2f}x")
    print(
        f"  evaluate only      vs ranx:        {base['ranx: evaluate only (Qrels/Run built)'] / core:6.2f}x"
    )
    arrays = base["ratio: Ranking.from_arrays (retriever output)"] + core
    print(
        f"  arrays->metrics    vs pytrec_eval: {base['pytrec_eval: evaluator + evaluate (dicts)'] / arrays:6.2f}x"
    )
    print(
        f"  arrays->metrics    vs ranx:        {base['ranx: evaluate from dicts (incl. build)'] / arrays:6.2f}x"
    )


if __name__ == "__main__":
    main()
