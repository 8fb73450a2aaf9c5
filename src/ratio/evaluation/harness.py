"""The evaluation harness: every configured system x relation on one benchmark split.

Reads ``<build.out>/benchmark/<split>/{queries,candidates,qrels}.parquet``,
indexes the split's shared candidate pool once per system (cached on disk under
``<build.out>/indexes/<system>/<pool>``, reused while the system config and the
pool are unchanged), searches each relation's queries at depth ``max(ks)``,
writes TREC runs, and reports R@k / MRR@k per relation in the layout of the
paper's Tables 3 and 8 (``results.{md,csv,json}`` under ``evaluate.out``).

Pools: the full shared pool (the paper's setting); a seeded sub-pool when a
system sets ``max_pool`` (every gold of the evaluated queries plus random other
candidates, so metrics stay defined; stated in the output); or an oracle pool
per relation (Appendix F.2): ``relation`` keeps only candidates mined for that
relation, ``golds`` keeps only that relation's golds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ratio.config import RunConfig, SystemConfig
from ratio.io import RatioError, write_text_atomic
from ratio.provenance import stamp
from ratio.records import RELATIONS
from ratio.retrieval.base import (
    RetrievalError,
    Retriever,
    SearchResult,
    build_retriever,
    pool_fingerprint,
    read_meta,
)

log = logging.getLogger(__name__)

ORACLES = ("none", "relation", "golds")
HARNESS_META = "harness.json"


class EvaluationError(RatioError):
    pass


# ------------------------------------------------------------------ benchmark IO


@dataclass
class Benchmark:
    """One split's queries, shared candidate pool and qrels, as columns."""

    split: str
    directory: Path
    queries: pa.Table
    candidates: pa.Table
    qrels: pa.Table

    @property
    def candidate_ids(self) -> list[str]:
        return self.candidates.column("candidate_id").to_pylist()

    @property
    def candidate_texts(self) -> list[str]:
        return self.candidates.column("text").to_pylist()

    def relation_queries(
        self, relation: str, max_queries: int = 0, seed: int = 0
    ) -> tuple[list[str], list[str]]:
        """The relation's queries; with ``max_queries``, a seeded sample stratified by marker
        (the paper's sampler), so slow models can be evaluated on a stated subset."""
        mask = np.asarray(self.queries.column("relation").to_pylist(), dtype=object) == relation
        t = self.queries.filter(pa.array(mask))
        if max_queries and t.num_rows > max_queries:
            from ratio.build.sample import stratified_sample

            t = stratified_sample(t, max_queries, seed)
        return t.column("query_id").to_pylist(), t.column("text").to_pylist()

    def qrels_dict(self, query_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        wanted = set(query_ids)
        out: dict[str, dict[str, int]] = {}
        for q, c, r in zip(
            self.qrels.column("query_id").to_pylist(),
            self.qrels.column("candidate_id").to_pylist(),
            self.qrels.column("relevance").to_pylist(),
            strict=True,
        ):
            if q in wanted:
                out.setdefault(q, {})[c] = int(r)
        return out


_REQUIRED = {
    "queries": ("query_id", "text", "relation"),
    "candidates": ("candidate_id", "text", "origin"),
    "qrels": ("query_id", "candidate_id", "relevance"),
}


def load_benchmark(build_out: Path, split: str) -> Benchmark:
    d = build_out / "benchmark" / split
    tables = {}
    for name, cols in _REQUIRED.items():
        p = d / f"{name}.parquet"
        if not p.is_file():
            raise EvaluationError(
                f"missing {p}; run `ratio build` first (or check build.out and evaluate.split)"
            )
        try:
            t = pq.read_table(p)
        except (OSError, pa.ArrowInvalid) as e:
            raise EvaluationError(f"{p}: unreadable Parquet: {e}") from e
        missing = [c for c in cols if c not in t.column_names]
        if missing:
            raise EvaluationError(f"{p}: missing column(s) {', '.join(missing)}")
        tables[name] = t
    ids = tables["candidates"].column("candidate_id").to_pylist()
    if len(set(ids)) != len(ids):
        raise EvaluationError(f"{d / 'candidates.parquet'}: duplicate candidate_id values")
    return Benchmark(split, d, tables["queries"], tables["candidates"], tables["qrels"])


# ------------------------------------------------------------------ pools


@dataclass
class Pool:
    """A candidate pool to index: its rows and a human-readable statement of what it is."""

    key: str  # directory-safe id of the pool, part of the index cache path
    description: str
    ids: list[str]
    texts: list[str]

    @property
    def size(self) -> int:
        return len(self.ids)


def sub_pool(ids: Sequence[str], golds: set[str], max_pool: int, seed: int) -> np.ndarray:
    """Sorted row indices of a seeded sub-pool of ``ids``: every gold plus random others."""
    is_gold = np.fromiter((i in golds for i in ids), dtype=bool, count=len(ids))
    gold_idx, other_idx = np.nonzero(is_gold)[0], np.nonzero(~is_gold)[0]
    n_other = min(max(0, max_pool - len(gold_idx)), len(other_idx))
    chosen = np.random.default_rng(seed).choice(other_idx, size=n_other, replace=False)
    return np.sort(np.concatenate([gold_idx, chosen]).astype(np.int64))


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
    from ratio.evaluation.oracle import check_golds_in_pool, filter_pool, relation_pool

    gold_list = sorted(golds)
    if oracle == "none":
        base = bench.candidates
        key, desc = "shared", "shared pool"
    elif oracle == "relation":
        base = relation_pool(bench.candidates, relation, keep_ids=gold_list)
        key, desc = f"oracle-relation-{relation}", f"oracle pool: {relation} candidates only"
    elif oracle == "golds":
        base = filter_pool(bench.candidates, gold_list)
        key, desc = f"oracle-golds-{relation}", f"oracle pool: {relation} golds only"
    else:
        raise EvaluationError(f"unknown oracle {oracle!r}; use one of {', '.join(ORACLES)}")
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


# ------------------------------------------------------------------ systems


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
    """The paper's "Setup" column: n-gram variant for BM25, prefix setup for dense models."""
    if s.kind == "bm25":
        return {1: "unigram", 2: "bigram", 3: "trigram"}.get(s.ngram, f"{s.ngram}-gram")
    if s.kind == "dense":
        return s.prefix + ("-hnsw" if s.index == "hnsw" else "")
    return f"{s.fusion}({'+'.join(s.components)})"


def slug(name: str) -> str:
    """A system name made safe for paths and TREC run tags (no spaces or slashes)."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", name).strip("-.") or "system"


def _named_systems(config: RunConfig) -> dict[str, SystemConfig]:
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


def _system_digest(s: SystemConfig, systems: dict[str, SystemConfig]) -> str:
    d = s.identity()
    d.pop("name", None)
    d.pop("max_pool", None)  # the pool itself is fingerprinted separately
    if s.kind == "hybrid":
        d["components"] = [
            _system_digest(systems[c], systems) for c in s.components if c in systems
        ]
    if s.kind == "dense" and s.model:
        try:
            from ratio.retrieval.models import model_key, resolve_model

            d["model_key"] = model_key(resolve_model(s.model)[0])
        except RatioError:
            pass
    return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


class IndexStore:
    """Builds or reloads each system's index for a pool; keeps them in memory for the run."""

    def __init__(self, config: RunConfig, systems: dict[str, SystemConfig], split: str):
        self.root = config.resolve(config.build.out) / "indexes"
        self.embeddings = config.resolve(config.build.out) / "embeddings"
        self.systems = systems
        self.split = split
        self._live: dict[tuple[str, str], Retriever] = {}

    def get(self, name: str, pool: Pool, progress: bool = True) -> Retriever:
        live = self._live.get((name, pool.key))
        if live is not None:
            return live
        s = self.systems[name]
        if s.kind == "hybrid":
            from ratio.retrieval.hybrid import HybridRetriever

            for c in s.components:
                if c not in self.systems:
                    raise EvaluationError(
                        f"hybrid system {name!r}: component {c!r} is not a configured system"
                    )
            comps = [self.get(c, pool, progress) for c in s.components]
            r: Retriever = HybridRetriever(comps, name=name, fusion=s.fusion)
            r.index(pool.ids, pool.texts)  # components already hold the pool: no work
        else:
            r = self._load_or_build(s, pool, progress)
        self._live[(name, pool.key)] = r
        return r

    def _load_or_build(self, s: SystemConfig, pool: Pool, progress: bool) -> Retriever:
        d = self.root / slug(s.name) / f"{self.split}-{pool.key}"
        want = {
            "system_digest": _system_digest(s, self.systems),
            "fingerprint": pool_fingerprint(pool.ids, pool.texts),
        }
        sidecar = d / HARNESS_META
        if sidecar.is_file():
            try:
                have = json.loads(sidecar.read_text())
                if have == want and read_meta(d)["fingerprint"] == want["fingerprint"]:
                    r = Retriever.load(d, mmap=True)
                    r.name = s.name
                    if hasattr(r, "cache_dir"):
                        r.cache_dir = self.embeddings
                    log.info("reusing index %s", d)
                    return r
            except (ValueError, KeyError, RetrievalError) as e:
                log.warning("rebuilding index %s: %s", d, e)
        r = build_retriever(s, systems=self.systems, cache_dir=self.embeddings)
        if progress:
            log.info("indexing %s candidates for %s", f"{pool.size:,}", s.name)
        r.index(pool.ids, pool.texts)
        r.save(d)
        write_text_atomic(sidecar, json.dumps(want, indent=2))
        return r


# ------------------------------------------------------------------ evaluation


def metric_names(ks: Sequence[int]) -> list[str]:
    """recall@k for every k, mrr@k for every k > 1 (MRR@1 equals R@1 with one gold)."""
    ks = sorted(set(int(k) for k in ks))
    if not ks or ks[0] < 1:
        raise EvaluationError(f"evaluate.ks must be positive integers, got {ks}")
    return [f"recall@{k}" for k in ks] + [f"mrr@{k}" for k in ks if k > 1]


def result_to_run(
    result: SearchResult, query_ids: Sequence[str], pool_ids: Sequence[str], name: str
):
    """A :class:`ratio.metrics.Run` from a search result over ``pool_ids``."""
    from ratio.metrics import Run

    pool = np.asarray(pool_ids, dtype=str)
    order = np.argsort(pool)
    sorted_pool = pool[order]
    flat = result.ids.reshape(-1).astype(str)
    pos = np.searchsorted(sorted_pool, flat)
    pos = np.minimum(pos, len(sorted_pool) - 1)
    found = (flat != "") & (sorted_pool[pos] == flat)
    idx = np.where(found, order[pos], -1).reshape(result.ids.shape)
    scores = np.where(idx >= 0, result.scores, 0.0)
    return Run.from_arrays(list(query_ids), pool, idx, scores, name=name)


@dataclass
class EvaluationResults:
    """One row per (system, relation) plus what was evaluated and where outputs went."""

    rows: list[dict[str, Any]]
    meta: dict[str, Any]
    out_dir: Path | None = None
    files: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"meta": self.meta, "rows": self.rows}

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
    from ratio.metrics import Qrels, evaluate
    from ratio.metrics.trec import write_run

    ev = config.evaluate
    if oracle not in ORACLES:
        raise EvaluationError(f"unknown oracle {oracle!r}; use one of {', '.join(ORACLES)}")
    for r in ev.relations:
        if r not in RELATIONS:
            raise EvaluationError(
                f"evaluate.relations: unknown relation {r!r}; known: {', '.join(RELATIONS)}"
            )
    build_out = config.resolve(config.build.out)
    out_dir = config.resolve(ev.out) if ev.out else build_out / "eval" / ev.split
    bench = load_benchmark(build_out, ev.split)
    named = _named_systems(config)
    chosen = list(named) if not systems else list(systems)
    for name in chosen:
        if name not in named:
            raise EvaluationError(f"no system named {name!r}; configured: {', '.join(named)}")
    metrics = metric_names(ev.ks)
    depth = max(ev.ks)
    store = IndexStore(config, named, ev.split)
    pool_ids = set(bench.candidate_ids)

    per_rel = {}
    all_golds: set[str] = set()
    for rel in ev.relations:
        qids, texts = bench.relation_queries(rel)
        qrels = bench.qrels_dict(qids)
        golds = {c for d in qrels.values() for c, v in d.items() if v > 0}
        missing = golds - pool_ids
        if missing:
            raise EvaluationError(
                f"{bench.directory / 'qrels.parquet'}: {len(missing)} {rel} gold(s) absent from "
                f"candidates.parquet, e.g. {sorted(missing)[0]!r}"
            )
        per_rel[rel] = (qids, texts, qrels, golds)
        all_golds |= golds

    from tqdm.auto import tqdm

    rows: list[dict[str, Any]] = []
    files: dict[str, str] = {}
    bar = tqdm(
        total=len(chosen) * len(ev.relations), desc="evaluate", disable=None if progress else True
    )
    for name in chosen:
        s = named[name]
        sys_rel = dict(per_rel)
        if s.max_queries:
            for rel, (qids, _texts, qrels, _golds) in per_rel.items():
                if len(qids) > s.max_queries:
                    qids, texts = bench.relation_queries(rel, s.max_queries, config.build.seed)
                    qrels = {q: qrels[q] for q in qids}
                    golds = {c for d in qrels.values() for c, v in d.items() if v > 0}
                    sys_rel[rel] = (qids, texts, qrels, golds)
        sys_golds = set().union(*(g for *_, g in sys_rel.values())) if sys_rel else set()
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
                r = store.get(name, pool, progress)
                res = r.search(texts, depth)
                run = result_to_run(res, qids, pool.ids, slug(name))
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
    n = {}
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
    return "\n".join(lines)


def write_results(results: EvaluationResults, out_dir: Path) -> None:
    """``results.md`` / ``.csv`` (the paper's table layout) and ``results.json``: the table's
    lossless JSON (loadable with ``ResultsTable.from_json``) plus ``meta`` and raw ``records``."""
    from ratio.evaluation.tables import results_table

    meta = results.meta
    title = f"Results on {meta['split']}"
    if meta.get("oracle") not in (None, "none"):
        title += f" (oracle pool: {meta['oracle']})"
    table = results_table(results.rows, meta["relations"], table_metrics(meta["ks"]), title)
    table.caption = results_caption(results.rows, meta)
    doc = json.loads(table.to_json())
    doc["meta"] = meta
    doc["records"] = results.rows
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out_dir / "results.md", table.to_markdown())
    write_text_atomic(out_dir / "results.csv", table.to_csv())
    write_text_atomic(out_dir / "results.json", json.dumps(doc, indent=2) + "\n")
    results.files.update({k: str(out_dir / f"results.{k}") for k in ("json", "md", "csv")})
