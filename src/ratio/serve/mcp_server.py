"""An MCP tool server so agents can ask for inspirations: tools ``address``, ``broaden``,
``specify``, ``moves`` and ``chain`` over the same engine as the HTTP API (stdio transport).

Run ``ratio mcp --config FILE`` (or ``python -m ratio.serve.mcp_server --config FILE``)
and register that command with an MCP client; see docs/serve.md.

Tested by tests/serve/test_mcp.py.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from ratio.core.io import RatioError
from ratio.serve.chain import PREFER_OTHER
from ratio.serve.engine import MAX_CHAIN, MAX_K, MAX_QUERY_CHARS, MOVES, SearchEngine

INSTRUCTIONS = (
    "Ratio retrieves sentences from scientific papers that suggest a next ideation move for a "
    "research statement. address: approaches or insights that could address a stated problem. "
    "broaden: more general formulations of the statement (zoom out). specify: concrete "
    "instances, mechanisms or examples of it (zoom in). Pass one statement (a sentence or two); "
    "each result has the sentence, its paper (title, year, venue, section) and its neighbouring "
    "sentences as context."
)

DESCRIPTIONS = {
    "address": "Find approaches or insights from the literature that could address the problem "
    "stated in `statement`.",
    "broaden": "Find broader, more general formulations of `statement`, of which it is a "
    "particular instance (zoom out).",
    "specify": "Find concrete instances, mechanisms or examples that instantiate `statement` "
    "(zoom in).",
    "moves": "Address, Broaden and Specify side by side for one `statement`.",
    "chain": "Follow a path of moves from `statement`, e.g. moves=['broaden', 'specify']: each "
    "step searches the sentence the step before chose (`picks`: per step a rank, default 1, or "
    f"a candidate_id of that step's results). At most {MAX_CHAIN} moves. By default no step "
    "returns a sentence from a paper already on the path (`exclude_own_paper`); `prefer_other` "
    "(section, venue or year) ranks results from another one than the previous step's first.",
}


def _compact(hit: dict[str, Any]) -> dict[str, Any]:
    """A result as an agent needs it: the sentence, where it comes from, and its context."""
    fields = ("rank", "text", "paper_id", "title", "year", "venue", "url", "section")
    source = {c: hit[c] for c in fields}
    return {
        **source,
        "context_before": hit["context"]["prev"],
        "context_after": hit["context"]["next"],
        "score": round(hit["score"], 4),
        "candidate_id": hit["candidate_id"],
    }


def _sdk():
    """(server class, ToolError) for mcp 2 (MCPServer) or mcp 1 (FastMCP)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError

        return MCPServer, ToolError
    except ImportError:
        from mcp.server.fastmcp import FastMCP
        from mcp.server.fastmcp.exceptions import ToolError

        return FastMCP, ToolError


Statement = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="A research statement: a problem, claim, observation or objective.",
    ),
]
K = Annotated[int, Field(ge=1, le=MAX_K, description="How many results.")]
Year = Annotated[int | None, Field(ge=0, le=9999)]
Moves = Annotated[
    list[Literal[MOVES]],  # type: ignore[valid-type]
    Field(min_length=1, max_length=MAX_CHAIN, description="The moves, in order."),
]
Picks = Annotated[
    list[int | str | None] | None,
    Field(description="Per step, the result that continues: a rank (default 1) or a candidate_id."),
]
PreferOther = Literal[PREFER_OTHER]  # type: ignore[valid-type]


def build_server(get_engine: Callable[[], SearchEngine]):
    """The MCP server object with one tool per move, ``moves`` (all three) and ``chain``."""
    server_class, tool_error = _sdk()
    server = server_class(name="ratio", instructions=INSTRUCTIONS)

    def run(fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RatioError as e:  # the agent should read why (empty statement, unknown retriever)
            raise tool_error(str(e)) from e

    def make_tool(name: str, default_k: int):
        def tool(
            statement: Statement,
            k: K = default_k,
            year_min: Year = None,
            year_max: Year = None,
            venue: str | None = None,
            exclude_paper: str | None = None,
            retriever: str | None = None,
        ) -> dict[str, Any]:
            filters = dict(
                year_min=year_min, year_max=year_max, venue=venue, exclude_paper=exclude_paper
            )
            if name == "moves":
                res = run(get_engine().moves, statement, k, retriever, **filters)
                return {
                    m: {"retriever": r["retriever"], "results": [_compact(h) for h in r["results"]]}
                    for m, r in res["moves"].items()
                }
            res = run(get_engine().search, statement, name, k, retriever, **filters)
            return {
                "move": name,
                "retriever": res["retriever"],
                "note": res["note"],
                "results": [_compact(h) for h in res["results"]],
            }

        tool.__name__ = name  # the SDK names the tool's argument schema after it
        return tool

    def chain(
        statement: Statement,
        moves: Moves,
        picks: Picks = None,
        k: K = 5,
        exclude_own_paper: bool = True,
        prefer_other: PreferOther = "none",
        year_min: Year = None,
        year_max: Year = None,
        venue: str | None = None,
        exclude_paper: str | None = None,
        retriever: str | None = None,
    ) -> dict[str, Any]:
        res = run(
            get_engine().chain,
            statement,
            moves,
            picks=picks,
            k=k,
            retriever=retriever,
            exclude_own_paper=exclude_own_paper,
            prefer_other=prefer_other,
            year_min=year_min,
            year_max=year_max,
            venue=venue,
            exclude_paper=exclude_paper,
        )
        steps = [
            {
                **{c: s[c] for c in ("step", "move", "query", "system", "retriever", "note")},
                "results": [_compact(h) for h in s["results"]],
                "chosen": _compact(s["chosen"]),
            }
            for s in res["steps"]
        ]
        return {"moves": res["moves"], "own_paper": res["own_paper"], "steps": steps}

    for name in (*MOVES, "moves"):
        tool = make_tool(name, 5 if name == "moves" else 10)
        server.add_tool(tool, name=name, description=DESCRIPTIONS[name])
    server.add_tool(chain, name="chain", description=DESCRIPTIONS["chain"])
    return server


def run_stdio(open_engine: Callable[[], SearchEngine]) -> None:
    """Open the engine (any stray prints go to stderr, not the JSON-RPC stream), then serve."""
    with contextlib.redirect_stdout(sys.stderr):
        engine = open_engine()
    build_server(lambda: engine).run("stdio")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Ratio MCP tool server (stdio).")
    p.add_argument("--config", "-c", default=None, help="TOML run config")
    p.add_argument("--split", default=None, help="benchmark split pool (default: all)")
    p.add_argument("--source", default=None, choices=["benchmark", "sentences"])
    p.add_argument("--candidates", default=None, help="a candidates.parquet to serve")
    p.add_argument("--retriever", default=None, help="default retriever")
    a = p.parse_args(argv)
    run_stdio(
        lambda: SearchEngine.open(
            a.config, split=a.split, source=a.source, candidates=a.candidates, retriever=a.retriever
        )
    )


if __name__ == "__main__":
    main()
