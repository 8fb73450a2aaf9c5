"""Run a pure per-shard function over many shards: locally or on Ray.

Stages hand this module a top-level function and a list of argument tuples; the
function writes its own output atomically and returns a small JSON-able summary.
Because outputs are per shard and marked done, any executor can resume a
killed run by skipping shards whose marker is present.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from ratio.io import RatioError

EXECUTORS = ("local", "ray")


def run_shards(
    fn: Callable[..., dict],
    tasks: Sequence[tuple],
    executor: str = "local",
    workers: int = 2,
    address: str = "",
) -> Iterator[dict]:
    """Yield ``fn(*task)`` summaries as shards finish (completion order)."""
    if executor not in EXECUTORS:
        raise RatioError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if not tasks:
        return
    if executor == "ray":
        yield from _run_ray(fn, tasks, workers, address)
        return
    workers = max(1, min(workers, len(tasks), os.cpu_count() or 1))
    if workers == 1:
        for task in tasks:
            yield fn(*task)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending = {pool.submit(fn, *task) for task in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()


def _run_ray(fn: Callable[..., dict], tasks: Sequence[tuple], workers: int, address: str) -> Iterator[dict]:
    try:
        import ray
    except ModuleNotFoundError as e:
        raise RatioError("executor 'ray' needs the ray extra: pip install 'ratio-ir[ray]'") from e
    started_here = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            kwargs["address"] = address
        else:
            kwargs["num_cpus"] = workers
        ray.init(**kwargs)
        started_here = True
    try:
        remote = ray.remote(num_cpus=1)(fn)
        pending = [remote.remote(*task) for task in tasks]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        if started_here:
            ray.shutdown()
