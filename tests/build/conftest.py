"""Tiny sentence tables and lexicons for build tests (no shared corpus, no shipped data)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from ratio.core import schemas
from ratio.core.io import write_parquet_atomic

LEXICON_TSV = """# version: 0.0.1-test
marker\trelation\tsource\tnotes
to address this issue\taddress\tmanual\t
to address this\taddress\textendable\t
to mitigate this limitation\taddress\tllm\t
more generally\tbroaden\tmanual\t
for example\tspecify\tmanual\t
for instance\tspecify\tmanual\t
specifically\tspecify\tmanual\t
on the other hand\texplicit_contrast\tmanual\t
similarly\texplicit_similarity\tmanual\t
therefore\tcommon_irrelevant\tmanual\t
"""


def sentence_rows(
    paper_id: str,
    year: int | None,
    paragraphs: list[list[str]],
    date: str | None = None,
    start_para: int = 0,
    sentence_idx: list[list[int]] | None = None,
) -> list[dict]:
    """Rows in SENTENCES shape: one list of sentences per paragraph."""
    rows = []
    for p, sents in enumerate(paragraphs):
        for s, text in enumerate(sents):
            rows.append(
                {
                    "paper_id": paper_id,
                    "year": year,
                    "date": date,
                    "venue": "TestConf",
                    "section": "Method",
                    "section_category": "method",
                    "is_appendix": False,
                    "paragraph_idx": start_para + p,
                    "sentence_idx": sentence_idx[p][s] if sentence_idx else s,
                    "text": text,
                    "match": " ".join(text.lower().split()),
                }
            )
    return rows


def sentences_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schemas.SENTENCES)


@pytest.fixture
def lexicon_path(tmp_path: Path) -> Path:
    p = tmp_path / "lex" / "lexicon.tsv"
    p.parent.mkdir()
    p.write_text(LEXICON_TSV, encoding="utf-8")
    return p


@pytest.fixture
def matcher(lexicon_path: Path):
    from ratio.lexicon import MarkerMatcher, load_lexicon

    return MarkerMatcher(load_lexicon(lexicon_path))


# Sentences long enough (>= 35 chars) to survive the short-sentence filter.
Q1 = "Our model is prone to overfitting on small training sets."
G1 = "To address this issue, we apply dropout to every attention layer."
Q2 = "Sparse attention reduces memory use on long input sequences."
G2 = "For example, a sliding window keeps only local interactions per token."
D1 = "On the other hand, dense attention is exact but quadratic in length."


def write_shard(dir_: Path, name: str, rows: list[dict]) -> Path:
    p = dir_ / f"{name}.parquet"
    write_parquet_atomic(p, sentences_table(rows))
    return p
