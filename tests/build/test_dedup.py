from __future__ import annotations

import random

import pyarrow as pa

from ratio.build.dedup import dedup_files, dedup_table
from ratio.core import schemas
from ratio.core.io import write_parquet_atomic


def pair(
    q, g, paper, year, relation="address", marker="to address this", date=None, para=0, sent=1
):
    def norm(s):
        return None if s is None else " ".join(s.lower().split())

    return {
        "relation": relation,
        "marker": marker,
        "query": q,
        "gold": g,
        "query_match": norm(q),
        "gold_match": norm(g),
        "paper_id": paper,
        "year": year,
        "date": date,
        "section_category": "method",
        "paragraph_idx": para,
        "sentence_idx": sent,
    }


ROWS = [
    pair("Problem A is hard.", "We solve A.", "p2", 2024),
    pair("problem a  is HARD.", "we solve a.", "p1", 2023),  # same pair, normalized; earlier
    pair("Problem A is hard.", "We solve A differently.", "p3", 2025),  # different gold: kept
    pair("Problem A is hard.", "We solve A.", "p0", 2023, date="2023-06-01", relation="address"),
    pair(
        None,
        "In contrast, B differs.",
        "p5",
        2024,
        relation="explicit_contrast",
        marker="in contrast",
    ),
    pair(
        None,
        "in contrast,  b differs.",
        "p4",
        2024,
        relation="explicit_contrast",
        marker="in contrast",
    ),
    pair(
        None,
        "We solve A differently.",
        "p6",
        2022,
        relation="common_irrelevant",
        marker="therefore",
    ),
]


def table(rows):
    return pa.Table.from_pylist(rows, schema=schemas.PAIRS)


def test_pairs_and_candidates_deduplicated_keeping_the_earliest():
    out, stats = dedup_table(table(ROWS))
    rows = out.to_pylist()
    rel = [r for r in rows if r["query"] is not None]
    dis = [r for r in rows if r["query"] is None]
    # "Problem A / We solve A" appears 3 times: p0 has a full date 2023-06-01, before p1's year 2023
    # (placed on 2023-12-31), so p0 wins.
    assert sorted((r["paper_id"], r["gold"]) for r in rel) == [
        ("p0", "We solve A."),
        ("p3", "We solve A differently."),
    ]
    # distractor duplicates collapse to the smaller paper_id at equal dates; one equal to a gold goes
    assert [r["paper_id"] for r in dis] == ["p4"]
    assert stats == {
        "input_pairs": 4,
        "input_distractors": 3,
        "pairs": 2,
        "distractors": 1,
        "duplicate_pairs": 2,
        "duplicate_distractors": 1,
        "distractors_equal_to_a_gold": 1,
    }
    assert out.schema == schemas.PAIRS


def test_dedup_is_independent_of_input_order():
    a, _ = dedup_table(table(ROWS))
    shuffled = ROWS[:]
    random.Random(1).shuffle(shuffled)
    b, _ = dedup_table(table(shuffled))
    assert a.equals(b)


def test_dedup_files_matches_in_memory(tmp_path):
    write_parquet_atomic(tmp_path / "a.parquet", table(ROWS[:3]))
    write_parquet_atomic(tmp_path / "b.parquet", table(ROWS[3:]))
    stats = dedup_files(
        [tmp_path / "a.parquet", tmp_path / "b.parquet"],
        tmp_path / "out.parquet",
        metadata={"ratio.stage": "dedup"},
    )
    import pyarrow.parquet as pq

    from ratio.core.io import read_parquet_metadata

    got = pq.read_table(tmp_path / "out.parquet").cast(schemas.PAIRS)
    want, want_stats = dedup_table(table(ROWS))
    assert got.equals(want) and stats == want_stats
    assert read_parquet_metadata(tmp_path / "out.parquet")["ratio.stage"] == "dedup"
