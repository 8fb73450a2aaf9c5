"""The marker lexicon: versioned TSV data, loading and validation.

The lexicon is data, not code: ``data/lexicon*.tsv`` files with columns ``marker relation
source notes``. Other producers (an LLM expansion, a reviewed ``discover`` page) plug in as
more rows or another ``lexicon-<name>.tsv``. Its version is a content hash, so every mined pair
can be traced to the exact marker set that produced it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ratio.core.io import RatioError, write_text_atomic
from ratio.core.records import DISTRACTORS, RELATIONS
from ratio.lexicon.spans import normalize_marker
from ratio.lexicon.tiers import CORE, NEEDS_VALIDATION, TIERS_FILE, Tiers, load_tiers

LEXICON_RELATIONS: tuple[str, ...] = RELATIONS + DISTRACTORS
SOURCES: tuple[str, ...] = ("manual", "extendable", "llm", "pattern", "embedding")
COLUMNS: tuple[str, ...] = ("marker", "relation", "source", "notes")
DATA_DIR = Path(__file__).parent / "data"
SHIPPED_GLOB = "lexicon*.tsv"
_VERSION_RE = re.compile(r"^#\s*version\s*[:=]\s*(\S+)", re.IGNORECASE)


class LexiconError(RatioError):
    """A lexicon file is malformed or contradicts itself; the message names file and line."""


@dataclass(frozen=True, slots=True)
class LexiconEntry:
    """One marker of one relation (or distractor category), with where it came from."""

    marker: str  # lowercase match form, no trailing comma
    relation: str
    source: str
    notes: str = ""
    file: str = ""
    line: int = 0


class Lexicon:
    """An immutable set of markers, each under exactly one relation."""

    def __init__(
        self, entries: Iterable[LexiconEntry], semver: str = "0", tiers: Tiers | None = None
    ) -> None:
        kept: list[LexiconEntry] = []
        self._relation: dict[str, str] = {}
        for e in entries:
            prev = self._relation.setdefault(e.marker, e.relation)
            if prev != e.relation:
                raise LexiconError(f"marker {e.marker!r} listed as {prev!r} and {e.relation!r}")
            if len(self._relation) > len(kept):  # first time this marker is seen
                kept.append(e)
        self.entries: tuple[LexiconEntry, ...] = tuple(kept)
        self.semver = semver
        rows = sorted(f"{e.marker}\t{e.relation}\t{e.source}\n" for e in self.entries)
        self.content_hash = hashlib.sha1("".join(rows).encode()).hexdigest()[:12]
        # precision tiers (ratio.lexicon.tiers) do not change what is mined, so they are not
        # part of the version; the split stage keys on needs_validation() instead
        self.tiers = tiers or Tiers({})

    @property
    def version(self) -> str:
        """``<semver>+<content hash>``: the hash changes with any marker/relation/source edit."""
        return f"{self.semver}+{self.content_hash}"

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, marker: str) -> bool:
        return normalize_marker(marker) in self._relation

    def relation_of(self, marker: str) -> str | None:
        """The relation of ``marker`` (any case, trailing comma allowed), or ``None``."""
        return self._relation.get(normalize_marker(marker))

    def by_relation(self) -> dict[str, list[LexiconEntry]]:
        """Entries grouped by relation, every known relation present (possibly empty)."""
        out: dict[str, list[LexiconEntry]] = {r: [] for r in LEXICON_RELATIONS}
        for e in self.entries:
            out[e.relation].append(e)
        return out

    def markers(self, relation: str | None = None) -> list[str]:
        """Markers of one relation (all markers when ``relation`` is None), sorted."""
        if relation is not None and relation not in LEXICON_RELATIONS:
            raise LexiconError(
                f"unknown relation {relation!r}; expected one of {LEXICON_RELATIONS}"
            )
        return sorted(e.marker for e in self.entries if relation is None or e.relation == relation)

    def tier_of(self, marker: str) -> str:
        """``core`` or ``needs_validation``; markers the tiers file does not list are core."""
        key = normalize_marker(marker)
        return self.tiers.tier.get(key, CORE) if key in self._relation else CORE

    def needs_validation(self) -> list[str]:
        """Relation markers of this lexicon in the ``needs_validation`` tier, sorted."""
        return [
            m
            for m in self.tiers.needs_validation()
            if self._relation.get(m) in RELATIONS and self.tier_of(m) == NEEDS_VALIDATION
        ]

    def sizes(self) -> dict[str, int]:
        """Number of markers per relation/category."""
        return {r: len(v) for r, v in self.by_relation().items()}

    def sizes_by_source(self) -> dict[str, dict[str, int]]:
        return {r: dict(Counter(e.source for e in v)) for r, v in self.by_relation().items() if v}


def write_lexicon(
    path: str | os.PathLike, rows: Iterable[tuple[str, str, str, str]], comment: str = ""
) -> None:
    """Write ``(marker, relation, source, notes)`` rows as a lexicon TSV, header first."""
    lines = [comment] if comment else []
    lines += ["\t".join(COLUMNS), *("\t".join(row) for row in rows)]
    write_text_atomic(path, "\n".join(lines) + "\n")


def parse_lexicon_file(path: str | os.PathLike) -> tuple[list[LexiconEntry], str | None]:
    """Parse one TSV file into entries (validated line by line) and its header version."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise LexiconError(f"{p}: cannot read lexicon: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise LexiconError(f"{p}: not UTF-8 ({e})") from e
    entries: list[LexiconEntry] = []
    semver: str | None = None
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        if raw.lstrip().startswith("#"):
            m = _VERSION_RE.match(raw.strip())
            if m and semver is None:
                semver = m.group(1)
            continue
        cols = raw.split("\t")
        if tuple(c.strip().lower() for c in cols) == COLUMNS:
            continue  # header row
        if len(cols) == 3:
            cols.append("")  # notes may be omitted
        if len(cols) != 4:
            raise LexiconError(
                f"{p}:{lineno}: expected 4 tab-separated columns {COLUMNS}, got {len(cols)}"
            )
        marker, relation, source, notes = (c.strip() for c in cols)
        marker = normalize_marker(marker)
        if not marker:
            raise LexiconError(f"{p}:{lineno}: empty marker")
        if relation not in LEXICON_RELATIONS:
            raise LexiconError(
                f"{p}:{lineno}: unknown relation {relation!r}; expected one of {', '.join(LEXICON_RELATIONS)}"
            )
        if source not in SOURCES:
            raise LexiconError(
                f"{p}:{lineno}: unknown source {source!r}; expected one of {', '.join(SOURCES)}"
            )
        entries.append(LexiconEntry(marker, relation, source, notes, str(p), lineno))
    return entries, semver


def lexicon_files(path: str | os.PathLike | None = None) -> list[Path]:
    """The TSV files a lexicon path stands for: a file, or every ``*.tsv`` in a directory."""
    if path is None:  # the main file first so its header version wins and its rows take precedence
        return sorted(DATA_DIR.glob(SHIPPED_GLOB), key=lambda f: (f.name != "lexicon.tsv", f.name))
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.glob("*.tsv") if f.name != TIERS_FILE)
        if not files:
            raise LexiconError(f"{p}: no *.tsv lexicon files in directory")
        return files
    if not p.exists():
        raise LexiconError(f"{p}: lexicon file not found")
    return [p]


def load_lexicon(
    path: str | os.PathLike | None = None, extra: Iterable[str | os.PathLike] = ()
) -> Lexicon:
    """Load and validate a lexicon (``None`` = the shipped one), plus ``extra`` files.

    The same marker under two relations is an error naming both relations and
    their lines; an exact duplicate (same marker and relation) keeps the first row.
    Precision tiers come from ``tiers.tsv`` next to the shipped lexicon or inside a
    lexicon directory (none for a single-file lexicon).
    """
    files = lexicon_files(path) + [Path(x) for x in extra]
    seen: dict[str, LexiconEntry] = {}
    semver: str | None = None
    for f in files:
        entries, file_semver = parse_lexicon_file(f)
        semver = semver or file_semver
        for e in entries:
            prev = seen.get(e.marker)
            if prev is None:
                seen[e.marker] = e
            elif prev.relation != e.relation:
                raise LexiconError(
                    f"{e.file}:{e.line}: marker {e.marker!r} listed under two relations: "
                    f"{prev.relation!r} ({prev.file}:{prev.line}) and {e.relation!r} ({e.file}:{e.line})"
                )
    tiers_dir = DATA_DIR if path is None else Path(path) if Path(path).is_dir() else None
    tiers_path = tiers_dir / TIERS_FILE if tiers_dir is not None else None
    tiers = load_tiers(tiers_path) if tiers_path is not None and tiers_path.exists() else None
    return Lexicon(seen.values(), semver or "0", tiers)
