"""``--format auto``: readers chosen from file names and the first record's keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ratio.core.io import RatioError
from ratio.corpus.readers.detect import detect_inputs, first_record, json_format

DATA = Path(__file__).resolve().parents[2] / "data"


def test_record_shapes_of_every_json_format(data_dir, s2orc_example):
    assert json_format(first_record(data_dir / "unarxive_sample.jsonl")) == "unarxive"
    assert json_format(first_record(data_dir / "s2orc_v2_sample.jsonl")) == "s2orc-v2"
    assert json_format(first_record(s2orc_example)) == "s2orc"
    ratio = {"id": "x", "title": "T", "year": 2024, "extractor": "nougat", "text": "# T"}
    assert json_format(ratio) == "ratio-jsonl"
    pes2o = {"id": "1", "text": "...", "source": "s2orc/train", "added": "2023", "created": "2020"}
    assert json_format(pes2o) in ("pes2o", "s2orc-v2")
    pdf_parse = {"paper_id": "1", "abstract": [], "body_text": [{"text": "a", "sec_num": "1"}]}
    assert json_format(pdf_parse) == "s2orc"
    assert json_format({"foo": 1}) is None


def test_a_mixed_folder_is_read_per_kind(tmp_path, data_dir):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("Some text.", encoding="utf-8")
    (tmp_path / "sub" / "b.md").write_text("# B\n\nText.", encoding="utf-8")
    (tmp_path / "c.pdf").write_bytes(b"%PDF-1.4\n")
    (tmp_path / "u.jsonl").write_text(
        (data_dir / "unarxive_sample.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "metadata.csv").write_text("id,year\na,2020\n", encoding="utf-8")
    det = detect_inputs([str(tmp_path)])
    assert sorted(det.shards) == sorted(
        [
            (str(tmp_path), "plaintext"),
            (str(tmp_path), "pdf"),
            (str(tmp_path / "u.jsonl"), "unarxive"),
        ]
    )
    assert det.files == {"plaintext": 2, "pdf": 1, "unarxive": 1}
    assert det.ignored == ["metadata.csv"]
    assert det.describe().startswith("detected: pdf (1 file), plaintext (2 files), unarxive")


def test_undecidable_and_empty_inputs_name_the_formats_and_the_flag(tmp_path):
    (tmp_path / "x.jsonl").write_text(json.dumps({"foo": 1}) + "\n", encoding="utf-8")
    with pytest.raises(RatioError) as e:
        detect_inputs([str(tmp_path)])
    assert "x.jsonl: cannot tell the format" in str(e.value)
    assert "--format" in str(e.value) and "ratio-jsonl" in str(e.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.csv").write_text("a,b\n", encoding="utf-8")
    with pytest.raises(RatioError, match=r"no paper files .* \(found only: notes.csv\).*--format"):
        detect_inputs([str(empty)])


def test_the_own_corpus_sample():
    det = detect_inputs([str(DATA / "own_corpus")])
    assert det.shards == [
        (str(DATA / "own_corpus"), "pdf"),
        (str(DATA / "own_corpus"), "plaintext"),
    ]
    assert det.files == {"plaintext": 10, "pdf": 2}  # README.md travels with it, not a paper
    assert sorted(det.ignored) == ["README.md", "metadata.csv"]


def test_json_beside_the_papers_is_left_out_and_reported():
    """tests/data/pdf: PDFs with their ground truth as ``*.truth.json`` next to them."""
    det = detect_inputs([str(DATA / "pdf")])
    assert det.shards == [(str(DATA / "pdf"), "pdf")] and det.files == {"pdf": 5}
    assert [(Path(e.source).name, e.kind) for e in det.unknown] == [
        ("onecol.truth.json", "unknown_format"),
        ("twocol.truth.json", "unknown_format"),
    ]
    assert "keys: abstract, arxiv_id" in str(det.unknown[0])
    assert det.describe().endswith(
        "left out 2 JSON file(s) of no known format: onecol.truth.json, twocol.truth.json"
    )
    # named on its own, such a file is an error that names the formats and the flag
    with pytest.raises(RatioError, match=r"onecol.truth.json: cannot tell .*--format"):
        detect_inputs([str(DATA / "pdf" / "onecol.truth.json")])


def test_the_metadata_file_is_not_a_paper_whatever_its_suffix(tmp_path, data_dir):
    (tmp_path / "a.txt").write_text("Some text.", encoding="utf-8")
    meta = tmp_path / "metadata.jsonl"
    meta.write_text(json.dumps({"id": "a", "year": 2020}) + "\n", encoding="utf-8")
    det = detect_inputs([str(tmp_path)], exclude=(meta,))
    assert det.files == {"plaintext": 1} and det.ignored == ["metadata.jsonl"]
    assert not det.unknown
    assert detect_inputs([str(tmp_path)]).unknown  # not named as metadata: reported
