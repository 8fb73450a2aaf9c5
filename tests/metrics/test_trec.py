"""TREC run / qrels files round-trip and report malformed lines with file:line."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from ratio.core.io import InputError
from ratio.metrics import Qrels, Ranking, evaluate
from ratio.metrics.trec import read_qrels, read_run, write_qrels, write_run


def test_run_roundtrip_is_exact(tmp_path) -> None:
    rng = np.random.default_rng(0)
    run = Ranking.from_dict(
        {
            f"q{i}": {f"d{j}": float(rng.normal()) for j in rng.choice(50, 20, replace=False)}
            for i in range(10)
        }
        | {"tie": {"a": 1.0, "b": 1.0}},
        name="bm25",
    )
    path = write_run(run, tmp_path / "run.trec")
    first = path.read_text().splitlines()[0].split()
    assert first[1] == "Q0" and first[3] == "1" and first[5] == "bm25"
    back = read_run(path)
    assert back.name == "bm25"
    assert back.to_dict() == run.to_dict()
    assert back.query_ids == run.query_ids
    assert np.array_equal(back.scores, run.scores)


def test_qrels_roundtrip_and_gzip(tmp_path) -> None:
    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"c": 2}})
    path = write_qrels(qrels, tmp_path / "qrels.txt")
    assert path.read_text().splitlines()[0] == "q1 0 a 1"
    gz = tmp_path / "qrels.txt.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert read_qrels(gz).to_dict() == qrels.to_dict()


def test_evaluating_from_files_equals_from_dicts(tmp_path) -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"x": 2.0, "a": 1.0}, "q2": {"b": 3.0}}
    r = read_run(write_run(Ranking.from_dict(run), tmp_path / "r"))
    q = read_qrels(write_qrels(Qrels.from_dict(qrels), tmp_path / "q"))
    assert evaluate(q, r, ["mrr@10"]) == evaluate(qrels, run, ["mrr@10"]) == {"mrr@10": 0.75}


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 t\n", 2, "expected 6 fields"),
        ("q1 Q0 a 1 high t\n", 1, "not a number"),
        ("q1 Q0 a x 1.0 t\n", 1, "not an integer"),
        ("\nq1 Q0 a 1 1.0 t\nq1 Q0 a 2 0.5 t\n", 3, "listed twice"),
        ("q1 Q0 a 1 nan t\n", 1, "NaN"),
    ],
)
def test_malformed_run_lines_name_file_and_line(tmp_path, text, line, reason) -> None:
    path = tmp_path / "bad.run"
    path.write_text(text)
    with pytest.raises(InputError, match=reason) as err:
        read_run(path)
    assert f"bad.run:{line}:" in str(err.value)


def test_malformed_qrels_lines(tmp_path) -> None:
    path = tmp_path / "bad.qrels"
    path.write_text("q1 0 a 1\nq1 0 b yes\n")
    with pytest.raises(InputError, match=r"bad.qrels:2: relevance 'yes'"):
        read_qrels(path)
    path.write_text("q1 a 1\n")
    with pytest.raises(InputError, match=r"bad.qrels:1: expected 4 fields"):
        read_qrels(path)


def test_whitespace_in_ids_is_rejected(tmp_path) -> None:
    with pytest.raises(ValueError, match="whitespace"):
        write_run(Ranking.from_dict({"q 1": {"a": 1.0}}), tmp_path / "r")
