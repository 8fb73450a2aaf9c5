"""Mining benchmark: compiled marker matcher vs a naive marker loop, then the whole build.

    .venv/bin/python benchmarks/mine.py [SENTENCES_DIR] [--lexicon PATH] [--naive N] [--workers W]

SENTENCES_DIR holds ingested ``*.parquet`` shards (schemas.SENTENCES); default
``runs/neurips/ingest/sentences`` (run ``ratio build``/``ratio ingest`` first).

1. Matching speed on real sentences (the second sentence of every consecutive pair):
   ``MarkerMatcher.match`` vs a loop over every lexicon marker with ``str.startswith``
   (the naive algorithm; it runs on an ``--naive`` sample since it is slow). Both see
   the same sentences; their agreement is printed. Target: >= 50x.
2. ``mine_shard`` throughput (consecutive pairs scanned per second, rows mined).
3. The whole build from these sentences to the exported BEIR benchmark and reports,
   cold and then cached (the rerun should do no work), in a temporary run directory.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ratio.build import build
from ratio.build.mine import consecutive_pairs, mine_shard
from ratio.core.config import RunConfig, SplitConfig
from ratio.lexicon import MarkerMatcher, load_lexicon
from ratio.lexicon.spans import LEADING_JUNK

REPO = Path(__file__).resolve().parents[1]


def naive_match(text: str, markers: list[str]) -> str | None:
    """Longest marker ``m`` such that the sentence starts with ``m + ','`` (lowercased, spaces collapsed)."""
    t = " ".join(text.lower().split()).lstrip(LEADING_JUNK).replace("’", "'")
    best = None
    for m in markers:
        if (
            t.startswith(m)
            and t[len(m) : len(m) + 1] == ","
            and (best is None or len(m) > len(best))
        ):
            best = m
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("sentences", nargs="?", default=str(REPO / "runs/neurips/ingest/sentences"))
    ap.add_argument("--lexicon", default="", help="lexicon file or folder (default: shipped)")
    ap.add_argument("--naive", type=int, default=3000, help="sentences for the naive loop")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-build", action="store_true", help="only time matching and mining")
    args = ap.parse_args(argv)

    shards = sorted(Path(args.sentences).glob("*.parquet"))
    if not shards:
        print(
            f"no sentence shards in {args.sentences}; run `ratio build --config configs/neurips.toml`",
            file=sys.stderr,
        )
        return 2
    lexicon = load_lexicon(args.lexicon or None)
    matcher = MarkerMatcher(lexicon)
    markers = lexicon.markers()
    tables = [pq.read_table(s) for s in shards]
    n_sent = sum(t.num_rows for t in tables)
    print(
        f"{len(shards)} shards, {n_sent:,} sentences, lexicon {lexicon.version} ({len(markers):,} markers)"
    )

    # -- 1. matcher vs naive on the same real sentences
    seconds: list[str] = []
    for t in tables:
        st, _, second = consecutive_pairs(t)
        seconds += st["text"].take(pa.array(second)).to_pylist()
    t0 = time.perf_counter()
    fast = [matcher.match(s) for s in seconds]
    t_fast_all = time.perf_counter() - t0
    sample = random.Random(13).sample(range(len(seconds)), min(args.naive, len(seconds)))
    texts = [seconds[i] for i in sample]
    t0 = time.perf_counter()
    fast_s = [matcher.match(s) for s in texts]
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow_s = [naive_match(s, markers) for s in texts]
    t_slow = time.perf_counter() - t0
    agree = sum((f.marker if f else None) == s for f, s in zip(fast_s, slow_s, strict=True))
    per_fast = t_fast / len(texts)
    per_slow = t_slow / len(texts)
    print(
        f"\n[match] {len(seconds):,} pair-second sentences, {sum(f is not None for f in fast):,} open with a marker"
    )
    print(
        f"  MarkerMatcher: {len(seconds) / t_fast_all:,.0f} sentences/s over all ({t_fast_all:.2f} s)"
    )
    print(
        f"  naive loop over {len(markers):,} markers (sample of {len(texts):,}): {1 / per_slow:,.0f} sentences/s"
    )
    print(
        f"  speed-up on the same sample: {per_slow / per_fast:,.0f}x (target >= 50x); agreement {agree}/{len(texts)}"
    )

    # -- 2. mining throughput
    t0 = time.perf_counter()
    rows = pairs = 0
    for t in tables:
        stats: dict = {}
        rows += mine_shard(t, matcher, stats=stats).num_rows
        pairs += stats["consecutive_pairs"]
    dt = time.perf_counter() - t0
    print(
        f"\n[mine] {pairs:,} consecutive pairs -> {rows:,} rows in {dt:.2f} s: {pairs / dt:,.0f} pairs/s"
    )

    if args.no_build:
        return 0
    # -- 3. the whole build from ingested sentences, in a scratch run directory
    with tempfile.TemporaryDirectory(prefix="ratio-bench-") as tmp:
        sdir = Path(tmp) / "run" / "ingest" / "sentences"
        sdir.mkdir(parents=True)
        for s in shards:
            os.symlink(s.resolve(), sdir / s.name)
        cfg = RunConfig()
        cfg.build.out = str(Path(tmp) / "run")
        cfg.lexicon.path = args.lexicon
        cfg.split = SplitConfig(train_end="2023", validation_end="2024", test_end="2025")
        cfg.ingest.workers = args.workers
        t0 = time.perf_counter()
        r = build(cfg, progress=False)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        r2 = build(cfg, progress=False)
        warm = time.perf_counter() - t0
        print(
            f"\n[build] sentences -> BEIR export + reports: {cold:.2f} s cold ({', '.join(f'{k} {v.seconds:.2f}s' for k, v in r.stages.items() if v.ran)})"
        )
        print(f"  rerun: {warm:.2f} s, stages that ran: {r2.ran or 'none'}")
        for split, c in r.counts.items():
            print(f"  {split}: queries {c['queries']}, candidates {c['candidates_total']:,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
