"""Calibration: AUC, CV thresholds and few-shot folds; label checks; the CLI on 100 pairs per relation.

The judge is the fake OpenAI API (conftest): a pair whose text holds ``p=0.73`` gets
P(accept) 0.73 in the token logprobs, the way a lenient small model scores pairs: it
accepts nearly everything, yet ranks the good pairs higher.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ratio.cli import app
from ratio.core.io import RatioError
from ratio.core.records import RELATIONS
from ratio.judge.agreement import (
    best_threshold,
    cohen_kappa,
    cross_validated,
    roc_auc,
    stratified_folds,
)
from ratio.judge.annotate import ITEM_FIELDS
from ratio.judge.calibrate import load_labels

FIELDS = [*ITEM_FIELDS, "annotator", "label"]


def test_roc_auc_matches_sklearn_with_ties():
    sk = pytest.importorskip("sklearn.metrics")
    rng = random.Random(1)
    for _ in range(20):
        y = [rng.random() < 0.6 for _ in range(40)]
        s = [round(rng.random() + 0.3 * t, 1) for t in y]  # rounding makes ties
        assert roc_auc(y, s) == pytest.approx(sk.roc_auc_score(y, s))
    assert roc_auc([True, True], [0.1, 0.2]) != roc_auc([True, True], [0.1, 0.2])  # nan


def test_best_threshold_maximises_kappa_and_cv_is_out_of_fold():
    y = [True, True, True, False, False, True, False, True]
    s = [0.95, 0.9, 0.85, 0.8, 0.7, 0.88, 0.75, 0.99]  # every positive above every negative
    t = best_threshold(y, s)
    assert 0.8 < t < 0.85 and cohen_kappa(y, [v >= t for v in s]) == 1.0
    # accept-all (threshold below every score) is what a 0.5 cut does here: kappa 0
    assert cohen_kappa(y, [v >= 0.5 for v in s]) == 0.0
    fold = stratified_folds(y, 2, seed=13)
    assert sorted(fold) == [0, 0, 0, 0, 1, 1, 1, 1]
    for f in (0, 1):  # both classes in every fold
        assert {y[i] for i in range(len(y)) if fold[i] == f} == {True, False}
    assert stratified_folds(y, 2, seed=13) == fold  # seeded
    pred, thresholds = cross_validated(y, s, fold)
    assert len(thresholds) == 2 and pred == y


def _write(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    return path


def _dataset(n: int, seed: int = 7) -> tuple[list[dict], list[dict]]:
    """``n`` pairs per relation, two annotators (90% agreement), a lenient but ranking judge."""
    rng = random.Random(seed)
    items, labels = [], []
    for rel in RELATIONS:
        for i in range(n):
            good = i % 5 < 3  # 60% accepted, both classes in any slice
            p = rng.uniform(0.75, 0.99) if good else rng.uniform(0.55, 0.85)
            item = {
                "item_id": f"{rel}:q{i}",
                "relation": rel,
                "query_id": f"q{i}",
                "candidate_id": f"c{i}",
                "query": f"Query {i} of {rel} p={p:.2f}",
                "marker": "for example",
                "candidate": f"Candidate sentence {i}.",
            }
            items.append(item)
            second = good if rng.random() < 0.9 else not good
            labels.append({**item, "annotator": "ann-a", "label": "yn"[not good]})
            labels.append({**item, "annotator": "ann-b", "label": "yn"[not second]})
    return items, labels


@pytest.fixture
def cli(bench_config, fake_openai, tmp_path):
    def run(*args: str):
        common = ["-c", str(tmp_path / "ratio.toml"), "--backend", "openai"]
        return CliRunner().invoke(
            app, ["judge", "calibrate", *args, *common, "--base-url", fake_openai.base_url]
        )

    return run


def test_cli_calibrates_100_pairs_per_relation_with_two_passes(cli, fake_openai, tmp_path):
    items, labels = _dataset(100)
    _write(tmp_path / "items.csv", items)
    _write(tmp_path / "labels.csv", labels)
    r = cli(
        str(tmp_path / "labels.csv"),
        "--items",
        str(tmp_path / "items.csv"),
        "--scoring",
        "logprob",
        "--reference",
        "ann-a",
    )
    assert r.exit_code == 0, r.output
    assert "[judge.thresholds]" in r.output and '"silver/specify/anchor-compact" = 0.' in r.output
    import json

    rep = json.loads((tmp_path / "run/judge/calibration/report.json").read_text())
    assert rep["annotators"] == {"ann-a": 300, "ann-b": 300} and rep["folds"] == 5
    for rel in RELATIONS:
        e = rep["relations"][rel]
        assert e["n_reference"] == 100 and e["cv_folds"] == 5
        assert 0.8 < e["human_panel"]["agreement"] < 1.0 and e["human_panel"]["kappa"] > 0.6
        for pid, p in e["prompts"].items():
            # the judge accepts everything (before: kappa 0) but ranks well: the CV threshold
            # turns its probability into a verdict that agrees with the annotator
            assert p["before"]["kappa"] == pytest.approx(0.0), pid
            assert p["auc"] > 0.8 and p["after"]["kappa"] > 0.4, (pid, p)
            assert len(p["fold_thresholds"]) == 5


def test_few_shot_examples_never_include_the_judged_pair(cli, fake_openai, tmp_path):
    _, labels = _dataset(20)
    _write(tmp_path / "labels.csv", [r for r in labels if r["relation"] == "broaden"])
    r = cli(str(tmp_path / "labels.csv"), "--scoring", "logprob", "--shots", "4", "--folds", "4")
    assert r.exit_code == 0, r.output
    scored = [b for b in fake_openai.bodies if b.get("logprobs")]
    assert len(scored) == 2 * 20  # two broaden prompts, every pair once
    for b in scored:
        users = [m["content"] for m in b["messages"] if m["role"] == "user"]
        assert len(users) == 5 and users[-1] not in users[:-1]
    shot_sets = {tuple(m["content"] for m in b["messages"][:-1]) for b in scored}
    assert len(shot_sets) == 2 * 4  # one set of examples per fold and prompt


def _nothing_written(tmp_path: Path) -> bool:
    return not (tmp_path / "run" / "judge").exists()


def test_labels_naming_an_unknown_item_are_refused_before_anything_is_written(cli, tmp_path):
    items, labels = _dataset(6)
    _write(tmp_path / "items.csv", items[1:])  # the first item is unknown
    _write(tmp_path / "labels.csv", labels)
    r = cli(str(tmp_path / "labels.csv"), "--items", str(tmp_path / "items.csv"))
    assert r.exit_code != 0 and isinstance(r.exception, RatioError)
    msg = str(r.exception)
    assert "labels.csv:2" in msg and "item_id 'address:q0'" in msg and "items.csv" in msg
    assert _nothing_written(tmp_path)


def test_a_single_class_relation_is_refused_before_anything_is_written(cli, tmp_path):
    _, labels = _dataset(6)
    for row in labels:
        if row["relation"] == "specify":
            row["label"] = "y"
    _write(tmp_path / "labels.csv", labels)
    r = cli(str(tmp_path / "labels.csv"), "--reference", "ann-a")
    assert r.exit_code != 0 and isinstance(r.exception, RatioError)
    msg = str(r.exception)
    assert "labels.csv" in msg and "'label'" in msg and "specify" in msg and "'y'" in msg
    assert _nothing_written(tmp_path)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"relation": "generalize"}, "unknown relation 'generalize'"),
        ({"label": "maybe"}, "label must be y, n or s"),
        ({"query_id": " "}, "empty query_id"),
    ],
)
def test_bad_label_rows_name_file_and_line(tmp_path, change, message):
    _, labels = _dataset(3)
    labels[4] = {**labels[4], **change}
    path = _write(tmp_path / "labels.csv", labels)
    with pytest.raises(RatioError, match=rf"labels.csv:6: .*{message}"):
        load_labels(path)


def test_conflicting_and_mismatched_labels_are_errors(tmp_path):
    items, labels = _dataset(3)
    dup = {**labels[0], "label": "yn"[labels[0]["label"] == "y"]}
    with pytest.raises(RatioError, match="labelled .* on line 2 and"):
        load_labels(_write(tmp_path / "a.csv", [*labels, dup]))
    edited = [dict(r) for r in labels]
    edited[1]["candidate"] = "Another text."  # ann-b saw another sentence than ann-a
    with pytest.raises(RatioError, match="field 'candidate'.*differs between annotators"):
        load_labels(_write(tmp_path / "b.csv", edited))
    _write(tmp_path / "items.csv", items)
    with pytest.raises(RatioError, match="b.csv:3: field 'candidate' of item"):
        load_labels(tmp_path / "b.csv", items=tmp_path / "items.csv")


def test_limit_takes_nested_stratified_sub_samples(tmp_path):
    _, labels = _dataset(60)
    path = _write(tmp_path / "labels.csv", labels)
    full = load_labels(path, reference="ann-a")
    small = load_labels(path, reference="ann-a", limit=10, seed=13)
    large = load_labels(path, reference="ann-a", limit=20, seed=13)
    for rel in RELATIONS:
        s, lg = small.reference_units(rel), large.reference_units(rel)
        assert len(s) == 10 and len(lg) == 20 and set(s) <= set(lg)
        ref = full.by_annot["ann-a"]
        assert sum(ref[u] for u in lg) == 12  # the 60% accept rate kept
        assert all(u in small.by_annot["ann-b"] for u in s)  # both passes of each pair stay
