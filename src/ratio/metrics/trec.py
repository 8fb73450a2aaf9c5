"""TREC run and qrels files, the lingua franca of IR evaluation tools.

"Run" is the TREC format's own name (so ``write_run``/``read_run``); in memory it is a ``Ranking``.

Run lines are ``qid Q0 docid rank score tag``; qrels lines are
``qid iter docid relevance``. Reading streams plain, ``.gz`` or ``.zst`` files via
:func:`ratio.core.io.iter_lines` and raises :class:`ratio.core.io.InputError` naming the
file and line of the first malformed line. Writing is atomic, and scores are
written with ``repr`` so a run round-trips bit-exactly. trec_eval ignores the
rank column (it re-sorts by score), and so does :func:`read_run`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from ratio.core.io import InputError, atomic_path, iter_lines, line_error
from ratio.metrics.ranking import Qrels, Ranking

T = TypeVar("T")


def _check_id(kind: str, value: str) -> None:
    if not value or any(c.isspace() for c in value):
        raise ValueError(
            f"{kind} {value!r} is empty or contains whitespace; TREC files split on it"
        )


def write_run(ranking: Ranking, path: str | os.PathLike, tag: str | None = None) -> Path:
    """Write ``ranking`` as a TREC run file (ranks in trec_eval's order); ``tag`` defaults to
    ``ranking.name``."""
    ranking = ranking.in_trec_order()
    tag = tag or ranking.name
    _check_id("tag", tag)
    target = Path(path)
    with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for q in ranking.query_ids:
            _check_id("query id", q)
            for rank, (doc, score) in enumerate(ranking.ranked(q), 1):
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
            raise _error(path, lineno, f"expected {n} fields '{layout}', got {len(parts)}")
        yield lineno, parts


def _error(path: str | os.PathLike, lineno: int, message: str) -> InputError:
    return InputError(path, lineno, message, "bad_trec_line")


def _parse(
    path: str | os.PathLike, lineno: int, field: str, value: str, type_: Callable[[str], T]
) -> T:
    try:
        return type_(value)
    except ValueError:
        kind = "an integer" if type_ is int else "a number"
        raise _error(path, lineno, f"{field} {value!r} is not {kind}") from None


def read_run(path: str | os.PathLike, name: str | None = None) -> Ranking:
    """Read a TREC run file into a :class:`Ranking` (``name`` defaults to the file's tag)."""
    run: dict[str, dict[str, float]] = {}
    tag: str | None = None
    for lineno, parts in _trec_lines(path, "qid Q0 docid rank score tag"):
        qid, _, doc, rank, score_s, tag = parts
        _parse(path, lineno, "rank", rank, int)
        score = _parse(path, lineno, "score", score_s, float)
        if math.isnan(score):
            raise _error(path, lineno, "score is NaN")
        docs = run.setdefault(qid, {})
        if doc in docs:
            raise _error(path, lineno, f"doc {doc!r} listed twice for query {qid!r}")
        docs[doc] = score
    return Ranking.from_dict(run, name=name or tag or Path(path).name)


def write_qrels(qrels: Qrels, path: str | os.PathLike) -> Path:
    """Write ``qrels`` as a TREC qrels file (``qid 0 docid relevance``)."""
    target = Path(path)
    with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for q in qrels.query_ids:
            _check_id("query id", q)
            for doc, rel in qrels.judged(q).items():
                _check_id("doc id", doc)
                fh.write(f"{q} 0 {doc} {rel}\n")
    return target


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read a TREC qrels file into :class:`Qrels`."""
    qrels: dict[str, dict[str, int]] = {}
    for lineno, parts in _trec_lines(path, "qid iter docid relevance"):
        qid, _, doc, rel_s = parts
        rel = _parse(path, lineno, "relevance", rel_s, int)
        docs = qrels.setdefault(qid, {})
        if doc in docs:
            raise _error(path, lineno, f"doc {doc!r} judged twice for query {qid!r}")
        docs[doc] = rel
    return Qrels.from_dict(qrels)
