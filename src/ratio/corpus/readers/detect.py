"""``--format auto``: which reader reads which input, from file names and the first record.

Text (``.txt``, ``.md``) and PDF files are known by their extension; JSON files by the keys of
their first record:

===============  =============================================================
format           first record
===============  =============================================================
ratio-jsonl      ``text`` (a string) with ``extractor`` or ``id``
s2orc-v2         ``content`` / ``body`` object (S2ORC current), or peS2o's
                 ``text`` with ``added`` / ``created`` / ``source``
unarxive         ``body_text`` paragraphs with ``content_type`` / ``sec_number``,
                 or unarXive's ``_source_hash`` / ``discipline``
s2orc            ``body_text`` (2020 pdf_parses, doc2json) or ``grobid_parse`` /
                 ``pdf_parse`` / ``latex_parse`` (2019 release)
===============  =============================================================

A folder may mix kinds: each is read by its own reader (text and PDF files of a folder are
one shard per kind, JSON files one shard each). Other files (a metadata CSV, a LICENSE, the
``--metadata`` file itself) are listed as ignored. A JSON file in a folder that fits none of
the shapes (ground truth or annotations kept beside the papers, ``paper.truth.json``) is left
out and reported by name with its keys, like any other bad input: ingest goes on with the rest,
``--strict`` stops there. A JSON file named on its own that fits none, or a folder where
nothing fits, is an error naming the file and the formats to pick from with ``--format``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratio.core.io import InputError, RatioError, iter_lines
from ratio.corpus.readers._common import dict_field, is_paper_file
from ratio.corpus.readers.base import available_formats, expand_input, visible_files

TEXT_SUFFIXES = (".txt", ".md")
PDF_SUFFIXES = (".pdf",)
JSON_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".json.gz", ".json.zst")
_WHOLE_JSON_MAX = 64 << 20  # a pretty-printed .json paper is parsed whole up to this size


@dataclass
class Detection:
    """What ``auto`` decided: ``shards`` are (path, format) pairs in input order."""

    shards: list[tuple[str, str]] = field(default_factory=list)
    files: Counter = field(default_factory=Counter)  # format -> files it will read
    ignored: list[str] = field(default_factory=list)
    # JSON files in a folder that no reader takes, each with why (for the ingest report)
    unknown: list[InputError] = field(default_factory=list)

    def describe(self) -> str:
        parts = [f"{fmt} ({n} file{'s' * (n != 1)})" for fmt, n in sorted(self.files.items())]
        line = "detected: " + ", ".join(parts)
        if self.ignored:
            shown = ", ".join(self.ignored[:5]) + (" ..." if len(self.ignored) > 5 else "")
            line += f"; ignored {len(self.ignored)} other file(s): {shown}"
        if self.unknown:
            names = [Path(e.source).name for e in self.unknown]
            shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
            line += f"; left out {len(names)} JSON file(s) of no known format: {shown}"
        return line


def _format_help() -> str:
    return (
        f"formats: {', '.join(available_formats())}; pick one with --format "
        "(or [corpus] format in the config); `ratio formats` describes them"
    )


def _kind(path: Path) -> str | None:
    """'plaintext', 'pdf', 'json' or None (not a paper file) from the file name."""
    name = path.name.lower()
    if name.endswith(TEXT_SUFFIXES):
        return "plaintext" if is_paper_file(path, TEXT_SUFFIXES) else None
    if name.endswith(PDF_SUFFIXES):
        return "pdf"
    if name.endswith(JSON_SUFFIXES):
        return "json"
    return None


def first_record(path: Path) -> dict[str, Any] | None:
    """The first JSON object of a JSON Lines file, or a whole ``.json`` document's first paper."""
    if path.name.endswith(".json") and path.stat().st_size <= _WHOLE_JSON_MAX:
        try:
            doc = json.loads(path.read_text(encoding="utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            doc = None  # JSON Lines under a .json name (peS2o), or broken: read the first line
        if isinstance(doc, list):
            doc = doc[0] if doc else None
        if isinstance(doc, dict):
            return doc
    for _, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            return None
        return rec if isinstance(rec, dict) else None
    return None


def json_format(rec: dict[str, Any]) -> str | None:
    """The reader for a record of this shape, or None when no rule fits (see the table above)."""
    keys = set(rec)
    if isinstance(rec.get("content"), dict) or isinstance(rec.get("body"), dict):
        return "s2orc-v2"
    parses = {"grobid_parse", "pdf_parse", "pdf_parses", "latex_parse"}
    if "body_text" in keys or keys & parses:
        body = rec.get("body_text")
        first = body[0] if isinstance(body, list) and body and isinstance(body[0], dict) else {}
        meta = dict_field(rec, "metadata")
        if (
            keys & {"_source_hash", "_source_name", "discipline"}
            or {"content_type", "sec_number"} & set(first)
            or "versions" in meta
        ):
            return "unarxive"
        return "s2orc"
    if isinstance(rec.get("text"), str):
        if "extractor" in keys:
            return "ratio-jsonl"
        if keys & {"added", "created", "source"} and not keys & {"year", "venue", "title"}:
            return "pes2o" if "pes2o" in available_formats() else "s2orc-v2"
        if "id" in keys:
            return "ratio-jsonl"
    return None


def detect_inputs(inputs: list[str], exclude: tuple[str | Path, ...] = ()) -> Detection:
    """Decide a reader for every paper file under ``inputs`` (files, folders, globs).

    ``exclude``: files that are not papers whatever their name (the ``--metadata`` file).
    """
    det = Detection()
    skip = {Path(e).resolve() for e in exclude}
    for item in inputs:
        for path in expand_input(str(item)):
            files = visible_files(path) if path.is_dir() else [path]
            folder_kinds: Counter = Counter()
            for f in files:
                kind = _kind(f)
                if kind is None or f.resolve() in skip:
                    det.ignored.append(str(f.relative_to(path)) if path.is_dir() else str(f))
                elif kind == "json":
                    fmt = _json_file_format(f)
                    if isinstance(fmt, InputError):
                        if not path.is_dir():
                            raise RatioError(f"{fmt}; {_format_help()}")
                        det.unknown.append(fmt)
                        continue
                    det.shards.append((str(f), fmt))
                    det.files[fmt] += 1
                else:
                    folder_kinds[kind] += 1
            for kind, n in sorted(folder_kinds.items()):
                if kind not in available_formats():
                    raise RatioError(
                        f"{path}: {n} .{kind} file(s) but no '{kind}' reader is available in this "
                        f"installation; {_format_help()}"
                    )
                det.shards.append((str(path), kind))
                det.files[kind] += n
    if not det.shards and det.unknown:
        raise RatioError(f"{det.unknown[0]}; {_format_help()}")
    if not det.shards:
        looked = ", ".join((*TEXT_SUFFIXES, *PDF_SUFFIXES, *JSON_SUFFIXES))
        ignored = f" (found only: {', '.join(det.ignored[:5])})" if det.ignored else ""
        raise RatioError(
            f"no paper files in {', '.join(map(str, inputs))}: looked for {looked}{ignored}; "
            + _format_help()
        )
    return det


def _json_file_format(path: Path) -> str | InputError:
    """The reader of a JSON file, or the ``unknown_format`` error saying why none takes it."""
    try:
        rec = first_record(path)
    except InputError as e:
        return InputError(path, e.line, f"{e.reason}; cannot tell its format", "unknown_format")
    fmt = json_format(rec) if rec is not None else None
    if fmt is None:
        keys = ", ".join(sorted(rec)[:12]) if rec else "no JSON object"
        reason = f"cannot tell the format from its first record (keys: {keys})"
        return InputError(path, None, reason, "unknown_format")
    return fmt
