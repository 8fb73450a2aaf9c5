"""Local vs Ray executors, resumable builds, object-storage inputs, bad shards on workers.

The tiny real slice (``scale_slice``: 4 shards x 3 NeurIPS papers) goes through the whole
``ratio build`` under both executors; every Parquet output and every export file must be
byte-identical. One Ray cluster (2 CPUs) is shared by the whole session.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import fsspec
import pyarrow.parquet as pq
import pytest

from ratio.build import build
from ratio.build.dedup import dedup_files, dedup_partitioned
from ratio.core.config import IngestConfig, load_config
from ratio.core.io import InputError
from ratio.corpus.ingest import ingest, ingest_shard
from ratio.corpus.slices import first_lines, write_zst
from ratio.runner.executors import ShardError, map_shards
from tests.conftest import NEURIPS, REPO_ROOT
from tests.scale.conftest import tree_hashes, write_config

pytestmark = pytest.mark.slow


def _cfg(**kw) -> IngestConfig:
    return IngestConfig(**{"workers": 2, "boilerplate_min_papers": 3, **kw})


@pytest.fixture(scope="module")
def local_build(scale_slice, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("local_build")
    cfg = write_config(d / "run.toml", [str(scale_slice)], d / "out", "local")
    build(load_config(cfg), progress=False)
    return d / "out"


def test_ray_build_is_byte_identical_to_local(local_build, scale_slice, ray_cluster, tmp_path):
    cfg = write_config(tmp_path / "run.toml", [str(scale_slice)], tmp_path / "out", "ray")
    res = build(load_config(cfg), progress=False)
    assert res.stages["mine"].ran and res.stages["dedup"].ran
    local, remote = tree_hashes(local_build), tree_hashes(tmp_path / "out")
    assert any(k.startswith("benchmark/test/") for k in local)
    assert any(k.startswith("benchmark/dataset/candidates/split=train/origin=") for k in local)
    assert local == remote
    # the provenance stamp carries no time: only stage, code version, digests, lexicon
    meta = pq.read_schema(tmp_path / "out" / "benchmark" / "test" / "candidates.parquet").metadata
    keys = {k.decode() for k in meta}
    assert keys <= {
        "ratio.stage",
        "ratio.code_version",
        "ratio.config_digest",
        "ratio.lexicon_version",
        "ratio.split",
    }
    q = pq.read_table(tmp_path / "out" / "benchmark" / "test" / "queries.parquet")
    assert q.num_rows > 0
    assert q.sort_by([("relation", "ascending"), ("query_id", "ascending")]).equals(q)


def test_partitioned_dedup_equals_global_dedup(local_build, tmp_path):
    mined = sorted((local_build / "mine").glob("*.parquet"))
    meta = {"ratio.stage": "dedup"}
    a = dedup_files(mined, tmp_path / "a" / "pairs.parquet", meta, threads=2)
    b = dedup_partitioned(
        mined, tmp_path / "b" / "pairs.parquet", meta, threads=2, executor="local", parts=5
    )
    assert a == b and a["pairs"] > 0
    assert (tmp_path / "a" / "pairs.parquet").read_bytes() == (
        tmp_path / "b" / "pairs.parquet"
    ).read_bytes()
    assert not (tmp_path / "b" / ".shuffle").exists()


def test_corrupt_shard_on_ray_worker_is_named_and_others_kept(scale_slice, ray_cluster, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for p in sorted(scale_slice.glob("*.zst"))[:2]:
        (src / p.name).write_bytes(p.read_bytes())
    full = write_zst(
        tmp_path / "full.jsonl.zst", first_lines(NEURIPS / "neurips-2024-01.jsonl.zst", 3)
    )
    (src / "broken-2024.jsonl.zst").write_bytes(full.read_bytes()[: full.stat().st_size // 2])

    res = {}
    for ex in ("local", "ray"):
        res[ex] = ingest(
            [str(src)], "ratio-jsonl", tmp_path / ex, _cfg(), executor=ex, progress=False
        )
        assert any("broken-2024.jsonl.zst" in e for e in res[ex].errors)
        assert res[ex].drops.get("truncated_file") == 1
        assert res[ex].shards == 3 and res[ex].papers >= 6
    assert tree_hashes(tmp_path / "local") == tree_hashes(tmp_path / "ray")

    # --strict: the run stops with the shard named, the good shards' outputs survive
    with pytest.raises(InputError, match="broken-2024.jsonl.zst"):
        ingest(
            [str(src)],
            "ratio-jsonl",
            tmp_path / "strict",
            _cfg(strict=True),
            executor="ray",
            progress=False,
        )
    done = sorted(p.name for p in (tmp_path / "strict" / "raw").glob("*.done.json"))
    assert done == ["neurips-2023-00.done.json", "neurips-2023-01.done.json"]


def test_shard_errors_are_collected_with_names(ray_cluster, neurips_available, tmp_path):
    good = write_zst(
        tmp_path / "good-2025.jsonl.zst", first_lines(NEURIPS / "neurips-2025-00.jsonl.zst", 1)
    )
    cfg = _cfg().__dict__
    tasks = [
        (str(good), "ratio-jsonl", str(tmp_path / "o"), cfg),
        (str(tmp_path / "gone-1.jsonl.zst"), "ratio-jsonl", str(tmp_path / "o"), cfg),
        (str(tmp_path / "gone-2.jsonl.zst"), "ratio-jsonl", str(tmp_path / "o"), cfg),
    ]
    for ex in ("local", "ray"):
        got = []
        with pytest.raises(ShardError) as info:
            for s in map_shards(ingest_shard, tasks, executor=ex, workers=2):
                got.append(s["shard"])
        assert got == ["good-2025"]
        assert sorted(info.value.failures) == ["gone-1.jsonl.zst", "gone-2.jsonl.zst"]
        assert "gone-1.jsonl.zst" in str(info.value)


def test_object_storage_inputs(scale_slice, ray_cluster, tmp_path):
    """memory:// (in-process) and file:// (on Ray workers) inputs give the local results."""
    shards = sorted(scale_slice.glob("*.zst"))[:2]
    base = ingest(
        [str(p) for p in shards], "ratio-jsonl", tmp_path / "plain", _cfg(workers=1), progress=False
    )
    mem = fsspec.filesystem("memory")
    for p in shards:
        mem.pipe_file(f"/bucket/corpus/{p.name}", p.read_bytes())
    got = ingest(
        ["memory://bucket/corpus"], "ratio-jsonl", tmp_path / "mem", _cfg(workers=1), progress=False
    )
    assert (got.papers, got.sentences) == (base.papers, base.sentences)
    for p in shards:
        stem = p.name.removesuffix(".jsonl.zst")
        a = pq.read_table(tmp_path / "plain" / "sentences" / f"{stem}.parquet")
        b = pq.read_table(tmp_path / "mem" / "sentences" / f"{stem}.parquet")
        assert a.equals(b)
        meta = pq.read_schema(tmp_path / "mem" / "raw" / f"{stem}.parquet").metadata
        source = meta[b"ratio.source"].decode()
        assert source.startswith("memory://") and source.endswith(f"bucket/corpus/{p.name}")

    # file:// URLs on Ray workers: the same bytes as plain paths
    urls = [f"file://{p}" for p in shards]
    ingest(urls, "ratio-jsonl", tmp_path / "url", _cfg(), executor="ray", progress=False)
    assert tree_hashes(tmp_path / "url") == tree_hashes(tmp_path / "plain")

    # a per-shard output URL: written whole, marker last, and reused on rerun
    out = "memory://bucket/out"
    s1 = ingest_shard(
        f"memory://bucket/corpus/{shards[0].name}", "ratio-jsonl", out, _cfg().__dict__
    )
    assert mem.exists(f"/bucket/out/raw/{s1['shard']}.parquet")
    assert json.loads(mem.cat_file(f"/bucket/out/raw/{s1['shard']}.done.json"))["papers"] == 3
    s2 = ingest_shard(
        f"memory://bucket/corpus/{shards[0].name}", "ratio-jsonl", out, _cfg().__dict__
    )
    assert s2["reused"] and not s1["reused"]


def _ratio(*args: str, **kw) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("ratio")
    return subprocess.Popen(
        [str(exe), *args],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        **kw,
    )


def test_killed_build_resumes_to_identical_output(tmp_path, neurips_available):
    src = tmp_path / "in"
    src.mkdir()
    names = [
        "neurips-2023-00",
        "neurips-2023-01",
        "neurips-2023-02",
        "neurips-2024-00",
        "neurips-2025-00",
    ]
    for n in names:
        write_zst(src / f"{n}.jsonl.zst", first_lines(NEURIPS / f"{n}.jsonl.zst", 4))
    killed = write_config(tmp_path / "killed.toml", [str(src)], tmp_path / "killed", "local", 1)
    clean = write_config(tmp_path / "clean.toml", [str(src)], tmp_path / "clean", "local", 1)

    proc = _ratio("build", "--config", str(killed))
    raw = tmp_path / "killed" / "ingest" / "raw"
    deadline = time.monotonic() + 60
    while not list(raw.glob("*.done.json")):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "no shard finished within 60 s"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {p.name: p.read_bytes() for p in raw.glob("*.done.json")}
    assert 1 <= len(finished) < len(names)
    assert not (tmp_path / "killed" / "benchmark").exists()

    for cfg in (killed, clean):
        p = _ratio("build", "--config", str(cfg))
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
    stats = json.loads((tmp_path / "killed" / "ingest" / "stats.json").read_text())
    assert stats["reused_shards"] == len(finished)
    for name, before in finished.items():  # finished shards were not redone
        assert (raw / name).read_bytes() == before
    a, b = tree_hashes(tmp_path / "killed"), tree_hashes(tmp_path / "clean")
    assert len(a) > 20 and a == b
    assert not list((tmp_path / "killed").rglob("*.tmp"))
