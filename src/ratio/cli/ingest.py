"""`ratio ingest` and `ratio corpus stats`.

Tested by tests/test_own_corpus.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ratio.core.config import load_config
from ratio.core.layout import IngestDir, RunDir


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest_cmd)
    app.command("formats")(formats_cmd)
    corpus = typer.Typer(help="Inspect an ingested corpus.", no_args_is_help=True)
    corpus.command("stats")(stats_cmd)
    app.add_typer(corpus, name="corpus")


def ingest_cmd(
    corpus: list[str] = typer.Argument(
        None, help="Input files, folders or globs (default: the config's corpus.inputs)."
    ),
    out: Path = typer.Option(
        None, "--out", "-o", help="Output directory (default: <build.out>/ingest)."
    ),
    fmt: str = typer.Option(
        None,
        "--format",
        "-f",
        help="Reader format (see `ratio formats`) or auto, the default: decided per file.",
    ),
    metadata: Path = typer.Option(
        None,
        "--metadata",
        "-m",
        help="CSV or JSONL with id, title, year or date, venue per paper (ids = file stems "
        "or record ids); default: the config's corpus.metadata.",
    ),
    config: Path = typer.Option(None, "--config", "-c", help="TOML run config."),
    strict: bool = typer.Option(
        False, "--strict", help="Stop at the first bad record (non-zero exit)."
    ),
    workers: int = typer.Option(None, "--workers", "-j", help="Parallel shard workers."),
    executor: str = typer.Option(None, "--executor", help="local | ray"),
    address: str = typer.Option("", "--address", help="Ray cluster address (executor ray)."),
) -> None:
    """Read papers, clean and segment them, and write sentence shards as Parquet."""
    # lazy: ratio.corpus.ingest loads the readers and text pipeline (~0.5 s), not for --help
    from ratio.corpus.ingest import ingest
    from ratio.corpus.ingest_stats import stats_markdown

    cfg = load_config(config)
    inputs = (
        list(corpus)
        if corpus
        else [p if "://" in p else str(cfg.resolve(p)) for p in cfg.corpus.inputs]
    )
    if not inputs:
        raise typer.BadParameter("give CORPUS paths or a --config with corpus.inputs")
    if strict:
        cfg.ingest.strict = True
    if workers:
        cfg.ingest.workers = workers
    ingested = IngestDir(out) if out else RunDir.of(cfg).ingest
    sidecar = metadata or (cfg.resolve(cfg.corpus.metadata) if cfg.corpus.metadata else None)
    res = ingest(
        inputs,
        fmt or cfg.corpus.format,
        ingested.root,
        cfg.ingest,
        executor=executor or cfg.build.executor,
        address=address or cfg.build.ray_address,
        metadata=sidecar,
        log=lambda line: typer.echo(line, err=True),
    )
    stats = json.loads(ingested.stats.read_text())
    typer.echo(stats_markdown(stats))
    if "metadata" in stats:
        m = stats["metadata"]
        typer.echo(
            f"metadata {m['file']}: {m['papers_matched']:,} papers matched, "
            f"{m['papers_without_row']:,} without a row, {m['rows_without_paper']:,} rows "
            "without a paper"
        )
    typer.echo(
        f"{res.papers:,} papers, {res.sentences:,} sentences in {res.seconds:.1f}s "
        f"({res.reused_shards} of {res.shards} shards reused) -> {ingested.root}"
    )


def stats_cmd(
    directory: Path = typer.Argument(..., help="An ingest output directory."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of Markdown."),
) -> None:
    """Report papers, sentences, per-year and per-section counts and drops by reason."""
    # lazy: ratio.corpus.ingest loads the readers and text pipeline (~0.5 s), not for --help
    from ratio.corpus.ingest_stats import corpus_stats, stats_markdown

    stats = corpus_stats(directory)
    typer.echo(json.dumps(stats, indent=1) if as_json else stats_markdown(stats))


def formats_cmd() -> None:
    """List the corpus formats Ratio can read."""
    # lazy: the readers package costs ~0.2 s that `ratio --help` need not pay
    from ratio.corpus.readers import available_formats, get_reader

    for name in available_formats():
        r = get_reader(name)
        typer.echo(f"{name:12s} {'folder' if r.folder else ', '.join(r.suffixes):40s} {r.doc}")
