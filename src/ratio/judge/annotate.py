"""A local annotation page for the human labels calibration needs (keyboard: y / n / s).

Each answer is appended to the labels CSV and flushed at once, so closing the tab loses
nothing; reopening resumes at the first pair this annotator has not labelled. The page points the
annotator to the labelling criteria, docs/annotation-guideline.md.

Tested by tests/judge/test_pipeline.py, tests/judge/test_calibration_labels.py.
"""

from __future__ import annotations

import csv
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.core.config import RunConfig
from ratio.core.io import RatioError, atomic_path
from ratio.core.layout import RunDir
from ratio.core.records import RELATIONS
from ratio.core.sampling import stratified_sample
from ratio.evaluation.overlap import texts_by_id

ITEM_FIELDS = ("item_id", "relation", "query_id", "candidate_id", "query", "marker", "candidate")
LABEL_FIELDS = (*ITEM_FIELDS, "annotator", "label", "time")
STATIC = Path(__file__).parent / "static" / "annotate.html"

DEFINITIONS = {
    "address": "S1 states a problem; S2 is an approach or insight that directly targets it.",
    "broaden": "S2 reformulates S1 at a broader scope or greater generality.",
    "specify": "S2 instantiates S1 through a concrete case, mechanism or example.",
}


def prepare_items(
    config: RunConfig,
    relations: list[str],
    n: int,
    out: Path,
    split: str = "test",
    from_silver: bool = False,
) -> Path:
    """Sample ``n`` pairs per relation (stratified by marker) into an items CSV.

    ``from_silver`` draws them from the silver set's judged sample instead of the whole
    split, so calibrating those same prompts later is answered from the judgment cache.
    """
    run = RunDir.of(config)
    bench = run.benchmark.load(split)
    pool = bench.queries
    if from_silver:
        path = run.benchmark.silver.sample
        if not path.is_file():
            raise RatioError(f"{path} not found; run `ratio judge silver` first")
        pool = pq.read_table(path)
    gold = texts_by_id(bench.candidates, "candidate_id")
    rows = []
    for rel in relations:
        if rel not in RELATIONS:
            raise RatioError(f"unknown relation {rel!r}")
        q = pool.filter(pc.equal(pool["relation"], rel))
        for r in stratified_sample(q, n, config.build.seed, by="marker").to_pylist():
            rows.append(
                {
                    "item_id": f"{rel}:{r['query_id']}",
                    "relation": rel,
                    "query_id": r["query_id"],
                    "candidate_id": r["gold_id"],
                    "query": r["text"],
                    "marker": r["marker"],
                    "candidate": gold[r["gold_id"]],
                }
            )
    with atomic_path(out) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=ITEM_FIELDS)
        w.writeheader()
        w.writerows(rows)
    return out


def read_items(path: Path, fields: tuple[str, ...] = ITEM_FIELDS) -> list[dict[str, str]]:
    """The rows of an items CSV (or any CSV that must have ``fields`` among its columns)."""
    if not path.is_file():
        raise RatioError(f"items file not found: {path}")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in fields if c not in (reader.fieldnames or [])]
        if missing:
            raise RatioError(f"{path}: missing column(s) {', '.join(missing)}")
        return list(reader)


class AnnotationStore:
    """Items, this annotator's labels so far, and the CSV they are appended to."""

    def __init__(self, items: list[dict[str, str]], labels_path: Path, annotator: str):
        self.items = items
        self.path = labels_path
        self.annotator = annotator
        self.lock = threading.Lock()
        self.done: dict[str, str] = {}
        if labels_path.is_file():
            with open(labels_path, newline="", encoding="utf-8") as fh:
                for row in csv.DictReader(fh):
                    if row.get("annotator") == annotator:
                        self.done[row["item_id"]] = row["label"]

    def state(self) -> dict:
        it = next((it for it in self.items if it["item_id"] not in self.done), None)
        return {
            "annotator": self.annotator,
            "total": len(self.items),
            "done": len(self.done),
            "item": it,
            "definition": DEFINITIONS.get(it["relation"], "") if it else "",
        }

    def label(self, item_id: str, label: str) -> dict:
        if label not in ("y", "n", "s"):
            raise ValueError("label must be y, n or s")
        item = next((it for it in self.items if it["item_id"] == item_id), None)
        if item is None:
            raise KeyError(item_id)
        with self.lock:
            new = not self.path.is_file() or self.path.stat().st_size == 0
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=LABEL_FIELDS)
                if new:
                    w.writeheader()
                w.writerow(
                    {
                        **{k: item[k] for k in ITEM_FIELDS},
                        "annotator": self.annotator,
                        "label": label,
                        "time": f"{time.time():.0f}",
                    }
                )
                fh.flush()
            self.done[item_id] = label
        return self.state()


def make_server(
    store: AnnotationStore, host: str = "127.0.0.1", port: int = 8765
) -> ThreadingHTTPServer:
    page = STATIC.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            if self.path in ("/", "/index.html"):
                self._send(200, page, "text/html; charset=utf-8")
            elif self.path == "/api/state":
                self._send(200, json.dumps(store.state()).encode())
            else:
                self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:  # noqa: N802
            if self.path != "/api/label":
                self._send(404, b'{"error": "not found"}')
                return
            try:
                data = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                state = store.label(str(data["item_id"]), str(data["label"]))
            except (ValueError, KeyError, json.JSONDecodeError) as e:
                self._send(400, json.dumps({"error": str(e)}).encode())
                return
            self._send(200, json.dumps(state).encode())

        def log_message(self, *args) -> None:  # quiet
            pass

    return ThreadingHTTPServer((host, port), Handler)


def serve(items_path: Path, labels_path: Path, annotator: str, host: str, port: int) -> None:
    store = AnnotationStore(read_items(items_path), labels_path, annotator)
    srv = make_server(store, host, port)
    print(
        f"annotate at http://{host}:{srv.server_address[1]}/  ({store.state()['done']}/{len(store.items)} done; "
        f"labels -> {labels_path}); Ctrl-C to stop"
    )
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()


__all__ = ["AnnotationStore", "make_server", "prepare_items", "read_items", "serve"]
