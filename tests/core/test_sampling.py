from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest

from ratio.core.io import RatioError
from ratio.core.sampling import allocate, stratified_sample

SIZES = {"for example": 100, "for instance": 30, "specifically": 3, "namely": 1}


def queries(sizes=SIZES, shuffle_seed=None) -> pa.Table:
    rows = [
        {"query_id": f"q{m.replace(' ', '_')}{i:04d}", "marker": m, "text": f"{m} {i}"}
        for m, n in sizes.items()
        for i in range(n)
    ]
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(rows)
    return pa.Table.from_pylist(rows)


def test_equal_allocation_capped_at_stratum_size():
    # 40 draws over 4 strata: 10 each, but "specifically" (3) and "namely" (1) are capped
    # and their surplus is shared by the two large strata: 18 each.
    assert allocate(SIZES, 40, seed=0) == {
        "for example": 18,
        "for instance": 18,
        "specifically": 3,
        "namely": 1,
    }
    s = stratified_sample(queries(), 40, seed=0)
    assert s.num_rows == 40
    assert Counter(s["marker"].to_pylist()) == {
        "for example": 18,
        "for instance": 18,
        "specifically": 3,
        "namely": 1,
    }
    assert len(set(s["query_id"].to_pylist())) == 40  # without replacement


def test_uneven_remainder_goes_to_seeded_strata():
    a = allocate({"a": 10, "b": 10, "c": 10}, 7, seed=1)
    assert sum(a.values()) == 7 and sorted(a.values()) == [2, 2, 3]


def test_deterministic_given_seed_and_independent_of_row_order():
    a = stratified_sample(queries(), 25, seed=7)
    b = stratified_sample(queries(shuffle_seed=3), 25, seed=7)
    assert sorted(a["query_id"].to_pylist()) == sorted(b["query_id"].to_pylist())
    c = stratified_sample(queries(), 25, seed=8)
    assert sorted(a["query_id"].to_pylist()) != sorted(c["query_id"].to_pylist())


def test_n_at_least_total_returns_everything_in_input_order():
    t = queries(shuffle_seed=5)
    s = stratified_sample(t, 10_000, seed=0)
    assert s["query_id"].to_pylist() == t["query_id"].to_pylist()


def test_zero_and_errors():
    assert stratified_sample(queries(), 0, seed=0).num_rows == 0
    with pytest.raises(RatioError, match="relation"):
        stratified_sample(queries(), 5, seed=0, by="relation")
    with pytest.raises(RatioError):
        allocate(SIZES, -1, seed=0)
