"""The search engine behind the HTTP API, the web page, ``ratio.search`` and the MCP tools.

It answers "given this statement, which sentences suggest the next ideation
move?" over a candidate pool: a built benchmark's pool(s) or any ingested
sentence collection. Everything a result shows (paper title, year, venue,
section heading, the sentences before and after it) is joined once into a
*pool file* (Arrow IPC, memory-mapped), so a request never scans Parquet: it
ranks with a retriever, maps candidate ids to rows with a binary search over a
memory-mapped sorted id array, and reads those rows.

Retriever indexes are saved next to the pool file and reloaded memory-mapped,
so a server restart takes seconds. Each move uses its trained model when one
exists (see :func:`find_trained`), else the configured baseline; BM25, dense and
hybrid can be chosen per request.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.config import RunConfig, SystemConfig, load_config
from ratio.io import RatioError, atomic_path, write_text_atomic
from ratio.records import RELATIONS
from ratio.training.data import out_dir
from ratio.training.train import PRIMARY, TRAINING_META

MOVES: tuple[str, ...] = RELATIONS
MAX_K = 100
MAX_QUERY_CHARS = 10_000
POOL_VERSION = "2"  # bump when the pool file's columns or their derivation change
SOURCES = ("benchmark", "sentences")
PREFIXES = ("none", "generic", "recommended")
DEFAULT_DENSE_MODEL = "all-MiniLM-L6-v2"
AUTO = "auto"
# What counts as blank around a query: ASCII whitespace only, so the rule is the same in
# Python, in the API's JSON Schema (QUERY_PATTERN) and in any client validating against it.
BLANK = " \t\n\r\f\v"
QUERY_PATTERN = r"[^ \t\n\r\f\v]"

POOL_SCHEMA = pa.schema(
    [
        ("candidate_id", pa.string()),
        ("text", pa.string()),
        ("paper_id", pa.string()),
        ("title", pa.string()),
        ("year", pa.int16()),
        ("venue", pa.string()),
        ("section", pa.string()),
        ("section_category", pa.string()),
        ("origin", pa.string()),
        ("marker", pa.string()),
        ("paragraph_idx", pa.int32()),
        ("sentence_idx", pa.int32()),
        ("prev", pa.string()),
        ("next", pa.string()),
    ]
)


class ServeError(RatioError):
    """A request or setup the engine cannot serve; ``status`` is the HTTP code to answer with."""

    status = 400


class UnknownRetrieverError(ServeError):
    status = 422


# ---------------------------------------------------------------- the pool


def _candidate_id(match: str) -> str:
    return "c" + hashlib.sha1(match.encode()).hexdigest()[:16]


def _signature(paths: Iterable[Path]) -> list[list]:
    """What the pool was built from: each input's path, size and mtime (cheap to re-check)."""
    out = []
    for p in sorted(set(paths)):
        st = p.stat()
        out.append([str(p.resolve()), st.st_size, st.st_mtime_ns])
    return out


def _read_many(paths: Sequence[Path], columns: list[str] | None = None) -> pa.Table | None:
    tables = [pq.read_table(p, columns=columns) for p in paths]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


def _dedup_first(table: pa.Table, key: str) -> pa.Table:
    """Keep the first row of each ``key`` value (a candidate may sit in several split pools)."""
    idx = pa.array(np.arange(table.num_rows))
    firsts = (
        pa.table({"k": table.column(key), "i": idx})
        .group_by("k", use_threads=False)
        .aggregate([("i", "min")])
        .column("i_min")
    )
    return table.take(pa.array(np.sort(firsts.to_numpy()), pa.int64()))


def _context(keys: pa.Table, sentences: pa.Table) -> pa.Table:
    """For each (paper_id, paragraph_idx, sentence_idx, _row): section, previous and next text.

    Three hash joins: the sentence itself (for its heading), the one whose
    ``sentence_idx`` is one less, and the one whose is one more, in the same
    paragraph. A neighbour the ingest filtered out has no row, so it stays null.
    """
    k3 = ["paper_id", "paragraph_idx", "sentence_idx"]
    s = sentences.select(k3 + ["section", "text"])
    one = pa.scalar(1, pa.int32())
    cur = keys.join(s.select(k3 + ["section"]), k3, join_type="left outer")
    prev = (
        s.select(["paper_id", "paragraph_idx", "text"])
        .append_column("sentence_idx", pc.add(s.column("sentence_idx"), one))
        .rename_columns(["paper_id", "paragraph_idx", "prev", "sentence_idx"])
    )
    nxt = (
        s.select(["paper_id", "paragraph_idx", "text"])
        .append_column("sentence_idx", pc.subtract(s.column("sentence_idx"), one))
        .rename_columns(["paper_id", "paragraph_idx", "next", "sentence_idx"])
    )
    out = cur.join(prev, k3, join_type="left outer").join(nxt, k3, join_type="left outer")
    out = _dedup_first(out, "_row")  # a repeated (paper, para, sent) key must not add rows
    return out.sort_by("_row")


def build_pool_table(
    candidates: pa.Table, papers: pa.Table | None, sentences: pa.Table | None
) -> pa.Table:
    """Join candidates with paper metadata and sentence context into the POOL_SCHEMA table."""
    n = candidates.num_rows
    cand = candidates.append_column("_row", pa.array(np.arange(n, dtype=np.int64)))
    for name, typ in (("origin", pa.string()), ("marker", pa.string())):
        if name not in cand.column_names:
            cand = cand.append_column(name, pa.nulls(n, typ))
    title = pa.nulls(n, pa.string())
    venue = pa.nulls(n, pa.string())
    year = cand.column("year").cast(pa.int16())
    if papers is not None and papers.num_rows:
        p = _dedup_first(papers.select(["paper_id", "title", "year", "venue"]), "paper_id")
        p = p.rename_columns(["paper_id", "title", "p_year", "venue"])
        j = cand.select(["paper_id", "_row"]).join(p, "paper_id", join_type="left outer")
        j = j.sort_by("_row")
        title, venue = j.column("title"), j.column("venue")
        year = pc.coalesce(year, j.column("p_year").cast(pa.int16()))
    section = prev = nxt = pa.nulls(n, pa.string())
    if sentences is not None and sentences.num_rows:
        keys = cand.select(["paper_id", "paragraph_idx", "sentence_idx", "_row"])
        ctx = _context(keys, sentences)
        section, prev, nxt = ctx.column("section"), ctx.column("prev"), ctx.column("next")
        if venue.null_count == n and "venue" in sentences.column_names:
            v = _dedup_first(sentences.select(["paper_id", "venue"]), "paper_id")
            j = cand.select(["paper_id", "_row"]).join(v, "paper_id", join_type="left outer")
            venue = j.sort_by("_row").column("venue")
    cols = {
        "candidate_id": cand.column("candidate_id"),
        "text": cand.column("text"),
        "paper_id": cand.column("paper_id"),
        "title": title,
        "year": year,
        "venue": venue,
        "section": section,
        "section_category": cand.column("section_category"),
        "origin": cand.column("origin"),
        "marker": cand.column("marker"),
        "paragraph_idx": cand.column("paragraph_idx").cast(pa.int32()),
        "sentence_idx": cand.column("sentence_idx").cast(pa.int32()),
        "prev": prev,
        "next": nxt,
    }
    return pa.table(
        {f.name: pa.chunked_array(_chunks(cols[f.name]), f.type) for f in POOL_SCHEMA},
        schema=POOL_SCHEMA,
    )


def _chunks(col: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return col.chunks if isinstance(col, pa.ChunkedArray) else [col]


def sentences_as_candidates(sentences: pa.Table) -> pa.Table:
    """An ingested sentence collection as a CANDIDATES-shaped table (ids as the benchmark's)."""
    ids = pa.array([_candidate_id(m) for m in sentences.column("match").to_pylist()])
    t = pa.table(
        {
            "candidate_id": ids,
            "text": sentences.column("text"),
            "paper_id": sentences.column("paper_id"),
            "year": sentences.column("year"),
            "section_category": sentences.column("section_category"),
            "paragraph_idx": sentences.column("paragraph_idx"),
            "sentence_idx": sentences.column("sentence_idx"),
        }
    )
    return _dedup_first(t, "candidate_id")


@dataclass
class PoolSpec:
    """Where a pool comes from; ``key`` names its folder under the index root."""

    key: str
    candidates: list[Path]  # CANDIDATES parquet files (empty for source = sentences)
    papers: list[Path]
    sentences: list[Path]
    index_dir: Path


def pool_spec(
    cfg: RunConfig,
    *,
    source: str = "benchmark",
    split: str = "",
    candidates: str | os.PathLike | None = None,
    index_dir: str | os.PathLike | None = None,
) -> PoolSpec:
    """Resolve which files make the pool, from a config and the serve options."""
    if candidates:
        path = Path(candidates)
        if not path.is_file():
            raise ServeError(f"candidate pool not found: {path}")
        # <out>/benchmark/<split>/candidates.parquet -> <out>; else the file's folder
        out = path.parents[2] if path.parent.parent.name == "benchmark" else path.parent
        digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
        key = f"pool-{path.parent.name}-{digest}"
        cand_files = [path]
    else:
        out = cfg.resolve(cfg.build.out)
        if source not in SOURCES:
            raise ServeError(f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")
        if source == "benchmark":
            bench = out / "benchmark"
            if split:
                cand_files = [bench / split / "candidates.parquet"]
                if not cand_files[0].is_file():
                    have = sorted(p.parent.name for p in bench.glob("*/candidates.parquet"))
                    raise ServeError(
                        f"no candidate pool for split {split!r} at {cand_files[0]}; "
                        f"splits with a pool: {', '.join(have) or 'none (run `ratio build`)'}"
                    )
            else:
                cand_files = sorted(bench.glob("*/candidates.parquet"))
                if not cand_files:
                    raise ServeError(
                        f"no candidate pools under {bench} (run `ratio build`, or serve an "
                        f"ingested collection with --source sentences)"
                    )
            key = f"benchmark-{split or 'all'}"
        else:
            cand_files = []
            key = "sentences"
    sent_files = sorted((out / "ingest" / "sentences").glob("*.parquet"))
    if source == "sentences" and not candidates and not sent_files:
        raise ServeError(
            f"no sentence shards under {out / 'ingest' / 'sentences'} (run `ratio ingest`)"
        )
    paper_files = sorted((out / "ingest" / "papers").glob("*.parquet"))
    idx = Path(index_dir) if index_dir else out / "serve" / key
    return PoolSpec(key, cand_files, paper_files, sent_files, idx)


class Pool:
    """The memory-mapped pool file plus a sorted-id index for id -> row lookups."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        meta = json.loads((directory / "pool.json").read_text())
        self.fingerprint: str = meta["fingerprint"]
        self.meta = meta
        self._source = pa.memory_map(str(directory / "pool.arrow"), "r")
        self.table: pa.Table = pa.ipc.open_file(self._source).read_all()
        self.sorted_ids = np.load(directory / "sorted_ids.npy", mmap_mode="r")
        self.order = np.load(directory / "order.npy", mmap_mode="r")
        self.years = np.load(directory / "years.npy", mmap_mode="r")  # -1 where unknown
        self.venues: list[str] = meta.get("venues", [])
        self.venue_codes = np.load(directory / "venue_codes.npy", mmap_mode="r")  # -1: none
        self.paper_codes = np.load(directory / "paper_codes.npy", mmap_mode="r")
        self._paper_ids = np.load(directory / "paper_ids.npy", mmap_mode="r")
        self._paper_code: dict[str, int] | None = None
        self.n = self.table.num_rows

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """Row numbers of candidate ids (-1 for an id not in the pool)."""
        if not len(ids) or not self.n:
            return np.full(len(ids), -1, dtype=np.int64)
        q = np.asarray(ids, dtype=self.sorted_ids.dtype)
        pos = np.searchsorted(self.sorted_ids, q)
        pos = np.minimum(pos, self.n - 1)
        found = self.sorted_ids[pos] == q
        return np.where(found, self.order[pos], -1).astype(np.int64)

    def column(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)

    def ids_texts(self) -> tuple[list[str], list[str]]:
        return self.column("candidate_id").to_pylist(), self.column("text").to_pylist()

    def rows(self, rows: Sequence[int]) -> list[dict]:
        # one zero-copy slice per row: ``take`` on the memory-mapped, chunked table
        # would first concatenate whole columns (tens of ms on a 100k pool)
        return [self.table.slice(int(r), 1).to_pylist()[0] for r in rows]

    def paper_code(self, paper_id: str) -> int:
        """The integer code of a paper id (-1 when the pool has no sentence of it)."""
        if self._paper_code is None:
            self._paper_code = {str(p): i for i, p in enumerate(self._paper_ids)}
        return self._paper_code.get(paper_id, -1)

    def venue_code(self, venue: str) -> int:
        v = venue.strip().lower()
        return next((i for i, x in enumerate(self.venues) if x.lower() == v), -1)


def prepare_pool(spec: PoolSpec, *, progress: bool = False) -> Pool:
    """Load the pool file for ``spec``, (re)building it first when its inputs changed."""
    from ratio.retrieval.base import pool_fingerprint

    d = spec.index_dir
    sig = {
        "version": POOL_VERSION,
        "candidates": _signature(spec.candidates),
        "papers": _signature(spec.papers),
        "sentences": _signature(spec.sentences),
    }
    meta_path = d / "pool.json"
    if meta_path.is_file() and (d / "pool.arrow").is_file():
        try:
            old = json.loads(meta_path.read_text())
        except ValueError:
            old = {}
        if old.get("inputs") == sig:
            return Pool(d)
    t0 = time.perf_counter()
    cols = ["paper_id", "year", "venue", "section", "section_category", "paragraph_idx"]
    cols += ["sentence_idx", "text"] + ([] if spec.candidates else ["match"])
    sentences = _read_many(spec.sentences, cols)
    if spec.candidates:
        cands = _dedup_first(_read_many(spec.candidates), "candidate_id")
        if sentences is not None:  # context only for papers in the pool
            papers_in_pool = pc.unique(cands.column("paper_id"))
            sentences = sentences.filter(pc.is_in(sentences.column("paper_id"), papers_in_pool))
    else:
        cands = sentences_as_candidates(sentences)
    papers = _read_many(spec.papers, ["paper_id", "title", "year", "venue"])
    table = build_pool_table(cands, papers, sentences)
    ids = table.column("candidate_id").to_pylist()
    if not ids:
        raise ServeError(f"the candidate pool {spec.key!r} is empty")
    fp = pool_fingerprint(ids, table.column("text").to_pylist())
    id_arr = np.asarray(ids, dtype=str)
    order = np.argsort(id_arr, kind="stable")
    years = table.column("year").fill_null(-1).to_numpy().astype(np.int32)
    venues = sorted(v for v in pc.unique(table.column("venue")).to_pylist() if v)
    venue_codes = pc.index_in(table.column("venue"), pa.array(venues, pa.string()))
    venue_codes = venue_codes.fill_null(-1).to_numpy().astype(np.int16)
    paper_ids = pc.unique(table.column("paper_id").fill_null(""))
    paper_codes = pc.index_in(table.column("paper_id").fill_null(""), paper_ids)
    paper_codes = paper_codes.to_numpy().astype(np.int32)
    paper_ids = np.asarray(paper_ids.to_pylist(), dtype=str)
    d.mkdir(parents=True, exist_ok=True)
    with atomic_path(d / "pool.arrow") as tmp:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table, max_chunksize=1 << 16)
    arrays = {
        "sorted_ids": id_arr[order],
        "order": order,
        "years": years,
        "venue_codes": venue_codes,
        "paper_codes": paper_codes,
        "paper_ids": paper_ids,
    }
    for name, arr in arrays.items():
        with atomic_path(d / f"{name}.npy") as tmp:
            with open(tmp, "wb") as fh:
                np.save(fh, arr)
    meta = {
        "inputs": sig,
        "fingerprint": fp,
        "n": len(ids),
        "venues": venues,
        "built_s": round(time.perf_counter() - t0, 3),
        "with_context": sentences is not None,
    }
    write_text_atomic(meta_path, json.dumps(meta, indent=1))
    if progress:
        print(
            f"pool {spec.key}: {len(ids):,} candidates built in {meta['built_s']}s -> {d}",
            file=sys.stderr,
        )
    return Pool(d)


# ---------------------------------------------------------------- retrievers


@dataclass
class _Slot:
    """A loaded retriever and the lock that serializes its searches."""

    key: str
    retriever: Any
    lock: threading.Lock
    load_s: float


@dataclass
class Plan:
    """How a request is answered: one saved index, or a fusion of other plans (hybrid)."""

    name: str  # what responses report as ``retriever``
    key: str  # index key; per-move keys end in ``@<move>``
    system: SystemConfig | None = None
    parts: list[Plan] = dataclasses.field(default_factory=list)
    fusion: str = "rrf"

    @property
    def move_specific(self) -> bool:
        return self.key.startswith("trained@") or any(p.move_specific for p in self.parts)

    def leaves(self) -> list[Plan]:
        return [self] if not self.parts else [x for p in self.parts for x in p.leaves()]


def _no_query_cache(r: Any) -> None:
    """User queries are not worth writing to the embedding cache."""
    if hasattr(r, "cache_queries"):
        r.cache_queries = False


_FAISS_THREADS = int(os.environ.get("RATIO_SERVE_FAISS_THREADS", "1"))


def _single_query_threads() -> None:
    """One FAISS thread per search. A server ranks one query per request; OpenMP's team of
    spinning threads only adds latency then (6x on a busy 2-core machine), and requests
    already run in parallel on the threadpool. ``RATIO_SERVE_FAISS_THREADS`` overrides."""
    faiss = sys.modules.get("faiss")
    if faiss is not None:
        faiss.omp_set_num_threads(_FAISS_THREADS)


def _slug(s: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in s)
    return keep.strip("._")[:60] or "system"


@dataclass
class TrainedModel:
    """A move's fine-tuned model as the training stage left it, with its validation record."""

    path: Path
    prefix: str = "none"  # prefix setup it was trained with (none | generic | recommended)
    base_model: str = ""  # the untuned model it started from
    val: float | None = None  # validation MRR@10 of the tuned model
    baseline_val: float | None = None  # the untuned base model, same validation set
    bm25_val: float | None = None  # BM25-unigram, same validation set

    @property
    def worse_than_baseline(self) -> bool:
        """It lost to the untuned model or to BM25 on validation: ``auto`` will not serve it."""
        if self.val is None:
            return False  # no selection record: trust the training stage's choice
        return any(b is not None and self.val < b for b in (self.baseline_val, self.bm25_val))

    @property
    def auto_choice(self) -> str:
        """The best of tuned, untuned base and BM25 on validation MRR@10 (ties: the simpler)."""
        scores = {"bm25": self.bm25_val, "baseline": self.baseline_val, "trained": self.val}
        known = {k: v for k, v in scores.items() if v is not None}
        if "trained" not in known:
            return "trained"
        return max(known, key=lambda k: (known[k], -list(scores).index(k)))


def find_trained(cfg: RunConfig) -> dict[str, TrainedModel]:
    """Each move's trained model: ``<train.out>/<move>/best`` (the training stage's layout,
    ``<build.out>/models/<base>-<prefix>`` by default), else ``<build.out>/models/<move>/best``.

    The prefix and base model come from the model's training record (``TRAINING_META``), the
    validation scores from ``selection.json`` next to it.
    """
    roots = [out_dir(cfg), cfg.resolve(cfg.build.out) / "models"]
    found: dict[str, TrainedModel] = {}
    for move in MOVES:
        for root in roots:
            d = root / move / "best"
            if not ((d / "modules.json").is_file() or (d / "config.json").is_file()):
                continue
            t = TrainedModel(d, cfg.train.prefix)
            try:
                sig = json.loads((d / TRAINING_META).read_text()).get("signature", {})
                t.prefix = sig.get("prefix", t.prefix)
                t.base_model = sig.get("base_model", "")
            except (OSError, ValueError):
                pass
            try:
                sel = json.loads((root / move / "selection.json").read_text())
                trial = next(x for x in sel["trials"] if x["trial"] == sel["selected_trial"])
                t.val, t.baseline_val = trial[f"val_{PRIMARY}"], trial[f"baseline_val_{PRIMARY}"]
                t.bm25_val = sel.get(f"bm25_val_{PRIMARY}")
            except (OSError, ValueError, KeyError, StopIteration, TypeError):
                pass
            t.prefix = t.prefix if t.prefix in PREFIXES else "none"
            found[move] = t
            break
    return found


class SearchEngine:
    """Ranked, filtered, context-enriched search over one candidate pool, per ideation move."""

    HYBRID_DEPTH = 100  # each component ranks this many before fusion

    def __init__(
        self,
        pool: Pool,
        *,
        systems: dict[str, SystemConfig],
        default: str = "bm25",
        trained: dict[str, TrainedModel] | None = None,
        index_root: Path | None = None,
        embedding_cache: Path | None = None,
    ) -> None:
        self.pool = pool
        # the run's embedding cache (<build.out>/embeddings), shared with `ratio evaluate` and
        # `ratio train-compare`: a model they already encoded this pool with indexes in seconds
        self.embedding_cache = embedding_cache
        self.systems = systems
        self.default = default
        self.trained = dict(trained or {})
        self.index_root = index_root or pool.dir
        self._slots: dict[str, _Slot] = {}
        self._loading: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.started = time.time()
        if default not in self.retriever_names():
            raise UnknownRetrieverError(
                f"default retriever {default!r} is not known; "
                f"known: {', '.join(self.retriever_names())}"
            )

    # ------------------------------------------------------------ construction

    @classmethod
    def open(
        cls,
        config: RunConfig | str | os.PathLike | None = None,
        *,
        source: str | None = None,
        split: str | None = None,
        candidates: str | os.PathLike | None = None,
        retriever: str | None = None,
        index_dir: str | os.PathLike | None = None,
        warm: Sequence[str] = (),
        progress: bool = False,
    ) -> SearchEngine:
        """Open (building on first use) the pool and retrievers a run config describes.

        Options left as None come from ``[serve]`` in the config (keys ``source``,
        ``split``, ``candidates``, ``retriever``, ``model``, where the config has
        them), so a TOML file alone can define a deployment. ``warm`` names
        retrievers to load now rather than on their first request (``auto``:
        each move's default).
        """
        cfg = config if isinstance(config, RunConfig) else load_config(config)
        serve = cfg.serve
        source = source or getattr(serve, "source", "") or "benchmark"
        split = split if split is not None else getattr(serve, "split", "")
        cand = candidates or getattr(serve, "candidates", "") or None
        if cand:
            cand = cfg.resolve(str(cand))
        spec = pool_spec(cfg, source=source, split=split, candidates=cand, index_dir=index_dir)
        pool = prepare_pool(spec, progress=progress)
        trained = find_trained(cfg)
        dense_model = getattr(serve, "model", "") or next(
            (s.model for s in cfg.evaluate.systems if s.kind == "dense" and s.model), ""
        )
        systems: dict[str, SystemConfig] = {
            "bm25": SystemConfig(name="bm25", kind="bm25"),
            "dense": SystemConfig(
                name="dense", kind="dense", model=dense_model or DEFAULT_DENSE_MODEL
            ),
        }
        for s in cfg.evaluate.systems:
            if s.name:
                systems[s.name] = s
        eng = cls(
            pool,
            systems=systems,
            default=retriever or serve.retriever or "bm25",
            trained=trained,
            index_root=spec.index_dir,
            embedding_cache=cfg.resolve(cfg.build.out) / "embeddings",
        )
        eng.warm(warm)
        return eng

    def warm(self, names: Iterable[str]) -> None:
        """Load (building if needed) the named retrievers for every move, and run one query
        through each so the model is in memory before the first real request."""
        done: set[str] = set()
        for name in names:
            for move in MOVES:
                for leaf in self.resolve(name, move).leaves():
                    if leaf.key in done:
                        continue
                    done.add(leaf.key)
                    slot = self._slot(leaf)
                    with slot.lock:
                        slot.retriever.search(["warm up"], 1)

    # ------------------------------------------------------------ retriever resolution

    def retriever_names(self) -> list[str]:
        """Names a request may pass as ``retriever``."""
        names = [AUTO, *self.systems, "hybrid"]
        if self.trained:
            names.append("trained")
        return list(dict.fromkeys(names))

    def resolve(self, name: str | None, move: str, _depth: int = 0) -> Plan:
        """The plan answering retriever ``name`` for ``move``."""
        if move not in MOVES:
            raise ServeError(f"unknown move {move!r}; expected one of {', '.join(MOVES)}")
        if _depth > 4:
            raise ServeError(f"retriever {name!r}: hybrid components nest too deeply")
        name = name or AUTO
        if name == AUTO:
            name = self.auto_choice(move)
        if name == f"baseline@{move}":
            t = self.trained[move]
            system = SystemConfig(name=name, kind="dense", model=t.base_model, prefix=t.prefix)
            return Plan(name, name, system)
        if name == "trained":
            if move not in self.trained:
                raise UnknownRetrieverError(
                    f"no trained model for move {move!r} (looked for a sentence-transformers "
                    f"folder <train.out>/{move}/best and <build.out>/models/{move}/best); "
                    f"trained moves: "
                    f"{', '.join(sorted(self.trained)) or 'none'}"
                )
            system = SystemConfig(
                name=f"trained-{move}",
                kind="dense",
                model=str(self.trained[move].path),
                prefix=self.trained[move].prefix,
            )
            return Plan("trained", f"trained@{move}", system)
        if name == "hybrid" and "hybrid" not in self.systems:
            dense = "trained" if self.auto_choice(move) == "trained" else "dense"
            parts = [self.resolve("bm25", move, _depth + 1), self.resolve(dense, move, _depth + 1)]
            return Plan("hybrid", f"hybrid@{move}", parts=parts, fusion="rrf")
        system = self.systems.get(name)
        if system is None:
            raise UnknownRetrieverError(
                f"unknown retriever {name!r}; known: {', '.join(self.retriever_names())}"
            )
        if system.kind == "hybrid":
            parts = [self.resolve(c, move, _depth + 1) for c in system.components]
            if len(parts) < 2:
                raise ServeError(f"hybrid system {name!r} needs at least two components")
            return Plan(name, f"{name}@{move}", parts=parts, fusion=system.fusion)
        return Plan(name, name, system)

    def auto_choice(self, move: str) -> str:
        """What ``auto`` means for ``move``: whichever of its trained model, that model's
        untuned base and BM25 scored best on validation; with nothing trained, the configured
        default, and when that is itself ``auto``, BM25 (what every model must beat)."""
        t = self.trained.get(move)
        if t is not None:
            choice = t.auto_choice
            if choice == "trained":
                return "trained"
            if choice == "baseline" and t.base_model:
                return f"baseline@{move}"
            return "bm25"
        return "bm25" if self.default == AUTO else self.default

    def effective_name(self, name: str | None, move: str) -> str:
        """The retriever a request would actually use (``auto`` resolved)."""
        return self.resolve(name, move).name

    def _slot(self, plan: Plan) -> _Slot:
        """The loaded retriever for a single-index plan: in memory, from disk, or built."""
        slot = self._slots.get(plan.key)
        if slot is not None:
            return slot
        with self._guard:
            lock = self._loading.setdefault(plan.key, threading.Lock())
        with lock:  # one thread builds; others wait for it instead of building twice
            slot = self._slots.get(plan.key)
            if slot is None:
                t0 = time.perf_counter()
                r = self._load_or_build(plan.key, plan.system)
                slot = _Slot(plan.key, r, threading.Lock(), time.perf_counter() - t0)
                self._slots[plan.key] = slot
        return slot

    def _index_dir(self, key: str, system: SystemConfig) -> Path:
        h = hashlib.sha1(json.dumps(system.identity(), sort_keys=True).encode()).hexdigest()[:10]
        return self.index_root / "retrievers" / f"{_slug(key)}-{h}"

    def _load_or_build(self, key: str, system: SystemConfig) -> Any:
        from ratio.retrieval.base import build_retriever, load_retriever, read_meta

        d = self._index_dir(key, system)
        if d.is_dir():
            try:
                if read_meta(d).get("fingerprint") == self.pool.fingerprint:
                    return load_retriever(d, mmap=True)
            except RatioError:
                pass  # unreadable or stale index: rebuild below
        r = build_retriever(system, systems=self.systems, cache_dir=self.embedding_cache)
        ids, texts = self.pool.ids_texts()
        r.index(ids, texts)
        _no_query_cache(r)
        try:
            r.save(d)
        except (OSError, NotImplementedError):
            pass  # an index we cannot save is still usable in memory
        return r

    def _rank(self, plan: Plan, query: str, k: int) -> tuple[list[str], np.ndarray]:
        """Candidate ids and scores, best first (may hold fewer than k)."""
        if not plan.parts:
            slot = self._slot(plan)
            with slot.lock:
                _single_query_threads()  # OpenMP settings are per thread: set in this one
                res = slot.retriever.search([query], k)
            ids = [str(i) for i in res.ids[0]]
            return ids, np.asarray(res.scores[0], dtype=np.float32)
        from ratio.retrieval.base import SearchResult
        from ratio.retrieval.hybrid import rrf_fuse, score_fuse

        depth = max(k, self.HYBRID_DEPTH)
        lists = []
        for p in plan.parts:
            ids, scores = self._rank(p, query, depth)
            lists.append(SearchResult(np.asarray([ids], dtype=str).reshape(1, -1), scores[None, :]))
        fused = rrf_fuse(lists, k) if plan.fusion == "rrf" else score_fuse(lists, k)
        return [str(i) for i in fused.ids[0]], np.asarray(fused.scores[0], dtype=np.float32)

    # ------------------------------------------------------------ search

    def search(
        self,
        query: str,
        move: str = "address",
        k: int = 10,
        retriever: str | None = None,
        *,
        year_min: int | None = None,
        year_max: int | None = None,
        venue: str | None = None,
        exclude_paper: str | None = None,
    ) -> dict[str, Any]:
        """Top-k candidates for one query and move, after filters, with provenance and context."""
        t0 = time.perf_counter()
        query = self._check_query(query)
        if not 1 <= int(k) <= MAX_K:
            raise ServeError(f"k must be between 1 and {MAX_K}, got {k}")
        plan = self.resolve(retriever, move)
        if year_min is not None and year_max is not None and year_min > year_max:
            # an empty range, not an error: JSON Schema cannot say "min <= max", and a
            # client that states a valid schema request should get a valid answer
            return self._response(
                query,
                move,
                k,
                plan,
                [],
                t0,
                f"year_min ({year_min}) > year_max ({year_max}): no year matches",
            )
        filtered = any(v not in (None, "") for v in (year_min, year_max, venue, exclude_paper))
        n = self.pool.n
        fetch = min(n, k if not filtered else max(4 * k, 50))
        while True:
            ids, sc = self._rank(plan, query, fetch)
            keep = np.array([bool(i) for i in ids], dtype=bool)  # "" pads missing results
            rows = self.pool.rows_of(ids)
            keep &= rows >= 0
            if filtered:
                keep &= self._filter_mask(rows, year_min, year_max, venue, exclude_paper)
            rows_k, scores_k = rows[keep], sc[keep]
            exhausted = fetch >= n or len(ids) < fetch or not all(ids)
            if len(rows_k) >= k or exhausted:
                break
            fetch = min(n, fetch * 4)
        rows_k, scores_k = rows_k[:k], scores_k[:k]
        results = []
        for rank, (row, score) in enumerate(zip(self.pool.rows(rows_k), scores_k, strict=True), 1):
            results.append(
                {
                    "rank": rank,
                    "candidate_id": row["candidate_id"],
                    "text": row["text"],
                    "paper_id": row["paper_id"],
                    "title": row["title"],
                    "year": row["year"],
                    "venue": row["venue"],
                    "section": row["section"],
                    "section_category": row["section_category"],
                    "context": {"prev": row["prev"], "next": row["next"]},
                    "score": float(score) if np.isfinite(score) else 0.0,
                    "retriever": plan.name,
                }
            )
        return self._response(query, move, k, plan, results, t0)

    def _response(self, query, move, k, plan, results, t0, note=None) -> dict[str, Any]:
        if note is None and not plan.move_specific:
            note = (
                f"'{plan.name}' is not specific to the {move} move (no model trained for it), "
                f"so every move ranks by the same similarity"
            )
        return {
            "query": query,
            "move": move,
            "retriever": plan.name,
            "k": k,
            "results": results,
            "took_ms": round((time.perf_counter() - t0) * 1000, 2),
            "note": note,
        }

    def moves(self, query: str, k: int = 10, retriever: str | None = None, **filters) -> dict:
        """The three moves side by side for one query."""
        t0 = time.perf_counter()
        out = {m: self.search(query, m, k, retriever, **filters) for m in MOVES}
        return {
            "query": self._check_query(query),
            "k": k,
            "moves": out,
            "took_ms": round((time.perf_counter() - t0) * 1000, 2),
        }

    @staticmethod
    def _check_query(query: str) -> str:
        if not isinstance(query, str) or not query.strip(BLANK):
            raise ServeError("query is empty: give a research statement to search with")
        if len(query) > MAX_QUERY_CHARS:
            raise ServeError(
                f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}"
            )
        return query.strip(BLANK)

    def _filter_mask(self, rows, year_min, year_max, venue, exclude_paper) -> np.ndarray:
        keep = np.ones(len(rows), dtype=bool)
        safe = np.where(rows >= 0, rows, 0)
        if year_min is not None or year_max is not None:
            years = np.asarray(self.pool.years[safe])
            if year_min is not None:
                keep &= years >= year_min
            if year_max is not None:
                keep &= (years <= year_max) & (years >= 0)
        if venue:
            code = self.pool.venue_code(venue)
            keep &= (np.asarray(self.pool.venue_codes[safe]) == code) & (code >= 0)
        if exclude_paper:
            keep &= np.asarray(self.pool.paper_codes[safe]) != self.pool.paper_code(exclude_paper)
        return keep

    # ------------------------------------------------------------ introspection

    def info(self) -> dict[str, Any]:
        return {
            "pool": {
                "candidates": self.pool.n,
                "fingerprint": self.pool.fingerprint,
                "directory": str(self.pool.dir),
                "venues": self.pool.venues,
                "with_context": self.pool.meta.get("with_context", False),
            },
            "moves": list(MOVES),
            "retrievers": self.retriever_names(),
            "default_retriever": self.default,
            "per_move": {m: self.effective_name(None, m) for m in MOVES},
            "trained": {
                m: {"path": str(t.path), "worse_than_baseline": t.worse_than_baseline}
                for m, t in sorted(self.trained.items())
            },
            "loaded": {k: round(s.load_s, 3) for k, s in self._slots.items()},
            "max_k": MAX_K,
            "max_query_chars": MAX_QUERY_CHARS,
        }
