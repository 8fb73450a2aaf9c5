"""Run a pure per-shard function over many shards: locally or on Ray.

The function writes its own output atomically and returns a small JSON-able summary;
skipping finished shards and writing their markers is the stage runner's job
(:func:`ratio.runner.stages.run_sharded`), so the executor changes only where a shard runs, never
what it writes: ``local`` and ``ray`` builds are byte-identical. A failing shard does not
take the others down: the failures are raised together at the end (:class:`ShardError`),
so a rerun redoes only those.

Tested by tests/runner/test_stages.py, tests/scale/test_scale.py.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from ratio.core.io import InputError, RatioError
from ratio.core.provenance import code_version

EXECUTORS = ("local", "ray")


class ShardError(RatioError):
    """One or more shards failed; ``failures`` maps shard label -> error message."""

    def __init__(self, failures: dict[str, str], done: int):
        self.failures = dict(sorted(failures.items()))
        self.done = done
        lines = [f"  {k}: {v}" for k, v in self.failures.items()]
        super().__init__(
            f"{len(failures)} shard(s) failed ({done} finished and kept; rerun to retry "
            "only the failed ones):\n" + "\n".join(lines)
        )


def default_label(task: tuple) -> str:
    """A task's shard name: the file name of its first argument."""
    if not task:
        return "?"
    return os.path.basename(str(task[0]).rstrip("/")) or str(task[0])


@dataclass
class _Failure:
    """An exception raised inside a worker, in a form that always pickles.

    Exceptions with custom constructors (``InputError(source, line, reason, kind)``)
    do not survive pickling through a process pool or Ray, so the worker sends this
    instead and the driver rebuilds the error.
    """

    type_name: str
    message: str
    input_error: tuple | None = None  # (source, line, reason, kind)

    def rebuild(self) -> BaseException:
        if self.input_error is not None:
            return InputError(*self.input_error)
        if self.type_name == "RatioError":
            return RatioError(self.message)
        return RuntimeError(f"{self.type_name}: {self.message}")


def _guarded(fn: Callable[..., dict], *task: Any) -> dict | _Failure:
    """Run one task in a worker; turn its exception into a picklable :class:`_Failure`."""
    try:
        return fn(*task)
    except InputError as e:
        return _Failure(type(e).__name__, str(e), (e.source, e.line, e.reason, e.kind))
    except Exception as e:  # noqa: BLE001 - reported with the shard name by the driver
        first = (str(e).strip().splitlines() or [""])[0]
        return _Failure(type(e).__name__, first)


def _original(exc: BaseException) -> BaseException:
    cause = getattr(exc, "cause", None)  # ray.exceptions.RayTaskError keeps the original
    return cause if isinstance(cause, BaseException) else exc


def _describe(exc: BaseException) -> str:
    exc = _original(exc)
    first = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, RatioError) or type(exc) is RuntimeError:
        return first  # a user message, or rebuilt from a _Failure (the type is in it already)
    return f"{type(exc).__name__}: {first}"


def map_shards(
    fn: Callable[..., dict],
    tasks: Sequence[tuple],
    executor: str = "local",
    workers: int = 2,
    address: str = "",
    label: Callable[[tuple], str] = default_label,
) -> Iterator[dict]:
    """Yield ``fn(*task)`` summaries as shards finish (completion order).

    ``local`` runs a process pool of ``workers`` (in-process when 1); ``ray`` runs
    one Ray task per shard on the cluster at ``address``, or on a local Ray started
    with ``num_cpus=workers`` when no address is given and Ray is not initialized.
    Raises :class:`ShardError` after all other shards finished if any failed.
    """
    if executor not in EXECUTORS:
        raise RatioError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if not tasks:
        return
    _pin_code_version()
    failures: dict[str, BaseException] = {}
    done = 0
    if executor == "ray":
        runner = _run_ray(fn, tasks, workers, address, label)
    else:
        runner = _run_local(fn, tasks, workers)
    for task, result in runner:
        if isinstance(result, _Failure):
            result = result.rebuild()
        if isinstance(result, BaseException):
            failures[label(task)] = result
            continue
        done += 1
        yield result
    if len(failures) == 1:
        (exc,) = failures.values()
        if isinstance(_original(exc), InputError):  # names its file (and line) already
            raise _original(exc)
    if failures:
        raise ShardError({k: _describe(v) for k, v in failures.items()}, done)


def _pin_code_version() -> None:
    """Hand the driver's code version to the workers (``RATIO_CODE_VERSION``).

    Each process would otherwise ask git on its own: a commit during a long build, or
    nodes with different checkouts, would stamp shards of one build with different
    versions and break byte-identity. Honoured by ``ratio.core.provenance.code_version``.
    """
    os.environ.setdefault("RATIO_CODE_VERSION", code_version())


_Outcome = dict | _Failure | BaseException  # a summary, or why a shard has none


def _run_local(
    fn: Callable[..., dict], tasks: Sequence[tuple], workers: int
) -> Iterator[tuple[tuple, _Outcome]]:
    workers = max(1, min(workers, len(tasks), os.cpu_count() or 1))
    if workers == 1:
        for task in tasks:
            yield task, _guarded(fn, *task)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending = {pool.submit(_guarded, fn, *task): task for task in tasks}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                try:
                    result: _Outcome = fut.result()
                except Exception as e:  # noqa: BLE001 - a worker killed mid-shard
                    result = e
                yield pending.pop(fut), result


def ray_init(workers: int = 2, address: str = "") -> bool:
    """Connect to (``address``) or start a local Ray, once per process; True when this call did."""
    try:
        import ray
    except ModuleNotFoundError as e:
        raise RatioError("executor 'ray' needs Ray: pip install 'ray[data]'") from e
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if os.environ.get("RATIO_CODE_VERSION"):  # see _pin_code_version
        kwargs["runtime_env"] = {
            "env_vars": {"RATIO_CODE_VERSION": os.environ["RATIO_CODE_VERSION"]}
        }
    if address:
        kwargs["address"] = address
    else:
        kwargs["num_cpus"] = max(1, workers)
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise RatioError(f"cannot start or reach {where}: {e}") from e
    # One connection serves every stage of a build (ingest, mine, dedup map and reduce):
    # starting Ray takes seconds, so it stays up until the process exits.
    atexit.register(ray.shutdown)
    return True


def _run_ray(
    fn: Callable[..., dict],
    tasks: Sequence[tuple],
    workers: int,
    address: str,
    label: Callable[[tuple], str],
) -> Iterator[tuple[tuple, _Outcome]]:
    import ray

    ray_init(workers, address)
    pending: dict[Any, tuple] = {}
    try:
        # Application errors are not retried (they would fail again); a lost worker or
        # node is, by Ray's default max_retries, since every shard task is idempotent.
        remote = ray.remote(num_cpus=1)(_guarded)
        name = getattr(fn, "__name__", "task")  # task names show the shard in `ray list tasks`
        pending = {
            remote.options(name=f"{name}:{label(task)}").remote(fn, *task): task for task in tasks
        }
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1)
            for ref in finished:
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as e:  # a lost worker or node, after retries
                    result = e
                yield pending.pop(ref), result
    finally:
        for ref in pending:  # the consumer stopped early: do not leave work running
            ray.cancel(ref)
