"""Ingest: raw papers -> clean, ordered sentence shards (Parquet).

Three steps, so that the expensive one is a pure function of one shard: each input file
becomes ``raw/`` and ``papers/`` shards (a resumable ``Shard`` on any executor); the whole
corpus is scanned for boilerplate, sentences repeated in many papers (checklists, licence
and template text) and sections made mostly of them, found from the corpus rather than a
hand list; ``finalize_file`` drops it into ``sentences/``. The last two are one ``Stage``,
skipped when no shard changed.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ratio.core import schemas, storage
from ratio.core.config import IngestConfig
from ratio.core.io import InputError, RatioError, write_parquet_atomic, write_text_atomic
from ratio.core.layout import DONE_SUFFIX, IngestDir
from ratio.core.provenance import stamp
from ratio.core.records import Paper
from ratio.corpus.ingest_stats import corpus_stats, metadata_match
from ratio.corpus.readers import DropReport, get_reader, list_inputs
from ratio.corpus.readers.detect import detect_inputs
from ratio.corpus.readers.metadata import (
    apply_metadata,
    load_metadata,
    metadata_lookup,
    write_metadata,
)
from ratio.corpus.text import clean, normalize, runin, sections, segment
from ratio.runner.stages import Shard, Stage, remove_stale, run_shard, run_sharded, run_stage

# Bump when the cleaning/segmentation logic changes output for the same input,
# so cached shards from older code are recomputed.
# 2: plain-text structure, hyphen repair keeping compounds; 3: line numbers, small caps and
# glued acronyms repaired (ratio.corpus.text.repair), math_after recorded; 4: run-in headings,
# footnote marks, joined/kerned words, short inline math rendered, stray emphasis (issue 32)
INGEST_VERSION = "4"
FLUSH_ROWS = 100_000
_SUFFIXES = (".jsonl.zst", ".jsonl.gz", ".jsonl", ".json.gz", ".json", ".zst", ".gz", ".txt", ".md")


@dataclass
class IngestResult:
    out_dir: Path
    papers: int = 0
    sentences: int = 0
    shards: int = 0
    reused_shards: int = 0
    drops: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    formats: dict[str, int] = field(default_factory=dict)  # reader -> files it read


def shard_name(path: str | Path) -> str:
    name = storage.name(path)
    return name.removesuffix(next((suf for suf in _SUFFIXES if name.endswith(suf)), ""))


def _ingest_key(cfg: IngestConfig) -> dict:
    keys = ("keep_appendices", "min_chars", "segmenter")
    return {"version": INGEST_VERSION, **{k: getattr(cfg, k) for k in keys}}


def _paper_rows(
    paper: Paper, cfg: IngestConfig, split, cols: dict[str, list], drops: Counter
) -> tuple[int, int]:
    """Append the paper's sentences (cut by the segmenter ``split``) to ``cols``; return
    (paragraphs, sentences)."""
    n_par = n_sent = 0
    para_idx = -1
    for section in paper.sections:
        if section.is_appendix and not cfg.keep_appendices:
            drops["appendix_paragraph"] += len(section.paragraphs)
            continue
        category = section.category
        if category == "other" and section.heading:
            category = sections.categorize(section.heading)
        if section.is_appendix and category == "other":
            category = "appendix"
        math_after = section.math_after
        if len(math_after) != len(section.paragraphs):
            math_after = [False] * len(section.paragraphs)  # the reader does not know
        for paragraph, led_into_math in zip(section.paragraphs, math_after, strict=True):
            para_idx += 1
            text = clean.clean_inline(paragraph, paper.markup)
            if not text:
                drops["empty_paragraph"] += 1
                continue
            n_par += 1
            sentences = split(text)
            last = len(sentences) - 1
            for sent_idx, raw in enumerate(sentences):
                sent = normalize.strip_noise(raw)
                if normalize.is_noise(sent):
                    drops["noise_sentence"] += 1
                    continue
                if runin.heading_only(sent):
                    drops["heading_sentence"] += 1
                    continue
                if len(sent) < cfg.min_chars:
                    drops["short_sentence"] += 1
                    continue
                cols["paper_id"].append(paper.id)
                cols["year"].append(paper.year)
                cols["date"].append(paper.date)
                cols["venue"].append(paper.venue)
                cols["section"].append(section.heading)
                cols["section_category"].append(category)
                cols["is_appendix"].append(section.is_appendix)
                cols["paragraph_idx"].append(para_idx)
                cols["sentence_idx"].append(sent_idx)
                cols["text"].append(sent)
                cols["match"].append(normalize.match_form(sent))
                # only the paragraph's final sentence is the one the equation followed
                cols["math_after"].append(led_into_math and sent_idx == last)
                n_sent += 1
    return n_par, n_sent


def _empty_cols(schema: pa.Schema) -> dict[str, list]:
    return {name: [] for name in schema.names}


def ingest_shard(
    path: str,
    fmt: str,
    out_dir: str,
    cfg_dict: dict,
    name: str | None = None,
    metadata: dict | None = None,
) -> dict:
    """Ingest one input shard, or reuse it when its marker matches (any executor; paths may
    be URLs). A bad shard is reported in the summary (``error``), not raised, unless
    ``strict`` is set; see :func:`_shard` for ``name`` and ``metadata``."""
    return run_shard(_shard(path, fmt, out_dir, IngestConfig(**cfg_dict), name, metadata))


def _shard(
    path: str,
    fmt: str,
    out_dir: str,
    cfg: IngestConfig,
    name: str | None = None,
    metadata: dict | None = None,
) -> Shard:
    """The stage-runner piece for one input (marker ``raw/<name>.done.json``).

    ``name`` overrides the shard name (a folder read by two readers); ``metadata`` is
    ``{"path", "digest"}`` of a checked sidecar (``ratio.corpus.readers.metadata``) whose rows fill
    each paper's title, year, date and venue. Paths are joined with ``ratio.core.storage``, not
    ``IngestDir``, because the output may be a URL.
    """
    name = name or shard_name(path)
    raw_path = storage.join(out_dir, "raw", f"{name}.parquet")
    papers_path = storage.join(out_dir, "papers", f"{name}.parquet")
    key = {"input": storage.fingerprint(path), "config": _ingest_key(cfg)}
    if metadata:
        key["metadata"] = metadata["digest"]
    return Shard(
        name,
        _ingest_file,
        (str(path), fmt, asdict(cfg), raw_path, papers_path, metadata["path"] if metadata else ""),
        key=key,
        marker=storage.join(out_dir, "raw", f"{name}{DONE_SUFFIX}"),
        outputs=(raw_path, papers_path),
    )


def _ingest_file(
    path: str, fmt: str, cfg_dict: dict, raw_path: str, papers_path: str, metadata_path: str
) -> dict:
    """The step of one shard: a remote input is staged to a local copy, outputs are
    published whole (the runner writes the marker last), so a killed worker leaves
    either a finished shard or nothing."""
    cfg = IngestConfig(**cfg_dict)
    split = segment.get_segmenter(cfg.segmenter)
    lookup = metadata_lookup(metadata_path) if metadata_path else None
    report = DropReport(strict=cfg.strict)
    drops: Counter = Counter()
    cols = _empty_cols(schemas.SENTENCES)
    pcols = _empty_cols(schemas.PAPERS)
    n_papers = n_sentences = 0
    error = None
    meta = stamp("ingest", json.dumps(_ingest_key(cfg), sort_keys=True), source=path)
    with (
        storage.staged(path) as src,
        storage.output(raw_path) as tmp,
        pq.ParquetWriter(tmp, schemas.SENTENCES.with_metadata(meta), compression="zstd") as writer,
    ):
        try:
            for paper in get_reader(fmt).fn(src, report):
                if lookup is not None:
                    apply_metadata(paper, lookup)
                n_par, n_sent = _paper_rows(paper, cfg, split, cols, drops)
                if n_sent == 0:
                    drops["paper_without_sentences"] += 1
                n_papers += 1
                n_sentences += n_sent
                for k, v in (
                    ("paper_id", paper.id),
                    ("title", paper.title),
                    ("year", paper.year),
                    ("date", paper.date),
                    ("venue", paper.venue),
                    ("source", storage.name(path)),
                    ("n_sections", len(paper.sections)),
                    ("n_paragraphs", n_par),
                    ("n_sentences", n_sent),
                ):
                    pcols[k].append(v)
                if len(cols["text"]) >= FLUSH_ROWS:
                    writer.write_table(pa.table(cols, schema=schemas.SENTENCES))
                    cols = _empty_cols(schemas.SENTENCES)
        except InputError as e:  # unrecoverable for this file (truncated, unreadable)
            report.skip(e)  # raises under strict
            error = str(e)
        if cols["text"]:
            writer.write_table(pa.table(cols, schema=schemas.SENTENCES))
    storage.write_parquet(papers_path, pa.table(pcols, schema=schemas.PAPERS), meta)
    drops.update(report.counts)
    messages = report.messages[:50]
    if str(src) != path:  # messages name the shard as given, not the staged copy
        messages = [m.replace(str(src), path) for m in messages]
        error = error and error.replace(str(src), path)
    return {
        "source": path,
        "papers": n_papers,
        "sentences": n_sentences,
        "drops": dict(drops),
        "messages": messages,
        "error": error,
    }


def find_boilerplate(layout: IngestDir, cfg: IngestConfig, n_papers: int) -> pa.Table:
    """Sentences repeated across many papers, and sections made mostly of them.

    A sentence is boilerplate when its match form occurs in at least
    ``max(boilerplate_min_papers, boilerplate_min_fraction * n_papers)`` papers.
    A section is dropped whole when at least half its sentences are boilerplate
    (e.g. checklist answers under repeated checklist questions).
    """
    import duckdb

    threshold = max(cfg.boilerplate_min_papers, int(cfg.boilerplate_min_fraction * n_papers))
    raw_glob = str(layout.raw / "*.parquet")
    con = duckdb.connect()
    con.execute(f"SET threads TO {max(1, cfg.workers)}")
    # Bounded memory at any corpus size: DuckDB spills past the limit, and the first pass
    # groups 64-bit hashes, not strings; only the few frequent ones are grouped by text.
    con.execute("SET memory_limit = '512MB'")
    con.execute(f"SET temp_directory = '{layout.root / '.duckdb-tmp'}'")
    con.execute(
        f"""CREATE TEMP TABLE bph AS
        SELECT hash(match) AS h FROM read_parquet('{raw_glob}')
        GROUP BY h HAVING count(DISTINCT hash(paper_id)) >= {threshold}"""
    )
    con.execute(
        f"""CREATE TEMP TABLE bp AS
        SELECT match, count(DISTINCT paper_id) AS papers
        FROM read_parquet('{raw_glob}') WHERE hash(match) IN (SELECT h FROM bph)
        GROUP BY match HAVING count(DISTINCT paper_id) >= {threshold}"""
    )
    sections = con.sql(
        f"""SELECT s.paper_id, s.section, count(*) AS n, count(bp.match) AS n_bp
        FROM read_parquet('{raw_glob}') s LEFT JOIN bp USING (match)
        GROUP BY s.paper_id, s.section
        HAVING count(bp.match) * 2 >= count(*) AND count(bp.match) > 0
        ORDER BY s.paper_id, s.section"""
    ).to_arrow_table()
    sentences = con.sql("SELECT match, papers FROM bp ORDER BY papers DESC, match").to_arrow_table()
    con.close()
    keys = pc.binary_join_element_wise(sections["paper_id"], sections["section"], "\x1f")
    return pa.table(
        {
            "kind": pa.array(["sentence"] * sentences.num_rows + ["section"] * sections.num_rows),
            "key": pa.concat_arrays([sentences["match"].combine_chunks(), keys.combine_chunks()]),
            "papers": pa.array(
                sentences["papers"].to_pylist() + [1] * sections.num_rows, pa.int64()
            ),
        }
    )


def ingest(
    inputs: list[str],
    fmt: str,
    out_dir: str | Path,
    cfg: IngestConfig | None = None,
    executor: str = "local",
    address: str = "",
    progress: bool | None = None,
    metadata: str | Path | None = None,
    log=None,
) -> IngestResult:
    """Ingest ``inputs`` into ``out_dir``; finished shards are reused on rerun.

    ``fmt`` is a reader name or ``"auto"`` (``ratio.corpus.readers.detect``: one reader per kind of
    file; ``log`` gets the one-line description of what was detected). ``metadata`` is a
    sidecar file (``ratio.corpus.readers.metadata``) applied to every paper.
    """
    cfg = cfg or IngestConfig()
    out = Path(out_dir)
    layout = IngestDir(out)
    t0 = time.perf_counter()
    if fmt != "auto":
        get_reader(fmt)  # unknown format: fail before anything else
    report = DropReport(strict=cfg.strict)
    if storage.is_url(str(out_dir)):
        raise RatioError(
            f"{out}: the ingest output must be a local or shared-filesystem path; "
            "inputs may be URLs (publish outputs with ratio.core.storage.sync)"
        )
    local = [str(storage.local_path(i)) for i in inputs if not storage.is_url(i)]
    remote = [i for i in inputs if storage.is_url(i)]
    shards: list[tuple[str, str]] = []
    formats: Counter = Counter()
    if fmt == "auto":
        if remote:
            raise RatioError(
                f"--format auto reads local files only; give --format for {', '.join(remote)}"
            )
        detection = detect_inputs(local, exclude=(metadata,) if metadata else ())
        shards, formats = detection.shards, detection.files
        if log is not None:
            log(detection.describe())
        for error in detection.unknown:
            report.skip(error)  # reported with the other bad input; raises under strict
    else:
        try:
            found = [
                *list_inputs(local, fmt),
                *storage.expand_inputs(remote, get_reader(fmt).suffixes),
            ]
            shards = [(str(p), fmt) for p in found]
            formats[fmt] = len(shards)
        except InputError as e:
            report.skip(e)
        if not shards:
            raise RatioError(
                f"no {fmt} input found in {', '.join(map(str, inputs))}"
                + (f" ({'; '.join(report.messages)})" if report.messages else "")
                + _format_hint(local, fmt)
            )
    names = _shard_names(shards)
    dupes = [n for n, c in Counter(names).items() if c > 1]
    if dupes:
        raise RatioError(
            f"two inputs map to the same shard name(s): {', '.join(dupes)}; rename them"
        )
    meta_task = None
    if metadata:
        rows = load_metadata(metadata, report)  # bad rows reported (or raised when strict)
        digest = write_metadata(rows, layout.metadata)
        meta_task = {"path": str(layout.metadata), "digest": digest}

    result = IngestResult(
        out_dir=out, drops=dict(report.counts), errors=list(report.messages), formats=dict(formats)
    )
    pieces = [
        _shard(p, f, str(out), cfg, n, meta_task) for (p, f), n in zip(shards, names, strict=True)
    ]
    run = partial(
        run_sharded, executor=executor, workers=cfg.workers, address=address, progress=progress
    )
    summaries = run(
        pieces,
        desc="ingest shards",
        postfix=lambda done: {"papers": sum(x["papers"] for x in done)},
    )
    summaries.sort(key=lambda s: s["shard"])
    drops: Counter = Counter(result.drops)
    for s in summaries:
        result.papers += s["papers"]
        result.sentences += s["sentences"]
        result.reused_shards += bool(s.get("reused"))
        drops.update(s["drops"])
        result.errors.extend(s.get("messages", []))
    result.shards = len(summaries)

    def finalize() -> dict:
        """Find the corpus's boilerplate and drop it from every raw shard; the fields of the
        ingest manifest (final sentence count and drops)."""
        bp = find_boilerplate(layout, cfg, result.papers)
        meta = stamp("boilerplate", json.dumps(_ingest_key(cfg)))
        write_parquet_atomic(layout.boilerplate, bp, meta)
        pieces = []
        for s in summaries:
            raw, final = layout.raw_shard(s["shard"]), str(layout.sentence_shard(s["shard"]))
            if raw.exists():
                args = (str(raw), final, str(layout.boilerplate))
                pieces.append(Shard(s["shard"], finalize_file, args, outputs=(final,)))
        # Per shard, so the step that touches every sentence spreads over the cluster too.
        done = run(pieces, desc="finalize")
        kinds = ("boilerplate_sentence", "boilerplate_section_sentence")
        # A final shard from an input that is no longer listed must not leak into later stages.
        remove_stale(layout.sentences, {p.name for p in pieces})
        return {
            "sentences": sum(f["kept"] for f in done),
            "finalize_drops": {k: sum(f[k] for f in done) for k in kinds},
        }

    # The corpus-level steps are skipped when no shard changed since the last run,
    # so a rerun leaves sentences/ (and everything downstream) untouched.
    final = Stage(
        "ingest",
        layout.manifest,
        key={
            "shards": [s["key"] for s in summaries],
            "config": _ingest_key(cfg),
            "boilerplate": [cfg.boilerplate_min_papers, cfg.boilerplate_min_fraction],
        },
        outputs=[layout.sentence_shard(s["shard"]) for s in summaries],
        run=finalize,
    )
    _, manifest = run_stage(final)
    drops.update(manifest["finalize_drops"])
    result.sentences = manifest["sentences"]
    result.drops = dict(sorted(drops.items()))
    result.seconds = round(time.perf_counter() - t0, 3)
    stats = corpus_stats(out, drops=result.drops, errors=result.errors)
    stats["formats"] = result.formats
    if metadata:
        stats["metadata"] = metadata_match(out, str(metadata))
        result.errors.extend(stats["metadata"]["messages"])
        stats["errors"] = (stats["errors"] + stats["metadata"]["messages"])[:100]
    stats.update(
        ingest_seconds=result.seconds, shards=result.shards, reused_shards=result.reused_shards
    )
    write_text_atomic(layout.stats, json.dumps(stats, indent=1))
    return result


def _shard_names(shards: list[tuple[str, str]]) -> list[str]:
    """Shard names; a folder read by two readers (text and PDF) gets one per reader."""
    per_path = Counter(p for p, _ in shards)
    return [shard_name(p) + (f"-{f}" if per_path[p] > 1 else "") for p, f in shards]


def _format_hint(local: list[str], fmt: str) -> str:
    """What the inputs do hold, when they hold nothing of ``fmt``."""
    try:
        det = detect_inputs(local)
    except (RatioError, OSError):
        return "; see `ratio formats`, or let --format auto decide"
    names = sorted(det.files)
    if len(names) > 1:  # no single --format reads them all
        return f"; {det.describe()}: use --format auto (the default), a reader per kind"
    return f"; {det.describe()}: use --format auto (the default) or --format {names[0]}"


def finalize_file(raw_path: str, final_path: str, bp_path: str) -> dict:
    """Per-shard step of the finalize pass (any executor): drop the corpus's boilerplate."""
    bp = pq.read_table(bp_path)
    bp_sentences = pc.filter(bp["key"], pc.equal(bp["kind"], "sentence")).combine_chunks()
    bp_sections = pc.filter(bp["key"], pc.equal(bp["kind"], "section")).combine_chunks()
    table = pq.read_table(raw_path)
    is_bp = pc.is_in(table["match"], value_set=bp_sentences)
    keys = pc.binary_join_element_wise(table["paper_id"], table["section"], "\x1f")
    in_bp_section = pc.is_in(keys, value_set=bp_sections)
    drop_section = pc.and_(in_bp_section, pc.invert(is_bp))
    kept = table.filter(pc.invert(pc.or_(is_bp, in_bp_section)))
    write_parquet_atomic(final_path, kept.replace_schema_metadata(table.schema.metadata))
    return {
        "boilerplate_sentence": int(pc.sum(is_bp).as_py() or 0),
        "boilerplate_section_sentence": int(pc.sum(drop_section).as_py() or 0),
        "kept": kept.num_rows,
    }
