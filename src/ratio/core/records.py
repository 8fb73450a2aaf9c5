"""The paper record every reader yields, and the label vocabularies of the benchmark.

Past ingest, stages exchange Parquet tables rather than Python objects: their
columns are declared once in ``ratio.core.schemas``.

Tested by tests/corpus/readers/test_metadata.py, tests/corpus/text/test_sections.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

RELATIONS: tuple[str, ...] = ("address", "broaden", "specify")
DISTRACTORS: tuple[str, ...] = (
    "explicit_contrast",
    "implicit_similarity",
    "explicit_similarity",
    "common_irrelevant",
)
SECTION_CATEGORIES: tuple[str, ...] = (
    "abstract",
    "introduction",
    "related_work",
    "method",
    "experiments",
    "results",
    "discussion",
    "conclusion",
    "appendix",
    "other",
)


@dataclass(slots=True)
class Section:
    """A run of paragraphs under one heading; raw Markdown until cleaned."""

    heading: str
    paragraphs: list[str] = field(default_factory=list)
    category: str = "other"
    is_appendix: bool = False
    # math_after[i]: a display equation the cleanup removed came right after paragraphs[i];
    # empty when the reader does not know (only the Markdown cleanup records it)
    math_after: list[bool] = field(default_factory=list)


@dataclass(slots=True)
class Paper:
    """One full-text paper as a reader yields it: metadata plus sections."""

    id: str
    title: str | None
    year: int | None
    sections: list[Section]
    date: str | None = None  # ISO date when the source knows it
    venue: str | None = None
    source: str = ""  # file the record came from (for error messages and provenance)
    line: int = 0  # 1-based line (or record) number inside ``source``
    markup: str = "plain"  # "markdown" (Nougat/docling), "latex" (unarXive), "plain"
