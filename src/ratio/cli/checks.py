"""``ratio doctor``: load every optional native component once and say what works.

Each check runs in its own Python process: a native library built for the wrong CPU dies with
SIGSEGV or SIGILL rather than raising, and that must be reported as the component's failure
(with the signal's name), not take the self-check down with it.

Tested by tests/retrieval/test_shipped.py.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ratio.judge.llm.backends import JudgeError
from ratio.judge.llm.llamacpp import resolve_gguf
from ratio.retrieval.models import OFFLINE_ENV, ModelNotFoundError, models_dirs
from ratio.retrieval.shipped import latest, load_shipped

PROBE = "the sentence a self-check embeds"


@dataclass
class Check:
    name: str
    status: str  # ok | missing | FAIL
    detail: str
    seconds: float


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


# ---------------------------------------------------------------- the checks (child side)


def _llama() -> str:
    import llama_cpp

    gguf = resolve_gguf("smollm2")
    llm = llama_cpp.Llama(model_path=str(gguf), n_ctx=256, n_threads=1, verbose=False)
    # Any: not streamed, so one response (llama_cpp's annotation has no overload on stream)
    out: Any = llm.create_completion("Hello", max_tokens=1, temperature=0.0)
    features = llama_cpp.llama_print_system_info().decode(errors="replace")
    # "CPU : SSE3 = 1 | AVX = 1 | ..." -> the features compiled in
    simd = [f.split("=")[0].split(":")[-1].strip() for f in features.split("|") if "= 1" in f]
    return (
        f"llama-cpp-python {llama_cpp.__version__}; {gguf.name} answered "
        f"{out['choices'][0]['text']!r}; built with {', '.join(sorted(set(simd))) or '?'}"
    )


def _faiss() -> str:
    import faiss

    x = np.random.default_rng(0).standard_normal((256, 32)).astype("float32")
    index = faiss.IndexFlatIP(32)
    index.add(x)
    _, ids = index.search(x[:4], 1)
    assert ids[:, 0].tolist() == [0, 1, 2, 3], ids
    return f"faiss {faiss.__version__}; exact search over 256 vectors"


def _torch() -> str:
    import torch

    a = torch.randn(64, 64)
    torch.testing.assert_close(a @ torch.eye(64), a)
    return f"torch {torch.__version__}; {torch.get_num_threads()} threads; cuda={torch.cuda.is_available()}"


def _embedding(model: str) -> Callable[[], str]:
    def check() -> str:
        # lazy: dense + its exporters and cache (~30 ms) stay off the `ratio --help` path
        from ratio.retrieval.dense import Encoder

        enc = Encoder(model)
        v = enc.encode([PROBE])
        return f"{enc.path} ({enc.backend}); dim {v.shape[1]}"

    return check


def _shipped() -> str:
    """The move model ``auto`` serves out of the box: every file against its manifest."""
    # lazy: as in _embedding
    from ratio.retrieval.dense import Encoder

    folder = latest(models_dirs())
    if folder is None:
        raise FileNotFoundError(
            "no models/ratio-moves-*-v<N> folder: `auto` serves BM25 until a model is trained"
        )
    s = load_shipped(folder)
    v = Encoder(str(folder)).encode([s.instructions["address"] + PROBE])
    return f"{folder} ({s.content_hash[:23]}…, every file verified); dim {v.shape[1]}"


def _ray() -> str:
    import ray

    return f"ray {ray.__version__} imports (the cluster itself starts with `ratio build --executor ray`)"


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        raise FileNotFoundError(
            "no chromium on PATH (apt-get install chromium); browser tests skip"
        )
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    return f"{out.stdout.strip()} at {exe}; playwright {_version('playwright')}"


CHECKS: dict[str, Callable[[], str]] = {
    "llama.cpp": _llama,
    "faiss": _faiss,
    "torch": _torch,
    **{m: _embedding(m) for m in ("all-MiniLM-L6-v2", "all-mpnet-base-v2", "potion-mpnet-256")},
    "shipped model": _shipped,
    "ray": _ray,
    "chromium": _chromium,
}


# ---------------------------------------------------------------- the runner (parent side)


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"crashed with {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def run_check(name: str, timeout_s: float = 120) -> Check:
    """One check in a fresh interpreter; a crash or hang becomes that check's FAIL."""
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "ratio.cli.checks", name]
    env = {**os.environ, **OFFLINE_ENV}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return Check(name, "FAIL", f"no answer in {timeout_s:.0f}s", time.perf_counter() - t0)
    dt = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("ok\t", "missing\t", "FAIL\t"))]
    if p.returncode == 0 and lines:
        status, detail = lines[-1].split("\t", 1)
        return Check(name, status, detail, dt)
    tail = " | ".join(p.stderr.strip().splitlines()[-3:])
    return Check(name, "FAIL", f"{_describe_exit(p.returncode)}: {tail}".rstrip(": "), dt)


def run_all(names: list[str] | None = None) -> list[Check]:
    """Every check, two at a time (most of a check's time is one process importing torch)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(run_check, names or list(CHECKS)))


def _child(name: str) -> None:
    """Run one check here and print ``status<TAB>detail``; an import error means not installed."""
    try:
        print(f"ok\t{CHECKS[name]()}", flush=True)
    except (ImportError, FileNotFoundError, JudgeError, ModelNotFoundError) as e:
        print(f"missing\t{type(e).__name__}: {e}", flush=True)
    except Exception as e:  # noqa: BLE001 - any failure is the component's, reported by name
        print(f"FAIL\t{type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    _child(sys.argv[1])
