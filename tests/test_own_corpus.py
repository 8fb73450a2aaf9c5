"""docs/own-corpus.md end to end: its commands on the real sample in tests/data/own_corpus.

A folder of ten ACL Anthology text papers plus a metadata CSV goes through `ratio ingest`,
`ratio build`, `ratio evaluate` (BM25) and `ratio serve` (a real server process, queried
over HTTP), with configs/own-corpus.toml pointed at a temporary run folder.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow.parquet as pq
from typer.testing import CliRunner

from ratio.cli import app

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "own_corpus"


def _config(tmp_path: Path, **replace: str) -> Path:
    """configs/own-corpus.toml with the run folder in ``tmp_path`` (and other swaps)."""
    text = (ROOT / "configs" / "own-corpus.toml").read_text(encoding="utf-8")
    text = text.replace('"../tests/data/own_corpus/', f'"{SAMPLE}/')
    text = text.replace('"../runs/own-corpus', f'"{tmp_path}/run')
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / "own.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(*args: str):
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tutorial_commands_end_to_end(tmp_path):
    config = _config(tmp_path)
    run = tmp_path / "run"
    # 1. ingest: format detected, metadata applied, references cut
    out = _run(
        "ingest",
        str(SAMPLE / "papers"),
        "--metadata",
        str(SAMPLE / "metadata.csv"),
        "--out",
        str(run / "ingest"),
    ).output
    assert "detected: plaintext (10 files)" in out
    assert "10 papers matched, 0 without a row, 0 rows without a paper" in out
    stats = json.loads((run / "ingest" / "stats.json").read_text())
    assert {r["year"] for r in stats["per_year"]} == {2005, 2006, 2007, 2008, 2009, 2010}
    assert stats["drops"]["references_section"] >= 8
    # 2. build: temporal split by the metadata's years
    _run("build", "--config", str(config))
    counts = {
        s: pq.read_metadata(run / "benchmark" / s / "queries.parquet").num_rows
        for s in ("train", "validation", "test")
    }
    assert all(counts.values()), counts
    report = (run / "reports" / "build.md").read_text()
    assert (
        "## Temporal split" in report
        and "final leakage (texts shared with an earlier split): **0**" in report
    )
    years = pq.read_table(run / "benchmark" / "test" / "queries.parquet")["year"].to_pylist()
    assert min(years) >= 2009
    # 3. evaluate: BM25 on the test split
    _run("evaluate", "--config", str(config))
    assert any((run / "eval").rglob("*.md"))
    # 4. serve: a real server process answering a search over HTTP
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "ratio"), "serve", "--config", str(config)]
        + ["--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 300
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.time() < deadline, "ratio serve did not come up"
            time.sleep(0.5)
        r = httpx.post(
            f"http://127.0.0.1:{port}/search",
            json={
                "query": "Word sense disambiguation needs large knowledge bases.",
                "move": "address",
            },
            timeout=60,
        )
        assert r.status_code == 200, r.text
        assert r.json()["results"], r.json()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_undated_corpus_is_refused_then_split_at_random(tmp_path):
    config = _config(tmp_path, **{'metadata = "': 'metadata_unused = "'})
    text = config.read_text().replace("metadata_unused", "# metadata")
    config.write_text(text)
    result = CliRunner().invoke(app, ["build", "--config", str(config)])
    assert result.exit_code != 0
    assert "none of the 10 ingested papers has a year or date" in str(
        result.exception or result.output
    )
    config.write_text(
        text.replace(
            'test_end = "9999"',
            'test_end = "9999"\nmode = "random"\ntrain_fraction = 0.6\nvalidation_fraction = 0.2',
        )
    )
    _run("build", "--config", str(config))
    report = (tmp_path / "run" / "reports" / "build.md").read_text()
    assert "temporal leakage control is off" in report
    papers: dict[str, str] = {}
    for s in ("train", "validation", "test"):
        for pid in pq.read_table(tmp_path / "run" / "benchmark" / s / "candidates.parquet")[
            "paper_id"
        ].to_pylist():
            assert papers.setdefault(pid, s) == s  # no paper in two splits
