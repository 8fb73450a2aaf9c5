"""Typed records that flow between Ratio's stages.

Each stage reads and writes one of these shapes; Parquet columns carry the
same field names (see ``ratio.schemas``), so a record round-trips losslessly.
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


@dataclass(slots=True)
class Sentence:
    """One cleaned sentence; consecutive pairs exist only inside a paragraph."""

    paper_id: str
    section: str
    section_category: str
    paragraph_idx: int
    sentence_idx: int
    text: str  # original (cleaned) text, what people read
    match: str  # lowercased, normalized form used for matching and dedup
    is_appendix: bool = False
    math_after: bool = False  # last sentence of a paragraph that led into removed display math


@dataclass(slots=True)
class Pair:
    """A mined (query, marker, gold) tuple, or a distractor candidate (no query)."""

    relation: str  # one of RELATIONS, or a DISTRACTORS category
    marker: str
    query: str | None
    gold: str
    paper_id: str
    year: int | None
    date: str | None
    section_category: str
    paragraph_idx: int
    sentence_idx: int  # index of the gold sentence


@dataclass(slots=True)
class Candidate:
    """A sentence in a split's shared candidate pool."""

    id: str
    text: str
    paper_id: str
    year: int | None
    section_category: str
    origin: str  # the relation or distractor category that introduced it
    marker: str


@dataclass(slots=True)
class Query:
    id: str
    text: str
    relation: str
    marker: str
    paper_id: str
    year: int | None
    gold_id: str


@dataclass(slots=True)
class Judgment:
    """One LLM verdict on a (query, candidate) pair under one prompt."""

    query_id: str
    candidate_id: str
    prompt_id: str
    accepted: bool | None  # None when the response stayed invalid after retries
    raw: str = ""
    model: str = ""
