"""The unarXive reader on two real records (tests/data) and on the real shard."""

from __future__ import annotations

import json

from ratio.corpus.readers import DropReport, iter_papers


def _read(paths, report=None):
    return list(iter_papers(paths, "unarxive", report if report is not None else DropReport()))


def test_fixture_records(data_dir):
    path = data_dir / "unarxive_sample.jsonl"
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    papers = _read([path])
    assert [p.id for p in papers] == ["2212.11739", "2212.11827"]
    small, two_versions = papers
    assert small.markup == "latex" and small.venue == "arXiv"
    assert small.title == " ".join(raw[0]["metadata"]["title"].split())
    assert "\n" not in two_versions.title
    # first version's date, not update_date (2022-12-26) nor the v2 date
    assert raw[1]["metadata"]["update_date"] == "2022-12-26"
    assert (two_versions.year, two_versions.date) == (2022, "2022-12-22")
    assert small.sections[0].heading == "Abstract"
    assert small.sections[0].paragraphs == [" ".join(raw[0]["abstract"]["text"].split())]
    body = [p for s in small.sections[1:] for p in s.paragraphs]
    assert len(body) == len(raw[0]["body_text"]) == 2
    for paper in papers:
        for sec in paper.sections:
            assert sec.category == "other"
            assert all(p and "\n" not in p for p in sec.paragraphs)  # soft breaks joined
    text = " ".join(p for s in two_versions.sections for p in s.paragraphs)
    assert "{{cite:" in text and "{{formula:" in text  # placeholders are ratio.corpus.text's job


def test_sections_follow_section_and_number(data_dir):
    path = data_dir / "unarxive_sample.jsonl"
    raw = json.loads(path.read_text(encoding="utf-8").splitlines()[1])
    expected: list[tuple[str, int]] = []
    for para in raw["body_text"]:
        key = para["section"]
        if expected and expected[-1][0] == key:
            expected[-1] = (key, expected[-1][1] + 1)
        else:
            expected.append((key, 1))
    paper = _read([path])[1]
    assert [(s.heading, len(s.paragraphs)) for s in paper.sections[1:]] == expected


def test_appendix_numbers_and_missing_versions(tmp_path):
    rec = {
        "paper_id": "2301.00001",
        "metadata": {"title": "T", "versions": [], "update_date": "2023-01-05"},
        "abstract": {"text": "An abstract."},
        "body_text": [
            {"section": "Intro", "sec_number": "1", "text": "Body."},
            {"section": "Proofs", "sec_number": "A", "text": "Proof one."},
            {"section": "More proofs", "sec_number": "B.2", "text": "Proof two."},
        ],
    }
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    [paper] = _read([path])
    assert (paper.year, paper.date) == (2023, "2023-01-05")
    assert [(s.heading, s.is_appendix) for s in paper.sections] == [
        ("Abstract", False),
        ("Intro", False),
        ("Proofs", True),
        ("More proofs", True),
    ]


def test_real_shard_streams_every_paper(unarxive_shard):
    report = DropReport()
    papers = _read([unarxive_shard], report)
    assert len(papers) == 49 and not report.counts
    assert len({p.id for p in papers}) == 49
    assert all(p.year == 2022 and p.date.startswith("2022-1") for p in papers)
    assert sum(s.is_appendix for p in papers for s in p.sections) > 0
