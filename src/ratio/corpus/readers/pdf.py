"""Reader for PDF papers: a folder of ``.pdf`` files (or one), one paper per file.

Text comes from PDFium through ``pypdfium2`` (Apache-2.0/BSD-3-Clause): on the papers of
``benchmarks/pdf.py`` it was both the fastest of the libraries compared and the most accurate
once our layout pass runs on its character boxes (numbers in ``docs/pdf.md``). PyMuPDF would
also do, but it is AGPL, so it is not shipped.

PDFium's own line breaks give lines; a line is cut again into segments wherever two glyphs sit
more than ``GAP_EM`` font sizes apart, so a margin line number, the other column or a table
cell never joins a line of prose. ``ratio.corpus.readers.pdf_layout`` rebuilds paragraphs, headings
and reading order from the segments and writes Markdown for ``parse_markdown``.

Bad files never stop the corpus: an encrypted, corrupt or image-only PDF is reported (by file,
with the reason) through the ``DropReport`` and the other files are read.
"""

from __future__ import annotations

import ctypes
import re
import statistics
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ratio.core.io import InputError, RatioError
from ratio.core.records import Paper
from ratio.corpus.readers._common import folder_papers
from ratio.corpus.readers.base import DropReport, register_reader
from ratio.corpus.readers.pdf_layout import PageText, Segment, guess_title, layout_markdown
from ratio.corpus.text.markdown import parse_markdown

SUFFIXES: tuple[str, ...] = (".pdf",)

GAP_EM = 1.0  # a horizontal gap wider than this many font sizes cuts a line into segments
MIN_FONT_SIZE = 3.0  # below this, PDFium's font size is not the printed size (see _page_segments)
MIN_CHARS_PER_PAGE = 20  # fewer text characters than this on average: no text layer

_LIGATURES = str.maketrans(
    {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}
)
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi|cmbx|cmb\d|-bd|bdit|medi", re.I)


@register_reader("pdf", suffixes=SUFFIXES, folder=True)
def read_pdf(path: Path, report: DropReport) -> Iterator[Paper]:
    """A folder of .pdf papers (or one .pdf); text and reading order rebuilt from the layout."""
    return folder_papers(path, SUFFIXES, read_pdf_file, report)


def read_pdf_file(file: Path, pid: str, report: DropReport) -> Paper | None:
    """One PDF as a ``Paper``, or ``None`` after reporting why it cannot be read."""
    try:
        pages, title = pdfium_pages(file)
        sections = parse_markdown(layout_markdown(pages), extractor="pdf")
    except InputError as e:
        report.skip(e)
        return None
    except RatioError:
        raise  # not this file's fault (pypdfium2 missing)
    except Exception as e:  # noqa: BLE001 - one odd PDF must not fail its whole folder's shard
        report.reject(file, None, f"the PDF reader failed on it ({e!r})", "unreadable_pdf")
        return None
    # no year: a PDF's dates are when it was made, not when the paper appeared
    return Paper(pid, title, None, sections, source=str(file))


def _pdfium():
    """pypdfium2 and its raw API; an optional dependency (``pip install 'ratio-ir[pdf]'``)."""
    try:
        import pypdfium2
        import pypdfium2.raw
    except ImportError:
        raise RatioError("the pdf format needs pypdfium2: pip install 'ratio-ir[pdf]'") from None
    return pypdfium2, pypdfium2.raw


def _open(file: Path):
    pdfium, _ = _pdfium()
    try:
        return pdfium.PdfDocument(str(file))
    except pdfium.PdfiumError as e:
        msg = str(e)
        if "password" in msg.lower():
            raise InputError(
                file, None, "encrypted PDF: it needs a password to open", "encrypted_pdf"
            ) from None
        if "file access" in msg.lower():  # PDFium could not open or read the file itself
            raise InputError(file, None, f"cannot read: {msg}", "unreadable_file") from None
        raise InputError(file, None, f"not a readable PDF ({msg})", "corrupt_pdf") from None
    except OSError as e:
        raise InputError(file, None, f"cannot read: {e.strerror or e}", "unreadable_file") from e


def pdfium_pages(file: Path) -> tuple[list[PageText], str | None]:
    """Segments of every page, and the title (the document info's, else page 1's largest type).

    Raises ``InputError`` for a file PDFium cannot open (corrupt, encrypted) and for one
    without a text layer (scanned or image-only pages), so the caller reports it by name.
    """
    pdfium, pdfium_c = _pdfium()
    doc = _open(file)
    try:
        pages: list[PageText] = []
        n_chars = n_images = 0
        for index in range(len(doc)):
            try:
                page = doc[index]
            except pdfium.PdfiumError as e:
                raise InputError(
                    file, None, f"page {index + 1} cannot be read ({e})", "corrupt_pdf"
                ) from None
            try:
                text_page = page.get_textpage()
                try:
                    pt, chars = _page_segments(page, text_page, pdfium_c)
                finally:
                    text_page.close()
                if chars < MIN_CHARS_PER_PAGE:
                    n_images += any(
                        True for _ in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,))
                    )
            finally:
                page.close()
            n_chars += chars
            pages.append(pt)
        if not pages:
            raise InputError(file, None, "the PDF has no pages", "empty_paper")
        if n_chars < MIN_CHARS_PER_PAGE * len(pages):
            reason = (
                "no text layer: the pages are images (a scan?); run OCR on it first"
                if n_images
                else "no text layer: the PDF holds no extractable text"
            )
            raise InputError(file, None, reason, "no_text_layer")
        title = _clean_title(doc.get_metadata_value("Title")) or guess_title(pages)
    finally:
        doc.close()
    return pages, title


def _clean_title(title: str | None) -> str | None:
    """The info-dictionary title, unless it is a file name or a template's placeholder."""
    if not title:
        return None
    t = " ".join(title.split())
    if len(t) < 8 or re.search(r"\.(?:dvi|tex|pdf|docx?)$|^untitled|^microsoft word", t, re.I):
        return None
    return t


def _font_name(pdfium_c, text_page, index: int) -> str:
    buf = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    n = pdfium_c.FPDFText_GetFontInfo(text_page, index, buf, 128, ctypes.byref(flags))
    return buf.raw[: max(n - 1, 0)].decode("utf-8", "replace") if n else ""


def _page_segments(page, text_page, pdfium_c) -> tuple[PageText, int]:
    """Segments of one page from PDFium's characters; also the count of text characters."""
    width, height = page.get_size()
    out = PageText(width, height)
    raw_tp = text_page.raw
    count = text_page.count_chars()
    if count <= 0:
        return out, 0
    text: str | list[str] = text_page.get_text_range()
    if len(text) != count:  # text and char indices must line up; rebuild them one by one
        text = _indexed_chars([pdfium_c.FPDFText_GetUnicode(raw_tp, i) for i in range(count)])
    box = pdfium_c.FS_RECTF()
    n_text = 0
    # char, x0, x1, top, bottom, size, PDFium index
    cur: list[tuple[str, float, float, float, float, float, int]] = []
    rotated = False

    def flush() -> None:
        if cur and not rotated:
            for seg, first in _split_gaps(cur):
                seg.bold = bool(_BOLD_FONT.search(_font_name(pdfium_c, raw_tp, first)))
                out.segments.append(seg)
        cur.clear()

    for i, ch in enumerate(text):
        if not ch:
            continue  # the second half of a surrogate pair, already joined to the first
        if ch in "\r\n":
            flush()
            continue
        if ch == " " or ch == "\t":
            if cur:
                last = cur[-1]
                cur.append((" ", last[2], last[2], last[3], last[4], last[5], i))
            continue
        if not pdfium_c.FPDFText_GetLooseCharBox(raw_tp, i, box):
            continue
        size = pdfium_c.FPDFText_GetFontSize(raw_tp, i)
        if size < MIN_FONT_SIZE:
            # a 1-point font scaled up by the text matrix (PDFium reports the font's own
            # size): the glyph box's height stands in, or every word gap looks like a column
            size = max(box.top - box.bottom, size)
        if not cur:
            # the arXiv identifier stamp and other sideways text run up the margin
            rotated = abs(pdfium_c.FPDFText_GetCharAngle(raw_tp, i)) > 0.1
        if pdfium_c.FPDFText_IsHyphen(raw_tp, i):
            ch = "\ufffe"
        n_text += 1
        cur.append((ch, box.left, box.right, height - box.top, height - box.bottom, size, i))
    flush()
    return out, n_text


def _indexed_chars(units: list[int]) -> list[str]:
    """One string per PDFium character index, from the UTF-16 code units PDFium returns.

    A character outside the Basic Multilingual Plane (the math italic of a formula, 𝑥) takes
    two indices, one per surrogate: the pair is joined at the first index and the second is
    left empty, so indices still line up with the character boxes. A lone surrogate, which
    Parquet cannot store as UTF-8, becomes U+FFFD.
    """
    out: list[str] = []
    for k, u in enumerate(units):
        if 0xDC00 <= u <= 0xDFFF and out and out[-1] and ord(out[-1]) > 0xFFFF:
            out.append("")
        elif 0xD800 <= u <= 0xDBFF and k + 1 < len(units) and 0xDC00 <= units[k + 1] <= 0xDFFF:
            out.append(chr(0x10000 + ((u - 0xD800) << 10) + (units[k + 1] - 0xDC00)))
        elif 0xD800 <= u <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(chr(u))
    return out


def _split_gaps(
    chars: list[tuple[str, float, float, float, float, float, int]],
) -> list[tuple[Segment, int]]:
    """Cut one PDFium line wherever two glyphs are more than ``GAP_EM`` font sizes apart.

    Returns each segment with the PDFium index of its first glyph (for its font).
    """
    segs: list[tuple[Segment, int]] = []
    start = 0
    for k in range(1, len(chars) + 1):
        if k < len(chars):
            ch, x0 = chars[k][0], chars[k][1]
            if ch == " ":
                continue
            prev = k - 1
            while prev > start and chars[prev][0] == " ":
                prev -= 1
            size = max(chars[prev][5], chars[k][5], 1.0)
            if x0 - chars[prev][2] <= GAP_EM * size and x0 >= chars[prev][1] - size:
                continue
        piece = chars[start:k]
        start = k
        glyphs = [c for c in piece if c[0] != " "]
        if not glyphs:
            continue
        seg = Segment(
            text=" ".join("".join(c[0] for c in piece).translate(_LIGATURES).split()),
            x0=min(c[1] for c in glyphs),
            x1=max(c[2] for c in glyphs),
            # the typical glyph's extent: one tall math glyph must not stretch the line
            top=statistics.median_low([c[3] for c in glyphs]),
            bottom=statistics.median_high([c[4] for c in glyphs]),
            size=Counter(round(c[5], 1) for c in glyphs).most_common(1)[0][0],
        )
        segs.append((seg, glyphs[0][6]))
    return segs
