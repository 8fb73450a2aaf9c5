"""Pairwise inspiration judge (paper 5.5, Appendix H, Table 16).

Two systems' top-5 lists are shown as "List A" and "List B", never named. Every query is
judged in both orders and a preference counts only when both orders pick the same
system; the Slot-A rate (how often the first list wins) measures position bias.

Tested by tests/judge/test_pipeline.py, tests/judge/test_stats.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ratio.core.config import RunConfig
from ratio.core.io import RatioError, write_parquet_atomic
from ratio.core.layout import RunDir
from ratio.core.provenance import stamp
from ratio.core.sampling import stratified_sample
from ratio.evaluation.overlap import texts_by_id
from ratio.judge.llm.prompts import get_prompt, numbered
from ratio.judge.llm.runner import Judge, Task, results_table, write_report
from ratio.judge.topk import JudgedLists, load_judged_split, top_lists
from ratio.metrics.trec import read_run

FIRST, SECOND = "first", "second"  # tags: which system was shown as List A


def verdict_system(winner: str | None, order: str) -> str | None:
    """Map an A/B/tie answer back to the system: ``"x"`` (first system), ``"y"`` or ``"tie"``."""
    if winner is None or winner == "tie":
        return winner
    return "x" if (winner == "A") == (order == FIRST) else "y"


def aggregate(pairs: dict[str, dict[str, str | None]]) -> dict[str, Any]:
    """Table 16 numbers from ``{query: {order: "A"|"B"|"tie"|None}}``."""
    from scipy.stats import binomtest

    both_valid = slot_a = slot_b = 0
    stable: Counter[str] = Counter()  # "x" / "y" / "tie" -> queries both orders agree on
    for v in pairs.values():
        w1, w2 = v.get(FIRST), v.get(SECOND)
        slot_a += (w1 == "A") + (w2 == "A")
        slot_b += (w1 == "B") + (w2 == "B")
        s1, s2 = verdict_system(w1, FIRST), verdict_system(w2, SECOND)
        if s1 is None or s2 is None:
            continue
        both_valid += 1
        if s1 == s2:
            stable[s1] += 1
    wins_x, wins_y = stable["x"], stable["y"]
    decisive, slots = wins_x + wins_y, slot_a + slot_b

    def p_half(k: int, n: int) -> float:  # two-sided exact binomial test against 0.5
        return float(binomtest(k, n, 0.5).pvalue) if n else float("nan")

    return {
        "n_queries": len(pairs),
        "both_orders_valid": both_valid,
        "wins_first_system": wins_x,
        "wins_second_system": wins_y,
        "stable_ties": stable["tie"],
        "win_rate": wins_x / decisive if decisive else float("nan"),
        "stable": sum(stable.values()) / both_valid if both_valid else float("nan"),
        "slot_a": slot_a / slots if slots else float("nan"),
        "win_p_value": p_half(wins_x, decisive),
        "slot_a_p_value": p_half(slot_a, slots),
    }


def judge_pairwise(
    config: RunConfig,
    judge: Judge,
    run_x: tuple[str, Path],
    run_y: tuple[str, Path],
    relation: str,
    *,
    n_queries: int | None = None,
    split: str | None = None,
    depth: int | None = None,
    write: bool = True,
) -> JudgedLists:
    """Judge ``run_x`` vs ``run_y`` top-``depth`` lists in both orders for sampled queries."""
    _, split, bench = load_judged_split(config, split)
    k = depth or config.judge.pairwise_depth
    (nx, px), (ny, py) = run_x, run_y
    if nx == ny:
        raise RatioError(f"the two systems need different names, both are {nx!r}")
    rx, ry = read_run(px, name=nx), read_run(py, name=ny)
    q_rel = bench.queries.filter(pc.equal(bench.queries["relation"], relation))
    common = set(q_rel["query_id"].to_pylist()) & set(rx.query_ids) & set(ry.query_ids)
    if not common:
        raise RatioError(f"no {relation} query of split {split!r} is in both runs")
    q_rel = q_rel.filter(pc.is_in(q_rel["query_id"], pa.array(sorted(common), pa.string())))
    sample = stratified_sample(
        q_rel, n_queries or config.judge.topk_queries, config.build.seed, by="marker"
    )
    qids = sample["query_id"].to_pylist()
    qtext, ctext = texts_by_id(sample, "query_id"), texts_by_id(bench.candidates, "candidate_id")
    lx, ly = top_lists(rx, qids, k), top_lists(ry, qids, k)
    prompt = get_prompt(f"pairwise/{relation}")
    tasks = []
    for q in qids:
        ax, ay = numbered([ctext[c] for c in lx[q]]), numbered([ctext[c] for c in ly[q]])
        tasks.append(Task(prompt, {"query": qtext[q], "list_a": ax, "list_b": ay}, q, "", FIRST))
        tasks.append(Task(prompt, {"query": qtext[q], "list_a": ay, "list_b": ax}, q, "", SECOND))
    results = judge.run(tasks, desc=f"pairwise {relation}")
    pairs: dict[str, dict[str, str | None]] = {q: {} for q in qids}
    for r in results:
        pairs[r.task.query_id][r.task.tag] = r.parsed["winner"] if r.valid and r.parsed else None
    report = {
        "relation": relation,
        "split": split,
        "depth": k,
        "first_system": nx,
        "second_system": ny,
        "model": judge.backend.model,
        "backend": judge.backend.kind,
        **aggregate(pairs),
        "invalid": sum(1 for r in results if not r.valid),
        "usage": judge.usage.to_dict(),
    }
    out_dir = None
    if write:
        out_dir = RunDir.of(config).judge.pairwise(relation)
        meta = stamp(
            "judge.pairwise",
            config.digest("build", "judge"),
            model=judge.backend.model,
            systems=[nx, ny],
            split=split,
        )
        write_parquet_atomic(
            out_dir / "judgments.parquet", results_table(results, judge.backend), meta
        )
        write_report(out_dir, report, pairwise_markdown(report))
    return JudgedLists(relation, report, results, out_dir)


def pairwise_markdown(r: dict) -> str:
    star = "∗" if r["slot_a_p_value"] < 0.01 else ""
    return "\n".join(
        [
            f"# Inspiration judge: {r['relation']} ({r['n_queries']} queries, top-{r['depth']}, "
            f"{r['backend']} · {r['model']})",
            "",
            f"| relation | {r['first_system']} | {r['second_system']} | Win % | Stable % | Slot A % | p (win) |",
            "|---|---:|---:|---:|---:|---:|---:|",
            f"| {r['relation']} | {r['wins_first_system']} | {r['wins_second_system']} | "
            f"{100 * r['win_rate']:.1f} | {100 * r['stable']:.1f} | {100 * r['slot_a']:.1f}{star} | "
            f"{r['win_p_value']:.3g} |",
            "",
            f"Win = share of stable decisive queries preferring {r['first_system']}; two-sided exact "
            f"binomial test against 0.5. Slot A p = {r['slot_a_p_value']:.3g} (∗: p < 0.01). "
            f"Invalid answers: {r['invalid']}.",
            "",
        ]
    )
