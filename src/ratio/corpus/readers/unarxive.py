"""Reader for unarXive JSON Lines (arXiv LaTeX sources parsed to paragraphs).

Record: ``{"paper_id", "metadata": {"id", "title", "versions": [{"created"}], "update_date", ...},
"abstract": {"text", ...}, "body_text": [{"section", "sec_number", "sec_type", "content_type",
"text"}], ...}``. Paragraph text keeps unarXive's ``{{cite:...}}``, ``{{formula:...}}``
placeholders and ``REF`` markers; ``ratio.corpus.text`` handles them (``markup="latex"``).

The date is the first version's submission date, the one a temporal split
should use (``update_date`` moves whenever metadata is touched).
"""

from __future__ import annotations

from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from ratio.core.records import Paper, Section
from ratio.corpus.readers._common import (
    JSONL_SUFFIXES,
    body_sections,
    clean_str,
    dict_field,
    join_soft_breaks,
    papers_from_records,
    str_field,
    to_iso_date,
    to_year,
)
from ratio.corpus.readers.base import DropReport, register_reader


@register_reader("unarxive", suffixes=JSONL_SUFFIXES)
def read_unarxive(path: Path, report: DropReport) -> Iterator[Paper]:
    """unarXive JSONL: arXiv metadata plus LaTeX-derived body_text paragraphs."""
    return papers_from_records(path, report, ("paper_id", "metadata.id"), _paper)


def first_version_date(meta: dict[str, Any]) -> str | None:
    """ISO date of ``versions[0].created`` (RFC 2822, e.g. ``Thu, 22 Dec 2022 17:01:56 GMT``)."""
    versions = meta.get("versions")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        created = versions[0].get("created")
        if isinstance(created, str):
            try:
                return parsedate_to_datetime(created).date().isoformat()
            except (TypeError, ValueError, IndexError):
                pass
    return None


def _paper(rec: dict[str, Any], pid: str, path: Path, line: int) -> Paper:
    meta = dict_field(rec, "metadata")
    date = first_version_date(meta)
    year = to_year(date) if date else None
    if year is None:  # no usable version date: fall back to the metadata update date
        date = to_iso_date(meta.get("update_date"))
        year = to_year(date)

    sections: list[Section] = []
    abstract = rec.get("abstract")
    abstract_text = abstract.get("text") if isinstance(abstract, dict) else abstract
    if not isinstance(abstract_text, str):
        abstract_text = str_field(meta, "abstract")
    if abstract_text.strip():
        sections.append(Section(heading="Abstract", paragraphs=[join_soft_breaks(abstract_text)]))
    sections += body_sections(rec.get("body_text"), "sec_number")
    return Paper(
        pid,
        clean_str(meta.get("title")),
        year,
        sections,
        date=date,
        venue="arXiv",
        source=str(path),
        line=line,
        markup="latex",
    )
