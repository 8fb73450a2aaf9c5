"""Reader for a folder (or a single file) of ``.txt`` / ``.md`` papers, one paper per file.

The paper id is the file's path relative to the folder, without its suffix
(``2023/paper-1``), so ids stay unique across sub-folders. ``.txt`` files go through
``ratio.corpus.text.plain.parse_plaintext`` (headings, page headers, line-break hyphens, the
reference cut), ``.md`` files through ``ratio.corpus.text.markdown.parse_markdown``. What either
removes is counted in the drop report by reason, so nothing leaves without a trace.
Year, date, venue and title come from a metadata sidecar (``ratio ingest --metadata``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ratio.core.records import Paper
from ratio.corpus.readers._common import decode_utf8, folder_papers
from ratio.corpus.readers.base import DropReport, register_reader
from ratio.corpus.text.markdown import parse_markdown
from ratio.corpus.text.plain import parse_plaintext

SUFFIXES: tuple[str, ...] = (".txt", ".md")
# Counters of text that was repaired, not removed: not drop reasons.
REPAIRS = frozenset({"hyphen_joined", "hyphen_kept", "latex_residue"})


@register_reader("plaintext", suffixes=SUFFIXES, folder=True)
def read_plaintext(path: Path, report: DropReport) -> Iterator[Paper]:
    """A folder of .txt/.md files (or one such file); one paper per file."""
    return folder_papers(path, SUFFIXES, _read_file, report)


def _read_file(file: Path, pid: str, report: DropReport) -> Paper | None:
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        report.reject(file, None, "file vanished while reading the folder", "missing_file")
        return None
    except OSError as e:
        report.reject(file, None, f"cannot read: {e.strerror or e}", "unreadable_file")
        return None
    text = decode_utf8(file, data, report)
    if text is None:
        return None
    drops: Counter = Counter()
    if file.suffix == ".md":
        sections = parse_markdown(text, extractor="markdown", drops=drops)
        markup = "markdown"
    else:
        sections = parse_plaintext(text, drops)
        markup = "plain"
    for reason, n in drops.items():
        if reason not in REPAIRS:
            report.count(reason, n)
    return Paper(pid, None, None, sections, source=str(file), markup=markup)
