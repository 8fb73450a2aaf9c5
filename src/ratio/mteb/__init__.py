"""Ratio's three ideation moves (Address, Broaden, Specify) as MTEB retrieval tasks.

Why it exists: a model author who evaluates with ``mteb`` scores a model on Ratio with
``mteb.evaluate(model, ratio.mteb.tasks(run_dir))``, without Ratio's CLI, and gets the number
``ratio evaluate`` reports for that model: each task's queries, qrels and pool are read by the
benchmark reader and cut by the evaluation harness's seeded sampler (``ratio.mteb.data``), not
re-implemented. The data loads from a built run directory on local disk, never from the hub.

``mteb`` is the optional ``mteb`` extra (``pip install 'ratio-ir[mteb]'``): importing this
package does not need it; :func:`tasks` does, and says so when it is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ratio.core.io import RatioError
from ratio.core.records import RELATIONS
from ratio.mteb.data import MoveData, RunSource, move_data

if TYPE_CHECKING:
    from ratio.mteb.moves import RatioMoveTask

__all__ = ["MoveData", "MtebMissingError", "move_data", "tasks"]


class MtebMissingError(RatioError, ImportError):
    pass


def tasks(
    run_dir: RunSource,
    split: str = "test",
    *,
    relations: Sequence[str] = RELATIONS,
    max_pool: int = 0,
    max_queries: int = 0,
    seed: int | None = None,
    oracle: str = "none",
) -> list[RatioMoveTask]:
    """One mteb retrieval task per move (Address, Broaden, Specify by default) on ``split`` of
    a built run: ``run_dir`` is the run directory (``build.out``), a run config or its TOML
    file. ``max_pool`` / ``max_queries`` / ``seed`` / ``oracle`` select the same pool and
    queries as the ``[[evaluate.systems]]`` settings of those names under ``ratio evaluate``
    (0 = the full pool / every query; ``seed`` defaults to the config's ``build.seed``, 13 for
    a bare directory). Main score: ``mrr_at_10``, the paper's primary metric."""
    try:
        from ratio.mteb.moves import make_tasks
    except ImportError as e:
        raise MtebMissingError(
            f"ratio.mteb.tasks needs mteb 2 ({e}); install the extra: "
            "pip install 'ratio-ir[mteb]' (or pip install 'mteb>=2,<3')"
        ) from e
    data = move_data(
        run_dir,
        split,
        relations=relations,
        max_pool=max_pool,
        max_queries=max_queries,
        seed=seed,
        oracle=oracle,
    )
    return make_tasks(data)
