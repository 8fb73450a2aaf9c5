"""A tiny benchmark written in the real schemas, and a config that trains on it fast."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from ratio.core import schemas
from ratio.core.config import load_config
from ratio.core.io import write_parquet_atomic
from ratio.core.layout import candidate_id, query_id
from tests.conftest import MODELS

STATIC = MODELS / "potion-mpnet-256"
TOPICS = [
    "graph neural networks",
    "diffusion models",
    "reinforcement learning",
    "federated learning",
    "contrastive learning",
    "sparse attention",
    "bayesian optimization",
    "knowledge distillation",
    "adversarial robustness",
    "causal inference",
    "meta learning",
    "neural architecture search",
    "optimal transport",
    "speech recognition",
    "protein folding",
    "image segmentation",
    "language modeling",
    "active learning",
    "domain adaptation",
    "model compression",
    "time series forecasting",
    "point cloud processing",
    "text summarization",
    "link prediction",
    "anomaly detection",
    "question answering",
    "recommender systems",
    "object tracking",
    "variational inference",
    "kernel methods",
    "curriculum learning",
    "program synthesis",
    "machine translation",
    "pose estimation",
    "gaussian processes",
    "energy based models",
    "spiking networks",
    "continual learning",
    "few shot classification",
    "data augmentation",
    "multi agent systems",
    "quantization",
    "neural rendering",
    "symbolic regression",
    "graph matching",
    "tabular learning",
    "video prediction",
    "music generation",
]
PATTERNS = {
    "address": (
        "Training {t} remains unstable and expensive.",
        "To fix this, we regularize {t} with a simple penalty.",
    ),
    "broaden": (
        "We evaluate {t} on three benchmarks.",
        "More generally, {t} is a family of learning methods.",
    ),
    "specify": (
        "We study {t} in general settings.",
        "For example, {t} can be applied to small datasets.",
    ),
}


def write_split(root: Path, split: str, per_relation: dict[str, int], seed: int) -> None:
    """One split: queries/candidates/qrels for the given number of pairs per relation."""
    rng = random.Random(seed)
    queries, cands, qrels, paper = [], {}, [], {}
    topics = TOPICS[:]
    rng.shuffle(topics)
    i = 0
    for rel, n in per_relation.items():
        q_pat, g_pat = PATTERNS[rel]
        for _ in range(n):
            t = topics[i % len(topics)] + ("" if i < len(topics) else f" variant {i}")
            i += 1
            q, g = q_pat.format(t=t), g_pat.format(t=t)
            cid = candidate_id(g.lower())
            qid = query_id(rel, q, g)
            queries.append(
                dict(
                    query_id=qid,
                    text=q,
                    relation=rel,
                    marker="m",
                    paper_id=f"p{i % 7}",  # seven papers, so a split by paper has two sides
                    year=2020,
                    section_category="method",
                    gold_id=cid,
                )
            )
            cands[cid] = g
            paper[cid] = f"p{i % 7}"
            qrels.append(dict(query_id=qid, candidate_id=cid, relevance=1))
    for j in range(20):  # distractors: never golds
        t = f"Distractor sentence {j} about {topics[j % len(topics)]} and unrelated tables."
        cands[candidate_id(t.lower())] = t
    rows = [
        dict(
            candidate_id=c,
            text=t,
            paper_id=paper.get(c, f"p{k % 7}"),
            year=2020,
            section_category="method",
            origin="specify",
            marker="m",
            paragraph_idx=0,
            sentence_idx=k,
        )
        for k, (c, t) in enumerate(cands.items())
    ]
    d = root / "benchmark" / split
    d.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(d / "queries.parquet", pa.Table.from_pylist(queries, schemas.QUERIES))
    write_parquet_atomic(d / "candidates.parquet", pa.Table.from_pylist(rows, schemas.CANDIDATES))
    write_parquet_atomic(d / "qrels.parquet", pa.Table.from_pylist(qrels, schemas.QRELS))


def write_benchmark(root: Path, train: dict[str, int], validation: dict[str, int]) -> Path:
    write_split(root, "train", train, 1)
    write_split(root, "validation", validation, 2)
    write_split(root, "test", validation, 3)
    return root


def make_config(root: Path, **train):
    overrides = {
        "build.out": str(root),
        "train.base_model": str(STATIC),
        "train.out": str(root / "models"),
        "train.grid": [{"epochs": 1, "batch_size": 8, "lr": 0.05}],
        "train.val_pool": 10,
        "train.eval_batch_size": 64,
        "train.precision": "fp32",  # "auto" would pick bf16 on some CPUs: results would differ
    }
    overrides.update({f"train.{k}": v for k, v in train.items()})
    return load_config(None, overrides)


@pytest.fixture
def static_model() -> Path:
    if not (STATIC / "config.json").is_file():
        pytest.skip(f"static model not found at {STATIC}")
    return STATIC


@pytest.fixture
def tiny_bench(tmp_path) -> Path:
    return write_benchmark(
        tmp_path / "run",
        {"address": 32, "broaden": 1, "specify": 16},
        {"address": 12, "broaden": 0, "specify": 8},
    )
