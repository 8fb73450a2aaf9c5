"""One local Ray cluster for the whole session (starting Ray takes seconds) and a small real slice."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ratio.corpus.slices import first_lines, write_zst
from tests.conftest import NEURIPS

# (source shard, papers): spread over the three years so every split gets rows.
SLICE = [
    ("neurips-2023-00.jsonl.zst", 3),
    ("neurips-2023-01.jsonl.zst", 3),
    ("neurips-2024-00.jsonl.zst", 3),
    ("neurips-2025-00.jsonl.zst", 3),
]


@pytest.fixture(scope="session")
def ray_cluster():
    ray = pytest.importorskip("ray")
    started = False
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        started = True
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="session")
def scale_slice(tmp_path_factory, neurips_available) -> Path:
    """Four tiny real shards (3 papers each) from 2023, 2023, 2024 and 2025."""
    d = tmp_path_factory.mktemp("scale_slice")
    for name, n in SLICE:
        write_zst(d / name, first_lines(NEURIPS / name, n))
    return d


def tree_hashes(
    root: Path, patterns=("**/*.parquet", "export/**/*.jsonl", "export/**/*.tsv")
) -> dict:
    """SHA-256 of every file under ``root`` matching ``patterns``, by relative path."""
    out = {}
    for pat in patterns:
        for p in root.glob(pat):
            if p.is_file() and not p.name.startswith("."):
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return dict(sorted(out.items()))


def write_config(path: Path, inputs: list[str], out: Path, executor: str, workers: int = 2) -> Path:
    """A run config over ``inputs`` with year splits (2023 / 2024 / 2025)."""
    quoted = ", ".join(f'"{i}"' for i in inputs)
    path.write_text(
        f"""name = "scale"
[corpus]
inputs = [{quoted}]
format = "ratio-jsonl"
[ingest]
workers = {workers}
[split]
train_end = "2023"
validation_end = "2024"
test_end = "2025"
[build]
out = "{out}"
executor = "{executor}"
""",
        encoding="utf-8",
    )
    return path
