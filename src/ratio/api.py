"""``ratio.search``, ``ratio.moves`` and ``ratio.chain``: inspiration search from Python, over
the same engine as the server.

>>> import ratio
>>> hits = ratio.search("Reward models are easy to over-optimize.", move="broaden",
...                     config="configs/neurips.toml", k=5, exclude_paper="abc123")
>>> path = ratio.chain("Reward models are easy to over-optimize.", ["broaden", "specify"],
...                    config="configs/neurips.toml", k=5, prefer_other="year")

The engine (pool file, memory-mapped indexes, loaded models) is opened once per (config, pool
options) and cached for the life of the process, so a notebook or an agent loop pays the
startup cost only on its first call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ratio.core.config import RunConfig
from ratio.serve.engine import SearchEngine

FILTERS = ("year_min", "year_max", "venue", "exclude_paper")

_ENGINES: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _config_key(config: RunConfig | str | os.PathLike | None) -> tuple[Any, RunConfig | str | None]:
    if config is None:
        config = os.environ.get("RATIO_CONFIG") or None
    if isinstance(config, RunConfig):
        return ("object", id(config)), config
    if config is None:
        return ("defaults", os.getcwd()), None
    return ("file", str(Path(config).resolve())), str(config)


def engine(
    config: RunConfig | str | os.PathLike | None = None,
    *,
    split: str | None = None,
    source: str | None = None,
    candidates: str | os.PathLike | None = None,
):
    """The cached :class:`~ratio.serve.engine.SearchEngine` for a config and pool options.

    ``config`` is a TOML path, a loaded ``RunConfig``, or None for ``$RATIO_CONFIG``
    (else the defaults, which read ``runs/neurips`` under the working directory).
    """
    ckey, cfg = _config_key(config)
    key = (ckey, split, source, str(candidates) if candidates else None)
    eng = _ENGINES.get(key)
    if eng is None:
        with _LOCK:
            eng = _ENGINES.get(key)
            if eng is None:
                eng = SearchEngine.open(cfg, split=split, source=source, candidates=candidates)
                _ENGINES[key] = eng
    return eng


def _filtered_engine(
    filters: dict[str, Any], config: RunConfig | str | os.PathLike | None, **pool: Any
):
    """Check the filter names, then the engine: a misspelt filter fails before any load."""
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise TypeError(f"unknown filter(s) {', '.join(unknown)}; filters are {', '.join(FILTERS)}")
    return engine(config, **pool)


def search(
    query: str,
    move: str = "address",
    k: int = 10,
    config: RunConfig | str | os.PathLike | None = None,
    retriever: str | None = None,
    *,
    split: str | None = None,
    source: str | None = None,
    candidates: str | os.PathLike | None = None,
    **filters: Any,
) -> list[dict[str, Any]]:
    """Top-``k`` candidate sentences for ``query`` under an ideation ``move``.

    ``move`` is ``address`` (approaches to a stated problem), ``broaden`` (more general
    formulations) or ``specify`` (concrete instances). ``retriever``: None/``auto`` (per move,
    the validation winner among BM25, the untuned base model, the move's specialist and the
    unified model; with nothing trained, the configured default), ``bm25``, ``dense``,
    ``hybrid``, ``trained`` (the move's specialist), ``unified`` or a system named in the
    config. Filters: ``year_min``, ``year_max``, ``venue``, ``exclude_paper``. Each result is a
    dict with ``candidate_id``, ``text``, ``paper_id``, ``title``, ``year``, ``venue``,
    ``url`` (where to read the paper, or None), ``section``, ``context`` (``prev``/``next``),
    ``score``, ``rank`` and ``retriever``.
    """
    eng = _filtered_engine(filters, config, split=split, source=source, candidates=candidates)
    return eng.search(query, move, k, retriever, **filters)["results"]


def moves(
    query: str,
    k: int = 10,
    config: RunConfig | str | os.PathLike | None = None,
    retriever: str | None = None,
    *,
    split: str | None = None,
    source: str | None = None,
    candidates: str | os.PathLike | None = None,
    **filters: Any,
) -> dict[str, list[dict[str, Any]]]:
    """All three moves for one query: ``{"address": [...], "broaden": [...], "specify": [...]}``."""
    eng = _filtered_engine(filters, config, split=split, source=source, candidates=candidates)
    out = eng.moves(query, k, retriever, **filters)["moves"]
    return {m: r["results"] for m, r in out.items()}


def chain(
    query: str,
    moves: Sequence[str],
    k: int = 10,
    config: RunConfig | str | os.PathLike | None = None,
    retriever: str | None = None,
    *,
    picks: Sequence[int | str | None] | None = None,
    exclude_own_paper: bool = True,
    prefer_other: str = "none",
    split: str | None = None,
    source: str | None = None,
    candidates: str | os.PathLike | None = None,
    **filters: Any,
) -> dict[str, Any]:
    """Moves applied one after another (``["broaden", "specify"]``), each to the hit the step
    before chose: ``picks[i]`` is a rank (default 1) or a candidate id of step ``i``'s results.

    ``exclude_own_paper`` (default) keeps every step away from the papers already on the path;
    ``prefer_other`` (``none`` | ``section`` | ``venue`` | ``year``) puts hits from another
    section category / venue / year than the previous step's sentence first. Returns the HTTP
    API's ``POST /chain`` answer: ``steps``, each with its ``move``, the ``query`` text it used,
    the ``system`` that ranked, its ``results`` and the ``chosen`` hit. Bad input raises
    :class:`ratio.serve.chain.ChainError` naming the field (at most ``MAX_CHAIN`` moves).
    """
    eng = _filtered_engine(filters, config, split=split, source=source, candidates=candidates)
    options = dict(picks=picks, exclude_own_paper=exclude_own_paper, prefer_other=prefer_other)
    return eng.chain(query, moves, k=k, retriever=retriever, **options, **filters)


def clear_cache() -> None:
    """Forget cached engines (e.g. after rebuilding a benchmark in the same process)."""
    with _LOCK:
        _ENGINES.clear()
