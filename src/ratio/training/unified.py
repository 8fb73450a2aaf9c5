"""A unified relation-conditioned retriever, and the test comparison with the specialists.

The paper trains one retriever per operation and leaves "a unified model receiving r as an
instruction" to future work (§5.1). Here one model trains on the pairs of all three relations
with the relation as a query-side instruction (``train.unified_instruction``); trials and
checkpoints are selected on the macro average of validation MRR@10 over relations, so
Broaden's few queries count as much as Specify's many.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from ratio.core.config import RunConfig, SystemConfig
from ratio.core.io import write_text_atomic
from ratio.core.layout import UNIFIED, RunDir
from ratio.core.provenance import stamp
from ratio.core.records import RELATIONS
from ratio.evaluation.harness import (
    EvaluationResults,
    index_store,
    make_pool,
    named_systems,
    system_label,
    write_results,
)
from ratio.evaluation.overlap import OverlapResult, lexical_overlap, plot_overlap
from ratio.metrics import Qrels, Ranking
from ratio.metrics.evaluate import evaluate_per_query
from ratio.metrics.significance import paired_scores, randomization_test
from ratio.retrieval.models import models_dirs, prefixes, resolve_model
from ratio.retrieval.shipped import latest, load_shipped
from ratio.retrieval.store import per_move
from ratio.training.data import (
    TrainingError,
    relation_pairs,
    sample_indices,
    setup_prefixes,
    unified_prefixes,
)
from ratio.training.train import train
from ratio.training.validation import METRICS

DEPTH = 100  # every system ranks this deep (the table's largest k)
# the service's retriever names (``ratio serve``'s ``trained`` is each move's specialist)
COMPARED = ("bm25", "baseline", "trained", "unified", "hybrid", "shipped")
DEFAULT_SYSTEMS = COMPARED[:-1]  # a shipped model is compared when asked for
ALIASES = {"specialists": "trained"}  # the name before the service's was adopted


def train_unified(config: RunConfig, *, progress: bool = True, callbacks=()) -> dict[str, Any]:
    """Train (and select) the unified model on every relation; see :func:`ratio.training.train.train`."""
    return train(config, "all", unified=True, progress=progress, callbacks=callbacks)


def _evaluated(s: SystemConfig, config: RunConfig) -> SystemConfig:
    """``s`` under the name ``ratio evaluate`` gives the same system (a configured one with the
    same settings, else the harness's default label), so the two share its saved indexes."""

    def settings(x: SystemConfig) -> dict[str, Any]:
        d = x.identity()
        del d["name"], d["max_pool"]  # an index is per pool anyway: the folder names the pool
        return d

    same = (n for n, e in named_systems(config).items() if settings(e) == settings(s))
    return dataclasses.replace(s, name=next(same, system_label(s)))


def compare(
    config: RunConfig,
    *,
    split: str = "test",
    relations: list[str] | None = None,
    systems: tuple[str, ...] = DEFAULT_SYSTEMS,
    max_queries: int | None = None,
    max_pool: int | None = None,
    out: str | Path | None = None,
    progress: bool = True,
    specialists: list[str] | None = None,
    shipped: str | Path | None = None,
    command: str = "",
) -> EvaluationResults:
    """BM25 vs baseline vs specialists vs unified vs hybrid (RRF of BM25 and each move's
    specialist) vs a shipped model (``shipped``: its folder, default the newest) on one split, in the harness's table layout (``results.{md,csv,json}``), with
    paired randomization tests of every row against BM25 and against the baseline.

    ``max_queries``/``max_pool`` default to ``train.test_max_queries``/``test_max_pool`` (0:
    all queries, the full shared pool). Each specialist costs one encoding of the pool.
    The systems are defined here, not in ``[evaluate]``, because each trained model is queried
    with the prefix it was trained with (an ``instructed`` view of its index); the store
    (shared with ``ratio evaluate``), fusion, metrics and tables are the harness's.
    """
    tc = config.train
    systems = tuple(ALIASES.get(s, s) for s in systems)
    unknown = sorted(set(systems) - set(COMPARED))
    if unknown:
        raise TrainingError(
            f"unknown system {', '.join(unknown)} for train-compare; use {', '.join(COMPARED)}"
        )
    relations = relations or [r for r in config.evaluate.relations if r in RELATIONS]
    max_queries = tc.test_max_queries if max_queries is None else max_queries
    max_pool = tc.test_max_pool if max_pool is None else max_pool
    seed = config.build.seed
    run_dir = RunDir.of(config)
    bench = run_dir.benchmark.load(split)
    models = run_dir.trained
    _, spec = resolve_model(tc.base_model)
    qp, dp = setup_prefixes(tc.prefix, spec)
    uni = unified_prefixes(tc.unified_instruction)

    per_rel: dict[str, tuple[list[str], list[str], dict[str, dict[str, int]]]] = {}
    for rel in relations:
        ids, texts, golds = relation_pairs(bench, rel)
        idx = sample_indices(len(ids), max_queries, seed)
        per_rel[rel] = (
            [ids[i] for i in idx],
            [texts[i] for i in idx],
            {ids[i]: {golds[i]: 1} for i in idx},
        )
    all_golds = {g for _, _, q in per_rel.values() for d in q.values() for g in d}
    pool = make_pool(
        bench, relation=None, oracle="none", golds=all_golds, max_pool=max_pool, seed=seed
    )
    if max_queries:
        pool.description += f"; seeded sample of <= {max_queries:,} queries per relation"
        if pool.key != "shared":  # a sub-pool of the sampled golds: not the harness's, same cap
            pool.key += f"-q{max_queries}"

    base_name = Path(tc.base_model).name
    bm25 = _evaluated(SystemConfig(kind="bm25"), config)
    baseline = _evaluated(SystemConfig(kind="dense", model=tc.base_model, prefix=tc.prefix), config)
    store = index_store(
        run_dir, split, {bm25.name: bm25, baseline.name: baseline}, progress=progress
    )

    def trained(
        leaf: str, kind: str, model: Path, queries: dict[str, str]
    ) -> dict[str, tuple[str, str]]:
        """``{relation: (instructed view of the model's index ``leaf``, query prefix)}``, each
        view named as the service names retriever ``kind`` for that move. Its
        documents must get the prefix training gave them (``dp``): a fine-tune is not in the
        registry, so its ``recommended`` prefix is empty."""
        got = prefixes(resolve_model(str(model))[1], tc.prefix)[1]
        if got != dp:
            raise TrainingError(
                f"{model}: trained with document prefix {dp!r} (train.prefix = "
                f"{tc.prefix!r} of {tc.base_model}), but its index would prefix {got!r}"
            )
        store.define(SystemConfig(name=leaf, kind="dense", model=str(model), prefix=tc.prefix))
        views = {r: (per_move(kind, r), q) for r, q in queries.items()}
        for view, q in views.values():
            store.define(SystemConfig(view, kind="instructed", components=[leaf], instruction=q))
        return views

    # (setup, model, {relation: (store system, query prefix)})
    plan: list[tuple[str, str, dict[str, tuple[str, str]]]] = []
    tuned: dict[str, str] = {}  # relation -> its specialist's store system
    skipped: list[str] = []
    if "baseline" in systems:
        plan.append(
            (f"{tc.prefix}-Baseline", tc.base_model, {r: (baseline.name, qp) for r in relations})
        )
    if "trained" in systems:
        for rel in specialists or relations:
            d = models.best(rel)
            if (d / "modules.json").is_file():
                views = trained(f"specialist-{rel}", "trained", d, {rel: qp})
                tuned[rel] = views[rel][0]
                plan.append((f"{tc.prefix}-Tuned", str(d), views))
            else:
                skipped.append(f"specialist {rel}: no model at {d}")
    if "shipped" in systems:
        folder = Path(shipped) if shipped else latest(models_dirs())
        if folder is None:
            skipped.append("shipped: no models/ratio-moves-*-v<N> folder")
        else:
            s = load_shipped(folder)
            views = trained(s.name, "shipped", s.path, {r: s.instructions[r] for r in relations})
            plan.append((s.name, str(s.path), views))
    if "unified" in systems:
        d = models.best(UNIFIED)
        if (d / "modules.json").is_file():
            views = trained(UNIFIED, "unified", d, {r: uni[r] for r in relations})
            plan.append((f"{tc.prefix}-Unified ({tc.unified_instruction})", str(d), views))
        else:
            skipped.append(f"unified: no model at {d}")

    rows: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    per_query: dict[tuple[str, str], Any] = {}
    ranked: dict[tuple[str, str], Ranking] = {}  # each system's own order, for the overlap plot

    def add_row(system, kind, model, setup, rel, name: str, qp_, dp_):
        qids, texts, qrels = per_rel[rel]
        run = store.rank(name, pool, texts, DEPTH, qids)
        pq = evaluate_per_query(Qrels.from_dict(qrels), run, METRICS)
        per_query[(setup, rel)], ranked[(setup, rel)] = pq, run
        rows.append(
            {
                "system": system,
                "kind": kind,
                "model": model,
                "setup": setup,
                "relation": rel,
                "n_queries": len(qrels),
                "pool": pool.description,
                "pool_size": pool.size,
                "query_prefix": qp_,
                "doc_prefix": dp_,
                "metrics": pq.mean(),
            }
        )

    if "bm25" in systems:
        t0 = time.perf_counter()
        for rel in relations:
            add_row("BM25-unigram", "bm25", "", "BM25", rel, bm25.name, "", "")
        timings["BM25"] = time.perf_counter() - t0
    for setup, model, views_of in plan:
        t0 = time.perf_counter()
        for rel, (name, prefix) in views_of.items():
            add_row(base_name, "dense", model, setup, rel, name, prefix, dp)
        timings[f"{setup}:{model}"] = time.perf_counter() - t0
    if "hybrid" in systems and "bm25" in systems:
        for rel in relations:
            if rel in tuned:  # RRF of BM25 and the move's specialist, each ranked 100 deep
                parts = [bm25.name, tuned[rel]]
                name = store.define(
                    SystemConfig(name=per_move("hybrid", rel), kind="hybrid", components=parts)
                )
                add_row(base_name, "hybrid", "", "RRF(BM25, Tuned)", rel, name, "", dp)
    # paired randomization tests of each row's per-query MRR@10 against BM25 and the baseline
    for ref, ref_setup in (("bm25", "BM25"), ("baseline", f"{tc.prefix}-Baseline")):
        for row in rows:
            other = per_query.get((ref_setup, row["relation"]))
            if other is not None and row["setup"] != ref_setup:
                a, b = paired_scores(per_query[(row["setup"], row["relation"])], other, "mrr@10")
                t = randomization_test(a, b, seed=seed)
                row[f"vs_{ref}_mrr@10"] = {"diff": t.statistic, "p_value": t.p_value, "n": t.n}
    if not rows:
        raise TrainingError("nothing to compare: " + "; ".join(skipped or ["no systems"]))
    meta = {
        "split": split,
        "relations": relations,
        "systems": list(dict.fromkeys(f"{r['system']} {r['setup']}" for r in rows)),
        "ks": [1, 10, 100],
        "metrics": list(METRICS),
        "oracle": "none",
        "seed": seed,
        "n_candidates": len(bench.candidate_ids),
        "benchmark": str(bench.directory),
        "skipped": skipped,
        "seconds": timings,
        "command": command,
        "provenance": stamp("train-compare", config.digest("train", "build")),
    }
    res = EvaluationResults(rows, meta)
    target = Path(out) if out else models.compare(split)
    write_results(res, target)
    res.out_dir = target
    overlap = _lexical_overlap(bench, per_rel, ranked, relations, target)
    if overlap:
        res.meta["overlap"] = overlap
    (target / "timings.json").write_text(json.dumps(timings, indent=2))
    return res


def _lexical_overlap(bench, per_rel, runs, relations, target: Path) -> dict[str, Any]:
    """Paper F.1 / Figure 4 for every compared setup: query-top-k Jaccard vs query-gold
    Jaccard per relation, written as ``overlap.json`` and ``overlap.png`` next to the table."""
    panels: dict[str, dict[str, OverlapResult]] = {}
    for rel in relations:
        qrels = Qrels.from_dict(per_rel[rel][2])
        for (setup, r), run in runs.items():
            if r == rel and not setup.startswith("RRF"):
                res = lexical_overlap(bench.queries, bench.candidates, run, qrels)
                panels.setdefault(rel, {})[setup] = res
    if not panels:
        return {}
    doc = {rel: {s: o.to_dict() for s, o in d.items()} for rel, d in panels.items()}
    write_text_atomic(target / "overlap.json", json.dumps(doc, indent=2))
    plot_overlap(panels, target / "overlap.png", "Lexical overlap with the query (paper F.1)")
    return doc
