from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest
import zstandard

from ratio.core.io import InputError
from ratio.corpus.readers import DropReport, get_reader, iter_papers

DATA = Path(__file__).parents[2] / "data" / "text"
SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "corpora" / "neurips"


def _rec(pid: str, text: str, **kw) -> bytes:
    rec = {
        "id": pid,
        "title": "T",
        "year": 2023,
        "venue": "NeurIPS",
        "extractor": "nougat",
        "text": text,
    }
    rec.update(kw)
    return orjson.dumps(rec)


def _write(path: Path, lines: list[bytes]) -> Path:
    data = b"\n".join(lines) + b"\n"
    if path.name.endswith(".zst"):
        data = zstandard.ZstdCompressor().compress(data)
    elif path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name", ["c.jsonl", "c.jsonl.gz", "c.jsonl.zst"])
def test_reads_papers_and_skips_bad_lines(tmp_path, name):
    nougat = (DATA / "nougat_excerpt.mmd").read_text()
    docling = (DATA / "docling_excerpt.md").read_text()
    lines = [
        _rec("p1", nougat),
        b'{"id": "broken", "text": ',
        _rec("", "## Introduction\n\nSome text."),
        orjson.dumps({"title": "no id", "text": "x"}),
        _rec("p2", "   "),
        b"\xff\xfe not utf-8",
        b"[1, 2]",
        _rec("p3", docling, extractor="docling", year=2025, title=None),
        b"",
    ]
    path = _write(tmp_path / name, lines)
    report = DropReport()
    papers = list(iter_papers([path], "ratio-jsonl", report))
    assert [p.id for p in papers] == ["p1", "p3"]
    p1, p3 = papers
    assert (p1.line, p3.line) == (1, 8)
    assert p1.source == str(path) and p1.markup == "markdown"
    assert p1.year == 2023 and p1.venue == "NeurIPS" and p1.title == "T"
    assert p3.year == 2025 and p3.title is None
    assert p1.sections[0].heading == "Abstract" and p3.sections[-1].is_appendix
    assert dict(report.counts) == {
        "malformed_json": 2,
        "missing_id": 2,
        "empty_paper": 1,
        "invalid_utf8": 1,
    }
    assert any(f"{path}:2:" in m for m in report.messages)


def test_strict_stops_at_first_bad_line(tmp_path):
    path = _write(
        tmp_path / "s.jsonl", [_rec("p1", "## Introduction\n\nA real sentence of text."), b"{"]
    )
    with pytest.raises(InputError) as e:
        list(iter_papers([path], "ratio-jsonl", DropReport(strict=True)))
    assert e.value.kind == "malformed_json" and e.value.line == 2


def test_registered():
    reader = get_reader("ratio-jsonl")
    assert reader.suffixes == (".jsonl", ".jsonl.gz", ".jsonl.zst")


@pytest.mark.skipif(not SHARED.exists(), reason="shared NeurIPS corpus not available")
def test_real_shard_head():
    """The first papers of a real shard parse into abstract + body sections."""
    import itertools

    report = DropReport()
    papers = list(
        itertools.islice(
            iter_papers([SHARED / "neurips-2025-02.jsonl.zst"], "ratio-jsonl", report), 5
        )
    )
    assert len(papers) == 5
    for p in papers:
        cats = {s.category for s in p.sections}
        assert "abstract" in cats and "introduction" in cats, p.id
        assert not any("Answer: [" in para for s in p.sections for para in s.paragraphs)
