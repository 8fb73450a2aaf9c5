"""A real MCP client session (stdio) against the Ratio tool server process."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest

pytest.importorskip("mcp", reason="the `mcp` package is not installed")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from ratio.retrieval.models import OFFLINE_ENV  # noqa: E402
from ratio.serve.engine import SearchEngine  # noqa: E402
from tests.serve.tinyrun import REPO_ROOT  # noqa: E402


def _get(obj, snake: str, camel: str):
    """A field under mcp 2's snake_case name or mcp 1's camelCase one."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def _payload(result) -> dict:
    """A tool result's JSON: the structured content when present, else the text block."""
    data = _get(result, "structured_content", "structuredContent")
    if data:
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


async def _session(config, calls):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ratio.serve.mcp_server", "--config", str(config), "--split", "test"],
        env={
            "PYTHONPATH": str(REPO_ROOT / "src"),
            **OFFLINE_ENV,
            "PATH": os.environ.get("PATH", ""),
        },
        cwd=str(REPO_ROOT),
    )
    with open(os.devnull, "w") as errlog, anyio.fail_after(180):
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                results = [await session.call_tool(name, args) for name, args in calls]
                return tools, results


STATEMENT = "One-run privacy auditing may fail to recover the true privacy parameter."
CHAIN = {"statement": STATEMENT, "moves": ["broaden", "specify"], "k": 2}
CALLS = [
    ("address", {"statement": STATEMENT, "k": 3}),
    ("specify", {"statement": STATEMENT, "k": 2, "year_max": 2023}),  # test split: 2025 only
    ("moves", {"statement": STATEMENT, "k": 2}),
    ("broaden", {"statement": "   "}),
    ("chain", {**CHAIN, "picks": [2], "prefer_other": "section"}),
    ("chain", {**CHAIN, "moves": ["broaden", "zoom"]}),
    ("chain", {**CHAIN, "picks": [7]}),
    ("chain", {**CHAIN, "moves": ["broaden"] * 6}),
]


@pytest.fixture(scope="module")
def session(tiny_config):
    """One server process answers every call of this module (it takes seconds to start)."""
    return anyio.run(_session, tiny_config, CALLS)


def _error(result) -> str:
    assert _get(result, "is_error", "isError")
    return result.content[0].text


@pytest.mark.slow
def test_mcp_client_lists_tools_and_calls_moves(tiny_config, session):
    statement = STATEMENT
    tools, (address, none, moves, empty, *_) = session

    names = {t.name for t in tools.tools}
    assert names == {"address", "broaden", "specify", "moves", "chain"}
    by_name = {t.name: t for t in tools.tools}
    assert "statement" in _get(by_name["broaden"], "input_schema", "inputSchema")["properties"]
    assert "general" in by_name["broaden"].description

    assert not _get(address, "is_error", "isError")
    data = _payload(address)
    assert data["move"] == "address" and len(data["results"]) == 3
    want = SearchEngine.open(tiny_config, split="test").search(statement, "address", 3)
    assert [h["candidate_id"] for h in data["results"]] == [
        h["candidate_id"] for h in want["results"]
    ]
    hit = data["results"][0]
    assert hit["year"] == 2025 and hit["title"] and "context_before" in hit

    assert _payload(none)["results"] == []
    assert set(_payload(moves)) == {"address", "broaden", "specify"}
    assert _get(empty, "is_error", "isError") and "empty" in empty.content[0].text


@pytest.mark.slow
def test_mcp_chain_tool(tiny_config, session):
    tools, (*_, chain, unknown, past, long) = session
    schema = _get(next(t for t in tools.tools if t.name == "chain"), "input_schema", "inputSchema")
    assert {"statement", "moves", "picks", "prefer_other", "exclude_own_paper"} <= set(
        schema["properties"]
    )
    data = _payload(chain)
    want = SearchEngine.open(tiny_config, split="test").chain(
        STATEMENT, ["broaden", "specify"], k=2, picks=[2], prefer_other="section"
    )
    assert [s["chosen"]["candidate_id"] for s in data["steps"]] == [
        s["chosen"]["candidate_id"] for s in want["steps"]
    ]
    first, second = data["steps"]
    assert (first["move"], first["query"], first["system"]) == ("broaden", STATEMENT, "bm25")
    assert second["query"] == first["chosen"]["text"] == first["results"][1]["text"]
    assert second["chosen"]["url"].startswith("https://openreview.net/forum?id=")
    # errors name the field: the schema's (moves.1, moves) and the engine's (picks.0)
    assert "moves.1" in _error(unknown) and "'address', 'broaden' or 'specify'" in _error(unknown)
    assert "picks.0: rank 7 is out of range: step 1 (broaden) has 2 results" in _error(past)
    assert "moves" in _error(long) and "at most 5" in _error(long)
