"""Section structure of extractor Markdown (Nougat ``.mmd``, docling, hand-written).

The benchmark pairs *adjacent* sentences, so everything that is not running prose
must go before segmentation: title/author blocks, references, tables, captions,
display equations, footnotes, code, checklists and running headers. Removing a
display equation leaves a hard paragraph break (the sentences around it are not
adjacent prose); removing a footnote or caption that a page break dropped into the
middle of a paragraph lets the two halves be joined again.

``ratio.corpus.text.blocks`` cleans each block of lines; paragraph text stays raw inline
Markdown/LaTeX for ``ratio.corpus.text.clean.clean_inline``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ratio.core.records import Section
from ratio.corpus.text.blocks import (
    ALGO_TITLE,
    CAPTION,
    DISPLAY,
    EMAIL,
    LIST_ITEM,
    YEAR,
    Item,
    block_items,
    keep_item,
)
from ratio.corpus.text.hyphens import Vocabulary
from ratio.corpus.text.repair import repair_paper
from ratio.corpus.text.runin import strip_runin
from ratio.corpus.text.sections import (
    ACKS,
    APPENDIX_HEAD,
    REFERENCES,
    bare_heading,
    categorize,
    heading_depth,
    section_category,
    strip_numbering,
)

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FORMULA_COMMENT = re.compile(r"<!--\s*formula[^>]*-->")
_MISSING_PAGE = re.compile(r"\[MISSING_PAGE_[A-Z]+(?::\d+)?\]")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_ENV_BEGIN = re.compile(
    r"\\begin\{(table|table\*|tabular|tabular\*|tabularx|figure|figure\*|algorithm|algorithmic"
    r"|algorithm\*|lstlisting|verbatim|equation|equation\*|align|align\*|gather|gather\*"
    r"|multline|multline\*|eqnarray|eqnarray\*|array|minted)\}"
)
_CHECKLIST_PARA = re.compile(r"paper checklist|^\W*\d+\.\s*\W*claims\W+question:", re.I)
_MATH_ENVS = frozenset(
    e + star
    for e in ("equation", "align", "gather", "multline", "eqnarray", "array")
    for star in ("", "*")
)
_TERMINAL = frozenset(".!?:;\"'\u201d")

_CHECKLIST = re.compile(r"paper checklist|^checklist$|reproducibility checklist", re.I)
_CHECKLIST_ITEM = re.compile(
    r"^(?:answer\b|justification\b|guidelines\b|question\b|\[\s*(?:yes|no|n/?a)\s*\]|important,? please|\d+\.\s|the answer na\b"
    r"|claims$|limitations$|theory assumptions|experimental result reproducibility|open access"
    r"|experimental setting|experiment statistical|experiments compute|code of ethics"
    r"|broader impacts$|safeguards$|licenses for existing|new assets$|crowdsourcing"
    r"|institutional review|declaration of llm)",
    re.I,
)
_APPENDIX_NUMBERED = re.compile(r"^[A-H](?:\.\d+)+\.?\s+\S|^[A-H][.:]?\s+[A-Z]")
_NUMBERED = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVX]{1,5}\.)\s+\S")
_ABSTRACT_LEAD = re.compile(r"^[*_ ]*abstract[*_ ]*(?:[.:\u2014\u2013-][*_ ]*|$)", re.I)
_CONTENTS = re.compile(r"^(?:table of )?contents$", re.I)


# --- blocks: what the tokenizer makes of the raw text --------------------------------


@dataclass(frozen=True, slots=True)
class _Heading:
    """A ``#`` heading (``level`` = number of ``#``), or a plain line taken for one."""

    level: int
    text: str


@dataclass(frozen=True, slots=True)
class _Lines:
    """The raw lines of one blank-line-delimited block."""

    lines: list[str]


@dataclass(frozen=True, slots=True)
class _Break:
    """Where display math or an undecoded formula was removed: a hard paragraph break."""


_BREAK = _Break()
_Block = _Heading | _Lines | _Break


def _tokenize(text: str) -> list[_Block]:
    """Split raw text into headings, blocks of lines and breaks.

    Handles multi-block constructs first: fenced code and LaTeX table/figure/algorithm
    environments can contain blank lines.
    """
    if "<!--" in text:
        # an undecoded display formula is a hard break; other comments (images) are not
        text = _FORMULA_COMMENT.sub("\n\n\x00\n\n", text)
        text = _COMMENT.sub("\n\n", text)
    if "[MISSING_PAGE" in text:
        text = _MISSING_PAGE.sub("\n\n", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    out: list[_Block] = []
    lines = text.split("\n")
    i, n = 0, len(lines)
    buf: list[str] = []

    def flush() -> None:
        if buf:
            out.append(_Lines(buf.copy()))
            buf.clear()

    while i < n:
        line = lines[i]
        s = line.lstrip()
        c = s[:1]
        block: _Block | None = None
        close = None  # a multi-line construct to skip: where it ends, from which line
        if not s:
            flush()
        elif c == "\x00":
            block = _BREAK
        elif c == "#" and (m := _HEADING.match(s)) and m.group(2):
            block = _Heading(len(m.group(1)), m.group(2))
        elif c == "`" and s.startswith("```"):
            flush()
            i += 1
            while i < n and not lines[i].lstrip().startswith("```"):
                i += 1
        elif c == "\\" and s.startswith("\\begin{") and (m := _ENV_BEGIN.match(s)):
            close, start, is_math = "\\end{" + m.group(1) + "}", i, m.group(1) in _MATH_ENVS
        elif c == "\\" and s.startswith("\\[") and "\\]" not in s:
            close, start, is_math = "\\]", i, True  # multi-line display math
        elif c == "$" and s.startswith("$$") and s.count("$$") == 1:
            close, start, is_math = "$$", i + 1, True
        else:
            buf.append(line)
        if block is not None:
            flush()
            out.append(block)
        if close is None:
            i += 1
            continue
        flush()
        i = start
        while i < n and close not in lines[i]:
            i += 1
        # the prose after ``close`` on its line is kept: an environment may end mid-line
        rest = lines[i].split(close, 1)[1].strip() if i < n else ""
        i += 1
        if is_math:
            out.append(_BREAK)
        if rest:
            buf.append(rest)
    flush()
    return out


def _is_sentence(t: str) -> bool:
    """Running text in a paper with no recognizable heading: a punctuated run of words.

    Title, author and affiliation lines rarely end a sentence; without a heading to mark
    where the front matter ends, this keeps the body instead of dropping it all.
    """
    return t[-1:] in ".?!" and t.count(" ") >= 6 and not EMAIL.search(t)


def _is_prose_block(t: str) -> bool:
    """Long sentence-like text in the front matter (an unlabeled abstract or page 2 body)."""
    return len(t) >= 200 and t.count(" ") >= 25 and not EMAIL.search(t)


def parse_markdown(
    text: str, extractor: str = "markdown", drops: Counter | None = None
) -> list[Section]:
    """Split extractor Markdown into cleaned sections of paragraphs.

    ``extractor`` ("nougat", "docling", "markdown") only tunes heuristics; the
    output depends on nothing but ``text``. Pass a ``Counter`` as ``drops`` to get
    how many blocks were removed by reason (table, caption, footnote, ...).
    """
    drops = drops if drops is not None else Counter()
    text = repair_paper(text, drops)  # line numbers, footnote marks, small caps, joined words
    blocks = _tokenize(text)
    vocab = Vocabulary(text)  # the paper's own spelling, for line-break hyphens
    if not any(isinstance(b, _Heading) for b in blocks):
        # Markdown written by hand or converted from plain text may have no '#' at all: its
        # section titles are plain lines. Promote the known ones, or the whole paper would
        # read as front matter.
        blocks = [_as_bare_heading(b) for b in blocks]
    start = _body_start(blocks)
    front_end = start[0] if start is not None else len(blocks)
    body = _Body(extractor, drops, vocab)
    front = _front_matter(blocks[:front_end], start, drops, vocab)
    if front is not None:
        body.open(*front)
    for block in blocks[front_end:]:
        body.feed(block)
    _drop_repeated(body.items_of, drops)
    result: list[Section] = []
    for sec, items in zip(body.sections, body.items_of, strict=True):
        paragraphs, sec.math_after = _join_items(items)
        sec.paragraphs = [strip_runin(p, drops) for p in paragraphs]  # run-in headings
        if sec.paragraphs:
            result.append(sec)
    return result


def _as_bare_heading(block: _Block) -> _Block:
    """A one-line block that is a heading without its '#' (:func:`bare_heading`) as one."""
    if isinstance(block, _Lines) and len(block.lines) == 1 and bare_heading(block.lines[0]):
        return _Heading(2, block.lines[0].strip())
    return block


def _body_start(blocks: list[_Block]) -> tuple[int, str] | None:
    """Where the front matter (title, authors, affiliations) ends: index and text of the
    abstract heading if any, else of the first heading that is numbered or has a category."""
    for k, b in enumerate(blocks):
        if isinstance(b, _Heading):
            cat = categorize(b.text)
            if cat == "abstract":
                return k, b.text
            if cat == "introduction" or _NUMBERED.match(b.text):
                break  # an "Abstract" heading after the body starts is not the front matter's end
    for k, b in enumerate(blocks):
        if isinstance(b, _Heading) and (_NUMBERED.match(b.text) or categorize(b.text) != "other"):
            return k, b.text
    return None


def _front_matter(
    blocks: list[_Block],
    start: tuple[int, str] | None,
    drops: Counter,
    vocab: Vocabulary | None,
) -> tuple[Section, list[Item]] | None:
    """The prose kept from the front matter, as an opening section (None when it has none).

    With an abstract heading to come, the front matter holds no prose of the paper; else
    long prose blocks are kept (an unlabeled abstract), and, when no heading ends the front
    matter at all, sentence-like text too.
    """
    has_abstract = start is not None and categorize(start[1]) == "abstract"
    front: list[Item] = []
    front_abstract = False  # Nougat sometimes writes the abstract heading as plain text
    for b in blocks:
        if not isinstance(b, _Lines):
            continue
        for it in block_items(b.lines, drops, vocab) or ():
            if it is DISPLAY:
                continue
            if has_abstract:
                drops["front_matter"] += 1
                continue
            m = _ABSTRACT_LEAD.match(it.text)
            if m:
                front_abstract = True
                it.text = it.text[m.end() :]
            prose = _is_prose_block(it.text) or (start is None and _is_sentence(it.text))
            if prose and keep_item(it, drops):
                front.append(it)
            else:
                drops["front_matter"] += 1
    if not front:
        return None
    if front_abstract:
        return Section(heading="Abstract", category="abstract"), front
    return Section(heading="", category="other"), front


class _Body:
    """The paper after its front matter, block by block: headings open sections (or switch
    to skipping references, checklists, acknowledgements), lines fill the open section."""

    def __init__(self, extractor: str, drops: Counter, vocab: Vocabulary | None) -> None:
        self.sections: list[Section] = []
        self.items_of: list[list[Item]] = []  # each section's paragraph items
        self.depths: list[int] = []  # each section's heading depth, for category inheritance
        self.extractor = extractor
        self.drops = drops
        self.vocab = vocab
        self.mode = "body"  # body | refs | checklist | skip (acknowledgements, contents)
        self.after_refs = False
        self.in_appendix = False
        self.pending_hard = False  # the next kept paragraph starts after a hard break

    def feed(self, block: _Block) -> None:
        block = _as_bare_heading(block)
        if isinstance(block, _Lines) and self.mode == "refs":
            block = self._after_references(block)
        if isinstance(block, _Break):
            _mark_math(self.items_of)
            self.pending_hard = True
        elif isinstance(block, _Heading):
            self._heading(block.level, block.text)
        elif self.mode == "body":
            self._lines(block.lines)

    def open(self, section: Section, items: list[Item] | None = None, depth: int = 1) -> None:
        self.sections.append(section)
        self.items_of.append(items if items is not None else [])
        self.depths.append(depth)

    def _after_references(self, block: _Lines) -> _Block:
        """Nougat often loses the first appendix heading after the bibliography: a short
        title line (taken as the heading) or plain prose (an untitled appendix opens) ends
        the references."""
        first = block.lines[0].strip()
        if len(block.lines) == 1 and _title_like(first):
            return _Heading(2, first)
        if _is_prose_block(first) and not LIST_ITEM.match(first) and not YEAR.search(first[:300]):
            self.open(Section(heading="", category="appendix", is_appendix=True))
            self.mode, self.in_appendix, self.pending_hard = "body", True, True
        return block

    def _heading(self, level: int, raw: str) -> None:
        raw = raw.strip().strip("*_ ").strip()
        if len(raw) > 200 or CAPTION.match(raw) or ALGO_TITLE.match(raw):
            # docling marks some captions and run-on lines as headings
            self.drops["caption" if len(raw) <= 200 else "heading_text"] += 1
            self.pending_hard = True
            return
        bare = strip_numbering(raw, appendix=self.in_appendix or self.after_refs)
        if self._skips(raw.lower(), bare.lower()):
            return
        self.mode = "body"
        if self._starts_appendix(raw, bare.lower()):
            self.in_appendix = True
            bare = strip_numbering(raw, appendix=True)
        depth = heading_depth(raw, level, self.extractor)
        cat = section_category(bare, depth, self.sections, self.depths, self.in_appendix)
        self.open(Section(heading=bare, category=cat, is_appendix=self.in_appendix), depth=depth)
        self.pending_hard = True

    def _skips(self, low: str, bare_low: str) -> bool:
        """Whether the heading opens no section: a checklist item, or the start of the
        references, the checklist or a section without prose (whose mode it switches to)."""
        if self.mode == "checklist" and (
            _CHECKLIST_ITEM.match(low) or _CHECKLIST_ITEM.match(bare_low)
        ):
            return True
        if REFERENCES.match(bare_low):
            self.after_refs = True
            self.mode, reason = "refs", "references_section"
        elif _CHECKLIST.search(low):
            self.mode, reason = "checklist", "checklist_section"
        elif ACKS.match(bare_low) or _CONTENTS.match(bare_low):
            self.mode, reason = "skip", "skipped_section"
        else:
            return False
        self.drops[reason] += 1
        return True

    def _starts_appendix(self, raw: str, bare_low: str) -> bool:
        concluded = any(s.category == "conclusion" for s in self.sections)
        return bool(
            APPENDIX_HEAD.match(raw.lower())
            or (self.after_refs and bare_low != "abstract")
            or _APPENDIX_NUMBERED.match(raw)
            and (self.after_refs or self.in_appendix or concluded)
        )

    def _lines(self, lines: list[str]) -> None:
        block = block_items(lines, self.drops, self.vocab)
        if block is None:
            return
        if not self.sections:
            self.open(Section(heading="", category="other"))
        for it in block:
            if it is DISPLAY:
                _mark_math(self.items_of)
                self.pending_hard = True
                continue
            if len(it.text) < 300 and _CHECKLIST_PARA.search(it.text):
                self.mode = "checklist"  # Nougat flattens the checklist heading into text
                self.drops["checklist_section"] += 1
                break
            if keep_item(it, self.drops):
                if self.pending_hard:
                    it.hard_before = True
                    self.pending_hard = False
                self.items_of[-1].append(it)


def _title_like(t: str) -> bool:
    """A short capitalized line without sentence punctuation, e.g. "Warm-up: Mean Estimation"."""
    t = t.strip("*_ ")
    return (
        3 <= len(t) <= 80
        and t[0].isupper()
        and t[-1] not in ".,;?!"
        and t.count(" ") <= 8
        and not YEAR.search(t)
        and not LIST_ITEM.match(t)
    )


def _mark_math(items_of: list[list[Item]]) -> None:
    """A display equation was removed: the current section's last paragraph led into it."""
    if items_of and items_of[-1]:
        items_of[-1][-1].math_after = True


def _drop_repeated(items_of: list[list[Item]], drops: Counter) -> None:
    """Remove running titles/page headers: short blocks that recur within the paper."""
    counts: Counter = Counter()
    for items in items_of:
        for it in items:
            if len(it.text) < 120:
                counts[it.text] += 1
    rep = {t for t, c in counts.items() if c >= 3 or (c >= 2 and t[-1:] not in _TERMINAL)}
    if not rep:
        return
    for items in items_of:
        kept = [
            it for it in items if it.text not in rep or it.is_list and it.text[-1:] in _TERMINAL
        ]
        if len(kept) != len(items):
            drops["repeated_header"] += len(items) - len(kept)
            # a removed header may sit inside a paragraph split by a page break
            items[:] = kept


def _join_items(items: list[Item]) -> tuple[list[str], list[bool]]:
    """Re-join paragraphs split by a page break (previous one unfinished, next lowercase).

    Returns the paragraphs and, for each, whether removed display math followed it.
    """
    out: list[str] = []
    math_after: list[bool] = []
    prev: Item | None = None
    for it in items:
        if (
            prev is not None
            and not it.hard_before
            and not it.is_list
            and not prev.is_list
            and it.text[:1].islower()
            and prev.text[-1:] not in _TERMINAL
        ):
            out[-1] = out[-1] + " " + it.text
            math_after[-1] = it.math_after
            prev = Item(out[-1], False, prev.hard_before)
            continue
        out.append(it.text)
        math_after.append(it.math_after)
        prev = it
    return out, math_after
