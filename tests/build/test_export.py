from __future__ import annotations

import json

import pyarrow as pa
import pytest

from ratio.build.export import export_beir, load_beir
from ratio.build.split import split_pairs
from ratio.core import schemas
from ratio.core.config import SplitConfig
from tests.build.test_dedup import pair

CFG = SplitConfig(train_end="2023", validation_end="2024", test_end="2025")


@pytest.fixture
def benchmark(tmp_path):
    rows = [
        pair('Query about a train problem "quoted".', "Train\tgold with a tab.", "a", 2023),
        pair(
            "Another train query for specify.",
            "Train specify gold.",
            "a",
            2023,
            relation="specify",
            marker="for example",
        ),
        pair("Validation query here.", "Validation gold here.", "b", 2024),
        pair("Test address query.", "Test address gold, ünïcode.", "c", 2025),
        pair(
            "Test broaden query.",
            "Test broaden gold.",
            "c",
            2025,
            relation="broaden",
            marker="more generally",
        ),
        pair(None, "Test distractor.", "c", 2025, relation="common_irrelevant", marker="therefore"),
    ]
    split_pairs(pa.Table.from_pylist(rows, schema=schemas.PAIRS), tmp_path / "bench", CFG)
    return tmp_path / "bench"


def test_layout_and_round_trip(benchmark, tmp_path):
    out = tmp_path / "beir"
    counts = export_beir(benchmark, out)
    assert counts["test"]["address"] == {"corpus": 3, "queries": 1, "qrels": 1}
    assert counts["test"]["specify"] == {"corpus": 3, "queries": 0, "qrels": 0}
    for split in ("train", "validation", "test"):
        for rel in ("address", "broaden", "specify"):
            d = out / split / rel
            assert (d / "corpus.jsonl").exists() and (d / "queries.jsonl").exists()
            assert (d / "qrels" / f"{split}.tsv").read_text().splitlines()[
                0
            ] == "query-id\tcorpus-id\tscore"
    corpus, queries, qrels = load_beir(out / "train" / "address", "train")
    assert list(queries.values()) == ['Query about a train problem "quoted".']
    (qid,) = queries
    (cid,) = qrels[qid]
    assert corpus[cid] == {"text": "Train\tgold with a tab.", "title": ""}
    assert len(corpus) == 2  # the shared pool includes the specify gold
    line = json.loads((out / "test" / "address" / "corpus.jsonl").read_text().splitlines()[0])
    assert set(line) == {"_id", "title", "text"}
    # same pool file for every relation of a split
    assert (out / "test" / "address" / "corpus.jsonl").read_bytes() == (
        out / "test" / "broaden" / "corpus.jsonl"
    ).read_bytes()


def test_beir_generic_data_loader_reads_it(benchmark, tmp_path):
    loader = pytest.importorskip("beir.datasets.data_loader")
    out = tmp_path / "beir"
    export_beir(benchmark, out)
    for split in ("train", "test"):
        d = out / split / "address"
        got = loader.GenericDataLoader(data_folder=str(d)).load(split=split)
        assert got == load_beir(d, split)
        corpus, queries, qrels = got
        assert queries and all(c in corpus for q in qrels.values() for c in q)
