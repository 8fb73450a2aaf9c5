"""Does the local LLM's preference for the pair's own connective separate valid from invalid pairs?

Why: asked for a verdict, the offline judge (Qwen2.5-Coder-1.5B) ranks valid mined pairs no
better than chance on Address and Specify (docs/judging.md). A language model may still know
discourse better than it follows instructions, so this scores each labelled audit pair by
plain likelihood instead: how probable the gold is after "query + marker," compared with the
same gold after other connectives (one per move: "To address this", "More generally",
"For example"; and "Moreover", "However"). A pair whose gold really makes its move should fit
its own marker better than the alternatives. Features, each AUC'd per relation:

* ``post_gold``: log P(gold | query, own marker) minus the log-sum-exp over all connectives;
* ``post_joint``: the same with P(marker | query) included (Bayes: P(marker | query, gold));
* ``pmi``: log P(gold | query, marker) - log P(gold | marker) (does the query help at all);
* ``vs_moreover``: log P(gold | query, marker) - log P(gold | query, "Moreover").

A balanced seeded sample per relation (``--per-class`` valid and invalid pairs; a pair
labelled in several rounds counts once, first file wins) keeps it to ~5 s a pair on 2 cores.

    .venv/bin/python scripts/connective_judge.py --per-class 25 --out /tmp/connective.jsonl \\
        tests/data/precision_audit_round5_adjudicated.jsonl ... tests/data/precision_audit.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from ratio.core.records import RELATIONS
from ratio.judge.audit import distinct_labelled
from ratio.judge.llm.llamacpp import resolve_gguf

ALTERNATIVES = ("To address this", "More generally", "For example", "Moreover", "However")
# sentence openings that read as mid-sentence after "Marker, "
LOWER = frozenset(
    "We The This These It Our In A An For To By Such When Using Here Each Given One There Its "
    "They Their As With".split()
)


def balanced_sample(rows: list[dict], per_class: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for rel in RELATIONS:
        for label in (True, False):
            group = [r for r in rows if r["relation"] == rel and r["label"] is label]
            rng.shuffle(group)
            out += group[:per_class]
    return out


class Scorer:
    """Sum of token log-probabilities of a continuation, the prefix reused from the KV cache."""

    def __init__(self, model: str, threads: int) -> None:
        from llama_cpp import Llama

        self.llm = Llama(
            model_path=str(resolve_gguf(model)),
            n_ctx=1024,
            n_threads=threads,
            logits_all=True,
            verbose=False,
        )

    def tokens(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode(), add_bos=False)

    def continuation(self, prefix: list[int], cont: list[int]) -> float:
        llm, toks = self.llm, prefix + cont
        cached = llm.input_ids[: llm.n_tokens].tolist()
        keep = 0
        while keep < min(len(cached), len(toks) - 1) and cached[keep] == toks[keep]:
            keep += 1
        llm.n_tokens = keep  # eval() drops the KV cache from here on
        llm.eval(toks[keep:])
        total = 0.0
        for i in range(len(prefix), len(toks)):
            row = llm.scores[i - 1]
            top = float(row.max())
            total += float(row[toks[i]]) - top - math.log(float(np.exp(row - top).sum()))
        return total


def score_pair(s: Scorer, row: dict) -> dict:
    marker = row["marker"].strip()
    marker = marker[:1].upper() + marker[1:]
    gold = row["gold"].strip()
    if gold.split(" ", 1)[0] in LOWER:
        gold = gold[:1].lower() + gold[1:]
    query, gold_t = s.tokens(row["query"].strip() + " "), s.tokens(" " + gold)
    markers = [marker] + [a for a in ALTERNATIVES if a.lower() != marker.lower()]
    res = {}
    for m in markers:
        mt = s.tokens(m + ",")
        res[m] = {"gold": s.continuation(query + mt, gold_t), "marker": s.continuation(query, mt)}
    no_query = s.continuation(s.tokens(marker + ","), gold_t)
    return {"relation": row["relation"], "label": row["label"], "marker": marker, "res": res,
            "no_query": no_query}  # fmt: skip


def features(r: dict) -> dict[str, float]:
    res, own = r["res"], r["res"][r["marker"]]

    def lse(xs: list[float]) -> float:
        top = max(xs)
        return top + math.log(sum(math.exp(x - top) for x in xs))

    return {
        "post_gold": own["gold"] - lse([v["gold"] for v in res.values()]),
        "post_joint": own["gold"] + own["marker"]
        - lse([v["gold"] + v["marker"] for v in res.values()]),
        "pmi": own["gold"] - r["no_query"],
        "vs_moreover": own["gold"] - res["Moreover"]["gold"],
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="labelled audit JSONL, newest first")
    ap.add_argument("--model", default="qwen2.5-1.5b", help="GGUF name or path")
    ap.add_argument("--per-class", type=int, default=25, help="valid and invalid pairs each")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True, help="scores JSONL (reused if present)")
    args = ap.parse_args()
    sample = balanced_sample(distinct_labelled(args.files), args.per_class, args.seed)
    scored = []
    if args.out.is_file():
        scored = [json.loads(line) for line in args.out.read_text().splitlines() if line]
    if len(scored) < len(sample):
        s = Scorer(args.model, args.threads)
        with open(args.out, "a", encoding="utf-8") as fh:
            for i, row in enumerate(sample[len(scored) :], len(scored) + 1):
                scored.append(score_pair(s, row))
                fh.write(json.dumps(scored[-1]) + "\n")
                fh.flush()
                print(f"\r{i}/{len(sample)} pairs", end="", flush=True)
        print()
    print("| relation | valid / invalid | " + " | ".join(features(scored[0])) + " |")
    for rel in RELATIONS:
        rows = [r for r in scored if r["relation"] == rel]
        y = [int(r["label"]) for r in rows]
        if len(set(y)) < 2:
            continue
        feats = [features(r) for r in rows]
        aucs = [roc_auc_score(y, [f[k] for f in feats]) for k in feats[0]]
        print(
            f"| {rel} | {sum(y)} / {len(y) - sum(y)} | "
            + " | ".join(f"{a:.3f}" for a in aucs)
            + " |"
        )


if __name__ == "__main__":
    main()
