"""`ratio doctor`: which optional native components load on this machine, and why not."""

from __future__ import annotations

import typer

from ratio.cli.checks import CHECKS, run_all
from ratio.retrieval.cpu import cpu_summary


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor_cmd)


def doctor_cmd(
    only: list[str] = typer.Argument(None, help="Checks to run (default: all)."),
) -> None:
    """Load each optional native component once (each in its own process) and say what works."""
    unknown = sorted(set(only or []) - set(CHECKS))
    if unknown:
        raise typer.BadParameter(
            f"unknown check(s) {', '.join(unknown)}; known: {', '.join(CHECKS)}"
        )
    typer.echo(f"cpu: {cpu_summary()}")
    failed = 0
    for c in run_all(only or None):
        failed += c.status == "FAIL"
        color = {"ok": "green", "missing": "yellow"}.get(c.status, "red")
        typer.secho(f"{c.status:>7}  {c.name:<18} {c.seconds:5.1f}s  {c.detail}", fg=color)
    if failed:
        raise typer.Exit(1)
