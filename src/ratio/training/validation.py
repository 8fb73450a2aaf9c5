"""How training scores a model on the validation split: every epoch, trial and the BM25 floor
are compared on these metrics, which ``ratio.serve.trained`` reads back to pick a model.

Tested by tests/training/test_train.py, tests/training/test_unified.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ratio.core.config import SystemConfig
from ratio.metrics import Qrels, Ranking, evaluate
from ratio.retrieval.base import build_retriever, top_k_rows
from ratio.training.data import EvalSet

METRICS = ("recall@1", "recall@10", "mrr@10", "mrr@100")
PRIMARY = "mrr@10"


def relation_metric(relation: str, metric: str = PRIMARY) -> str:
    """The key of one relation's ``metric`` in a multi-relation record (see :func:`ranking_metrics`)."""
    return f"{relation}_{metric}"


def encode(model: Any, texts: Sequence[str], batch_size: int) -> np.ndarray:
    kw = {"convert_to_numpy": True, "normalize_embeddings": True, "show_progress_bar": False}
    return np.asarray(model.encode(list(texts), batch_size=batch_size, **kw), dtype=np.float32)


def ranking_metrics(
    ranking: Any,
    query_ids: Sequence[str],
    qrels: dict[str, dict[str, int]],
    relations: Sequence[str] | None = None,
) -> dict[str, float]:
    """METRICS of a ranking; with several relations also per relation (:func:`relation_metric`
    keys), the plain metrics then being their macro average (Broaden weighs as much as Specify)."""
    rels = list(dict.fromkeys(relations or []))
    if relations is None or len(rels) <= 1:
        return evaluate(Qrels.from_dict(qrels), ranking, METRICS)
    out: dict[str, float] = {}
    for rel in rels:
        sub = {qid: qrels[qid] for qid, r in zip(query_ids, relations, strict=True) if r == rel}
        for m, v in evaluate(Qrels.from_dict(sub), ranking, METRICS).items():
            out[relation_metric(rel, m)] = v
    for m in METRICS:
        out[m] = float(np.mean([out[relation_metric(rel, m)] for rel in rels]))
    return out


def evaluate_model(model: Any, evalset: EvalSet, batch_size: int = 128) -> dict[str, float]:
    """R@1, R@10, MRR@10, MRR@100 of exact cosine ranking, 100 deep (see :func:`ranking_metrics`)."""
    d = encode(model, evalset.pool_texts, batch_size)
    q = encode(model, evalset.query_texts, batch_size)
    k = min(100, len(evalset.pool_ids))
    idx = np.zeros((len(q), k), dtype=np.int64)
    sc = np.zeros((len(q), k), dtype=np.float32)
    for s in range(0, len(q), 1024):
        idx[s : s + 1024], sc[s : s + 1024] = top_k_rows(q[s : s + 1024] @ d.T, k)
    run = Ranking.from_arrays(list(evalset.query_ids), np.asarray(evalset.pool_ids), idx, sc)
    return ranking_metrics(run, evalset.query_ids, evalset.qrels, evalset.relations)


def bm25_validation(
    vs: EvalSet, query_prefixes: dict[str, str], doc_prefix: str
) -> dict[str, float]:
    """BM25-unigram on a validation set (prefixes stripped): the floor a trained model must
    clear before ``auto`` serves it."""
    queries = [
        t[len(query_prefixes[r]) :] for t, r in zip(vs.query_texts, vs.relations, strict=True)
    ]
    r = build_retriever(SystemConfig(name="bm25", kind="bm25"))
    r.index(list(vs.pool_ids), [t[len(doc_prefix) :] for t in vs.pool_texts])
    run = r.search(queries, min(100, len(vs.pool_ids)), vs.query_ids)
    return ranking_metrics(run, vs.query_ids, vs.qrels, vs.relations)
