"""``ratio evaluate`` (all systems x relations -> runs and tables) and ``ratio search``."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("evaluate")
    def evaluate_cmd(
        config: Path = typer.Option(..., "--config", "-c", help="run config TOML"),
        oracle: str = typer.Option(
            None,
            help="candidate pool: none (shared), relation (oracle), golds (oracle); "
            "default: evaluate.oracle",
        ),
        system: list[str] = typer.Option(None, "--system", "-s", help="only these systems"),
        out: str = typer.Option("", help="output folder (default: evaluate.out)"),
    ) -> None:
        """Evaluate every configured retriever on every relation of the benchmark split."""
        from ratio.config import load_config
        from ratio.evaluation.harness import evaluate_systems

        overrides = {"evaluate.out": out} if out else None
        cfg = load_config(config, overrides)
        res = evaluate_systems(cfg, oracle=oracle or cfg.evaluate.oracle, systems=system or None)
        md = Path(res.files["md"]).read_text(encoding="utf-8")
        typer.echo(md)
        typer.echo(f"wrote {res.files['md']}, .csv, .json and {len(res.files) - 3} TREC runs")

    @app.command("search")
    def search_cmd(
        query: str = typer.Argument(..., help="the query sentence"),
        config: Path = typer.Option(..., "--config", "-c", help="run config TOML"),
        move: str = typer.Option(..., "--move", "-m", help="address, broaden or specify"),
        k: int = typer.Option(10, "-k", help="how many candidates"),
        system: str = typer.Option("", "--system", "-s", help="system name (default: by move)"),
    ) -> None:
        """Rank the benchmark's candidate pool for one query."""
        from ratio.config import load_config
        from ratio.evaluation.harness import search_pool

        cfg = load_config(config)
        name, hits = search_pool(cfg, query, move, k=k, system=system or None)
        typer.echo(f"{move} · {name} · top {len(hits)}")
        for h in hits:
            meta = ", ".join(str(h[c]) for c in ("paper_id", "year", "origin") if c in h)
            typer.echo(f"{h['rank']:>3}. {h['score']:.4f}  {h['text']}  [{meta}]")
