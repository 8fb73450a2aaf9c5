"""Reader for the current S2ORC layout (Semantic Scholar datasets API) and peS2o.

S2ORC records keep the whole paper as one string plus character-offset span
annotations, each annotation type stored as a *JSON string* (or null)::

    {"corpusid": 254640939, "title"?: "...", "externalids": {...},
     "content": {"source": {...}, "text": "...",
                 "annotations": {"paragraph": "[{\\"start\\":5027,\\"end\\":7216}, ...]",
                                 "sectionheader": "[{\\"start\\":5013,\\"end\\":5025,
                                                    \\"attributes\\":{\\"n\\":\\"1\\"}}, ...]",
                                 "abstract": "...", "title": "...", "bibref": "...", ...}}}

The 2024+ ``s2orc_v2`` release names the field ``body`` and the header type
``section_header``; both spellings are read. A paragraph belongs to the last
section header that starts before it. Records whose annotations are null (no
paragraph spans) fall back to splitting ``text`` on blank lines.

peS2o records (``{"id", "text", "source", "added", "created"}``) carry plain
text: paragraphs are split on blank lines, a short unpunctuated first block is
taken as the title and later ones as section headings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ratio.core.records import Paper, Section
from ratio.corpus.readers._common import (
    JSONL_SUFFIXES,
    clean_str,
    dict_field,
    is_appendix_number,
    join_soft_breaks,
    papers_from_records,
    section,
    str_field,
    to_iso_date,
    to_year,
)
from ratio.corpus.readers.base import DropReport, register_reader

_SUFFIXES = (*JSONL_SUFFIXES, ".json.gz", ".json")  # peS2o ships JSON Lines as .json.gz
_ABSTRACT_LABEL = re.compile(r"^\s*(?:Abstract|ABSTRACT)[\s.:\-\u2013\u2014]*$")
_ENDS_SENTENCE = re.compile(r"[.!?:;,)\]]\s*$")


@register_reader("s2orc-v2", suffixes=_SUFFIXES)
def read_s2orc_v2(path: Path, report: DropReport) -> Iterator[Paper]:
    """Current S2ORC (text + JSON-string span annotations) and peS2o plain-text records."""
    return papers_from_records(path, report, ("corpusid", "corpus_id", "id", "paper_id"), _paper)


register_reader("pes2o", suffixes=_SUFFIXES)(read_s2orc_v2)


def _spans(annotations: dict[str, Any], *names: str) -> list[dict[str, Any]]:
    """Decode one annotation type (a JSON string, a list, or null) into sorted valid spans."""
    raw: Any = next((annotations[n] for n in names if annotations.get(n) is not None), None)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return []
    if not isinstance(raw, list):
        return []
    out = []
    for span in raw:
        if not isinstance(span, dict):
            continue
        try:
            start, end = int(span["start"]), int(span["end"])
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= start < end:
            out.append({"start": start, "end": end, "attributes": dict_field(span, "attributes")})
    out.sort(key=lambda s: (s["start"], s["end"]))
    return out


def _paper(rec: dict[str, Any], pid: str, path: Path, line: int) -> Paper:
    content = rec.get("content") if isinstance(rec.get("content"), dict) else rec.get("body")
    if not isinstance(content, dict):  # peS2o: plain text, no annotations
        content = {"text": rec.get("text")}
    text = str_field(content, "text")
    ann = dict_field(content, "annotations")
    title = clean_str(rec.get("title"))
    if title is None:
        for span in _spans(ann, "title")[:1]:
            title = clean_str(text[span["start"] : span["end"]])
    date = to_iso_date(rec.get("publicationdate")) or to_iso_date(rec.get("created"))
    # peS2o's "created" may be a bare year ("some only down to the year")
    year = to_year(rec.get("year")) or to_year(date) or to_year(rec.get("created"))
    venue = clean_str(rec.get("venue"))
    if venue is None:
        for span in _spans(ann, "venue")[:1]:
            venue = clean_str(text[span["start"] : span["end"]])

    sections: list[Section] = []
    abstract_spans = _spans(ann, "abstract")
    abstract = [
        join_soft_breaks(part)
        for span in abstract_spans
        for part in text[span["start"] : span["end"]].split("\n")
        if part.strip() and not _ABSTRACT_LABEL.match(part)
    ]
    if abstract:
        sections.append(Section(heading="Abstract", paragraphs=abstract))
    paragraphs = _spans(ann, "paragraph")
    if not paragraphs:  # null annotations: only the text itself is known
        block_title, blocks = _plain_sections(text, guess_title=title is None)
        title = title or block_title
        sections += blocks
    headers = _spans(ann, "sectionheader", "section_header")
    h = 0
    current: Section | None = None
    for para in paragraphs:
        if any(a["start"] <= para["start"] and para["end"] <= a["end"] for a in abstract_spans):
            continue  # already read as the abstract
        new_header = None
        while h < len(headers) and headers[h]["start"] <= para["start"]:
            new_header = headers[h]
            h += 1
        if new_header is not None:
            heading = text[new_header["start"] : new_header["end"]]
            number = new_header["attributes"].get("n")
            current = section(heading, is_appendix=is_appendix_number(number))
            sections.append(current)
        elif current is None:
            current = section("")
            sections.append(current)
        current.paragraphs.append(join_soft_breaks(text[para["start"] : para["end"]]))
    return Paper(pid, title, year, sections, date=date, venue=venue, source=str(path), line=line)


def _is_heading(block: str) -> bool:
    """A short single-line block without closing punctuation reads as a title or heading."""
    return (
        "\n" not in block
        and len(block) <= 120
        and len(block.split()) <= 15
        and not _ENDS_SENTENCE.search(block)
    )


def _plain_sections(text: str, guess_title: bool) -> tuple[str | None, list[Section]]:
    """Title and sections of plain text whose paragraphs are separated by blank lines."""
    blocks = [b.strip() for b in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")) if b.strip()]
    title = None
    if guess_title and len(blocks) > 1 and _is_heading(blocks[0]):
        title = clean_str(blocks.pop(0))
    sections: list[Section] = [section("")]
    for block in blocks:
        if _is_heading(block):
            sections.append(section(block))
        else:
            sections[-1].paragraphs.append(join_soft_breaks(block))
    return title, sections
