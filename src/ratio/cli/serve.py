"""`ratio serve` (HTTP API + web page), `ratio mcp` (MCP tools over stdio) and `ratio search`.

All three answer through the same :class:`~ratio.serve.engine.SearchEngine`, so a query
typed at the terminal ranks exactly as the service and ``ratio.search`` rank it.

Tested by tests/serve/test_cli.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from ratio.core.config import load_config


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
    app.command("mcp")(mcp_cmd)
    app.command("search")(search_cmd)


_CONFIG = typer.Option(None, "--config", "-c", help="TOML run config.")
_SPLIT = typer.Option(
    None,
    "--split",
    help="Serve one benchmark split's pool (default: the config's serve.split; \"\" = all splits).",
)
_SOURCE = typer.Option(
    None, "--source", help="benchmark (candidate pools) | sentences (every ingested sentence)."
)
_CANDIDATES = typer.Option(None, "--candidates", help="Serve this candidates.parquet instead.")
_INDEX_DIR = typer.Option(
    None,
    "--index-dir",
    help="Where the pool file and indexes live (default: <build.out>/serve/<pool>).",
)
_RETRIEVER = typer.Option(
    None, "--retriever", "-r", help="Default retriever (bm25, dense, hybrid or a config system)."
)


def serve_cmd(
    config: Path = _CONFIG,
    host: str = typer.Option(None, "--host", help="Bind address (default: serve.host)."),
    port: int = typer.Option(None, "--port", "-p", help="Port (default: serve.port)."),
    split: str = _SPLIT,
    source: str = _SOURCE,
    candidates: Path = _CANDIDATES,
    retriever: str = _RETRIEVER,
    index_dir: Path = _INDEX_DIR,
    warm: list[str] = typer.Option(
        None,
        "--warm",
        help="Retrievers to load (or index) before serving; repeatable. "
        "Default: each move's default.",
    ),
    index_only: bool = typer.Option(
        False, "--index-only", help="Build the pool file and the --warm indexes, then exit."
    ),
) -> None:
    """Serve inspiration search: JSON API, web page at /, OpenAPI at /openapi.json."""
    # lazy: serve.app pulls fastapi/pydantic/starlette (~1.5 s), not for --help or search
    from ratio.serve.app import serve
    from ratio.serve.engine import AUTO, SearchEngine

    cfg = load_config(config)
    t0 = time.perf_counter()
    engine = SearchEngine.open(
        cfg,
        source=source,
        split=split,
        candidates=candidates,
        retriever=retriever,
        index_dir=index_dir,
        warm=list(warm or [AUTO]),
        progress=True,
    )
    info = engine.info()
    typer.echo(
        f"{info['pool']['candidates']:,} candidates from {info['pool']['directory']} ready in "
        f"{time.perf_counter() - t0:.1f}s; moves use "
        + ", ".join(f"{m}={r}" for m, r in info["per_move"].items()),
        err=True,
    )
    if index_only:
        return
    h, p = host or cfg.serve.host, port or cfg.serve.port
    typer.echo(f"serving on http://{h}:{p}/  (Ctrl+C to stop)", err=True)
    serve(engine, host=h, port=p)


def mcp_cmd(
    config: Path = _CONFIG,
    split: str = _SPLIT,
    source: str = _SOURCE,
    candidates: Path = _CANDIDATES,
    retriever: str = _RETRIEVER,
    index_dir: Path = _INDEX_DIR,
) -> None:
    """Run the MCP tool server (stdio): tools address, broaden, specify and moves."""
    # lazy: mcp_server pulls pydantic (~0.7 s), not for --help or search
    from ratio.serve.engine import SearchEngine
    from ratio.serve.mcp_server import run_stdio

    run_stdio(
        lambda: SearchEngine.open(
            config,
            source=source,
            split=split,
            candidates=candidates,
            retriever=retriever,
            index_dir=index_dir,
        )
    )


def search_cmd(
    query: str = typer.Argument(..., help="The query statement."),
    config: Path = _CONFIG,
    move: str = typer.Option("address", "--move", "-m", help="address, broaden or specify."),
    k: int = typer.Option(10, "-k", help="How many candidates."),
    retriever: str = typer.Option(
        None, "--retriever", "-r", "--system", "-s", help="Retriever (default: auto, per move)."
    ),
    split: str = _SPLIT,
    source: str = _SOURCE,
) -> None:
    """Top-k sentences for one query and move, as the service ranks them."""
    # lazy: the engine loads the search store and retrievers (~0.2 s), not for --help
    from ratio.serve.engine import SearchEngine

    engine = SearchEngine.open(config, source=source, split=split, progress=True)
    res = engine.search(query, move, k, retriever)
    typer.echo(f"{move} · {res['retriever']} · top {len(res['results'])}")
    if res["note"]:
        typer.echo(f"note: {res['note']}", err=True)
    for h in res["results"]:
        typer.echo(f"{h['rank']:>3}. {h['score']:.4f}  {h['text']}  [{h['paper_id']}, {h['year']}]")
