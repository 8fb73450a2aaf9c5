"""Oracle operation filtering (paper Appendix F.2): restrict the candidate pool.

The ablation asks whether a tuned retriever only learned to spot the *style* of an
operation's sentences. Each pool keeps candidates of the queried operation only, so style
alone no longer separates gold from distractors: (a) :func:`relation_pool`, the
relation's own candidates; (b) :func:`filter_pool` of :func:`gold_ids`, only the golds
of the evaluated queries. Pools of different sizes are not comparable: compare systems within one pool
only, as the paper's Table 12 does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ratio.core.io import RatioError
from ratio.metrics.ranking import Qrels


class OracleError(RatioError):
    """A pool that cannot serve the requested evaluation (e.g. a gold is missing)."""


QrelsLike: TypeAlias = Qrels | pa.Table | Mapping[str, Mapping[str, int]]


def _ids_array(ids: Iterable[str] | np.ndarray | pa.Array) -> pa.Array:
    if isinstance(ids, pa.ChunkedArray):
        return ids.combine_chunks()
    if isinstance(ids, pa.Array):
        return ids
    return pa.array(list(ids) if not isinstance(ids, np.ndarray) else ids, pa.string())


def _require(table: pa.Table, *columns: str) -> None:
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise OracleError(f"candidate table lacks column(s) {', '.join(missing)}")


def gold_ids(qrels: QrelsLike, query_ids: Iterable[str] | None = None) -> np.ndarray:
    """Unique relevant (``relevance >= 1``) candidate ids, optionally of ``query_ids`` only."""
    if isinstance(qrels, pa.Table):
        q = qrels
        if query_ids is not None:
            q = q.filter(pc.is_in(q.column("query_id"), value_set=_ids_array(query_ids)))
        q = q.filter(pc.greater_equal(q.column("relevance"), 1))
        ids = q.column("candidate_id").to_pylist()
    else:
        d = qrels.to_dict() if isinstance(qrels, Qrels) else qrels
        keep = None if query_ids is None else set(query_ids)
        ids = [
            c
            for qid, docs in d.items()
            if keep is None or qid in keep
            for c, rel in docs.items()
            if rel >= 1
        ]
    return np.asarray(list(dict.fromkeys(ids)), dtype=object)


def filter_pool(candidates: pa.Table, ids: Iterable[str] | np.ndarray | pa.Array) -> pa.Table:
    """Rows of ``candidates`` whose ``candidate_id`` is in ``ids`` (pool order kept)."""
    _require(candidates, "candidate_id")
    return candidates.filter(pc.is_in(candidates.column("candidate_id"), value_set=_ids_array(ids)))


def relation_pool(
    candidates: pa.Table,
    relation: str,
    keep_ids: Iterable[str] | np.ndarray | None = None,
) -> pa.Table:
    """Pool (a): candidates mined for ``relation`` (``origin == relation``).

    ``keep_ids`` (the evaluated golds) are kept whatever their origin: a sentence mined
    under two relations has one id and one ``origin``, so a gold can carry another's.
    """
    _require(candidates, "candidate_id", "origin")
    mask = pc.equal(candidates.column("origin"), relation)
    if keep_ids is not None:
        mask = pc.or_(
            mask, pc.is_in(candidates.column("candidate_id"), value_set=_ids_array(keep_ids))
        )
    return candidates.filter(pc.fill_null(mask, False))


def check_golds_in_pool(
    pool: pa.Table | Iterable[str], qrels: QrelsLike, query_ids: Iterable[str] | None = None
) -> None:
    """Raise :class:`OracleError` when a gold of the evaluated queries is not in ``pool``
    (it would silently score 0 and make the pool comparison meaningless)."""
    ids = pool.column("candidate_id") if isinstance(pool, pa.Table) else _ids_array(pool)
    golds = gold_ids(qrels, query_ids)
    if not golds.size:
        return
    present = pc.is_in(pa.array(golds, pa.string()), value_set=_ids_array(ids))
    present = present.to_numpy(zero_copy_only=False)
    if not present.all():
        missing = golds[~present]
        raise OracleError(f"{missing.size} gold candidate(s) not in the pool, e.g. {missing[0]!r}")
