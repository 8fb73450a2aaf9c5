"""``ratio evaluate``: all systems x relations -> runs and tables.

Tested by tests/evaluation/test_harness.py, tests/test_behaviour.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import typer

from ratio.core.config import RunConfig, load_config
from ratio.core.layout import HELD_SUFFIX, RunDir


def register(app: typer.Typer) -> None:
    app.command("evaluate")(evaluate_cmd)


def evaluate_cmd(
    config: Path = typer.Option(..., "--config", "-c", help="run config TOML"),
    oracle: str = typer.Option(
        None,
        help="candidate pool: none (shared), relation (oracle), golds (oracle); "
        "default: evaluate.oracle",
    ),
    system: list[str] = typer.Option(None, "--system", "-s", help="only these systems"),
    out: str = typer.Option("", help="output folder (default: evaluate.out)"),
    split: str = typer.Option(
        "",
        help='benchmark split (default: evaluate.split); "test+held" adds the test queries '
        "held for the silver set (the raw mined test split)",
    ),
) -> None:
    """Evaluate every configured retriever on every relation of the benchmark split."""
    # lazy: the harness loads the retrievers and search store (~0.15 s), not for --help
    from ratio.evaluation.harness import evaluate_systems

    # a path typed on the command line is relative to the working directory, not the config
    cfg = load_config(config, {"evaluate.out": str(Path(out).resolve())} if out else None)
    if split and split != cfg.evaluate.split:
        cfg.evaluate.split = split
        if not out and cfg.evaluate.out:  # never over the configured split's tables
            cfg.evaluate.out = f"{cfg.evaluate.out.rstrip('/')}-{split}"
    res = evaluate_systems(cfg, oracle=oracle or cfg.evaluate.oracle, systems=system or None)
    typer.echo(Path(res.files["md"]).read_text(encoding="utf-8"))
    typer.echo(f"wrote {res.files['md']}, .csv, .json and {len(res.files) - 3} TREC runs")
    held = held_counts(cfg)
    if held:
        typer.echo(
            f"note: {held} test queries of needs_validation markers are held for the silver set "
            f"and not evaluated; `--split {cfg.evaluate.split}{HELD_SUFFIX}` includes them"
        )


def held_counts(cfg: RunConfig) -> str:
    """ "address 912, broaden 67" for the evaluated split's held queries; "" when none are."""
    if cfg.evaluate.split.endswith(HELD_SUFFIX):
        return ""
    path = RunDir.of(cfg).benchmark.split(cfg.evaluate.split).held_queries
    if not path.is_file():
        return ""
    counts = Counter(pq.read_table(path, columns=["relation"]).column(0).to_pylist())
    return ", ".join(f"{rel} {n:,}" for rel, n in sorted(counts.items()))
