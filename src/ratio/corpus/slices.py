"""Small real slices of JSONL shards, for tests and benchmarks that must not read a whole corpus.

Tested by tests/corpus/test_ingest.py, tests/judge/llm/test_llamacpp.py.
"""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import time
import urllib.request
from itertools import islice
from pathlib import Path

import zstandard


def first_lines(path: Path | str, n: int) -> list[bytes]:
    """The first ``n`` raw lines of a ``.zst`` JSONL shard."""
    with open(path, "rb") as fh:
        lines = io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(fh))
        return list(islice(lines, n))


def write_zst(path: Path, lines: list[bytes]) -> Path:
    """Write raw JSONL lines as one zstd frame; returns ``path``."""
    path.write_bytes(zstandard.ZstdCompressor().compress(b"".join(lines)))
    return path


def start_llama_server(
    gguf: Path, log: Path, *, alias: str, n_ctx: int = 4096, threads: int = 1, wait_s: float = 120
):
    """``python -m llama_cpp.server`` on a free loopback port; returns (process, base URL).

    Output goes to ``log`` (a pipe nobody reads would fill and stall the server). Raises
    ``RuntimeError`` with the log's tail when the server exits or does not answer in time.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", alias]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            urllib.request.urlopen(base + "/models", timeout=2)
            return proc, base
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                tail = Path(log).read_text(errors="replace")[-2000:]
                raise RuntimeError(f"llama_cpp.server did not start: {tail}") from None
            time.sleep(0.5)
