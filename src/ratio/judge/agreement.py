"""Agreement statistics for judge calibration: rater agreement, ROC AUC, CV thresholds.

Tested by tests/judge/test_stats.py, tests/judge/test_calibrate.py, tests/judge/test_audit.py.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Hashable, Sequence


def binary_scores(y_true: Sequence[bool], y_pred: Sequence[bool]) -> dict[str, float]:
    """Agreement, precision, recall and F1 of ``y_pred`` against ``y_true`` (positive = True)."""
    if len(y_true) != len(y_pred):
        raise ValueError("label lists differ in length")
    n = len(y_true)
    pairs = [(bool(t), bool(p)) for t, p in zip(y_true, y_pred, strict=True)]
    tp, fp, fn = pairs.count((True, True)), pairs.count((False, True)), pairs.count((True, False))
    agree = tp + pairs.count((False, False))
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {
        "n": n,
        "agreement": agree / n if n else float("nan"),
        "precision": prec,
        "recall": rec,
        "f1": f1,
    }


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters over the same items: (p_o - p_e) / (1 - p_e)."""
    if len(a) != len(b):
        raise ValueError("rater lists differ in length")
    n = len(a)
    if n == 0:
        return float("nan")
    po = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    cats = set(a) | set(b)
    pe = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in cats)
    if pe == 1.0:
        return 1.0 if po == 1.0 else 0.0
    return (po - pe) / (1 - pe)


def krippendorff_alpha_nominal(data: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's alpha for nominal data; ``data[coder][unit]``, ``None`` = missing.

    Built from the coincidence matrix: units with fewer than two values are not
    pairable and are left out; alpha = 1 - D_o / D_e.
    """
    if not data:
        return float("nan")
    n_units = len(data[0])
    if any(len(row) != n_units for row in data):
        raise ValueError("every coder needs a value (or None) for every unit")
    coinc: dict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for u in range(n_units):
        vals = [row[u] for row in data if row[u] is not None]
        m = len(vals)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            coinc[(vals[i], vals[j])] += 1.0 / (m - 1)
    n_c: dict[Hashable, float] = defaultdict(float)
    for (c, _), v in coinc.items():
        n_c[c] += v
    n = sum(n_c.values())
    if n <= 1:
        return float("nan")
    d_o = sum(v for (c, k), v in coinc.items() if c != k) / n
    d_e = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (n * (n - 1))
    if d_e == 0:
        return 1.0 if d_o == 0 else float("nan")
    return 1.0 - d_o / d_e


def roc_auc(y_true: Sequence[bool], scores: Sequence[float]) -> float:
    """Area under the ROC curve: P(a random positive scores above a random negative), ties 1/2."""
    if len(y_true) != len(scores):
        raise ValueError("label and score lists differ in length")
    pos = [s for t, s in zip(y_true, scores, strict=True) if t]
    neg = [s for t, s in zip(y_true, scores, strict=True) if not t]
    if not pos or not neg:
        return float("nan")
    from scipy.stats import rankdata

    # Mann-Whitney U from mid-ranks (ties share their average rank)
    ranks = rankdata(scores).tolist()
    r_pos = sum(r for r, t in zip(ranks, y_true, strict=True) if t)
    return (r_pos - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def best_threshold(y_true: Sequence[bool], scores: Sequence[float]) -> float:
    """The threshold on ``scores`` (accept when ``score >= t``) with the highest Cohen's kappa.

    Candidates are the midpoints between neighbouring distinct scores plus one below and
    one above them all; among equally good ones the middle one is taken.
    """
    vals = sorted(set(scores))
    if not vals:
        raise ValueError("no scores")
    cands = (
        [vals[0] - 1e-9] + [(a + b) / 2 for a, b in itertools.pairwise(vals)] + [vals[-1] + 1e-9]
    )
    kappas = [cohen_kappa(list(y_true), [s >= t for s in scores]) for t in cands]
    best = max(kappas)
    tied = [t for t, k in zip(cands, kappas, strict=True) if k >= best - 1e-12]
    return tied[len(tied) // 2]


def stratified_folds(y: Sequence[bool], k: int, seed: int) -> list[int]:
    """A fold number per item: each class shuffled (seeded) and dealt round-robin."""
    rng = random.Random(seed)
    fold = [0] * len(y)
    offset = 0
    for cls in (True, False):
        idx = [i for i, v in enumerate(y) if bool(v) == cls]
        rng.shuffle(idx)
        for j, i in enumerate(idx):
            fold[i] = (offset + j) % k
        offset += len(idx)
    return fold


def cross_validated(
    y: Sequence[bool], scores: Sequence[float], fold: Sequence[int]
) -> tuple[list[bool], list[float]]:
    """Out-of-fold verdicts: each fold thresholded at the best threshold of the others."""
    pred = [False] * len(y)
    thresholds = []
    for f in sorted(set(fold)):
        train = [i for i in range(len(y)) if fold[i] != f]
        t = best_threshold([y[i] for i in train], [scores[i] for i in train])
        thresholds.append(t)
        for i in range(len(y)):
            if fold[i] == f:
                pred[i] = scores[i] >= t
    return pred, thresholds


def scores_with_kappa(y_true: Sequence[bool], y_pred: Sequence[bool]) -> dict[str, float]:
    return binary_scores(y_true, y_pred) | {"kappa": cohen_kappa(list(y_true), list(y_pred))}


def panel_scores(
    labels: dict[str, dict[tuple, bool]], units: list[tuple], pred: dict[tuple, bool] | None
) -> dict:
    """Agreement/F1/alpha averaged over annotator pairs (``pred`` None) or prompt-annotator pairs."""
    annots = sorted(labels)
    if pred is None:
        pairs = [(labels[a], labels[b]) for a, b in itertools.combinations(annots, 2)]
    else:
        pairs = [(pred, labels[b]) for b in annots]
    agg = defaultdict(list)
    for src_a, src_b in pairs:
        us = [u for u in units if u in src_a and u in src_b]
        if not us:
            continue
        ya, yb = [src_a[u] for u in us], [src_b[u] for u in us]
        s = binary_scores(yb, ya)
        agg["agreement"].append(s["agreement"])
        agg["f1"].append(s["f1"])
        agg["kappa"].append(cohen_kappa(ya, yb))
        agg["alpha"].append(krippendorff_alpha_nominal([ya, yb]))
    return {k: sum(v) / len(v) for k, v in agg.items()} | {"pairs": len(agg["f1"])}
