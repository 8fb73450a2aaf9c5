"""Helpers shared by the JSON-based readers: record streaming, ids, years, soft breaks.

Every reader reports bad input the same way (same ``kind`` keys, messages that
name the file and line or record id), so the drop counts of different formats
add up in one ingest report.

Tested by tests/corpus/readers/test_s2orc.py, tests/corpus/readers/test_unarxive.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ratio.core.io import InputError, iter_lines, line_error
from ratio.core.records import Paper, Section
from ratio.corpus.readers.base import DropReport, visible_files

JSONL_SUFFIXES: tuple[str, ...] = (".jsonl", ".jsonl.gz", ".jsonl.zst")

_SOFT_BREAK = re.compile(r"[ \t]*\r?\n[ \t]*")
_APPENDIX_NUMBER = re.compile(r"^[A-Z](?:\.\d+)*\.?$")
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|2[01]\d\d)(?!\d)")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?")


def iter_record_lines(path: Path, report: DropReport) -> Iterator[tuple[int, str]]:
    """Non-blank lines of a JSON Lines file; undecodable lines go to ``report``."""
    for lineno, line in iter_lines(path):
        err = line_error(line)
        if err is not None:
            report.skip(err)
        elif line.strip():
            yield lineno, line


def iter_records(path: Path, report: DropReport) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, record)`` for each JSON object in a JSONL (or single ``.json``) file.

    Skippable problems (invalid UTF-8, malformed JSON, a non-object) go to
    ``report``; a missing, unreadable or truncated file raises ``InputError``.
    A plain ``.json`` file holds one paper (or a list of them); if it does not
    parse as one document it is read as JSON Lines.
    """
    if path.name.endswith(".json"):
        whole = _load_json_document(path, report)
        if whole is not None:
            yield from whole
            return
    for lineno, line in iter_record_lines(path, report):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            msg = f"malformed JSON ({e.msg} at column {e.colno})"
            report.reject(path, lineno, msg, "malformed_json")
            continue
        if isinstance(obj, dict):
            yield lineno, obj
        else:
            msg = f"expected a JSON object, got {type(obj).__name__}"
            report.reject(path, lineno, msg, "not_an_object")


def decode_utf8(path: Path, data: bytes, report: DropReport) -> str | None:
    """A whole file's text, or ``None`` after reporting where its invalid UTF-8 is."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1)  # byte in the line, like iter_lines
        report.reject(path, line, f"invalid UTF-8 at byte {col}", "invalid_utf8")
        return None


def _load_json_document(path: Path, report: DropReport) -> list[tuple[int, dict[str, Any]]] | None:
    """Parse a whole ``.json`` file; ``None`` means "looks like JSON Lines, stream it"."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise InputError(path, None, "no such file", "missing_file") from e
    except OSError as e:
        raise InputError(path, None, f"cannot read: {e.strerror or e}", "unreadable_file") from e
    text = decode_utf8(path, data, report)
    if text is None:
        return []
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":  # several documents: one per line
            return None
        msg = f"malformed JSON ({e.msg} at column {e.colno})"
        report.reject(path, e.lineno, msg, "malformed_json")
        return []
    items = obj if isinstance(obj, list) else [obj]
    out: list[tuple[int, dict[str, Any]]] = []
    for i, item in enumerate(items, start=1):
        if isinstance(item, dict):
            out.append((i, item))
        else:
            where = f"item {i}" if isinstance(obj, list) else "document"
            msg = f"{where}: expected a JSON object, got {type(item).__name__}"
            report.reject(path, None, msg, "not_an_object")
    return out


def record_id(
    rec: dict[str, Any], keys: tuple[str, ...], path: Path, line: int, report: DropReport
) -> str | None:
    """The first non-empty id among ``keys`` (dotted paths allowed), or report ``missing_id``."""
    for key in keys:
        value: Any = rec
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, str)) and str(value).strip():
            return str(value).strip()
    report.reject(path, line, f"record has no id (looked for {', '.join(keys)})", "missing_id")
    return None


def finish_paper(paper: Paper, report: DropReport) -> Paper | None:
    """Drop empty paragraphs and sections; report a paper with no text left as ``empty_paper``."""
    sections = []
    for sec in paper.sections:
        paras = [p for p in sec.paragraphs if p and p.strip()]
        if paras:
            sec.paragraphs = paras
            sections.append(sec)
    if not sections:
        msg = f"paper {paper.id!r} has no text"
        report.reject(paper.source, paper.line or None, msg, "empty_paper")
        return None
    paper.sections = sections
    return paper


# Files that travel with a corpus but are not papers (a folder's README.md, LICENSE.txt).
NOT_PAPERS = ("readme", "license", "licence", "changelog", "notice", "copying")


def is_paper_file(path: Path, suffixes: tuple[str, ...]) -> bool:
    """A file a one-paper-per-file reader reads: the right ending, not a README or LICENSE."""
    name = path.name.lower()
    return name.endswith(suffixes) and not name.startswith(NOT_PAPERS)


def folder_papers(
    path: Path,
    suffixes: tuple[str, ...],
    read_file: Callable[[Path, str, DropReport], Paper | None],
    report: DropReport,
) -> Iterator[Paper]:
    """The file loop of the one-paper-per-file readers (plaintext, pdf).

    ``path`` is a folder (every file ending in ``suffixes``, any case, outside hidden
    folders, sorted) or one file. The paper id is the file's path under the folder without
    its suffix (``2023/paper-1``), so ids stay unique across sub-folders. ``read_file``
    reports its own problems and returns ``None`` for a file it could not read.
    """
    if not path.exists():
        raise InputError(path, None, "no such file or directory", "missing_file")
    if path.is_dir():
        files, root = [p for p in visible_files(path) if is_paper_file(p, suffixes)], path
    else:
        files, root = [path], path.parent
    for file in files:
        pid = file.relative_to(root).with_suffix("").as_posix()
        paper = read_file(file, pid, report)
        if paper is not None and (paper := finish_paper(paper, report)) is not None:
            yield paper


def papers_from_records(
    path: Path,
    report: DropReport,
    id_keys: tuple[str, ...],
    build: Callable[[dict[str, Any], str, Path, int], Paper],
) -> Iterator[Paper]:
    """The record loop of the JSON readers: id each record, ``build`` it, drop empty papers."""
    for line, rec in iter_records(path, report):
        pid = record_id(rec, id_keys, path, line, report)
        if pid is None:
            continue
        paper = finish_paper(build(rec, pid, path, line), report)
        if paper is not None:
            yield paper


def join_soft_breaks(text: str) -> str:
    """Join the line breaks inside one paragraph (PDF/LaTeX line wrapping) with a space."""
    return _SOFT_BREAK.sub(" ", text).strip()


def is_appendix_number(number: Any) -> bool:
    """Section numbers like ``A``, ``B.2`` mark appendices in LaTeX and GROBID output."""
    return isinstance(number, str) and bool(_APPENDIX_NUMBER.match(number.strip()))


def to_year(value: Any) -> int | None:
    """A plausible publication year from an int, ``"2001"``, an ISO date or an RFC 2822 date."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value if 1500 <= value <= 2199 else None
    if isinstance(value, float) and value.is_integer():
        return to_year(int(value))
    if isinstance(value, str):
        m = _YEAR.search(value)
        return int(m.group(1)) if m else None
    return None


def to_iso_date(value: Any) -> str | None:
    """``YYYY-MM-DD`` (or ``YYYY-MM``) from an ISO-like string such as ``2022-12-23T00:00:00Z``."""
    if not isinstance(value, str):
        return None
    m = _ISO_DATE.match(value.strip())
    return "-".join(g for g in m.groups() if g) if m else None


def clean_str(value: Any) -> str | None:
    """A stripped, whitespace-joined string, or ``None`` for empty/non-string values."""
    return (" ".join(value.split()) or None) if isinstance(value, str) else None


def dict_field(rec: dict[str, Any], key: str) -> dict[str, Any]:
    """``rec[key]`` if it is a JSON object, else ``{}`` (dumps leave fields null or mistyped)."""
    value = rec.get(key)
    return value if isinstance(value, dict) else {}


def str_field(rec: dict[str, Any], key: str) -> str:
    value = rec.get(key)
    return value if isinstance(value, str) else ""


def section(
    heading: Any, paragraphs: list[str] | None = None, is_appendix: bool = False
) -> Section:
    return Section(
        heading=clean_str(heading) or "", paragraphs=paragraphs or [], is_appendix=is_appendix
    )


def body_sections(body: Any, number_key: str) -> list[Section]:
    """Sections of a ``body_text`` list: consecutive paragraphs under one heading and number."""
    sections: list[Section] = []
    key: tuple[Any, Any] | None = None
    for para in body if isinstance(body, list) else []:
        if not isinstance(para, dict) or not isinstance(para.get("text"), str):
            continue
        heading, number = str_field(para, "section"), para.get(number_key)
        if key != (heading, number):
            sections.append(section(heading, is_appendix=is_appendix_number(number)))
            key = (heading, number)
        sections[-1].paragraphs.append(join_soft_breaks(para["text"]))
    return sections
