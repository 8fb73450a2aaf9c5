"""docs/own-corpus.md end to end: its commands on the real sample in tests/data/own_corpus.

A folder of ten ACL Anthology text papers and two PDFs (the ACL Anthology's own N18-3011 and
an arXiv paper) plus a metadata CSV goes through `ratio ingest`, `ratio build`, `ratio evaluate`
(BM25) and `ratio serve` (a real server process, queried over HTTP). The command lines, the
run config and the search request are read from the page itself, so the page cannot drift
from the CLI; configs/own-corpus.toml, the template the page points to, runs the undated case.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pyarrow.parquet as pq
from typer.testing import CliRunner

from ratio.cli import app
from ratio.retrieval.models import REPO_ROOT
from ratio.retrieval.shipped import latest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "own_corpus"
SHIPPED = latest([REPO_ROOT / "models"])


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


def _doc_blocks(lang: str) -> list[str]:
    """The fenced ``lang`` blocks of docs/own-corpus.md, in order."""
    text = (ROOT / "docs" / "own-corpus.md").read_text(encoding="utf-8")
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def _doc_commands() -> list[list[str]]:
    """Every ``ratio ...`` command line of the page's bash blocks, split as a shell would."""
    return [
        shlex.split(line)[1:]
        for block in _doc_blocks("bash")
        for line in block.splitlines()
        if line.startswith("ratio ")
    ]


def test_tutorial_commands_end_to_end(tmp_path, monkeypatch):
    """The page's commands and its own.toml, verbatim, run where the sample sits as papers/
    and metadata.csv (the layout the page assumes)."""
    shutil.copytree(SAMPLE / "papers", tmp_path / "papers")
    shutil.copy(SAMPLE / "metadata.csv", tmp_path / "metadata.csv")
    (toml,) = _doc_blocks("toml")
    (tmp_path / "own.toml").write_text(toml, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    ingest, build, evaluate, serve = _doc_commands()
    assert [c[0] for c in (ingest, build, evaluate, serve)] == [
        "ingest",
        "build",
        "evaluate",
        "serve",
    ]
    run = tmp_path / "runs" / "own-corpus"
    # 1. ingest: formats detected per kind, metadata applied, references cut
    out = _run(*ingest).output
    assert "detected: pdf (2 files), plaintext (10 files)" in out
    assert "12 papers matched, 0 without a row, 0 rows without a paper" in out
    stats = json.loads((run / "ingest" / "stats.json").read_text())
    years = {r["year"] for r in stats["per_year"]}
    assert years == {2005, 2006, 2007, 2008, 2009, 2010, 2018, 2022}
    assert stats["drops"]["references_section"] >= 8 and not stats["errors"]
    per_paper = {
        p["paper_id"]: p["n_sentences"]
        for p in pq.read_table(run / "ingest" / "papers").to_pylist()
    }
    assert per_paper["N18-3011"] > 100 and per_paper["2212.11808"] > 50  # the PDFs are read
    # 2. build: temporal split by the metadata's years, step 1's ingest reused
    _run(*build)
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
    test = pq.read_table(run / "benchmark" / "test" / "candidates.parquet").to_pylist()
    assert min(c["year"] for c in test) >= 2009
    assert {"N18-3011", "2212.11808"} <= {c["paper_id"] for c in test}  # PDF papers, 2018/2022
    n_test_candidates = len(test)
    # 3. evaluate: BM25 on the test split
    _run(*evaluate)
    assert (run / "eval" / "test" / "results.md").exists()
    # 4. serve: a real server process answering the page's search over HTTP
    port = _free_port()
    serve[serve.index("--port") + 1] = str(port)
    (curl,) = [b for b in _doc_blocks("bash") if "curl" in b]
    query = json.loads(re.search(r"-d '(.*?)'", curl, re.S).group(1))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "ratio"), *serve],
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
        r = httpx.post(f"http://127.0.0.1:{port}/search", json=query, timeout=60)
        assert r.status_code == 200, r.text
        assert len(r.json()["results"]) == query["k"], r.json()
        # every ingested sentence, each move answered by the shipped model, three lists
        info = httpx.get(f"http://127.0.0.1:{port}/info", timeout=10).json()
        n_sentences = sum(
            pq.read_metadata(p).num_rows for p in (run / "ingest" / "sentences").glob("*.parquet")
        )
        assert info["pool"]["candidates"] > 3 * n_test_candidates
        assert info["pool"]["candidates"] <= n_sentences
        if SHIPPED:
            assert set(info["per_move"].values()) == {"shipped"}, info["per_move"]
            moves = httpx.post(
                f"http://127.0.0.1:{port}/moves",
                json={"query": query["query"], "k": 10},
                timeout=60,
            ).json()["moves"]
            lists = {m: [h["candidate_id"] for h in r["results"]] for m, r in moves.items()}
            assert len({tuple(v) for v in lists.values()}) == 3, lists
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_undated_corpus_is_refused_then_split_at_random(tmp_path):
    config = _config(tmp_path, **{'metadata = "': 'metadata_unused = "'})
    text = config.read_text().replace("metadata_unused", "# metadata")
    config.write_text(text)
    result = CliRunner().invoke(app, ["build", "--config", str(config)])
    assert result.exit_code != 0
    assert "none of the 12 ingested papers has a year or date" in str(
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
