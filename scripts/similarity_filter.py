"""Does embedding similarity tell the audited good pairs from the bad ones?

Why: the offline LLM judge barely separates valid from invalid mined pairs (docs/judging.md),
so a silver filter built on it would drop a random slice. This checks the cheapest other
offline signal, the cosine of query and gold under a retriever (the tuned unified model with
the move's instruction, or its untuned base), against every labelled audit pair: AUC per
relation (Mann-Whitney, ties count half), and the precision left after dropping the pairs
below the cosine that keeps 80% of the valid ones (that threshold is chosen on the same
labels, so the number is optimistic). A pair labelled in several rounds counts once, with
the label of the first file given.

    .venv/bin/python scripts/similarity_filter.py \\
        --model runs/neurips/models/all-MiniLM-L6-v2-none/unified/best --instruction \\
        tests/data/precision_audit_round5_adjudicated.jsonl ... tests/data/precision_audit.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ratio.core.records import RELATIONS
from ratio.judge.audit import distinct_labelled
from ratio.retrieval.dense import Encoder
from ratio.training.data import unified_prefixes


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """P(a valid pair scores above an invalid one), ties counting half."""
    pos, neg = scores[labels], scores[~labels]
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="labelled audit JSONL files, newest first")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--instruction", action="store_true", help="queries get '<move>: '")
    ap.add_argument("--keep", type=float, default=0.8, help="share of valid pairs kept")
    args = ap.parse_args()
    rows = distinct_labelled(args.files)
    enc = Encoder(args.model)
    prefix = unified_prefixes("short") if args.instruction else dict.fromkeys(RELATIONS, "")
    print(f"{args.model}: {len(rows)} labelled pairs")
    print("| relation | pairs | invalid | AUC | precision | after the filter (kept) |")
    print("|---|---:|---:|---:|---:|---|")
    for rel in RELATIONS:
        rr = [r for r in rows if r["relation"] == rel]
        q = enc.encode([prefix[rel] + r["query"] for r in rr])
        g = enc.encode([r["gold"] for r in rr])
        cos = (q * g).sum(1) / (np.linalg.norm(q, axis=1) * np.linalg.norm(g, axis=1))
        y = np.array([bool(r["label"]) for r in rr])
        kept = cos >= np.quantile(cos[y], 1 - args.keep)
        print(
            f"| {rel} | {len(y)} | {int((~y).sum())} | {auc(cos, y):.3f} | {y.mean():.3f} "
            f"| {y[kept].mean():.3f} ({int(kept.sum())}) |"
        )


if __name__ == "__main__":
    main()
