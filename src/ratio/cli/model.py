"""``ratio model export | card | verify``: shipped move models under ``models/``.

Tested by tests/training/test_export.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

model_app = typer.Typer(help="Shipped move models: export from a training run, card, verify.")


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")


@model_app.command("export")
def export_cmd(
    source: Path = typer.Argument(
        ..., help="a run config TOML (its unified model) or a trained model folder (…/best)"
    ),
    out: Path = typer.Option(..., "--out", "-o", help="models/ratio-moves-<base>-v<N>"),
    dtype: str = typer.Option("float16", help="stored weights: float16 (half size) or float32"),
    config: Path = typer.Option(
        None, "--config", "-c", help="the run config, when SOURCE is a folder (pair counts, corpus)"
    ),
) -> None:
    """Write a shipped model folder: weights, tokenizer, record, manifest and model card."""
    # lazy: the export reads safetensors through torch (~1.2 s), not for --help
    from ratio.core.config import load_config
    from ratio.retrieval.shipped import load_shipped
    from ratio.training.export import export_model

    cfg = load_config(config) if config else None
    folder = export_model(source, out, dtype=dtype, config=cfg)
    shipped = load_shipped(folder)
    size = sum(f["bytes"] for f in shipped.record["files"].values())
    typer.echo(f"{folder}: {size / 1e6:.1f} MB, {shipped.content_hash}")


@model_app.command("card")
def card_cmd(
    folder: Path = typer.Argument(..., help="a shipped model folder"),
    test: list[Path] = typer.Option(
        None,
        "--test",
        help="a `ratio train-compare` output folder (its results.json); repeatable, the "
        "headline (full-pool) table first",
    ),
) -> None:
    """Rewrite the model card (and its manifest), with the test tables of ``--test``."""
    # lazy: as export
    from ratio.training.export import write_card

    typer.echo(str(write_card(folder, test)))


@model_app.command("verify")
def verify_cmd(folder: Path = typer.Argument(..., help="a shipped model folder")) -> None:
    """Check every file against the manifest; print the record's summary."""
    # lazy: kept off `ratio --help` like every command's area
    from ratio.retrieval.shipped import load_shipped

    s = load_shipped(folder)
    typer.echo(
        json.dumps(
            {
                "name": s.name,
                "content_hash": s.content_hash,
                "base_model": s.base_model,
                "validation_mrr@10": s.validation,
            },
            indent=2,
        )
    )
