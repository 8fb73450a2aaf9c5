"""The before/after artifact measurement on a real slice: seeded paper sample, ingest by a
source tree in its own process, rates and table."""

from __future__ import annotations

import json

from ratio.corpus.artifact_audit import (
    Rates,
    examples,
    ingest_with,
    measure,
    read_sentences,
    sample_papers,
    table,
)
from ratio.corpus.slices import first_lines
from ratio.corpus.text.artifacts import KINDS
from tests.conftest import REPO_ROOT


def test_sample_is_seeded_and_drawn_from_each_shard(neurips_slice, tmp_path):
    a = sample_papers(neurips_slice, tmp_path / "a", seed=32, per_shard=2, first=3)
    b = sample_papers(neurips_slice, tmp_path / "b", seed=32, per_shard=2, first=3)
    assert a == b and sorted(a) == ["neurips-2023-00.jsonl.zst", "neurips-2025-00.jsonl.zst"]
    for shard, ids in a.items():
        written = [json.loads(line)["id"] for line in first_lines(tmp_path / "a" / shard, 9)]
        assert written == ids and len(ids) == 2
        pool = [json.loads(line)["id"] for line in first_lines(neurips_slice / shard, 3)]
        assert set(ids) <= set(pool)


def test_ingest_with_a_source_tree_and_measure(neurips_slice, tmp_path):
    sample_papers(neurips_slice, tmp_path / "papers", seed=32, per_shard=1, first=3)
    folder = ingest_with(REPO_ROOT / "src", tmp_path / "papers", tmp_path / "run")
    sentences = read_sentences(folder)
    assert len(sentences) > 100
    rates = measure(sentences, seed=32, n_sample=50, n_examples=1)
    assert rates.n_sample == 50 and rates.n_every == len(sentences)
    assert measure(sentences, seed=32, n_sample=50, n_examples=1) == rates  # deterministic
    for kind, shown in rates.examples.items():
        assert kind in KINDS and len(shown) == 1
    lines = table(rates, rates).splitlines()
    assert len(lines) == 2 + len(KINDS) and "(n=50)" in lines[0]
    assert "before (" in examples(Rates(), rates)
