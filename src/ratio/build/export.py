"""BEIR export: one folder per split and relation, loadable by BEIR and MTEB.

Layout (``<build.out>/export/beir/<split>/<relation>/``)::

    corpus.jsonl        {"_id", "title", "text"}   the split's shared pool (same file for all relations)
    queries.jsonl       {"_id", "text"}            the relation's queries
    qrels/<split>.tsv   query-id <TAB> corpus-id <TAB> score   (with that header line)

The pool is shared by every relation (paper §4.2: an Address retriever must not search an
Address-only collection), so each relation folder holds the same ``corpus.jsonl``,
hard-linked when the filesystem allows. A folder loads with BEIR's
``GenericDataLoader(folder).load(split="test")``, which is also how an MTEB custom
``AbsTaskRetrieval`` fills its ``load_data`` (corpus, queries, relevant_docs).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import orjson
import pyarrow.parquet as pq

from ratio.core.io import RatioError, atomic_path
from ratio.core.layout import SPLITS, TABLES, BenchmarkDir
from ratio.core.records import RELATIONS

BATCH = 65_536


def _write_jsonl(target: Path, rows) -> int:
    n = 0
    with atomic_path(target) as tmp, open(tmp, "wb") as f:
        for row in rows:
            f.write(orjson.dumps(row))
            f.write(b"\n")
            n += 1
    return n


def _iter_parquet(path: Path, columns: list[str], relation: str | None = None):
    """Rows of ``columns`` (as dicts), only those of ``relation`` when given."""
    columns = columns + (["relation"] if relation else [])
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH, columns=columns):
        for row in batch.to_pylist():
            if relation is None or row["relation"] == relation:
                yield row


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def export_beir(
    benchmark_dir: str | os.PathLike, out_dir: str | os.PathLike
) -> dict[str, dict[str, dict[str, int]]]:
    """Write BEIR folders for each split and relation; returns ``{split: {relation: counts}}``."""
    bench, out = BenchmarkDir(Path(benchmark_dir)), Path(out_dir)
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for split in SPLITS:
        sdir = bench.split(split)
        for name in TABLES:
            if not sdir.table(name).exists():
                raise RatioError(f"{sdir.table(name)}: missing; run `ratio build` first")
        shared = out / split / "corpus.jsonl"
        n_corpus = _write_jsonl(
            shared,
            (
                {"_id": r["candidate_id"], "title": "", "text": r["text"]}
                for r in _iter_parquet(sdir.candidates, ["candidate_id", "text"])
            ),
        )
        qrels = pq.read_table(sdir.qrels, columns=["query_id", "candidate_id", "relevance"])
        q_rel = pq.read_table(sdir.queries, columns=["query_id", "relation"])
        rel_of = dict(
            zip(q_rel["query_id"].to_pylist(), q_rel["relation"].to_pylist(), strict=True)
        )
        counts[split] = {}
        for relation in RELATIONS:
            rdir = out / split / relation
            _link_or_copy(shared, rdir / "corpus.jsonl")
            n_q = _write_jsonl(
                rdir / "queries.jsonl",
                (
                    {"_id": r["query_id"], "text": r["text"]}
                    for r in _iter_parquet(sdir.queries, ["query_id", "text"], relation)
                ),
            )
            n_qrels = 0
            target = rdir / "qrels" / f"{split}.tsv"
            with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8", newline="") as f:
                w = csv.writer(f, delimiter="\t", lineterminator="\n")
                w.writerow(["query-id", "corpus-id", "score"])
                for qid, cid, score in zip(
                    qrels["query_id"].to_pylist(),
                    qrels["candidate_id"].to_pylist(),
                    qrels["relevance"].to_pylist(),
                    strict=True,
                ):
                    if rel_of.get(qid) == relation:
                        w.writerow([qid, cid, int(score)])
                        n_qrels += 1
            counts[split][relation] = {"corpus": n_corpus, "queries": n_q, "qrels": n_qrels}
        shared.unlink()
    return counts


def load_beir(folder: str | os.PathLike, split: str) -> tuple[dict, dict, dict]:
    """Read a BEIR folder exactly as ``GenericDataLoader.load(split)`` does (no beir needed)."""
    folder = Path(folder)
    corpus: dict[str, dict[str, str]] = {}
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            corpus[d.get("_id")] = {"text": d.get("text"), "title": d.get("title")}
    queries: dict[str, str] = {}
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            queries[d.get("_id")] = d.get("text")
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        for row in reader:
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries = {qid: queries[qid] for qid in qrels}
    return corpus, queries, qrels
