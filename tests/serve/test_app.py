"""The HTTP API: results, the three-move view, move chains, service endpoints, bad input,
concurrency."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from ratio.serve.app import STATIC

QUERY = "How precisely can one-run auditing recover the true privacy parameter of an algorithm?"


def test_search_returns_ranked_hits_with_provenance_and_context(client, engine):
    row = engine.pool.rows([9])[0]
    r = client.post("/search", json={"query": row["text"], "move": "specify", "k": 4})
    assert r.status_code == 200
    body = r.json()
    assert body["move"] == "specify" and body["k"] == 4 and body["retriever"] == "bm25"
    top = body["results"][0]
    assert top["candidate_id"] == row["candidate_id"]
    for field in ("title", "year", "venue", "section", "paper_id", "url"):
        assert top[field] == row[field]
    assert top["url"] == f"https://openreview.net/forum?id={row['paper_id']}"
    assert top["context"] == {"prev": row["prev"], "next": row["next"]}
    assert len(body["results"]) == 4


def test_filters_and_retriever_choice_over_http(client, engine):
    row = engine.pool.rows([9])[0]
    body = {"query": row["text"], "k": 10, "exclude_paper": row["paper_id"], "year_min": 2024}
    hits = client.post("/search", json=body).json()["results"]
    assert hits and all(h["paper_id"] != row["paper_id"] and h["year"] == 2025 for h in hits)
    dense = client.post("/search", json={"query": row["text"], "retriever": "dense", "k": 1}).json()
    assert (
        dense["retriever"] == "dense" and dense["results"][0]["candidate_id"] == row["candidate_id"]
    )


def test_moves_side_by_side(client):
    r = client.post("/moves", json={"query": QUERY, "k": 3})
    assert r.status_code == 200
    moves = r.json()["moves"]
    assert list(moves) == ["address", "broaden", "specify"]
    assert all(m["move"] == name and len(m["results"]) == 3 for name, m in moves.items())


def test_chain_walks_moves_from_the_chosen_results(client, engine):
    body = {"query": QUERY, "moves": ["broaden", "specify"], "k": 3, "picks": [2]}
    r = client.post("/chain", json={**body, "prefer_other": "year", "year_min": 2023})
    assert r.status_code == 200
    data = r.json()
    want = engine.chain(
        QUERY, ["broaden", "specify"], k=3, picks=[2], prefer_other="year", year_min=2023
    )
    assert [s["chosen"]["candidate_id"] for s in data["steps"]] == [
        s["chosen"]["candidate_id"] for s in want["steps"]
    ]
    first, second = data["steps"]
    assert first["chosen"] == first["results"][1] and second["query"] == first["chosen"]["text"]
    assert (first["system"], second["move"], data["prefer_other"]) == ("bm25", "specify", "year")
    assert second["chosen"]["url"].startswith("https://openreview.net/forum?id=")
    assert client.get("/info").json()["max_chain"] == 5


@pytest.mark.parametrize(
    ("body", "message", "loc"),
    [
        ({"moves": []}, "moves: List should have at least 1 item", None),
        ({"moves": ["broaden", "zoom"]}, "moves.1: Input should be 'address', 'broaden' or 'specify'", None),
        ({"moves": ["broaden"] * 6}, "moves: List should have at most 5 items", None),
        ({"moves": ["broaden"], "picks": [99]}, "picks.0: rank 99 is out of range: step 1 (broaden) has 3 results", ["picks", "0"]),
        ({"moves": ["broaden", "specify"], "picks": [1, "c0000"]}, "picks.1: candidate 'c0000' is not among the results", ["picks", "1"]),
        ({"moves": ["broaden"], "year_min": 2030}, "moves.0: step 1 (broaden) found no result", ["moves", "0"]),
        ({"moves": ["broaden"], "prefer_other": "colour"}, "prefer_other: Input should be 'none', 'section', 'venue' or 'year'", None),
        ({"moves": ["broaden"], "exclude_own_paper": "yes"}, "exclude_own_paper: Input should be a valid boolean", None),
        ({}, "moves: Field required", None),
    ],
)  # fmt: skip
def test_bad_chain_is_422_naming_the_field(client, body, message, loc):
    r = client.post("/chain", json={"query": QUERY, "k": 3, **body})
    assert r.status_code == 422
    assert message in r.json()["error"]
    if loc:  # the engine's checks answer in the validation errors' shape
        assert r.json()["detail"][0]["loc"] == loc
    assert client.get("/health").status_code == 200


def test_service_endpoints(client):
    client.post("/search", json={"query": QUERY})
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["candidates"] == 360
    info = client.get("/info").json()
    assert info["moves"] == ["address", "broaden", "specify"]
    assert {"auto", "bm25", "dense", "hybrid", "static"} <= set(info["retrievers"])
    assert info["pool"]["venues"] == ["NeurIPS"]
    metrics = client.get("/metrics").json()
    search = metrics["routes"]["POST /search"]
    assert search["requests"] >= 1 and search["by_status"]["200"] >= 1
    assert 0 < search["latency_ms"]["p50"] <= search["latency_ms"]["p95"]
    spec = client.get("/openapi.json").json()
    assert {"/search", "/moves", "/chain", "/health", "/metrics", "/info"} <= set(spec["paths"])
    req = spec["components"]["schemas"]["SearchRequest"]["properties"]
    assert req["k"]["maximum"] == 100 and req["query"]["maxLength"] == 10_000


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"query": ""}, 422, "query: String should have at least 1 character"),
        ({"query": " \n\t "}, 422, "query is empty"),
        (
            {"query": "x", "move": "zoom"},
            422,
            "move: Input should be 'address', 'broaden' or 'specify'",
        ),
        ({"query": "x", "k": 0}, 422, "k: Input should be greater than or equal to 1"),
        ({"query": "x", "k": 101}, 422, "k: Input should be less than or equal to 100"),
        ({"query": "x", "k": "ten"}, 422, "k: Input should be a valid integer"),
        ({"query": "x" * 10_001}, 422, "at most 10000 characters"),
        ({"query": "x", "retriever": "nope"}, 422, "retriever: Input should be 'auto', 'bm25'"),
        ({"query": "x", "colour": "red"}, 422, "colour: Extra inputs are not permitted"),
        ({"move": "address"}, 422, "query: Field required"),
        ([1, 2], 422, "valid dictionary"),
    ],
)
def test_bad_input_is_a_clear_4xx(client, body, status, message):
    r = client.post("/search", json=body)
    assert r.status_code == status
    assert message in r.json()["error"]
    assert client.get("/health").status_code == 200


def test_malformed_json_is_400_and_server_stays_up(client):
    r = client.post(
        "/search", content=b'{"query": "x",', headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["error"].startswith("malformed JSON body")
    assert client.post(
        "/moves", content=b"\xff\xfe", headers={"content-type": "application/json"}
    ).status_code in (400, 422)
    assert client.post("/search", json={"query": QUERY}).status_code == 200


def test_page_is_self_contained_and_safe(client):
    r = client.get("/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    for name in ("index.html", "app.js", "style.css"):
        text = (STATIC / name).read_text()
        assert not re.search(r"(src|href)=\"(https?:)?//", text), name  # no CDN
        assert "@import" not in text and "innerHTML" not in text.replace("never innerHTML", "")
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/docs").status_code == 404  # Swagger UI would load a CDN


def test_concurrent_requests_on_a_live_server(live_server, engine):
    queries = [r["text"] for r in engine.pool.rows(list(range(0, 160, 5)))]

    async def run():
        async with httpx.AsyncClient(base_url=live_server, timeout=60) as c:
            rs = await asyncio.gather(
                *[c.post("/search", json={"query": q, "move": "broaden", "k": 5}) for q in queries]
            )
            bad = await c.post(
                "/search", content=b"{", headers={"content-type": "application/json"}
            )
            ok = await c.get("/health")
            return rs, bad, ok

    rs, bad, ok = asyncio.run(run())
    assert all(r.status_code == 200 for r in rs)
    got = [[h["candidate_id"] for h in r.json()["results"]] for r in rs]
    want = [[h["candidate_id"] for h in engine.search(q, "broaden", 5)["results"]] for q in queries]
    assert got == want
    assert bad.status_code == 400 and ok.status_code == 200
