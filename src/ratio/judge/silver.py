"""The silver test set (paper section 4.3, Appendix E): LLM-validated test pairs.

A marker-stratified sample of the test split is judged by the relation's two calibrated
prompts; a pair is kept only when *both* accept it (an invalid answer counts as not
accepted). Test queries of ``needs_validation`` markers (``ratio.lexicon.tiers``), held
out of ``test/queries.parquet``, are sampled and judged with the others: the silver set is
the only way they enter a test set. It is written as a benchmark split whose candidate
pool is the source split's, copied unchanged.

Tested by tests/judge/test_pipeline.py, tests/judge/test_silver_held.py.
"""

from __future__ import annotations

import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ratio.core.config import RunConfig
from ratio.core.io import RatioError, atomic_path, write_parquet_atomic
from ratio.core.layout import RunDir, SplitDir
from ratio.core.provenance import stamp
from ratio.core.records import RELATIONS
from ratio.core.sampling import stratified_sample
from ratio.core.schemas import QRELS, QUERIES
from ratio.evaluation.overlap import texts_by_id
from ratio.judge.anaphora import anaphora_table
from ratio.judge.llm.prompts import Prompt, relation_prompts, silver_pair_text
from ratio.judge.llm.runner import Judge, Result, Task, results_table, write_report


@dataclass
class SilverResult:
    out_dir: Path | None
    kept: dict[str, list[str]]  # relation -> kept query ids
    report: dict[str, Any]
    results: list[Result] = field(default_factory=list)


def silver_tasks(sample: pa.Table, gold_text: dict[str, str], prompts: list[Prompt]) -> list[Task]:
    """One task per (sampled query, prompt): the silver input with the marker put back."""
    tasks = []
    for row in sample.to_pylist():
        pair = silver_pair_text(row["text"], row["marker"], gold_text[row["gold_id"]])
        for p in prompts:
            tasks.append(Task(p, {"pair": pair}, row["query_id"], row["gold_id"], row["relation"]))
    return tasks


def keep_decisions(results: list[Result], n_prompts: int) -> dict[str, bool]:
    """query id -> kept, i.e. every prompt gave a valid accepting answer."""
    votes: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        votes[r.task.query_id].append(bool(r.valid and r.accepted))
    return {q: len(v) == n_prompts and all(v) for q, v in votes.items()}


def _fraction(k: int, n: int) -> float:
    return round(k / n, 4) if n else float("nan")


def build_silver(
    config: RunConfig,
    judge: Judge,
    *,
    relations: list[str] | None = None,
    n: dict[str, int] | None = None,
    split: str = "test",
    prompt_names: dict[str, list[str]] | None = None,
    write: bool = True,
) -> SilverResult:
    """Sample, judge with both prompts, keep the pairs both accept; write the silver split."""
    run = RunDir.of(config)
    bench = run.benchmark.load(split).with_held_queries()
    rels = relations or list(RELATIONS)
    for r in rels:
        if r not in RELATIONS:
            raise RatioError(f"unknown relation {r!r}; known: {', '.join(RELATIONS)}")
    sizes = {**config.judge.silver_n, **(n or {})}
    names = {**config.judge.prompts, **(prompt_names or {})}
    gold_text = texts_by_id(bench.candidates, "candidate_id")
    all_results: list[Result] = []
    kept: dict[str, list[str]] = {}
    report: dict[str, Any] = {
        "split": split,
        "relations": {},
        "model": judge.backend.model,
        "backend": judge.backend.kind,
    }
    samples = []
    for rel in rels:
        q_rel = bench.queries.filter(pc.equal(bench.queries["relation"], rel))
        size = int(sizes.get(rel) or 0) or q_rel.num_rows
        sample = stratified_sample(q_rel, size, config.build.seed, by="marker")
        prompts = relation_prompts("silver", rel, names.get(rel))
        results = judge.run(silver_tasks(sample, gold_text, prompts), desc=f"silver {rel}")
        decisions = keep_decisions(results, len(prompts))
        rows = sample.to_pylist()
        flags = [bool(decisions.get(r["query_id"])) for r in rows]
        kept[rel] = [r["query_id"] for r, keep in zip(rows, flags, strict=True) if keep]
        sampled = Counter(r["marker"] for r in rows)
        kept_m = Counter(r["marker"] for r, keep in zip(rows, flags, strict=True) if keep)
        per_prompt = {}
        for p in prompts:
            rs = [r for r in results if r.task.prompt.id == p.id]
            acc = sum(1 for r in rs if r.valid and r.accepted)
            per_prompt[p.id] = {
                "n": len(rs),
                "accepted": acc,
                "accept_rate": _fraction(acc, len(rs)),
                "invalid": sum(1 for r in rs if not r.valid),
            }
        report["relations"][rel] = {
            "available": q_rel.num_rows,
            "sampled": len(rows),
            "kept": len(kept[rel]),
            "kept_fraction": _fraction(len(kept[rel]), len(rows)),
            "prompts": per_prompt,
            "markers": {
                m: {"sampled": s, "kept": kept_m[m], "kept_fraction": _fraction(kept_m[m], s)}
                for m, s in sorted(sampled.items(), key=lambda x: (-x[1], x[0]))
            },
            "anaphora": anaphora_table([r["marker"] for r in rows], flags),
        }
        all_results.extend(results)
        samples.append(sample)
    report["usage"] = judge.usage.to_dict()
    silver = run.benchmark.silver
    if write:
        _write(config, bench, kept, samples, all_results, judge, report, silver)
    return SilverResult(silver.root if write else None, kept, report, all_results)


def _write(config, bench, kept, samples, results, judge, report, silver: SplitDir) -> None:
    keep_ids = pa.array(sorted(q for ids in kept.values() for q in ids), pa.string())
    queries = bench.queries.filter(pc.is_in(bench.queries["query_id"], keep_ids))
    qrels = bench.qrels.filter(pc.is_in(bench.qrels["query_id"], keep_ids))
    meta = stamp(
        "judge.silver",
        config.digest("build", "judge"),
        model=judge.backend.model,
        backend=judge.backend.kind,
        source_split=bench.split,
        prompts=sorted({r.task.prompt.id + "@" + r.task.prompt.version for r in results}),
    )
    write_parquet_atomic(silver.queries, queries.select(QUERIES.names).cast(QUERIES), meta)
    write_parquet_atomic(silver.qrels, qrels.select(QRELS.names).cast(QRELS), meta)
    # the silver queries retrieve from the source split's whole shared pool
    with atomic_path(silver.candidates) as tmp:
        shutil.copyfile(bench.files.candidates, tmp)
    write_parquet_atomic(silver.judgments, results_table(results, judge.backend), meta)
    write_parquet_atomic(silver.sample, pa.concat_tables(samples), meta)
    write_report(silver.root, report, silver_markdown(report))


def silver_markdown(report: dict) -> str:
    lines = [
        f"# Silver test set ({report['backend']} · {report['model']})",
        "",
        "| relation | available | sampled | kept | kept % | " + "prompt accept % (invalid) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for rel, d in report["relations"].items():
        pp = "; ".join(
            f"{pid.rsplit('/', 1)[-1]} {100 * v['accept_rate']:.1f} ({v['invalid']})"
            for pid, v in d["prompts"].items()
        )
        lines.append(
            f"| {rel} | {d['available']} | {d['sampled']} | {d['kept']} | "
            f"{100 * d['kept_fraction']:.1f} | {pp} |"
        )
    for rel, d in report["relations"].items():
        lines += [
            "",
            f"## {rel}: kept fraction per marker",
            "",
            "| marker | sampled | kept | kept % |",
            "|---|---:|---:|---:|",
        ]
        for m, v in d["markers"].items():
            lines.append(f"| {m} | {v['sampled']} | {v['kept']} | {100 * v['kept_fraction']:.1f} |")
        a = d["anaphora"]
        lines += [
            "",
            f"Explicit anaphor in marker: {a['with_anaphor']}/{a['n']} pairs; kept "
            f"{a['accept_rate_with']:.3f} with vs {a['accept_rate_without']:.3f} without "
            f"(Fisher OR {a['odds_ratio']:.2f}, p={a['p_value']:.3g}).",
        ]
    u = report.get("usage", {})
    lines += [
        "",
        f"Usage: {u.get('new', 0)} new and {u.get('cached', 0)} cached judgments, "
        f"{u.get('invalid', 0)} invalid, {u.get('input_tokens', 0)} input / "
        f"{u.get('output_tokens', 0)} output tokens, ${u.get('cost_usd', 0):.4f}, "
        f"{u.get('judgments_per_s', 0):.3f} judgments/s.",
        "",
    ]
    return "\n".join(lines)
