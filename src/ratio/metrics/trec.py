"""TREC run and qrels files, the lingua franca of IR evaluation tools.

Run lines are ``qid Q0 docid rank score tag``; qrels lines are
``qid iter docid relevance``. Reading streams plain, ``.gz`` or ``.zst`` files via
:func:`ratio.io.iter_lines` and raises :class:`ratio.io.InputError` naming the
file and line of the first malformed line. Writing is atomic, and scores are
written with ``repr`` so a run round-trips bit-exactly. trec_eval ignores the
rank column (it re-sorts by score), and so does :func:`read_run`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ratio.io import InputError, atomic_path, iter_lines, line_error
from ratio.metrics.run import Qrels, Run


def _check_id(kind: str, value: str) -> None:
    if not value or any(c.isspace() for c in value):
        raise ValueError(
            f"{kind} {value!r} is empty or contains whitespace; TREC files split on it"
        )


def write_run(run: Run, path: str | os.PathLike, tag: str | None = None) -> Path:
    """Write ``run`` as a TREC run file (ranks in trec_eval's order); ``tag`` defaults to
    ``run.name``."""
    run = run.in_trec_order()
    tag = tag or run.name
    _check_id("tag", tag)
    target = Path(path)
    with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for i, q in enumerate(run.query_ids):
            _check_id("query id", q)
            valid = run.indices[i] >= 0
            for rank, (doc, score) in enumerate(
                zip(
                    run.vocab[run.indices[i][valid]].tolist(),
                    run.scores[i][valid].tolist(),
                    strict=True,
                ),
                1,
            ):
                _check_id("doc id", doc)
                fh.write(f"{q} Q0 {doc} {rank} {score!r} {tag}\n")
    return target


def _trec_lines(path: str | os.PathLike, layout: str) -> Iterator[tuple[int, list[str]]]:
    """Non-blank lines of a TREC file split into fields, each checked against ``layout``."""
    n = len(layout.split())
    for lineno, line in iter_lines(path):
        if err := line_error(line):
            raise err
        parts = line.split()
        if not parts:
            continue
        if len(parts) != n:
            raise InputError(
                path,
                lineno,
                f"expected {n} fields '{layout}', got {len(parts)}",
                "bad_trec_line",
            )
        yield lineno, parts


def read_run(path: str | os.PathLike, name: str | None = None) -> Run:
    """Read a TREC run file into a :class:`Run` (``name`` defaults to the file's tag)."""
    run: dict[str, dict[str, float]] = {}
    tag: str | None = None
    for lineno, parts in _trec_lines(path, "qid Q0 docid rank score tag"):
        qid, _, doc, rank, score_s, tag = parts
        try:
            int(rank)
        except ValueError:
            raise InputError(
                path, lineno, f"rank {rank!r} is not an integer", "bad_trec_line"
            ) from None
        try:
            score = float(score_s)
        except ValueError:
            raise InputError(
                path, lineno, f"score {score_s!r} is not a number", "bad_trec_line"
            ) from None
        if math.isnan(score):
            raise InputError(path, lineno, "score is NaN", "bad_trec_line")
        docs = run.setdefault(qid, {})
        if doc in docs:
            raise InputError(
                path, lineno, f"doc {doc!r} listed twice for query {qid!r}", "bad_trec_line"
            )
        docs[doc] = score
    return Run.from_dict(run, name=name or tag or Path(path).name)


def write_qrels(qrels: Qrels, path: str | os.PathLike) -> Path:
    """Write ``qrels`` as a TREC qrels file (``qid 0 docid relevance``)."""
    target = Path(path)
    lens = np.diff(qrels.offsets)
    with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        pos = 0
        for q, n in zip(qrels.query_ids, lens.tolist(), strict=True):
            _check_id("query id", q)
            for doc, rel in zip(
                qrels.doc_ids[pos : pos + n].tolist(),
                qrels.relevance[pos : pos + n].tolist(),
                strict=True,
            ):
                _check_id("doc id", doc)
                fh.write(f"{q} 0 {doc} {rel}\n")
            pos += n
    return target


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read a TREC qrels file into :class:`Qrels`."""
    qrels: dict[str, dict[str, int]] = {}
    for lineno, parts in _trec_lines(path, "qid iter docid relevance"):
        qid, _, doc, rel_s = parts
        try:
            rel = int(rel_s)
        except ValueError:
            raise InputError(
                path, lineno, f"relevance {rel_s!r} is not an integer", "bad_trec_line"
            ) from None
        docs = qrels.setdefault(qid, {})
        if doc in docs:
            raise InputError(
                path, lineno, f"doc {doc!r} judged twice for query {qid!r}", "bad_trec_line"
            )
        docs[doc] = rel
    return Qrels.from_dict(qrels)
