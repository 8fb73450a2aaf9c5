"""``ratio build`` and ``ratio export beir``: thin wrappers over :mod:`ratio.build`.

Tested by tests/build/test_pipeline.py, tests/test_behaviour.py.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ratio.core.config import load_config
from ratio.core.layout import RunDir


def register(app: typer.Typer) -> None:
    app.command("build")(build_cmd)
    export = typer.Typer(help="Export the built benchmark to other formats.", no_args_is_help=True)
    export.command("beir")(export_beir_cmd)
    app.add_typer(export, name="export")


def build_cmd(
    config: Path = typer.Option(..., "--config", "-c", help="Run config (TOML)."),
    executor: str = typer.Option(None, "--executor", help="local | ray (default: build.executor)."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (executor ray)."),
    workers: int = typer.Option(None, "--workers", "-j", help="Parallel shard workers."),
) -> None:
    """Ingest, mine, dedup, split, export and report; up-to-date stages are skipped."""
    # lazy: rich's tables (~60 ms) only print here, so `ratio search` and the rest skip them
    from rich.console import Console
    from rich.table import Table

    # lazy: ratio.build pulls duckdb and every stage (~0.8 s), not for --help
    from ratio.build import SPLITS, build

    given = {"build.executor": executor, "build.ray_address": address, "ingest.workers": workers}
    result = build(load_config(config, {k: v for k, v in given.items() if v is not None}))
    console = Console(stderr=True)
    t = Table(
        "stage", "status", title=f"build {result.out_dir}  (lexicon {result.lexicon_version})"
    )
    t.add_column("seconds", justify="right")
    for name, st in result.stages.items():
        t.add_row(name, "ran" if st.ran else "up to date", f"{st.seconds:.1f}")
    console.print(t)
    rels = ("specify", "address", "broaden")
    q = Table("split", title="queries / candidates per split")
    for col in (*rels, "candidates"):
        q.add_column(col, justify="right")
    for split in SPLITS:
        c = result.counts.get(split, {})
        counts = [c.get("queries", {}).get(r, 0) for r in rels] + [c.get("candidates_total", 0)]
        q.add_row(split, *(f"{n:,}" for n in counts))
    console.print(q)
    typer.echo(str(result.out_dir))


def export_beir_cmd(
    config: Path = typer.Option(..., "--config", "-c", help="Run config (TOML)."),
) -> None:
    """Write <out>/export/beir/<split>/<relation>/ in BEIR layout (GenericDataLoader, MTEB)."""
    # lazy: ratio.build pulls duckdb and every stage (~0.8 s), not for --help
    from ratio.build import export

    cfg = load_config(config)
    ran, _ = export(cfg)
    out = RunDir.of(cfg).export_beir
    typer.echo(f"{out} ({'written' if ran else 'up to date'})", err=False)
