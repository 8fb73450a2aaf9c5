"""Undated corpora: the temporal split refuses them; ``mode = "random"`` splits by paper."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ratio.build.reports import build_report
from ratio.build.split import check_mode, random_split, split_key, split_pairs
from ratio.core import schemas
from ratio.core.config import ConfigError, SplitConfig
from ratio.core.io import RatioError
from tests.build.test_dedup import pair

RANDOM = SplitConfig(mode="random", train_fraction=0.6, validation_fraction=0.2)


def _undated(n_papers: int = 40) -> pa.Table:
    rows = []
    for i in range(n_papers):
        for j in range(3):  # several pairs per paper: none may land in two splits
            rows.append(pair(f"Problem {i}.{j} is hard.", f"We solve {i}.{j}.", f"paper-{i}", None))
    return pa.Table.from_pylist(rows, schema=schemas.PAIRS)


def test_a_temporal_split_of_an_undated_corpus_says_what_to_do(tmp_path):
    with pytest.raises(RatioError) as e:
        split_pairs(_undated(), tmp_path / "bench", SplitConfig())
    msg = str(e.value)
    assert "none of the 120 mined rows has a year or date" in msg
    assert '[split] mode = "random"' in msg and "--metadata" in msg


def test_random_split_is_by_paper_seeded_and_matches_python(tmp_path):
    res = split_pairs(_undated(), tmp_path / "a", RANDOM, seed=7)
    papers = {}
    for name in ("train", "validation", "test"):
        t = pq.read_table(tmp_path / "a" / name / "queries.parquet")
        for pid in t["paper_id"].to_pylist():
            assert papers.setdefault(pid, name) == name  # no paper spans two splits
            assert random_split(pid, RANDOM, 7) == name  # SQL and Python agree
    assert len(papers) == 40 and set(papers.values()) == {"train", "validation", "test"}
    assert res.excluded == {} and res.final_leakage == 0
    assert res.random == {"seed": 7, "train_fraction": 0.6, "validation_fraction": 0.2}
    again = split_pairs(_undated(), tmp_path / "b", RANDOM, seed=7)
    assert again.counts == res.counts
    other = split_pairs(_undated(), tmp_path / "c", RANDOM, seed=8)
    assert other.counts != res.counts  # another seed, another assignment


def test_report_says_leakage_control_is_off_and_temporal_keys_are_unchanged(tmp_path):
    res = split_pairs(_undated(), tmp_path / "a", RANDOM, seed=7)
    report = build_report({"split": res.to_dict()})
    assert "temporal leakage control is off" in report and "## Temporal split" not in report
    assert "temporal leakage control" not in build_report({"split": {"boundaries": {}}})
    # a temporal split's cache key is the one it had before random splits existed
    assert split_key(SplitConfig(), 13) == {
        "train_end": "2023-12-31",
        "validation_end": "2024-12-31",
        "test_end": "9999-12-31",
    }
    assert split_key(RANDOM, 13)["seed"] == 13


@pytest.mark.parametrize(
    "cfg",
    [
        SplitConfig(mode="shuffled"),
        SplitConfig(mode="random", train_fraction=0.9, validation_fraction=0.1),
        SplitConfig(mode="random", train_fraction=0.0),
    ],
)
def test_bad_modes_and_fractions(cfg):
    with pytest.raises(ConfigError, match=r"\[split\]"):
        check_mode(cfg)
