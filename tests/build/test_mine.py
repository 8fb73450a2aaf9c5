from __future__ import annotations

import random

import pyarrow as pa

from ratio.build.mine import consecutive_pairs, marker_counts, mine_shard
from ratio.core import schemas
from tests.build.conftest import D1, G1, G2, Q1, Q2, sentence_rows, sentences_table


def test_pair_inside_paragraph_yields_query_marker_gold(matcher):
    t = sentences_table(sentence_rows("p1", 2023, [[Q1, G1]]))
    stats: dict = {}
    out = mine_shard(t, matcher, stats=stats)
    assert out.schema == schemas.PAIRS
    assert out.num_rows == 1
    row = out.to_pylist()[0]
    assert row["relation"] == "address"
    assert row["marker"] == "to address this issue"  # longest marker wins over "to address this"
    assert row["query"] == Q1
    assert row["gold"] == "We apply dropout to every attention layer."
    assert row["gold_match"] == "we apply dropout to every attention layer."
    assert (row["paper_id"], row["year"], row["paragraph_idx"], row["sentence_idx"]) == (
        "p1",
        2023,
        0,
        1,
    )
    assert stats["consecutive_pairs"] == 1 and stats["fired"] == {"to address this issue": 1}


def test_no_pair_across_paragraphs_or_papers(matcher):
    rows = sentence_rows("p1", 2023, [[Q1], [G1]])  # marker opens the next paragraph
    rows += sentence_rows("p2", 2023, [[G2]])  # first sentence of another paper
    rows += sentence_rows("p3", 2023, [[G1]])  # a paragraph that is only a marker sentence
    out = mine_shard(sentences_table(rows), matcher)
    assert out.num_rows == 0


def test_marker_sentence_at_paragraph_end_pairs_with_its_predecessor_only(matcher):
    rows = sentence_rows("p1", 2023, [[Q2, Q1, G1], [Q2, "Specifically,"]])
    out = mine_shard(sentences_table(rows), matcher)
    assert out.column("query").to_pylist() == [Q1]  # the bare marker at the end yields nothing


def test_gap_in_sentence_idx_breaks_the_pair(matcher):
    rows = sentence_rows("p1", 2023, [[Q1, G1], [Q2, G2]], sentence_idx=[[0, 2], [3, 4]])
    out = mine_shard(sentences_table(rows), matcher)
    assert out.column("query").to_pylist() == [Q2]


def test_row_order_does_not_matter(matcher):
    rows = sentence_rows("p1", 2023, [[Q1, G1, Q2, G2], [Q2, D1]]) + sentence_rows(
        "p0", 2024, [[Q2, G2]]
    )
    a = mine_shard(sentences_table(rows), matcher)
    random.Random(3).shuffle(rows)
    b = mine_shard(sentences_table(rows), matcher)
    assert a.equals(b)
    assert a.num_rows == 4


def test_distractor_marker_yields_candidate_without_query(matcher):
    out = mine_shard(sentences_table(sentence_rows("p1", 2025, [[Q2, D1]])), matcher)
    (row,) = out.to_pylist()
    assert (
        row["relation"] == "explicit_contrast"
        and row["query"] is None
        and row["query_match"] is None
    )
    assert row["gold"] == "Dense attention is exact but quadratic in length."


def test_short_query_or_gold_dropped(matcher):
    rows = sentence_rows("p1", 2023, [["Too short.", G1], [Q1, "For example, it is short."]])
    stats: dict = {}
    out = mine_shard(sentences_table(rows), matcher, min_chars=35, stats=stats)
    assert out.num_rows == 0
    assert stats["dropped_short_query"] == 1 and stats["dropped_short_gold"] == 1
    assert mine_shard(sentences_table(rows), matcher, min_chars=5).num_rows == 2


def test_consecutive_pairs_indices():
    rows = sentence_rows("a", 2023, [["s0", "s1", "s2"], ["t0"]]) + sentence_rows(
        "b", 2023, [["u0", "u1"]]
    )
    random.Random(0).shuffle(rows)
    t, first, second = consecutive_pairs(sentences_table(rows))
    texts = t["text"].to_pylist()
    pairs = [(texts[i], texts[j]) for i, j in zip(first, second, strict=True)]
    assert pairs == [("s0", "s1"), ("s1", "s2"), ("u0", "u1")]


def test_empty_and_single_row_tables(matcher):
    assert mine_shard(schemas.SENTENCES.empty_table(), matcher).num_rows == 0
    assert mine_shard(sentences_table(sentence_rows("p", 2023, [[G1]])), matcher).num_rows == 0


def test_marker_counts():
    t = pa.table({"marker": ["a", "b", "a"]})
    assert marker_counts(t) == {"a": 2, "b": 1}


def test_query_intro_clause_stripped_and_gold_list_prefix_cleaned(matcher):
    rows = sentence_rows(
        "p1",
        2023,
        [
            [
                "Moreover, the baseline forgets earlier tasks after fine-tuning.",
                "For example, firstly, k-means clusters collapse to a single centroid.",
            ]
        ],
    )
    (row,) = mine_shard(sentences_table(rows), matcher).to_pylist()
    assert row["query"] == "The baseline forgets earlier tasks after fine-tuning."
    assert row["gold"] == "k-means clusters collapse to a single centroid."  # mixed-case stays
    assert row["marker"] == "for example" and row["relation"] == "specify"


def test_gold_leading_into_removed_display_math_is_dropped_and_counted(matcher):
    gold = "Specifically, the update rule of the optimizer is given as"
    rows = sentence_rows("p1", 2023, [[Q2, gold], [Q2, G2]])
    rows[1]["math_after"] = True  # the cleanup removed the equation after it
    stats: dict = {}
    out = mine_shard(sentences_table(rows), matcher, stats=stats)
    assert out.column("gold").to_pylist() == [G2.removeprefix("For example, ").capitalize()]
    assert stats["dropped_invalid"] == {"gold_before_display_math": {"specify": 1}}
    assert stats["fired"]["specifically"] == 1 and "specifically" not in stats["kept"]


def test_complete_gold_before_display_math_is_kept(matcher):
    rows = sentence_rows("p1", 2023, [[Q2, G2]])
    rows[1]["math_after"] = True
    stats: dict = {}
    assert mine_shard(sentences_table(rows), matcher, stats=stats).num_rows == 1
    assert stats["dropped_invalid"] == {}


def test_unfinished_and_deferring_golds_dropped_per_rule(matcher):
    rows = sentence_rows(
        "p1",
        2023,
        [
            [Q1, "To address this issue, we make the following contributions."],
            [Q2, "For example, we define the weighted objective as follows:"],
            [Q1, "To address this, several effective methods have been proposed."],
        ],
    )
    stats: dict = {}
    assert mine_shard(sentences_table(rows), matcher, stats=stats).num_rows == 0
    assert stats["dropped_invalid"] == {
        "gold_deferral": {"address": 1},
        "gold_unfinished": {"specify": 1},
        "gold_vague_existence": {"address": 1},
    }


def test_sentence_shards_without_math_after_still_mine(matcher):
    """Runs ingested before the column existed: the flag reads as false."""
    t = sentences_table(sentence_rows("p1", 2023, [[Q1, G1]])).drop_columns(["math_after"])
    assert mine_shard(t, matcher).num_rows == 1
