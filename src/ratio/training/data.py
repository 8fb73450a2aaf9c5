"""Training pairs, validation sets and hard negatives, read from the built benchmark.

Everything here is checked before a model is loaded, so a bad input (an empty or
one-pair training set, a relation without validation queries) fails in seconds
with a message naming the file, not after minutes of training.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ratio.core.io import RatioError
from ratio.core.layout import Benchmark
from ratio.core.records import RELATIONS
from ratio.evaluation.harness import sub_pool
from ratio.retrieval.bm25 import BM25Retriever
from ratio.retrieval.models import PREFIX_SETUPS, ModelSpec, prefixes


class TrainingError(RatioError):
    pass


# Query-side instructions of the unified relation-conditioned model. "short" names the
# operation; "sentence" states it the way instruction-tuned embedders are prompted.
INSTRUCTIONS: dict[str, dict[str, str]] = {
    "short": {r: f"{r}: " for r in RELATIONS},
    "sentence": {
        "address": "Instruct: Given a research problem, retrieve a sentence that addresses it.\n"
        "Query: ",
        "broaden": "Instruct: Given a research statement, retrieve a sentence that states it "
        "more broadly.\nQuery: ",
        "specify": "Instruct: Given a research statement, retrieve a sentence that gives a more "
        "specific case of it.\nQuery: ",
    },
}


def setup_prefixes(setup: str, spec: ModelSpec | None = None) -> tuple[str, str]:
    """(query, document) prefixes of a prefix setup, as the retrieval registry defines them."""
    if setup not in PREFIX_SETUPS:
        raise TrainingError(
            f"train.prefix must be one of {', '.join(PREFIX_SETUPS)}, got {setup!r}"
        )
    return prefixes(spec or ModelSpec("?"), setup)


def unified_prefixes(style: str) -> dict[str, str]:
    """Per-relation query prefix of the unified model (the instruction replaces the query prefix)."""
    if style not in INSTRUCTIONS:
        raise TrainingError(
            f"train.unified_instruction must be one of {', '.join(INSTRUCTIONS)}, got {style!r}"
        )
    return dict(INSTRUCTIONS[style])


@dataclass
class PairSet:
    """(anchor, positive[, negative]) training triples of raw texts, plus each anchor's prefix."""

    anchors: list[str]
    positives: list[str]
    query_prefixes: list[str]
    doc_prefix: str = ""
    negatives: list[str] | None = None
    relations: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.anchors)

    def columns(self) -> dict[str, list[str]]:
        """Prefixed columns in the order MultipleNegativesRankingLoss expects."""
        cols = {
            "anchor": [p + a for p, a in zip(self.query_prefixes, self.anchors, strict=True)],
            "positive": [self.doc_prefix + t for t in self.positives],
        }
        if self.negatives is not None:
            cols["negative"] = [self.doc_prefix + t for t in self.negatives]
        return cols

    def to_dataset(self):
        from datasets import Dataset

        return Dataset.from_dict(self.columns())


@dataclass
class EvalSet:
    """Queries (already prefixed) against a candidate pool (already prefixed), with qrels."""

    name: str
    query_ids: list[str]
    query_texts: list[str]
    relations: list[str]  # relation of each query
    qrels: dict[str, dict[str, int]]
    pool_ids: list[str]
    pool_texts: list[str]
    description: str = ""

    def summary(self) -> dict:
        return {
            "name": self.name,
            "n_queries": len(self.query_ids),
            "per_relation": {r: self.relations.count(r) for r in dict.fromkeys(self.relations)},
            "pool_size": len(self.pool_ids),
            "pool": self.description,
        }


def relation_pairs(bench: Benchmark, relation: str) -> tuple[list[str], list[str], list[str]]:
    """(query ids, query texts, gold candidate ids) of one relation, in file order."""
    if relation not in RELATIONS:
        raise TrainingError(f"unknown relation {relation!r}; use one of {', '.join(RELATIONS)}")
    q = bench.queries
    rels = q.column("relation").to_pylist()
    qids = q.column("query_id").to_pylist()
    texts = q.column("text").to_pylist()
    if "gold_id" in q.column_names:
        golds = q.column("gold_id").to_pylist()
    else:  # older benchmarks: one gold per query in qrels
        qr = bench.qrels
        pairs = (qr.column(c).to_pylist() for c in ("query_id", "candidate_id"))
        by_q = dict(zip(*pairs, strict=True))
        golds = [by_q.get(i) for i in qids]
    keep = [i for i, r in enumerate(rels) if r == relation and golds[i]]
    return [qids[i] for i in keep], [texts[i] for i in keep], [golds[i] for i in keep]


def sample_indices(n: int, cap: int, seed: int | np.random.Generator) -> np.ndarray:
    """A seeded sample of ``cap`` of ``range(n)``, sorted; all of them when ``cap`` is 0 or >= n
    (a Generator ``seed`` is drawn from as is)."""
    idx = np.arange(n)
    if cap and cap < n:
        idx = np.sort(np.random.default_rng(seed).choice(idx, size=cap, replace=False))
    return idx


def training_pairs(
    benches: Benchmark | Sequence[Benchmark],
    relations: list[str],
    *,
    query_prefixes: dict[str, str],
    doc_prefix: str,
    max_pairs: int = 0,
    seed: int = 13,
) -> PairSet:
    """The (query, gold) pairs of ``relations`` in one or more splits (in order), a seeded
    sample of ``max_pairs`` if set.

    Raises when fewer than two pairs remain: in-batch negatives need a second pair.
    """
    benches = [benches] if isinstance(benches, Benchmark) else list(benches)
    anchors, positives, prefs, rels = [], [], [], []
    where = " + ".join(str(b.files.queries) for b in benches)
    for bench in benches:
        texts = dict(zip(bench.candidate_ids, bench.candidate_texts, strict=True))
        for rel in relations:
            _, qtexts, golds = relation_pairs(bench, rel)
            missing = [g for g in golds if g not in texts]
            if missing:
                raise TrainingError(
                    f"{bench.files.queries}: {len(missing)} {rel} gold_id(s) absent from "
                    f"candidates.parquet, e.g. {missing[0]!r}"
                )
            anchors += qtexts
            positives += [texts[g] for g in golds]
            prefs += [query_prefixes[rel]] * len(qtexts)
            rels += [rel] * len(qtexts)
    if len(anchors) < 2:
        raise TrainingError(
            f"{where}: {len(anchors)} training pair(s) for {'+'.join(relations)}; contrastive "
            "training with in-batch negatives needs at least 2"
        )
    if max_pairs and max_pairs < 2:
        raise TrainingError(f"train.max_pairs must be 0 (all) or >= 2, got {max_pairs}")
    idx = sample_indices(len(anchors), max_pairs, seed)
    return PairSet(
        anchors=[anchors[i] for i in idx],
        positives=[positives[i] for i in idx],
        query_prefixes=[prefs[i] for i in idx],
        doc_prefix=doc_prefix,
        relations=[rels[i] for i in idx],
    )


def validation_set(
    bench: Benchmark,
    relations: list[str],
    *,
    query_prefixes: dict[str, str],
    doc_prefix: str,
    pool_size: int,
    max_queries: int = 0,
    seed: int = 13,
    name: str = "val",
) -> EvalSet:
    """Queries of ``relations`` vs a seeded sub-pool: all their golds + ``pool_size`` others.

    The sub-pool keeps CPU validation to minutes; it ranks golds against far fewer
    distractors than the full pool, so its MRR is higher than test MRR, but it is
    only used to compare checkpoints and trials of the same setup with each other.
    """
    qids, qtexts, qrels, qrels_rel = [], [], {}, []
    rng = np.random.default_rng(seed)
    for rel in relations:
        ids, texts, golds = relation_pairs(bench, rel)
        if not ids:
            raise TrainingError(
                f"{bench.files.queries}: no {rel} queries in the "
                f"{bench.split} split; checkpoint selection needs validation queries"
            )
        for i in sample_indices(len(ids), max_queries, rng):
            qids.append(ids[i])
            qtexts.append(query_prefixes[rel] + texts[i])
            qrels[ids[i]] = {golds[i]: 1}
            qrels_rel.append(rel)
    all_golds = {g for d in qrels.values() for g in d}
    all_ids = bench.candidate_ids
    missing = all_golds - set(all_ids)
    if missing:
        raise TrainingError(
            f"{bench.files.candidates}: {len(missing)} gold(s) of validation "
            f"queries missing, e.g. {sorted(missing)[0]!r}"
        )
    keep = sub_pool(all_ids, all_golds, len(all_golds) + pool_size, seed)
    all_texts = bench.candidate_texts
    pool_ids = [all_ids[i] for i in keep]
    pool_texts = [doc_prefix + all_texts[i] for i in keep]
    desc = (
        f"{bench.split} sub-pool of {len(pool_ids):,} (seed {seed}): {len(all_golds):,} golds + "
        f"{len(pool_ids) - len(all_golds):,} random others"
    )
    return EvalSet(name, qids, qtexts, qrels_rel, qrels, pool_ids, pool_texts, desc)


def mine_hard_negatives(
    bench: Benchmark, pairs: PairSet, *, k: int = 10, seed: int = 13
) -> PairSet:
    """Add one BM25 hard negative per pair: a seeded pick among the anchor's top-``k``
    non-gold candidates of the split's shared pool (distractor sentences included).

    A candidate whose text equals the gold's is never a negative (a false negative); an
    anchor whose top-k holds nothing else gets a seeded random pool sentence.
    """
    if k < 1:
        raise TrainingError(f"train.hard_negatives_k must be >= 1, got {k}")
    ids, texts = bench.candidate_ids, bench.candidate_texts
    bm25 = BM25Retriever()
    bm25.index(ids, texts)
    res = bm25.search(pairs.anchors, k + 1)
    text_of = dict(zip(ids, texts, strict=True))
    rng = np.random.default_rng(seed)
    negatives = []
    for row, pos in zip(res.doc_ids(), pairs.positives, strict=True):
        options = [text_of[str(c)] for c in row if c != "" and text_of[str(c)] != pos][:k]
        if not options:
            options = [texts[int(rng.integers(len(texts)))]]
        negatives.append(options[int(rng.integers(len(options)))])
    return dataclasses.replace(pairs, negatives=negatives)


def check_relation(relation: str) -> list[str]:
    """``all`` → every relation; otherwise the one relation, validated."""
    if relation == "all":
        return list(RELATIONS)
    if relation not in RELATIONS:
        raise TrainingError(
            f"unknown relation {relation!r}; use one of {', '.join(RELATIONS)} or all"
        )
    return [relation]
