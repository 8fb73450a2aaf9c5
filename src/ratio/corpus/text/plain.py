"""Structure for plain-text papers: headings, paragraphs, front matter and the reference cut.

Plain text from PDF extraction (the ACL Anthology Network, ``pdftotext``, copied arXiv bodies)
has no markup: section titles are lines of their own, page headers repeat, words are broken at
line ends and the reference list trails the body. Two layouts occur, told apart by how many
lines end a sentence:

* **wrapped**: one PDF line per text line; a paragraph ends at a blank line, a heading, or a
  short line that ends a sentence;
* **sentence per line**: the distributor already split sentences; a section is one run of
  sentences (a paragraph break is not recoverable), broken only where a line was dropped.

Headings are numbered lines ("3.1 Model", "IV. RESULTS"), all-caps lines, and known section
names on a line of their own ("Introduction", "Related Work"), only where the previous line
does not run on into them. The reference list is cut at its heading, also when the heading is
glued to the first entry ("References Steven Abney and ...") or to the end of the last body
sentence ("... Government. References S."); without any heading, at the start of the trailing
run of reference-like lines. Acknowledgments are skipped like in ``ratio.corpus.text.markdown``.
Every removed block is counted in ``drops`` by reason.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from itertools import accumulate

from ratio.core.records import Section
from ratio.corpus.text.blocks import CAPTION, EMAIL, letters_ok
from ratio.corpus.text.clean import has_tex_residue, strip_tex_residue
from ratio.corpus.text.hyphens import Vocabulary, repair_hyphens
from ratio.corpus.text.sections import (
    ACKS,
    APPENDIX_HEAD,
    REFERENCES,
    bare_heading,
    heading_depth,
    section_category,
    strip_numbering,
)

# ----------------------------------------------------------------------------- headings

_NUMBERED_HEAD = re.compile(
    r"^(?P<num>(?:[1-9]\d?(?:\.\d{1,2}){0,3}|[IVX]{1,5}|[A-H](?:\.\d{1,2}){1,3})\.?)"
    r"\s+(?P<title>[A-Z][^\n]{1,78})$"
)
_ALLCAPS_HEAD = re.compile(r"^[A-Z][A-Z&\-:,' ]{3,60}$")
# "References", "REFERENCES", "Bibliography" opening a line, alone or glued to the first entry
# ("References Steven Abney ...", "52 References M."), not "References to pictures can ...".
_REFS_LEAD = re.compile(
    r"^(?:\d{1,4}\s+|[1-9]\d?\.?\s+)?(?P<head>References|REFERENCES|Bibliography|BIBLIOGRAPHY"
    r"|Literature Cited|Works Cited)\s*[.:]?(?:\s+(?P<rest>[A-Z\[(\d].*))?$"
)
# ... or glued to the end of the body's last sentence: "... Government. References S."
_REFS_INLINE = re.compile(
    r"(?<=[.?!])\s+(?P<head>References|REFERENCES|Bibliography)\s+(?=[A-Z\[])"
)
_ACKS_LEAD = re.compile(
    r"^(?P<head>Acknowledg(?:e)?ments?|ACKNOWLEDG(?:E)?MENTS?)\s*[.:]?(?:\s+(?P<rest>[A-Z].*))?$"
)
_ABSTRACT_LEAD = re.compile(
    r"(?:^|(?<=\s))(?:Abstract|ABSTRACT)\s*[.:\u2014\u2013-]?\s*(?=[A-Z]|$)"
)
# A footnote's first word left on the number's line ("3 If", "10 See") is no section title.
_SENTENCE_STARTS = frozenset(
    "a an the in on at to for of see if not we it this that as by but and or our these there"
    " with from when while although however note thus hence here since such one".split()
)
_TERMINAL_END = re.compile(r"[.?!:][\"')\]\u201d\u2019]?$")
_RUNS_ON = re.compile(r"[a-z,;\-]$")  # a line ending like this continues on the next one

# ----------------------------------------------------------------------------- page furniture

_PAGE_NUMBER = re.compile(r"^(?:page\s+)?\d{1,4}$", re.I)
# The first-page footer of proceedings: "Proceedings of ..., pages 128\u2013135, Portland, ..."
_VENUE_FOOTER = re.compile(r"^Proceedings of\b.{0,250}\b(?:pages|pp\.)\s*\d+\s*[-\u2013]+\s*\d+")
_FRONT_NOISE = re.compile(
    r"Proceedings of|\u00a9|c\u00a9|Copyright|Licensed under|Association for Computational"
    r"|@|https?://|www\.",
    re.I,
)
_DIGITS = re.compile(r"\d+")

# ----------------------------------------------------------------------------- reference lines

_REF_YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}[a-z]?(?!\d)")
_REF_YEAR_PUNCT = re.compile(
    r"(?:\(\s*(?:19|20)\d{2}[a-z]?\s*\)|(?<!\d)(?:19|20)\d{2}[a-z]?[.,:]\s|(?:19|20)\d{2}[a-z]?\.?$)"
)
_REF_VENUE = re.compile(
    r"\b(?:Proceedings|Proc\.|Conference|Workshop|Symposium|Journal|Transactions|Press|Publishers"
    r"|Association for|Linguistics|pp\.|pages|vol\.|Vol\.|Volume|arXiv|ACM|IEEE|Springer|Elsevier"
    r"|editors?|eds?\.|Ph\.\s?D\.|thesis|Technical Report|In Proc|Annual Meeting|ACL|EMNLP|NAACL"
    r"|COLING|LREC|NIPS|ICML)\b"
)
_REF_PAGES = re.compile(
    r"\d+\s*\(\s*\d+(?:\s*[-\u2013]\s*\d+)?\s*\)\s*:\s*\d+|\d+\s*[-\u2013]{1,2}\s*\d+\s*\.?\s*$|pp?\.\s*\d+"
)
_REF_AUTHOR = re.compile(
    r"^(?:\[[^\]]{2,60}\]|[A-Z][A-Za-z\u00c0-\u024f'\u2019\-]+,\s+(?:[A-Z]\.|[A-Z][a-z]+)"
    r"|(?:[A-Z]\.\s*){1,3}[A-Z][A-Za-z\u00c0-\u024f'\-]+[,.]"
    r"|[A-Z][a-z]+(?:\s+[A-Z]\.)?\s+[A-Z][A-Za-z\u00c0-\u024f'\-]+(?:,| and)\s)"
)


def reference_score(line: str) -> int:
    """How much ``line`` looks like (part of) a bibliography entry: 0 (prose) to 4.

    One point each for a year, a year set off as in an entry ("(2002)", "2002."), venue or
    publisher words, page ranges or volume(issue):pages, and an author-list opening.
    Body sentences with a citation score 1 or 2; entries mostly 2 and more.
    """
    score = sum(m is not None for m in (_REF_VENUE.search(line), _REF_PAGES.search(line)))
    score += _REF_AUTHOR.match(line) is not None
    if _REF_YEAR.search(line):
        score += 1 + (_REF_YEAR_PUNCT.search(line) is not None)
    return score


def is_reference_line(line: str) -> bool:
    return reference_score(line) >= 2


def _ref_density(lines: list[str], start: int, window: int) -> float:
    chunk = [ln for ln in lines[start : start + window] if ln.strip()]
    if not chunk:
        return 0.0
    return sum(is_reference_line(ln) for ln in chunk) / len(chunk)


def trailing_references(lines: list[str], min_lines: int = 4) -> int | None:
    """Index of the first line of a reference list at the end of ``lines`` that has no heading.

    The list is the earliest reference-like line after which the text is mostly entries
    (at least half of the next 12 lines and 40% of all the remaining ones), within the
    last 60% of the paper. ``None`` when the paper does not end in a reference list.
    """
    n = len(lines)
    flags = [is_reference_line(ln) for ln in lines]
    suffix = [*accumulate(reversed(flags), initial=0)][::-1]  # reference-like lines from i on
    for i in range(int(n * 0.4), n - min_lines + 1):
        enough = suffix[i] >= min_lines and suffix[i] >= 0.4 * (n - i)
        if flags[i] and enough and _ref_density(lines, i, 12) >= 0.5:
            return i
    return None


# ----------------------------------------------------------------------------- the parser


def sentence_per_line(lines: list[str]) -> bool:
    """True when most lines of 30+ characters end a sentence (the AAN distribution)."""
    long = [ln for ln in lines if len(ln) >= 30]
    if not long:
        return False
    return sum(bool(_TERMINAL_END.search(ln)) for ln in long) >= 0.6 * len(long)


def _remove_page_furniture(lines: list[str], drops: Counter) -> list[str]:
    """Blank out page numbers and running headers/footers (short lines repeated 3+ times)."""
    forms: Counter[str] = Counter()
    for ln in lines:
        s = ln.strip()
        if 3 <= len(s) <= 100 and not _TERMINAL_END.search(s):
            forms[_DIGITS.sub("#", s.lower())] += 1
    out = []
    for ln in lines:
        s = ln.strip()
        if s and _PAGE_NUMBER.match(s):
            drops["page_number"] += 1
        elif (s.startswith("Proceedings of") and _VENUE_FOOTER.match(s)) or (
            s and forms.get(_DIGITS.sub("#", s.lower()), 0) >= 3
        ):
            drops["page_header"] += 1
        else:
            out.append(ln)
            continue
        out.append("")
    return out


def _heading(line: str, prev: str, nxt: str = "") -> str | None:
    """The heading text when ``line`` is a section title of its own, else None.

    A title never continues a line that runs on (``prev`` ends in a lowercase letter, comma
    or hyphen), and the text after it starts a new sentence: "3 If" before "everything that
    ..." is a footnote's first word, not a section.
    """
    s = line.strip()
    if not s or len(s) > 80:
        return None
    if nxt and not (nxt[0].isupper() or nxt[0] in "\"'\u201c([" or _NUMBERED_HEAD.match(nxt)):
        return None
    if bare_heading(s):
        return s  # a known section name alone on a line ends any run of text before it
    if prev and _RUNS_ON.search(prev):
        return None
    m = _NUMBERED_HEAD.match(s)
    if m:
        title = m.group("title").strip()
        words = title.split()
        if (
            len(words) <= 10
            and (len(words) > 1 or words[0].lower() not in _SENTENCE_STARTS)
            and title[-1] not in ".,;:"
            and sum(c.isdigit() for c in title) <= 2
            and sum(c.isalpha() for c in title) >= 0.7 * len(title.replace(" ", ""))
            and not _REF_YEAR.search(title)
        ):
            return s
        return None
    if _ALLCAPS_HEAD.match(s) and any(len(w) >= 4 for w in s.split()) and len(s.split()) <= 8:
        return s
    return None


def _heading_at(lines: list[str], i: int, prev: str) -> tuple[str, int] | None:
    """The heading starting at ``lines[i]`` and how many lines it takes (a title may wrap:
    "2 Topic" / "Signatures", "6 Conclusions" / "and future research")."""
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    after = lines[i + 2] if i + 2 < len(lines) else ""
    if (
        nxt
        and _NUMBERED_HEAD.match(lines[i])
        and len(lines[i]) <= 40
        and len(nxt) <= 40
        and nxt[0].isalpha()
        and len(nxt.split()) <= 4
        and not _TERMINAL_END.search(nxt)
    ):
        joined = lines[i] + " " + nxt
        h = _heading(joined, prev, after)
        if h is not None:
            return h, 2
    h = _heading(lines[i], prev, nxt)
    return (h, 1) if h is not None else None


class _Builder:
    """Accumulates sections and paragraphs; ``mode`` is body | refs | skip."""

    def __init__(self, drops: Counter, wrapped: bool, width: float):
        self.drops = drops
        self.wrapped = wrapped
        self.width = width
        self.sections: list[Section] = []
        self.levels: list[int] = []  # heading depth per section, for category inheritance
        self.buf: list[str] = []
        self.mode = "body"
        self.after_refs = False
        self.in_appendix = False
        self.in_caption = False

    def flush(self) -> None:
        if self.buf:
            if self.mode == "body":
                if not self.sections:
                    self.add(Section(heading=""), 1)
                self.sections[-1].paragraphs.append(" ".join(self.buf))
            self.buf = []

    def heading(self, raw: str, bibliography: bool = True) -> None:
        """Start a section; ``bibliography=False`` when the text after a "Reference" title
        is not a list of entries (a "2.3 Reference" subsection)."""
        self.flush()
        self.in_caption = False
        bare = strip_numbering(raw, appendix=self.after_refs or self.in_appendix)
        low = bare.lower()
        if bibliography and REFERENCES.match(low):
            self.mode, self.after_refs = "refs", True
            self.drops["references_section"] += 1
            return
        if ACKS.match(low):
            self.mode = "skip"
            self.drops["skipped_section"] += 1
            return
        if self.after_refs and not (
            APPENDIX_HEAD.match(low) or re.match(r"^[A-H](?:\.\d+)*\.?\s+\S", raw.strip())
        ):
            return  # inside the bibliography only an appendix heading ends it
        if APPENDIX_HEAD.match(low) or self.after_refs:
            self.in_appendix = True
        self.mode = "body"
        depth = heading_depth(raw, 2, "plain")
        cat = section_category(bare, depth, self.sections, self.levels, self.in_appendix)
        title = bare if not raw.isupper() else bare.title()
        self.add(Section(heading=title, category=cat, is_appendix=self.in_appendix), depth)

    def add(self, section: Section, depth: int) -> None:
        self.sections.append(section)
        self.levels.append(depth)

    def text(self, line: str) -> None:
        s = line.strip()
        if not s:
            if self.wrapped:
                self.flush()
            self.in_caption = False
            return
        if self.mode != "body":
            return
        if CAPTION.match(s):
            self.flush()
            self.drops["caption"] += 1
            self.in_caption = self.wrapped and not self._ends_paragraph(s)
            return
        if self.in_caption:
            self.in_caption = not self._ends_paragraph(s)
            return
        if not letters_ok(s):
            self.flush()
            self.drops["non_text"] += 1
            return
        self.buf.append(s)
        if self.wrapped and self._ends_paragraph(s):
            self.flush()

    def running(self, line: str) -> str:
        """``line`` when the next line may continue it, else "" (see ``_heading``'s ``prev``).

        Only a full line of wrapped text runs on; a short line (title, author, the end of a
        paragraph) or a line in a sentence-per-line file is complete.
        """
        return line if self.wrapped and len(line) >= 0.6 * self.width else ""

    def _ends_paragraph(self, s: str) -> bool:
        return bool(_TERMINAL_END.search(s)) and len(s) < 0.8 * self.width


def parse_plaintext(text: str, drops: Counter | None = None) -> list[Section]:
    """Split a plain-text paper into sections of paragraphs; see the module docstring.

    Pass a ``Counter`` as ``drops`` to get what was removed, by reason (page_header,
    references_section, front_matter, caption, ...).
    """
    drops = drops if drops is not None else Counter()
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    if has_tex_residue(text):
        text = "\n".join(strip_tex_residue(ln, drops) for ln in text.split("\n"))
    text = "\n".join(_remove_page_furniture(text.split("\n"), drops))
    text = repair_hyphens(text, Vocabulary(text), drops)
    lines = [ln.strip() for ln in text.split("\n")]
    wrapped = not sentence_per_line(lines)
    widths = [len(ln) for ln in lines if len(ln) >= 20]
    width = statistics.median(widths) if widths else 80.0
    lines = _mark_references(_split_abstract(lines))
    b = _Builder(drops, wrapped, width)
    front_end = _front_matter_end(lines, b)

    if front_end:
        _front_matter(lines[:front_end], b, drops)
    i = front_end
    prev = ""
    while i < len(lines):
        line = lines[i]
        m = _REFS_LEAD.match(line) if not (prev and _RUNS_ON.search(prev)) else None
        lead = m or _ACKS_LEAD.match(line)
        step = 1
        if lead:
            b.heading(lead.group("head"))
            rest = lead.group("rest")
            if rest:
                b.text(rest)  # the first entry / the acknowledgment text: dropped by the mode
        else:
            h = _heading_at(lines, i, prev)
            if h is not None:
                step = h[1]
                b.heading(h[0], bibliography=_ref_density(lines, i + step, 15) >= 0.3)
            else:
                b.text(line)
        prev = b.running(lines[i + step - 1])
        i += step
    b.flush()
    return [sec for sec in b.sections if sec.paragraphs]


def _split_abstract(lines: list[str]) -> list[str]:
    """Put an "Abstract" label glued into the title block on a line of its own."""
    head = lines[: max(60, len(lines) // 4)]
    if any(ln in ("Abstract", "ABSTRACT", "Abstract.", "Abstract:") for ln in head):
        return lines
    for i, ln in enumerate(head):
        m = _ABSTRACT_LEAD.search(ln)
        if m and (m.start() > 0 or m.end() < len(ln)):
            parts = [ln[: m.start()].strip(), "Abstract", ln[m.end() :].strip()]
            return [*lines[:i], *(p for p in parts if p), *lines[i + 1 :]]
    return lines


def _mark_references(lines: list[str]) -> list[str]:
    """Make sure the reference list starts with a "References" line of its own.

    Kept as is when a line opens with the heading; split when the heading is glued to the
    end of a body sentence; inserted before the trailing run of entries when it is missing.
    """
    n = len(lines)
    for i in range(n // 3, n):
        if _REFS_LEAD.match(lines[i]):
            return lines
    for i in range(int(n * 0.4), n):
        m = _REFS_INLINE.search(lines[i])
        if m is None:
            continue
        head, tail = lines[i][: m.start()], lines[i][m.end() :]
        if _ref_density([tail, *lines[i + 1 : i + 12]], 0, 12) >= 0.5:
            return [*lines[:i], head, "References", tail, *lines[i + 1 :]]
    start = trailing_references(lines)
    if start is not None:
        return [*lines[:start], "References", *lines[start:]]
    return lines


def _front_matter_end(lines: list[str], b: _Builder) -> int:
    """Index of the first section heading when it closes a title block; 0 when there is none.

    A heading later than the first quarter of the paper (and 60 lines) is not the end of a
    title block: the text before it is body text of a paper without an opening heading.
    """
    prev = ""
    for i, line in enumerate(lines[: max(60, len(lines) // 4)]):
        if _heading_at(lines, i, prev) or _REFS_LEAD.match(line) or _ACKS_LEAD.match(line):
            return i
        if line:
            prev = b.running(line)
    return 0


def _front_matter(lines: list[str], b: _Builder, drops: Counter) -> None:
    """Keep the unlabeled abstract of a title block: runs of full lines that make prose."""
    paras: list[list[str]] = [[]]
    for ln in lines:
        if b.wrapped:
            prose = len(ln) >= 0.6 * b.width
        else:
            prose = bool(_TERMINAL_END.search(ln)) and ln.count(" ") >= 7
        if prose:
            paras[-1].append(ln)
            continue
        if ln and b.wrapped and paras[-1] and _TERMINAL_END.search(ln):
            paras[-1].append(ln)  # the last line of a paragraph
        elif ln:
            drops["front_matter"] += 1  # a title, author or affiliation line
        paras.append([])
    kept = []
    for para in filter(None, paras):
        t = " ".join(para)
        words = [w for w in t.split() if w[:1].isalpha()]
        capitalized = sum(w[0].isupper() for w in words) / max(1, len(words))
        if (
            len(t) >= 200
            and t.count(" ") >= 25
            and _TERMINAL_END.search(t)
            and capitalized < 0.4  # names, titles and affiliations are capitalized
            and not EMAIL.search(t)
            and not _FRONT_NOISE.search(t)
        ):
            kept.append(t)
        else:
            drops["front_matter"] += len(para)
    if kept:
        b.add(Section(heading="", category="other", paragraphs=kept), 1)
