"""The stage runner: skip what is up to date, run the rest, record that it finished.

A stage declares its *key* (what its output depends on), its outputs and a function that
makes them; this module alone decides whether it runs and records that it did, as
datatrove's executor, not its steps, owns markers and skipping. The rules (up to date =
same key and every output exists; the code version is recorded, not keyed; the record is
removed first and written last) are in docs/architecture.md, "The stage runner".
:class:`Stage` has one manifest and runs in-process (:func:`run_stage`); :class:`Shard` is
one of many pieces with its own marker, run on any executor (:func:`run_sharded`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ratio.core import storage
from ratio.core.io import write_text_atomic
from ratio.core.provenance import code_version
from ratio.runner.executors import default_label, map_shards


def digest(obj: Any) -> str:
    """A short stable hash of a JSON-able key (what manifests and stamps record)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def read_json(path: str | Path) -> dict | None:
    """A manifest or marker, or None when it is missing or unreadable (never trusted then)."""
    try:
        return json.loads(storage.read_text(path))
    except (OSError, ValueError):
        return None


@dataclass
class StageResult:
    """What one stage did in this run; ``detail`` holds its counts (fresh or recorded)."""

    name: str
    ran: bool = False
    seconds: float = 0.0
    detail: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- one manifest


@dataclass
class Stage:
    """A stage with one manifest for all its outputs (files or folders).

    ``run`` makes ``outputs`` and returns the fields recorded in the manifest beside the
    key; ``detail`` names the one reported as :attr:`StageResult.detail`. E.g.::

        stage = Stage("pool", pool_dir / "manifest.json", key={"inputs": signature},
                      outputs=[pool_dir / "pool.arrow"], run=lambda: write_pool(pool_dir))
        result, manifest = run_stage(stage)  # result.ran: False when it was up to date
    """

    name: str
    manifest: Path
    key: dict
    outputs: Sequence[Path]
    run: Callable[[], dict]
    clean: Sequence[Path] = ()  # removed before running: folders the stage rewrites whole
    lexicon_version: str = ""
    detail: str = ""


def up_to_date(manifest: str | Path, key: dict, outputs: Sequence[str | Path]) -> dict | None:
    """The recorded manifest (or marker) when it matches ``key`` and every output exists."""
    m = read_json(manifest)
    if m and m.get("key") == key and all(storage.exists(p) for p in outputs):
        return m
    return None


def run_stage(stage: Stage) -> tuple[StageResult, dict]:
    """Run ``stage`` unless it is up to date; returns its result and its manifest."""
    m = up_to_date(stage.manifest, stage.key, stage.outputs)
    if m is not None:
        return StageResult(stage.name, detail=m.get(stage.detail, {}) if stage.detail else {}), m
    t0 = time.perf_counter()
    stage.manifest.unlink(missing_ok=True)
    for p in stage.clean:
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    remove_temporaries(p.parent for p in stage.outputs)
    extra = stage.run()
    m = {
        "stage": stage.name,
        "key": stage.key,
        "key_digest": digest(stage.key),
        "code_version": code_version(),
        "lexicon_version": stage.lexicon_version,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **extra,
    }
    write_text_atomic(stage.manifest, json.dumps(m, indent=1, sort_keys=True, default=str))
    detail = extra.get(stage.detail, {}) if stage.detail else {}
    return StageResult(stage.name, ran=True, seconds=time.perf_counter() - t0, detail=detail), m


# --------------------------------------------------------------------------- many shards


@dataclass
class Shard:
    """One independent piece of a sharded stage: ``step(*args)`` makes ``outputs``.

    ``step`` is a top-level function (it is pickled to the workers) returning a small
    JSON-able summary, which the marker records. Paths may be URLs (``ratio.core.storage``). A shard
    without a ``marker`` always runs: a per-shard pass covered by its stage's manifest.
    """

    name: str
    step: Callable[..., dict]
    args: tuple
    key: dict = field(default_factory=dict)
    marker: str = ""
    outputs: tuple[str, ...] = ()

    def done(self) -> dict | None:
        """The marker's summary when this shard's output is finished for the current key."""
        return up_to_date(self.marker, self.key, self.outputs) if self.marker else None


def run_shard(shard: Shard) -> dict:
    """Make one shard in this process, or reuse it; the summary says which (``reused``)."""
    done = shard.done()
    if done is not None:
        return {**done, "reused": True}
    t0 = time.perf_counter()
    result = shard.step(*shard.args)
    summary = {
        "shard": shard.name,
        "key": shard.key,
        **result,
        "seconds": round(time.perf_counter() - t0, 3),
        "code_version": code_version(),
    }
    if shard.marker:
        storage.write_text(shard.marker, json.dumps(summary, indent=1, sort_keys=True))
    return {**summary, "reused": False}


def run_sharded(
    shards: Sequence[Shard],
    *,
    desc: str,
    executor: str = "local",
    workers: int = 2,
    address: str = "",
    progress: bool | None = None,
    postfix: Callable[[list[dict]], dict] | None = None,
) -> list[dict]:
    """Every shard's summary, in ``shards`` order: finished ones reused, the rest run on
    ``executor`` (:func:`ratio.runner.executors.map_shards`). The progress bar counts reused shards
    at once; ``postfix`` turns the summaries so far into its postfix."""
    summaries: dict[str, dict] = {}
    todo: list[Shard] = []
    for s in shards:
        done = s.done()
        if done is None:
            todo.append(s)
        else:
            summaries[s.name] = {**done, "reused": True}
    bar = tqdm(
        total=len(shards), desc=desc, unit="shard", disable=True if progress is False else None
    )

    def tick() -> None:
        bar.update(1)
        if postfix is not None:
            bar.set_postfix(postfix(list(summaries.values())))

    for _ in summaries:
        tick()
    if todo:
        remove_temporaries(
            Path(p).parent
            for s in todo
            for p in (s.marker, *s.outputs)
            if p and not storage.is_url(p)
        )
    try:
        for summary in map_shards(
            run_shard,
            [(s,) for s in todo],
            executor=executor,
            workers=workers,
            address=address,
            label=lambda task: default_label(task[0].args),
        ):
            summaries[summary["shard"]] = summary
            tick()
    finally:
        bar.close()
    return [summaries[s.name] for s in shards]


# --------------------------------------------------------------------------- clean-up


def remove_temporaries(folders: Iterable[Path]) -> None:
    """Temporary files a killed run left (``ratio.core.io.atomic_path`` names them ``.<file>.*.tmp``)."""
    for folder in set(folders):
        for tmp in Path(folder).glob(".*.tmp"):
            if tmp.is_file():
                tmp.unlink(missing_ok=True)


def remove_stale(folder: Path, keep: set[str]) -> None:
    """Shard outputs (``<name>.parquet`` and marker) whose input no longer exists upstream,
    so they cannot leak into later stages."""
    for stale in folder.glob("*.parquet"):
        if stale.stem not in keep:
            stale.unlink()
            (folder / f"{stale.stem}.done.json").unlink(missing_ok=True)
