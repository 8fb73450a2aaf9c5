"""Ingest of a folder of text papers: format detection, the metadata sidecar, the checks."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ratio.config import IngestConfig
from ratio.ingest import ingest
from ratio.io import InputError, RatioError

OWN = Path(__file__).resolve().parents[1] / "data" / "own_corpus"
AAN = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "samples" / "aan"

# A bibliography entry or a piece of one: "Fellbaum, C., editor. 1998.", "In Proceedings of",
# "24(1):147-166", "pages 17-19", a sentence opening with its year ("2005. Structural ...").
REFERENCE_ENTRY = re.compile(
    r"^[A-Z][\w'\u2019-]+,\s+(?:[A-Z]\.|[A-Z][a-z]+).{0,80}?\b(?:19|20)\d{2}[a-z]?[.,)]"
    r"|\bIn Proceedings of\b|\bIn Proc\.|\d+\s*\(\s*\d+\s*\)\s*:\s*\d+|\bpages\s+\d+\s*[-\u2013]\s*\d+"
    r"|^\(?(?:19|20)\d{2}[a-z]?\)?\.\s|\bet al\.,?\s+(?:19|20)\d{2}[a-z]?\.\s"
    r"|^(?:[A-Z]\.\s*){1,3}[A-Z][a-z]+,.*(?:19|20)\d{2}"
)


def _cfg(**kw) -> IngestConfig:
    return IngestConfig(workers=1, **kw)


def test_auto_detection_and_metadata(tmp_path):
    lines: list[str] = []
    meta = tmp_path / "metadata.csv"
    meta.write_text(
        (OWN / "metadata.csv").read_text(encoding="utf-8") + "X99-0000,2011,ACL Anthology\n",
        encoding="utf-8",
    )
    res = ingest(
        [str(OWN / "papers")],
        "auto",
        tmp_path / "out",
        _cfg(),
        progress=False,
        metadata=meta,
        log=lines.append,
    )
    assert lines == ["detected: plaintext (10 files)"] and res.formats == {"plaintext": 10}
    papers = pq.read_table(tmp_path / "out" / "papers").to_pylist()
    years = {p["paper_id"]: p["year"] for p in papers}
    assert years["C08-1021"] == 2008 and years["W10-0503"] == 2010
    assert {p["venue"] for p in papers} == {"ACL Anthology"}
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["metadata"]["papers_matched"] == 10
    assert stats["metadata"]["rows_without_paper"] == 1
    assert any("id 'X99-0000' matches no paper" in e for e in stats["errors"])
    assert stats["drops"]["references_section"] >= 8 and stats["formats"] == {"plaintext": 10}
    sentences = pq.read_table(tmp_path / "out" / "sentences", columns=["year"])
    assert sentences["year"].null_count == 0


def test_wrong_format_and_bad_metadata(tmp_path):
    with pytest.raises(RatioError) as e:
        ingest([str(OWN / "papers")], "ratio-jsonl", tmp_path / "o", _cfg(), progress=False)
    assert "no ratio-jsonl input found" in str(e.value) and "--format plaintext" in str(e.value)
    meta = tmp_path / "m.csv"
    meta.write_text("id,year\nC08-1021,2008\nC08-1021,2009\nD07-1109,soon\n", encoding="utf-8")
    res = ingest(
        [str(OWN / "papers")], "auto", tmp_path / "o", _cfg(), progress=False, metadata=meta
    )
    assert res.drops["metadata_duplicate_id"] == 1 and res.drops["metadata_bad_year"] == 1
    assert any(f"{meta}:4: id 'D07-1109'" in m for m in res.errors)
    with pytest.raises(InputError, match=r"m.csv:3: duplicate id"):
        ingest(
            [str(OWN / "papers")],
            "auto",
            tmp_path / "o2",
            _cfg(strict=True),
            progress=False,
            metadata=meta,
        )


@pytest.mark.slow
def test_no_reference_entry_survives_in_a_sample_of_the_aan_corpus(tmp_path):
    """docs/own-corpus.md: 200 sentences drawn with seed 0 from the 60 AAN papers."""
    if not AAN.is_dir():
        pytest.skip(f"AAN sample not found at {AAN}")
    folder = tmp_path / "aan"
    shutil.copytree(AAN, folder)
    ingest(
        [str(folder)],
        "auto",
        tmp_path / "out",
        _cfg(),
        progress=False,
        metadata=folder / "metadata.csv",
    )
    texts = pq.read_table(tmp_path / "out" / "sentences", columns=["text"])["text"].to_pylist()
    sample = random.Random(0).sample(texts, 200)
    assert [t for t in sample if REFERENCE_ENTRY.search(t)] == []
    # and in the whole corpus, the only match is not a reference entry either
    assert [t for t in texts if REFERENCE_ENTRY.search(t)] == []
    assert REFERENCE_ENTRY.search("Fellbaum, C., editor. 1998. WordNet. An Electronic")
    assert REFERENCE_ENTRY.search("Computational Linguistics, 24(1):147-166.")
