"""``discover``: the most frequent sentence-initial pre-comma spans, with examples to review.

Paper §4.1 "Manual curation": spans (≤ 7 words) are counted over all sentences
and the top 400 are inspected with 15 random (previous, sentence) pairs each. This
module produces exactly that review material (CSV + a static HTML page) and
reads the reviewers' decisions back into a lexicon TSV (``apply_review``).

Tested by tests/lexicon/test_tools.py.
"""

from __future__ import annotations

import csv
import html
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from ratio.core.io import atomic_path, write_text_atomic
from ratio.lexicon.corpus import SentenceSource, iter_pairs
from ratio.lexicon.model import LEXICON_RELATIONS, SOURCES, Lexicon, LexiconError, load_lexicon
from ratio.lexicon.spans import leading_span, normalize_marker

REJECT = ("reject", "rejected", "no", "-")
REVIEW_COLUMNS = ["span", "count", "lexicon_relation", "decision", "notes"]
EXAMPLE_COLUMNS = ["span", "example", "paper_id", "previous", "sentence"]


@dataclass(slots=True)
class SpanExamples:
    """One frequent span with its count, current lexicon relation and sampled pairs."""

    span: str
    count: int
    relation: str | None = None
    examples: list[tuple[str, str, str]] = field(default_factory=list)  # (prev, sent, paper)


def count_spans(source: SentenceSource, max_words: int = 7) -> Counter[str]:
    """Count every sentence-initial pre-comma span of ≤ ``max_words`` words."""
    counts: Counter[str] = Counter()
    for _prev, text, _pid in tqdm(iter_pairs(source), desc="spans", unit=" sent", disable=None):
        span = leading_span(text, max_words)
        if span is not None:
            counts[span] += 1
    return counts


def sample_examples(
    source: SentenceSource, spans: set[str], k: int = 15, seed: int = 0, max_words: int = 7
) -> dict[str, list[tuple[str, str, str]]]:
    """Uniform reservoir sample of ``k`` (previous, sentence, paper) pairs per span.

    Only sentences with a previous sentence in the same paragraph qualify, since
    the reviewer must judge whether the span refers back to it.
    """
    rng = random.Random(seed)
    seen: Counter[str] = Counter()
    out: dict[str, list[tuple[str, str, str]]] = {s: [] for s in spans}
    for prev, text, pid in iter_pairs(source):
        if prev is None:
            continue
        span = leading_span(text, max_words)
        if span is None or span not in out:
            continue
        seen[span] += 1
        bucket = out[span]
        if len(bucket) < k:
            bucket.append((prev, text, pid))
        else:
            j = rng.randrange(seen[span])
            if j < k:
                bucket[j] = (prev, text, pid)
    return out


def discover(
    source: SentenceSource,
    top: int = 400,
    examples: int = 15,
    seed: int = 0,
    max_words: int = 7,
    lexicon: Lexicon | None = None,
    min_count: int = 1,
) -> list[SpanExamples]:
    """The ``top`` most frequent spans of ``source`` with ``examples`` sampled pairs each.

    Two passes (count, then sample) keep memory bounded by the number of distinct
    spans instead of holding examples for all of them. A list source is materialized.
    """
    if not isinstance(source, (str, os.PathLike)):
        source = list(source)
    counts = count_spans(source, max_words)
    ranked = sorted(
        ((s, n) for s, n in counts.items() if n >= min_count), key=lambda sn: (-sn[1], sn[0])
    )[:top]
    sampled = sample_examples(source, {s for s, _ in ranked}, examples, seed, max_words)
    lex = lexicon if lexicon is not None else load_lexicon()
    return [SpanExamples(s, n, lex.relation_of(s), sampled.get(s, [])) for s, n in ranked]


def write_review(spans: list[SpanExamples], out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write ``review.csv`` (one row per span, a ``decision`` column to fill),
    ``examples.csv`` and ``review.html`` under ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "review": out / "review.csv",
        "examples": out / "examples.csv",
        "html": out / "review.html",
    }
    with atomic_path(paths["review"]) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(REVIEW_COLUMNS)
        for s in spans:
            w.writerow([s.span, s.count, s.relation or "", s.relation or "", ""])
    with atomic_path(paths["examples"]) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(EXAMPLE_COLUMNS)
        for s in spans:
            for i, (prev, sent, pid) in enumerate(s.examples, 1):
                w.writerow([s.span, i, pid, prev, sent])
    write_text_atomic(paths["html"], render_html(spans))
    return paths


def render_html(spans: list[SpanExamples]) -> str:
    """A static, dependency-free page: one section per span with its example pairs."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Ratio marker review</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "section{border-top:1px solid #ccc;padding:.5em 0}.prev{color:#555}"
        ".mk{background:#ffe08a}.rel{font-size:.8em;color:#06c}li{margin:.4em 0}</style>",
        "</head><body><h1>Marker review</h1>",
        "<p>For each span: does it, in <em>every</em> example, signal the target move "
        "(address / broaden / specify) <em>and</em> refer back to the previous sentence? "
        "Fill the <code>decision</code> column of review.csv with a relation name or "
        "<code>reject</code>.</p><ol>",
    ]
    for i, s in enumerate(spans):
        parts.append(f"<li><a href='#s{i}'>{e(s.span)}</a> ({s.count})</li>")
    parts.append("</ol>")
    for i, s in enumerate(spans):
        rel = f" <span class='rel'>[{e(s.relation)}]</span>" if s.relation else ""
        parts.append(f"<section id='s{i}'><h2>{e(s.span)}, <small>{s.count}</small>{rel}</h2><ol>")
        for prev, sent, pid in s.examples:
            cut = sent.find(",")
            head, rest = (sent[: cut + 1], sent[cut + 1 :]) if cut >= 0 else ("", sent)
            parts.append(
                f"<li><div class='prev'>{e(prev)}</div><div><span class='mk'>{e(head)}</span>"
                f"{e(rest)}</div><small>{e(pid)}</small></li>"
            )
        parts.append("</ol></section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def apply_review(
    review_csv: str | os.PathLike,
    out_tsv: str | os.PathLike,
    source: str = "manual",
    base: Lexicon | None = None,
) -> dict[str, int]:
    """Turn a filled ``review.csv`` into a lexicon TSV (rows whose ``decision`` is a relation).

    ``reject`` or an empty decision skips the span. An unknown decision, or an
    accepted span already in ``base`` under another relation, is a
    :class:`LexiconError` naming the CSV line. Returns counts per decision.
    """
    if source not in SOURCES:
        raise LexiconError(f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")
    path = Path(review_csv)
    try:
        fh = open(path, newline="", encoding="utf-8")
    except OSError as e:
        raise LexiconError(f"{path}: cannot read review: {e.strerror or e}") from e
    rows: list[tuple[str, str, str]] = []
    counts: Counter[str] = Counter()
    with fh:
        reader = csv.DictReader(fh)
        for col in ("span", "decision"):
            if col not in (reader.fieldnames or []):
                raise LexiconError(f"{path}:1: missing column {col!r}")
        for row in reader:
            line = reader.line_num
            decision = (row.get("decision") or "").strip().lower()
            span = normalize_marker(row.get("span") or "")
            if not decision or decision in REJECT:
                counts["reject"] += 1
                continue
            if decision not in LEXICON_RELATIONS:
                raise LexiconError(
                    f"{path}:{line}: unknown decision {decision!r} for {span!r}; expected a relation "
                    f"({', '.join(LEXICON_RELATIONS)}) or 'reject'"
                )
            if not span:
                raise LexiconError(f"{path}:{line}: empty span")
            if base is not None:
                prev = base.relation_of(span)
                if prev is not None and prev != decision:
                    raise LexiconError(
                        f"{path}:{line}: {span!r} decided {decision!r} but the lexicon has it as {prev!r}"
                    )
            notes = (row.get("notes") or "").replace("\t", " ").replace("\n", " ").strip()
            rows.append((span, decision, notes))
            counts[decision] += 1
    lines = [f"# reviewed from {path.name}", "marker\trelation\tsource\tnotes"]
    lines += [f"{m}\t{r}\t{source}\t{n}" for m, r, n in rows]
    write_text_atomic(out_tsv, "\n".join(lines) + "\n")
    load_lexicon(out_tsv)  # validate what we wrote (duplicates across relations etc.)
    return dict(counts)
