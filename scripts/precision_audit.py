"""Precision audit of mined (query, gold) pairs: draw a seeded sample per relation, score labels.

Why: the marker lexicons are distant supervision; the only way to know how often a mined pair
really holds its relation is to read a random sample against the paper's definitions (section 3,
Appendix I.2). ``sample`` writes a JSONL file to be labelled by hand (``label`` true/false, ``note``
on every false); ``score`` prints per-relation precision with a Wilson 95% interval and
per-marker error counts. See docs/precision-audit.md.

    .venv/bin/python scripts/precision_audit.py sample --run runs/neurips --n 50 --seed 7 --out F
    .venv/bin/python scripts/precision_audit.py score F
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

RELATIONS = ("address", "broaden", "specify")
SPLITS = ("train", "validation", "test")
FIELDS = ("query_id", "relation", "marker", "query", "gold", "paper_id", "split", "label", "note")


def wilson_interval(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for k successes out of n (better than Wald at small n / p near 1)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def load_pairs(run: Path) -> list[dict]:
    """All mined query/gold pairs of a build, across splits, in a deterministic order."""
    import pyarrow.parquet as pq

    rows: list[dict] = []
    for split in SPLITS:
        qpath = run / "benchmark" / split / "queries.parquet"
        cpath = run / "benchmark" / split / "candidates.parquet"
        if not qpath.exists():
            continue
        queries = pq.read_table(
            qpath, columns=["query_id", "text", "relation", "marker", "paper_id", "gold_id"]
        ).to_pylist()
        gold_ids = {q["gold_id"] for q in queries}
        cands = pq.read_table(cpath, columns=["candidate_id", "text"]).to_pylist()
        gold_text = {c["candidate_id"]: c["text"] for c in cands if c["candidate_id"] in gold_ids}
        for q in queries:
            rows.append(
                {
                    "query_id": q["query_id"],
                    "relation": q["relation"],
                    "marker": q["marker"],
                    "query": q["text"],
                    "gold": gold_text.get(q["gold_id"], ""),
                    "paper_id": q["paper_id"],
                    "split": split,
                    "label": None,
                    "note": "",
                }
            )
    rows.sort(key=lambda r: (r["relation"], r["query_id"]))
    return rows


def draw_sample(pairs: Sequence[dict], n: int, seed: int) -> list[dict]:
    """Up to ``n`` pairs per relation, uniformly at random without replacement, seeded."""
    by_rel: dict[str, list[dict]] = defaultdict(list)
    for p in pairs:
        by_rel[p["relation"]].append(p)
    out: list[dict] = []
    for rel in RELATIONS:
        pool = by_rel.get(rel, [])
        rng = random.Random(f"{seed}:{rel}")
        out.extend(rng.sample(pool, min(n, len(pool))))
    return out


def read_labelled(path: Path) -> list[dict]:
    """Read an audit JSONL file; a malformed line is reported with its line number."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{i}: invalid JSON: {e}") from e
            if row.get("label") not in (True, False, None):
                raise SystemExit(f"{path}:{i}: label must be true, false or null")
            rows.append(row)
    return rows


def score(rows: Iterable[dict]) -> dict[str, dict]:
    """Per-relation precision (true / labelled) with Wilson 95% CI and per-marker error counts."""
    stats: dict[str, dict] = {}
    for r in rows:
        s = stats.setdefault(
            r["relation"],
            {"true": 0, "labelled": 0, "unlabelled": 0, "errors_by_marker": Counter()},
        )
        if r.get("label") is None:
            s["unlabelled"] += 1
            continue
        s["labelled"] += 1
        if r["label"]:
            s["true"] += 1
        else:
            s["errors_by_marker"][r["marker"]] += 1
    for s in stats.values():
        n = s["labelled"]
        s["precision"] = s["true"] / n if n else float("nan")
        s["ci95"] = wilson_interval(s["true"], n)
    return stats


def format_report(stats: dict[str, dict]) -> str:
    lines = ["relation   true/labelled  precision  wilson95"]
    order = [r for r in RELATIONS if r in stats] + sorted(set(stats) - set(RELATIONS))
    for rel in order:
        s = stats[rel]
        lo, hi = s["ci95"]
        extra = f"  ({s['unlabelled']} unlabelled)" if s["unlabelled"] else ""
        lines.append(
            f"{rel:<10} {s['true']:>4}/{s['labelled']:<8} {s['precision']:>9.3f}  "
            f"[{lo:.3f}, {hi:.3f}]{extra}"
        )
    for rel in order:
        errs = stats[rel]["errors_by_marker"]
        if errs:
            lines.append(f"\nerrors by marker ({rel}):")
            for marker, c in errs.most_common():
                lines.append(f"  {c:>3}  {marker}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("sample", help="draw a seeded sample per relation into a JSONL file")
    sp.add_argument("--run", type=Path, default=Path("runs/neurips"))
    sp.add_argument("--n", type=int, default=50)
    sp.add_argument("--seed", type=int, default=7)
    sp.add_argument("--out", type=Path, required=True)
    sc = sub.add_parser("score", help="print per-relation precision of a labelled file")
    sc.add_argument("file", type=Path)
    args = ap.parse_args(argv)

    if args.cmd == "sample":
        pairs = load_pairs(args.run)
        if not pairs:
            print(f"no benchmark queries under {args.run}/benchmark", file=sys.stderr)
            return 2
        sample = draw_sample(pairs, args.n, args.seed)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            for row in sample:
                fh.write(json.dumps({k: row[k] for k in FIELDS}, ensure_ascii=False) + "\n")
        print(f"wrote {len(sample)} pairs to {args.out}: {Counter(r['relation'] for r in sample)}")
        return 0
    print(format_report(score(read_labelled(args.file))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
