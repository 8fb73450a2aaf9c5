"""Adding a config field must not rename the indexes and runs of systems that do not set it.

The literals below were computed with the code before ``SystemConfig.backend`` existed.
"""

from __future__ import annotations

import dataclasses

from ratio.core.config import EvaluateConfig, RunConfig, SystemConfig
from ratio.evaluation.harness import named_systems
from ratio.retrieval.store import system_digest

BM25 = SystemConfig(name="BM25", kind="bm25", ngram=2)
DENSE = SystemConfig(
    name="d", kind="dense", model="no-such-model", prefix="generic", max_queries=100
)
HYBRID = SystemConfig(name="h", kind="hybrid", components=["BM25", "d"])
SYSTEMS = {"BM25": BM25, "d": DENSE, "h": HYBRID}


def test_digests_of_systems_without_a_backend_are_unchanged():
    got = {n: system_digest(s, SYSTEMS) for n, s in SYSTEMS.items()}
    assert got == {"BM25": "5ebe8498aa7ed526", "d": "d7e6bf311f3fd324", "h": "98becd839200c61b"}
    cfg = RunConfig(evaluate=EvaluateConfig(systems=[BM25, DENSE, HYBRID]))
    assert cfg.digest("build", "evaluate") == "a9054ec24a8d2fe5"


def test_a_set_backend_is_a_different_system():
    int8 = SystemConfig(
        name="d",
        kind="dense",
        model="no-such-model",
        prefix="generic",
        max_queries=100,
        backend="onnx-int8",
    )
    assert system_digest(int8, SYSTEMS) != system_digest(DENSE, SYSTEMS)
    cfg = RunConfig(evaluate=EvaluateConfig(systems=[BM25, int8]))
    assert cfg.digest("build", "evaluate") != RunConfig(
        evaluate=EvaluateConfig(systems=[BM25, DENSE])
    ).digest("build", "evaluate")
    # unnamed systems that differ only by backend get different default names
    unnamed = RunConfig(
        evaluate=EvaluateConfig(
            systems=[
                SystemConfig(kind="dense", model="m"),
                SystemConfig(kind="dense", model="m", backend="onnx-int8"),
            ]
        )
    )
    assert list(named_systems(unnamed)) == ["dense-m-none", "dense-m-none-onnx-int8"]


def test_a_query_backend_keeps_the_index():
    """Queries through another runtime change no index: the same digest, the same folder."""
    int8q = dataclasses.replace(DENSE, query_backend="onnx-int8")
    assert system_digest(int8q, SYSTEMS) == system_digest(DENSE, SYSTEMS)
