"""Move chains over the tiny real run: a path of moves, its exclusions, its re-ranking, its errors."""

from __future__ import annotations

import pytest

from ratio.core.io import RatioError
from ratio.core.layout import candidate_id
from ratio.corpus.text.normalize import match_form
from ratio.serve.chain import MAX_CHAIN, ChainError, run_chain
from ratio.serve.engine import ServeError

STATEMENT = "One-run auditing cannot recover the true privacy parameter of every algorithm."


def _ids(hits):
    return [h["candidate_id"] for h in hits]


def _without_timing(result):
    result = {**result, "steps": [{**s, "took_ms": 0} for s in result["steps"]]}
    return {**result, "took_ms": 0}


def _pool_sentence(engine):
    """A pool sentence whose id is its match form's (the fixture's ids hash a simpler form),
    so the engine recognizes it as a statement from that sentence's paper."""
    rows = engine.pool.rows(list(range(0, engine.pool.n, 7)))
    return next(r for r in rows if candidate_id(match_form(r["text"])) == r["candidate_id"])


def test_two_step_chain_searches_the_chosen_hit(engine):
    res = engine.chain(STATEMENT, ["broaden", "specify"], k=5)
    assert res["moves"] == ["broaden", "specify"] and res["own_paper"] is None
    first, second = res["steps"]
    # step 1 is the statement's own search (it is no pool sentence, so nothing is left out)
    assert (first["step"], first["move"], first["query"]) == (1, "broaden", STATEMENT)
    assert first["results"] == engine.search(STATEMENT, "broaden", 5)["results"]
    assert first["system"] == "bm25" and first["retriever"] == "bm25"
    assert first["chosen"] == first["results"][0] and first["pick"] == 1
    # step 2 searches the chosen sentence, away from its paper
    chosen = first["chosen"]
    assert second["query"] == chosen["text"] and second["move"] == "specify"
    assert second["excluded_papers"] == [chosen["paper_id"]]
    assert second["results"] and chosen["paper_id"] not in {
        h["paper_id"] for h in second["results"]
    }
    assert [h["rank"] for h in second["results"]] == list(range(1, len(second["results"]) + 1))
    assert second["chosen"] == second["results"][0]

    # the thin method and the function are one path; picks by rank or by candidate id
    assert _without_timing(run_chain(engine, STATEMENT, ["broaden", "specify"], k=5)) == (
        _without_timing(res)
    )
    third = first["results"][2]
    by_rank = engine.chain(STATEMENT, ["broaden", "specify"], k=5, picks=[3])
    by_id = engine.chain(STATEMENT, ["broaden", "specify"], k=5, picks=[third["candidate_id"]])
    for r in (by_rank, by_id):
        assert r["steps"][0]["chosen"] == third and r["steps"][1]["query"] == third["text"]
    assert _ids(by_rank["steps"][1]["results"]) == _ids(by_id["steps"][1]["results"])
    # another retriever: the system named as the service names it
    dense = engine.chain(STATEMENT, ["address", "address"], k=3, retriever="static")
    assert [s["system"] for s in dense["steps"]] == ["static", "static"]


def test_exclude_own_paper_holds_along_the_path(engine):
    row = _pool_sentence(engine)
    res = engine.chain(row["text"], ["address", "broaden", "specify"], k=10)
    assert res["own_paper"] == row["paper_id"]
    on_path = [row["paper_id"]]
    for step in res["steps"]:
        assert step["excluded_papers"] == on_path
        papers = {h["paper_id"] for h in step["results"]}
        assert step["results"] and not papers & set(on_path), step["step"]
        on_path.append(step["chosen"]["paper_id"])
    assert len(set(on_path)) == 4  # every step went to another paper

    # without it, the statement's own paper may answer; its own sentence never does
    own = engine.chain(row["text"], ["address"], k=10, exclude_own_paper=False)
    hits = own["steps"][0]["results"]
    assert own["steps"][0]["excluded_papers"] == []
    assert row["paper_id"] in {h["paper_id"] for h in hits}
    assert row["candidate_id"] not in _ids(hits)
    # an exclude_paper filter applies at every step, on top of the path
    other = engine.chain(STATEMENT, ["broaden", "specify"], k=5, exclude_paper=row["paper_id"])
    for step in other["steps"]:
        assert step["excluded_papers"][0] == row["paper_id"]
        assert row["paper_id"] not in {h["paper_id"] for h in step["results"]}


@pytest.mark.parametrize(("prefer", "field"), [("section", "section_category"), ("year", "year")])
def test_prefer_other_puts_other_sections_or_years_first(engine, prefer, field):
    k, moves = 5, ["specify", "broaden"]
    plain = engine.chain(STATEMENT, moves, k=k)
    chosen = plain["steps"][0]["chosen"]
    got = engine.chain(STATEMENT, moves, k=k, prefer_other=prefer)
    # step 1 has no previous sentence to differ from (the statement is no pool sentence)
    assert got["steps"][0]["results"] == plain["steps"][0]["results"]
    # step 2: a stable partition of the ranked list (4k deep) by "differs from the chosen"
    excluded = got["steps"][1]["excluded_papers"]
    # as deep as the chain asks: 4k, plus one for the chosen sentence it then drops
    deep = engine.search(chosen["text"], "broaden", 4 * k + 1, exclude_paper=excluded)["results"]
    deep = [h for h in deep if h["candidate_id"] != chosen["candidate_id"]]
    other = [h for h in deep if h[field] is not None and h[field] != chosen[field]]
    same = [h for h in deep if h not in other]
    want = _ids(other + same)[:k]
    hits = got["steps"][1]["results"]
    assert _ids(hits) == want
    assert other, "the fixture must have hits from another section / year to reorder"
    assert _ids(hits) != _ids(plain["steps"][1]["results"])
    assert [h["rank"] for h in hits] == list(range(1, k + 1))
    # every paper is NeurIPS: preferring another venue keeps the ranked order
    venue = engine.chain(STATEMENT, moves, k=k, prefer_other="venue")
    assert _ids(venue["steps"][1]["results"]) == _ids(plain["steps"][1]["results"])


@pytest.mark.parametrize(
    ("args", "options", "field", "message"),
    [
        ([], {}, "moves", "the chain is empty"),
        (["broaden", "zoom"], {}, "moves.1", "unknown move 'zoom'; the moves are address, broaden, specify"),
        (["broaden"] * (MAX_CHAIN + 1), {}, "moves", f"a chain has at most {MAX_CHAIN}"),
        ("broaden", {}, "moves", "give a list of moves"),
        (["broaden"], {"picks": [6]}, "picks.0", "rank 6 is out of range: step 1 (broaden) has 5 results"),
        (["broaden"], {"picks": [0]}, "picks.0", "ranks start at 1"),
        (["broaden", "specify"], {"picks": [1, "c0000"]}, "picks.1", "candidate 'c0000' is not among the results: step 2 (specify)"),
        (["broaden"], {"picks": [1, 1]}, "picks", "2 picks for 1 move(s)"),
        (["broaden"], {"picks": [True]}, "picks.0", "a rank (1, 2, ...) or a candidate id"),
        (["broaden"], {"prefer_other": "colour"}, "prefer_other", "expected one of none, section, venue, year"),
        (["broaden"], {"k": 0}, "k", "must be between 1 and 100"),
        (["broaden"], {"year_min": 2030}, "moves.0", "step 1 (broaden) found no result to continue from"),
        # three 2025 papers: the fourth step has none left that is not on the path
        (["address", "broaden", "specify", "address"], {"year_min": 2025}, "moves.3", "step 4 (address) found no result"),
    ],
)  # fmt: skip
def test_bad_chains_name_their_field(engine, args, options, field, message):
    with pytest.raises(ChainError) as e:
        engine.chain(STATEMENT, args, **{"k": 5, **options})
    assert e.value.field == field
    assert str(e.value).startswith(f"{field}: ") and message in str(e.value)
    assert isinstance(e.value, ServeError) and isinstance(e.value, RatioError)
    assert e.value.status == 422


def test_an_empty_statement_is_refused_before_any_search(engine):
    with pytest.raises(ServeError, match="query is empty"):
        engine.chain("  ", ["broaden"])
