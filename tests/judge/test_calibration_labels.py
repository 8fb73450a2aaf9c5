"""The labelled calibration pairs under tests/data/calibration: complete, consistent, re-checkable.

Two annotators labelled the same 60 pairs per relation (drawn from the silver set's judged
sample with `ratio judge annotate --from-silver`); `ratio judge calibrate` reads labels.csv.
"""

from __future__ import annotations

from collections import Counter

from ratio.judge.annotate import read_items
from ratio.judge.calibrate import panel_scores, read_labels
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "calibration"


def test_every_item_is_labelled_once_by_each_annotator():
    items = {r["item_id"]: r for r in read_items(DATA / "items.csv")}
    labels = read_labels(DATA / "labels.csv")
    assert Counter(r["relation"] for r in items.values()) == {
        "address": 60,
        "specify": 60,
        "broaden": 60,
    }
    seen = Counter((r["annotator"], r["item_id"]) for r in labels)
    assert set(seen.values()) == {1}
    assert {a for a, _ in seen} == {"eng-a", "eng-b"}
    for r in labels:
        item = items[r["item_id"]]  # a label for an unknown item fails here
        assert (r["query"], r["candidate"], r["marker"]) == (
            item["query"],
            item["candidate"],
            item["marker"],
        )
        assert r["label"] in ("y", "n")


def test_annotators_agree_like_the_papers_panel():
    labels = read_labels(DATA / "labels.csv")
    for rel in ("address", "specify", "broaden"):
        by: dict[str, dict] = {}
        for r in labels:
            if r["relation"] == rel:
                by.setdefault(r["annotator"], {})[(r["query_id"], r["candidate_id"])] = (
                    r["label"] == "y"
                )
        units = sorted(by["eng-a"])
        panel = panel_scores(by, units, None)
        # the paper's five-expert panel: agreement 83-87%, alpha .61-.68 (Table 10)
        assert panel["agreement"] >= 0.8, (rel, panel)
