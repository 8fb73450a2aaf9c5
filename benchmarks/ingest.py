"""Ingest throughput vs the floor (only decompressing and JSON-parsing the same shards).

    python benchmarks/ingest.py [--inputs GLOB] [--workers 2]

Both runs use the same process pool over the same shards, so the ratio isolates
what cleaning, segmentation, normalization and Parquet writing cost. Peak memory
is the largest resident set of the driver or any worker process.
"""

from __future__ import annotations

import argparse
import glob
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
DEFAULT = str(REPO.parent / "shared" / "corpora" / "neurips" / "*.jsonl.zst")


def _floor_shard(path: str) -> tuple[int, int]:
    from ratio.core.io import iter_lines

    papers = chars = 0
    for _, line in iter_lines(path):
        rec = orjson.loads(line)
        papers += 1
        chars += len(rec.get("text") or "")
    return papers, chars


def floor(paths: list[str], workers: int) -> tuple[float, int, int]:
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        res = list(pool.map(_floor_shard, paths))
    return time.perf_counter() - t0, sum(r[0] for r in res), sum(r[1] for r in res)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", default=DEFAULT)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--format", default="ratio-jsonl")
    args = ap.parse_args()
    paths = sorted(glob.glob(args.inputs))
    if not paths:
        sys.exit(f"no inputs match {args.inputs}")

    from ratio.core.config import IngestConfig
    from ratio.corpus.ingest import ingest

    t_floor, papers, chars = floor(paths, args.workers)
    out = Path(tempfile.mkdtemp(prefix="ratio-bench-ingest-"))
    try:
        t0 = time.perf_counter()
        res = ingest(paths, args.format, out, IngestConfig(workers=args.workers), progress=False)
        t_ingest = time.perf_counter() - t0
    finally:
        shutil.rmtree(out, ignore_errors=True)
    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak_child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows = [
        ("shards", f"{len(paths)}"),
        ("papers", f"{papers:,}"),
        ("characters", f"{chars:,}"),
        ("workers (cores)", f"{args.workers}"),
        ("floor: decompress + JSON parse", f"{t_floor:.1f} s"),
        ("ratio ingest (wall)", f"{t_ingest:.1f} s"),
        ("ratio to floor", f"{t_ingest / t_floor:.1f}x"),
        ("sentences kept", f"{res.sentences:,}"),
        ("sentences/s (wall)", f"{res.sentences / t_ingest:,.0f}"),
        ("sentences/s per core", f"{res.sentences / t_ingest / args.workers:,.0f}"),
        ("papers/s", f"{papers / t_ingest:,.1f}"),
        ("peak RSS driver", f"{peak_self:,.0f} MB"),
        ("peak RSS largest worker", f"{peak_child:,.0f} MB"),
    ]
    print("| measure | value |\n|---|---:|")
    for k, v in rows:
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main()
