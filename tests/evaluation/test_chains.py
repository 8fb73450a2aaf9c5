"""Two-hop pairs mined from a benchmark in the real schemas, and a chain measured with BM25."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ratio.core.config import SystemConfig
from ratio.core.layout import Benchmark
from ratio.evaluation.chains import measure_chains, two_hop_pairs
from ratio.retrieval.store import IndexStore, Pool, slug

QUERY = "Membership inference attacks reveal whether a record was in the training set."
MID = "For example, membership inference attacks train shadow models on auxiliary data."
END = "Concretely, each shadow model imitates its target on disjoint auxiliary splits."
OTHERS = [
    "Membership of a record matters for auditing privacy.",
    "Diffusion models generate images from noise.",
    "We report accuracy on five benchmarks.",
]


def _bench(mid_paper: str = "p1") -> Benchmark:
    cands = [("c1", MID, mid_paper), ("c2", END, "p1")]
    cands += [(f"o{i}", t, "p2") for i, t in enumerate(OTHERS)]
    candidates = pa.table(
        {
            "candidate_id": [c[0] for c in cands],
            "text": [c[1] for c in cands],
            "paper_id": [c[2] for c in cands],
        }
    )
    queries = pa.table(
        {
            "query_id": ["q1", "q2", "q3"],
            "text": [QUERY, MID, "Diffusion models are slow to sample."],
            "relation": ["specify", "specify", "address"],
            "paper_id": ["p1", "p1", "p2"],
            "gold_id": ["c1", "c2", "o1"],
        }
    )
    qrels = pa.table({"query_id": ["q1", "q2", "q3"], "candidate_id": ["c1", "c2", "o1"]})
    return Benchmark("test", Path("."), queries, candidates, qrels)


def test_a_gold_that_starts_another_pair_of_its_paper_makes_a_two_hop_pair():
    (hop,) = two_hop_pairs(_bench())
    assert (hop.kind, hop.query_id, hop.mid_id, hop.end_id) == ("specify>specify", "q1", "c1", "c2")
    # the same text in another paper is another sentence: no chain
    assert two_hop_pairs(_bench(mid_paper="p9")) == []


def test_the_chain_reaches_an_end_the_direct_move_misses(tmp_path):
    bench = _bench()
    ids = bench.candidates.column("candidate_id").to_pylist()
    pool = Pool("shared", "tiny", ids, bench.candidates.column("text").to_pylist())
    systems = {"bm25": SystemConfig(name="bm25", kind="bm25")}
    store = IndexStore(systems, folder=lambda name, p: tmp_path / slug(name) / p.key)
    (row,) = measure_chains(store, pool, two_hop_pairs(bench), lambda move: "bm25", k=1)
    assert row["chain"] == "specify → specify" and row["n"] == 1
    assert row["first_step_found_mid@1"] == 1.0
    assert row["chain_recall@1"] == 1.0 and row["chain_with_true_mid_recall@1"] == 1.0
    assert row["direct_specify_recall@1"] == 0.0  # BM25 from the query finds the middle


def test_no_two_hop_pairs_measure_nothing(tmp_path):
    store = IndexStore({}, folder=lambda name, p: tmp_path)
    assert measure_chains(store, Pool("shared", "", [], []), [], lambda m: "bm25") == []
