"""Every shipped config serves, as a user runs it: `ratio serve`, `ratio search`,
`ratio.search`, `ratio.chain` and the MCP server (a move and a chain), each over a tiny real run
at the config's own `build.out`.

The config file is the shipped one, copied verbatim into a scratch ``configs/`` folder so its
relative ``build.out`` ("../runs/neurips") lands on the tiny run instead of a real build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import pytest

import ratio
from ratio.core.config import load_config
from ratio.retrieval.models import OFFLINE_ENV
from ratio.retrieval.shipped import latest
from tests.serve.test_mcp import _payload, _session
from tests.serve.tinyrun import NEURIPS, REPO_ROOT, write_tiny_run

SHIPPED = sorted((REPO_ROOT / "configs").glob("*.toml"))
QUERY = "Large language models often produce confident but incorrect answers."
RATIO = [str(Path(sys.executable).with_name("ratio"))]  # the installed command a user types
ENV = {**os.environ, **OFFLINE_ENV}
# a checkout answers every move with the shipped model (the NeurIPS card shows it beats BM25
# and its base on every move); without one, auto falls back to BM25
EXPECTED = "shipped" if latest([REPO_ROOT / "models"]) else "bm25"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not NEURIPS.is_dir(), reason=f"shared corpus not found at {NEURIPS}"),
]


@pytest.fixture(scope="module", params=SHIPPED, ids=lambda p: p.name)
def shipped(request, tmp_path_factory):
    """The shipped config copied to ``tmp/configs/`` with a tiny run where it points, one per
    config for the module's three front ends: the first one to start indexes the pool, the
    others load that index, as a user's second command does."""
    cfg_path = tmp_path_factory.mktemp(request.param.stem) / "configs" / request.param.name
    cfg_path.parent.mkdir()
    shutil.copy(request.param, cfg_path)
    write_tiny_run(load_config(cfg_path).resolve(load_config(cfg_path).build.out))
    return cfg_path


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_every_move(shipped, tmp_path):
    port = _free_port()
    log = open(tmp_path / "serve.log", "wb")
    cmd = [*RATIO, "serve", "--config", str(shipped), "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=ENV, cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail((tmp_path / "serve.log").read_text()[-3000:])
                time.sleep(0.3)
        for move in ("address", "broaden", "specify"):
            body = json.dumps({"query": QUERY, "move": move, "k": 3}).encode()
            req = urllib.request.Request(
                f"http://127.0.0.1:{port}/search",
                data=body,
                headers={"Content-Type": "application/json"},
            )
            res = json.loads(urllib.request.urlopen(req, timeout=60).read())
            assert res["move"] == move and len(res["results"]) == 3
            assert res["retriever"] == EXPECTED  # nothing trained here: the shipped model
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_search_cli_and_python_api(shipped):
    out = subprocess.run(
        [*RATIO, "search", QUERY, "--config", str(shipped), "--move", "specify", "-k", "2"],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith(f"specify · {EXPECTED} · top 2") and "  2. " in out.stdout
    try:
        hits = ratio.search(QUERY, move="address", k=4, config=shipped)
        path = ratio.chain(QUERY, ["broaden", "specify"], k=2, config=shipped)  # same engine
    finally:
        ratio.api.clear_cache()
    assert len(hits) == 4 and all(h["retriever"] == EXPECTED for h in hits)
    systems = [s["system"] for s in path["steps"]]
    assert systems == (
        [f"shipped@{m}" for m in ("broaden", "specify")] if EXPECTED == "shipped" else ["bm25"] * 2
    )
    assert path["steps"][1]["query"] == path["steps"][0]["chosen"]["text"]


def test_mcp_server(shipped):
    calls = [
        ("broaden", {"statement": QUERY, "k": 2}),
        ("chain", {"statement": QUERY, "moves": ["broaden", "specify"], "k": 2}),
    ]
    tools, results = anyio.run(_session, shipped, calls)
    assert {"address", "broaden", "specify", "moves", "chain"} <= {t.name for t in tools.tools}
    assert len(_payload(results[0])["results"]) == 2
    steps = _payload(results[1])["steps"]
    assert [s["move"] for s in steps] == ["broaden", "specify"] and len(steps[1]["results"]) == 2
