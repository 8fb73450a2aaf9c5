"""The serving pool: a candidate pool joined once with everything a result shows.

A pool is a built benchmark's candidate pool(s), an explicit candidates file, or an ingested
sentence collection, joined with paper metadata (with each paper's link, :mod:`ratio.serve.links`)
and sentence context into one Arrow IPC file
(:data:`ratio.core.schemas.POOL`) with sorted-id and filter arrays beside it, so a request maps ids
to rows with a binary search over memory-mapped arrays and never scans Parquet. The file is
rebuilt only when an input file changes (path, size or mtime).

Tested by tests/serve/test_engine.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.core.config import RunConfig
from ratio.core.io import RatioError, atomic_path, write_text_atomic
from ratio.core.layout import RunDir, ServePoolDir, SplitDir, candidate_id
from ratio.core.schemas import POOL
from ratio.evaluation.harness import sub_pool_ids
from ratio.retrieval.base import pool_fingerprint
from ratio.serve.links import paper_urls

POOL_VERSION = (
    "3"  # 3: the url column. Bump when the pool file's columns or their derivation change
)
SOURCES = ("benchmark", "sentences")


def _categories(sentences: pa.Table) -> list[str]:
    return sorted(c for c in pc.unique(sentences.column("section_category")).to_pylist() if c)


def slug_part(text: str) -> str:
    """A folder-safe piece of a pool key."""
    return "".join(c if c.isalnum() else "_" for c in text.lower())


class ServeError(RatioError):
    """A request or setup the engine cannot serve; ``status`` is the HTTP code to answer with."""

    status = 400


def _signature(paths: Iterable[Path]) -> list[list]:
    """What the pool was built from: each input's path, size and mtime (cheap to re-check)."""
    stats = [(p, p.stat()) for p in sorted(set(paths))]
    return [[str(p.resolve()), st.st_size, st.st_mtime_ns] for p, st in stats]


def _read_many(paths: Sequence[Path], columns: list[str] | None = None) -> pa.Table | None:
    tables = [pq.read_table(p, columns=columns) for p in paths]
    return pa.concat_tables(tables, promote_options="permissive") if tables else None


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
    A neighbour the ingest filtered out has no row, so it stays null."""
    k3 = ["paper_id", "paragraph_idx", "sentence_idx"]
    s = sentences.select(k3 + ["section", "text"])
    one = pa.scalar(1, pa.int32())
    out = keys.join(s.select(k3 + ["section"]), k3, join_type="left outer")
    for name, shift in (("prev", pc.add), ("next", pc.subtract)):
        neighbour = s.select(["paper_id", "paragraph_idx", "text"]).append_column(
            "sentence_idx", shift(s.column("sentence_idx"), one)
        )
        neighbour = neighbour.rename_columns(["paper_id", "paragraph_idx", name, "sentence_idx"])
        out = out.join(neighbour, k3, join_type="left outer")
    out = _dedup_first(out, "_row")  # a repeated (paper, para, sent) key must not add rows
    return out.sort_by("_row")


def build_pool_table(
    candidates: pa.Table, papers: pa.Table | None, sentences: pa.Table | None
) -> pa.Table:
    """Join candidates with paper metadata and sentence context into a :data:`POOL` table.
    ``papers`` may carry a ``url`` column (:func:`ratio.serve.links.paper_urls`)."""
    n = candidates.num_rows
    cand = candidates.append_column("_row", pa.array(np.arange(n, dtype=np.int64)))
    for name, typ in (("origin", pa.string()), ("marker", pa.string())):
        if name not in cand.column_names:
            cand = cand.append_column(name, pa.nulls(n, typ))
    title = venue = url = pa.nulls(n, pa.string())
    year = cand.column("year").cast(pa.int16())
    if papers is not None and papers.num_rows:
        if "url" not in papers.column_names:
            papers = papers.append_column("url", pa.nulls(papers.num_rows, pa.string()))
        p = _dedup_first(papers.select(["paper_id", "title", "year", "venue", "url"]), "paper_id")
        p = p.rename_columns(["paper_id", "title", "p_year", "venue", "url"])
        j = cand.select(["paper_id", "_row"]).join(p, "paper_id", join_type="left outer")
        j = j.sort_by("_row")
        title, venue, url = j.column("title"), j.column("venue"), j.column("url")
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
    joined = dict(title=title, year=year, venue=venue, url=url, section=section)
    joined.update(prev=prev, next=nxt)
    columns = {}
    for f in POOL:  # the other columns are the candidates' own
        col = joined[f.name] if f.name in joined else cand.column(f.name).cast(f.type)
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        columns[f.name] = pa.chunked_array(chunks, f.type)
    return pa.table(columns, schema=POOL)


def sentences_as_candidates(sentences: pa.Table) -> pa.Table:
    """An ingested sentence collection as a CANDIDATES-shaped table (ids as the benchmark's)."""
    ids = pa.array([candidate_id(m) for m in sentences.column("match").to_pylist()])
    cols = ["text", "paper_id", "year", "section_category", "paragraph_idx", "sentence_idx"]
    t = pa.table({"candidate_id": ids, **{c: sentences.column(c) for c in cols}})
    return _dedup_first(t, "candidate_id")


@dataclass
class PoolSpec:
    """Where a pool comes from; ``key`` names its folder under ``<build.out>/serve``."""

    key: str
    candidates: list[Path]  # CANDIDATES parquet files (empty for source = sentences)
    papers: list[Path]
    sentences: list[Path]
    directory: ServePoolDir  # the pool file and its indexes
    # source = sentences: only these publication years / section categories (empty: all)
    years: tuple[int, ...] = ()
    sections: tuple[str, ...] = ()
    sample: PoolSample | None = None  # a benchmark split's seeded sub-pool
    metadata: Path | None = None  # ingest's checked metadata sidecar: the papers' links


@dataclass(frozen=True)
class PoolSample:
    """A split's seeded sub-pool (``[serve] max_pool``): the one an ``[evaluate]`` system with
    the same ``max_pool`` / ``max_queries`` searches, so the service reuses its vectors (the
    demo encodes that pool once, for its table and for serving)."""

    split: SplitDir
    max_pool: int
    max_queries: int
    seed: int
    relations: tuple[str, ...]

    def ids(self) -> list[str]:
        bench = self.split.load()
        return sub_pool_ids(bench, self.relations, self.max_pool, self.max_queries, self.seed)

    def describe(self) -> dict[str, Any]:
        return {
            "max_pool": self.max_pool,
            "max_queries": self.max_queries,
            "seed": self.seed,
            "relations": list(self.relations),
        }


def pool_spec(
    cfg: RunConfig,
    *,
    source: str = "benchmark",
    split: str = "",
    candidates: str | os.PathLike | None = None,
    index_dir: str | os.PathLike | None = None,
    years: Sequence[int] = (),
    sections: Sequence[str] = (),
    max_pool: int = 0,
    max_queries: int = 0,
) -> PoolSpec:
    """Resolve which files make the pool, from a config and the serve options. ``years`` and
    ``sections`` narrow an ingested collection (``source = "sentences"``), e.g. every body
    sentence of one year; ``max_pool`` / ``max_queries`` a split's pool to the seeded sub-pool
    the evaluation searches. The folder name says which."""
    years, sections = tuple(sorted({int(y) for y in years})), tuple(sorted(set(sections)))
    if (years or sections) and (candidates or source != "sentences"):
        raise ServeError(
            "[serve] years / sections narrow an ingested collection: use them with "
            'source = "sentences" (a benchmark pool is already a split\'s candidates)'
        )
    if max_pool < 0 or max_queries < 0:
        raise ServeError("[serve] max_pool and max_queries must be >= 0 (0: the whole pool)")
    if (max_pool or max_queries) and (candidates or source != "benchmark" or not split):
        raise ServeError(
            "[serve] max_pool / max_queries take a seeded sub-pool of one benchmark split's "
            'pool: use them with source = "benchmark" and a split (e.g. split = "test")'
        )
    sample = None
    if candidates:
        path = Path(candidates)
        if not path.is_file():
            raise ServeError(f"candidate pool not found: {path}")
        # <out>/benchmark/<split>/candidates.parquet -> <out>; else the file's folder
        run = RunDir(path.parents[2] if path.parent.parent.name == "benchmark" else path.parent)
        digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
        key = f"pool-{path.parent.name}-{digest}"
        cand_files = [path]
    else:
        run = RunDir.of(cfg)
        if source not in SOURCES:
            raise ServeError(f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")
        if source == "benchmark":
            bench = run.benchmark
            if split:
                cand_files = [bench.split(split).candidates]
                if not cand_files[0].is_file():
                    have = sorted(p.parent.name for p in bench.candidate_files())
                    raise ServeError(
                        f"no candidate pool for split {split!r} at {cand_files[0]}; "
                        f"splits with a pool: {', '.join(have) or 'none (run `ratio build`)'}"
                    )
            else:
                cand_files = bench.candidate_files()
                if not cand_files:
                    raise ServeError(
                        f"no candidate pools under {bench.root} (run `ratio build`, or serve an "
                        f"ingested collection with --source sentences)"
                    )
            key = f"benchmark-{split or 'all'}"
            if max_pool:
                sample = PoolSample(
                    bench.split(split),
                    max_pool,
                    max_queries,
                    cfg.build.seed,
                    tuple(cfg.evaluate.relations),
                )
                key += f"-max{max_pool}-q{max_queries}-seed{cfg.build.seed}"
        else:
            cand_files = []
            key = "sentences" + "".join(f"-{y}" for y in years)
            if sections:
                key += "-" + "-".join(slug_part(s) for s in sections)
    sent_files = run.ingest.sentence_shards()
    if source == "sentences" and not candidates and not sent_files:
        raise ServeError(f"no sentence shards under {run.ingest.sentences} (run `ratio ingest`)")
    paper_files = run.ingest.paper_shards()
    where = ServePoolDir(Path(index_dir)) if index_dir else run.serve_pool(key)
    metadata = run.ingest.metadata if run.ingest.metadata.is_file() else None
    files = (cand_files, paper_files, sent_files)
    return PoolSpec(key, *files, where, years, sections, sample, metadata)


class PoolFile:
    """The memory-mapped pool file plus a sorted-id index for id -> row lookups; also the pool
    the service's :class:`~ratio.retrieval.store.IndexStore` indexes."""

    def __init__(self, directory: ServePoolDir) -> None:
        self.where = directory
        self.dir = directory.root
        self.key = directory.root.name
        self.meta = json.loads(directory.meta.read_text())
        self.fingerprint: str = self.meta["fingerprint"]
        self._source = pa.memory_map(str(directory.pool_file), "r")
        self.table: pa.Table = pa.ipc.open_file(self._source).read_all()
        self.sorted_ids = np.load(directory.array("sorted_ids"), mmap_mode="r")
        self.order = np.load(directory.array("order"), mmap_mode="r")
        self.years = np.load(directory.array("years"), mmap_mode="r")  # -1 where unknown
        self.venues: list[str] = self.meta.get("venues", [])
        self.venue_codes = np.load(directory.array("venue_codes"), mmap_mode="r")  # -1: none
        self.paper_codes = np.load(directory.array("paper_codes"), mmap_mode="r")
        self._paper_ids = np.load(directory.array("paper_ids"), mmap_mode="r")
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

    @cached_property
    def ids(self) -> list[str]:
        return self.column("candidate_id").to_pylist()

    @cached_property
    def texts(self) -> list[str]:
        return self.column("text").to_pylist()

    def rows(self, rows: Sequence[int]) -> list[dict]:
        # one scalar per cell: ``take`` would first concatenate whole columns of the memory-mapped
        # table (11 ms for 10 rows of a 124k pool); a one-row slice per row costs 3x this
        out: list[dict] = [{} for _ in rows]
        for name in self.table.column_names:
            column = self.table.column(name)
            for row, r in zip(out, rows, strict=True):
                row[name] = column[int(r)].as_py()
        return out

    def paper_code(self, paper_id: str) -> int:
        """The integer code of a paper id (-1 when the pool has no sentence of it)."""
        if self._paper_code is None:
            self._paper_code = {str(p): i for i, p in enumerate(self._paper_ids)}
        return self._paper_code.get(paper_id, -1)

    def venue_code(self, venue: str) -> int:
        v = venue.strip().lower()
        return next((i for i, x in enumerate(self.venues) if x.lower() == v), -1)

    def mask(
        self,
        rows: np.ndarray,
        year_min: int | None = None,
        year_max: int | None = None,
        venue: str | None = None,
        exclude_paper: str | Iterable[str] | None = None,
    ) -> np.ndarray:
        """Which of ``rows`` pass the filters, read from the memory-mapped arrays alone.
        ``exclude_paper`` is one paper id or several (a move chain leaves out every paper
        already on its path)."""
        keep = np.ones(len(rows), dtype=bool)
        safe = np.where(rows >= 0, rows, 0)
        if year_min is not None or year_max is not None:
            years = np.asarray(self.years[safe])
            if year_min is not None:
                keep &= years >= year_min
            if year_max is not None:
                keep &= (years <= year_max) & (years >= 0)
        if venue:
            code = self.venue_code(venue)
            keep &= (np.asarray(self.venue_codes[safe]) == code) & (code >= 0)
        if exclude_paper:
            papers = [exclude_paper] if isinstance(exclude_paper, str) else exclude_paper
            codes = [self.paper_code(p) for p in papers]
            keep &= ~np.isin(np.asarray(self.paper_codes[safe]), codes)
        return keep


def prepare_pool(spec: PoolSpec, *, progress: bool = False) -> PoolFile:
    """Load the pool file for ``spec``, (re)building it first when its inputs changed."""
    d = spec.directory
    inputs = {"candidates": spec.candidates, "papers": spec.papers, "sentences": spec.sentences}
    if spec.metadata is not None:  # a changed url or doi rebuilds the pool
        inputs["metadata"] = [spec.metadata]
    sig: dict[str, Any] = {"version": POOL_VERSION}
    sig.update({k: _signature(paths) for k, paths in inputs.items()})
    if spec.years or spec.sections:
        sig["filter"] = {"years": list(spec.years), "sections": list(spec.sections)}
    if spec.sample:
        sig["sample"] = spec.sample.describe()
        sig["queries"] = _signature([spec.sample.split.queries, spec.sample.split.qrels])
    if d.meta.is_file() and d.pool_file.is_file():
        try:
            old = json.loads(d.meta.read_text())
        except ValueError:
            old = {}
        if old.get("inputs") == sig:
            return PoolFile(d)
    t0 = time.perf_counter()
    cols = ["paper_id", "year", "venue", "section", "section_category", "paragraph_idx"]
    cols += ["sentence_idx", "text"] + ([] if spec.candidates else ["match"])
    sentences = _read_many(spec.sentences, cols)
    if spec.candidates:
        cands = _dedup_first(_read_many(spec.candidates), "candidate_id")
        if spec.sample:
            keep = pa.array(spec.sample.ids(), pa.string())
            cands = cands.filter(pc.is_in(cands.column("candidate_id"), keep))
        if sentences is not None:  # context only for papers in the pool
            papers_in_pool = pc.unique(cands.column("paper_id"))
            sentences = sentences.filter(pc.is_in(sentences.column("paper_id"), papers_in_pool))
    else:
        if sentences is None:  # pool_spec checked the shards exist; an empty list reads as None
            raise ServeError(f"the collection {spec.key!r} has no sentence shards")
        chosen = sentences
        if spec.years:
            years = pa.array(spec.years, pa.int64())
            chosen = chosen.filter(pc.is_in(chosen.column("year").cast(pa.int64()), years))
        if spec.sections:
            wanted = pa.array(spec.sections, pa.string())
            chosen = chosen.filter(pc.is_in(chosen.column("section_category"), wanted))
        if not chosen.num_rows:
            raise ServeError(
                f"the collection {spec.key!r} has no sentences: {sentences.num_rows:,} ingested, "
                f"none with [serve] years = {list(spec.years)} and sections = "
                f"{list(spec.sections)} (section categories: {', '.join(_categories(sentences))})"
            )
        cands = sentences_as_candidates(chosen)
    papers = _read_many(spec.papers, ["paper_id", "title", "year", "venue", "source"])
    if papers is not None:
        papers = papers.append_column("url", paper_urls(papers, spec.metadata))
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
    d.root.mkdir(parents=True, exist_ok=True)
    with atomic_path(d.pool_file) as tmp:
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
        with atomic_path(d.array(name)) as tmp, open(tmp, "wb") as fh:
            np.save(fh, arr)
    meta = {
        "inputs": sig,
        "fingerprint": fp,
        "n": len(ids),
        "venues": venues,
        "built_s": round(time.perf_counter() - t0, 3),
        "with_context": sentences is not None,
    }
    write_text_atomic(d.meta, json.dumps(meta, indent=1))
    if progress:
        print(
            f"pool {spec.key}: {len(ids):,} candidates built in {meta['built_s']}s -> {d.root}",
            file=sys.stderr,
        )
    return PoolFile(d)
