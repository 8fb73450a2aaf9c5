"""Stratified sampling with equal allocation, capped at each stratum's size (paper §4.3).

Used for the silver set (10k Specify queries "so that frequent markers do not
dominate") and for top-k judging. Allocation is water-filling: every stratum gets
an equal share; strata smaller than their share give their surplus to the others.
The result depends only on the table's content and the seed, not its row order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ratio.core.io import RatioError


def allocate(sizes: dict[str, int], n: int, seed: int) -> dict[str, int]:
    """Equal allocation of ``n`` draws over strata, capped at each stratum's size.

    Leftover draws that cannot be split evenly go to randomly (seeded) chosen open strata.
    """
    if n < 0:
        raise RatioError(f"sample size must be >= 0, got {n}")
    alloc = {k: 0 for k in sizes}
    remaining = min(n, sum(sizes.values()))
    rng = np.random.default_rng(seed)
    while remaining > 0:
        open_ = sorted(k for k in sizes if alloc[k] < sizes[k])
        share = remaining // len(open_)
        if share == 0:
            for k in rng.permutation(open_)[:remaining]:
                alloc[str(k)] += 1
            break
        for k in open_:
            take = min(share, sizes[k] - alloc[k])
            alloc[k] += take
            remaining -= take
    return alloc


def stratified_sample(queries: pa.Table, n: int, seed: int, by: str = "marker") -> pa.Table:
    """A seeded sample of ``n`` rows of ``queries``, equally allocated across values of ``by``.

    Rows keep their input order in the output. With ``n`` at least the table size,
    every row is returned.
    """
    if by not in queries.column_names:
        raise RatioError(
            f"cannot stratify by {by!r}: columns are {', '.join(queries.column_names)}"
        )
    if queries.num_rows == 0:
        return queries
    strata = pc.fill_null(queries[by].cast(pa.string()), "").to_numpy(zero_copy_only=False)
    # Content order (stratum, then id/text) so the sample does not depend on row order.
    tiebreak_col = next(
        (c for c in ("query_id", "candidate_id", "text") if c in queries.column_names), None
    )
    tiebreak = (
        pc.fill_null(queries[tiebreak_col].cast(pa.string()), "").to_numpy(zero_copy_only=False)
        if tiebreak_col
        else np.arange(queries.num_rows).astype(str)
    )
    order = np.lexsort((tiebreak, strata))
    keys, starts, sizes = np.unique(strata[order], return_index=True, return_counts=True)
    alloc = allocate({str(k): int(s) for k, s in zip(keys, sizes, strict=True)}, n, seed)
    rng = np.random.default_rng(seed)
    chosen: list[np.ndarray] = []
    for k, start, size in zip(keys, starts, sizes, strict=True):
        m = alloc[str(k)]
        if m == 0:
            continue
        pick = rng.choice(int(size), size=m, replace=False) if m < size else np.arange(size)
        chosen.append(order[start + pick])
    idx = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    return queries.take(pa.array(idx))
