"""Ingest of a folder of text papers: format detection, the metadata sidecar, the checks."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ratio.core.config import IngestConfig
from ratio.core.io import InputError, RatioError
from ratio.corpus.ingest import ingest

OWN = Path(__file__).resolve().parents[1] / "data" / "own_corpus"
PDF = Path(__file__).resolve().parents[1] / "data" / "pdf"
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
    assert lines == ["detected: pdf (2 files), plaintext (10 files)"]
    assert res.formats == {"plaintext": 10, "pdf": 2}
    papers = pq.read_table(tmp_path / "out" / "papers").to_pylist()
    years = {p["paper_id"]: p["year"] for p in papers}
    assert years["C08-1021"] == 2008 and years["W10-0503"] == 2010
    assert years["N18-3011"] == 2018 and years["2212.11808"] == 2022
    assert {p["venue"] for p in papers} == {"ACL Anthology", "arXiv"}
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["metadata"]["papers_matched"] == 12
    assert stats["metadata"]["rows_without_paper"] == 1
    assert any("id 'X99-0000' matches no paper" in e for e in stats["errors"])
    assert stats["drops"]["references_section"] >= 8
    assert stats["formats"] == {"plaintext": 10, "pdf": 2}
    sentences = pq.read_table(tmp_path / "out" / "sentences", columns=["year"])
    assert sentences["year"].null_count == 0


def test_a_wrong_format_names_what_the_folder_holds(tmp_path):
    with pytest.raises(RatioError) as e:
        ingest([str(OWN / "papers")], "ratio-jsonl", tmp_path / "o", _cfg(), progress=False)
    msg = str(e.value)
    assert "no ratio-jsonl input found" in msg and "pdf (2 files), plaintext (10 files)" in msg
    assert "--format auto" in msg  # text and PDF together: no single --format reads both
    text_only = tmp_path / "text"
    text_only.mkdir()
    shutil.copy(OWN / "papers" / "C08-1021.txt", text_only)
    with pytest.raises(RatioError, match="--format plaintext"):
        ingest([str(text_only)], "ratio-jsonl", tmp_path / "o", _cfg(), progress=False)


def _bad_corpus(tmp_path: Path) -> tuple[Path, Path]:
    """Two good text papers and a good PDF, three bad PDFs, a JSON sidecar, bad metadata."""
    folder = tmp_path / "papers"
    folder.mkdir()
    for name in ("C08-1021.txt", "D07-1109.txt", "2212.11808.pdf"):
        shutil.copy(OWN / "papers" / name, folder)
    for name in ("encrypted.pdf", "corrupt.pdf", "scanned.pdf", "twocol.truth.json"):
        shutil.copy(PDF / name, folder)
    meta = folder / "metadata.csv"  # inside the folder, as docs/own-corpus.md allows
    meta.write_text(
        "id,year\nC08-1021,2008\nC08-1021,2009\nD07-1109,soon\n2212.11808,2022\n",
        encoding="utf-8",
    )
    return folder, meta


def test_bad_input_is_reported_by_file_and_the_rest_is_ingested(tmp_path):
    folder, meta = _bad_corpus(tmp_path)
    lines: list[str] = []
    res = ingest(
        [str(folder)],
        "auto",
        tmp_path / "o",
        _cfg(),
        progress=False,
        metadata=meta,
        log=lines.append,
    )
    assert lines == [
        "detected: pdf (4 files), plaintext (2 files); ignored 1 other file(s): metadata.csv; "
        "left out 1 JSON file(s) of no known format: twocol.truth.json"
    ]
    expected = {
        "metadata_duplicate_id": f"{meta}:3: duplicate id 'C08-1021'",
        "metadata_bad_year": f"{meta}:4: id 'D07-1109': year 'soon' is not a year",
        "encrypted_pdf": f"{folder / 'encrypted.pdf'}: encrypted PDF",
        "corrupt_pdf": f"{folder / 'corrupt.pdf'}: not a readable PDF",
        "no_text_layer": f"{folder / 'scanned.pdf'}: no text layer",
        "unknown_format": f"{folder / 'twocol.truth.json'}: cannot tell the format",
    }
    for kind, start in expected.items():
        assert res.drops[kind] == 1, kind
        assert any(m.startswith(start) for m in res.errors), (start, res.errors)
    papers = pq.read_table(tmp_path / "o" / "papers").to_pylist()
    years = {p["paper_id"]: p["year"] for p in papers}
    assert years == {"C08-1021": 2008, "D07-1109": None, "2212.11808": 2022}
    assert all(p["n_sentences"] > 20 for p in papers)


@pytest.mark.parametrize(
    ("remove", "first"),
    [
        ((), r"twocol.truth.json: cannot tell the format"),  # found while detecting formats
        (("twocol.truth.json",), r"metadata.csv:3: duplicate id"),  # read before any paper
        (("twocol.truth.json", "metadata"), r"corrupt.pdf: not a readable PDF"),
    ],
)
def test_strict_stops_at_the_first_bad_input(tmp_path, remove, first):
    folder, meta = _bad_corpus(tmp_path)
    if "twocol.truth.json" in remove:
        (folder / "twocol.truth.json").unlink()
    with pytest.raises(InputError, match=first):
        ingest(
            [str(folder)],
            "auto",
            tmp_path / "o",
            _cfg(strict=True),
            progress=False,
            metadata=None if "metadata" in remove else meta,
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
