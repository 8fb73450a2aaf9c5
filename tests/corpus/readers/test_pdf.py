"""The PDF reader on real LaTeX-typeset papers and on bad files (tests/data/pdf/README.md)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ratio.core.io import InputError
from ratio.corpus.readers import DropReport, get_reader, iter_papers, list_inputs
from ratio.corpus.readers import pdf as pdf_reader
from ratio.corpus.readers.pdf import pdfium_pages, read_pdf_file
from ratio.corpus.text.clean import clean_inline
from ratio.corpus.text.hyphens import Vocabulary, join_line_break
from ratio.corpus.text.segment import segment

pytest.importorskip("pypdfium2")

DATA = Path(__file__).resolve().parents[2] / "data" / "pdf"
# a real ACL Anthology PDF as its authors' LaTeX made it (tests/data/own_corpus/README.md)
ACL_PDF = Path(__file__).resolve().parents[2] / "data" / "own_corpus" / "papers" / "N18-3011.pdf"
GOOD = ("onecol", "twocol")
BAD = {"corrupt": "corrupt_pdf", "encrypted": "encrypted_pdf", "scanned": "no_text_layer"}


def _truth(name: str) -> dict:
    """What LaTeX typeset; the acknowledgements are left out, as the reader leaves them out."""
    truth = json.loads((DATA / f"{name}.truth.json").read_text(encoding="utf-8"))
    truth["sections"] = [s for s in truth["sections"] if not s["heading"].startswith("Acknowledg")]
    return truth


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z]{3,}", text.lower()))


def _plain(text: str) -> str:
    """LaTeX typesets ' and ` as curly quotes; compare text without the difference."""
    return clean_inline(text, "plain").translate(
        str.maketrans("\u2019\u2018\u201c\u201d", "''\"\"")
    )


def _sentences(paragraphs: list[str]) -> list[str]:
    return [s for p in paragraphs for s in segment(_plain(p)) if len(_words(s)) >= 5]


@pytest.fixture(scope="module")
def read() -> tuple[dict, DropReport]:
    report = DropReport()
    papers = {p.id: p for p in iter_papers([DATA], "pdf", report)}
    return papers, report


def test_registered_as_pdf_reading_folders():
    reader = get_reader("pdf")
    assert reader.suffixes == (".pdf",) and reader.folder
    assert list_inputs([DATA], "pdf") == [DATA]


def test_bad_files_are_reported_by_name_and_the_rest_is_read(read):
    papers, report = read
    assert sorted(papers) == sorted(GOOD)
    assert report.counts == Counter(BAD.values())
    for name in BAD:
        (msg,) = [m for m in report.messages if m.startswith(str(DATA / f"{name}.pdf"))]
        assert msg.split(": ", 1)[1]  # a reason follows the file name
    assert any("password" in m for m in report.messages)
    assert any("no text layer" in m and "OCR" in m for m in report.messages)


@pytest.mark.parametrize("name,kind", sorted(BAD.items()))
def test_strict_raises_on_a_bad_file(tmp_path, name, kind):
    shutil.copy(DATA / f"{name}.pdf", tmp_path / f"{name}.pdf")
    with pytest.raises(InputError) as err:
        list(iter_papers([tmp_path], "pdf", DropReport(strict=True)))
    assert err.value.kind == kind and err.value.source == str(tmp_path / f"{name}.pdf")


@pytest.mark.parametrize("name", GOOD)
def test_sentences_match_the_typeset_text(read, name):
    """Sentence-level precision and recall against what LaTeX typeset (same splitter)."""
    papers, _ = read
    truth = _truth(name)
    gold = _sentences([truth["abstract"]] + [p for s in truth["sections"] for p in s["paragraphs"]])
    got = _sentences([p for s in papers[name].sections for p in s.paragraphs])
    gold_keys = Counter(" ".join(sorted(_words(s))) for s in gold)
    got_keys = Counter(" ".join(sorted(_words(s))) for s in got)
    matched = sum((gold_keys & got_keys).values())
    assert matched / len(got) >= 0.9, "precision"
    assert matched / len(gold) >= 0.9, "recall"


@pytest.mark.parametrize("name", GOOD)
def test_reading_order_follows_the_columns(read, name):
    """Every true paragraph's first sentence is found, in the order the paper has them."""
    papers, _ = read
    text = " ".join(_plain(p) for s in papers[name].sections for p in s.paragraphs)
    positions = []
    for sec in _truth(name)["sections"]:
        for para in sec["paragraphs"]:
            first = segment(_plain(para))[0]
            if len(first) > 60:
                at = text.find(first[:60])
                assert at >= 0, first[:60]
                positions.append(at)
    assert positions == sorted(positions) and len(positions) >= 20


@pytest.mark.parametrize("name", GOOD)
def test_sections_and_title_come_from_the_layout(read, name):
    papers, _ = read
    truth = _truth(name)
    paper = papers[name]
    assert paper.title == truth["title"]
    headings = [s.heading for s in paper.sections]
    assert headings[0] == "Abstract"
    assert headings[1:] == [s["heading"] for s in truth["sections"]]


@pytest.mark.parametrize("name", GOOD)
def test_references_headers_footers_and_footnotes_are_cut(read, name):
    papers, _ = read
    truth = _truth(name)
    text = "\n".join(p for s in papers[name].sections for p in s.paragraphs)
    assert not any(s.heading.lower() == "references" for s in papers[name].sections)
    assert len(truth["references"]) >= 20
    for ref in truth["references"]:
        assert ref not in text
    assert truth["header"] not in text and "Preprint" not in text  # running header
    assert "typeset with" not in text  # the title footnote
    assert not re.search(r"(?m)^\d{1,2}$", text)  # page numbers
    assert "\ufffe" not in text


@pytest.mark.parametrize("name", GOOD)
def test_line_break_hyphens_are_repaired(read, name):
    """Words TeX broke at a line end come out whole: every word read is one LaTeX typeset."""
    papers, _ = read
    pages, _ = pdfium_pages(DATA / f"{name}.pdf")
    breaks = sum(s.text.endswith("\ufffe") for p in pages for s in p.segments)
    assert breaks >= 10  # the samples do exercise it
    truth = _truth(name)
    word = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
    true_words = {
        w.lower()
        for w in word.findall(
            _plain(
                " ".join(p for s in truth["sections"] for p in s["paragraphs"])
                + " "
                + truth["abstract"]
            )
        )
    }
    got = word.findall(" ".join(_plain(p) for s in papers[name].sections for p in s.paragraphs))
    unknown = [w for w in got if w.lower() not in true_words]
    assert len(unknown) <= 0.002 * len(got), unknown


def test_join_line_break_uses_the_papers_vocabulary():
    vocab = Vocabulary("a representation and the state-of-the-art")
    assert join_line_break("a represen-", "tation of", vocab) == "a representation of"
    assert join_line_break("a represen\ufffe", "tation", vocab) == "a representation"
    assert join_line_break("the state-of-the-", "art model", vocab) == "the state-of-the-art model"
    assert join_line_break("a part-", "of-speech tagger", vocab) == "a part-of-speech tagger"
    assert join_line_break("GEC\ufffe", "specific metric", vocab) == "GEC-specific metric"
    assert join_line_break("see Smith-", "Jones", vocab) == "see Smith-Jones"
    assert join_line_break("pre-", "and post-processing") == "pre- and post-processing"
    assert join_line_break("end of line", "next", vocab) == "end of line next"
    assert join_line_break("self-", "attention", Vocabulary("self-attention")) == "self-attention"


def test_a_real_acl_pdf_cuts_run_in_headings_and_reads_page_one_in_column_order():
    """N18-3011: bold run-in headings ("Model. The input ...") open paragraphs, not sections,
    and are cut from them (``ratio.corpus.text.runin``); page 1's title and author block cross
    the gutter, its columns are still read in order."""
    report = DropReport()
    paper = read_pdf_file(ACL_PDF, "N18-3011", report)
    assert paper is not None and not report.messages
    assert paper.title == "Construction of the Literature Graph in Semantic Scholar"
    assert [s.heading for s in paper.sections] == [
        "Abstract",
        "Introduction",
        "Structure of The Literature Graph",
        "Node Types",
        "Edge Types",
        "Extracting Metadata",
        "Entity Extraction and Linking",
        "Approaches",
        "Entity Extraction Models",
        "Knowledge Bases",
        "Entity Linking Models",
        "Other Research Problems",
        "Conclusion and Future Work",
    ]
    text = {s.heading: " ".join(s.paragraphs) for s in paper.sections}
    assert text["Introduction"].startswith(
        "The goal of this work is to facilitate algorithmic discovery in the scientific "
        "literature. Despite notable advances in scientific search engines, data mining"
    )
    paragraphs = {s.heading: s.paragraphs for s in paper.sections}
    assert any(
        p.startswith("We obtain metadata and PDF files of papers via")
        for p in paragraphs["Node Types"]
    )
    assert any(
        p.startswith("We used two datasets: i) a biomedical dataset")
        for p in paragraphs["Entity Linking Models"]
    )
    assert any(
        p.startswith("The input token representations are passed through")
        for p in paragraphs["Extracting Metadata"]
    )
    assert "Papers. We obtain" not in text["Node Types"]


def test_characters_outside_the_bmp_keep_their_place():
    """PDFium gives one index per UTF-16 unit: a pair is one character, the next index empty."""
    math_x = [0xD835, 0xDC65]  # U+1D465 MATHEMATICAL ITALIC SMALL X
    assert pdf_reader._indexed_chars([ord("a"), *math_x, ord("b")]) == ["a", "\U0001d465", "", "b"]
    assert pdf_reader._indexed_chars([0xDC65, ord("a"), 0xD835]) == ["\ufffd", "a", "\ufffd"]


def test_a_pdf_the_reader_fails_on_is_reported_and_the_rest_is_read(tmp_path, monkeypatch):
    for name in GOOD:
        shutil.copy(DATA / f"{name}.pdf", tmp_path)
    layout = pdf_reader.layout_markdown

    def fail_on_onecol(pages):
        if any("FieldView" in s.text for p in pages for s in p.segments):
            raise ValueError("odd page tree")
        return layout(pages)

    monkeypatch.setattr(pdf_reader, "layout_markdown", fail_on_onecol)
    report = DropReport()
    assert [p.id for p in iter_papers([tmp_path], "pdf", report)] == ["twocol"]
    assert report.counts == {"unreadable_pdf": 1}
    assert report.messages[0].startswith(f"{tmp_path / 'onecol.pdf'}: the PDF reader failed on it")
    assert "odd page tree" in report.messages[0]
    with pytest.raises(InputError, match="onecol.pdf: the PDF reader failed"):
        list(iter_papers([tmp_path], "pdf", DropReport(strict=True)))


def _scaled_font_pdf(lines: list[str], scale: float = 10.0) -> bytes:
    """A one-page PDF whose text is set in a 1-point Helvetica scaled up by the text matrix."""
    ops = ["BT", "/F1 1 Tf"]
    for k, line in enumerate(lines):
        esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops.append(f"{scale} 0 0 {scale} 72 {720 - k * 1.2 * scale:.1f} Tm ({esc}) Tj")
    ops.append("ET")
    stream = "\n".join(ops).encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_a_one_point_font_scaled_by_the_text_matrix_reads_as_prose(tmp_path):
    """Some PDF tools set text in a 1 pt font scaled up by the text matrix; PDFium reports
    1 pt, and a word space would look like a column gap (a real one-page excerpt of the
    SciBERT paper came out empty). The glyph box's height stands in for the size."""
    lines = [
        "Introduction",
        "",
        "We read papers whose text is set in a one point font that the text",
        "matrix scales up to the size it is printed at, as some PDF tools write it.",
        "The reader must still see words, lines and paragraphs in such a file.",
    ]
    path = tmp_path / "scaled.pdf"
    path.write_bytes(_scaled_font_pdf(lines))
    pages, _ = pdfium_pages(path)
    assert all(s.size > 5 for s in pages[0].segments)
    report = DropReport()
    paper = read_pdf_file(path, "scaled", report)
    assert paper is not None and not report.messages
    assert [(s.heading, s.paragraphs) for s in paper.sections] == [
        ("Introduction", [" ".join(lines[2:])])
    ]
