"""Precision tiers through the build: needs_validation test queries wait for the silver set."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ratio.build import build
from ratio.core.io import write_parquet_atomic
from ratio.core.layout import HELD_QUERIES
from ratio.lexicon import load_lexicon
from ratio.lexicon.tiers import TiersError, format_thresholds, load_tiers, parse_thresholds
from tests.build.conftest import G1, Q1, sentence_rows, sentences_table
from tests.build.test_pipeline import make_run

HEADER = (
    "# threshold: 0.85\n# min_audited: 10\nmarker\trelation\ttier\taudited\tvalid\tprecision\t"
    "wilson_low\twilson_high\tdropped_by_rules\n"
)


def _tiers(lexicon_path: Path, rows: str) -> Path:
    p = lexicon_path.parent / "tiers.tsv"
    p.write_text(HEADER + rows, encoding="utf-8")
    return p


def test_lexicon_directory_tiers_and_shipped_tiers(lexicon_path):
    _tiers(
        lexicon_path,
        "for example\tspecify\tneeds_validation\t12\t8\t0.667\t0.39\t0.86\t0\n"
        "specifically\tspecify\tcore\t30\t28\t0.933\t0.79\t0.98\t1\n"
        "on the other hand\texplicit_contrast\tneeds_validation\t10\t1\t0.1\t0\t0.4\t0\n"
        "not in this lexicon\taddress\tneeds_validation\t10\t1\t0.1\t0\t0.4\t0\n",
    )
    lex = load_lexicon(lexicon_path.parent)  # a directory: tiers.tsv is not a lexicon file
    assert len(lex) == len(load_lexicon(lexicon_path))
    assert lex.tier_of("For example,") == "needs_validation"
    assert lex.tier_of("specifically") == "core" and lex.tier_of("for instance") == "core"
    # only relation markers of this lexicon are held back
    assert lex.needs_validation() == ["for example"]
    assert load_lexicon(lexicon_path).needs_validation() == []  # a single file has no tiers
    shipped = load_lexicon()
    assert set(shipped.tiers.thresholds) == {"address", "broaden", "specify"}
    assert shipped.tiers.min_audited is not None
    assert set(shipped.needs_validation()) <= set(shipped.markers("broaden")) | set(
        shipped.markers("address")
    ) | set(shipped.markers("specify"))


def test_bad_tiers_file_names_file_and_line(lexicon_path):
    p = _tiers(lexicon_path, "for example\tspecify\tmaybe\t12\t8\t0.667\t0.39\t0.86\t0\n")
    with pytest.raises(TiersError, match=r"tiers.tsv:4: unknown tier 'maybe'"):
        load_tiers(p)
    p.write_text(HEADER + "for example\tspecify\n", encoding="utf-8")
    with pytest.raises(TiersError, match=r"tiers.tsv:4: expected 9"):
        load_tiers(p)


def test_threshold_header_per_relation_or_one_for_all(lexicon_path):
    """``# threshold: 0.85`` states one threshold for every relation; ``relation=T`` tokens
    state them apart (a bare value is the default for the relations not named)."""
    p = _tiers(lexicon_path, "")
    assert load_tiers(p).thresholds == {"address": 0.85, "broaden": 0.85, "specify": 0.85}
    p.write_text(HEADER.replace("0.85", "address=0.9 broaden=0.8 specify=0.9"), encoding="utf-8")
    assert load_tiers(p).thresholds == {"address": 0.9, "broaden": 0.8, "specify": 0.9}
    assert parse_thresholds("broaden=0.8 0.9") == load_tiers(p).thresholds
    assert parse_thresholds(format_thresholds(load_tiers(p).thresholds)) == load_tiers(p).thresholds
    p.write_text(
        "marker\trelation\ttier\taudited\tvalid\tprecision\twilson_low\t"
        "wilson_high\tdropped_by_rules\n",
        encoding="utf-8",
    )
    assert load_tiers(p).thresholds == {} and load_tiers(p).min_audited is None
    for bad, why in (
        ("address=0.9 broaden=0.8", "no threshold for specify"),
        ("contrast=0.8 0.9", "unknown relation 'contrast'"),
        ("high", "threshold 'high' is not a number"),
    ):
        p.write_text(HEADER.replace("0.85", bad), encoding="utf-8")
        with pytest.raises(
            TiersError, match=rf"tiers.tsv: bad threshold/min_audited header: {why}"
        ):
            load_tiers(p)


def test_needs_validation_queries_leave_test_only(tmp_path, lexicon_path):
    cfg = make_run(tmp_path, lexicon_path)
    cfg.lexicon.path = str(lexicon_path.parent)
    first = build(cfg, progress=False)
    assert first.counts["test"]["queries"] == {"address": 2, "specify": 2}
    _tiers(lexicon_path, "for example\tspecify\tneeds_validation\t12\t8\t0.667\t0.39\t0.86\t0\n")
    r = build(cfg, progress=False)
    assert r.ran == ["split", "export", "reports"]  # tiers do not change what is mined
    bench = tmp_path / "run" / "benchmark"
    test_q = pq.read_table(bench / "test" / "queries.parquet").to_pylist()
    held = pq.read_table(bench / "test" / HELD_QUERIES).to_pylist()
    assert sorted(q["marker"] for q in held) == ["for example", "for example"]
    assert "for example" not in {q["marker"] for q in test_q}
    qrels = pq.read_table(bench / "test" / "qrels.parquet")["query_id"].to_pylist()
    assert sorted(qrels) == sorted(q["query_id"] for q in test_q)
    # the held golds stay in the pool; train and validation keep the marker
    pool = set(pq.read_table(bench / "test" / "candidates.parquet")["candidate_id"].to_pylist())
    assert {q["gold_id"] for q in held} <= pool
    train = pq.read_table(bench / "train" / "queries.parquet")["marker"].to_pylist()
    assert "for example" in train
    assert r.counts["test"]["queries"] == {"address": 2}
    assert r.counts["test"]["held_for_validation"] == {"specify": 2}
    assert not (bench / "train" / HELD_QUERIES).exists()
    report = (tmp_path / "run" / "reports" / "build.md").read_text()
    assert "needs_validation markers (test queries only through the silver set): `for example`" in (
        report
    )
    assert "test queries held in `test/pending_queries.parquet`: specify 2" in report
    assert "| `gold_before_display_math` |" in report and "| `gold_vague_existence` |" in report


def test_old_sentence_shards_without_math_after_are_mined(tmp_path, lexicon_path):
    cfg = make_run(tmp_path, lexicon_path)
    sents = tmp_path / "run" / "ingest" / "sentences"
    legacy = sentences_table(sentence_rows("z2023", 2023, [[Q1 + " (z)", G1]]))
    write_parquet_atomic(sents / "s-legacy.parquet", legacy.drop_columns(["math_after"]))
    r = build(cfg, progress=False)
    assert "s-legacy" in r.mined_shards
    assert r.stages["mine"].detail["dropped_invalid"] == {}
