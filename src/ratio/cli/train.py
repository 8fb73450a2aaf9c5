"""``ratio train`` (operation-specific or unified fine-tuning) and ``ratio train-compare``.

Multi-GPU: ``accelerate launch $(which ratio) train --config ...`` or
``torchrun --nproc_per_node N $(which ratio) train --config ...`` (see ratio.training.train).

Tested by tests/training/test_cli.py.
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
from pathlib import Path

import typer

from ratio.core.config import load_config


def register(app: typer.Typer) -> None:
    app.command("train")(train_cmd)
    app.command("train-compare")(compare_cmd)


def _log_progress() -> None:
    """Ratio's own INFO lines (a trial reused, a checkpoint resumed); only warnings from the
    libraries (faiss announces every load at INFO)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("ratio").setLevel(logging.INFO)


def train_cmd(
    config: Path = typer.Option(..., "--config", "-c", help="run config TOML"),
    relation: str = typer.Option(..., "--relation", "-r", help="address, broaden, specify or all"),
    unified: bool = typer.Option(
        False, "--unified", help="one model on all relations, relation as instruction"
    ),
    out: str = typer.Option("", help="output folder (default: train.out)"),
    resume: bool = typer.Option(
        True,
        "--resume/--restart",
        help="continue an interrupted trial from its last checkpoint (model, optimizer, "
        "scheduler, RNG, data position), or discard it and start over; finished trials "
        "are reused either way",
    ),
) -> None:
    """Fine-tune retrievers on the benchmark's train split, selecting on validation MRR@10."""
    # lazy: training loads the harness and retrievers (~0.2 s), not for --help
    from ratio.training.train import summary_rows, train

    _log_progress()
    # a path typed on the command line is relative to the working directory, not the config
    cfg = load_config(config, {"train.out": str(Path(out).resolve())} if out else None)
    selections = train(cfg, relation, unified=unified, resume=resume)
    for row in summary_rows(selections):
        typer.echo(json.dumps(row))


def compare_cmd(
    config: Path = typer.Option(..., "--config", "-c", help="run config TOML"),
    split: str = typer.Option("test", help="benchmark split"),
    max_queries: int = typer.Option(
        -1, help="seeded queries per relation (default train.test_max_queries; 0 = all)"
    ),
    max_pool: int = typer.Option(
        -1, help="seeded sub-pool size (default train.test_max_pool; 0 = full pool)"
    ),
    out: str = typer.Option("", help="output folder (default <train.out>/compare/<split>)"),
    relation: list[str] = typer.Option(
        None, "--relation", "-r", help="only these moves (repeatable; default evaluate.relations)"
    ),
    specialist: list[str] = typer.Option(
        None, "--specialist", help="only these moves' specialists (repeatable; default all)"
    ),
    system: list[str] = typer.Option(
        None,
        "--system",
        "-s",
        help="bm25, baseline, trained (each move's specialist), unified, hybrid, shipped: the "
        "service's retriever names (repeatable; default all but shipped)",
    ),
    shipped: Path = typer.Option(
        None, "--shipped", help="the shipped model folder (default: the newest under models/)"
    ),
) -> None:
    """BM25, baseline, specialists, unified model and hybrid on one split (one table)."""
    # lazy: training loads the harness and retrievers (~0.3 s), not for --help
    from ratio.training.unified import DEFAULT_SYSTEMS, compare

    _log_progress()
    cfg = load_config(config)
    res = compare(
        cfg,
        split=split,
        max_queries=None if max_queries < 0 else max_queries,
        max_pool=None if max_pool < 0 else max_pool,
        out=out or None,
        relations=relation or None,
        specialists=specialist or None,
        shipped=shipped,
        command=shlex.join(["ratio", *sys.argv[1:]]),
        systems=tuple(system) if system else DEFAULT_SYSTEMS,
    )
    typer.echo(Path(res.files["md"]).read_text(encoding="utf-8"))
    for note in res.meta["skipped"]:
        typer.echo(f"skipped {note}")
