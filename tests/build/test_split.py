from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ratio.build.split import boundaries, check_leakage, parse_boundary, split_pairs
from ratio.core import schemas
from ratio.core.config import ConfigError, SplitConfig, load_config
from ratio.core.layout import candidate_id, query_id
from tests.build.test_dedup import pair

YEARS = SplitConfig(train_end="2023", validation_end="2024", test_end="2025")


def read(d, split, name):
    t = pq.read_table(d / split / f"{name}.parquet")
    return t


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("2023", dt.date(2023, 12, 31)),
        ("2024-02", dt.date(2024, 2, 29)),
        ("2025-09-30", dt.date(2025, 9, 30)),
        (2023, dt.date(2023, 12, 31)),
    ],
)
def test_parse_boundary(value, want):
    assert parse_boundary(value, "train_end") == want


@pytest.mark.parametrize("value", ["23", "2024-13", "2024-02-30", "Sept 2025", ""])
def test_bad_boundary_names_the_key(value):
    with pytest.raises(ConfigError, match=r"\[split\] validation_end"):
        boundaries(SplitConfig(train_end="2023", validation_end=value, test_end="2025"))


@pytest.mark.parametrize(
    ("train", "val", "test", "match"),
    [
        ("2024", "2023", "2025", "train_end .* before validation_end"),
        (
            "2024",
            "2024-12-31",
            "2025",
            "train_end .* before validation_end",
        ),  # same day: empty validation
        ("2023", "2025", "2025-06", "validation_end .* before test_end"),
    ],
)
def test_overlapping_or_inverted_boundaries_rejected(train, val, test, match):
    with pytest.raises(ConfigError, match=match):
        boundaries(SplitConfig(train_end=train, validation_end=val, test_end=test))


def test_split_config_via_toml_is_validated_before_work(tmp_path):
    from ratio.build import build

    p = tmp_path / "run.toml"
    p.write_text('[split]\ntrain_end = "2025"\nvalidation_end = "2024"\n[build]\nout = "x"\n')
    with pytest.raises(ConfigError, match="train_end"):
        build(load_config(p))
    assert not (tmp_path / "x").exists()


def rows_by_year():
    return [
        pair("Train query number one is long enough.", "Train gold one.", "a", 2023, para=1),
        pair("Validation query is long enough here.", "Validation gold.", "b", 2024),
        pair(
            "Test query is long enough for the filter.",
            "Test gold.",
            "c",
            2025,
            relation="specify",
            marker="for example",
        ),
        pair(
            "Test query two asks something new.",
            "Test gold.",
            "d",
            2025,
            relation="broaden",
            marker="more generally",
        ),  # shares its gold with the other test query
        pair(
            None,
            "A test distractor sentence.",
            "c",
            2025,
            relation="explicit_contrast",
            marker="in contrast",
        ),
        pair("Too new a query for any split.", "Future gold.", "e", 2026),
        pair("An undated query with no year.", "Undated gold.", "f", None),
        pair("Month dated query placed at end.", "Month gold.", "g", None, date="2024-02"),
    ]


def test_split_assignment_pools_ids_and_qrels(tmp_path):
    res = split_pairs(pa.Table.from_pylist(rows_by_year(), schema=schemas.PAIRS), tmp_path, YEARS)
    assert res.excluded == {"no_date": 1, "after_test_end": 1}
    q = read(tmp_path, "test", "queries").cast(schemas.QUERIES).to_pylist()
    c = read(tmp_path, "test", "candidates").cast(schemas.CANDIDATES).to_pylist()
    r = read(tmp_path, "test", "qrels").cast(schemas.QRELS).to_pylist()
    assert sorted(x["relation"] for x in q) == ["broaden", "specify"]
    # one pool: the shared gold once (origin of its earliest row: paper "c"), plus the distractor
    assert sorted((x["text"], x["origin"]) for x in c) == [
        ("A test distractor sentence.", "explicit_contrast"),
        ("Test gold.", "specify"),
    ]
    gold = candidate_id("test gold.")
    assert {x["candidate_id"] for x in c} == {gold, candidate_id("a test distractor sentence.")}
    assert {x["gold_id"] for x in q} == {gold}
    assert sorted(x["query_id"] for x in q) == sorted(
        [
            query_id("specify", "test query is long enough for the filter.", "test gold."),
            query_id("broaden", "test query two asks something new.", "test gold."),
        ]
    )
    assert sorted((x["query_id"], x["candidate_id"], x["relevance"]) for x in r) == sorted(
        (x["query_id"], gold, 1) for x in q
    )
    # a year-month date sits at the month's end: 2024-02 -> validation under year boundaries
    vq = read(tmp_path, "validation", "queries")["text"].to_pylist()
    assert sorted(vq) == [
        "Month dated query placed at end.",
        "Validation query is long enough here.",
    ]
    assert res.counts["train"]["queries"] == {"address": 1}
    assert res.counts["test"]["candidates_total"] == 2


def test_year_only_papers_fall_after_a_mid_year_boundary(tmp_path):
    cfg = SplitConfig(train_end="2024-09-30", validation_end="2024-12-31", test_end="2025")
    split_pairs(pa.Table.from_pylist(rows_by_year(), schema=schemas.PAIRS), tmp_path, cfg)
    # year 2024 -> 2024-12-31 > 2024-09-30: validation, never train
    assert (
        "Validation query is long enough here."
        in read(tmp_path, "validation", "queries")["text"].to_pylist()
    )


def test_leakage_dropped_from_later_split_and_final_leakage_zero(tmp_path):
    rows = [
        pair("Shared problem statement appears in train.", "Train answer sentence.", "a", 2023),
        # the same query text with another gold in validation: the query leaks
        pair("Shared problem statement appears in train.", "Another answer sentence.", "b", 2024),
        # a test gold that is a train candidate text
        pair("A fresh test query sentence here.", "Train answer sentence.", "c", 2025),
        # a test distractor equal to a train query
        pair(
            None,
            "Shared problem statement appears in train.",
            "c",
            2025,
            relation="explicit_contrast",
            marker="in contrast",
        ),
        # a test query equal to a validation gold: leaks into the later split only
        pair("Another answer sentence.", "A clean test gold sentence.", "d", 2025),
        pair("Clean test query stays in test.", "Clean test gold stays.", "e", 2025),
    ]
    res = split_pairs(pa.Table.from_pylist(rows, schema=schemas.PAIRS), tmp_path, YEARS)
    assert res.leakage_dropped == {
        "validation": {"pairs": 1, "distractors": 0},
        "test": {"pairs": 1, "distractors": 1},
    }
    assert res.final_leakage == 0
    assert check_leakage(tmp_path) == 0
    assert read(tmp_path, "validation", "queries").num_rows == 0
    # the validation pair was dropped, so "Another answer sentence." is no longer seen: d stays
    assert sorted(read(tmp_path, "test", "queries")["text"].to_pylist()) == [
        "Another answer sentence.",
        "Clean test query stays in test.",
    ]


def test_written_schemas_match(tmp_path):
    split_pairs(pa.Table.from_pylist(rows_by_year(), schema=schemas.PAIRS), tmp_path, YEARS)
    for name, schema in (
        ("queries", schemas.QUERIES),
        ("candidates", schemas.CANDIDATES),
        ("qrels", schemas.QRELS),
    ):
        got = pq.read_schema(tmp_path / "test" / f"{name}.parquet")
        assert [(f.name, f.type) for f in got] == [(f.name, f.type) for f in schema]
