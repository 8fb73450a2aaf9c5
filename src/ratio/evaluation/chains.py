"""Two-hop chains the benchmark already holds, and whether a chain of moves reaches their end.

A pair's gold sentence is sometimes the query of another pair: "q; for example, g" and then
"g; in particular, e" (Specify → Specify), or "g; to address this, e" (Specify → Address). Such
a two-hop pair tests what a move chain promises: applied to ``q``, the first move should find
``g`` and the second, applied to what the first found, ``e``. It is measured against the
shortcut, the end retrieved from ``q`` directly by one move, since a chain is only worth its
extra step where it finds what one move does not.

Tested by tests/evaluation/test_chains.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ratio.core.layout import Benchmark
from ratio.retrieval.store import IndexedPool, IndexStore


@dataclass(frozen=True)
class TwoHop:
    """``query`` -first-> ``mid`` -second-> ``end``; ``mid`` is a candidate and a query."""

    first: str
    second: str
    query_id: str
    query: str
    mid_id: str
    mid: str
    end_id: str

    @property
    def kind(self) -> str:
        return f"{self.first}>{self.second}"


def two_hop_pairs(bench: Benchmark) -> list[TwoHop]:
    """Every two-hop pair of one split, in query file order. A gold is matched to the pair it
    starts by paper and text: a query and a candidate are the same sentence when both agree
    (ids differ, since queries and candidates are numbered apart)."""
    q = bench.queries.to_pydict()
    texts = dict(
        zip(
            bench.candidates.column("candidate_id").to_pylist(),
            bench.candidates.column("text").to_pylist(),
            strict=True,
        )
    )
    papers = dict(
        zip(
            bench.candidates.column("candidate_id").to_pylist(),
            bench.candidates.column("paper_id").to_pylist(),
            strict=True,
        )
    )
    starts: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (paper, text) in enumerate(zip(q["paper_id"], q["text"], strict=True)):
        starts[(paper, text)].append(i)
    out: list[TwoHop] = []
    for i, gold in enumerate(q["gold_id"]):
        mid = texts.get(gold)
        if mid is None:
            continue
        for j in starts.get((papers[gold], mid), []):
            if q["gold_id"][j] in (gold, None) or j == i:
                continue
            out.append(
                TwoHop(
                    q["relation"][i],
                    q["relation"][j],
                    q["query_id"][i],
                    q["text"][i],
                    gold,
                    mid,
                    q["gold_id"][j],
                )
            )
    return out


def _top(
    store: IndexStore,
    system: str,
    pool: IndexedPool,
    queries: Sequence[str],
    k: int,
    drop: Sequence[set[str]],
) -> list[list[str]]:
    """Each query's top ``k`` ids, leaving out the ids in its ``drop`` set (the sentence it is,
    and the chain's earlier steps: a chain does not stand still)."""
    run = store.rank(system, pool, list(queries), k + max((len(d) for d in drop), default=0))
    ids = run.doc_ids()
    return [[c for c in row if c and c not in d][:k] for row, d in zip(ids, drop, strict=True)]


def measure_chains(
    store: IndexStore,
    pool: IndexedPool,
    hops: Sequence[TwoHop],
    system_of: Callable[[str], str],
    *,
    k: int = 10,
) -> list[dict[str, Any]]:
    """Per chain kind: Recall@k of the end through the chain (the first move's top hit, then
    the second move on it), through the chain with the true middle (an upper bound: the first
    step chose right), and directly from the query by the second move and by the first.
    ``system_of(move)`` is the store system that ranks for a move."""
    by_kind: dict[tuple[str, str], list[TwoHop]] = defaultdict(list)
    for h in hops:
        by_kind[(h.first, h.second)].append(h)
    pool_text = dict(zip(pool.ids, pool.texts, strict=True))
    by_text = {t: i for i, t in zip(pool.ids, pool.texts, strict=True)}
    rows = []
    for (first, second), hs in sorted(by_kind.items()):
        own = [{i for i in (by_text.get(h.query),) if i} for h in hs]
        step1 = _top(store, system_of(first), pool, [h.query for h in hs], k, own)
        chosen = [top[0] if top else "" for top in step1]
        picked = [(pool_text[c] if c else h.query) for c, h in zip(chosen, hs, strict=True)]
        path = [o | {c} for o, c in zip(own, chosen, strict=True)]
        chain = _top(store, system_of(second), pool, picked, k, path)
        oracle_path = [o | {h.mid_id} for o, h in zip(own, hs, strict=True)]
        oracle = _top(store, system_of(second), pool, [h.mid for h in hs], k, oracle_path)
        direct2 = _top(store, system_of(second), pool, [h.query for h in hs], k, own)
        direct1 = step1 if first == second else None
        if direct1 is None:
            direct1 = _top(store, system_of(first), pool, [h.query for h in hs], k, own)

        ends = [h.end_id for h in hs]

        def recall(lists: list[list[str]], ends=ends) -> float:
            return float(np.mean([e in top for e, top in zip(ends, lists, strict=True)]))

        rows.append(
            {
                "chain": f"{first} → {second}",
                "n": len(hs),
                "first_step_found_mid@1": float(
                    np.mean([c == h.mid_id for c, h in zip(chosen, hs, strict=True)])
                ),
                f"chain_recall@{k}": recall(chain),
                f"chain_with_true_mid_recall@{k}": recall(oracle),
                f"direct_{second}_recall@{k}": recall(direct2),
                f"direct_{first}_recall@{k}": recall(direct1),
            }
        )
    return rows
