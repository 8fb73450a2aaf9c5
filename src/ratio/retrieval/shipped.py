"""A shipped move model: a versioned sentence-transformers folder under ``models/`` that carries
its own record (``ratio-model.json``: per-move instructions, validation scores, training record
and a sha256 manifest of every file) and a model card (``README.md``).

The folder travels with the repository, so the manifest is what proves that the weights a user
serves are the ones the card's numbers were measured with: a missing, truncated or altered file
is an error naming the file and the fix, never a silent fallback to another model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratio.core.io import RatioError
from ratio.core.records import RELATIONS
from ratio.core.storage import sha256

RECORD = "ratio-model.json"  # the record beside the weights
CARD = "README.md"  # the model card
FORMAT = 1  # bump when the record's fields change meaning
NAME_PATTERN = re.compile(r"^(?P<stem>ratio-moves-[a-z0-9-]+?)-v(?P<version>\d+)$")
# files a sentence-transformers folder needs to load as a bi-encoder
REQUIRED = ("modules.json", "config_sentence_transformers.json")

_verified: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


class ShippedModelError(RatioError):
    """A shipped model folder that is incomplete, altered or not a model at all."""


@dataclass
class ShippedModel:
    """What serving needs from a shipped folder; ``record`` keeps the rest for ``/info``."""

    path: Path
    name: str
    version: int
    base_model: str
    instructions: dict[str, str]  # move -> query instruction (the document side gets none)
    doc_prefix: str
    content_hash: str
    # validation MRR@10 per move on ONE pool for all three: the model, its base and BM25
    validation: dict[str, dict[str, float]] = field(default_factory=dict)
    validation_pool: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def card(self) -> Path:
        return self.path / CARD


def manifest(folder: Path) -> dict[str, dict[str, Any]]:
    """``{relative path: {bytes, sha256}}`` of every file but the record itself."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != RECORD)
    return {
        p.relative_to(folder).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256(p)}
        for p in files
    }


def content_hash(files: dict[str, dict[str, Any]]) -> str:
    """One digest for the whole folder: sha256 over the manifest's sorted lines."""
    lines = "".join(f"{name} {f['bytes']} {f['sha256']}\n" for name, f in sorted(files.items()))
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def is_shipped(folder: Path) -> bool:
    return (folder / RECORD).is_file()


def verify(folder: Path) -> str:
    """Check every file the record lists (present, same size, same sha256) and that the folder
    is a sentence-transformers model; returns the content hash. Cached per process while no
    file's size or mtime changes, so repeated loads cost one ``stat`` per file."""
    folder = Path(folder)
    record = read_record(folder)
    files = record.get("files")
    if not isinstance(files, dict) or not files:
        raise ShippedModelError(f"{folder / RECORD}: field 'files' (the manifest) is missing")
    stats = []
    for name in sorted(files):
        p = folder / name
        try:
            st = p.stat()
        except OSError:
            raise ShippedModelError(
                f"{p}: missing (listed in {folder / RECORD}). {_fix(folder)}"
            ) from None
        stats.append((name, st.st_size, st.st_mtime_ns))
    key = (str(folder.resolve()), tuple(stats))
    if key in _verified:
        return _verified[key]
    for name, size, _ in stats:
        want = files[name]
        p = folder / name
        if size != want.get("bytes"):
            raise ShippedModelError(
                f"{p}: {size:,} bytes, the manifest in {folder / RECORD} says "
                f"{want.get('bytes'):,} (truncated or replaced; a Git LFS pointer is a few "
                f"hundred bytes). {_fix(folder)}"
            )
        if sha256(p) != want.get("sha256"):
            raise ShippedModelError(
                f"{p}: content differs from its sha256 in {folder / RECORD} (altered). "
                f"{_fix(folder)}"
            )
    missing = [f for f in REQUIRED if f not in files]
    if missing:
        raise ShippedModelError(
            f"{folder}: not a sentence-transformers model (no {', '.join(missing)}); "
            f"export one with `ratio model export`"
        )
    digest = content_hash(files)
    if record.get("content_hash") not in (None, digest):
        raise ShippedModelError(
            f"{folder / RECORD}: content_hash {record['content_hash']} does not match its own "
            f"manifest ({digest}); the record was edited. {_fix(folder)}"
        )
    _verified[key] = digest
    return digest


def _fix(folder: Path) -> str:
    return (
        f"Restore the folder (`git checkout -- {folder}` in a checkout) or write it again "
        f"with `ratio model export`."
    )


def read_json(path: Path, missing: str, fix: str = "") -> dict[str, Any]:
    """A JSON object from ``path``; errors name the file (``missing`` says why it is needed)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShippedModelError(f"{path}: missing; {missing}") from None
    except ValueError as e:
        raise ShippedModelError(f"{path}: not valid JSON ({e}). {fix}".rstrip()) from None
    if not isinstance(data, dict):
        raise ShippedModelError(f"{path}: expected a JSON object")
    return data


def read_record(folder: Path) -> dict[str, Any]:
    path = Path(folder) / RECORD
    missing = f"{folder} is not a shipped model folder (write one with `ratio model export`)"
    record = read_json(path, missing, _fix(Path(folder)))
    if record.get("format") != FORMAT:
        raise ShippedModelError(
            f"{path}: field 'format' is {record.get('format')!r}; this Ratio reads format {FORMAT}"
        )
    return record


def load_shipped(folder: Path) -> ShippedModel:
    """Verify a shipped folder and read what serving needs; errors name the file and field."""
    folder = Path(folder)
    digest = verify(folder)
    record = read_record(folder)
    path = folder / RECORD

    def need(key: str, kind: type) -> Any:
        value = record.get(key)
        if not isinstance(value, kind):
            raise ShippedModelError(f"{path}: field {key!r} is missing or not a {kind.__name__}")
        return value

    instructions = need("query_instructions", dict)
    missing = [m for m in RELATIONS if not isinstance(instructions.get(m), str)]
    if missing:
        raise ShippedModelError(
            f"{path}: field 'query_instructions' has no instruction for {', '.join(missing)}"
        )
    val = need("validation", dict)
    scores = val.get("mrr@10") if isinstance(val.get("mrr@10"), dict) else {}
    return ShippedModel(
        path=folder,
        name=need("name", str),
        version=int(need("version", int)),
        base_model=need("base_model", str),
        instructions={m: instructions[m] for m in RELATIONS},
        doc_prefix=str(record.get("doc_prefix", "")),
        content_hash=digest,
        validation={k: v for k, v in scores.items() if isinstance(v, dict)},
        validation_pool=val.get("pool") if isinstance(val.get("pool"), dict) else {},
        record=record,
    )


def latest(dirs: list[Path]) -> Path | None:
    """The highest version of any ``ratio-moves-*-v<N>`` folder in ``dirs`` (earlier dirs win
    a tie), or None."""
    found: list[tuple[int, int, Path]] = []
    for rank, d in enumerate(dirs):
        if not d.is_dir():
            continue
        for p in d.iterdir():
            m = NAME_PATTERN.match(p.name)
            if m and p.is_dir() and is_shipped(p):
                found.append((int(m["version"]), -rank, p))
    return max(found)[2] if found else None


def test_tables(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record's test tables, headline (full pool) first; a record of format 1 held one."""
    test = record.get("test") or []
    return [test] if isinstance(test, dict) else list(test)


def card_summary(shipped: ShippedModel) -> str:
    """One line quoting the card's headline test table: M@10 per move, this model and BM25."""
    tables = test_tables(shipped.record)
    if not tables:
        return f"{shipped.name}: no test table in its card yet"
    t = tables[0]
    rows = {(r["system"], r["relation"]): r.get("mrr@10") for r in t["rows"]}
    moves = [m for m in RELATIONS if (shipped.name, m) in rows]

    def cells(system: str) -> str:
        return " / ".join(
            "–" if rows.get((system, m)) is None else f"{rows[(system, m)] * 100:.1f}"
            for m in moves
        )

    return (
        f"{shipped.name}'s card ({os.path.relpath(shipped.card)}), test pool {t['pool']}: M@10 "
        f"{' / '.join(m.capitalize() for m in moves)} {cells(shipped.name)} "
        f"(BM25-unigram {cells('BM25')})"
    )
