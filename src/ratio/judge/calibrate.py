"""Prompt calibration against human labels (paper 4.3, Appendix E, Table 10).

Every candidate silver prompt of a relation judges the human-labelled pairs; each is
scored against the reference annotator (agreement, precision, recall, F1 with
"accept" as the positive class, Cohen's kappa) and, when several annotators labelled
the same pairs, against the panel (agreement, F1 and Krippendorff's alpha averaged
over prompt-annotator pairs, next to the same numbers averaged over annotator pairs).
The two prompts with the highest single-annotator F1 are kept per relation.

Labels come from ``ratio judge annotate`` as CSV rows: ``item_id, relation, query_id,
candidate_id, query, marker, candidate, annotator, label`` with label ``y``/``n``
(``s`` = skipped, ignored).
"""

from __future__ import annotations

import csv
import itertools
import json
from collections import defaultdict
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from ratio.config import RunConfig
from ratio.io import RatioError
from ratio.judge.prompts import candidates_for, silver_pair_text
from ratio.judge.runner import Judge, Task, judge_out, write_report

# --------------------------------------------------------------------------- agreement metrics


def binary_scores(y_true: Sequence[bool], y_pred: Sequence[bool]) -> dict[str, float]:
    """Agreement, precision, recall and F1 of ``y_pred`` against ``y_true`` (positive = True)."""
    if len(y_true) != len(y_pred):
        raise ValueError("label lists differ in length")
    n = len(y_true)
    tp = sum(1 for t, p in zip(y_true, y_pred, strict=True) if t and p)
    fp = sum(1 for t, p in zip(y_true, y_pred, strict=True) if not t and p)
    fn = sum(1 for t, p in zip(y_true, y_pred, strict=True) if t and not p)
    agree = sum(1 for t, p in zip(y_true, y_pred, strict=True) if bool(t) == bool(p))
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


# --------------------------------------------------------------------------- labels


def read_labels(path: str | Path) -> list[dict[str, str]]:
    """Rows of a labels CSV; skipped (``s``) rows dropped, the rest checked."""
    p = Path(path)
    if not p.is_file():
        raise RatioError(f"labels file not found: {p}")
    need = (
        "relation",
        "query_id",
        "candidate_id",
        "query",
        "marker",
        "candidate",
        "annotator",
        "label",
    )
    with open(p, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in need if c not in (reader.fieldnames or [])]
        if missing:
            raise RatioError(f"{p}: missing column(s) {', '.join(missing)}")
        rows = []
        for i, row in enumerate(reader, 2):
            lab = row["label"].strip().lower()
            if lab == "s":
                continue
            if lab not in ("y", "n"):
                raise RatioError(f"{p}:{i}: label must be y, n or s, got {row['label']!r}")
            rows.append(row)
    return rows


def _unit(row: dict) -> tuple[str, str, str]:
    return row["relation"], row["query_id"], row["candidate_id"]


def panel_scores(
    labels: dict[str, dict[tuple, bool]], units: list[tuple], pred: dict[tuple, bool] | None
) -> dict:
    """Agreement/F1/alpha averaged over annotator pairs (``pred`` None) or prompt-annotator pairs."""
    annots = sorted(labels)
    pairs = list(itertools.combinations(annots, 2)) if pred is None else [(None, a) for a in annots]
    agg = defaultdict(list)
    for a, b in pairs:
        src_a = pred if a is None else labels[a]
        us = [u for u in units if u in src_a and u in labels[b]]
        if not us:
            continue
        ya, yb = [src_a[u] for u in us], [labels[b][u] for u in us]
        s = binary_scores(yb, ya)
        agg["agreement"].append(s["agreement"])
        agg["f1"].append(s["f1"])
        agg["alpha"].append(krippendorff_alpha_nominal([ya, yb]))
    return {k: sum(v) / len(v) for k, v in agg.items()} | {"pairs": len(agg["f1"])}


def calibrate(
    config: RunConfig,
    judge: Judge,
    labels_path: str | Path,
    *,
    relations: list[str] | None = None,
    reference: str | None = None,
    keep: int = 2,
    write: bool = True,
) -> dict[str, Any]:
    """Score every silver prompt per relation against the human labels; keep the best ``keep``."""
    rows = read_labels(labels_path)
    if not rows:
        raise RatioError(f"{labels_path}: no y/n labels")
    by_annot: dict[str, dict[tuple, bool]] = defaultdict(dict)
    texts: dict[tuple, dict] = {}
    for r in rows:
        by_annot[r["annotator"]][_unit(r)] = r["label"].strip().lower() == "y"
        texts[_unit(r)] = r
    ref = reference or max(by_annot, key=lambda a: len(by_annot[a]))
    if ref not in by_annot:
        raise RatioError(
            f"reference annotator {ref!r} has no labels; annotators: {', '.join(by_annot)}"
        )
    rels = relations or sorted({u[0] for u in texts})
    report: dict[str, Any] = {
        "reference": ref,
        "annotators": sorted(by_annot),
        "relations": {},
        "model": judge.backend.model,
        "backend": judge.backend.kind,
    }
    for rel in rels:
        units = sorted(u for u in texts if u[0] == rel)
        panel_units = [u for u in units if sum(u in by_annot[a] for a in by_annot) >= 2]
        entry: dict[str, Any] = {
            "n_units": len(units),
            "n_panel_units": len(panel_units),
            "prompts": {},
        }
        if len(by_annot) >= 2 and panel_units:
            entry["human_panel"] = panel_scores(by_annot, panel_units, None)
        for p in candidates_for("silver", rel):
            tasks = [
                Task(
                    p,
                    {
                        "pair": silver_pair_text(
                            texts[u]["query"], texts[u]["marker"], texts[u]["candidate"]
                        )
                    },
                    u[1],
                    u[2],
                    rel,
                )
                for u in units
            ]
            res = judge.run(tasks, desc=f"calibrate {p.id}")
            pred = {u: bool(r.valid and r.accepted) for u, r in zip(units, res, strict=True)}
            ref_units = [u for u in units if u in by_annot[ref]]
            yt = [by_annot[ref][u] for u in ref_units]
            yp = [pred[u] for u in ref_units]
            single = binary_scores(yt, yp) | {"kappa": cohen_kappa(yt, yp)}
            e = {"single": single, "invalid": sum(1 for r in res if not r.valid)}
            if len(by_annot) >= 2 and panel_units:
                e["panel"] = panel_scores(by_annot, panel_units, pred)
            entry["prompts"][p.id] = e
        ranked = sorted(entry["prompts"], key=lambda pid: -entry["prompts"][pid]["single"]["f1"])
        entry["kept"] = ranked[:keep]
        report["relations"][rel] = entry
    report["usage"] = judge.usage.to_dict()
    report["config_snippet"] = "[judge.prompts]\n" + "\n".join(
        f"{rel} = {json.dumps([pid.rsplit('/', 1)[-1] for pid in e['kept']])}"
        for rel, e in report["relations"].items()
    )
    if write:
        out = judge_out(config) / "calibration"
        write_report(out, report, calibration_markdown(report))
    return report


def calibration_markdown(r: dict) -> str:
    lines = [
        f"# Prompt calibration ({r['backend']} · {r['model']}; reference annotator {r['reference']})",
        "",
        "| relation | source | panel Agr. | panel F1 | panel α | Agr. | F1 | κ | P | R | kept |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def f(d: dict | None, k: str, pct: bool = False) -> str:
        if not d or k not in d:
            return "–"
        return f"{100 * d[k]:.1f}" if pct else f"{d[k]:.2f}"

    for rel, e in r["relations"].items():
        if "human_panel" in e:
            h = e["human_panel"]
            lines.append(
                f"| {rel} | human annotators | {f(h, 'agreement', True)} | {f(h, 'f1')} | "
                f"{f(h, 'alpha')} | – | – | – | – | – | |"
            )
        for pid, p in e["prompts"].items():
            s, pn = p["single"], p.get("panel")
            lines.append(
                f"| {rel} | {pid.rsplit('/', 1)[-1]} | {f(pn, 'agreement', True)} | {f(pn, 'f1')} | {f(pn, 'alpha')} | "
                f"{f(s, 'agreement', True)} | {f(s, 'f1')} | {f(s, 'kappa')} | {f(s, 'precision')} | "
                f"{f(s, 'recall')} | {'✓' if pid in e['kept'] else ''} |"
            )
    lines += ["", "Keep the selected prompts with:", "", "```toml", r["config_snippet"], "```", ""]
    return "\n".join(lines)
