"""Content digest of a run directory, to prove a refactor left Ratio's outputs unchanged.

Snapshot a run before and after a change, then compare; ``--compare`` prints every output
that differs and exits 1 (0 when equal):

    .venv/bin/python scripts/behaviour_snapshot.py runs/neurips --out before.json
    .venv/bin/python scripts/behaviour_snapshot.py --compare before.json after.json

What is digested, by path relative to the run directory:

- every Parquet table (ingest, mine, dedup, benchmark incl. ``benchmark/dataset``): the
  Arrow schema without its metadata, the row count, ``content`` (sha256 over the sorted
  per-row digests: the rows as a multiset) and ``order`` (sha256 over the rows in file
  order). Parquet file bytes are not compared: the provenance stamp lives in their metadata.
- the BEIR export (``*.jsonl``, ``*.tsv``) and TREC runs (``*.trec``) byte for byte; a run
  also gets ``ranking`` (query, document, rank without scores), to tell reordered results
  from last-bit score differences.
- reports and result tables (``*.md``, ``*.csv``) as text, and ``ingest/stats.json`` and
  the ``ratio evaluate`` ``results.json`` (BM25, dense, ... rows with their metrics) as JSON.

Excluded, because they legitimately change between runs of the same inputs: the Parquet
key-value metadata (``ratio.code_version``, ``ratio.config_digest``, ...); the stage
bookkeeping (``manifest.json``, ``*.done.json``, ``mine/_fingerprints.json``, ``harness.json``:
cache keys, input mtimes, code versions, finish times, durations); the JSON keys
``provenance``, ``code_version``, ``config_digest``, ``key_digest``, ``finished_at``,
``seconds``, ``ingest_seconds``; report lines carrying the code version or the provenance
footer; the folders of absolute paths (a path keeps its file name, so the same inputs in
another place compare equal); and the caches ``embeddings/``, ``indexes/``, ``models/``,
``judge/``.

It imports nothing from ``ratio`` on purpose: one digest, independent of the code under
test, judges the runs before and after (run it from any checkout). ``tests/test_behaviour.py``
pins it on a small real slice.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

SNAPSHOT_VERSION = 1
SKIP_DIRS = {"embeddings", "indexes", "models", "judge"}
BOOKKEEPING = {"manifest.json", "_fingerprints.json", "harness.json"}
VOLATILE_KEYS = {
    "provenance",
    "code_version",
    "config_digest",
    "key_digest",
    "finished_at",
    "seconds",
    "ingest_seconds",
}
VOLATILE_LINE = re.compile(r"^- code version: |^<!-- ratio\.")
ABS_DIRS = re.compile(r"(?<![\w.~])/(?:[^/\s'\"`:]+/)+")  # "/a/b/c.zst" -> "c.zst"


def table_digest(path: Path) -> dict[str, Any]:
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow.remove_metadata()
    ordered = hashlib.sha256()
    rows: list[bytes] = []
    for batch in pf.iter_batches(batch_size=65536):
        for row in zip(*(c.to_pylist() for c in batch.columns), strict=True):
            line = json.dumps(row, ensure_ascii=False, default=str).encode() + b"\n"
            ordered.update(line)
            rows.append(hashlib.sha1(line).digest())
    return {
        "schema": [f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in schema],
        "rows": len(rows),
        "content": hashlib.sha256(b"".join(sorted(rows))).hexdigest(),
        "order": ordered.hexdigest(),
    }


def normalize(doc: Any) -> Any:
    """``doc`` without volatile keys, with absolute paths cut to their file names."""
    if isinstance(doc, dict):
        return {k: normalize(v) for k, v in doc.items() if k not in VOLATILE_KEYS}
    if isinstance(doc, list):
        return [normalize(v) for v in doc]
    return ABS_DIRS.sub("", doc) if isinstance(doc, str) else doc


def text_digest(path: Path, *, report: bool) -> dict[str, Any]:
    data = path.read_bytes()
    entry: dict[str, Any] = {}
    if report:
        lines = [ln for ln in data.decode().splitlines() if not VOLATILE_LINE.match(ln)]
        data = "\n".join(ABS_DIRS.sub("", ln) for ln in lines).encode()
    elif path.suffix == ".trec":  # qid Q0 doc rank score tag
        ranking = "\n".join(" ".join(ln.split()[:4]) for ln in data.decode().splitlines())
        entry["ranking"] = hashlib.sha256(ranking.encode()).hexdigest()
    return {"lines": data.count(b"\n"), "sha256": hashlib.sha256(data).hexdigest(), **entry}


def output_digest(path: Path) -> dict[str, Any] | None:
    """The digest of one output, or None for files that are not compared."""
    if path.name in BOOKKEEPING or path.name.endswith(".done.json"):
        return None
    if path.suffix == ".parquet":
        return table_digest(path)
    if path.suffix in (".jsonl", ".tsv", ".trec"):
        return text_digest(path, report=False)
    if path.suffix in (".md", ".csv"):
        return text_digest(path, report=True)
    if path.suffix == ".json":
        return {"json": normalize(json.loads(path.read_text(encoding="utf-8")))}
    return None


def snapshot(run_dir: Path) -> dict[str, Any]:
    outputs = {}
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if not p.is_file() or rel.parts[0] in SKIP_DIRS or any(s[0] == "." for s in rel.parts):
            continue
        entry = output_digest(p)
        if entry is not None:
            outputs[rel.as_posix()] = entry
    return {"snapshot_version": SNAPSHOT_VERSION, "outputs": outputs}


def write_snapshot(snap: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(snap, indent=1, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")


def _flat(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(v, f"{prefix}/{k}", out)
    elif isinstance(value, list) and not (value and isinstance(value[0], str)):
        for i, v in enumerate(value):
            _flat(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value
    return out


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """One line per difference between two snapshots; empty when they are equal."""
    diffs = []
    oa, ob = a["outputs"], b["outputs"]
    for path in sorted(set(oa) | set(ob)):
        if path not in ob:
            diffs.append(f"{path}: only in the first snapshot")
        elif path not in oa:
            diffs.append(f"{path}: only in the second snapshot")
        elif oa[path] != ob[path]:
            fa, fb = _flat(oa[path], "", {}), _flat(ob[path], "", {})
            for k in sorted(set(fa) | set(fb)):
                if fa.get(k) != fb.get(k):
                    diffs.append(f"{path}{k}: {fa.get(k)!r} -> {fb.get(k)!r}")
            if oa[path].get("content") == ob[path].get("content") and "order" in oa[path]:
                diffs.append(f"{path}: same rows in another order")
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", nargs="?", type=Path, help="run directory (build.out)")
    ap.add_argument("--out", type=Path, help="write the snapshot here (default: stdout)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"))
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        diffs = compare(a, b)
        print("\n".join(diffs) if diffs else f"equal: {len(a['outputs'])} outputs")
        return 1 if diffs else 0
    if args.run_dir is None or not args.run_dir.is_dir():
        ap.error("give a run directory, or --compare A.json B.json")
    snap = snapshot(args.run_dir)
    if args.out:
        write_snapshot(snap, args.out)
    else:
        print(json.dumps(snap, indent=1, sort_keys=True, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
