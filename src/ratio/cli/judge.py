"""``ratio judge ...``: LLM judging (silver set, calibration, top-k, pairwise, markers, annotation).

Tested by tests/judge/test_pipeline.py, tests/judge/test_calibrate.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ratio.core.config import load_config
from ratio.core.layout import RunDir
from ratio.judge.llm.runner import open_judge


def register(app: typer.Typer) -> None:
    judge = typer.Typer(
        help="LLM judging: silver test set, calibration, top-k and pairwise evaluation.",
        no_args_is_help=True,
    )
    judge.command("silver")(silver_cmd)
    judge.command("calibrate")(calibrate_cmd)
    judge.command("topk")(topk_cmd)
    judge.command("pairwise")(pairwise_cmd)
    judge.command("markers")(markers_cmd)
    judge.command("annotate")(annotate_cmd)
    app.add_typer(judge, name="judge")


_CONFIG = typer.Option(..., "--config", "-c", help="run config TOML")
_BACKEND = typer.Option("", "--backend", help="openai | batch | llamacpp (default: judge.backend)")
_MODEL = typer.Option("", "--model", help="model name or GGUF path (default: judge.model)")
_BASE_URL = typer.Option(
    "", "--base-url", help="OpenAI-compatible base URL (default: judge.base_url)"
)


def _config(config: Path, backend: str, model: str, base_url: str, extra: dict | None = None):
    ov = {"judge.backend": backend, "judge.model": model, "judge.base_url": base_url}
    return load_config(config, {k: v for k, v in ov.items() if v} | (extra or {}))


def _open(config: Path, backend: str, model: str, base_url: str):
    """Load the config with the CLI overrides and open its judge: every LLM command starts so."""
    cfg = _config(config, backend, model, base_url)
    return cfg, open_judge(cfg)


def _usage_line(u: dict) -> str:
    return (
        f"{u['new']} new + {u['cached']} cached judgments ({u['invalid']} invalid), "
        f"{u['input_tokens']}/{u['output_tokens']} tokens in/out, ${u['cost_usd']:.4f}, "
        f"{u['judgments_per_s']:.3f} judgments/s"
    )


def _sizes(n: list[str] | None) -> dict[str, int]:
    out = {}
    for item in n or []:
        rel, _, v = item.partition("=")
        if not v:
            raise typer.BadParameter(f"expected RELATION=N, got {item!r}")
        out[rel.strip()] = int(v)
    return out


def _runs(specs: list[str]) -> dict[str, Path]:
    """``NAME=PATH`` or a bare PATH (name = file name up to the first dot)."""
    out = {}
    for s in specs:
        name, sep, path = s.partition("=")
        p = Path(path if sep else s)
        out[name if sep else p.name.split(".")[0]] = p
    return out


def silver_cmd(
    config: Path = _CONFIG,
    relation: list[str] = typer.Option(None, "--relation", "-r", help="only these relations"),
    n: list[str] = typer.Option(
        None, "--n", help="sample size per relation, RELATION=N (default: judge.silver_n or all)"
    ),
    split: str = typer.Option("test", help="source split"),
    backend: str = _BACKEND,
    model: str = _MODEL,
    base_url: str = _BASE_URL,
) -> None:
    """Build the silver test set: pairs both calibrated prompts accept."""
    # lazy: judge.silver pulls ratio.build and duckdb (~0.8 s), not for --help
    from ratio.judge.silver import build_silver

    cfg, judge = _open(config, backend, model, base_url)
    res = build_silver(cfg, judge, relations=relation or None, n=_sizes(n), split=split)
    for rel, d in res.report["relations"].items():
        typer.echo(f"{rel}: kept {d['kept']}/{d['sampled']} ({100 * d['kept_fraction']:.1f}%)")
    typer.echo(_usage_line(judge.usage.to_dict()))
    typer.echo(f"wrote {res.out_dir}/{{queries,qrels,candidates,judgments}}.parquet and report.md")


def calibrate_cmd(
    labels: Path = typer.Argument(..., help="labels CSV from `ratio judge annotate`"),
    config: Path = _CONFIG,
    relation: list[str] = typer.Option(None, "--relation", "-r"),
    reference: str = typer.Option(
        "", help="reference annotator (default: the one with most labels)"
    ),
    items: Path = typer.Option(
        None, help="items CSV the labels were made from: every label must name one of its items"
    ),
    keep: int = typer.Option(2, help="prompts kept per relation"),
    scoring: str = typer.Option(
        "", help="sample | logprob: verdicts or P(accept) (default: judge.scoring)"
    ),
    folds: int = typer.Option(5, help="cross-validation folds for the thresholds"),
    shots: int = typer.Option(0, help="few-shot examples per request, from the other folds"),
    seed: int = typer.Option(-1, help="fold, shot and sub-sample seed (default: build.seed)"),
    limit: int = typer.Option(
        0, help="judge only a stratified sub-sample of about N labelled pairs per relation"
    ),
    backend: str = _BACKEND,
    model: str = _MODEL,
    base_url: str = _BASE_URL,
) -> None:
    """Score every silver prompt against labels; CV thresholds; keep the best two per relation."""
    # lazy: judge.calibrate pulls ratio.build (via annotate) and duckdb (~0.9 s), not for --help
    from ratio.judge.calibrate import calibrate, calibration_markdown, load_labels

    cfg = _config(config, backend, model, base_url, {"judge.scoring": scoring} if scoring else None)
    seed = seed if seed >= 0 else cfg.build.seed
    # the labels are checked before the judge (its cache file, its model) is opened
    label_set = load_labels(
        labels,
        items=items,
        relations=relation or None,
        reference=reference or None,
        limit=limit,
        seed=seed,
    )
    judge = open_judge(cfg)
    rep = calibrate(cfg, judge, label_set, keep=keep, folds=folds, shots=shots, seed=seed)
    typer.echo(calibration_markdown(rep))
    typer.echo(_usage_line(judge.usage.to_dict()))


def topk_cmd(
    run: list[str] = typer.Argument(
        ..., help="TREC runs (NAME=PATH or PATH) from `ratio evaluate`"
    ),
    config: Path = _CONFIG,
    relation: str = typer.Option(..., "--relation", "-r"),
    n_queries: int = typer.Option(
        0, "--queries", "-n", help="sampled queries (default: judge.topk_queries)"
    ),
    split: str = typer.Option(
        "", help="benchmark split of the runs (default: silver if built, else evaluate.split)"
    ),
    backend: str = _BACKEND,
    model: str = _MODEL,
    base_url: str = _BASE_URL,
) -> None:
    """Judge every retrieved top-10 candidate with both prompts; hard/soft metrics."""
    # lazy: judge.topk pulls ratio.build and duckdb (~1.2 s), not for --help
    from ratio.judge.topk import judge_topk, topk_markdown

    cfg, judge = _open(config, backend, model, base_url)
    res = judge_topk(
        cfg, judge, _runs(run), relation, n_queries=n_queries or None, split=split or None
    )
    typer.echo(topk_markdown(res.report))
    typer.echo(f"wrote {res.out_dir}")


def pairwise_cmd(
    first: str = typer.Argument(
        ..., help="NAME=PATH of the first system's TREC run (e.g. the tuned one)"
    ),
    second: str = typer.Argument(
        ..., help="NAME=PATH of the second system's run (e.g. the baseline)"
    ),
    config: Path = _CONFIG,
    relation: str = typer.Option(..., "--relation", "-r"),
    n_queries: int = typer.Option(0, "--queries", "-n"),
    split: str = typer.Option(""),
    backend: str = _BACKEND,
    model: str = _MODEL,
    base_url: str = _BASE_URL,
) -> None:
    """Inspiration judge: which top-5 list inspires more; both orders, binomial test."""
    # lazy: judge.pairwise pulls ratio.build and duckdb (~1 s), not for --help
    from ratio.judge.pairwise import judge_pairwise, pairwise_markdown

    cfg, judge = _open(config, backend, model, base_url)
    x, y = [next(iter(_runs([spec]).items())) for spec in (first, second)]
    res = judge_pairwise(
        cfg, judge, x, y, relation, n_queries=n_queries or None, split=split or None
    )
    typer.echo(pairwise_markdown(res.report))
    typer.echo(f"wrote {res.out_dir}")


def markers_cmd(
    config: Path = _CONFIG,
    relation: list[str] = typer.Option(["address", "broaden"], "--relation", "-r"),
    expand_n: int = typer.Option(
        40, "--expand", help="markers asked for per expansion round (0: no expansion)"
    ),
    rounds: int = typer.Option(1, help="expansion rounds (each with other examples)"),
    candidates: Path = typer.Option(None, help="also grade these markers (one per line)"),
    out: Path = typer.Option(None, help="output folder (default: <judge.out>/lexicon)"),
    backend: str = _BACKEND,
    model: str = _MODEL,
    base_url: str = _BASE_URL,
) -> None:
    """LLM marker expansion + I.1 grading; writes lexicon-llm.tsv (source=llm, strong-true only)."""
    # lazy: it loads the lexicon package (~60 ms), off the `ratio --help` path
    from ratio.judge.lexicon_llm import build_llm_lexicon

    cfg, judge = _open(config, backend, model, base_url)
    lines = candidates.read_text(encoding="utf-8").splitlines() if candidates else []
    given = [ln.strip() for ln in lines if ln.strip()]
    summary = build_llm_lexicon(
        cfg, judge, relation, n=expand_n, rounds=rounds, given=given, out_dir=out
    )
    typer.echo(json.dumps(summary, indent=2))
    typer.echo(_usage_line(judge.usage.to_dict()))


def annotate_cmd(
    config: Path = _CONFIG,
    annotator: str = typer.Option(
        ..., "--annotator", "-a", help="your name (one labels column per person)"
    ),
    items: Path = typer.Option(
        None, help="items CSV (default: <judge.out>/annotate/items.csv, sampled if absent)"
    ),
    labels: Path = typer.Option(
        None, help="labels CSV to append to (default: <judge.out>/annotate/labels.csv)"
    ),
    relation: list[str] = typer.Option(["address", "specify", "broaden"], "--relation", "-r"),
    n: int = typer.Option(100, help="pairs sampled per relation when creating items"),
    from_silver: bool = typer.Option(
        False, help="sample the items from the silver set's judged sample (cache reuse)"
    ),
    host: str = typer.Option("127.0.0.1"),
    port: int = typer.Option(8765),
) -> None:
    """Serve a local page to label pairs with y / n / s (for `ratio judge calibrate`)."""
    # lazy: judge.annotate pulls ratio.build, duckdb and http.server (~1 s), not for --help
    from ratio.judge.annotate import prepare_items, serve

    cfg = load_config(config)
    base = RunDir.of(cfg).judge.annotate
    items = items or base / "items.csv"
    if not items.is_file():
        prepare_items(cfg, relation, n, items, from_silver=from_silver)
        typer.echo(f"sampled {n} pairs per relation into {items}")
    serve(items, labels or base / "labels.csv", annotator, host, port)
