"""Oracle pools (Appendix F.2): relation's own candidates and golds only."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ratio.core.schemas import CANDIDATES, QRELS
from ratio.evaluation.oracle import (
    OracleError,
    check_golds_in_pool,
    filter_pool,
    gold_ids,
    relation_pool,
)
from ratio.metrics import Qrels


@pytest.fixture()
def candidates() -> pa.Table:
    rows = [
        ("c1", "a gold of address", "address"),
        ("c2", "another address cand", "address"),
        ("c3", "a specify cand", "specify"),
        ("c4", "a contrast distractor", "explicit_contrast"),
        ("c5", "gold mined under specify too", "specify"),
        ("c6", "no origin", None),
    ]
    cols = {
        "candidate_id": [r[0] for r in rows],
        "text": [r[1] for r in rows],
        "origin": [r[2] for r in rows],
    }
    # fill the remaining CANDIDATES columns with nulls, whatever the schema grows into
    arrays = [
        pa.array(cols[f.name], f.type) if f.name in cols else pa.nulls(len(rows), f.type)
        for f in CANDIDATES
    ]
    return pa.Table.from_arrays(arrays, schema=CANDIDATES)


def _ids(pool: pa.Table) -> list[str]:
    return pool.column("candidate_id").to_pylist()


QRELS_D = {"qa1": {"c1": 1}, "qa2": {"c5": 1, "c4": 0}, "qs1": {"c3": 1}}


def test_relation_pool_keeps_origin_and_schema(candidates) -> None:
    pool = relation_pool(candidates, "address")
    assert pool.schema == CANDIDATES
    assert pool.column("candidate_id").to_pylist() == ["c1", "c2"]
    assert _ids(relation_pool(candidates, "specify")) == ["c3", "c5"]
    # a gold whose origin is another relation is kept on request
    golds = gold_ids(QRELS_D, ["qa1", "qa2"])
    assert _ids(relation_pool(candidates, "address", keep_ids=golds)) == ["c1", "c2", "c5"]


@pytest.mark.parametrize("as_type", ["dict", "qrels", "table"])
def test_gold_pool_from_any_qrels_form(candidates, as_type) -> None:
    q = {
        "dict": QRELS_D,
        "qrels": Qrels.from_dict(QRELS_D),
        "table": Qrels.from_dict(QRELS_D).to_table().cast(QRELS),
    }[as_type]
    assert sorted(gold_ids(q).tolist()) == ["c1", "c3", "c5"]  # c4 has relevance 0
    assert _ids(filter_pool(candidates, gold_ids(q, ["qa1", "qa2"]))) == ["c1", "c5"]
    assert filter_pool(candidates, gold_ids(q)).num_rows == 3


def test_filter_pool_accepts_id_arrays(candidates) -> None:
    assert filter_pool(candidates, np.array(["c6", "c2"])).column("candidate_id").to_pylist() == [
        "c2",
        "c6",
    ]
    assert filter_pool(candidates, []).num_rows == 0


def test_check_golds_in_pool(candidates) -> None:
    pool = relation_pool(candidates, "address")
    check_golds_in_pool(pool, QRELS_D, ["qa1"])
    with pytest.raises(OracleError, match="'c5'"):
        check_golds_in_pool(pool, QRELS_D, ["qa1", "qa2"])
    check_golds_in_pool(["c1", "c5"], QRELS_D, ["qa1", "qa2"])
