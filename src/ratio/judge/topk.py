"""Top-k candidate evaluation (paper 5.3-5.4, Tables 4, 13, 14, 15; Appendix G).

Each (query, candidate) in a retriever's top 10 is judged by the relation's two top-k
prompts (Appendix I.3) without the gold, the rank, the system or the other candidates.
Hard agreement accepts a candidate when both prompts do, soft when either does; the
accepted candidates are the relevance for the metrics.

Tested by tests/judge/test_pipeline.py, tests/judge/test_stats.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.core.config import RunConfig
from ratio.core.io import RatioError, write_parquet_atomic
from ratio.core.layout import SILVER, Benchmark, RunDir
from ratio.core.provenance import stamp
from ratio.core.sampling import stratified_sample
from ratio.evaluation.overlap import StemmedTokenSets, jaccard, texts_by_id
from ratio.judge.llm.prompts import relation_prompts
from ratio.judge.llm.runner import Judge, Result, Task, results_table, write_report
from ratio.metrics import Qrels, Ranking, evaluate_per_query
from ratio.metrics.trec import read_run

METRICS = ("hit_rate", "precision", "ndcg", "mrr", "map")
MODES = ("hard", "soft", "p1", "p2")


def metric_names(k: int) -> list[str]:
    return [f"{m}@{k}" for m in METRICS]


def judged_metrics(
    ranking: Ranking, accepted: dict[str, set[str]], query_ids: Sequence[str], k: int
) -> dict[str, float]:
    """Mean of each metric over ``query_ids``, relevance = accepted candidates.

    ``ratio.metrics.evaluate`` averages over queries with a relevant document only;
    here every sampled query counts, so queries without an accepted candidate add 0.
    """
    names = metric_names(k)
    rel = {q: {c: 1 for c in accepted.get(q, ())} for q in query_ids if accepted.get(q)}
    if not query_ids:
        return {m: float("nan") for m in names}
    if not rel:
        return {m: 0.0 for m in names}
    per = evaluate_per_query(Qrels.from_dict(rel), ranking, names)
    return {m: float(per.scores[m].sum()) / len(query_ids) for m in names}


def top_lists(ranking: Ranking, query_ids: Sequence[str], k: int) -> dict[str, list[str]]:
    return {q: [d for d, _ in ranking.ranked(q)[:k]] for q in query_ids if q in ranking.row_of}


def accepted_sets(
    results: list[Result], prompt_ids: Sequence[str]
) -> dict[str, dict[str, set[str]]]:
    """mode -> query -> accepted candidate ids, for hard/soft agreement and each prompt."""
    votes: dict[tuple[str, str], dict[str, bool]] = defaultdict(dict)
    for r in results:
        t = r.task
        votes[(t.query_id, t.candidate_id)][t.prompt.id] = bool(r.valid and r.accepted)
    out: dict[str, dict[str, set[str]]] = {m: defaultdict(set) for m in MODES}
    for (q, c), v in votes.items():
        flags = [v.get(p, False) for p in prompt_ids]
        if all(flags):
            out["hard"][q].add(c)
        if any(flags):
            out["soft"][q].add(c)
        for i, f in enumerate(flags[:2]):
            if f:
                out[f"p{i + 1}"][q].add(c)
    return out


def rank_biserial_mannwhitney(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    """Mann-Whitney U of ``x`` vs ``y`` with the rank-biserial effect ``1 - 2U/(n_x n_y)``.

    Positive when ``x`` tends to be smaller than ``y`` (discovered positives overlapping
    the query less than mined ones, as in Appendix G).
    """
    from scipy.stats import mannwhitneyu

    if not len(x) or not len(y):
        return {"u": float("nan"), "rank_biserial": float("nan"), "p_value": float("nan")}
    res = mannwhitneyu(x, y, alternative="two-sided")
    u = float(res.statistic)
    return {
        "u": u,
        "rank_biserial": 1.0 - 2.0 * u / (len(x) * len(y)),
        "p_value": float(res.pvalue),
    }


def discovered_positives(
    lists: dict[str, list[str]],
    accepted: dict[str, set[str]],
    gold: dict[str, str],
    query_paper: dict[str, str],
    cand_paper: dict[str, str],
    query_text: dict[str, str],
    cand_text: dict[str, str],
) -> dict[str, Any]:
    """Appendix G: accepted non-gold candidates, how often, from which paper, how lexical."""
    n = len(lists)
    with_alt = alt_without_gold = n_alt = cross = 0
    disc_pairs: list[tuple[str, str]] = []
    for q, lst in lists.items():
        alts = [c for c in lst if c in accepted.get(q, ()) and c != gold.get(q)]
        if alts:
            with_alt += 1
            if gold.get(q) not in lst:
                alt_without_gold += 1
        n_alt += len(alts)
        cross += sum(1 for c in alts if cand_paper.get(c) != query_paper.get(q))
        disc_pairs += [(q, c) for c in alts]
    toks = StemmedTokenSets()
    qs = list(lists)
    q_sets = dict(zip(qs, toks([query_text[q] for q in qs]), strict=True))
    mined = [
        jaccard(q_sets[q], s)
        for q, s in zip(qs, toks([cand_text[gold[q]] for q in qs]), strict=True)
    ]
    disc = [
        jaccard(q_sets[q], s)
        for (q, _), s in zip(disc_pairs, toks([cand_text[c] for _, c in disc_pairs]), strict=True)
    ]
    return {
        "n_queries": n,
        "share_with_accepted_alternative": with_alt / n if n else float("nan"),
        "share_alternative_without_gold": alt_without_gold / n if n else float("nan"),
        "accepted_alternatives": n_alt,
        "cross_paper_share": cross / n_alt if n_alt else float("nan"),
        "jaccard_discovered": float(np.mean(disc)) if disc else float("nan"),
        "jaccard_mined": float(np.mean(mined)) if mined else float("nan"),
        "mann_whitney": rank_biserial_mannwhitney(disc, mined),
    }


def retriever_judge_agreement(
    lists: dict[str, list[str]], gold: dict[str, str], judged: dict[str, bool], k: int = 10
) -> dict[str, float]:
    """Table 13: Recall@k of the gold for judge-accepted vs rejected (query, gold) pairs.

    ``judged`` maps a query id to whether the silver judge accepted its (query, gold)
    pair before filtering; OR is the odds ratio of a top-k hit, accepted vs rejected.
    """
    hits: dict[bool, list[bool]] = {True: [], False: []}
    for q, acc in judged.items():
        if q in lists and q in gold:
            hits[acc].append(gold[q] in lists[q][:k])
    ra = float(np.mean(hits[True])) if hits[True] else float("nan")
    rr = float(np.mean(hits[False])) if hits[False] else float("nan")

    def odds(p: float) -> float:
        return p / (1 - p) if 0 < p < 1 else float("nan")

    return {
        "n_accepted": len(hits[True]),
        "n_rejected": len(hits[False]),
        "recall_accepted": ra,
        "recall_rejected": rr,
        "delta": ra - rr,
        "odds_ratio": odds(ra) / odds(rr),  # odds() is nan or > 0
    }


def silver_verdicts(path: Path, relation: str) -> dict[str, bool]:
    """query id -> both silver prompts accepted, from a silver ``judgments.parquet``."""
    if not path.is_file():
        return {}
    votes: dict[str, list[bool]] = defaultdict(list)
    for row in pq.read_table(path, columns=["query_id", "tag", "accepted", "valid"]).to_pylist():
        if row["tag"] == relation:
            votes[row["query_id"]].append(bool(row["valid"] and row["accepted"]))
    return {q: all(v) for q, v in votes.items()}


def load_judged_split(config: RunConfig, split: str | None) -> tuple[RunDir, str, Benchmark]:
    """Run directory, split and benchmark a judged run is read against.

    Without an explicit split the silver set is judged when it was built (the paper's
    setting), else ``evaluate.split``: top-k and pairwise must agree on this choice.
    """
    run = RunDir.of(config)
    if split is None:
        split = SILVER if run.benchmark.silver.queries.is_file() else config.evaluate.split
    return run, split, run.benchmark.load(split)


@dataclass
class JudgedLists:
    """What :func:`judge_topk` and ``judge_pairwise`` return (``out_dir`` None: not written)."""

    relation: str
    report: dict[str, Any]
    results: list[Result]
    out_dir: Path | None


def judge_topk(
    config: RunConfig,
    judge: Judge,
    runs: dict[str, Path],
    relation: str,
    *,
    n_queries: int | None = None,
    split: str | None = None,
    prompt_names: list[str] | None = None,
    depth: int | None = None,
    write: bool = True,
) -> JudgedLists:
    """Judge every system's top-``depth`` for a stratified sample of ``relation`` queries."""
    run_dir, split, bench = load_judged_split(config, split)
    k = depth or config.judge.topk_depth
    n_q = n_queries or config.judge.topk_queries
    loaded = {name: read_run(p, name=name) for name, p in runs.items()}
    q_rel = bench.queries.filter(pc.equal(bench.queries["relation"], relation))
    gold_all = texts_by_id(q_rel, "query_id", "gold_id")
    common = set(q_rel["query_id"].to_pylist())
    common = common.intersection(*(r.query_ids for r in loaded.values()))
    if not common:
        raise RatioError(
            f"no {relation} query of split {split!r} is in every run ({', '.join(map(str, runs.values()))}); "
            "was the run made on this split?"
        )
    q_rel = q_rel.filter(pc.is_in(q_rel["query_id"], pa.array(sorted(common), pa.string())))
    sample = stratified_sample(q_rel, n_q, config.build.seed, by="marker")
    qids = sample["query_id"].to_pylist()
    qtext, ctext = texts_by_id(sample, "query_id"), texts_by_id(bench.candidates, "candidate_id")
    qpaper = texts_by_id(sample, "query_id", "paper_id")
    cpaper = texts_by_id(bench.candidates, "candidate_id", "paper_id")
    gold = texts_by_id(sample, "query_id", "gold_id")
    prompts = relation_prompts("topk", relation, prompt_names or config.judge.prompts.get(relation))
    pids = [p.id for p in prompts]

    lists = {name: top_lists(run, qids, k) for name, run in loaded.items()}
    tasks = []
    for name, ls in lists.items():
        for q, lst in ls.items():
            for c in lst:
                if c not in ctext:
                    raise RatioError(f"run {runs[name]}: candidate {c!r} not in split {split!r}")
                for p in prompts:
                    tasks.append(Task(p, {"query": qtext[q], "candidate": ctext[c]}, q, c, name))
    results = judge.run(tasks, desc=f"top-{k} {relation}")
    silver_j = silver_verdicts(run_dir.benchmark.silver.judgments, relation)

    report: dict[str, Any] = {
        "relation": relation,
        "split": split,
        "n_queries": len(qids),
        "depth": k,
        "prompts": pids,
        "model": judge.backend.model,
        "backend": judge.backend.kind,
        "systems": {},
    }
    for name, run in loaded.items():
        sub = run.truncate(k)
        sys_acc = accepted_sets([r for r in results if r.task.tag == name], pids)
        entry: dict[str, Any] = {"run": str(runs[name])}
        entry |= {mode: judged_metrics(sub, sys_acc[mode], qids, k) for mode in MODES}
        entry["gold"] = judged_metrics(sub, {q: {gold[q]} for q in qids}, qids, k)
        entry["discovered"] = {
            mode: discovered_positives(
                lists[name], sys_acc[mode], gold, qpaper, cpaper, qtext, ctext
            )
            for mode in ("hard", "soft")
        }
        entry["accepted_per_list"] = {
            mode: sum(len(v) for v in sys_acc[mode].values()) / len(qids)
            for mode in ("hard", "soft")
        }
        if silver_j:
            # Table 13 uses every silver-judged (query, gold) pair the run covers, not the sample
            judged_q = [q for q in silver_j if q in run.row_of]
            entry["retriever_judge_agreement"] = retriever_judge_agreement(
                top_lists(run, judged_q, k), gold_all, silver_j, k
            )
        report["systems"][name] = entry
    report["usage"] = judge.usage.to_dict()
    out_dir = None
    if write:
        out_dir = run_dir.judge.topk(relation)
        meta = stamp(
            "judge.topk",
            config.digest("build", "judge"),
            model=judge.backend.model,
            split=split,
            systems=sorted(runs),
        )
        write_parquet_atomic(
            out_dir / "judgments.parquet", results_table(results, judge.backend), meta
        )
        write_report(out_dir, report, topk_markdown(report))
    return JudgedLists(relation, report, results, out_dir)


def _pct(x: float) -> str:
    return "–" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{100 * x:.1f}"


def topk_markdown(report: dict) -> str:
    k = report["depth"]
    names = metric_names(k)
    head = "| system | HR | P | nDCG | MRR | MAP |"
    lines = [
        f"# Top-{k} judged evaluation: {report['relation']} "
        f"({report['n_queries']} queries, split {report['split']}, {report['backend']} · {report['model']})"
    ]
    for mode, title in (
        ("hard", "Hard agreement (both prompts accept)"),
        ("soft", "Soft agreement (either accepts)"),
        ("p1", f"Prompt 1 ({report['prompts'][0]})"),
        ("p2", f"Prompt 2 ({report['prompts'][-1]})"),
        ("gold", "Mined gold only (single positive)"),
    ):
        lines += ["", f"## {title} (%)", "", head, "|---|---:|---:|---:|---:|---:|"]
        for sys_, e in report["systems"].items():
            lines.append(f"| {sys_} | " + " | ".join(_pct(e[mode][m]) for m in names) + " |")
    lines += [
        "",
        "## Discovered positives (hard agreement)",
        "",
        "| system | queries w/ accepted non-gold % | ... with gold absent % | cross-paper % | "
        "Jaccard discovered | Jaccard mined | rank-biserial | p |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for sys_, e in report["systems"].items():
        d = e["discovered"]["hard"]
        mw = d["mann_whitney"]
        lines.append(
            f"| {sys_} | {_pct(d['share_with_accepted_alternative'])} | {_pct(d['share_alternative_without_gold'])} | "
            f"{_pct(d['cross_paper_share'])} | {d['jaccard_discovered']:.3f} | {d['jaccard_mined']:.3f} | "
            f"{mw['rank_biserial']:.2f} | {mw['p_value']:.3g} |"
        )
    rja = {
        s: e["retriever_judge_agreement"]
        for s, e in report["systems"].items()
        if "retriever_judge_agreement" in e
    }
    if rja:
        lines += [
            "",
            f"## Retriever-judge agreement: Recall@{k} by silver verdict (%)",
            "",
            "| system | accepted (n) | rejected (n) | Δ | OR |",
            "|---|---:|---:|---:|---:|",
        ]
        for s, a in rja.items():
            lines.append(
                f"| {s} | {_pct(a['recall_accepted'])} ({a['n_accepted']}) | "
                f"{_pct(a['recall_rejected'])} ({a['n_rejected']}) | {_pct(a['delta'])} | {a['odds_ratio']:.2f} |"
            )
    u = report.get("usage", {})
    lines += [
        "",
        f"Usage: {u.get('new', 0)} new, {u.get('cached', 0)} cached judgments, "
        f"{u.get('invalid', 0)} invalid, ${u.get('cost_usd', 0):.4f}, "
        f"{u.get('judgments_per_s', 0):.3f} judgments/s.",
        "",
    ]
    return "\n".join(lines)
