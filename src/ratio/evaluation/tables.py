"""Result tables in the layout of the paper's Tables 3, 8, 9 and 12.

Rows are systems (with a setup column, optionally under a group heading); columns are,
per relation, metrics in percent with one decimal. A :class:`ResultsTable` renders as
Markdown, CSV and JSON; the JSON keeps raw fractions so a later step can load it, add
rows (e.g. tuned models next to baselines) and re-render.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratio.core.io import RatioError, write_text_atomic
from ratio.metrics.evaluate import parse_metric

PAPER_RELATIONS: tuple[str, ...] = ("specify", "address", "broaden")
DEFAULT_METRICS: tuple[str, ...] = ("recall@1", "recall@10", "mrr@10", "mrr@100")
_SHORT = {"recall": "R", "mrr": "M", "ndcg": "N", "precision": "P", "hit_rate": "HR", "map": "MAP"}
MISSING_MD = "—"


def metric_label(metric: str) -> str:
    """``"recall@10"`` -> ``"R@10"``, ``"mrr@100"`` -> ``"M@100"`` (the paper's headers)."""
    name, k = parse_metric(metric)
    return _SHORT[name] + (f"@{k}" if k is not None else "")


def percent(value: float | None) -> str:
    """A fraction as percent with one decimal (``0.1234`` -> ``"12.3"``); ``""`` if missing."""
    return "" if value is None else f"{100.0 * value:.1f}"


@dataclass
class TableRow:
    """One system in one setup; ``scores[relation][metric]`` is a fraction in [0, 1]."""

    system: str
    setup: str = ""
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    group: str | None = None


@dataclass
class ResultsTable:
    """Systems x (relation, metric), rendered like the paper's tables."""

    relations: Sequence[str] = PAPER_RELATIONS
    metrics: Sequence[str] = DEFAULT_METRICS
    rows: list[TableRow] = field(default_factory=list)
    title: str | None = None
    caption: str | None = None

    def __post_init__(self) -> None:
        self.relations = list(self.relations)
        self.metrics = list(self.metrics)
        for m in self.metrics:
            metric_label(m)  # validates the name early

    def add(
        self,
        system: str,
        setup: str = "",
        scores: Mapping[str, Mapping[str, float | None]] | None = None,
        group: str | None = None,
    ) -> TableRow:
        """Add (or update) the row ``(group, system, setup)`` with per-relation scores."""
        for row in self.rows:
            if (row.group, row.system, row.setup) == (group, system, setup):
                break
        else:
            row = TableRow(system, setup, {}, group)
            self.rows.append(row)
        for rel, vals in (scores or {}).items():
            row.scores.setdefault(rel, {}).update(vals)
        return row

    def add_records(self, records: Sequence[Mapping[str, Any]], group: str | None = None) -> None:
        """Add long-form records, one per (system, relation): ``{"system", "setup",
        "relation", "metrics": {metric: value}}`` (what the evaluation harness emits)."""
        for r in records:
            self.add(
                str(r["system"]),
                str(r.get("setup") or ""),
                {str(r["relation"]): dict(r.get("metrics") or {})},
                group=r.get("group", group),
            )

    def columns(self) -> list[tuple[str, str]]:
        return [(rel, m) for rel in self.relations for m in self.metrics]

    def _headers(self) -> list[str]:
        return [f"{rel.capitalize()} {metric_label(m)}" for rel, m in self.columns()]

    def _value(self, row: TableRow, rel: str, metric: str) -> float | None:
        v = row.scores.get(rel, {}).get(metric)
        return None if v is None else float(v)

    def _best(self) -> dict[tuple[str, str], float]:
        best: dict[tuple[str, str], float] = {}
        for rel, m in self.columns():
            vals = [
                round(100 * v, 1) for r in self.rows if (v := self._value(r, rel, m)) is not None
            ]
            if vals:
                best[(rel, m)] = max(vals)
        return best

    def to_markdown(self, bold_best: bool = False) -> str:
        """GitHub Markdown; a repeated system name is blanked as in the paper."""
        head = ["System", "Setup", *self._headers()]
        lines = []
        if self.title:
            lines += [f"### {self.title}", ""]
        lines += [
            "| " + " | ".join(head) + " |",
            "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|",
        ]
        best = self._best() if bold_best else {}
        group = prev_system = None
        for row in self.rows:
            if row.group != group:
                group, prev_system = row.group, None
                if group:
                    lines.append("| " + " | ".join([f"*{group}*"] + [""] * (len(head) - 1)) + " |")
            cells = [row.system if row.system != prev_system else "", row.setup or MISSING_MD]
            for rel, m in self.columns():
                v = self._value(row, rel, m)
                s = percent(v) or MISSING_MD
                if v is not None and best.get((rel, m)) == round(100 * v, 1):
                    s = f"**{s}**"
                cells.append(s)
            prev_system = row.system
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        if self.caption:
            lines += ["", self.caption]
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """One header row ``group,system,setup,<Relation> <Metric>...``; percent, one decimal."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["group", "system", "setup", *self._headers()])
        for row in self.rows:
            w.writerow(
                [row.group or "", row.system, row.setup]
                + [percent(self._value(row, rel, m)) for rel, m in self.columns()]
            )
        return buf.getvalue()

    def to_json(self) -> str:
        """Lossless: raw fractions under ``scores`` plus the rounded ``percent`` cells."""
        rows = []
        for row in self.rows:
            scores = {
                rel: {m: self._value(row, rel, m) for m in self.metrics} for rel in self.relations
            }
            percents = {
                rel: {
                    metric_label(m): None if v is None else round(100 * v, 1) for m, v in s.items()
                }
                for rel, s in scores.items()
            }
            rows.append(
                {
                    "group": row.group,
                    "system": row.system,
                    "setup": row.setup,
                    "scores": scores,
                    "percent": percents,
                }
            )
        doc = {
            "title": self.title,
            "caption": self.caption,
            "relations": list(self.relations),
            "metrics": list(self.metrics),
            "rows": rows,
        }
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ResultsTable:
        """Inverse of :meth:`to_json` (reads the raw ``scores``)."""
        try:
            doc = json.loads(text)
            t = cls(
                doc["relations"], doc["metrics"], title=doc.get("title"), caption=doc.get("caption")
            )
            for r in doc["rows"]:
                t.add(r["system"], r.get("setup", ""), r.get("scores", {}), r.get("group"))
        except (KeyError, TypeError, json.JSONDecodeError) as e:
            raise RatioError(f"not a results table JSON: {e}") from e
        return t

    def write(self, path: str | os.PathLike) -> Path:
        """Write by suffix: ``.md``, ``.csv`` or ``.json``."""
        p = Path(path)
        render = {".md": self.to_markdown, ".csv": self.to_csv, ".json": self.to_json}.get(p.suffix)
        if render is None:
            raise RatioError(f"{p}: unknown table format {p.suffix!r}; use .md, .csv or .json")
        write_text_atomic(p, render())
        return p


def results_table(
    records: Sequence[Mapping[str, Any]],
    relations: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    title: str | None = None,
) -> ResultsTable:
    """A table from long-form records (see :meth:`ResultsTable.add_records`).

    Relations default to the paper's order (Specify, Address, Broaden) restricted
    to those present; metrics default to R@1, R@10, M@10, M@100.
    """
    present = list(dict.fromkeys(str(r["relation"]) for r in records))
    if relations is None:
        relations = [r for r in PAPER_RELATIONS if r in present] + [
            r for r in present if r not in PAPER_RELATIONS
        ]
    t = ResultsTable(relations, metrics or DEFAULT_METRICS, title=title)
    t.add_records(records)
    return t
