"""What an audit says about a built benchmark (``ratio.judge.audit_build``): the test queries a
tiers file holds back and the published queries' precision, and the calibration CSVs made from
labelled passes; each also through its command of scripts/precision_audit.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ratio.judge.audit import MarkerPrecision
from ratio.judge.audit_build import impact_markdown, raw_test_markers, tier_impact
from tests.conftest import REPO_ROOT, load_script

pa = load_script("precision_audit")


def test_impact_of_new_tiers_on_a_build(tmp_path: Path, capsys) -> None:
    """``impact``: test queries a tiers file holds back compared with the build's own hold,
    and the published queries' precision weighted by marker."""
    import pyarrow as pa_
    import pyarrow.parquet as pq

    def queries(*spec: tuple[str, str, int]) -> pa_.Table:
        return pa_.Table.from_pylist(
            [{"relation": r, "marker": m} for r, m, n in spec for _ in range(n)]
        )

    test = tmp_path / "benchmark" / "test"
    test.mkdir(parents=True)
    pq.write_table(
        queries(
            ("address", "to address this", 30),
            ("address", "to address this issue", 10),
            ("address", "to bridge this gap", 10),
            ("specify", "for example", 5),
        ),
        test / "queries.parquet",
    )
    pq.write_table(queries(("broaden", "more broadly", 4)), test / "pending_queries.parquet")
    counts, held_now = raw_test_markers(test / "queries.parquet", test / "pending_queries.parquet")
    assert held_now == {"more broadly"} and sum(counts.values()) == 59

    def stat(marker: str, rel: str, n: int, k: int):
        return MarkerPrecision(marker, rel, n, k)

    stats = [
        stat("to address this", "address", 20, 16),  # 0.80: held under 0.9
        stat("to address this issue", "address", 10, 10),
        stat("to bridge this gap", "address", 2, 1),  # rare: shares the pool below
        stat("to mitigate this", "address", 2, 2),  # rare, no test queries
        stat("more broadly", "broaden", 10, 6),
        stat("for example", "specify", 10, 9),
    ]
    from ratio.lexicon.tiers import Tiers

    tiers = Tiers({"to address this": "needs_validation", "more broadly": "needs_validation"})
    impact = tier_impact(counts, held_now, tiers, stats)
    now, new = impact["address"]
    assert (now.queries, now.held, new.queries, new.held) == (50, 0, 20, 30)
    # build: (30 * 0.8 + 10 * 1.0 + 10 * 3/4) / 50; tiers: (10 * 1.0 + 10 * 3/4) / 20
    assert math.isclose(now.estimate, 0.83) and math.isclose(new.estimate, 0.875)
    assert (now.valid, now.audited, new.valid, new.audited) == (29, 34, 13, 14)
    assert impact["broaden"][1].held == 4 and impact["broaden"][1].queries == 0
    table = impact_markdown(impact)
    assert "| address | 50 / 0 | 20 / 30 | +30 | 0.830 | 0.875 |" in table

    tiers_file = tmp_path / "tiers.tsv"
    tiers_file.write_text(
        "# min_audited: 10\nmarker\trelation\ttier\taudited\tvalid\tprecision\twilson_low\t"
        "wilson_high\tdropped_by_rules\n"
        "to address this\taddress\tneeds_validation\t20\t16\t0.8\t0.58\t0.92\t0\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    cli = ["impact", "--run", str(tmp_path), "--tiers", str(tiers_file)]
    assert pa.main([*cli, str(REPO_ROOT / "tests/data/precision_audit.jsonl")]) == 0
    assert "| address | 50 / 0 | 20 / 30 | +30 |" in capsys.readouterr().out
    assert (
        pa.main(
            [
                "impact",
                "--run",
                str(tmp_path / "none"),
                "--tiers",
                str(tiers_file),
                str(REPO_ROOT / "tests/data/precision_audit.jsonl"),
            ]
        )
        == 2
    )


def test_calibration_csvs_from_labelled_passes(tmp_path: Path, capsys) -> None:
    """``calibration``: one item per audited pair (its gold the candidate, ids and texts from
    the build, held queries included), one y/n label per pass and pair; an unknown query is
    an error naming the file and line, and nothing is written."""
    import pyarrow as pa_
    import pyarrow.parquet as pq

    from ratio.judge.annotate import read_items
    from ratio.judge.calibrate import load_labels

    def query(qid: str, rel: str, marker: str) -> dict:
        return {
            "query_id": qid,
            "text": f"query {qid}",
            "relation": rel,
            "marker": marker,
            "paper_id": "p",
            "gold_id": f"c{qid}",
        }

    test = tmp_path / "benchmark" / "test"
    test.mkdir(parents=True)
    published = [query("q1", "address", "to address this"), query("q2", "address", "to this end")]
    held = [query("q3", "broaden", "more generally")]
    pq.write_table(pa_.Table.from_pylist(published), test / "queries.parquet")
    pq.write_table(pa_.Table.from_pylist(held), test / "pending_queries.parquet")
    cands = [{"candidate_id": f"c{q}", "text": f"gold {q}"} for q in ("q1", "q2", "q3")]
    cands.append({"candidate_id": "cx", "text": "a distractor"})
    pq.write_table(pa_.Table.from_pylist(cands), test / "candidates.parquet")

    def row(qid: str, rel: str, marker: str, label: bool | None, gold: str = "") -> dict:
        return {
            "query_id": qid,
            "relation": rel,
            "marker": marker,
            "query": f"query {qid}",
            "gold": gold or f"gold {qid}",
            "paper_id": "p",
            "split": "test",
            "label": label,
            "note": "" if label is not False else "why not",
        }

    def write(name: str, rows: list[dict]) -> Path:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    # the audit's gold of q2 has drifted from the pool: the pool's text is written
    labels = {"a": (True, False, True), "b": (True, True, False), "adj": (True, False, False)}
    files = {
        name: write(
            name,
            [
                row("q1", "address", "to address this", a),
                row("q2", "address", "to this end", b, gold="gold q2 (old extraction)"),
                row("q3", "broaden", "more generally", c),
            ],
        )
        for name, (a, b, c) in labels.items()
    }
    items_csv, labels_csv = tmp_path / "out" / "items.csv", tmp_path / "out" / "labels.csv"
    passes = [x for name in files for x in ("--pass", f"{files[name]}=x-{name}")]
    out = ["--items", str(items_csv), "--labels", str(labels_csv)]
    assert pa.main(["calibration", *passes, "--run", str(tmp_path), *out]) == 0
    report = capsys.readouterr().out
    assert "3 items, 9 labels" in report and "0 queries, 1 golds" in report
    assert "x-adj      address 1y/1n  broaden 0y/1n" in report

    items = read_items(items_csv)
    assert [(r["item_id"], r["candidate_id"], r["candidate"]) for r in items] == [
        ("address:q1", "cq1", "gold q1"),
        ("address:q2", "cq2", "gold q2"),
        ("broaden:q3", "cq3", "gold q3"),
    ]
    assert items[2]["query"] == "query q3" and items[2]["marker"] == "more generally"
    # broaden has one pair (a single class): calibrating it would be refused, address loads
    cal = load_labels(labels_csv, items=items_csv, reference="x-adj", relations=["address"])
    assert {a: len(v) for a, v in cal.by_annot.items()} == {"x-a": 3, "x-b": 3, "x-adj": 3}
    assert cal.by_annot["x-adj"][("address", "q2", "cq2")] is False
    assert cal.by_annot["x-b"][("address", "q2", "cq2")] is True

    # an unlabelled pair is an item without a label
    write("a", [row("q1", "address", "to address this", None)])
    assert (
        pa.main(["calibration", "--pass", f"{files['a']}=x-a", "--run", str(tmp_path), *out]) == 0
    )
    assert len(read_items(items_csv)) == 1 and labels_csv.read_text().count("\n") == 1

    # an unknown query: the error names file and line, the earlier output stays
    before = (items_csv.read_bytes(), labels_csv.read_bytes())
    bad = write(
        "bad", [row("q1", "address", "to address this", True), row("q9", "address", "m", True)]
    )
    with pytest.raises(SystemExit, match=rf"{bad}:2: query q9 is not in"):
        pa.main(["calibration", "--pass", f"{bad}=x", "--run", str(tmp_path), *out])
    assert (items_csv.read_bytes(), labels_csv.read_bytes()) == before
    assert sorted(p.name for p in items_csv.parent.iterdir()) == ["items.csv", "labels.csv"]
    fresh = tmp_path / "fresh"
    with pytest.raises(SystemExit, match=":2: query q9"):
        pa.main(
            ["calibration", "--pass", f"{bad}=x", "--run", str(tmp_path)]
            + ["--items", str(fresh / "i.csv"), "--labels", str(fresh / "l.csv")]
        )
    assert not (fresh / "i.csv").exists() and not (fresh / "l.csv").exists()
