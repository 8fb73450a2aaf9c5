"""Reader for classic S2ORC JSON (2019/2020 releases and s2orc-doc2json output).

Layouts handled, one paper per record:

- 2019 release: ``{"paper_id", "metadata": {...}, "grobid_parse": {"abstract": [...],
  "body_text": [...]}, "latex_parse": {...} | null}``;
- 2020 ``pdf_parses`` shards and doc2json: ``{"paper_id", "abstract": [...], "body_text": [...]}``;
- the combined layout: ``{"paper_id", "metadata" | top-level fields, "abstract": "...",
  "pdf_parse": {"body_text": [...]}}`` (also ``pdf_parses`` as an object or a list).

Paragraphs are ``{"text", "section", "sec_num"?, "cite_spans", ...}``; consecutive
paragraphs with the same section (and number) form one :class:`Section`. Citation
markers stay in the text; ``ratio.corpus.text`` removes them later.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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
    to_year,
)
from ratio.corpus.readers.base import DropReport, register_reader

# "Abstract", "ABSTRACT:", "Abstract—" glued to the first word by GROBID ("AbstractColorado").
_ABSTRACT_PREFIX = re.compile(
    r"^\s*(?:Abstract|ABSTRACT)(?=[\s.:\-\u2013\u2014]|[A-Z])[\s.:\-\u2013\u2014]*"
)
_PARSE_KEYS = ("grobid_parse", "pdf_parse", "pdf_parses", "latex_parse")


@register_reader("s2orc", suffixes=(".json", *JSONL_SUFFIXES))
def read_s2orc(path: Path, report: DropReport) -> Iterator[Paper]:
    """Classic S2ORC JSON: metadata plus a GROBID/PDF parse with body_text paragraphs."""
    return papers_from_records(
        path, report, ("paper_id", "metadata.paper_id", "corpusid", "id"), _paper
    )


def _find_parse(rec: dict[str, Any]) -> dict[str, Any]:
    """The first parse that has body paragraphs; the record itself for flat layouts."""
    for key in _PARSE_KEYS:
        value = rec.get(key)
        for cand in value if isinstance(value, list) else [value]:
            if isinstance(cand, dict) and isinstance(body := cand.get("body_text"), list) and body:
                return cand
    return rec


def _paper(rec: dict[str, Any], pid: str, path: Path, line: int) -> Paper:
    meta = dict_field(rec, "metadata")

    def field(name: str) -> Any:
        value = meta.get(name)
        return value if value not in (None, "") else rec.get(name)

    parse = _find_parse(rec)
    abstract = _abstract_paragraphs(parse.get("abstract")) or _abstract_paragraphs(
        field("abstract")
    )
    sections = [Section(heading="Abstract", paragraphs=abstract)] if abstract else []
    sections += body_sections(parse.get("body_text"), "sec_num")
    venue = clean_str(field("venue")) or clean_str(field("journal"))
    title, year = clean_str(field("title")), to_year(field("year"))
    return Paper(pid, title, year, sections, venue=venue, source=str(path), line=line)


def _abstract_paragraphs(value: Any) -> list[str]:
    """Abstract paragraphs from a string or a list of paragraph objects, minus the 'Abstract' label."""
    texts: list[Any]
    if isinstance(value, str):
        texts = [value]
    elif isinstance(value, list):
        texts = [p.get("text") if isinstance(p, dict) else p for p in value]
    else:
        return []
    out: list[str] = []
    for text in texts:
        if isinstance(text, str):
            text = join_soft_breaks(text)
            if not out:
                text = _ABSTRACT_PREFIX.sub("", text, count=1)
            if text:
                out.append(text)
    return out
