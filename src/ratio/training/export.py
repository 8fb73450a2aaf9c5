"""``ratio model export``: a trained unified model as a shipped folder (see
:mod:`ratio.retrieval.shipped`), and ``ratio model card``: its test table from ``train-compare``.

The export is what lets a model leave the run directory that trained it: the weights in a
compact form (fp16 safetensors load as fp32, so serving arithmetic is unchanged), the per-move
instructions it was trained with, its validation record against its base and BM25 on one
pool, how it was trained, and a manifest that every load checks.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ratio.core.config import RunConfig, load_config
from ratio.core.io import RatioError, write_text_atomic
from ratio.core.layout import UNIFIED, RunDir
from ratio.core.provenance import code_version
from ratio.core.records import RELATIONS
from ratio.retrieval.cpu import cpu_summary
from ratio.retrieval.models import resolve_model
from ratio.retrieval.shipped import (
    CARD,
    FORMAT,
    NAME_PATTERN,
    RECORD,
    ShippedModelError,
    content_hash,
    load_shipped,
    manifest,
    read_json,
    read_record,
    test_tables,
)
from ratio.training.data import training_pairs
from ratio.training.train import TRAINING_META
from ratio.training.validation import PRIMARY, relation_metric

DTYPES = ("float16", "float32")
# the run's record becomes ours, our card replaces its card; a trainer checkpoint's state
# (optimizer, scheduler, RNG) is for resuming, not for serving
SKIP = {TRAINING_META, CARD, "checkpoints", "optimizer.pt", "scheduler.pt", "rng_state.pth"}
SKIP |= {"trainer_state.json", "training_args.bin"}
TEST_METRICS = ("mrr@10", "recall@10")


def export_model(
    source: str | os.PathLike,
    out: str | os.PathLike,
    *,
    dtype: str = "float16",
    config: RunConfig | None = None,
) -> Path:
    """Write ``out`` (named ``ratio-moves-<what>-v<N>``) from ``source``: a run config (its
    unified model) or a trained model folder with its ``ratio_training.json``. An existing
    ``out`` is replaced only once the new folder is complete."""
    if dtype not in DTYPES:
        raise ShippedModelError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    out = Path(out)
    m = NAME_PATTERN.match(out.name)
    if not m:
        raise ShippedModelError(
            f"{out}: name a shipped model folder ratio-moves-<base>-v<N> (e.g. "
            f"ratio-moves-minilm-v1), so versions sort and `auto` finds the newest"
        )
    src = Path(source)
    if src.suffix == ".toml":
        config = load_config(src)
        src = RunDir.of(config).trained.best(UNIFIED)
    meta = _training_record(src)
    sig = meta.get("signature") or {}
    instructions = sig.get("query_prefixes") or {}
    if set(instructions) != set(RELATIONS):
        raise ShippedModelError(
            f"{src / TRAINING_META}: signature.query_prefixes covers "
            f"{', '.join(sorted(instructions)) or 'no move'}; a shipped model answers every move "
            f"(export the unified model `ratio train --relation all --unified` writes)"
        )
    selection = _selection(src)
    validation = {
        "metric": PRIMARY,
        "pool": meta.get("validation", {}),
        "selected_epoch": (meta.get("best") or {}).get("epoch"),
        PRIMARY: {
            who: {m: _score(record, m) for m in RELATIONS}
            for who, record in (
                ("model", meta.get("best")),
                ("baseline", meta.get("baseline")),
                ("bm25", selection.get("bm25_val")),
            )
        },
    }
    base = sig.get("base_model", "")
    record: dict[str, Any] = {
        "format": FORMAT,
        "name": out.name,
        "version": int(m["version"]),
        "base_model": Path(base).name,
        "base_licence": _licence(base),
        "prefix": sig.get("prefix", "none"),
        "query_instructions": {r: instructions[r] for r in RELATIONS},
        "doc_prefix": sig.get("doc_prefix", ""),
        "max_seq_length": sig.get("max_seq_length"),
        "weights_dtype": dtype,
        "validation": validation,
        "training": {
            "source": str(src),
            "hyperparameters": meta.get("hyperparameters"),
            "n_pairs": meta.get("n_pairs"),
            "pairs_per_move": _pairs_per_move(config, sig) if config else None,
            "epochs": meta.get("epochs"),
            "throughput": meta.get("throughput"),
            "provenance": meta.get("provenance"),
            "corpus": config.corpus.inputs if config else None,
            "split": dataclasses.asdict(config.split) if config else None,
        },
        "exported": {"code_version": code_version(), "cpu": cpu_summary()},
    }
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _copy_weights(src, tmp, dtype)
        old = out / RECORD
        if old.is_file():  # a re-export keeps the test table measured on the same weights
            prior = read_record(out)
            if prior.get("test") and _same_weights(prior.get("files") or {}, tmp):
                record["test"] = prior["test"]
        _finish(tmp, record)
        _replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def write_card(
    folder: str | os.PathLike, test_results: Sequence[str | os.PathLike] | None = None
) -> Path:
    """Put ``train-compare`` tables (each a ``results.json``, or the folder holding it) into the
    record and the card of a shipped folder, the headline (full-pool) table first; the manifest
    is rewritten to match."""
    folder = Path(folder)
    shipped = load_shipped(folder)  # verified: never describe weights that were altered
    record = dict(shipped.record)
    if test_results:
        record["test"] = [_test_table(Path(p), shipped.name) for p in test_results]
    tmp = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(folder, tmp)
        _finish(tmp, record)
        _replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


# ------------------------------------------------------------------ pieces


def _training_record(src: Path) -> dict[str, Any]:
    path = src / TRAINING_META
    if not (src / "modules.json").is_file():
        raise ShippedModelError(
            f"{src}: not a sentence-transformers model folder (no modules.json); give the "
            f"`best` folder `ratio train` wrote, or the run config"
        )
    return read_json(
        path, "export needs the training record `ratio train` saves beside the weights"
    )


def _selection(src: Path) -> dict[str, Any]:
    """The target's ``selection.json`` (BM25's validation scores), found from ``best`` or from
    ``trial-<i>/best``."""
    for d in (src.parent, src.resolve().parent.parent, src.resolve().parent):
        p = d / "selection.json"
        if p.is_file():
            return json.loads(p.read_text(encoding="utf-8"))
    return {}


def _score(record: Any, move: str) -> float | None:
    v = record.get(relation_metric(move)) if isinstance(record, dict) else None
    return float(v) if isinstance(v, (int, float)) else None


def _licence(base: str) -> str:
    """The base model's licence from its card's front matter ('' when it states none)."""
    try:
        card = (resolve_model(base)[0] / CARD).read_text(encoding="utf-8")
    except (OSError, RatioError):  # a base that is no longer on disk still exports
        return ""
    m = re.search(r"^license:\s*(\S+)\s*$", card.split("\n---", 1)[0], re.MULTILINE)
    return m[1] if m else ""


def _pairs_per_move(config: RunConfig, sig: dict[str, Any]) -> dict[str, int]:
    """Training pairs per move, recounted from the benchmark the record's signature describes."""
    bench = RunDir.of(config).benchmark
    pairs = training_pairs(
        [bench.load("train")],
        list(RELATIONS),
        max_pairs=sig.get("max_pairs", 0),
        query_prefixes=sig.get("query_prefixes", {}),
        doc_prefix=sig.get("doc_prefix", ""),
        seed=sig.get("seed", 13),
    )
    return dict(sorted(Counter(pairs.relations).items()))


def _copy_weights(src: Path, dst: Path, dtype: str) -> None:
    """Copy the model's files; with float16, a transformer's safetensors are stored at half
    size and its config says float32, so every loader computes in float32 as before."""
    from safetensors.torch import load_file, save_file

    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        if not f.is_file() or rel.parts[0] in SKIP or "checkpoint-" in str(rel):
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        transformer = (f.parent / "config.json").is_file() and _is_transformer(f.parent)
        if f.suffix == ".safetensors" and dtype == "float16" and transformer:
            tensors = load_file(str(f))
            half = {
                k: v.half().contiguous() if v.is_floating_point() else v for k, v in tensors.items()
            }
            save_file(half, str(target), metadata={"format": "pt"})
        elif f.name == "config.json" and transformer:
            cfg = json.loads(f.read_text(encoding="utf-8"))
            cfg["dtype"] = "float32"  # transformers 5 would otherwise compute in the file's dtype
            cfg.pop("torch_dtype", None)
            target.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
        else:
            shutil.copy2(f, target)


def _is_transformer(folder: Path) -> bool:
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return "model_type" in cfg and cfg.get("model_type") != "model2vec"


def _same_weights(recorded: dict[str, Any], new: Path) -> bool:
    """Whether ``new`` holds the files the old record lists (the card aside), read from that
    record rather than hashed again."""
    fresh = {k: v for k, v in manifest(new).items() if k != CARD}
    return {k: v for k, v in recorded.items() if k != CARD} == fresh


def _finish(folder: Path, record: dict[str, Any]) -> None:
    """The card from the record, then the manifest over everything, then the record."""
    (folder / CARD).write_text(render_card(record), encoding="utf-8")
    files = manifest(folder)
    record = {**record, "files": files, "content_hash": content_hash(files)}
    write_text_atomic(folder / RECORD, json.dumps(record, indent=2) + "\n")


def _replace(new: Path, out: Path) -> None:
    """``out`` becomes ``new``; the old folder is moved aside first and removed last, so at
    every moment one complete folder stands at ``out`` or beside it."""
    old = out.with_name(f".{out.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        os.replace(out, old)
    os.replace(new, out)
    shutil.rmtree(old, ignore_errors=True)


def _test_table(path: Path, name: str) -> dict[str, Any]:
    """The rows of a ``train-compare`` results.json that a card shows."""
    path = path / "results.json" if path.is_dir() else path
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ShippedModelError(f"{path}: cannot read a train-compare results.json ({e})") from e
    rows = []
    for r in doc.get("records", []):
        rows.append(
            {
                "system": r["setup"],
                "relation": r["relation"],
                "n_queries": r["n_queries"],
                **{k: r["metrics"].get(k) for k in TEST_METRICS},
                **{k: r[k] for k in ("vs_bm25_mrr@10", "vs_baseline_mrr@10") if k in r},
            }
        )
    if not rows:
        raise ShippedModelError(f"{path}: no result rows")
    first = doc["records"][0]
    meta = doc.get("meta", {})
    return {
        "split": meta.get("split"),
        "pool": first.get("pool"),
        "pool_size": first.get("pool_size"),
        "command": meta.get("command", ""),
        "code_version": (meta.get("provenance") or {}).get("ratio.code_version"),
        "rows": rows,
    }


# ------------------------------------------------------------------ the card


def _fmt(v: Any, scale: float = 100.0) -> str:
    return "–" if v is None else f"{v * scale:.1f}"


def render_card(record: dict[str, Any]) -> str:
    """The model card: what it is, how to use it, how it was trained and how good it is."""
    name, base = record["name"], record["base_model"]
    val = record["validation"]
    scores = val[PRIMARY]
    pool = val.get("pool") or {}
    tr = record["training"]
    hp = tr.get("hyperparameters") or {}
    thr = tr.get("throughput") or {}
    prov = tr.get("provenance") or {}
    lines = [
        f"# {name}",
        "",
        f"A move-conditioned sentence retriever for Ratio: {base} fine-tuned on every move "
        f"(Address, Broaden, Specify) at once, the move given as a query instruction. "
        f"Documents are encoded without a prefix, so one index serves all three moves.",
        "",
        "## Use",
        "",
        "`ratio serve`, `ratio search`, `ratio.search` and the MCP server answer each move "
        "with the newest shipped model when nothing better is trained locally (`auto`). "
        "Outside Ratio, with sentence-transformers:",
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        f'model = SentenceTransformer("models/{name}")',
        "query = model.encode("
        f'"{record["query_instructions"]["address"]}" + "<a problem statement>")',
        'docs = model.encode(["<a sentence>", ...])  # no prefix',
        "```",
        "",
        "Query instructions: "
        + ", ".join(f"{m} `{p!r}`" for m, p in record["query_instructions"].items())
        + ".",
        "",
        "## Model",
        "",
        f"- Base: {base} (licence: {record.get('base_licence') or 'not stated'}); this "
        f"fine-tune is distributed under the same licence.",
        f"- Weights: {record['weights_dtype']} safetensors, computed in float32 at load; "
        f"max_seq_length {record.get('max_seq_length')}.",
        f"- Files: every one listed with its sha256 in `{RECORD}` (`files`, `content_hash`), "
        f"checked at every load.",
        "",
        "## Training",
        "",
        f"- Corpus: {', '.join(tr.get('corpus') or []) or 'not recorded'}; split "
        f"{json.dumps(tr.get('split')) if tr.get('split') else 'not recorded'}; training "
        f"pairs from the train split.",
        f"- Pairs: {tr.get('n_pairs'):,} in all"
        + (
            " (" + ", ".join(f"{m} {n:,}" for m, n in tr["pairs_per_move"].items()) + ")"
            if tr.get("pairs_per_move")
            else ""
        )
        + ".",
        "- Settings: MultipleNegativesRankingLoss (scale 20), duplicate-free batches; "
        + ", ".join(f"{k} {v}" for k, v in hp.items() if k != "rationale")
        + f"; best epoch on validation: {val.get('selected_epoch')}.",
        f"- Time: {_minutes(thr.get('wall_s'))} wall ({_minutes(thr.get('train_only_s'))} "
        f"training without validation), {thr.get('global_steps')} steps, on "
        f"{thr.get('cpu') or thr.get('device') or 'a machine not recorded'}; "
        f"exported on {record['exported']['cpu']}.",
        f"- Code: {prov.get('ratio.code_version', 'not recorded')}; config digest "
        f"{prov.get('ratio.config_digest', 'not recorded')}.",
        "",
        "## Validation (what `auto` decides on)",
        "",
        f"MRR@10 ×100 on one pool for every row: {pool.get('pool', 'not recorded')} "
        f"({pool.get('n_queries', '?')} queries: "
        + ", ".join(f"{m} {n}" for m, n in (pool.get("per_relation") or {}).items())
        + ").",
        "",
        "| system | " + " | ".join(RELATIONS) + " |",
        "|---|" + "---:|" * len(RELATIONS),
    ]
    for who, label in (
        ("bm25", "BM25-unigram"),
        ("baseline", f"{base} (untuned)"),
        ("model", name),
    ):
        row = scores.get(who) or {}
        lines.append(f"| {label} | " + " | ".join(_fmt(row.get(m)) for m in RELATIONS) + " |")
    lines += ["", "## Test", ""]
    tests = test_tables(record)
    if not tests:
        lines += [
            "Not measured yet: run the command below, then `ratio model card --test OUT`.",
            "",
            "```",
            "ratio train-compare --config configs/neurips.toml --system bm25 --system baseline "
            f"--system shipped --shipped models/{name} --max-queries 0 --max-pool 0 --out OUT",
            "```",
            "",
        ]
    for test in tests:
        lines += _test_lines(test, base)
    return "\n".join(lines)


def _test_lines(test: dict[str, Any], base: str) -> list[str]:
    pool, size = test["pool"], f"{test['pool_size']:,} candidates"
    full = test["pool_size"] and "sub-pool" not in pool
    title = "Full test pool" if full else "Seeded sub-pool (not comparable with the full pool)"
    lines = [
        f"### {title}",
        "",
        f"Split {test['split']}, pool: {pool}" + ("" if size in pool else f" ({size})") + ". "
        f"×100; p: paired randomization test of MRR@10 against BM25-unigram and against "
        f"the untuned base. Code: {test.get('code_version')}.",
        "",
        "| system | move | queries | M@10 | R@10 | vs BM25 (p) | vs base (p) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in test["rows"]:
        vs = [r.get(k) for k in ("vs_bm25_mrr@10", "vs_baseline_mrr@10")]
        cells = ["–" if v is None else f"{v['diff'] * 100:+.1f} ({v['p_value']:.3g})" for v in vs]
        system = {"BM25": "BM25-unigram"}.get(r["system"], r["system"])
        if system.endswith("-Baseline"):
            system = f"{base} (untuned)"
        lines.append(
            f"| {system} | {r['relation']} | {r['n_queries']:,} | "
            f"{_fmt(r.get('mrr@10'))} | {_fmt(r.get('recall@10'))} | {cells[0]} | {cells[1]} |"
        )
    return lines + [
        "",
        "Reproduce (after `ratio build --config configs/neurips.toml`):",
        "",
        "```",
        test.get("command") or "not recorded",
        "```",
        "",
    ]


def _minutes(seconds: Any) -> str:
    return f"{seconds / 60:.0f} min" if isinstance(seconds, (int, float)) else "not recorded"
