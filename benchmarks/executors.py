"""Throughput of the whole ``ratio build`` under the local process pool vs Ray, same workers.

    python benchmarks/executors.py [--shards 4] [--papers 0] [--workers 2] [--json out.json]

Builds the first ``--shards`` shards of the shared NeurIPS corpus (``--papers N`` keeps
only the first N papers of each, for a quick run) once per executor into a temporary
directory, and reports wall time per stage, sentences/s and mined pairs/s. Ray is
started before the clock runs (its start-up is reported on its own), as it would be
on a standing cluster. The two builds must produce byte-identical Parquet; the script
checks that and says so.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = str(REPO.parent / "shared" / "corpora" / "neurips" / "*.jsonl.zst")


def _slice(paths: list[str], papers: int, into: Path) -> list[str]:
    """Copies of ``paths`` holding only their first ``papers`` lines (all when 0)."""
    if papers <= 0:
        return paths
    from ratio.corpus.slices import first_lines, write_zst

    return [str(write_zst(into / Path(p).name, first_lines(p, papers))) for p in paths]


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.parquet"))
        if not p.name.startswith(".")
    }


def _cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (the local pool)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run(executor: str, inputs: list[str], workers: int, out: Path) -> dict:
    from ratio.build import build
    from ratio.core.config import load_config

    cfg = out.parent / f"{executor}.toml"
    quoted = ", ".join(json.dumps(i) for i in inputs)
    cfg.write_text(
        f"[corpus]\ninputs = [{quoted}]\n[ingest]\nworkers = {workers}\n"
        f'[split]\ntrain_end = "2023"\nvalidation_end = "2024"\ntest_end = "2025"\n'
        f'[build]\nout = "{out}"\nexecutor = "{executor}"\n'
    )
    t0 = time.perf_counter()
    cpu0 = _cpu_seconds()
    res = build(load_config(cfg), progress=False)
    wall = time.perf_counter() - t0
    cpu = _cpu_seconds() - cpu0
    mine = res.stages["mine"].detail
    dedup = res.stages["dedup"].detail
    return {
        "executor": executor,
        "wall_s": round(wall, 2),
        # driver + process-pool workers; Ray's workers are not our children (None)
        "cpu_s": round(cpu, 2) if executor == "local" else None,
        "stages_s": {k: round(v.seconds, 2) for k, v in res.stages.items()},
        "papers": res.stages["ingest"].detail.get("papers", 0),
        "sentences": mine.get("sentences", 0),
        "consecutive_pairs": mine.get("consecutive_pairs", 0),
        "mined_rows": mine.get("rows", 0),
        "pairs_after_dedup": dedup.get("pairs", 0) + dedup.get("distractors", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", default=DEFAULT)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--papers", type=int, default=0, help="first N papers per shard (0: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executors", default="local,ray")
    ap.add_argument("--json", default="", help="also write the results here")
    args = ap.parse_args()
    paths = sorted(glob.glob(args.inputs))
    # spread the shards over the years (2023, 2024, 2025 ...) so every split has rows
    n = min(args.shards, len(paths))
    paths = [paths[round(i * (len(paths) - 1) / max(1, n - 1))] for i in range(n)]
    if not paths:
        sys.exit(f"no inputs match {args.inputs}")
    work = Path(tempfile.mkdtemp(prefix="ratio-bench-exec-"))
    results = []
    try:
        inputs = _slice(paths, args.papers, work)
        ray_start = None
        for ex in args.executors.split(","):
            if ex == "ray":
                from ratio.runner.executors import ray_init

                t0 = time.perf_counter()
                ray_init(args.workers)
                ray_start = round(time.perf_counter() - t0, 2)
            r = run(ex, inputs, args.workers, work / f"out-{ex}")
            r["hashes"] = _hashes(work / f"out-{ex}")
            results.append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    identical = len({json.dumps(r.pop("hashes"), sort_keys=True) for r in results}) == 1
    print(f"shards: {', '.join(Path(p).name for p in paths)}; papers/shard: {args.papers or 'all'}")
    print(f"workers: {args.workers}; ray start-up (not in wall): {ray_start} s\n")
    stages = list(results[0]["stages_s"])
    print(
        "| executor | wall s | "
        + " | ".join(f"{s} s" for s in stages)
        + " | papers | sentences | sentences/s | mined pairs | pairs/s |"
    )
    print("|---" * (7 + len(stages)) + "|")
    for r in results:
        w = r["wall_s"]
        print(
            f"| {r['executor']} | {w:.1f} | "
            + " | ".join(f"{r['stages_s'][s]:.1f}" for s in stages)
            + f" | {r['papers']:,} | {r['sentences']:,} | {r['sentences'] / w:,.0f}"
            f" | {r['mined_rows']:,} | {r['mined_rows'] / w:,.0f} |"
        )
    for r in results:
        if r["cpu_s"]:
            print(
                f"\n{r['executor']}: {r['cpu_s']:.1f} CPU-s -> per core: "
                f"{r['papers'] / r['cpu_s']:.2f} papers/s, {r['sentences'] / r['cpu_s']:,.0f} "
                f"sentences/s, {r['consecutive_pairs'] / r['cpu_s']:,.0f} consecutive pairs/s"
            )
    print(f"\nbyte-identical Parquet outputs across executors: {identical}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "args": vars(args),
                    "ray_start_s": ray_start,
                    "identical": identical,
                    "results": results,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
