"""The stage runner: skip when up to date, rerun on a new key or a missing output, record
completion last (a failed or killed run is never taken for finished), clean up after a
killed run, and run shards on any executor with their markers."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import pytest

from ratio.runner.executors import ShardError
from ratio.runner.stages import Shard, Stage, remove_stale, run_shard, run_sharded, run_stage


def _stage(tmp_path: Path, key: dict, calls: list, fail: bool = False) -> Stage:
    out = tmp_path / "s" / "out.txt"

    def make() -> dict:
        calls.append(1)
        out.parent.mkdir(exist_ok=True)
        out.write_text("data")
        if fail:
            raise RuntimeError("killed half-way")
        return {"counts": {"rows": 1}}

    return Stage("s", tmp_path / "s" / "manifest.json", key, [out], make, detail="counts")


def test_stage_skips_when_up_to_date_and_reruns_on_new_key_or_missing_output(tmp_path):
    calls: list = []
    st, m = run_stage(_stage(tmp_path, {"v": 1}, calls))
    assert st.ran and st.detail == {"rows": 1} and m["key"] == {"v": 1}
    recorded = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert recorded["stage"] == "s" and recorded["counts"] == {"rows": 1}
    assert {"key_digest", "code_version", "finished_at"} <= set(recorded)

    st, _ = run_stage(_stage(tmp_path, {"v": 1}, calls))
    assert not st.ran and st.detail == {"rows": 1} and len(calls) == 1
    st, _ = run_stage(_stage(tmp_path, {"v": 2}, calls))
    assert st.ran and len(calls) == 2
    (tmp_path / "s" / "out.txt").unlink()
    assert run_stage(_stage(tmp_path, {"v": 2}, calls))[0].ran


def test_failed_stage_leaves_no_manifest_and_temporaries_are_removed(tmp_path):
    calls: list = []
    run_stage(_stage(tmp_path, {"v": 1}, calls))
    with pytest.raises(RuntimeError):
        run_stage(_stage(tmp_path, {"v": 2}, calls, fail=True))
    assert not (tmp_path / "s" / "manifest.json").exists()
    leftover = tmp_path / "s" / ".out.txt.abc.tmp"  # what a killed atomic write leaves
    leftover.write_text("partial")
    assert run_stage(_stage(tmp_path, {"v": 1}, calls))[0].ran  # old key, but no record
    assert not leftover.exists()


def test_clean_removes_a_folder_rewritten_whole(tmp_path):
    folder = tmp_path / "export"
    (folder / "old").mkdir(parents=True)

    def make() -> dict:
        (folder / "new").mkdir(parents=True)
        return {}

    stage = Stage("e", tmp_path / "manifest.json", {}, [folder / "new"], make, clean=[folder])
    run_stage(stage)
    assert sorted(p.name for p in folder.iterdir()) == ["new"]


def write_upper(src: str, dst: str) -> dict:
    """A shard step: writes its output, returns its counts (no marker: the runner's job)."""
    text = Path(src).read_text()
    if text == "bad":
        raise ValueError(f"{src}: unreadable")
    Path(dst).write_text(text.upper())
    return {"chars": len(text)}


def _shards(tmp_path: Path, names: list[str]) -> list[Shard]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    return [
        Shard(
            n,
            write_upper,
            (str(tmp_path / f"{n}.txt"), str(out / f"{n}.parquet")),
            key={"input": (tmp_path / f"{n}.txt").read_text()},
            marker=str(out / f"{n}.done.json"),
            outputs=(str(out / f"{n}.parquet"),),
        )
        for n in names
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_shards_are_marked_reused_and_failures_keep_the_others(tmp_path, workers):
    for n, text in (("a", "one"), ("b", "two"), ("c", "bad")):
        (tmp_path / f"{n}.txt").write_text(text)
    with pytest.raises(ShardError) as info:
        run_sharded(_shards(tmp_path, ["a", "b", "c"]), desc="t", workers=workers, progress=False)
    assert list(info.value.failures) == ["c.txt"]
    marker = json.loads((tmp_path / "out" / "a.done.json").read_text())
    assert marker["shard"] == "a" and marker["chars"] == 3 and marker["key"] == {"input": "one"}
    assert not (tmp_path / "out" / "c.done.json").exists()

    (tmp_path / "c.txt").write_text("three")
    got = run_sharded(_shards(tmp_path, ["a", "b", "c"]), desc="t", workers=workers)
    assert [(s["shard"], s["reused"]) for s in got] == [("a", True), ("b", True), ("c", False)]
    (tmp_path / "b.txt").write_text("changed")
    got = run_sharded(_shards(tmp_path, ["a", "b", "c"]), desc="t", workers=workers)
    assert [s["reused"] for s in got] == [True, False, True]


def test_a_shard_without_marker_always_runs_and_stale_outputs_go(tmp_path):
    (tmp_path / "a.txt").write_text("one")
    (shard,) = _shards(tmp_path, ["a"])
    shard.marker = ""
    assert not run_shard(shard)["reused"] and not run_shard(shard)["reused"]
    (tmp_path / "out" / "gone.parquet").write_text("x")
    (tmp_path / "out" / "gone.done.json").write_text("{}")
    remove_stale(tmp_path / "out", {"a"})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.parquet"]


def test_url_markers(tmp_path):
    """Outputs and markers may live in object storage (``ratio.core.storage``)."""
    (tmp_path / "a.txt").write_text("one")
    mem = fsspec.filesystem("memory")
    mem.pipe_file("/stages-test/a.parquet", b"x")
    shard = Shard(
        "a",
        write_upper,
        (str(tmp_path / "a.txt"), str(tmp_path / "a.out")),
        key={"k": 1},
        marker="memory://stages-test/a.done.json",
        outputs=("memory://stages-test/a.parquet",),
    )
    assert not run_shard(shard)["reused"]
    assert json.loads(mem.cat_file("/stages-test/a.done.json"))["chars"] == 3
    assert run_shard(shard)["reused"]
