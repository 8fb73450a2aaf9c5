"""Map free-form section headings onto ``ratio.core.records.SECTION_CATEGORIES``.

Stored pairs carry a section category (paper, Appendix B.1), so the mapping has to
be stable and cheap: ordered keyword rules over the lowercased heading, first match
wins. The order resolves mixed headings ("Conclusion and Limitations" is a
conclusion, "Experimental Results" are results, "Background and Related Work" is
related work). Rules were drawn from the most frequent headings of the NeurIPS
2023-2025 corpus; anything unmatched is "other" (``parse_markdown`` then lets a
subsection inherit its parent's category).
"""

from __future__ import annotations

import re
from functools import lru_cache

from ratio.core.records import Section

# Leading numbering such as "1", "3.2.", "A.1", "IV.", "Appendix B:" (see strip_numbering).
_NUM = re.compile(r"^\s*(?:(?:\d+(?:\.\d+)*|[A-Z]\.\d+(?:\.\d+)*|[IVX]{1,5})\.?|\d+\))\s+")
_APPENDIX_LETTER = re.compile(
    r"^\s*(?:appendix|appendices|supplementary(?:\s+material)?|supplement)\s+"
    r"([A-Z](?:\.\d+)*|\d+(?:\.\d+)*)\s*[:.\-\u2013\u2014]?\s*",
    re.I,
)
_LETTER = re.compile(r"^\s*[A-Z]\.?\s+(?=\S)")

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (cat, re.compile(pat))
    for cat, pat in (
        ("abstract", r"^abstract\b"),
        (
            "appendix",
            r"^(?:appendix|appendices|supplementary|supplemental|supplement|technical appendi)",
        ),
        (
            "introduction",
            r"\bintro(?:duction)?s?\b|^(?:our\s+|main\s+|summary\s+of\s+)?contributions?\b"
            r"|^(?:paper\s+)?organi[sz]ation\b",
        ),
        (
            "conclusion",
            r"\bconclu|\bconcluding\b|\bclosing remarks\b|\bfinal remarks\b|^summary\b"
            r"|^summary and\b",
        ),
        (
            "related_work",
            r"\brelated\s+(?:work|works|literature|research|approaches|methods)\b|\bprior\s+work"
            r"|\bprevious\s+work|\bliterature\b|\bbackgrounds?\b|\bexisting\s+(?:work|methods)",
        ),
        (
            "method",
            r"^problem\b|\bproblem\s+(?:setup|setting|formulation|statement|definition)|\bpreliminar"
            r"|\bnotations?\b|\bproofs?\b|\btheor(?:y|em|ems|etical)\b|\blemmas?\b|\bour\s+(?:approach|method)"
            r"|\btechniques?\b",
        ),
        (
            "results",
            r"\bresults?\b|\bfindings\b|\bperformance\b|\bcomparisons?\b|\bvisuali[sz]ations?\b"
            r"|\bcase stud|\bqualitative\b|\bquantitative\b|^(?:further\s+|additional\s+)?analys[ie]s$"
            r"|\bempirical analysis\b|\berror analysis\b|\brobustness\b|\befficiency\b"
            r"|\bscalability\b|\bscaling\b",
        ),
        (
            "discussion",
            r"\blimitations?\b|\bbroader\b|\bsocietal\b|\bimpacts?\b|\bethic|\bfuture\s+(?:work|direction)"
            r"|\bdiscussions?\b|\bopen\s+(?:problems|questions)\b|\boutlook\b|\bsafeguards\b",
        ),
        (
            "experiments",
            r"\bexperiment|\bevaluations?\b|\bablations?\b|\bimplementation\b|\bdatasets?\b|\bdata\b"
            r"|\bbaselines?\b|\bhyper-?parameters?\b|\btraining\s+(?:details|setup|settings|procedure)"
            r"|\bsetups?\b|\bsettings?\b|\bempirical\b|\bsimulations?\b|\bbenchmarks?\b|\bmetrics?\b"
            r"|\bcompute\b|\bcomputational resources\b|\breproducibility\b|\bapplications?\b"
            r"|\buser stud|\bexamples?\b|\bnumerical\b|^(?:downstream\s+)?tasks$|\benvironments?\b",
        ),
        (
            "method",
            r"\bmethods?\b|\bmethodology\b|\bapproach(?:es)?\b|\bpreliminar|\bproblem\b|\bnotations?\b"
            r"|\bframework\b|\bmodel(?:s|ing|ling)?\b|\barchitecture\b|\balgorithms?\b|\bproofs?\b"
            r"|\btheor(?:y|em|etical)\b|\blemmas?\b|\bcorollary\b|\bpropositions?\b|\bdefinitions?\b"
            r"|\bassumptions?\b|\bformulation\b|\bobjective\b|\banalysis\b|\bbounds?\b"
            r"|\bconvergence\b|\bderivations?\b|\boverview\b|\bdesign\b|\bmechanism\b|\bfoundations\b"
            r"|\bmodule\b|\bpipeline\b|\bloss\b|\btraining\b|\bparameteri[sz]ation\b|\bmotivation\b",
        ),
    )
)

# "Motivation" and "Overview" read as method subsections far more often than as intros;
# they sit in the method rule above on purpose.


@lru_cache(maxsize=1 << 16)
def strip_numbering(heading: str, appendix: bool = False) -> str:
    """Remove section numbering ("3.2", "A.1", "IV.", "Appendix B:") from a heading.

    A bare letter ("B Proofs") is only numbering inside an appendix; in the main body
    "A Moment Bound for ..." starts with the article "A".
    """
    h = heading.strip()
    m = _APPENDIX_LETTER.match(h)
    if m and m.end() < len(h):
        return h[m.end() :].strip()
    h = _NUM.sub("", h, count=1)
    if appendix:
        h = _LETTER.sub("", h, count=1)
    return h.strip()


@lru_cache(maxsize=1 << 16)  # headings repeat a lot across a corpus ("Introduction")
def categorize(heading: str) -> str:
    """The canonical category of a heading, or "other" when no rule fires."""
    if _APPENDIX_LETTER.match(heading):
        return "appendix"
    h = strip_numbering(heading).lower().strip(" .:*#")
    if not h:
        return "other"
    for cat, pat in _RULES:
        if pat.search(h):
            return cat
    return "other"


# --- heading heuristics shared by the Markdown and plain-text parsers ---------------------

REFERENCES = re.compile(
    r"^(?:references?|bibliography|references and notes|literature cited|works cited|citations"
    r"|reference list|cited works)\b",
    re.I,
)
# Sections without scientific prose: funding, contributions, availability statements.
ACKS = re.compile(
    r"^(?:ackn?owle?d?g|funding\b|disclosure of funding|authors?'? contributions?"
    r"|(?:code|data|code and data|data and code) availability|competing interests"
    r"|conflicts? of interests?|disclaimer)",
    re.I,
)
APPENDIX_HEAD = re.compile(
    r"^(?:appendix|appendices|supplementary|supplemental|supplement\b|technical appendi"
    r"|additional material|online appendix)",
    re.I,
)
_SMALL_WORDS = frozenset("a an and as at by for from in of on or the to with via vs".split())
_DEPTH_NUM = re.compile(r"^(?:[A-Z]|\d+)((?:\.\d+)*)\.?\s")
_LATER = frozenset(("experiments", "results", "discussion", "conclusion"))


def bare_heading(line: str) -> bool:
    """A heading that lost its '#' (or never had one): a short standalone known section name."""
    t = line.strip().strip("*_ ")
    if not t or len(t) > 60 or t[-1] in ".,;:?!" or not t[0].isupper() or t.count(" ") > 5:
        return False
    words = t.split()
    if len(words) > 2 and any(w[0].islower() and w not in _SMALL_WORDS for w in words):
        return False  # a short sentence ("We minimize the loss"), not a title
    b = strip_numbering(t)
    return bool(REFERENCES.fullmatch(b) or APPENDIX_HEAD.match(b) or categorize(b) != "other")


def heading_depth(raw: str, level: int, extractor: str) -> int:
    """Nesting depth: from the numbering when present ("3.2" = 2), else from the #-level."""
    m = _DEPTH_NUM.match(raw)
    if m and (m.group(1) or raw[0].isdigit()):
        return 1 + m.group(1).count(".")
    if extractor == "docling":
        return 1  # docling writes every heading as "##"
    return max(1, level - 1)


def section_category(
    bare: str, depth: int, sections: list[Section], depths: list[int], in_appendix: bool
) -> str:
    """The category of a new section (``sections``/``depths``: those before it).

    An unmatched heading inherits its parent's category, never across the main-body/appendix
    line; an unnamed top-level section between the introduction and the experiments is, in
    ML papers, almost always the method.
    """
    cat = categorize(bare) if bare else "other"
    if cat == "other":
        for sec, d in zip(reversed(sections), reversed(depths), strict=True):
            if sec.is_appendix != in_appendix:
                break
            if d < depth:
                cat = sec.category
                break
    if cat == "other" and not in_appendix and depth == 1 and _in_core(sections):
        cat = "method"
    if in_appendix and cat == "other":
        cat = "appendix"
    return cat


def _in_core(sections: list[Section]) -> bool:
    """True between the introduction and the first experiments/results/conclusion section."""
    seen_intro = False
    for sec in sections:
        if sec.category in _LATER:
            return False
        if sec.category == "introduction":
            seen_intro = True
    return seen_intro
