"""``ratio lexicon ...``: inspect the marker lexicon and run its construction tools.

Tested by tests/lexicon/test_tools.py.
"""

from __future__ import annotations

from pathlib import Path

import typer

LexiconOpt = typer.Option(
    None, "--lexicon", help="Lexicon TSV file or directory (default: shipped)."
)


def register(app: typer.Typer) -> None:
    lex = typer.Typer(
        help="Marker lexicons: stats, validation and construction tools.", no_args_is_help=True
    )
    lex.command("stats")(stats_cmd)
    lex.command("match")(match_cmd)
    lex.command("discover")(discover_cmd)
    lex.command("apply-review")(apply_review_cmd)
    lex.command("extend")(extend_cmd)
    lex.command("expand")(expand_cmd)
    lex.command("neighbors")(neighbors_cmd)
    app.add_typer(lex, name="lexicon")


def stats_cmd(lexicon: Path = LexiconOpt) -> None:
    """Validate a lexicon and print its version and sizes per relation and source."""
    # lazy: the lexicon package and its tools (~60 ms) stay off the `ratio --help` path
    from ratio.lexicon import load_lexicon

    lx = load_lexicon(lexicon)
    typer.echo(f"version\t{lx.version}")
    by_src = lx.sizes_by_source()
    for rel, n in lx.sizes().items():
        srcs = ", ".join(f"{s}={c}" for s, c in sorted(by_src.get(rel, {}).items()))
        typer.echo(f"{rel}\t{n}\t{srcs}")
    typer.echo(f"total\t{len(lx)}")


def match_cmd(sentence: list[str], lexicon: Path = LexiconOpt) -> None:
    """Show which marker (if any) opens each SENTENCE."""
    # lazy: the lexicon package and its tools (~60 ms) stay off the `ratio --help` path
    from ratio.lexicon import MarkerMatcher, load_lexicon

    m = MarkerMatcher(load_lexicon(lexicon))
    for s in sentence:
        hit = m.match(s)
        typer.echo(
            f"{hit.relation}\t{hit.marker}\t{s[hit.start_of_rest :]}" if hit else f"-\t-\t{s}"
        )


def discover_cmd(
    sentences: Path = typer.Argument(
        ..., help="Sentences Parquet dir/file, or a .txt (one per line)."
    ),
    out: Path = typer.Option(
        ..., "--out", help="Output directory for review.csv/examples.csv/review.html."
    ),
    top: int = typer.Option(400, help="Number of most frequent spans."),
    examples: int = typer.Option(15, help="Random example pairs per span."),
    seed: int = typer.Option(0, help="Sampling seed."),
    max_words: int = typer.Option(7, help="Longest span in words."),
    lexicon: Path = LexiconOpt,
) -> None:
    """Count sentence-initial pre-comma spans and write a review page (paper §4.1)."""
    # lazy: the lexicon package and its tools (~60 ms) stay off the `ratio --help` path
    from ratio.lexicon import discover, load_lexicon

    spans = discover.discover(sentences, top, examples, seed, max_words, load_lexicon(lexicon))
    paths = discover.write_review(spans, out)
    typer.echo(f"{len(spans)} spans -> " + ", ".join(str(p) for p in paths.values()))


def apply_review_cmd(
    review: Path = typer.Argument(..., help="A filled review.csv (decision = relation or reject)."),
    out: Path = typer.Option(..., "--out", help="Lexicon TSV to write."),
    source: str = typer.Option("manual", help="Source column for the accepted rows."),
    lexicon: Path = LexiconOpt,
) -> None:
    """Read reviewers' decisions back into a lexicon TSV."""
    # lazy: the lexicon package and its tools (~60 ms) stay off the `ratio --help` path
    from ratio.lexicon import load_lexicon
    from ratio.lexicon.discover import apply_review

    counts = apply_review(review, out, source, load_lexicon(lexicon))
    typer.echo(f"{out}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))


def extend_cmd(
    sentences: Path = typer.Argument(..., help="Sentences Parquet dir/file, or a .txt."),
    head: list[str] = typer.Option(
        ..., "--head", help="Head marker, e.g. 'to address'; repeatable."
    ),
    relation: str = typer.Option("address", help="Relation of the extensions."),
    out: Path = typer.Option(..., "--out", help="Candidates TSV (source=extendable)."),
    max_extra_words: int = typer.Option(5, help="Most words added to a head."),
    min_count: int = typer.Option(1, help="Least corpus frequency."),
    all_extensions: bool = typer.Option(False, help="Keep non-anaphoric extensions too."),
    lexicon: Path = LexiconOpt,
) -> None:
    """Collect every corpus extension of the heads up to a comma (paper §4.1)."""
    # lazy: the lexicon package and its tools (~60 ms) stay off the `ratio --help` path
    from ratio.lexicon import extend, load_lexicon

    found = extend.extend(head, sentences, max_extra_words, min_count, not all_extensions, relation)
    n = extend.write_candidates(found, out, load_lexicon(lexicon))
    typer.echo(f"{n} new candidates -> {out}")


def expand_cmd(
    out: Path = typer.Option(..., "--out", help="Candidates TSV (source=pattern)."),
    patterns: Path = typer.Option(None, help="Patterns file (default: shipped data/patterns.txt)."),
    sentences: Path = typer.Option(None, help="Optional corpus to record each candidate's count."),
    accepted_only: bool = typer.Option(False, help="Only templates marked 'accept'."),
    lexicon: Path = LexiconOpt,
) -> None:
    """Instantiate the Hearst-style templates into candidate markers (paper Table 5)."""
    # lazy: the lexicon package and its tools (~60 ms) stay off the `ratio --help` path
    from ratio.lexicon import expand, load_lexicon
    from ratio.lexicon.discover import count_spans

    counts = count_spans(sentences) if sentences is not None else None
    cands = expand.expand(patterns)
    n = expand.write_candidates(cands, out, load_lexicon(lexicon), counts, accepted_only)
    typer.echo(f"{len(cands)} generated, {n} new candidates -> {out}")


def neighbors_cmd(
    sentences: Path = typer.Argument(..., help="Sentences Parquet dir/file, or a .txt."),
    out: Path = typer.Option(..., "--out", help="Candidates TSV (source=embedding)."),
    model: Path = typer.Option(
        None, help="sentence-transformers model dir (default models/all-MiniLM-L6-v2)."
    ),
    k: int = typer.Option(10, help="Neighbours per seed."),
    min_count: int = typer.Option(2, help="Least span frequency."),
    sources: str = typer.Option("manual,extendable", help="Seed markers: these sources' rows."),
    relations: str = typer.Option("address,broaden,specify", help="Seed markers: these relations."),
    lexicon: Path = LexiconOpt,
) -> None:
    """Nearest corpus spans of the foundational markers (paper Appendix A)."""
    # lazy: the lexicon package and its tools (~60 ms) stay off the `ratio --help` path
    from ratio.lexicon import load_lexicon, neighbors
    from ratio.lexicon.discover import count_spans

    lx = load_lexicon(lexicon)
    srcs, rels = set(sources.split(",")), set(relations.split(","))
    seeds = {e.marker: e.relation for e in lx.entries if e.source in srcs and e.relation in rels}
    spans = count_spans(sentences, 5)
    found = neighbors.neighbors(seeds, spans, neighbors.load_encoder(model), k, 5, min_count, lx)
    n = neighbors.write_candidates(found, out)
    typer.echo(f"{len(seeds)} seeds, {n} candidates -> {out}")
