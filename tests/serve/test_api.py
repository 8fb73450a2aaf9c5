"""``ratio.api.search``: the Python entry point over the cached engine."""

from __future__ import annotations

import pytest

from ratio import api
from ratio.serve.engine import ServeError


@pytest.fixture()
def fresh_cache():
    api.clear_cache()
    yield
    api.clear_cache()


def test_search_returns_result_dicts_and_caches_the_engine(tiny_config, fresh_cache):
    statement = "Auditing differential privacy in a single training run"
    hits = api.search(statement, move="specify", k=4, config=tiny_config, split="test")
    assert len(hits) == 4
    assert {"candidate_id", "text", "title", "year", "section", "context", "score"} <= set(hits[0])
    assert all(h["year"] == 2025 for h in hits)
    eng = api.engine(tiny_config, split="test")
    assert api.engine(str(tiny_config), split="test") is eng  # same file, same engine
    assert api.engine(tiny_config) is not eng  # other pool options, other engine
    assert hits == eng.search(statement, "specify", 4)["results"]


def test_filters_moves_and_errors(tiny_config, fresh_cache, monkeypatch):
    monkeypatch.setenv("RATIO_CONFIG", str(tiny_config))  # config=None reads $RATIO_CONFIG
    first = api.search("privacy auditing of machine learning models", k=1)[0]
    others = api.search(
        "privacy auditing of machine learning models",
        k=10,
        exclude_paper=first["paper_id"],
        year_max=2025,
    )
    assert others and first["paper_id"] not in {h["paper_id"] for h in others}
    three = api.moves("privacy auditing", k=2, retriever="dense")
    assert list(three) == ["address", "broaden", "specify"]
    assert all(len(v) == 2 and v[0]["retriever"] == "dense" for v in three.values())
    with pytest.raises(TypeError, match="unknown filter"):
        api.search("privacy", venu="NeurIPS")
    with pytest.raises(ServeError, match="unknown move"):
        api.search("privacy", move="zoom")


def test_chain_through_the_public_api(tiny_config, fresh_cache):
    import ratio
    from ratio.serve.chain import ChainError

    statement = "Auditing differential privacy in a single training run"
    path = ratio.chain(statement, ["specify", "broaden"], k=3, config=tiny_config, year_min=2025)
    first, second = path["steps"]
    assert first["query"] == statement and second["query"] == first["chosen"]["text"]
    assert all(h["year"] == 2025 for s in path["steps"] for h in s["results"])
    assert first["chosen"]["paper_id"] not in {h["paper_id"] for h in second["results"]}
    eng = api.engine(tiny_config)
    assert (
        path["steps"][1]["results"]
        == eng.chain(statement, ["specify", "broaden"], k=3, year_min=2025)["steps"][1]["results"]
    )
    with pytest.raises(ChainError, match=r"^moves\.0: unknown move 'zoom'"):
        ratio.chain(statement, ["zoom"], config=tiny_config)
    with pytest.raises(TypeError, match="unknown filter"):
        ratio.chain(statement, ["broaden"], config=tiny_config, venu="NeurIPS")
