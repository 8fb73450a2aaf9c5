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
- a TREC run named by ``--float-runs`` (a regular expression over its path: the runs of
  dense and fused systems, whose scores come from float arithmetic that differs between CPUs)
  is kept whole instead, as ``{query: ["document score", ...]}``, and compared with a
  tolerance (:func:`compare_runs`): every score within ``FLOAT_TOLERANCE`` of the pin, the
  same documents (one may trade places with another only at the cut, where both score within
  the tolerance of the last one), and the order the pinned scores give, except among
  documents whose pinned scores are within the tolerance of each other.
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

SNAPSHOT_VERSION = 2
# How far a float run's score may move between CPUs (absolute). Measured on the pinned slice
# with the static model distilled under AVX2-only arithmetic on an AVX-512 Xeon (which
# reproduces a ranking the AMD EPYC produced, docs/architecture.md "Portable outputs"): cosines
# moved by at most 8.8e-5, and RRF scores by 2.3e-4, one rank of a component near-tie
# (1/61 - 1/62 = 2.6e-4 at the top). 5e-4 leaves a margin for both; a changed model moves
# cosines by far more, and a document that moves two ranks at the top of a component, is
# dropped, added or reordered beyond it fails.
FLOAT_TOLERANCE = 5e-4
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


def run_entries(path: Path) -> dict[str, list[str]]:
    """A TREC run as ``{query: ["document score", ...]}`` in file (rank) order (one line of
    the pin per result)."""
    run: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _q0, doc, _rank, score, *_ = line.split()
        run.setdefault(q, []).append(f"{doc} {score}")
    return run


def _ranked(entries: list[str]) -> list[tuple[str, float]]:
    return [(doc, float(score)) for doc, score in (e.split() for e in entries)]


def output_digest(path: Path, *, float_run: bool = False) -> dict[str, Any] | None:
    """The digest of one output, or None for files that are not compared."""
    if path.name in BOOKKEEPING or path.name.endswith(".done.json"):
        return None
    if float_run and path.suffix == ".trec":
        return {"float_run": run_entries(path)}
    if path.suffix == ".parquet":
        return table_digest(path)
    if path.suffix in (".jsonl", ".tsv", ".trec"):
        return text_digest(path, report=False)
    if path.suffix in (".md", ".csv"):
        return text_digest(path, report=True)
    if path.suffix == ".json":
        return {"json": normalize(json.loads(path.read_text(encoding="utf-8")))}
    return None


def snapshot(run_dir: Path, float_runs: str | None = None) -> dict[str, Any]:
    """Every output's digest; TREC runs whose path matches ``float_runs`` are kept whole."""
    outputs = {}
    floats = re.compile(float_runs) if float_runs else None
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if not p.is_file() or rel.parts[0] in SKIP_DIRS or any(s[0] == "." for s in rel.parts):
            continue
        entry = output_digest(p, float_run=bool(floats and floats.search(rel.as_posix())))
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


# A fused (RRF) run's document can enter or leave one component's list at that component's
# cut (a near-tie there, in float noise), which adds or removes one RRF term of a rank near
# the cut: 1 / (RRF_K + r) for r within CUT_RANKS of HYBRID_DEPTH (ratio's RRF_K = 60 and
# IndexStore.HYBRID_DEPTH = 100). Measured on the AMD EPYC against the Xeon pin: one document
# of one Specify query (fused rank 43) left the list this way.
RRF_K, HYBRID_DEPTH, CUT_RANKS = 60, 100, 10
CUT_STEP = (1 / (RRF_K + HYBRID_DEPTH), 1 / (RRF_K + HYBRID_DEPTH - CUT_RANKS))


def _cut_step(delta: float, tol: float) -> bool:
    """Whether a score change is one RRF term of a rank at a component's cut (within tol)."""
    return CUT_STEP[0] - tol <= abs(delta) <= CUT_STEP[1] + tol


def compare_runs(
    a: dict[str, list[str]],
    b: dict[str, list[str]],
    tol: float = FLOAT_TOLERANCE,
    *,
    fused: bool = False,
) -> list[str]:
    """Where run ``b`` departs from the pinned run ``a`` by more than float noise of ``tol``
    on each score (see the module docstring); empty when it does not. A ``fused`` run may also
    gain or lose one component's term at that component's cut (:data:`CUT_STEP`)."""
    diffs = []
    for q in sorted(set(a) | set(b)):
        if q not in a or q not in b:
            diffs.append(f"query {q}: only in the {'first' if q in a else 'second'} run")
            continue
        ra, rb = _ranked(a[q]), _ranked(b[q])
        sa, sb = dict(ra), dict(rb)
        if len(sa) != len(sb):
            diffs.append(f"query {q}: {len(sa)} -> {len(sb)} results")
        stepped = set()  # documents that gained or lost a component's cut term
        for doc in sorted(set(sa) & set(sb)):
            delta = sb[doc] - sa[doc]
            if fused and abs(delta) > tol and _cut_step(delta, tol):
                stepped.add(doc)
            elif abs(delta) > tol:
                diffs.append(f"query {q}: {doc} scored {sa[doc]!r} -> {sb[doc]!r}")
        for mine, other, verb in ((sa, sb, "dropped"), (sb, sa, "added")):
            cut = min(mine.values(), default=0.0)
            for doc in sorted(set(mine) - set(other)):
                # only a near-tie at the cut may trade places; in a fused run also a document
                # that a lost (or gained) cut term takes below (or above) the other run's cut
                other_cut = min(other.values(), default=0.0)
                at_cut = mine[doc] <= cut + tol
                if fused and mine[doc] - CUT_STEP[0] <= other_cut + tol:
                    at_cut = True
                if not at_cut:
                    diffs.append(f"query {q}: {doc} ({mine[doc]!r}) {verb}")
        shared = [doc for doc, _ in rb if doc in sa and doc not in stepped]
        for above, below in zip(shared, shared[1:], strict=False):
            if sa[above] < sa[below] - tol:
                diffs.append(f"query {q}: {above} now ranks above {below}")
    return diffs


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """One line per difference between two snapshots; empty when they are equal."""
    diffs = []
    oa, ob = a["outputs"], b["outputs"]
    for path in sorted(set(oa) | set(ob)):
        if path not in ob:
            diffs.append(f"{path}: only in the first snapshot")
        elif path not in oa:
            diffs.append(f"{path}: only in the second snapshot")
        elif "float_run" in oa[path] and "float_run" in ob[path]:
            runs = (oa[path]["float_run"], ob[path]["float_run"])
            fused = "rrf" in Path(path).name
            diffs += [f"{path}: {d}" for d in compare_runs(*runs, fused=fused)]
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
    ap.add_argument(
        "--float-runs",
        metavar="REGEX",
        help="TREC runs (by path) compared with a tolerance, e.g. 'runs/(static|all-MiniLM)'",
    )
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"))
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        diffs = compare(a, b)
        print("\n".join(diffs) if diffs else f"equal: {len(a['outputs'])} outputs")
        return 1 if diffs else 0
    if args.run_dir is None or not args.run_dir.is_dir():
        ap.error("give a run directory, or --compare A.json B.json")
    snap = snapshot(args.run_dir, args.float_runs)
    if args.out:
        write_snapshot(snap, args.out)
    else:
        print(json.dumps(snap, indent=1, sort_keys=True, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
