"""The evaluation harness: every configured system x relation on one benchmark split.

Each relation's queries are ranked at depth ``max(ks)`` by every system through one
:class:`~ratio.retrieval.store.IndexStore` (indexes reused while the system config and
the pool are unchanged); TREC runs and R@k / MRR@k in the layout of the paper's Tables 3
and 8 are written under ``evaluate.out``.

Pools: the full shared pool (the paper's setting); a seeded sub-pool when a system sets
``max_pool`` (every gold of the evaluated queries plus random others, so metrics stay
defined); or an oracle pool per relation (Appendix F.2): ``relation`` keeps only
candidates mined for that relation, ``golds`` only that relation's golds.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ratio.core.config import RunConfig, SystemConfig
from ratio.core.io import RatioError, write_text_atomic
from ratio.core.layout import HELD_SUFFIX, Benchmark, RunDir
from ratio.core.provenance import stamp
from ratio.core.records import RELATIONS
from ratio.evaluation.oracle import check_golds_in_pool, filter_pool, relation_pool
from ratio.evaluation.tables import results_table
from ratio.metrics import Qrels, evaluate
from ratio.metrics.trec import write_run
from ratio.retrieval.models import resolve_model
from ratio.retrieval.shipped import ShippedModel, card_summary, is_shipped, load_shipped
from ratio.retrieval.store import IndexedPool, IndexStore, Pool, per_move, slug

ORACLES = ("none", "relation", "golds")


class EvaluationError(RatioError):
    pass


def _check_oracle(oracle: str) -> None:
    if oracle not in ORACLES:
        raise EvaluationError(f"unknown oracle {oracle!r}; use one of {', '.join(ORACLES)}")


def _relevant(qrels: Mapping[str, Mapping[str, int]]) -> set[str]:
    return {c for d in qrels.values() for c, v in d.items() if v > 0}


def sub_pool(ids: Sequence[str], golds: set[str], max_pool: int, seed: int) -> np.ndarray:
    """Sorted row indices of a seeded sub-pool of ``ids``: every gold plus random others."""
    is_gold = np.fromiter((i in golds for i in ids), dtype=bool, count=len(ids))
    gold_idx, other_idx = np.nonzero(is_gold)[0], np.nonzero(~is_gold)[0]
    n_other = min(max(0, max_pool - len(gold_idx)), len(other_idx))
    chosen = np.random.default_rng(seed).choice(other_idx, size=n_other, replace=False)
    return np.sort(np.concatenate([gold_idx, chosen]).astype(np.int64))


def sampled_queries(
    bench: Benchmark, relations: Sequence[str], max_queries: int, seed: int
) -> dict[str, tuple[list[str], list[str], dict[str, dict[str, int]], set[str]]]:
    """Per relation: (query ids, texts, qrels, golds) of every query, or of a seeded sample of
    ``max_queries`` stratified by marker (0 = all)."""
    out = {}
    for rel in relations:
        qids, texts = bench.relation_queries(rel, max_queries, seed)
        qrels = bench.qrels_dict(qids)
        out[rel] = (qids, texts, qrels, _relevant(qrels))
    return out


def sub_pool_ids(
    bench: Benchmark, relations: Sequence[str], max_pool: int, max_queries: int, seed: int
) -> list[str]:
    """The candidate ids of the seeded sub-pool a system with this ``max_pool`` and
    ``max_queries`` is evaluated on: every gold of its sampled queries plus random others. The
    service serves the same one (``[serve] max_pool``), so it reuses the evaluation's vectors."""
    golds = set().union(
        *(g for *_, g in sampled_queries(bench, relations, max_queries, seed).values())
    )
    ids = bench.candidate_ids
    if not max_pool or max_pool >= len(ids):
        return list(ids)
    return [ids[i] for i in sub_pool(ids, golds, max_pool, seed)]


def make_pool(
    bench: Benchmark,
    *,
    relation: str | None,
    oracle: str,
    golds: set[str],
    max_pool: int,
    seed: int,
) -> Pool:
    """The pool a system searches: shared or oracle (Appendix F.2), optionally capped."""
    _check_oracle(oracle)
    gold_list = sorted(golds)
    base = bench.candidates
    key, desc = "shared", "shared pool"
    if oracle == "relation":
        if relation is None:
            raise EvaluationError("oracle 'relation' needs the relation whose pool to keep")
        base = relation_pool(bench.candidates, relation, keep_ids=gold_list)
        key, desc = f"oracle-relation-{relation}", f"oracle pool: {relation} candidates only"
    elif oracle == "golds":
        base = filter_pool(bench.candidates, gold_list)
        key, desc = f"oracle-golds-{relation}", f"oracle pool: {relation} golds only"
    ids = base.column("candidate_id").to_pylist()
    texts = base.column("text").to_pylist()
    if max_pool and max_pool < len(ids):
        keep = sub_pool(ids, golds, max_pool, seed)
        n_gold = sum(1 for i in ids if i in golds)
        ids = [ids[i] for i in keep]
        texts = [texts[i] for i in keep]
        key += f"-max{max_pool}-seed{seed}"
        desc += (
            f", seeded sub-pool of {len(ids):,} (seed {seed}): all {n_gold:,} golds of the "
            f"evaluated queries + {len(ids) - n_gold:,} random others"
        )
    else:
        desc += f" ({len(ids):,} candidates)"
    check_golds_in_pool(ids, {"_": dict.fromkeys(gold_list, 1)})
    return Pool(key, desc, ids, texts)


def system_label(s: SystemConfig) -> str:
    """A default name when the config gives none, e.g. ``bm25-2gram``, ``dense-all-MiniLM-L6-v2-generic``."""
    if s.kind == "bm25":
        return "bm25" if s.ngram <= 1 else f"bm25-{s.ngram}gram"
    if s.kind == "dense":
        return (
            f"dense-{Path(s.model).name}-{s.prefix}"
            + ("-hnsw" if s.index == "hnsw" else "")
            + ("" if s.backend == "auto" else f"-{s.backend}")
        )
    return f"{s.kind}-{s.fusion}-" + "+".join(s.components)


def setup_label(s: SystemConfig) -> str:
    """The paper's "Setup" column: n-gram variant for BM25, prefix setup for dense models,
    the component and query text of an instructed view, the fusion of a hybrid."""
    if s.kind == "bm25":
        return {1: "unigram", 2: "bigram", 3: "trigram"}.get(s.ngram, f"{s.ngram}-gram")
    if s.kind == "dense":
        return s.prefix + ("-hnsw" if s.index == "hnsw" else "")
    if s.kind == "instructed":
        return f"{'+'.join(s.components)}, query {s.instruction!r}"
    return f"{s.fusion}({'+'.join(s.components)})"


def _pool_split(split: str, pool: IndexedPool) -> str:
    """A "+held" view searches its split's shared pool, so it shares the split's indexes; its
    sub-pools hold other golds, so they keep their own."""
    return split.removesuffix(HELD_SUFFIX) if pool.key == "shared" else split


def index_store(
    run_dir: RunDir, split: str, systems: Mapping[str, SystemConfig], *, progress: bool = False
) -> IndexStore:
    """The run's store for ``split``: indexes in ``indexes/<system>/<split>-<pool key>``,
    embeddings in the run's cache. ``ratio evaluate`` and ``ratio train-compare`` both rank
    through it, so a system either one indexed is reused by the other."""
    return IndexStore(
        systems,
        folder=lambda name, pool: run_dir.index(
            slug(name), f"{_pool_split(split, pool)}-{pool.key}"
        ),
        embeddings=run_dir.embeddings,
        progress=progress,
    )


def _shipped(s: SystemConfig) -> ShippedModel | None:
    """The shipped move model a dense system names, if it names one."""
    if s.kind != "dense" or not s.model:
        return None
    try:
        folder = resolve_model(s.model)[0]
    except RatioError:
        return None  # the store reports a missing model when it loads it
    return load_shipped(folder) if is_shipped(folder) else None


def move_system(store: IndexStore, s: SystemConfig, relation: str) -> str:
    """The store system that ranks ``s`` for ``relation``: ``s`` itself, or for a shipped move
    model (its folder carries one query instruction per move) an instructed view of its index
    that reads the queries with the move's instruction, as the service does."""
    shipped = _shipped(s)
    if shipped is None:
        return s.name
    instruction = shipped.instructions[relation]
    view = SystemConfig(
        name=per_move(s.name, relation),
        kind="instructed",
        components=[s.name],
        instruction=instruction,
    )
    return store.define(view)


def named_systems(config: RunConfig) -> dict[str, SystemConfig]:
    """``[[evaluate.systems]]`` by name (a default label where a system has none; BM25 alone
    when none are configured); names must stay distinct once made file-safe."""
    systems = config.evaluate.systems or [SystemConfig(name="bm25", kind="bm25")]
    out: dict[str, SystemConfig] = {}
    slugs: dict[str, str] = {}
    for i, s in enumerate(systems):
        s = dataclasses.replace(s, name=s.name or system_label(s))
        if s.name in out:
            raise EvaluationError(f"evaluate.systems[{i}]: duplicate system name {s.name!r}")
        if slug(s.name) in slugs:
            raise EvaluationError(
                f"evaluate.systems[{i}]: name {s.name!r} clashes with {slugs[slug(s.name)]!r} "
                f"once made file-safe ({slug(s.name)!r})"
            )
        slugs[slug(s.name)] = s.name
        out[s.name] = s
    return out


def metric_names(ks: Sequence[int]) -> list[str]:
    """recall@k for every k, mrr@k for every k > 1 (MRR@1 equals R@1 with one gold)."""
    ks = sorted(set(int(k) for k in ks))
    if not ks or ks[0] < 1:
        raise EvaluationError(f"evaluate.ks must be positive integers, got {ks}")
    return [f"recall@{k}" for k in ks] + [f"mrr@{k}" for k in ks if k > 1]


@dataclass
class EvaluationResults:
    """One row per (system, relation) plus what was evaluated and where outputs went."""

    rows: list[dict[str, Any]]
    meta: dict[str, Any]
    out_dir: Path | None = None
    files: dict[str, str] = field(default_factory=dict)

    def table(self, system: str, relation: str) -> dict[str, float]:
        for r in self.rows:
            if r["system"] == system and r["relation"] == relation:
                return r["metrics"]
        raise KeyError((system, relation))


def evaluate_systems(
    config: RunConfig,
    *,
    oracle: str = "none",
    systems: Sequence[str] | None = None,
    write: bool = True,
    progress: bool = True,
) -> EvaluationResults:
    """Evaluate every configured system on every configured relation (see module docstring)."""
    ev = config.evaluate
    _check_oracle(oracle)
    for r in ev.relations:
        if r not in RELATIONS:
            raise EvaluationError(
                f"evaluate.relations: unknown relation {r!r}; known: {', '.join(RELATIONS)}"
            )
    run_dir = RunDir.of(config)
    out_dir = run_dir.eval(ev.split)
    bench = run_dir.benchmark.load(ev.split)
    named = named_systems(config)
    chosen = list(systems or named)
    for name in chosen:
        if name not in named:
            raise EvaluationError(f"no system named {name!r}; configured: {', '.join(named)}")
    metrics = metric_names(ev.ks)
    depth = max(ev.ks)
    store = index_store(run_dir, ev.split, named, progress=progress)
    pool_ids = set(bench.candidate_ids)

    per_rel = {}
    for rel in ev.relations:
        qids, texts = bench.relation_queries(rel)
        qrels = bench.qrels_dict(qids)
        golds = _relevant(qrels)
        missing = golds - pool_ids
        if missing:
            raise EvaluationError(
                f"{bench.directory / 'qrels.parquet'}: {len(missing)} {rel} gold(s) absent from "
                f"candidates.parquet, e.g. {sorted(missing)[0]!r}"
            )
        per_rel[rel] = (qids, texts, qrels, golds)

    rows: list[dict[str, Any]] = []
    files: dict[str, str] = {}
    shipped = {name: _shipped(named[name]) for name in chosen}
    cards = {name: card_summary(m) for name, m in shipped.items() if m is not None}
    bar = tqdm(
        total=len(chosen) * len(ev.relations), desc="evaluate", disable=None if progress else True
    )
    for name in chosen:
        s = named[name]
        sys_rel = (
            sampled_queries(bench, ev.relations, s.max_queries, config.build.seed)
            if s.max_queries
            else per_rel
        )
        sys_golds = set().union(*(g for *_, g in sys_rel.values()))
        for rel in ev.relations:
            bar.set_postfix_str(f"{name} / {rel}")
            qids, texts, qrels, golds = sys_rel[rel]
            # the shared pool's sub-pool keeps every evaluated gold of every relation,
            # so one index serves all relations; oracle pools are per relation
            pool = make_pool(
                bench,
                relation=rel,
                oracle=oracle,
                golds=sys_golds if oracle == "none" else golds,
                max_pool=s.max_pool,
                seed=config.build.seed,
            )
            row = {
                "system": name,
                "kind": s.kind,
                "model": s.model,
                "setup": setup_label(s),
                "relation": rel,
                "n_queries": len(qrels),
                "query_sample": (
                    f"seeded stratified sample of {len(qrels)} queries"
                    if s.max_queries and len(per_rel[rel][0]) > s.max_queries
                    else "all queries"
                ),
                "pool": pool.description,
                "pool_size": pool.size,
                "metrics": {m: None for m in metrics},
            }
            if qrels:
                ranked = move_system(store, s, rel)
                run = store.rank(ranked, pool, texts, depth, qids).in_trec_order()
                row["metrics"] = evaluate(Qrels.from_dict(qrels), run, metrics)
                if write:
                    tag = "" if oracle == "none" else f".{pool.key}"
                    p = out_dir / "runs" / f"{slug(name)}.{rel}{tag}.trec"
                    write_run(run, p, tag=slug(name))
                    files[f"run:{name}:{rel}"] = str(p)
            rows.append(row)
            bar.update()
    bar.close()

    meta = {
        "split": ev.split,
        "relations": list(ev.relations),
        "systems": chosen,
        "ks": list(ev.ks),
        "metrics": metrics,
        "oracle": oracle,
        "shipped_cards": cards,  # a shipped model's own test numbers, quoted under the table
        "seed": config.build.seed,
        "n_candidates": len(pool_ids),
        "benchmark": str(bench.directory),
        "provenance": stamp("evaluate", config.digest("build", "evaluate")),
    }
    results = EvaluationResults(rows, meta, out_dir if write else None, files)
    if write:
        write_results(results, out_dir)
    return results


def table_metrics(ks: Sequence[int]) -> list[str]:
    """The table's columns: the paper's R@1, R@10, M@10, M@100 for ks = 1, 10, 100."""
    ks = sorted(set(int(k) for k in ks))
    top = ks[-1]
    return [f"recall@{k}" for k in ks if k < top or len(ks) == 1] + [
        f"mrr@{k}" for k in ks if k > 1
    ]


def results_caption(rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    """States the split, query counts and every pool evaluated, under the table."""
    n: dict[str, int] = {}
    for r in rows:
        n.setdefault(r["relation"], r["n_queries"])
    counts = " / ".join(f"{v:,}" for v in n.values())
    lines = [
        f"Split `{meta['split']}`; n = {counts} queries for "
        f"{' / '.join(k.capitalize() for k in n)}. R@k = Recall@k, M@k = MRR@k (%)."
    ]
    pools = dict.fromkeys(f"{r['system']}: {r['pool']}" for r in rows)
    distinct = dict.fromkeys(r["pool"] for r in rows)
    if len(distinct) == 1:
        lines.append(f"Pool: {next(iter(distinct))}.")
    else:
        lines.append("Pools: " + "; ".join(pools) + ".")
    for name, summary in (meta.get("shipped_cards") or {}).items():
        lines.append(f"{name}: {summary}.")
    return "\n".join(lines)


def write_results(results: EvaluationResults, out_dir: Path) -> None:
    """``results.md`` / ``.csv`` (the paper's table layout) and ``results.json``: the table's
    lossless JSON (loadable with ``ResultsTable.from_json``) plus ``meta`` and raw ``records``."""
    meta = results.meta
    title = f"Results on {meta['split']}"
    if meta.get("oracle") not in (None, "none"):
        title += f" (oracle pool: {meta['oracle']})"
    table = results_table(results.rows, meta["relations"], table_metrics(meta["ks"]), title)
    table.caption = results_caption(results.rows, meta)
    doc = json.loads(table.to_json()) | {"meta": meta, "records": results.rows}
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out_dir / "results.md", table.to_markdown())
    write_text_atomic(out_dir / "results.csv", table.to_csv())
    write_text_atomic(out_dir / "results.json", json.dumps(doc, indent=2) + "\n")
    results.files.update({k: str(out_dir / f"results.{k}") for k in ("json", "md", "csv")})
