"""A metadata sidecar: title, year or date, venue and a link per paper, for any input format.

Plain-text and PDF papers carry no metadata, and a corpus without dates cannot be split in
time. ``ratio ingest --metadata FILE`` (or ``[corpus] metadata``) names a CSV file (header
row) or a JSON Lines file with one row per paper::

    id,title,year,date,venue
    C08-1021,KnowNet: Building a Large Net of Knowledge from the Web,2008,,COLING

``id`` (or ``paper_id``) is required; it matches a paper's id (a record id, or a text
file's path relative to its folder without the suffix) or that id's last path part (the
file stem). ``year`` is a four-digit year; ``date`` an ISO date (``2008``, ``2008-08``,
``2008-08-18``) whose year fills an empty ``year``. ``url`` (http or https) and ``doi``
(``10.xxxx/...``, also as ``doi:...`` or a ``https://doi.org/...`` link) say where a reader
opens the paper: the service links its hits there (``ratio.serve.links``). Other columns are
ignored. A value in the sidecar replaces the record's own; an empty cell leaves it.

Bad rows are reported with file, line and reason (kind ``metadata_*``) and the rest is used:
a duplicate id keeps its first row, an unparsable year, date, url or doi drops that value
only. Under
``strict`` the first bad row raises.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq

from ratio.core.io import RatioError, write_parquet_atomic
from ratio.core.records import Paper
from ratio.core.schemas import METADATA
from ratio.corpus.readers.base import DropReport

FIELDS: tuple[str, ...] = ("title", "year", "date", "venue")
# where to read a paper: not a field of the paper's records, so never part of an ingest key
LINKS: tuple[str, ...] = ("url", "doi")
_YEAR = re.compile(r"^\d{4}$")
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
_DOI = re.compile(r"^10\.\d{4,9}/\S+$")
_DOI_PREFIXES = ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/")


@dataclass
class Row:
    id: str
    line: int
    title: str | None = None
    year: int | None = None
    date: str | None = None
    venue: str | None = None
    url: str | None = None
    doi: str | None = None


def load_metadata(path: str | Path, report: DropReport) -> list[Row]:
    """Parse and check a sidecar; bad rows go to ``report`` (which raises when strict)."""
    p = Path(path)
    if not p.is_file():
        raise RatioError(f"{p}: metadata file not found")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise RatioError(f"{p}: metadata file is not UTF-8 ({e.reason} at byte {e.start})") from e
    raws = list(_jsonl_rows(p, text, report) if _is_jsonl(p, text) else _csv_rows(p, text))
    rows: list[Row] = []
    first_line: dict[str, int] = {}
    for line, raw in raws:
        row = _row(p, line, raw, report)
        if row is None:
            continue
        if row.id in first_line:
            msg = f"duplicate id {row.id!r} (first on line {first_line[row.id]}); row ignored"
            report.reject(p, line, msg, "metadata_duplicate_id")
            continue
        first_line[row.id] = line
        rows.append(row)
    if not rows:
        raise RatioError(f"{p}: no usable metadata rows (an 'id' column and one row per paper)")
    return rows


def _is_jsonl(p: Path, text: str) -> bool:
    suffix = p.suffix.lower()
    return suffix in (".jsonl", ".json") or (suffix != ".csv" and text.lstrip()[:1] == "{")


def _csv_rows(p: Path, text: str):
    reader = csv.DictReader(io.StringIO(text))
    names = {f.strip().lower() for f in reader.fieldnames or []}
    if not names & {"id", "paper_id"}:
        raise RatioError(
            f"{p}:1: the header row needs an 'id' column (found: {', '.join(reader.fieldnames or [])})"
        )
    for rec in reader:
        yield reader.line_num, {(k or "").strip().lower(): v for k, v in rec.items()}


def _jsonl_rows(p: Path, text: str, report: DropReport):
    for line, s in enumerate(text.splitlines(), start=1):
        if not s.strip():
            continue
        try:
            rec = json.loads(s)
        except json.JSONDecodeError as e:
            report.reject(p, line, f"malformed JSON ({e.msg})", "metadata_malformed")
            continue
        if isinstance(rec, dict):
            yield line, {str(k).strip().lower(): v for k, v in rec.items()}
        else:
            report.reject(p, line, "expected a JSON object", "metadata_malformed")


def _text(value) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    return " ".join(str(value).split()) or None


def _row(p: Path, line: int, raw: dict, report: DropReport) -> Row | None:
    pid = _text(raw.get("id")) or _text(raw.get("paper_id"))
    if pid is None:
        report.reject(p, line, "row has no id", "metadata_missing_id")
        return None
    row = Row(id=pid, line=line, title=_text(raw.get("title")), venue=_text(raw.get("venue")))
    year = _text(raw.get("year"))
    if year is not None:
        year = year.removesuffix(".0")  # a spreadsheet wrote 2008 as 2008.0
        if _YEAR.match(year) and 1500 <= int(year) <= 2199:
            row.year = int(year)
        else:
            msg = f"id {pid!r}: year {year!r} is not a year; year left empty"
            report.reject(p, line, msg, "metadata_bad_year")
    date = _text(raw.get("date"))
    if date is not None:
        iso = _iso(date)
        if iso is None:
            msg = f"id {pid!r}: date {date!r} is not an ISO date (2008, 2008-08, 2008-08-18)"
            report.reject(p, line, msg + "; date left empty", "metadata_bad_date")
        else:
            if row.year is not None and row.year != int(iso[:4]):
                msg = f"id {pid!r}: year {row.year} disagrees with date {iso}"
                report.reject(p, line, msg + "; the date's year is used", "metadata_bad_year")
            row.date, row.year = iso, int(iso[:4])
    url = _text(raw.get("url"))
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme.lower() in ("http", "https") and parts.netloc and " " not in url:
            row.url = url
        else:  # a page links it: javascript:, file: or a bare word must not become a link
            msg = f"id {pid!r}: url {url!r} is not an http(s) URL; url left empty"
            report.reject(p, line, msg, "metadata_bad_url")
    doi = _text(raw.get("doi"))
    if doi is not None:
        row.doi = normalize_doi(doi)
        if row.doi is None:
            msg = f"id {pid!r}: doi {doi!r} is not a DOI (10.xxxx/...); doi left empty"
            report.reject(p, line, msg, "metadata_bad_doi")
    return row


def normalize_doi(value: str) -> str | None:
    """The bare DOI (``10.18653/v1/N18-3011``) of a DOI as people write it (``doi:...``, a
    doi.org link), or None when it is none: stored bare, so every link is built one way."""
    doi = value.strip()
    if doi.lower().startswith("doi:"):
        doi = doi[4:].strip()
    for prefix in _DOI_PREFIXES:
        if doi.lower().startswith(prefix):
            doi = doi[len(prefix) :]
            break
    return doi if _DOI.match(doi) else None


def _iso(value: str) -> str | None:
    m = _DATE.match(value.strip()[:10] if "T" in value else value.strip())
    if not m:
        return None
    y, mo, d = m.groups()
    try:
        dt.date(int(y), int(mo or 1), int(d or 1))
    except ValueError:
        return None
    return "-".join(g for g in (y, mo, d) if g)


def write_metadata(rows: list[Row], target: str | Path) -> str:
    """Write the checked rows as Parquet (read by every ingest worker); returns its digest.
    The digest covers what ingest copies into the papers (:data:`FIELDS`), not the links: a new
    url changes no sentence, so it re-ingests nothing (the serving pool, which shows the links,
    is rebuilt because it signs this file)."""
    columns = ("id", *FIELDS, *LINKS, "line")
    table = pa.table({c: [getattr(r, c) for r in rows] for c in columns}, schema=METADATA)
    write_parquet_atomic(target, table)
    digest = hashlib.sha256()
    for r in rows:
        digest.update(json.dumps([r.id, r.title, r.year, r.date, r.venue]).encode())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=2)
def _lookup(path: str, mtime_ns: int) -> dict[str, dict]:
    return {r["id"]: r for r in pq.read_table(path).to_pylist()}


def metadata_lookup(path: str | Path) -> dict[str, dict]:
    """``id -> row`` of a written sidecar, loaded once per worker process."""
    p = Path(path)
    return _lookup(str(p), p.stat().st_mtime_ns)


def row_for(paper_id: str, lookup: dict[str, dict]) -> dict | None:
    """The sidecar row of a paper: by its id, else by its last path part (the file stem)."""
    row = lookup.get(paper_id)
    if row is None and "/" in paper_id:
        row = lookup.get(paper_id.rsplit("/", 1)[1])
    return row


def apply_metadata(paper: Paper, lookup: dict[str, dict]) -> bool:
    """Fill the paper's title, year, date and venue from its row; False when it has none."""
    row = row_for(paper.id, lookup)
    if row is None:
        return False
    for name in FIELDS:
        if row[name] is not None:
            setattr(paper, name, row[name])
    return True
