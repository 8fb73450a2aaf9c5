from __future__ import annotations

import json

import orjson
import pyarrow.parquet as pq
import pytest

from ratio.core import schemas
from ratio.core.config import IngestConfig
from ratio.core.io import InputError, RatioError
from ratio.corpus.ingest import ingest
from ratio.corpus.ingest_stats import corpus_stats
from ratio.corpus.slices import first_lines, write_zst
from tests.conftest import NEURIPS


def _cfg(**kw) -> IngestConfig:
    return IngestConfig(workers=1, **kw)


def test_ingest_real_slice(neurips_slice, tmp_path):
    out = tmp_path / "ingest"
    res = ingest([str(neurips_slice)], "ratio-jsonl", out, _cfg(), progress=False)
    assert res.papers == 6 and res.shards == 2
    table = pq.read_table(out / "sentences")
    assert table.schema.names == schemas.SENTENCES.names
    assert table.num_rows == res.sentences > 300
    rows = table.to_pylist()
    assert all(len(r["text"]) >= 35 for r in rows)
    assert all(r["match"] == r["match"].lower() for r in rows)
    # sentence order inside a paragraph is strictly increasing
    last = {}
    for r in rows:
        key = (r["paper_id"], r["paragraph_idx"])
        assert r["sentence_idx"] > last.get(key, -1)
        last[key] = r["sentence_idx"]
    cats = {r["section_category"] for r in rows}
    assert {"abstract", "introduction"} <= cats
    # no reference-list or raw LaTeX inline math survives cleanup
    assert not any("\\(" in r["text"] for r in rows)
    stats = json.loads((out / "stats.json").read_text())
    assert stats["papers"] == 6 and {y["year"] for y in stats["per_year"]} == {2023, 2025}
    meta = pq.read_schema(next((out / "sentences").glob("*.parquet"))).metadata
    assert b"ratio.code_version" in meta


def test_rerun_reuses_shards(neurips_slice, tmp_path):
    out = tmp_path / "ingest"
    ingest([str(neurips_slice)], "ratio-jsonl", out, _cfg(), progress=False)
    before = {p.name: p.stat().st_mtime_ns for p in (out / "raw").glob("*.parquet")}
    res = ingest([str(neurips_slice)], "ratio-jsonl", out, _cfg(), progress=False)
    assert res.reused_shards == 2
    assert before == {p.name: p.stat().st_mtime_ns for p in (out / "raw").glob("*.parquet")}
    # a config change that affects output recomputes
    res = ingest([str(neurips_slice)], "ratio-jsonl", out, _cfg(min_chars=60), progress=False)
    assert res.reused_shards == 0


def test_interrupted_partial_output_is_not_trusted(neurips_slice, tmp_path):
    out = tmp_path / "ingest"
    ingest([str(neurips_slice)], "ratio-jsonl", out, _cfg(), progress=False)
    marker = next((out / "raw").glob("*.done.json"))
    shard = marker.name.removesuffix(".done.json")
    # simulate a crash after the data file but before the marker was written
    marker.unlink()
    res = ingest([str(neurips_slice)], "ratio-jsonl", out, _cfg(), progress=False)
    assert res.reused_shards == 1
    assert (out / "raw" / f"{shard}.done.json").exists()
    assert not list(out.rglob("*.tmp"))


def test_bad_lines_are_counted_and_strict_fails(tmp_path, neurips_available):
    good = first_lines(NEURIPS / "neurips-2025-00.jsonl.zst", 2)
    empty = orjson.dumps({"id": "x1", "title": "t", "year": 2025, "text": ""}) + b"\n"
    lines = [good[0], b"{not json\n", b"\xff\xfe bad utf8\n", empty, good[1]]
    src = write_zst(tmp_path / "bad-2025.jsonl.zst", lines)
    out = tmp_path / "ingest"
    res = ingest([str(src)], "ratio-jsonl", out, _cfg(), progress=False)
    assert res.papers == 2
    assert res.drops.get("malformed_json") == 1
    assert res.drops.get("invalid_utf8") == 1
    assert res.drops.get("empty_paper") == 1
    assert any("bad-2025.jsonl.zst:2" in m for m in res.errors)
    with pytest.raises(InputError, match=r"bad-2025.jsonl.zst:2"):
        ingest([str(src)], "ratio-jsonl", tmp_path / "strict", _cfg(strict=True), progress=False)


def test_truncated_shard_keeps_earlier_papers(tmp_path, neurips_available):
    data = write_zst(
        tmp_path / "full.jsonl.zst", first_lines(NEURIPS / "neurips-2023-00.jsonl.zst", 4)
    )
    cut = tmp_path / "cut-2023.jsonl.zst"
    cut.write_bytes(data.read_bytes()[: int(data.stat().st_size * 0.8)])
    res = ingest([str(cut)], "ratio-jsonl", tmp_path / "ingest", _cfg(), progress=False)
    assert res.drops.get("truncated_file") == 1
    assert 1 <= res.papers < 4
    assert any("cut-2023.jsonl.zst" in m for m in res.errors)


def test_unknown_format_and_missing_input(tmp_path):
    with pytest.raises(RatioError, match="unknown format 'nope'"):
        ingest([str(tmp_path)], "nope", tmp_path / "o", _cfg(), progress=False)
    with pytest.raises(RatioError, match="missing.jsonl"):
        ingest(
            [str(tmp_path / "missing.jsonl")],
            "ratio-jsonl",
            tmp_path / "o",
            _cfg(strict=True),
            progress=False,
        )


def test_boilerplate_repeated_across_papers_is_dropped(tmp_path, neurips_available):
    base = [orjson.loads(x) for x in first_lines(NEURIPS / "neurips-2025-00.jsonl.zst", 6)]
    planted = (
        "This paper follows the official conference template and its licence text verbatim here."
    )
    lines = []
    for rec in base:
        rec["text"] += f"\n\n## Compliance statement\n\n{planted}\n"
        lines.append(orjson.dumps(rec) + b"\n")
    src = write_zst(tmp_path / "bp-2025.jsonl.zst", lines)
    out = tmp_path / "ingest"
    res = ingest([str(src)], "ratio-jsonl", out, _cfg(boilerplate_min_papers=5), progress=False)
    texts = pq.read_table(out / "sentences", columns=["text"])["text"].to_pylist()
    assert planted not in texts
    assert res.drops["boilerplate_sentence"] >= 1 or res.drops["boilerplate_section_sentence"] >= 1
    assert corpus_stats(out)["sentences"] == len(texts)
