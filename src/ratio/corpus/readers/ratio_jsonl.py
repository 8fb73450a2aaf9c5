"""Reader for Ratio's own corpus schema: one paper of extractor Markdown per JSON line.

Record: ``{"id", "title", "year", "venue", "extractor": "nougat" | "docling", "text"}``
(the shared NeurIPS shards). The whole paper is Markdown, so structure and block
cleanup happen here via ``parse_markdown``; inline cleanup is left to ingest
(``Paper.markup = "markdown"``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from ratio.core.records import Paper
from ratio.corpus.readers._common import iter_record_lines
from ratio.corpus.readers.base import DropReport, register_reader
from ratio.corpus.text.markdown import parse_markdown


def _year(value: object) -> int | None:
    if isinstance(value, str) and value[:4].isdigit():
        return int(value[:4])
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: object) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


@register_reader("ratio-jsonl", suffixes=(".jsonl", ".jsonl.gz", ".jsonl.zst"))
def read_ratio_jsonl(path: Path, report: DropReport) -> Iterator[Paper]:
    """Ratio JSONL: id, title, year, venue, extractor and the paper as Markdown text."""
    source = str(path)
    for lineno, line in iter_record_lines(path, report):
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            report.reject(path, lineno, f"malformed JSON ({e})", "malformed_json")
            continue
        if not isinstance(rec, dict):
            report.reject(path, lineno, "malformed JSON (not an object)", "malformed_json")
            continue
        pid = rec.get("id")
        if isinstance(pid, int) and not isinstance(pid, bool):
            pid = str(pid)
        if not isinstance(pid, str) or not pid.strip():
            report.reject(path, lineno, "record has no 'id'", "missing_id")
            continue
        pid = pid.strip()
        text = rec.get("text")
        if not isinstance(text, str) or not text.strip():
            report.reject(path, lineno, f"paper {pid!r} has no 'text'", "empty_paper")
            continue
        extractor = _str_or_none(rec.get("extractor")) or "markdown"
        sections = parse_markdown(text, extractor)
        if not sections:
            msg = f"paper {pid!r} has no body text after cleanup"
            report.reject(path, lineno, msg, "empty_paper")
            continue
        yield Paper(
            pid,
            _str_or_none(rec.get("title")),
            _year(rec.get("year")),
            sections,
            date=_str_or_none(rec.get("date")),
            venue=_str_or_none(rec.get("venue")),
            source=source,
            line=lineno,
            markup="markdown",
        )
