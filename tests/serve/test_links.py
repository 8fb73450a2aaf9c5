"""Links out: each hit's ``url`` from the user's metadata (url, else DOI), else OpenReview for
the shared NeurIPS corpus; the pool file carries it and is rebuilt when the metadata changes."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from ratio.core.layout import RunDir
from ratio.corpus.readers import DropReport
from ratio.corpus.readers.metadata import load_metadata, write_metadata
from ratio.serve.engine import SearchEngine
from ratio.serve.links import doi_url, openreview_url, paper_url
from ratio.serve.pool import POOL_VERSION
from tests.serve.conftest import STATIC_MODEL
from tests.serve.tinyrun import MODELS, NEURIPS, make_tiny_run


def test_which_link_a_paper_gets():
    meta = {"url": "https://example.org/p1", "doi": "10.1/x"}
    assert paper_url("004uTlSufe", "neurips-2025-00.jsonl.zst", meta) == "https://example.org/p1"
    assert paper_url("004uTlSufe", "neurips-2025-00.jsonl.zst", {"url": None, "doi": "10.1/x"}) == (
        "https://doi.org/10.1/x"
    )
    assert paper_url("004uTlSufe", "neurips-2025-00.jsonl.zst", None) == (
        "https://openreview.net/forum?id=004uTlSufe"
    )
    # OpenReview only where the shard and the id both say so
    assert openreview_url("004uTlSufe", "papers.jsonl") is None
    assert openreview_url("2023/paper-1", "neurips-2023-00.jsonl.zst") is None
    assert openreview_url("C08-1021", "neurips-2023-00.jsonl.zst") is None  # 8 characters
    assert openreview_url("004uTlSufe", None) is None
    assert paper_url("C08-1021", "aan", None) is None
    # characters a URL cannot carry are encoded; the usual DOI characters stay
    assert doi_url("10.1002/(SICI)1097-4571;2-#") == "https://doi.org/10.1002/(SICI)1097-4571;2-%23"
    assert doi_url("10.18653/v1/N18-3011") == "https://doi.org/10.18653/v1/N18-3011"


def test_hits_carry_the_shared_corpus_openreview_link(engine):
    hits = engine.search("privacy auditing", "address", 10)["results"]
    assert hits and all(
        h["url"] == f"https://openreview.net/forum?id={h['paper_id']}" for h in hits
    )
    assert engine.pool.meta["inputs"]["version"] == POOL_VERSION == "3"


@pytest.fixture()
def own_run(tmp_path):
    if not NEURIPS.is_dir() or not (MODELS / STATIC_MODEL).is_dir():
        pytest.skip("shared corpus or static model not found")
    cfg = make_tiny_run(tmp_path)
    papers = pq.read_table(sorted((tmp_path / "run/ingest/papers").glob("*.parquet")))
    return cfg, papers.column("paper_id").to_pylist()


def _write_metadata(cfg, text: str) -> DropReport:
    """What `ratio ingest --metadata FILE` leaves: the checked sidecar in ingest/."""
    path = cfg.parent / "metadata.csv"
    path.write_text(text, encoding="utf-8")
    report = DropReport()
    write_metadata(load_metadata(path, report), RunDir(cfg.parent / "run").ingest.metadata)
    return report


def _urls(engine) -> dict[str, str | None]:
    table = engine.pool.table
    return dict(
        zip(table.column("paper_id").to_pylist(), table.column("url").to_pylist(), strict=True)
    )


def test_metadata_url_then_doi_then_openreview(own_run):
    cfg, (a, b, c, d, *rest) = own_run
    report = _write_metadata(
        cfg,
        "id,year,url,doi\n"
        f"{a},,https://example.org/papers/a.pdf,10.9999/ignored\n"
        f"{b},,,doi:10.18653/v1/N18-3011\n"
        f"{c},,javascript:alert(1),\n"
        f"{d},,,not-a-doi\n",
    )
    assert dict(report.counts) == {"metadata_bad_url": 1, "metadata_bad_doi": 1}
    eng = SearchEngine.open(cfg)
    urls = _urls(eng)
    assert urls[a] == "https://example.org/papers/a.pdf"  # the url wins over the DOI
    assert urls[b] == "https://doi.org/10.18653/v1/N18-3011"
    # a refused value is no link: these fall back to their OpenReview forum
    assert urls[c] == f"https://openreview.net/forum?id={c}"
    assert urls[d] == f"https://openreview.net/forum?id={d}"
    assert all(urls[p] == f"https://openreview.net/forum?id={p}" for p in rest)
    hit = eng.search(eng.pool.rows([0])[0]["text"], "address", 1)["results"][0]
    assert hit["url"] == urls[hit["paper_id"]]

    # a new url in the metadata rebuilds the pool file (it signs the sidecar)
    _write_metadata(cfg, f"id,url\n{a},https://example.org/v2/{a}\n")
    again = SearchEngine.open(cfg)
    assert _urls(again)[a] == f"https://example.org/v2/{a}"
    assert _urls(again)[b] == f"https://openreview.net/forum?id={b}"
    meta = json.loads(again.pool.where.meta.read_text())
    assert meta["inputs"]["metadata"][0][0].endswith("metadata.parquet")
