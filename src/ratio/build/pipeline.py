"""The cached ``build``: a list of stages, ingest → mine → dedup → split → export → reports.

Each stage only declares its *key* (its ``*_VERSION``, the config fields it reads, the
lexicon version, its inputs' keys), its outputs and the function that makes them;
:mod:`ratio.runner.stages` runs or skips it (docs/architecture.md, "Build: a list of stages"). So a
rerun with the same config does no work, and a lexicon edit re-mines every shard and reruns
what depends on it, nothing else. Sentence shards are keyed by content hash, since ingest
rewrites them on every run, memoized on (size, mtime) so unchanged files are not re-read.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from ratio.build.dedup import dedup_files, dedup_partitioned
from ratio.build.export import export_beir
from ratio.build.mine import mine_file
from ratio.build.reports import MINE_COUNTERS, write_reports
from ratio.build.split import boundaries, check_mode, split_pairs, undated_error, write_datasets
from ratio.build.split import split_key as split_fields
from ratio.core import storage
from ratio.core.config import RunConfig
from ratio.core.io import RatioError, write_text_atomic
from ratio.core.layout import SPLITS, TABLES, RunDir
from ratio.core.provenance import code_version, stamp
from ratio.corpus.ingest import ingest
from ratio.lexicon import Lexicon, load_lexicon
from ratio.runner.stages import (
    Shard,
    Stage,
    StageResult,
    digest,
    read_json,
    remove_stale,
    run_sharded,
    run_stage,
)

# 2: validity rules; 3: query_fragment, later-step deferrals; 4: gold_colon for Address
MINE_VERSION = "4"
DEDUP_VERSION = "1"
SPLIT_VERSION = "2"  # 2: needs_validation test queries held in test/pending_queries.parquet
EXPORT_VERSION = "1"
REPORTS_VERSION = "1"
REPORT_FILES = ("table1.md", "table2.md", "table6.md", "build.md", "markers.tsv")


@dataclass
class BuildResult:
    out_dir: Path
    stages: dict[str, StageResult] = field(default_factory=dict)
    mined_shards: list[str] = field(default_factory=list)
    reused_shards: list[str] = field(default_factory=list)
    counts: dict = field(default_factory=dict)  # split -> counts
    lexicon_version: str = ""
    seconds: float = 0.0

    @property
    def ran(self) -> list[str]:
        """Stages that did work in this run (empty when everything was up to date)."""
        return [s for s, _ in PIPELINE if s in self.stages and self.stages[s].ran]


@dataclass
class _Build:
    """What the stages of one build hand on to the next: keys, counts, the lexicon."""

    config: RunConfig
    run: RunDir
    progress: bool | None
    result: BuildResult
    lexicon: Lexicon | None = None  # loaded by the mine stage
    hold: list[str] = field(default_factory=list)  # the lexicon's needs_validation markers
    mine_keys: dict[str, dict] = field(default_factory=dict)  # shard -> key, in shard order
    mine_summaries: list[dict] = field(default_factory=list)
    mine_totals: dict = field(default_factory=dict)
    dedup_key: dict = field(default_factory=dict)
    dedup_counts: dict = field(default_factory=dict)
    split_key: dict = field(default_factory=dict)
    split_info: dict = field(default_factory=dict)

    @property
    def lexicon_version(self) -> str:
        return self.lexicon.version if self.lexicon else ""


def build(config: RunConfig, progress: bool | None = None) -> BuildResult:
    """Run every stage that is out of date; see the module docstring for the cache rules."""
    t_start = time.perf_counter()
    if storage.is_url(config.build.out):
        raise RatioError(
            f"[build] out = {config.build.out!r}: the run directory must be a local or shared "
            "filesystem path (every Ray node must see it); corpus inputs may be s3://, gs:// "
            "URLs. Publish a finished run with ratio.core.storage.sync(out, url)."
        )
    run = RunDir.of(config)
    boundaries(config.split)  # a bad [split] fails before hours of mining
    check_mode(config.split)
    b = _Build(config, run, progress, BuildResult(out_dir=run.root))
    for name, stage in PIPELINE:
        b.result.stages[name] = stage(b)
    b.result.seconds = round(time.perf_counter() - t_start, 3)
    return b.result


# --------------------------------------------------------------------------- the stages


def _ingest(b: _Build) -> StageResult:
    """Papers → sentence shards (``ratio.corpus.ingest``, itself staged: per input shard, then
    corpus-wide boilerplate removal)."""
    cfg = b.config
    if not cfg.corpus.inputs:
        return StageResult("ingest", detail={"skipped": "no [corpus] inputs"})
    t0 = time.perf_counter()
    # URLs (s3://, gs://, file://) pass through; relative paths resolve against the config
    inputs = [p if "://" in p else str(cfg.resolve(p)) for p in cfg.corpus.inputs]
    r = ingest(
        inputs,
        cfg.corpus.format,
        b.run.ingest.root,
        cfg.ingest,
        executor=cfg.build.executor,
        address=cfg.build.ray_address,
        progress=b.progress,
        metadata=cfg.resolve(cfg.corpus.metadata) if cfg.corpus.metadata else None,
    )
    return StageResult(
        "ingest",
        ran=r.reused_shards < r.shards,
        seconds=time.perf_counter() - t0,
        detail={"papers": r.papers, "sentences": r.sentences, "shards": r.shards},
    )


def _mine(b: _Build) -> StageResult:
    """Sentence shards → mined pairs, one marked piece per shard."""
    cfg, run = b.config, b.run
    t0 = time.perf_counter()
    shards = run.ingest.sentence_shards()
    if not shards:
        raise RatioError(
            f"no sentence shards in {run.ingest.sentences}: set [corpus] inputs in the config, "
            "or run `ratio ingest` first"
        )
    if cfg.split.mode == "temporal":
        _check_dated(run.ingest.papers)  # an undated corpus fails before mining
    lexicon_path = str(cfg.resolve(cfg.lexicon.path)) if cfg.lexicon.path else ""
    b.lexicon = load_lexicon(lexicon_path or None)
    b.hold = b.lexicon.needs_validation()
    b.result.lexicon_version = b.lexicon.version
    run.mine.mkdir(parents=True, exist_ok=True)
    fps = fingerprint_files(shards, run.mine_fingerprints)
    pieces = []
    for s in shards:
        key = {
            "mine_version": MINE_VERSION,
            "lexicon_version": b.lexicon.version,
            "min_chars": cfg.ingest.min_chars,
            "input": {"shard": s.stem, "sha256": fps[s.name]},
        }
        b.mine_keys[s.stem] = key
        out = str(run.mine_shard(s.stem))
        args = (str(s), out, lexicon_path, cfg.ingest.min_chars, key)
        pieces.append(
            Shard(s.stem, mine_file, args, key, str(run.mine_done(s.stem)), outputs=(out,))
        )
    remove_stale(run.mine, set(b.mine_keys))  # shards that no longer exist upstream
    b.mine_summaries = run_sharded(
        pieces,
        desc="mine shards",
        executor=cfg.build.executor,
        workers=cfg.ingest.workers,
        address=cfg.build.ray_address,
        progress=b.progress,
    )
    mined = [m["shard"] for m in b.mine_summaries if not m["reused"]]
    b.result.mined_shards = sorted(mined)
    b.result.reused_shards = [m["shard"] for m in b.mine_summaries if m["reused"]]
    totals = {k: sum(m.get(k, 0) for m in b.mine_summaries) for k in MINE_COUNTERS}
    totals["shards"] = len(shards)
    totals["dropped_invalid"] = _sum_invalid(b.mine_summaries)
    b.mine_totals = totals
    return StageResult(
        "mine",
        ran=bool(mined),
        seconds=time.perf_counter() - t0,
        detail={"mined": len(mined), "reused": len(b.result.reused_shards), **totals},
    )


def _dedup(b: _Build) -> StageResult:
    """Mined pairs of the whole corpus → one deduplicated table."""
    cfg, run = b.config, b.run
    key = {
        "dedup_version": DEDUP_VERSION,
        "inputs": {name: digest(k) for name, k in sorted(b.mine_keys.items())},
    }

    def make() -> dict:
        mined = [run.mine_shard(s) for s in b.mine_keys]
        meta = stamp("dedup", digest(key), b.lexicon_version)
        if cfg.build.executor == "ray":  # hash-partitioned map/reduce; the same file
            counts = dedup_partitioned(
                mined,
                run.dedup_pairs,
                metadata=meta,
                threads=cfg.ingest.workers,
                executor="ray",
                workers=cfg.ingest.workers,
                address=cfg.build.ray_address,
                parts=max(2, min(256, 2 * len(mined))),
            )
        else:
            counts = dedup_files(mined, run.dedup_pairs, metadata=meta, threads=cfg.ingest.workers)
        return {"counts": counts}

    stage = Stage(
        "dedup",
        run.manifest("dedup"),
        key,
        [run.dedup_pairs],
        make,
        lexicon_version=b.lexicon_version,
        detail="counts",
    )
    st, m = run_stage(stage)
    b.dedup_key, b.dedup_counts = key, m.get("counts", {})
    return st


def _split(b: _Build) -> StageResult:
    """Deduplicated pairs → the benchmark splits (+ leakage check) and their datasets."""
    cfg, run = b.config, b.run
    bench = run.benchmark
    key = {
        "split_version": SPLIT_VERSION,
        "dedup": digest(b.dedup_key),
        "split": split_fields(cfg.split, cfg.build.seed),
        "needs_validation": b.hold,
    }
    meta = stamp("split", digest(key), b.lexicon_version)

    def make() -> dict:
        threads = cfg.ingest.workers
        sr = split_pairs(
            run.dedup_pairs, bench.root, cfg.split, meta, threads, cfg.build.seed, b.hold
        )
        write_datasets(bench.root, metadata=meta, threads=threads)
        return {
            "config_digest": cfg.digest("split", "lexicon"),
            "counts": sr.counts,
            "split": sr.to_dict(),
        }

    outputs = [bench.split(s).table(t) for s in SPLITS for t in TABLES]
    outputs += [bench.dataset / t for t in TABLES]
    stage = Stage(
        "split",
        bench.manifest,
        key,
        outputs,
        make,
        lexicon_version=b.lexicon_version,
        detail="split",
    )
    st, m = run_stage(stage)
    b.split_key = key
    b.result.counts = m.get("counts", {})
    b.split_info = m.get("split", {})
    return st


def _export(b: _Build) -> StageResult:
    """The benchmark → BEIR folders."""
    return run_stage(_export_stage(b.run, digest(b.split_key), b.lexicon_version))[0]


def _reports(b: _Build) -> StageResult:
    """Counts and the benchmark → the paper's tables and the build report."""
    run = b.run
    key = {
        "reports_version": REPORTS_VERSION,
        "split": digest(b.split_key),
        "lexicon_version": b.lexicon_version,
    }

    def make() -> dict:
        info = {
            "code_version": code_version(),
            "lexicon_version": b.lexicon_version,
            "mine": b.mine_totals,
            "dedup": b.dedup_counts,
            "split": b.split_info,
            "needs_validation": b.hold,
        }
        mined: Counter = Counter()
        for m in b.mine_summaries:
            mined.update(m.get("kept_by_marker", {}))
        write_reports(
            run.reports,
            run.benchmark.root,
            b.result.counts,
            b.lexicon,
            info,
            mined=dict(mined),
            provenance=stamp("reports", digest(key), b.lexicon_version),
        )
        return {}

    outputs = [run.reports / n for n in REPORT_FILES]
    stage = Stage(
        "reports", run.manifest("reports"), key, outputs, make, lexicon_version=b.lexicon_version
    )
    return run_stage(stage)[0]


PIPELINE: tuple[tuple[str, Callable[[_Build], StageResult]], ...] = (
    ("ingest", _ingest),
    ("mine", _mine),
    ("dedup", _dedup),
    ("split", _split),
    ("export", _export),
    ("reports", _reports),
)


# --------------------------------------------------------------------------- export


def _export_stage(run: RunDir, split_digest: str, lexicon_version: str) -> Stage:
    """The BEIR export of the benchmark whose split key digest is ``split_digest``."""
    out = run.export_beir
    outputs = [
        out / s / r / "corpus.jsonl" for s in SPLITS for r in ("address", "broaden", "specify")
    ]
    return Stage(
        "export",
        run.manifest("export"),
        {"export_version": EXPORT_VERSION, "split": split_digest},
        outputs,
        lambda: {"counts": export_beir(run.benchmark.root, out)},
        clean=[out],
        lexicon_version=lexicon_version,
        detail="counts",
    )


def export(config: RunConfig) -> tuple[bool, dict]:
    """``ratio export beir``: (re)write the BEIR folders from the built benchmark if out of date."""
    run = RunDir.of(config)
    m = read_json(run.benchmark.manifest)
    if m is None:
        raise RatioError(f"{run.benchmark.manifest}: no built benchmark; run `ratio build` first")
    st, _ = run_stage(_export_stage(run, m["key_digest"], m.get("lexicon_version", "")))
    return st.ran, st.detail


# --------------------------------------------------------------------------- helpers


def fingerprint_files(paths: list[Path], memo_path: Path) -> dict[str, str]:
    """Content hashes of ``paths`` (by file name), memoized on (size, mtime_ns)."""
    memo = read_json(memo_path) or {}
    out: dict[str, str] = {}
    new_memo: dict[str, dict] = {}
    for p in paths:
        st = p.stat()
        rec = memo.get(str(p))
        if not (rec and rec.get("size") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns):
            rec = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": storage.sha256(p)}
        new_memo[str(p)] = rec
        out[p.name] = rec["sha256"]
    if new_memo != memo:
        write_text_atomic(memo_path, json.dumps(new_memo, indent=1, sort_keys=True))
    return out


def _check_dated(papers_dir: Path) -> None:
    """Refuse a temporal split of a corpus in which no paper has a year or date."""
    if not any(papers_dir.glob("*.parquet")):
        return
    table = pq.read_table(papers_dir, columns=["year", "date"])
    if (
        table.num_rows
        and table["year"].null_count == table.num_rows
        and not any(table["date"].to_pylist())
    ):
        raise undated_error(f"none of the {table.num_rows:,} ingested papers")


def _sum_invalid(summaries: list[dict]) -> dict[str, dict[str, int]]:
    """Pairs each validity rule dropped, per relation, summed over the shards' summaries."""
    total: dict[str, Counter] = {}
    for m in summaries:
        for rule, by_rel in (m.get("dropped_invalid") or {}).items():
            total.setdefault(rule, Counter()).update(by_rel)
    return {rule: dict(sorted(c.items())) for rule, c in sorted(total.items())}
