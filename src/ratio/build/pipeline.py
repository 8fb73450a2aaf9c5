"""The cached ``build``: ingest → mine → dedup → split → export → reports.

Every stage records a manifest whose *key* holds what its output depends on: the
stage's logic version, the config fields it reads, the lexicon version, and the
keys (fingerprints) of its inputs. A stage whose stored key equals the current one
and whose outputs exist is skipped, so a rerun with the same config does no work,
and a lexicon edit re-mines every shard and reruns what depends on it, nothing else.

The code version (git commit) is recorded in each manifest and stamp but is not
part of the key: a commit that touches nothing in a stage must not trigger hours
of re-mining. Each stage instead carries a ``*_VERSION`` constant, bumped when its
output for the same input changes (the same convention as ``ratio.ingest``).

Mining is per sentence shard, a pure function of (shard, lexicon, min_chars), run
through ``ratio.executors.run_shards`` (process pool, or Ray), and resumable: a
shard whose ``mine/<shard>.done.json`` matches is not redone. Sentence shards are
fingerprinted by content hash (ingest rewrites them on every run), memoized on
(size, mtime) so unchanged files are not re-read.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pyarrow.parquet as pq
from tqdm.auto import tqdm

from ratio import fs, schemas
from ratio.build.dedup import dedup_files, dedup_partitioned
from ratio.build.export import export_beir
from ratio.build.mine import mine_shard
from ratio.build.reports import MINE_COUNTERS, write_reports
from ratio.build.split import SPLITS, split_pairs, undated_error, write_datasets
from ratio.build.split import split_key as split_fields
from ratio.config import RunConfig
from ratio.executors import run_shards
from ratio.io import RatioError, write_parquet_atomic, write_text_atomic
from ratio.provenance import code_version, stamp

MINE_VERSION = "2"  # 2: validity rules (ratio.build.validity)
DEDUP_VERSION = "1"
SPLIT_VERSION = "2"  # 2: needs_validation test queries held in test/pending_queries.parquet
EXPORT_VERSION = "1"
REPORTS_VERSION = "1"
STAGES = ("ingest", "mine", "dedup", "split", "export", "reports")


def digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class StageResult:
    name: str
    ran: bool = False
    seconds: float = 0.0
    detail: dict = field(default_factory=dict)


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
        return [s for s in STAGES if s in self.stages and self.stages[s].ran]


# --------------------------------------------------------------------------- manifests


def _read_manifest(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _up_to_date(manifest: Path, key: dict, outputs: list[Path]) -> dict | None:
    m = _read_manifest(manifest)
    if m and m.get("key") == key and all(p.exists() for p in outputs):
        return m
    return None


def _write_manifest(path: Path, stage: str, key: dict, lexicon_version: str, **extra) -> dict:
    m = {
        "stage": stage,
        "key": key,
        "key_digest": digest(key),
        "code_version": code_version(),
        "lexicon_version": lexicon_version,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **extra,
    }
    write_text_atomic(path, json.dumps(m, indent=1, sort_keys=True, default=str))
    return m


# --------------------------------------------------------------------------- fingerprints


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def fingerprint_files(paths: list[Path], memo_path: Path) -> dict[str, str]:
    """Content hashes of ``paths`` (by file name), memoized on (size, mtime_ns)."""
    memo = _read_manifest(memo_path) or {}
    out: dict[str, str] = {}
    new_memo: dict[str, dict] = {}
    for p in paths:
        st = p.stat()
        rec = memo.get(str(p))
        if not (rec and rec.get("size") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns):
            rec = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": _sha256_file(p)}
        new_memo[str(p)] = rec
        out[p.name] = rec["sha256"]
    if new_memo != memo:
        write_text_atomic(memo_path, json.dumps(new_memo, indent=1, sort_keys=True))
    return out


# --------------------------------------------------------------------------- mining


@lru_cache(maxsize=4)
def _matcher(lexicon_path: str, version: str):
    """The compiled matcher, loaded once per worker process and lexicon version."""
    from ratio.lexicon import MarkerMatcher, load_lexicon

    matcher = MarkerMatcher(load_lexicon(lexicon_path or None))
    if matcher.version != version:
        raise RatioError(
            f"lexicon changed during the build ({version} -> {matcher.version}); rerun"
        )
    return matcher


def mine_file(
    sentences_path: str, out_dir: str, lexicon_path: str, min_chars: int, key: dict
) -> dict:
    """Mine one sentence shard into ``<out_dir>/<shard>.parquet`` + ``.done.json`` (any executor)."""
    t0 = time.perf_counter()
    src = Path(sentences_path)
    out = Path(out_dir)
    name = src.stem
    matcher = _matcher(lexicon_path, key["lexicon_version"])
    # shards ingested before a column existed (math_after) are read without it
    names = set(pq.read_schema(src).names)
    table = pq.read_table(src, columns=[c for c in schemas.SENTENCES.names if c in names])
    stats: dict = {}
    pairs = mine_shard(table, matcher, min_chars=min_chars, stats=stats)
    meta = stamp("mine", digest(key), matcher.version, shard=name)
    write_parquet_atomic(out / f"{name}.parquet", pairs, meta)
    summary = {
        "shard": name,
        "key": key,
        "rows": pairs.num_rows,
        "sentences": stats["sentences"],
        "consecutive_pairs": stats["consecutive_pairs"],
        "fired": sum(stats["fired"].values()),
        "dropped_short_query": stats["dropped_short_query"],
        "dropped_short_gold": stats["dropped_short_gold"],
        "dropped_invalid": stats["dropped_invalid"],
        "fired_by_marker": stats["fired"],
        "kept_by_marker": stats["kept"],
        "seconds": round(time.perf_counter() - t0, 3),
        "code_version": code_version(),
    }
    write_text_atomic(out / f"{name}.done.json", json.dumps(summary, indent=1, sort_keys=True))
    return summary


# --------------------------------------------------------------------------- the build


def _lexicon_path(config: RunConfig) -> str:
    return str(config.resolve(config.lexicon.path)) if config.lexicon.path else ""


def build(config: RunConfig, progress: bool | None = None) -> BuildResult:
    """Run every stage that is out of date; see the module docstring for the cache rules."""
    from ratio.lexicon import load_lexicon

    t_start = time.perf_counter()
    if fs.is_url(config.build.out):
        raise RatioError(
            f"[build] out = {config.build.out!r}: the run directory must be a local or shared "
            "filesystem path (every Ray node must see it); corpus inputs may be s3://, gs:// "
            "URLs. Publish a finished run with ratio.fs.sync(out, url)."
        )
    out = config.resolve(config.build.out)
    result = BuildResult(out_dir=out)
    from ratio.build.split import boundaries, check_mode

    boundaries(config.split)  # a bad [split] fails before hours of mining
    check_mode(config.split)

    # ---- ingest (the lead's stage; it skips its own finished shards)
    t0 = time.perf_counter()
    sentences_dir = out / "ingest" / "sentences"
    if config.corpus.inputs:
        from ratio.ingest import ingest

        # URLs (s3://, gs://, file://) pass through; relative paths resolve against the config
        inputs = [p if "://" in p else str(config.resolve(p)) for p in config.corpus.inputs]
        r = ingest(
            inputs,
            config.corpus.format,
            out / "ingest",
            config.ingest,
            executor=config.build.executor,
            address=config.build.ray_address,
            progress=progress,
            metadata=config.resolve(config.corpus.metadata) if config.corpus.metadata else None,
        )
        result.stages["ingest"] = StageResult(
            "ingest",
            ran=r.reused_shards < r.shards,
            seconds=time.perf_counter() - t0,
            detail={"papers": r.papers, "sentences": r.sentences, "shards": r.shards},
        )
    else:
        result.stages["ingest"] = StageResult(
            "ingest", ran=False, detail={"skipped": "no [corpus] inputs"}
        )
    shards = sorted(sentences_dir.glob("*.parquet"))
    if not shards:
        raise RatioError(
            f"no sentence shards in {sentences_dir}: set [corpus] inputs in the config, or run `ratio ingest` first"
        )
    if config.split.mode == "temporal":
        _check_dated(out / "ingest" / "papers")  # an undated corpus fails before mining

    # ---- mine
    t0 = time.perf_counter()
    lexicon_path = _lexicon_path(config)
    lexicon = load_lexicon(lexicon_path or None)
    result.lexicon_version = lexicon.version
    mine_dir = out / "mine"
    mine_dir.mkdir(parents=True, exist_ok=True)
    fps = fingerprint_files(shards, mine_dir / "_fingerprints.json")
    keys: dict[str, dict] = {}
    tasks = []
    for s in shards:
        key = {
            "mine_version": MINE_VERSION,
            "lexicon_version": lexicon.version,
            "min_chars": config.ingest.min_chars,
            "input": {"shard": s.stem, "sha256": fps[s.name]},
        }
        keys[s.stem] = key
        done = _read_manifest(mine_dir / f"{s.stem}.done.json")
        if done and done.get("key") == key and (mine_dir / f"{s.stem}.parquet").exists():
            result.reused_shards.append(s.stem)
        else:
            tasks.append((str(s), str(mine_dir), lexicon_path, config.ingest.min_chars, key))
    for stale in mine_dir.glob("*.parquet"):  # shards that no longer exist upstream
        if stale.stem not in keys:
            stale.unlink()
            (mine_dir / f"{stale.stem}.done.json").unlink(missing_ok=True)
    bar = tqdm(
        total=len(tasks),
        desc="mine shards",
        unit="shard",
        disable=True if progress is False else None,
    )
    for summary in run_shards(
        mine_file,
        tasks,
        executor=config.build.executor,
        workers=config.ingest.workers,
        address=config.build.ray_address,
    ):
        result.mined_shards.append(summary["shard"])
        bar.update(1)
    bar.close()
    result.mined_shards.sort()
    mine_summaries = [_read_manifest(mine_dir / f"{s.stem}.done.json") or {} for s in shards]
    mine_totals = {k: sum(m.get(k, 0) for m in mine_summaries) for k in MINE_COUNTERS}
    mine_totals["shards"] = len(shards)
    mine_totals["dropped_invalid"] = _sum_invalid(mine_summaries)
    result.stages["mine"] = StageResult(
        "mine",
        ran=bool(tasks),
        seconds=time.perf_counter() - t0,
        detail={"mined": len(tasks), "reused": len(result.reused_shards), **mine_totals},
    )

    # ---- dedup (whole corpus)
    t0 = time.perf_counter()
    dedup_dir = out / "dedup"
    dedup_key = {
        "dedup_version": DEDUP_VERSION,
        "inputs": {name: digest(k) for name, k in sorted(keys.items())},
    }
    dedup_path = dedup_dir / "pairs.parquet"
    m = _up_to_date(dedup_dir / "manifest.json", dedup_key, [dedup_path])
    if m is None:
        (dedup_dir / "manifest.json").unlink(missing_ok=True)
        mined_files = [mine_dir / f"{s.stem}.parquet" for s in shards]
        dedup_meta = stamp("dedup", digest(dedup_key), lexicon.version)
        if config.build.executor == "ray":  # hash-partitioned map/reduce; same file as below
            stats = dedup_partitioned(
                mined_files,
                dedup_path,
                metadata=dedup_meta,
                threads=config.ingest.workers,
                executor="ray",
                workers=config.ingest.workers,
                address=config.build.ray_address,
                parts=max(2, min(256, 2 * len(shards))),
            )
        else:
            stats = dedup_files(
                mined_files, dedup_path, metadata=dedup_meta, threads=config.ingest.workers
            )
        m = _write_manifest(
            dedup_dir / "manifest.json", "dedup", dedup_key, lexicon.version, counts=stats
        )
        result.stages["dedup"] = StageResult(
            "dedup", ran=True, seconds=time.perf_counter() - t0, detail=stats
        )
    else:
        result.stages["dedup"] = StageResult("dedup", detail=m.get("counts", {}))
    dedup_stats = m.get("counts", {})

    # ---- split (+ leakage check)
    t0 = time.perf_counter()
    bench = out / "benchmark"
    split_key = {
        "split_version": SPLIT_VERSION,
        "dedup": digest(dedup_key),
        "split": split_fields(config.split, config.build.seed),
        "needs_validation": lexicon.needs_validation(),
    }
    split_outputs = [
        bench / s / f"{f}.parquet" for s in SPLITS for f in ("queries", "candidates", "qrels")
    ] + [bench / "dataset" / f for f in ("queries", "candidates", "qrels")]
    m = _up_to_date(bench / "manifest.json", split_key, split_outputs)
    if m is None:
        (bench / "manifest.json").unlink(missing_ok=True)
        sr = split_pairs(
            dedup_path,
            bench,
            config.split,
            metadata=stamp("split", digest(split_key), lexicon.version),
            threads=config.ingest.workers,
            seed=config.build.seed,
            hold=lexicon.needs_validation(),
        )
        write_datasets(
            bench,
            metadata=stamp("split", digest(split_key), lexicon.version),
            threads=config.ingest.workers,
        )
        m = _write_manifest(
            bench / "manifest.json",
            "split",
            split_key,
            lexicon.version,
            config_digest=config.digest("split", "lexicon"),
            counts=sr.counts,
            split=sr.to_dict(),
        )
        result.stages["split"] = StageResult(
            "split", ran=True, seconds=time.perf_counter() - t0, detail=sr.to_dict()
        )
    else:
        result.stages["split"] = StageResult("split", detail=m.get("split", {}))
    result.counts = m.get("counts", {})
    split_info = m.get("split", {})

    # ---- export
    t0 = time.perf_counter()
    export_dir = out / "export" / "beir"
    export_key = {"export_version": EXPORT_VERSION, "split": digest(split_key)}
    ran, counts = _export(bench, export_dir, export_key, lexicon.version)
    result.stages["export"] = StageResult(
        "export", ran=ran, seconds=time.perf_counter() - t0, detail=counts
    )

    # ---- reports
    t0 = time.perf_counter()
    reports_dir = out / "reports"
    reports_key = {
        "reports_version": REPORTS_VERSION,
        "split": digest(split_key),
        "lexicon_version": lexicon.version,
    }
    names = ["table1.md", "table2.md", "table6.md", "build.md", "markers.tsv"]
    if (
        _up_to_date(reports_dir / "manifest.json", reports_key, [reports_dir / n for n in names])
        is None
    ):
        info = {
            "code_version": code_version(),
            "lexicon_version": lexicon.version,
            "mine": mine_totals,
            "dedup": dedup_stats,
            "split": split_info,
            "needs_validation": lexicon.needs_validation(),
        }
        mined: Counter = Counter()
        for m_ in mine_summaries:
            mined.update(m_.get("kept_by_marker", {}))
        write_reports(
            reports_dir,
            bench,
            result.counts,
            lexicon,
            info,
            mined=dict(mined),
            provenance=stamp("reports", digest(reports_key), lexicon.version),
        )
        _write_manifest(reports_dir / "manifest.json", "reports", reports_key, lexicon.version)
        result.stages["reports"] = StageResult(
            "reports", ran=True, seconds=time.perf_counter() - t0
        )
    else:
        result.stages["reports"] = StageResult("reports")
    result.seconds = round(time.perf_counter() - t_start, 3)
    return result


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


def _export(bench: Path, export_dir: Path, key: dict, lexicon_version: str) -> tuple[bool, dict]:
    outputs = [
        export_dir / s / r / "corpus.jsonl"
        for s in SPLITS
        for r in ("address", "broaden", "specify")
    ]
    m = _up_to_date(export_dir / "manifest.json", key, outputs)
    if m is not None:
        return False, m.get("counts", {})
    (export_dir / "manifest.json").unlink(missing_ok=True)
    if export_dir.exists():
        shutil.rmtree(export_dir)
    counts = export_beir(bench, export_dir)
    _write_manifest(export_dir / "manifest.json", "export", key, lexicon_version, counts=counts)
    return True, counts


def export(config: RunConfig) -> tuple[bool, dict]:
    """``ratio export beir``: (re)write the BEIR folders from the built benchmark if out of date."""
    out = config.resolve(config.build.out)
    bench = out / "benchmark"
    m = _read_manifest(bench / "manifest.json")
    if m is None:
        raise RatioError(f"{bench / 'manifest.json'}: no built benchmark; run `ratio build` first")
    key = {"export_version": EXPORT_VERSION, "split": m["key_digest"]}
    return _export(bench, out / "export" / "beir", key, m.get("lexicon_version", ""))
