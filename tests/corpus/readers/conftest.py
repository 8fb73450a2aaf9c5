"""Fixtures for reader tests: the real samples in ../shared and tiny fixtures in tests/data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SAMPLES = REPO_ROOT.parent / "shared" / "corpora" / "samples"
DATA = REPO_ROOT / "tests" / "data" / "readers"


@pytest.fixture(scope="session")
def s2orc_example() -> Path:
    path = SAMPLES / "s2orc" / "example_paper.json"
    if not path.is_file():
        pytest.skip(f"S2ORC example not found at {path}")
    return path


@pytest.fixture(scope="session")
def unarxive_shard() -> Path:
    path = SAMPLES / "unarxive" / "arXiv_src_2212_086.jsonl.zst"
    if not path.is_file():
        pytest.skip(f"unarXive sample not found at {path}")
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
