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


@pytest.mark.slow
def test_mcp_client_lists_tools_and_calls_moves(tiny_config):
    statement = "One-run privacy auditing may fail to recover the true privacy parameter."
    calls = [
        ("address", {"statement": statement, "k": 3}),
        ("specify", {"statement": statement, "k": 2, "year_max": 2023}),  # test split: 2025 only
        ("moves", {"statement": statement, "k": 2}),
        ("broaden", {"statement": "   "}),
    ]
    tools, (address, none, moves, empty) = anyio.run(_session, tiny_config, calls)

    names = {t.name for t in tools.tools}
    assert names == {"address", "broaden", "specify", "moves"}
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
