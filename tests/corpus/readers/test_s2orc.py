"""The classic S2ORC reader on the real example paper and on the other S2ORC layouts."""

from __future__ import annotations

import gzip
import json

import zstandard

from ratio.corpus.readers import DropReport, iter_papers


def _read(paths, report=None):
    return list(iter_papers(paths, "s2orc", report if report is not None else DropReport()))


def test_real_example_paper(s2orc_example):
    raw = json.loads(s2orc_example.read_text(encoding="utf-8"))
    [paper] = _read([s2orc_example])
    assert paper.id == "15772371"
    assert (
        paper.title
        == "Artificial diets for rearing the Colorado potato beetle, Leptinotarsa decemlineata"
    )
    assert (paper.year, paper.venue, paper.line, paper.source) == (
        2001,
        "Journal of Insect Science",
        1,
        str(s2orc_example),
    )
    assert paper.markup == "plain"
    abstract, body = paper.sections
    assert abstract.heading == "Abstract"
    # GROBID glues the label to the first word ("AbstractColorado"); the reader strips it
    assert abstract.paragraphs[0].startswith(
        "Colorado potato beetles have been reared successfully"
    )
    assert body.heading == ""  # this parse has no section names
    assert body.category == "other" and not body.is_appendix
    assert body.paragraphs == [p["text"].strip() for p in raw["grobid_parse"]["body_text"]]
    assert "(Schalk and Stoner, 1979;" in body.paragraphs[0]  # citations stay for ratio.corpus.text


def test_jsonl_gz_and_zst_of_real_records(tmp_path, s2orc_example):
    rec = json.loads(s2orc_example.read_text(encoding="utf-8"))
    other = dict(rec, paper_id="other")
    data = (json.dumps(rec) + "\n" + json.dumps(other) + "\n").encode()
    gz = tmp_path / "shard.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    zst = tmp_path / "shard.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(data))
    [single] = _read([s2orc_example])
    for path in (gz, zst):
        papers = _read([path])
        assert [p.id for p in papers] == ["15772371", "other"]
        assert [p.line for p in papers] == [1, 2]
        assert papers[0].sections == single.sections


def test_json_file_holding_a_list_of_papers(tmp_path):
    recs = [
        {"paper_id": "a", "body_text": [{"text": "First paper text.", "section": "Intro"}]},
        {"paper_id": "b", "body_text": [{"text": "Second paper text.", "section": "Intro"}]},
    ]
    path = tmp_path / "papers.json"
    path.write_text(json.dumps(recs, indent=2), encoding="utf-8")
    assert [(p.id, p.line) for p in _read([path])] == [("a", 1), ("b", 2)]


def test_pdf_parse_layout_groups_sections_and_marks_appendices(tmp_path, s2orc_example):
    real = json.loads(s2orc_example.read_text(encoding="utf-8"))["grobid_parse"]["body_text"]
    rec = {
        "paper_id": "77",
        "metadata": {"title": "  A   title\n", "year": "1999", "venue": None, "journal": "J. Ins."},
        "abstract": "Abstract: A short abstract.",
        "pdf_parse": {
            "abstract": [],
            "body_text": [
                {"text": real[0]["text"], "section": "Introduction", "sec_num": "1"},
                {"text": real[1]["text"], "section": "Introduction", "sec_num": "1"},
                {"text": real[2]["text"], "section": "Methods", "sec_num": "2"},
                {
                    "text": "Line one of a wrapped\nparagraph.",
                    "section": "Methods",
                    "sec_num": "2.1",
                },
                {"text": real[3]["text"], "section": "Extra tables", "sec_num": "A"},
                {"text": 12, "section": "junk"},
            ],
            "back_matter": [{"text": "We thank everyone.", "section": "Acknowledgments"}],
        },
    }
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    [paper] = _read([path])
    assert (paper.title, paper.year, paper.venue) == ("A title", 1999, "J. Ins.")
    assert [(s.heading, len(s.paragraphs), s.is_appendix) for s in paper.sections] == [
        ("Abstract", 1, False),
        ("Introduction", 2, False),
        ("Methods", 1, False),
        ("Methods", 1, False),
        ("Extra tables", 1, True),
    ]
    assert paper.sections[0].paragraphs == ["A short abstract."]
    assert paper.sections[3].paragraphs == ["Line one of a wrapped paragraph."]


def test_flat_pdf_parses_record_without_metadata(tmp_path):
    rec = {
        "paper_id": 123,
        "_pdf_hash": "abc",
        "abstract": [{"text": "ABSTRACT The abstract.", "section": "Abstract"}],
        "body_text": [{"text": "Body text here.", "section": None, "cite_spans": []}],
    }
    path = tmp_path / "pdf_parses_0.jsonl"
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    [paper] = _read([path])
    assert (paper.id, paper.title, paper.year) == ("123", None, None)
    assert [(s.heading, s.paragraphs) for s in paper.sections] == [
        ("Abstract", ["The abstract."]),
        ("", ["Body text here."]),
    ]


def test_malformed_single_json_file_is_reported_with_its_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "paper_id": "x",\n  "metadata": {\n', encoding="utf-8")
    report = DropReport()
    assert _read([path], report) == []
    assert dict(report.counts) == {"malformed_json": 1}
    assert report.messages[0].startswith(f"{path}:4: malformed JSON")


def test_json_suffix_holding_json_lines_is_streamed(tmp_path):
    lines = [
        {"paper_id": str(i), "body_text": [{"text": f"Text {i}.", "section": "S"}]} for i in (1, 2)
    ]
    path = tmp_path / "shard.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines) + "not json\n", encoding="utf-8")
    report = DropReport()
    assert [(p.id, p.line) for p in _read([path], report)] == [("1", 1), ("2", 2)]
    assert report.messages == [f"{path}:3: malformed JSON (Expecting value at column 1)"]
