"""Reader for a folder (or a single file) of ``.txt`` / ``.md`` papers, one paper per file.

The paper id is the file's path relative to the folder, without its suffix
(``2023/paper-1``), so ids stay unique across sub-folders. ``.txt`` files are
split into paragraphs on blank lines under one untitled section; ``.md`` files
go through ``ratio.text.markdown.parse_markdown`` for their heading structure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ratio.io import InputError
from ratio.readers._common import decode_utf8, finish_paper, split_blocks
from ratio.readers.base import DropReport, register_reader
from ratio.records import Paper, Section

SUFFIXES: tuple[str, ...] = (".txt", ".md")


@register_reader("plaintext", suffixes=SUFFIXES, folder=True)
def read_plaintext(path: Path, report: DropReport) -> Iterator[Paper]:
    """A folder of .txt/.md files (or one such file); one paper per file."""
    if not path.exists():
        raise InputError(path, None, "no such file or directory", "missing_file")
    if path.is_dir():
        files = sorted(
            p
            for p in path.rglob("*")
            if p.name.endswith(SUFFIXES)
            and p.is_file()
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        root = path
    else:
        files, root = [path], path.parent
    for file in files:
        pid = file.relative_to(root).with_suffix("").as_posix()
        paper = _read_file(file, pid, report)
        if paper is not None:
            paper = finish_paper(paper, report)
        if paper is not None:
            yield paper


def _read_file(file: Path, pid: str, report: DropReport) -> Paper | None:
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        report.skip(
            InputError(file, None, "file vanished while reading the folder", "missing_file")
        )
        return None
    except OSError as e:
        report.skip(InputError(file, None, f"cannot read: {e.strerror or e}", "unreadable_file"))
        return None
    text = decode_utf8(file, data, report)
    if text is None:
        return None
    if file.suffix == ".md":
        from ratio.text.markdown import parse_markdown  # lazy: the text pipeline is heavier

        sections = list(parse_markdown(text, extractor="markdown"))
        markup = "markdown"
    else:
        blocks = split_blocks(text)
        sections = [Section(heading="", paragraphs=blocks)] if blocks else []
        markup = "plain"
    return Paper(
        id=pid, title=None, year=None, sections=sections, source=str(file), line=0, markup=markup
    )
