"""Paper-style result tables (Tables 3/8): Markdown, CSV, JSON round-trip, harness records."""

from __future__ import annotations

import csv
import io
import json

import pytest

from ratio.core.io import RatioError
from ratio.evaluation.tables import ResultsTable, metric_label, percent, results_table

M = {"recall@1": 0.130, "recall@10": 0.2734, "mrr@10": 0.17649, "mrr@100": 0.181}


def test_labels_and_percent() -> None:
    assert [
        metric_label(m) for m in ("recall@1", "mrr@100", "ndcg@10", "hit_rate@10", "map@10", "P@10")
    ] == ["R@1", "M@100", "N@10", "HR@10", "MAP@10", "P@10"]
    assert percent(0.17649) == "17.6" and percent(None) == ""


def table() -> ResultsTable:
    t = ResultsTable(relations=("specify", "address"))
    t.add("BM25", "unigram", {"specify": M, "address": M}, group="Lexical baselines")
    t.add("all-mpnet-base-v2", "Baseline", {"specify": {**M, "mrr@10": 0.169}})
    t.add("all-mpnet-base-v2", "Tuned", {"specify": {**M, "mrr@10": 0.37}})
    return t


def test_markdown_layout() -> None:
    md = table().to_markdown(bold_best=True)
    lines = md.splitlines()
    assert lines[0] == (
        "| System | Setup | Specify R@1 | Specify R@10 | Specify M@10 | Specify M@100 "
        "| Address R@1 | Address R@10 | Address M@10 | Address M@100 |"
    )
    assert lines[2].startswith("| *Lexical baselines* |")
    assert (
        lines[3]
        == "| BM25 | unigram | **13.0** | **27.3** | 17.6 | **18.1** | **13.0** | **27.3** | **17.6** | **18.1** |"
    )
    # repeated system blanked; missing address cells shown as a dash; best M@10 bold
    assert lines[5].startswith("|  | Tuned | **13.0** | **27.3** | **37.0** |")
    assert lines[5].endswith("| — | — | — | — |")


def test_csv_and_json_roundtrip(tmp_path) -> None:
    t = table()
    rows = list(csv.reader(io.StringIO(t.to_csv())))
    assert rows[0][:4] == ["group", "system", "setup", "Specify R@1"]
    assert rows[1][:5] == ["Lexical baselines", "BM25", "unigram", "13.0", "27.3"]
    assert rows[3][-1] == ""
    doc = json.loads(t.to_json())
    assert doc["rows"][2]["scores"]["specify"]["mrr@10"] == 0.37
    assert doc["rows"][2]["percent"]["specify"]["M@10"] == 37.0
    back = ResultsTable.from_json(t.to_json())
    assert back.to_markdown() == t.to_markdown()
    # later issues add rows and re-render
    back.add("all-mpnet-base-v2", "Tuned", {"address": M})
    assert "| 13.0 | 27.3 | 17.6 | 18.1 |" in back.to_markdown().splitlines()[-1]
    for suffix in (".md", ".csv", ".json"):
        assert back.write(tmp_path / f"t{suffix}").read_text()
    with pytest.raises(RatioError, match="unknown table format"):
        back.write(tmp_path / "t.xlsx")
    with pytest.raises(RatioError, match="not a results table"):
        ResultsTable.from_json("{}")


def test_harness_records_pivot_in_paper_order() -> None:
    recs = [
        {"system": "bm25", "setup": "", "relation": r, "metrics": {**M, "recall@100": 0.5}}
        for r in ("address", "broaden", "specify")
    ] + [
        {
            "system": "mpnet",
            "setup": "Baseline",
            "relation": "address",
            "metrics": {m: None for m in M},
        }
    ]
    t = results_table(recs)
    assert t.relations == ["specify", "address", "broaden"]
    assert len(t.rows) == 2
    t = results_table(recs, ["address"], ["recall@1", "mrr@10"], "Results on test")
    md, csv_text = t.to_markdown(), t.to_csv()
    assert md.splitlines()[0] == "### Results on test"
    assert "| bm25 | — | 13.0 | 17.6 |" in md
    assert "| mpnet | Baseline | — | — |" in md
    assert csv_text.splitlines()[0] == "group,system,setup,Address R@1,Address M@10"
