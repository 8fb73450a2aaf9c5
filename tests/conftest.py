"""Shared fixtures: paths to the shared corpus and small real slices of it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ratio.corpus.slices import first_lines, write_zst
from ratio.retrieval.models import offline_hf

pytest_plugins = ["pytester"]  # tests/test_isolation.py runs an inner pytest session

offline_hf()

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
NEURIPS = SHARED / "corpora" / "neurips"
MODELS = Path(os.environ.get("RATIO_MODELS", REPO_ROOT / "models"))


def load_script(name: str) -> ModuleType:
    """A fresh import of ``scripts/<name>.py`` (scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def neurips_available() -> bool:
    if not NEURIPS.is_dir():
        pytest.skip(f"shared corpus not found at {NEURIPS}")
    return True


@pytest.fixture(scope="session")
def neurips_slice(tmp_path_factory, neurips_available) -> Path:
    """A folder with two tiny real shards: 3 Nougat papers (2023) and 3 docling papers (2025)."""
    d = tmp_path_factory.mktemp("neurips_slice")
    write_zst(
        d / "neurips-2023-00.jsonl.zst", first_lines(NEURIPS / "neurips-2023-00.jsonl.zst", 3)
    )
    write_zst(
        d / "neurips-2025-00.jsonl.zst", first_lines(NEURIPS / "neurips-2025-00.jsonl.zst", 3)
    )
    return d
