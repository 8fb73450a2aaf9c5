"""Can a classifier trained on the audit labels judge mined pairs better than the LLM?

Why: the offline LLM judge and the query-gold cosine both rank valid pairs only a little above
invalid ones (docs/judging.md). The ~1,000 pairs labelled by the precision audits are the one
supervised signal the project has, so this fits a logistic regression on them (surface cues
of query and gold — length, a final ":" or ",", an opening "We"/"This", citations, math,
section references, deferral words — plus the cosine and the embeddings of the pair under an
encoder) and scores it out of fold: 5-fold cross-validation grouped by paper and stratified by
relation and label, averaged over 3 seeds. Per relation it prints the AUC and the best Cohen's
κ over thresholds chosen on the evaluated fold itself, an upper bound on what a threshold
tuned elsewhere would reach. A pair labelled in several rounds counts once, first file wins.

    .venv/bin/python scripts/label_classifier.py --model all-MiniLM-L6-v2 \\
        tests/data/precision_audit_round5_adjudicated.jsonl ... tests/data/precision_audit.jsonl
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold

from ratio.core.records import RELATIONS
from ratio.judge.audit import distinct_labelled
from ratio.retrieval.dense import Encoder

SECTION_REF = re.compile(r"\b(Section|Appendix|Figure|Table|Sec\.|Fig\.)")
DEFERRAL = re.compile(r"\b(will|next|following|below)\b")


def surface(text: str) -> list[float]:
    """The cues the audits named as failure signs (docs/precision-audit.md)."""
    t = text.rstrip()
    return [
        len(t.split()) / 40,
        t.endswith(":"),
        t.endswith(","),
        bool(re.match(r"(We|Our)\b", t)),
        bool(re.match(r"(This|These|It|They|Such)\b", t)),
        "[CIT]" in t,
        "[MATH]" in t or "$" in t,
        bool(SECTION_REF.search(t)),
        bool(DEFERRAL.search(t)),
        10 * sum(c.isdigit() for c in t) / max(len(t), 1),
    ]


def out_of_fold(
    x: np.ndarray, y: np.ndarray, strata: np.ndarray, groups: list, c: float
) -> np.ndarray:
    """P(valid) for every pair from models that never saw its paper, averaged over 3 seeds."""
    oof = np.zeros(len(y))
    for seed in range(3):
        folds = StratifiedGroupKFold(5, shuffle=True, random_state=seed)
        for tr, te in folds.split(x, strata, groups):
            model = LogisticRegression(C=c, max_iter=3000, class_weight="balanced")
            oof[te] += model.fit(x[tr], y[tr]).predict_proba(x[te])[:, 1] / 3
    return oof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="labelled audit JSONL files, newest first")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    args = ap.parse_args()
    pairs = distinct_labelled(args.files)
    enc = Encoder(args.model)
    q = enc.encode([r["query"] for r in pairs])
    g = enc.encode([r["gold"] for r in pairs])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    cos = (q * g).sum(1, keepdims=True)
    cues = np.array([surface(r["gold"]) + surface(r["query"]) for r in pairs], float)
    rel = np.array([[r["relation"] == x for x in RELATIONS] for r in pairs], float)
    y = np.array([bool(r["label"]) for r in pairs])
    strata = np.array([f"{r['relation']}:{r['label']}" for r in pairs])
    groups = [r["paper_id"] for r in pairs]
    features = {
        "cues + cosine": np.hstack([cues, cos, rel]),
        "embeddings": np.hstack([q * g, np.abs(q - g), g, rel]),
        "all": np.hstack([q * g, np.abs(q - g), g, cues, cos, rel]),
    }
    print(f"{args.model}: {len(y)} labelled pairs, {int((~y).sum())} invalid")
    print("| features | C | " + " | ".join(f"{r} AUC / κ max" for r in RELATIONS) + " |")
    print("|---|---:|" + "---:|" * len(RELATIONS))
    for name, x in features.items():
        for c in (0.1, 1.0):
            oof = out_of_fold(x, y, strata, groups, c)
            cells = []
            for i in range(len(RELATIONS)):
                k = rel[:, i] == 1
                cuts = np.quantile(oof[k], np.linspace(0.02, 0.6, 30))
                kappa = max(cohen_kappa_score(y[k], oof[k] >= t) for t in cuts)
                cells.append(f"{roc_auc_score(y[k], oof[k]):.3f} / {kappa:.2f}")
            print(f"| {name} | {c} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
