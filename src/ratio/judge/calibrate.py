"""Prompt calibration against human labels (paper 4.3, Appendix E, Table 10).

Every candidate silver prompt of a relation judges the labelled pairs and is scored
against the reference annotator and, with several annotators, against the panel (next
to the annotators' agreement with each other). With ``judge.scoring = "logprob"`` each
prompt's threshold on P(accept) is chosen by seeded, label-stratified k-fold
cross-validation, so the "after" numbers are out-of-sample; few-shot examples come
from the other folds only. Prompts are ranked by kappa, not F1: at a 60% base rate an
accept-all judge has F1 .75 and kappa 0.

Labels (``ratio judge annotate`` CSV rows, ``y``/``n``; ``s`` = skipped) are checked
before anything is judged or written.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratio.core.config import RunConfig
from ratio.core.io import RatioError
from ratio.core.layout import RunDir
from ratio.core.records import RELATIONS
from ratio.judge.agreement import (
    best_threshold,
    cross_validated,
    panel_scores,
    roc_auc,
    scores_with_kappa,
    stratified_folds,
)
from ratio.judge.annotate import ITEM_FIELDS, read_items
from ratio.judge.llm.prompts import candidates_for, silver_pair_text
from ratio.judge.llm.runner import Judge, Result, Shot, Task, write_report

LABEL_FIELDS = ("relation", "query_id", "candidate_id", "query", "marker", "candidate")
Unit = tuple[str, str, str]  # relation, query id, candidate id


def read_labels(path: str | Path, items: str | Path | None = None) -> list[dict[str, str]]:
    """Rows of a labels CSV, checked; skipped (``s``) rows dropped.

    With ``items`` (the items CSV the labels were made from) every label must name a
    known item and repeat its text exactly. Each error names the file, line and field.
    """
    p = Path(path)
    if not p.is_file():
        raise RatioError(f"labels file not found: {p}")
    known = {r["item_id"]: r for r in read_items(Path(items))} if items else None
    need = (*LABEL_FIELDS, "annotator", "label") + (("item_id",) if known is not None else ())
    rows: list[dict[str, str]] = []
    seen: dict[tuple[str, Unit], tuple[str, int]] = {}  # (annotator, unit) -> (label, line)
    for i, row in enumerate(read_items(p, need), 2):
        lab = (row["label"] or "").strip().lower()
        if lab not in ("y", "n", "s"):
            raise RatioError(f"{p}:{i}: label must be y, n or s, got {row['label']!r}")
        if row["relation"] not in RELATIONS:
            raise RatioError(
                f"{p}:{i}: unknown relation {row['relation']!r}; known: {', '.join(RELATIONS)}"
            )
        for f in ("query_id", "candidate_id", "annotator"):
            if not (row[f] or "").strip():
                raise RatioError(f"{p}:{i}: empty {f}")
        if known is not None:
            item = known.get(row["item_id"])
            if item is None:
                raise RatioError(f"{p}:{i}: item_id {row['item_id']!r} is not in {items}")
            for f in ITEM_FIELDS:
                if row[f] != item[f]:
                    raise RatioError(
                        f"{p}:{i}: field {f!r} of item {row['item_id']!r} differs from {items}"
                    )
        if lab == "s":
            continue
        key = (row["annotator"], _unit(row))
        if key in seen and seen[key][0] != lab:
            raise RatioError(
                f"{p}:{i}: annotator {row['annotator']!r} labelled {_unit(row)} "
                f"{seen[key][0]!r} on line {seen[key][1]} and {lab!r} here"
            )
        seen[key] = (lab, i)
        rows.append(row)
    return rows


def _unit(row: dict) -> Unit:
    return row["relation"], row["query_id"], row["candidate_id"]


@dataclass
class LabelSet:
    """Validated labels: per annotator a verdict per unit, and each unit's texts."""

    path: Path
    by_annot: dict[str, dict[Unit, bool]]
    texts: dict[Unit, dict[str, str]]
    reference: str
    relations: list[str]

    def units(self, relation: str) -> list[Unit]:
        return sorted(u for u in self.texts if u[0] == relation)

    def reference_units(self, relation: str) -> list[Unit]:
        return [u for u in self.units(relation) if u in self.by_annot[self.reference]]


def load_labels(
    path: str | Path,
    *,
    items: str | Path | None = None,
    relations: list[str] | None = None,
    reference: str | None = None,
    limit: int = 0,
    seed: int = 0,
) -> LabelSet:
    """Read and check the labels calibration needs, before anything is judged or written.

    ``limit`` > 0 keeps a seeded sub-sample of that many reference-labelled pairs per
    relation, stratified by the reference label (every annotator's labels of them stay):
    a quick, cheaper run on a slow judge.
    """
    p = Path(path)
    rows = read_labels(p, items)
    if not rows:
        raise RatioError(f"{p}: no y/n labels")
    by_annot: dict[str, dict[Unit, bool]] = defaultdict(dict)
    texts: dict[Unit, dict] = {}
    for r in rows:
        u = _unit(r)
        by_annot[r["annotator"]][u] = r["label"].strip().lower() == "y"
        first = texts.setdefault(u, r)
        for f in ("query", "marker", "candidate"):
            if first[f] != r[f]:
                raise RatioError(
                    f"{p}: field {f!r} of {u} differs between annotators "
                    f"{first['annotator']!r} and {r['annotator']!r}"
                )
    ref = reference or max(sorted(by_annot), key=lambda a: len(by_annot[a]))
    if ref not in by_annot:
        raise RatioError(
            f"{p}: reference annotator {ref!r} has no labels; annotators: {', '.join(sorted(by_annot))}"
        )
    present = sorted({u[0] for u in texts})
    rels = relations or present
    keep: set[Unit] = set()
    for rel in rels:
        if rel not in present:
            raise RatioError(f"{p}: no labels for relation {rel!r}; labelled: {', '.join(present)}")
        units = sorted(u for u in texts if u[0] == rel and u in by_annot[ref])
        pos = [u for u in units if by_annot[ref][u]]
        neg = [u for u in units if not by_annot[ref][u]]
        if not pos or not neg:
            only = "n" if neg else "y" if pos else "nothing"
            raise RatioError(
                f"{p}: field 'label': annotator {ref!r} labelled every {rel} pair {only!r}; "
                "calibration needs both y and n labels per relation"
            )
        if limit > 0:
            rng = random.Random(seed)
            rng.shuffle(pos)
            rng.shuffle(neg)
            # each class in proportion, from the front of a seeded order: a smaller limit
            # picks a subset of a larger one, so the judgments already made are reused
            n_pos = max(1, round(limit * len(pos) / len(units)))
            keep |= set(pos[:n_pos]) | set(neg[: max(1, limit - n_pos)])
    if limit > 0:
        texts = {u: t for u, t in texts.items() if u in keep}
        by_annot = {a: {u: v for u, v in d.items() if u in keep} for a, d in by_annot.items()}
    return LabelSet(p, dict(by_annot), texts, ref, list(rels))


def _pick_shots(
    units: list[Unit], labels: dict[Unit, bool], texts: dict[Unit, dict], n: int, seed: int
) -> tuple[Shot, ...]:
    """``n`` labelled examples from ``units``, half accepts and half rejects, seeded order."""
    rng = random.Random(seed)
    pos = [u for u in units if labels[u]]
    neg = [u for u in units if not labels[u]]
    n_pos = min(len(pos), (n + 1) // 2)
    chosen = rng.sample(pos, n_pos) + rng.sample(neg, min(len(neg), n - n_pos))
    rng.shuffle(chosen)
    return tuple(Shot.of({"pair": _pair(texts[u])}, labels[u]) for u in chosen)


def _pair(row: dict) -> str:
    return silver_pair_text(row["query"], row["marker"], row["candidate"])


def _judge_prompt(
    judge: Judge,
    prompt,
    units: list[Unit],
    labels: LabelSet,
    fold: dict[Unit, int],
    shots: int,
    seed: int,
) -> dict[Unit, Result]:
    """One result per unit; with shots, each fold is judged with examples from the others."""
    ref = labels.by_annot[labels.reference]
    groups = sorted(set(fold.values())) if shots else [None]
    out: dict[Unit, Result] = {}
    for g in groups:
        members = [u for u in units if g is None or fold[u] == g]
        ex: tuple[Shot, ...] = ()
        if g is not None:  # folds exist only with shots
            pool = [u for u in ref if u[0] == prompt.relation and fold.get(u) != g]
            ex = _pick_shots(sorted(pool), ref, labels.texts, shots, seed * 1000 + g)
        tasks = [
            Task(prompt, {"pair": _pair(labels.texts[u])}, u[1], u[2], u[0], ex) for u in members
        ]
        desc = f"calibrate {prompt.id}" + (f" fold {g}" if g is not None else "")
        out.update(zip(members, judge.run(tasks, desc=desc), strict=True))
    return out


def calibrate(
    config: RunConfig,
    judge: Judge,
    labels: LabelSet | str | Path,
    *,
    relations: list[str] | None = None,
    reference: str | None = None,
    keep: int = 2,
    folds: int = 5,
    shots: int = 0,
    items: str | Path | None = None,
    seed: int | None = None,
    write: bool = True,
) -> dict[str, Any]:
    """Score every silver prompt per relation against the labels; thresholds by CV; keep the best."""
    if not isinstance(labels, LabelSet):
        labels = load_labels(labels, items=items, relations=relations, reference=reference)
    if folds < 2:
        raise RatioError(f"folds must be at least 2, got {folds}")
    seed = config.build.seed if seed is None else seed
    by_annot, ref = labels.by_annot, labels.reference
    report: dict[str, Any] = {
        "labels": str(labels.path),
        "reference": ref,
        "annotators": {a: len(v) for a, v in sorted(by_annot.items())},
        "relations": {},
        "model": judge.backend.model,
        "backend": judge.backend.kind,
        "scoring": judge.scoring,
        "folds": folds,
        "shots": shots,
        "seed": seed,
    }
    for rel in labels.relations:
        units = labels.units(rel)
        ref_units = labels.reference_units(rel)
        y = [by_annot[ref][u] for u in ref_units]
        k = min(folds, sum(y), len(y) - sum(y))
        fold_of = dict(zip(ref_units, stratified_folds(y, max(k, 1), seed), strict=True))
        # units only other annotators labelled are dealt round-robin
        for j, u in enumerate([u for u in units if u not in fold_of]):
            fold_of[u] = j % max(k, 1)
        panel_units = [u for u in units if sum(u in by_annot[a] for a in by_annot) >= 2]
        entry: dict[str, Any] = {
            "n_units": len(units),
            "n_reference": len(ref_units),
            "reference_accept_rate": sum(y) / len(y),
            "n_panel_units": len(panel_units),
            "cv_folds": k if k >= 2 else None,
            "prompts": {},
        }
        if len(by_annot) >= 2 and panel_units:
            entry["human_panel"] = panel_scores(by_annot, panel_units, None)
        for p in candidates_for("silver", rel):
            res = _judge_prompt(judge, p, units, labels, fold_of, shots if k >= 2 else 0, seed)
            greedy = {u: bool(r.valid and (r.parsed or {}).get("accepted")) for u, r in res.items()}
            if judge.scoring == "logprob":
                score = {u: (r.p_accept if r.p_accept is not None else 0.0) for u, r in res.items()}
            else:
                score = {u: float(greedy[u]) for u in units}
            s = [score[u] for u in ref_units]
            e: dict[str, Any] = {
                "invalid": sum(1 for r in res.values() if not r.valid),
                "before": scores_with_kappa(y, [greedy[u] for u in ref_units]),
                "auc": roc_auc(y, s),
                "threshold": best_threshold(y, s),
            }
            final = dict(greedy)
            if k >= 2:
                pred, fold_t = cross_validated(y, s, [fold_of[u] for u in ref_units])
                e["after"] = scores_with_kappa(y, pred)
                e["fold_thresholds"] = fold_t
                final = {u: score[u] >= e["threshold"] for u in units} | dict(
                    zip(ref_units, pred, strict=True)
                )
            if len(by_annot) >= 2 and panel_units:
                e["panel"] = panel_scores(by_annot, panel_units, final)
            entry["prompts"][p.id] = e

        ranked = sorted(entry["prompts"].items(), key=lambda kv: _rank(kv[1]))
        entry["kept"] = [pid for pid, _ in ranked[:keep]]
        report["relations"][rel] = entry
    report["usage"] = judge.usage.to_dict()
    report["config_snippet"] = config_snippet(report)
    if write:
        out = RunDir.of(config).judge.calibration
        write_report(out, report, calibration_markdown(report))
    return report


def _rank(e: dict) -> tuple[float, float]:
    """Best first: kappa after calibration (before, without CV), then F1."""
    s = e.get("after") or e["before"]
    return (-s["kappa"], -s["f1"])


def config_snippet(r: dict) -> str:
    lines = ["[judge.prompts]"]
    lines += [
        f"{rel} = {json.dumps([pid.rsplit('/', 1)[-1] for pid in e['kept']])}"
        for rel, e in r["relations"].items()
    ]
    if r.get("scoring") == "logprob":
        lines += ["", '# and under [judge]: scoring = "logprob"', "[judge.thresholds]"]
        lines += [
            f'"{pid}" = {e["prompts"][pid]["threshold"]:.4f}'
            for e in r["relations"].values()
            for pid in e["kept"]
        ]
    return "\n".join(lines)


def calibration_markdown(r: dict) -> str:
    shots = f", {r['shots']}-shot" if r.get("shots") else ""
    lines = [
        f"# Prompt calibration ({r['backend']} · {r['model']}; scoring {r.get('scoring', 'sample')}"
        f"{shots}; reference annotator {r['reference']})",
        "",
        f"Labels: `{r.get('labels', '')}` — "
        + ", ".join(f"{a}: {n}" for a, n in r["annotators"].items())
        + f". Thresholds by {r.get('folds', 5)}-fold stratified cross-validation (seed {r.get('seed')}); "
        "“before” is the judge's own verdict, “after” the out-of-fold thresholded one.",
        "",
        "| relation | source | n | panel Agr. | panel κ | panel α | AUC | κ before | κ after "
        "| F1 before | F1 after | Agr. before | Agr. after | threshold | kept |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def f(d: dict | None, k: str, pct: bool = False) -> str:
        if not d or k not in d or d[k] != d[k]:
            return "–"
        return f"{100 * d[k]:.1f}" if pct else f"{d[k]:.2f}"

    for rel, e in r["relations"].items():
        if "human_panel" in e:
            h = e["human_panel"]
            lines.append(
                f"| {rel} | annotators ({h['pairs']} pair(s)) | {e['n_panel_units']} | "
                f"{f(h, 'agreement', True)} | {f(h, 'kappa')} | {f(h, 'alpha')} |" + " – |" * 9
            )
        for pid, p in e["prompts"].items():
            b, a, pn = p["before"], p.get("after"), p.get("panel")
            lines.append(
                f"| {rel} | {pid.rsplit('/', 1)[-1]} | {e['n_reference']} | {f(pn, 'agreement', True)} | "
                f"{f(pn, 'kappa')} | {f(pn, 'alpha')} | {f(p, 'auc')} | {f(b, 'kappa')} | "
                f"{f(a, 'kappa')} | {f(b, 'f1')} | {f(a, 'f1')} | {f(b, 'agreement', True)} | "
                f"{f(a, 'agreement', True)} | {p['threshold']:.3f} | {'✓' if pid in e['kept'] else ''} |"
            )
    lines += ["", "Keep the selected prompts with:", "", "```toml", r["config_snippet"], "```", ""]
    return "\n".join(lines)
