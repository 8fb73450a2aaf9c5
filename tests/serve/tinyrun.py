"""A tiny, real run directory for the serve tests: a few NeurIPS papers from the shared corpus.

Sentences are split naively (blank-line paragraphs, blingfire sentences) so the
fixture does not depend on the ingest stage; the files follow ``ratio.core.schemas``
exactly, which is all the serve engine reads.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ratio.core import schemas
from ratio.core.layout import candidate_id

REPO_ROOT = Path(__file__).resolve().parents[2]
NEURIPS = REPO_ROOT.parent / "shared" / "corpora" / "neurips"
MODELS = REPO_ROOT / "models"
ORIGINS = ("address", "broaden", "specify", "explicit_contrast")


def _papers(shard: Path, n: int) -> list[dict]:
    import zstandard

    out = []
    with open(shard, "rb") as fh:
        reader = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(fh), encoding="utf-8")
        for line in reader:
            out.append(json.loads(line))
            if len(out) >= n:
                break
    return out


def _sentences(paper: dict) -> list[dict]:
    from blingfire import text_to_sentences

    rows: list[dict] = []
    section, para_idx = "", 0
    for block in paper["text"].split("\n\n"):
        block = block.strip()
        if block.startswith("#"):
            section = block.lstrip("# ").strip()
            continue
        if len(block) < 120 or block.startswith(("|", "<", "$", "\\[", "!", "*")):
            continue
        if section.lower() in {"references", "acknowledgments", "acknowledgements"}:
            continue
        for s_idx, sent in enumerate(text_to_sentences(block).split("\n")):
            if 35 <= len(sent) <= 600:
                rows.append(
                    {
                        "paper_id": paper["id"],
                        "year": paper["year"],
                        "date": None,
                        "venue": paper.get("venue") or "NeurIPS",
                        "section": section,
                        "section_category": "introduction"
                        if "intro" in section.lower()
                        else "other",
                        "is_appendix": False,
                        "paragraph_idx": para_idx,
                        "sentence_idx": s_idx,
                        "text": sent,
                        "match": " ".join(sent.lower().split()),
                    }
                )
        para_idx += 1
    return rows


def make_tiny_run(
    root: Path, *, papers_per_year: int = 3, per_paper: int = 60, dense_model: str = ""
) -> Path:
    """Write ``root/run/{ingest,benchmark}`` and ``root/config.toml``; return the config path."""
    write_tiny_run(root / "run", papers_per_year=papers_per_year, per_paper=per_paper)
    cfg = root / "config.toml"
    systems = ""
    if dense_model:
        systems = (
            f'\n[[evaluate.systems]]\nname = "static"\nkind = "dense"\nmodel = "{dense_model}"\n'
        )
    cfg.write_text(
        # no shipped model: these runs test what the run's own records make `auto` serve
        f'name = "tiny"\n\n[build]\nout = "run"\n\n[serve]\nretriever = "bm25"\n'
        f'shipped = "none"\n{systems}',
        encoding="utf-8",
    )
    return cfg


def write_tiny_run(run: Path, *, papers_per_year: int = 3, per_paper: int = 60) -> Path:
    """Write ``run/{ingest,benchmark}``: what a build leaves that the serve engine reads.

    Splits: ``train`` holds 2023 papers, ``test`` 2025 papers. Candidates are every
    other sentence of each paper (up to ``per_paper``), so neighbours stay in the
    sentence shards for the context lookup. Each candidate of a move's origin is the gold of
    one query, the sentence before it (as a mined pair's query precedes its gold).
    """
    (run / "ingest" / "sentences").mkdir(parents=True, exist_ok=True)
    (run / "ingest" / "papers").mkdir(parents=True, exist_ok=True)
    for year, split in ((2023, "train"), (2025, "test")):
        shard = f"neurips-{year}-00"
        papers = _papers(NEURIPS / f"{shard}.jsonl.zst", papers_per_year)
        sents: list[dict] = []
        cands: list[dict] = []
        queries: list[dict] = []
        seen: set[str] = set()
        paper_rows = []
        for p in papers:
            rows = _sentences(p)
            sents += rows
            paper_rows.append(
                {
                    "paper_id": p["id"],
                    "title": p.get("title"),
                    "year": p["year"],
                    "date": None,
                    "venue": p.get("venue") or "NeurIPS",
                    "source": f"{shard}.jsonl.zst",  # the shard's name, as ingest records it
                    "n_sections": 0,
                    "n_paragraphs": max((r["paragraph_idx"] for r in rows), default=-1) + 1,
                    "n_sentences": len(rows),
                }
            )
            for i, r in enumerate(rows[1 : 2 * per_paper : 2]):
                cid = candidate_id(r["match"])
                if cid in seen:
                    continue
                seen.add(cid)
                if ORIGINS[i % len(ORIGINS)] != "explicit_contrast":
                    q = rows[2 * i]
                    queries.append(
                        {
                            "query_id": f"q-{cid}",
                            "text": q["text"],
                            "relation": ORIGINS[i % len(ORIGINS)],
                            "marker": "",
                            "paper_id": q["paper_id"],
                            "year": q["year"],
                            "section_category": q["section_category"],
                            "gold_id": cid,
                        }
                    )
                cands.append(
                    {
                        "candidate_id": cid,
                        "text": r["text"],
                        "paper_id": r["paper_id"],
                        "year": r["year"],
                        "section_category": r["section_category"],
                        "origin": ORIGINS[i % len(ORIGINS)],
                        "marker": "",
                        "paragraph_idx": r["paragraph_idx"],
                        "sentence_idx": r["sentence_idx"],
                    }
                )
        pq.write_table(
            pa.Table.from_pylist(sents, schema=schemas.SENTENCES),
            run / "ingest" / "sentences" / f"{shard}.parquet",
        )
        pq.write_table(
            pa.Table.from_pylist(paper_rows, schema=schemas.PAPERS),
            run / "ingest" / "papers" / f"{shard}.parquet",
        )
        bench = run / "benchmark" / split
        bench.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.Table.from_pylist(cands, schema=schemas.CANDIDATES), bench / "candidates.parquet"
        )
        pq.write_table(
            pa.Table.from_pylist(queries, schema=schemas.QUERIES), bench / "queries.parquet"
        )
        qrels = [
            {"query_id": q["query_id"], "candidate_id": q["gold_id"], "relevance": 1}
            for q in queries
        ]
        pq.write_table(pa.Table.from_pylist(qrels, schema=schemas.QRELS), bench / "qrels.parquet")
    return run
