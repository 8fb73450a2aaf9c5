"""The plaintext folder reader: one paper per .txt/.md file, id = relative path."""

from __future__ import annotations

import pytest

from ratio.core.io import InputError
from ratio.corpus.readers import DropReport, get_reader, iter_papers


def _corpus(tmp_path):
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "a.txt").write_text(
        "Transformers are widely used.\nThey scale\n  well.\n\n\nHowever, they are costly.\n",
        encoding="utf-8",
    )
    (root / "sub" / "b.txt").write_text("One paragraph only.", encoding="utf-8")
    (root / "empty.txt").write_text("\n \n", encoding="utf-8")
    (root / "bad.txt").write_bytes(b"Fine line.\nBroken \xff byte.\n")
    (root / ".git" / "x.txt").write_text("hidden", encoding="utf-8")
    (root / "notes.csv").write_text("a,b", encoding="utf-8")
    return root


def test_folder_of_txt_files(tmp_path):
    root = _corpus(tmp_path)
    report = DropReport()
    papers = list(iter_papers([root], "plaintext", report))
    assert [p.id for p in papers] == ["a", "sub/b"]
    a = papers[0]
    assert (a.title, a.year, a.markup, a.source) == (None, None, "plain", str(root / "a.txt"))
    assert [(s.heading, s.paragraphs) for s in a.sections] == [
        ("", ["Transformers are widely used. They scale well.", "However, they are costly."])
    ]
    assert dict(report.counts) == {"empty_paper": 1, "invalid_utf8": 1}
    assert f"{root / 'bad.txt'}:2: invalid UTF-8 at byte 7" in report.messages
    assert any(
        m.startswith(f"{root / 'empty.txt'}: paper 'empty' has no text") for m in report.messages
    )


def test_strict_mode_stops_at_the_first_bad_file(tmp_path):
    root = _corpus(tmp_path)
    with pytest.raises(InputError) as e:
        list(iter_papers([root], "plaintext", DropReport(strict=True)))
    assert e.value.kind == "invalid_utf8"  # bad.txt sorts first


def test_single_file_and_missing_path(tmp_path):
    root = _corpus(tmp_path)
    [paper] = list(iter_papers([root / "sub" / "b.txt"], "plaintext"))
    assert paper.id == "b"
    with pytest.raises(InputError) as e:
        list(get_reader("plaintext").fn(tmp_path / "nowhere", DropReport()))
    assert e.value.kind == "missing_file"


def test_markdown_files_use_the_markdown_parser(tmp_path):
    pytest.importorskip("ratio.corpus.text.markdown")
    root = tmp_path / "md"
    root.mkdir()
    (root / "paper.md").write_text(
        "# A Study of Things\n\n## Introduction\n\nWe study things in detail here. "
        "They matter a great deal for everyone.\n\n## Method\n\nWe measure the things carefully. "
        "However, the measurements are noisy.\n",
        encoding="utf-8",
    )
    [paper] = list(iter_papers([root], "plaintext"))
    assert paper.id == "paper" and paper.markup == "markdown"
    headings = [s.heading for s in paper.sections]
    assert "Introduction" in headings and "Method" in headings
    text = " ".join(p for s in paper.sections for p in s.paragraphs)
    assert "However, the measurements are noisy." in text


def test_markdown_with_plain_line_headings_keeps_every_paragraph(tmp_path):
    """The issue's case: section titles as plain lines, no '#', one hyphen-broken line."""
    root = tmp_path / "md"
    root.mkdir()
    (root / "streams.md").write_text(
        "A Study of Streams\n\nIntroduction\n\nWe study time-\nsynchronized streams of sensor "
        "data in this paper. They matter for everyone who works with sensors.\n\nResults\n\n"
        "Our method improves accuracy by ten points. However, it is slower on long inputs.\n",
        encoding="utf-8",
    )
    report = DropReport()
    [paper] = list(iter_papers([root], "plaintext", report))
    assert [(s.heading, s.category) for s in paper.sections] == [
        ("Introduction", "introduction"),
        ("Results", "results"),
    ]
    assert paper.sections[0].paragraphs[0].startswith("We study time-synchronized streams")
    assert paper.sections[1].paragraphs == [
        "Our method improves accuracy by ten points. However, it is slower on long inputs."
    ]
    assert dict(report.counts) == {"front_matter": 1}  # the title line, with its reason


def test_txt_structure_and_drop_reasons_reach_the_report(tmp_path):
    root = tmp_path / "txt"
    root.mkdir()
    (root / "p.txt").write_text(
        "A Title Line\nJane Doe\nAbstract\nWe present a fully auto-\nmatic method for things.\n"
        "1 Introduction\nThe most appro- priate senses are found by the method.\n"
        "References\nDoe, J. 2001. A paper. In Proceedings of ACL, pages 1-8.\n",
        encoding="utf-8",
    )
    report = DropReport()
    [paper] = list(iter_papers([root], "plaintext", report))
    assert [s.heading for s in paper.sections] == ["Abstract", "Introduction"]
    text = " ".join(p for s in paper.sections for p in s.paragraphs)
    assert "fully automatic method" in text and "most appropriate senses" in text
    assert "Doe, J." not in text and "Jane Doe" not in text
    assert report.counts["references_section"] == 1 and report.counts["front_matter"] == 2
    assert "hyphen_joined" not in report.counts  # repairs are not drops
