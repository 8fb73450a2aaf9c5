"""The current-S2ORC / peS2o reader on a fixture built from the real example paper's sentences."""

from __future__ import annotations

import gzip
import json

from ratio.corpus.readers import DropReport, iter_papers, list_inputs


def _read(paths, fmt="s2orc-v2", report=None):
    return list(iter_papers(paths, fmt, report if report is not None else DropReport()))


def test_fixture_annotations_are_json_strings(data_dir):
    recs = [
        json.loads(line) for line in (data_dir / "s2orc_v2_sample.jsonl").read_text().splitlines()
    ]
    assert isinstance(recs[0]["content"]["annotations"]["paragraph"], str)
    assert recs[0]["content"]["annotations"]["formula"] is None
    assert all(v is None for v in recs[2]["content"]["annotations"].values())


def test_content_layout_with_headers_abstract_and_appendix(data_dir):
    papers = _read([data_dir / "s2orc_v2_sample.jsonl"])
    assert [p.id for p in papers] == ["15772371", "15772372", "15772373"]
    paper = papers[0]
    # no top-level title: taken from the title span; venue from the venue span
    assert (
        paper.title
        == "Artificial diets for rearing the Colorado potato beetle, Leptinotarsa decemlineata"
    )
    assert (paper.venue, paper.year, paper.line) == ("Journal of Insect Science", None, 1)
    assert [(s.heading, len(s.paragraphs), s.is_appendix) for s in paper.sections] == [
        ("Abstract", 1, False),
        ("Introduction", 1, False),
        ("Insects", 1, False),  # "2 Materials and methods" has no paragraph of its own
        ("Diet preparation", 1, False),
        ("Results", 2, False),
        ("Discussion", 1, False),
        ("Diet composition", 1, True),  # numbered "A"
    ]
    assert paper.sections[0].paragraphs[0].startswith("Colorado potato beetles have been reared")
    intro = paper.sections[1].paragraphs[0]
    assert intro.startswith("The Colorado potato beetle (CPB) is an exceptionally destructive pest")
    assert "(Schalk and Stoner, 1979;" in intro  # bibref spans do not cut the text


def test_body_layout_of_the_2024_release(data_dir):
    paper = _read([data_dir / "s2orc_v2_sample.jsonl"])[1]
    assert paper.title.startswith("Artificial diets")
    assert [(s.heading, len(s.paragraphs)) for s in paper.sections] == [
        ("Introduction", 2),
        ("Results", 1),
    ]


def test_null_annotations_fall_back_to_blank_line_paragraphs(data_dir):
    paper = _read([data_dir / "s2orc_v2_sample.jsonl"])[2]
    assert paper.title.startswith("Artificial diets")  # short unpunctuated first block
    [sec] = paper.sections
    assert sec.heading == ""
    assert len(sec.paragraphs) == 2
    assert all("\n" not in p for p in sec.paragraphs)  # the soft-wrapped paragraph is joined
    assert sec.paragraphs[0].startswith("Potato leaf, lettuce leaf and tomato fruit powders")


def test_decoded_annotation_lists_and_paragraphs_before_any_header(tmp_path):
    text = "Preamble paragraph here.\nMethods\nWe did things."
    rec = {
        "corpusid": 5,
        "year": 2021,
        "content": {
            "text": text,
            "annotations": {
                "paragraph": [{"start": 0, "end": 24}, {"start": 33, "end": 47}],
                "sectionheader": [{"start": 25, "end": 32, "attributes": None}],
                "abstract": "not json",
            },
        },
    }
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    [paper] = _read([path])
    assert paper.year == 2021
    assert [(s.heading, s.paragraphs) for s in paper.sections] == [
        ("", ["Preamble paragraph here."]),
        ("Methods", ["We did things."]),
    ]


def test_pes2o_plain_records(tmp_path, data_dir):
    text = (
        "Artificial diets for rearing the Colorado potato beetle\n\n"
        "Colorado potato beetles have been reared successfully through 12 generations on\n"
        "artificial diets.\n\n"
        "Introduction\n\n"
        "The Colorado potato beetle (CPB) is an exceptionally destructive pest of potatoes."
    )
    recs = [
        {
            "id": "15772371",
            "text": text,
            "source": "s2orc/train",
            "added": "2023-01-03T00:00:00.000Z",
            "created": "2001-07-01T00:00:00.000Z",
            "version": "v2",
        },
        {
            "id": "9",
            "text": "Only an abstract, nothing else.",
            "source": "s2ag/train",
            "added": "x",
            "created": "1987",
        },
    ]
    path = tmp_path / "pes2o.json.gz"  # peS2o ships JSON Lines as .json.gz
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in recs).encode()))
    assert [p.name for p in list_inputs([tmp_path], "pes2o")] == ["pes2o.json.gz"]
    a, b = _read([path], fmt="pes2o")
    assert (a.id, a.title, a.year, a.date) == (
        "15772371",
        "Artificial diets for rearing the Colorado potato beetle",
        2001,
        "2001-07-01",
    )
    assert [(s.heading, s.paragraphs) for s in a.sections] == [
        (
            "",
            [
                "Colorado potato beetles have been reared successfully through 12 generations on artificial diets."
            ],
        ),
        (
            "Introduction",
            ["The Colorado potato beetle (CPB) is an exceptionally destructive pest of potatoes."],
        ),
    ]
    assert (b.title, b.year, b.date) == (None, 1987, None)
    assert b.sections[0].paragraphs == ["Only an abstract, nothing else."]
