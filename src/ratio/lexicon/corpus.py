"""Sentence sources for the construction tools: a sentences Parquet dir or a plain list.

Tools see a corpus as a stream of ``(previous sentence | None, sentence)`` pairs,
where "previous" is the sentence immediately before in the same paragraph
(``sentence_idx`` differs by 1), so a span's examples show what it refers back to.

Tested by tests/lexicon/test_tools.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow.parquet as pq

from ratio.core.io import RatioError

Pair = tuple[str | None, str, str]  # (previous text, text, paper_id)
SentenceSource = str | os.PathLike | Iterable[str]
_COLUMNS = ["paper_id", "paragraph_idx", "sentence_idx", "text"]


def parquet_files(path: str | os.PathLike) -> list[Path]:
    p = Path(path)
    if p.is_dir():
        files = sorted(p.rglob("*.parquet"))
    elif p.exists():
        files = [p]
    else:
        raise RatioError(f"{p}: sentences path not found")
    if not files:
        raise RatioError(f"{p}: no *.parquet files (expected a sentences dir, schema SENTENCES)")
    return files


def iter_pairs(source: SentenceSource) -> Iterator[Pair]:
    """``(previous, sentence, paper_id)`` for every sentence of ``source``.

    ``source`` is a sentences Parquet file/dir, a ``.txt`` file (one sentence per
    line, a blank line ends a paragraph), or an in-memory list of sentences
    (consecutive items count as one paragraph).
    """
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.suffix == ".txt":
            yield from _iter_list(p.read_text(encoding="utf-8").splitlines(), str(p))
        else:
            yield from _iter_parquet(p)
    else:
        yield from _iter_list(source, "")


def _iter_list(lines: Iterable[str], pid: str) -> Iterator[Pair]:
    prev: str | None = None
    for line in lines:
        text = line.strip()
        if not text:
            prev = None
            continue
        yield prev, text, pid
        prev = text


def _iter_parquet(path: Path) -> Iterator[Pair]:
    for f in parquet_files(path):
        try:
            pf = pq.ParquetFile(f)
        except Exception as e:  # pyarrow raises several types for corrupt files
            raise RatioError(f"{f}: cannot read Parquet: {e}") from e
        missing = [c for c in _COLUMNS if c not in pf.schema_arrow.names]
        if missing:
            raise RatioError(f"{f}: missing columns {missing} (expected schema SENTENCES)")
        prev_key: tuple[str, int, int] | None = None
        prev_text: str | None = None
        for batch in pf.iter_batches(columns=_COLUMNS, batch_size=65536):
            cols = batch.to_pydict()
            for pid, para, idx, text in zip(*(cols[c] for c in _COLUMNS), strict=True):
                if text is None:
                    continue
                consecutive = prev_key is not None and prev_key == (pid, para, idx - 1)
                yield (prev_text if consecutive else None), text, pid
                prev_key, prev_text = (pid, para, idx), text
