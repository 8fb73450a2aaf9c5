"""The reader registry, input discovery, and the drop report shared by readers."""

from __future__ import annotations

import glob
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ratio.core.io import InputError, RatioError
from ratio.core.records import Paper

# A reader turns one input file (or folder, for plaintext) into papers. It raises
# InputError for problems it cannot skip past (unreadable or truncated file) and
# reports skippable ones (one bad line) through ``report.skip`` so streaming goes on.
ReaderFn = Callable[[Path, "DropReport"], Iterator[Paper]]


@dataclass
class Reader:
    name: str
    fn: ReaderFn
    suffixes: tuple[str, ...]  # file name endings this format reads
    folder: bool = False  # reads a whole folder as one corpus (plaintext)
    doc: str = ""


_REGISTRY: dict[str, Reader] = {}


def register_reader(
    name: str,
    suffixes: tuple[str, ...] = (".jsonl", ".jsonl.gz", ".jsonl.zst"),
    folder: bool = False,
):
    def deco(fn: ReaderFn) -> ReaderFn:
        doc = (fn.__doc__ or "").strip().partition("\n")[0]
        _REGISTRY[name] = Reader(name, fn, suffixes, folder, doc)
        return fn

    return deco


def available_formats() -> list[str]:
    return sorted(_REGISTRY)


def get_reader(name: str) -> Reader:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise RatioError(
            f"unknown format {name!r}; known formats: {', '.join(available_formats())}"
        ) from None


@dataclass
class DropReport:
    """Counts of skipped records by reason, plus the first messages for the report.

    With ``strict`` any skip raises instead, so a run stops at the first bad record.
    """

    strict: bool = False
    counts: Counter = field(default_factory=Counter)
    messages: list[str] = field(default_factory=list)
    max_messages: int = 200
    log: Callable[[str], None] | None = None

    def skip(self, error: InputError) -> None:
        if self.strict:
            raise error
        self.counts[error.kind] += 1
        msg = str(error)
        if len(self.messages) < self.max_messages:
            self.messages.append(msg)
        if self.log is not None:
            self.log(msg)

    def reject(self, source: str | Path, line: int | None, reason: str, kind: str) -> None:
        self.skip(InputError(source, line, reason, kind))

    def count(self, kind: str, n: int = 1) -> None:
        """Count an item dropped on purpose (a filter, not an error)."""
        self.counts[kind] += n


def list_inputs(inputs: Iterable[str | Path], fmt: str) -> list[Path]:
    """Expand files, folders and globs into a sorted list of inputs of ``fmt``.

    A missing path is an error right away: a typo should not build an empty benchmark.
    """
    reader = get_reader(fmt)
    found: list[Path] = []
    for item in inputs:
        for p in expand_input(str(item)):
            if not p.exists():  # a glob can match a broken link
                raise InputError(p, None, "no such file or directory", "missing_file")
            if p.is_dir() and not reader.folder:
                files = (
                    q for q in p.rglob("*") if q.is_file() and q.name.endswith(reader.suffixes)
                )
                found.extend(sorted(files))
            else:
                found.append(p)
    return found


def expand_input(item: str) -> list[Path]:
    """The paths a file name, folder or glob names; none is an ``InputError``."""
    if any(c in item for c in "*?["):
        matches = [Path(m) for m in sorted(glob.glob(item))]
        if not matches:
            raise InputError(item, None, "no file matches this pattern", "missing_file")
        return matches
    p = Path(item)
    if not p.exists():
        raise InputError(p, None, "no such file or directory", "missing_file")
    return [p]


def visible_files(folder: Path) -> list[Path]:
    """The files under ``folder``, sorted, outside hidden folders."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def iter_papers(
    inputs: Iterable[str | Path], fmt: str, report: DropReport | None = None
) -> Iterator[Paper]:
    """Stream papers from every input; unreadable files are reported, not fatal (unless strict)."""
    reader = get_reader(fmt)
    report = report if report is not None else DropReport()
    for path in list_inputs(inputs, fmt):
        try:
            yield from reader.fn(path, report)
        except InputError as e:
            report.skip(e)
