"""The layout pass of the PDF reader: paragraphs, headings and reading order from text boxes.

Library-neutral: any extractor that yields ``Segment`` boxes can use it (``ratio.corpus.readers.pdf``
feeds it PDFium's, ``benchmarks/pdf.py`` pdfminer.six lines too). A PDF has no paragraphs, only
glyphs at positions, so they are rebuilt:

1. **Margins.** Rotated text (the arXiv stamp), line-number rulers of review copies (bare
   integers outside the text block), page numbers and running headers/footers (text in the top
   or bottom band that recurs across pages, digits ignored) are dropped, as are footnotes
   (small type under the last body line of a column).
2. **Reading order.** Each page looks for a gutter: an x near the middle that almost no
   segment crosses. On a two-column page, a segment that crosses it (title, wide figure)
   starts a new band; inside a band the left column is read before the right one.
3. **Paragraphs.** Segments on one baseline join into rows; a row starts a paragraph after a
   larger vertical gap, when it is indented, or when the previous row ended short after a full
   stop. Centred rows, rows with a wide inner gap (tables, numbered equations) and rows that
   are mostly symbols are display material: dropped, leaving a hard break.
4. **Headings.** A short row standing alone that is numbered ("3.2 Results"), bold or larger
   than the body text, or a known unnumbered heading ("Abstract", "References"), becomes a
   heading.
5. **Hyphens.** A word broken at a line end is joined or keeps its hyphen as
   ``ratio.corpus.text.hyphens.join_line_break`` decides from the paper's own spelling.
6. **References.** The entries under a "References" heading are dropped up to the next
   heading (an appendix), while the layout still shows where the list ends.

The result is Markdown (``## heading``, blank-line paragraphs) for
``ratio.corpus.text.markdown.parse_markdown``, like Nougat or docling output, so references,
acknowledgements, captions, checklists and front matter are cut by the same section logic as
for every other format.

Tested by tests/corpus/readers/test_pdf.py.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from itertools import groupby, pairwise

import numpy as np

from ratio.corpus.text.hyphens import Vocabulary, join_line_break
from ratio.corpus.text.sections import categorize

BAND = 0.08  # top/bottom fraction of the page where running headers and footers live
_PAGE_NUMBER = re.compile(
    r"^\W*(?:page\s*)?(?:\d{1,4}|[ivxlc]{1,6})(?:\s*(?:of|/)\s*\d{1,4})?\W*$", re.I
)
_BARE_INT = re.compile(r"^\d{1,4}$")
_ARXIV_STAMP = re.compile(r"arXiv:\s?\d{4}\.\d{4,5}|arXiv:[a-z\-]+/\d{7}", re.I)
_HEADING_NUM = re.compile(
    r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?|[A-H](?:\.\d{1,2}){0,3}\.?|[IVX]{1,5}\.)\s+\S"
)
_CAPTION_START = re.compile(r"^(?:Figure|Fig\.|Table|Tab\.|Algorithm|Listing)\s*[A-Z]?\d", re.I)
_KNOWN_HEADINGS = re.compile(
    r"^(?:abstract|references|bibliography|acknowledge?ments?|limitations|ethics statement"
    r"|ethical considerations|broader impact|conclusions?|introduction|related work"
    r"|appendix|appendices|supplementary material)$",
    re.I,
)
_TERMINAL = ".!?:"
_BREAK = "break"  # a block kind: display material stood here, the prose around it is not adjacent


@dataclass(slots=True)
class Segment:
    """A run of text on one baseline, in PDF points measured from the page's top-left."""

    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float  # font size of most of its glyphs
    bold: bool = False


@dataclass(slots=True)
class PageText:
    """The segments of one page, in the order the library produced them."""

    width: float
    height: float
    segments: list[Segment] = field(default_factory=list)


@dataclass(slots=True)
class _Row(Segment):
    """Segments of one column on one baseline, joined left to right."""

    wide_gap: bool = False  # an inner gap wider than a word space: table row or numbered equation


def layout_markdown(pages: list[PageText]) -> str:
    """Markdown (``## heading`` lines, blank-line paragraphs) of a paper's pages."""
    body = _body_size(pages)
    _drop_margins(pages, body)
    gutters = [_gutter(page) for page in pages]
    found = [g for g in gutters if g is not None]
    # a two-column paper's gutter, for its pages where too much crosses it to find it
    # alone (page 1: title, authors and venue lines span both columns)
    paper_gutter = statistics.median(found) if len(found) >= max(2, len(pages) // 2) else None
    chunks = [
        chunk
        for page, g in zip(pages, gutters, strict=True)
        for chunk in _page_chunks(page, body, g if g is not None else _gutter(page, paper_gutter))
    ]
    pitch = _line_pitch(chunks, body)
    blocks = _paragraphs(chunks, body, pitch)
    vocab = Vocabulary("\n".join(r for kind, rows in blocks if kind == "para" for r in rows))
    out: list[str] = []
    in_refs = False
    for kind, rows in blocks:
        if kind == "heading":
            out.append("## " + rows[0])
            # the entries of a bibliography are cut here, where the layout still shows
            # where it ends (the next heading), not left to guesses on the flat text
            in_refs = bool(_REFERENCES_HEADING.match(rows[0]))
        elif in_refs:
            continue
        elif kind == _BREAK:
            out.append("\x00")
        else:
            out.append(_join_rows(rows, vocab))
    return "\n\n".join(out) + "\n"


_REFERENCES_HEADING = re.compile(
    r"^(?:[\dIVX]{1,4}\.?\s+)?(?:references?|bibliography|literature cited|works cited)\s*$", re.I
)


def guess_title(pages: list[PageText]) -> str | None:
    """The first page's largest type in its upper half (the title), when it stands out."""
    if not pages or not pages[0].segments:
        return None
    body = _body_size(pages)
    first = pages[0]
    top = [s for s in first.segments if s.bottom < 0.5 * first.height and len(s.text) > 1]
    if not top:
        return None
    size = max(s.size for s in top)
    if size < 1.3 * body:
        return None
    lines = sorted((s for s in top if abs(s.size - size) < 0.3), key=lambda s: (s.top, s.x0))
    title = lines[0].text
    for a, b in pairwise(lines):
        if b.top - a.bottom > 0.8 * size:
            break
        title = join_line_break(title, b.text)
    title = title.replace("\ufffe", "-").rstrip("*\u2217\u2020 ")
    return title if len(title) >= 8 else None


def _body_size(pages: list[PageText]) -> float:
    """The font size most characters are set in: the body text."""
    sizes: Counter = Counter()
    for page in pages:
        for s in page.segments:
            sizes[round(s.size * 2) / 2] += len(s.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _norm_key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.lower().split()))


def _drop_margins(pages: list[PageText], body: float) -> None:
    """Remove line-number rulers, the arXiv stamp, page numbers and running headers/footers."""
    # where the text block is: rulers stand outside it
    long_segs = [s for p in pages for s in p.segments if len(s.text) >= 15]
    if len(long_segs) > 1:
        x_min = statistics.quantiles([s.x0 for s in long_segs], n=50)[0]
        x_max = statistics.quantiles([s.x1 for s in long_segs], n=50)[-1]
    elif long_segs:
        x_min, x_max = long_segs[0].x0, long_segs[0].x1
    else:
        x_min, x_max = 0.0, max((p.width for p in pages), default=0.0)
    in_band: Counter = Counter()
    for p in pages:
        in_band.update({_norm_key(s.text) for s in p.segments if _in_band(s, p)})
    repeat_min = max(2, int(0.3 * len(pages)))
    for p in pages:
        kept = []
        for s in p.segments:
            t = s.text
            outside = s.x1 <= x_min + 1 or s.x0 >= x_max - 1
            if _BARE_INT.match(t) and outside:
                continue  # review-copy line number in the margin
            if _ARXIV_STAMP.search(t) and (outside or s.bottom - s.top > 3 * (s.x1 - s.x0)):
                continue
            if _in_band(s, p) and (_PAGE_NUMBER.match(t) or in_band[_norm_key(t)] >= repeat_min):
                continue
            kept.append(s)
        p.segments = kept


def _in_band(s: Segment, p: PageText) -> bool:
    return s.bottom <= BAND * p.height or s.top >= (1 - BAND) * p.height


def _gutter(page: PageText, known: float | None = None) -> float | None:
    """The x of a two-column page's gutter, or ``None`` for a one-column page.

    ``known`` is the gutter of the paper's other pages: it is accepted on this page with more
    text crossing it (up to a quarter of the segments, not a tenth), as long as both columns
    still hold a fair share of the rest.
    """
    segs = [s for s in page.segments if len(s.text) >= 3]
    if len(segs) < 8:
        return None
    x0 = np.array([s.x0 for s in segs])
    x1 = np.array([s.x1 for s in segs])
    if known is not None:
        if ((x0 < known - 1) & (x1 > known + 1)).sum() > 0.25 * len(segs):
            return None
        g = known
    else:
        xs = np.arange(0.3 * page.width, 0.7 * page.width, 1.0)
        crossing = ((x0[None, :] < xs[:, None] - 1) & (x1[None, :] > xs[:, None] + 1)).sum(axis=1)
        low = crossing.min()
        if low > 0.1 * len(segs):
            return None
        best = np.flatnonzero(crossing == low)
        # the longest run of equally empty x values; its middle is the gutter
        runs = np.split(best, np.flatnonzero(np.diff(best) > 1) + 1)
        run = max(runs, key=len)
        g = float(xs[run[len(run) // 2]])
    smaller_column = min(sum(s.x1 <= g for s in segs), sum(s.x0 >= g for s in segs))
    return g if smaller_column >= 0.2 * len(segs) else None


@dataclass(slots=True)
class _Chunk:
    """Rows read in one go (a column of a band, or a full-width band), with its column edges."""

    rows: list[_Row]
    left: float
    right: float


def _page_chunks(page: PageText, body: float, g: float | None) -> list[_Chunk]:
    """The page's rows in reading order, grouped by column (``g``: the gutter's x, if any)."""
    segs = sorted(page.segments, key=lambda s: (s.top, s.x0))
    if not segs:
        return []
    if g is None:
        rows = _drop_footnotes(_rows(segs), body)
        return [_Chunk(rows, *_edges(rows, body))]
    groups: list[tuple[str, list[Segment]]] = []  # ("L"|"R"|"S", segments)
    # a run of segments that cross the gutter is a full-width band; the others split in two
    for spans, run in groupby(segs, key=lambda s: s.x0 < g - 2 and s.x1 > g + 2):
        band = list(run)
        if spans:
            groups.append(("S", band))
        else:
            groups.append(("L", [s for s in band if (s.x0 + s.x1) / 2 < g]))
            groups.append(("R", [s for s in band if (s.x0 + s.x1) / 2 >= g]))
    rows_of = [(side, _rows(group)) for side, group in groups if group]
    # footnotes sit at the bottom of a column, under its last body-size row
    for side in ("L", "R"):
        last = max((k for k, (sd, _) in enumerate(rows_of) if sd == side), default=None)
        if last is not None:
            rows_of[last] = (side, _drop_footnotes(rows_of[last][1], body))
    edges = {}
    for side in ("L", "R", "S"):
        all_rows = [r for sd, rs in rows_of if sd == side for r in rs]
        edges[side] = _edges(all_rows, body) if all_rows else (0.0, page.width)
    edges["S"] = (min(edges["L"][0], edges["S"][0]), max(edges["R"][1], edges["S"][1]))
    return [_Chunk(rs, *edges[side]) for side, rs in rows_of if rs]


def _rows(segs: list[Segment]) -> list[_Row]:
    """Join segments on one baseline (a line with its super- and subscripts) into rows."""
    rows: list[list[Segment]] = []
    for s in sorted(segs, key=lambda s: (s.top, s.x0)):
        if rows:
            # the row's prose (its longest segment), not a tall math glyph that reaches into
            # the lines above and below
            main = max(rows[-1], key=lambda t: len(t.text))
            overlap = min(s.bottom, main.bottom) - max(s.top, main.top)
            if overlap >= 0.3 * min(s.bottom - s.top, main.bottom - main.top):
                rows[-1].append(s)  # same line, or a super- or subscript of it
                continue
        rows.append([s])
    out = []
    for group in rows:
        group.sort(key=lambda s: s.x0)
        main = max(group, key=lambda s: (s.size, len(s.text)))
        wide = any(b.x0 - a.x1 > 1.5 * max(a.size, b.size) for a, b in pairwise(group))
        out.append(
            _Row(
                text=" ".join(s.text for s in group),
                x0=group[0].x0,
                x1=max(s.x1 for s in group),
                top=min(s.top for s in group),
                bottom=max(s.bottom for s in group),
                size=main.size,
                bold=group[0].bold,
                wide_gap=wide,
            )
        )
    return out


def _drop_footnotes(rows: list[_Row], body: float) -> list[_Row]:
    """Drop the small-type rows under a column's last body-size row (footnotes, venue notes)."""
    body_rows = [k for k, r in enumerate(rows) if r.size >= 0.93 * body]
    return rows[: body_rows[-1] + 1] if body_rows else rows


def _edges(rows: list[_Row], body: float) -> tuple[float, float]:
    """A column's left and right text edges, from its body-size rows."""
    base = [r for r in rows if abs(r.size - body) < 0.6] or rows
    x0, x1 = [r.x0 for r in base], [r.x1 for r in base]
    if len(base) < 3:
        return min(x0), max(x1)
    return statistics.quantiles(x0, n=10)[0], statistics.quantiles(x1, n=10)[-1]


def _line_pitch(chunks: list[_Chunk], body: float) -> float:
    """Baseline-to-baseline distance of body text, for telling paragraph gaps apart."""
    steps = [
        b.top - a.top
        for c in chunks
        for a, b in pairwise(c.rows)
        if abs(a.size - body) < 0.6
        and abs(b.size - body) < 0.6
        and 0.8 * body < b.top - a.top < 2.5 * body
    ]
    return statistics.median(steps) if steps else 1.2 * body


def _letters_ratio(text: str) -> float:
    nonspace = len(text) - text.count(" ")
    return sum(ch.isalpha() for ch in text) / nonspace if nonspace else 0.0


_BULLET = re.compile(
    r"^(?:[\u2022\u25e6\u25aa\u2023\u2013\u2219\u00b7\u2217*]|\(?[a-z0-9]{1,2}\))\s"
)
_EQ_NUMBER = re.compile(r"\(\d{1,3}[a-z]?\)$")
# numeric citations, also cut by a line break ("[31, 32," / "33], and [34]."): words, not symbols
_NUM_CITATION = re.compile(r"\[[\d,;\s\u2013-]*\]?|\b[\d,\s\u2013-]*\d\]")


def _is_heading(r: _Row, c: _Chunk, body: float) -> bool:
    t = r.text.strip()
    if not t or len(t) > 90 or len(t.split()) > 12 or _CAPTION_START.match(t):
        return False
    if _KNOWN_HEADINGS.match(t.rstrip(".: ")):
        return True
    if t[-1] in ".,;:" and not re.fullmatch(r"[\dA-Z.]+\.", t.split()[0] + "." * (t[-1] != ".")):
        return False
    if t[-1] in ",;" or _letters_ratio(t) < 0.4:
        return False
    numbered = _HEADING_NUM.match(t)
    words = t.split()
    head_words = words[1:] if numbered else words
    if not head_words or not head_words[0][:1].isupper():
        return False
    emphasized = r.bold or r.size > 1.1 * body
    if numbered:
        return emphasized or r.x1 - r.x0 < 0.7 * (c.right - c.left)
    return emphasized and bool(categorize(t) != "other" or r.x1 - r.x0 < 0.7 * (c.right - c.left))


def _continues_heading(head: _Row, r: _Row) -> bool:
    """A wrapped heading's next line: same type, right under it, not left of it."""
    return (
        abs(r.size - head.size) < 0.3
        and r.bold == head.bold
        # baseline to baseline, as loose glyph boxes of consecutive lines may overlap
        and 0.5 * head.size < r.top - head.top < 1.8 * head.size
        and r.x0 >= head.x0 - 1
        and not _HEADING_NUM.match(r.text)
    )


def _runs_on(r: _Row, nxt: _Row) -> bool:
    """The row's sentence goes on in plain type on the next line: body text, not a heading.

    A run-in heading ("**Model.** The input token representations are" / "passed through
    ...") starts its paragraph's first line in bold; a heading wrapped over two lines goes
    on in its own type instead.
    """
    return (
        (nxt.text[:1].islower() or nxt.text[:1] == "(")
        and 0 < nxt.top - r.top < 2 * r.size
        and (nxt.bold != r.bold or abs(nxt.size - r.size) >= 0.3)
    )


def _is_display(r: _Row, c: _Chunk) -> bool:
    """Display material: equations, table rows, centred or mostly-symbol lines."""
    if r.wide_gap or _letters_ratio(_NUM_CITATION.sub("cit", r.text)) < 0.5:
        return True
    em = r.size
    centred = r.x0 - c.left > 3 * em and c.right - r.x1 > 3 * em
    return centred or (_EQ_NUMBER.search(r.text) is not None and r.x0 - c.left > 2 * em)


def _paragraphs(chunks: list[_Chunk], body: float, pitch: float) -> list[tuple[str, list[str]]]:
    """Blocks in reading order: ("para", rows), ("heading", [text]) or ("break", [])."""
    blocks: list[tuple[str, list[str]]] = []
    para: list[str] = []
    prev: _Row | None = None
    prev_chunk: _Chunk | None = None

    def end(kind: str | None = None, text: str = "") -> None:
        nonlocal para
        if para:
            blocks.append(("para", para))
            para = []
        if kind == "heading":
            blocks.append(("heading", [text]))
        elif kind == _BREAK and blocks and blocks[-1][0] != _BREAK:
            blocks.append((_BREAK, []))

    para_right = 0.0  # right edge of the paragraph so far: an abstract is narrower
    head: _Row | None = None  # the last heading row, while a wrapped heading may go on
    for c in chunks:
        for k, r in enumerate(c.rows):
            if r.size < 0.85 * body and len(r.text) < 8:
                continue  # a stray sub- or superscript under its line: not a break
            runs_on = k + 1 < len(c.rows) and _runs_on(r, c.rows[k + 1])
            if head is not None and not runs_on and _continues_heading(head, r):
                title = blocks[-1][1]
                title[0] = join_line_break(title[0], r.text)
                head = r
                continue
            head = None
            if not runs_on and _is_heading(r, c, body):
                end("heading", r.text)
                head = r
                prev = None
                continue
            if _is_display(r, c):
                end(_BREAK)
                prev = None
                continue
            em = r.size
            if prev is None:
                new = True
            else:
                pc = prev_chunk or c
                right = para_right if len(para) > 1 and pc is c else pc.right
                prev_short = right - prev.x1 > 1.5 * em
                ends_sentence = prev.text.rstrip()[-1:] in _TERMINAL
                if pc is not c:  # first row of a new column or page
                    indented = r.x0 - c.left > 0.6 * em
                    new = indented or (prev_short and ends_sentence) or abs(r.size - prev.size) > 1
                else:
                    indented = r.x0 - prev.x0 > 0.6 * em
                    new = (
                        r.top - prev.top > 1.35 * pitch
                        or (prev_short and ends_sentence)
                        or (indented and (prev_short or ends_sentence))
                        or abs(r.size - prev.size) > 1
                    )
                new = new or bool(_BULLET.match(r.text))
            if new:
                end()
                para_right = 0.0
            para.append(r.text)
            para_right = max(para_right, r.x1)
            prev, prev_chunk = r, c
    end()
    return blocks


def _join_rows(rows: list[str], vocab: Vocabulary) -> str:
    out = rows[0]
    for nxt in rows[1:]:
        out = join_line_break(out, nxt, vocab)
    return out.replace("\ufffe", "-")
