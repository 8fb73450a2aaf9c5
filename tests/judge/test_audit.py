"""The hand-labelled precision audit (docs/precision-audit.md): its labelled files, the library
that samples and scores them (``ratio.judge.audit``), the ``tiers`` command of
scripts/precision_audit.py and the scripts that learn from the labels."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from ratio.core.records import RELATIONS
from ratio.judge.agreement import cohen_kappa
from ratio.judge.audit import (
    FAILURE_KINDS,
    GUIDELINE,
    SPLITS,
    agreement,
    distinct_labelled,
    draw_sample,
    failure_kind,
    format_tiers,
    load_pairs,
    marker_precision,
    read_labelled,
    reading_instructions,
    score,
    wilson_interval,
)
from tests.conftest import REPO_ROOT, load_script

AUDIT_FILES = [
    REPO_ROOT / "tests/data/precision_audit.jsonl",
    REPO_ROOT / "tests/data/precision_audit_round1.jsonl",
]
RUN = REPO_ROOT / "runs/neurips"
FIELDS = {"query_id", "relation", "marker", "query", "gold", "paper_id", "split", "label", "note"}


pa = load_script("precision_audit")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.parametrize("path", AUDIT_FILES, ids=lambda p: p.name)
def test_audit_file_well_formed(path: Path) -> None:
    rows = _rows(path)
    assert len(rows) == 150
    counts: dict[str, int] = {}
    for r in rows:
        assert set(r) == FIELDS, r
        assert r["label"] in (True, False), f"unlabelled: {r['query_id']}"
        assert r["query"].strip() and r["marker"].strip()
        assert r["split"] in SPLITS
        if r["label"] is False:
            assert r["note"].strip(), f"false without a note: {r['query_id']}"
        counts[r["relation"]] = counts.get(r["relation"], 0) + 1
    assert counts == {"address": 50, "broaden": 50, "specify": 50}
    assert len({r["query_id"] for r in rows}) == 150


def _round(n: int) -> dict[str, Path]:
    return {
        p: REPO_ROOT / f"tests/data/precision_audit_round{n}_{p}.jsonl"
        for p in ("a", "b", "adjudicated")
    }


ROUND3, ROUND4, ROUND5, ROUND6 = _round(3), _round(4), _round(5), _round(6)
RUN_V2 = REPO_ROOT / "runs/neurips-v2"
RUN_V3 = REPO_ROOT / "runs/neurips-v3"
RUN_V4 = REPO_ROOT / "runs/neurips-v4"  # the build before the issue-32 text repairs


@pytest.mark.parametrize(
    ("files", "n"),
    [(ROUND3, 300), (ROUND4, 300), (ROUND5, 258), (ROUND6, 300)],
    ids=["round3", "round4", "round5", "round6"],
)
def test_two_pass_rounds_label_the_same_pairs_and_adjudication_keeps_agreements(files, n) -> None:
    """Rounds 3 to 6: two independent passes over one sample, and the adjudicated labels."""
    # round 6 tops Broaden up from the published validation split
    splits = ("test", "validation") if files is ROUND6 else ("test",)
    files = {p: _rows(path) for p, path in files.items()}
    for rows in files.values():
        assert len(rows) == n  # 100 per relation; round 5: all 58 published Broaden pairs
        assert {r["relation"] for r in rows} == set(RELATIONS)
        for r in rows:
            assert set(r) == FIELDS, r
            assert r["label"] in (True, False) and r["split"] in splits
            if r["label"] is False:
                assert r["note"].strip(), f"false without a note: {r['query_id']}"
    key = [(r["query_id"], r["query"], r["gold"]) for r in files["a"]]
    assert key == [(r["query_id"], r["query"], r["gold"]) for r in files["adjudicated"]]
    assert sorted(key) == sorted((r["query_id"], r["query"], r["gold"]) for r in files["b"])
    b = {r["query_id"]: r["label"] for r in files["b"]}
    for ra, rj in zip(files["a"], files["adjudicated"], strict=True):
        if ra["label"] == b[ra["query_id"]]:
            assert rj["label"] == ra["label"]
        else:
            assert rj["note"].startswith("adjudicated"), rj["query_id"]


def test_round3_sample_is_the_seeded_draw_of_the_raw_test_split() -> None:
    if not (RUN_V2 / "benchmark").exists():
        pytest.skip("no build at runs/neurips-v2")
    pairs = load_pairs(RUN_V2, ["test"], include_pending=True)
    drawn = [r["query_id"] for r in draw_sample(pairs, 100, 2026)]
    assert drawn == [r["query_id"] for r in _rows(ROUND3["a"])]


def test_round4_sample_is_the_seeded_draw_of_the_published_test_split() -> None:
    """Round 4: Address and Specify from the published test queries, Broaden from the raw
    split (its published queries are too few), seed 2027, on the build with the round-3 rules."""
    if not (RUN_V3 / "benchmark").exists():
        pytest.skip("no build at runs/neurips-v3")
    published = draw_sample(load_pairs(RUN_V3, ["test"]), 100, 2027)
    raw = draw_sample(load_pairs(RUN_V3, ["test"], include_pending=True), 100, 2027)
    drawn = {r["query_id"] for r in published if r["relation"] != "broaden"}
    drawn |= {r["query_id"] for r in raw if r["relation"] == "broaden"}
    assert drawn == {r["query_id"] for r in _rows(ROUND4["a"])}


def test_round5_sample_is_the_seeded_draw_of_the_published_test_split() -> None:
    """Round 5: the published test split of the build before the text repairs, seed 2028."""
    if not (RUN_V4 / "benchmark").exists():
        pytest.skip("no build at runs/neurips-v4")
    drawn = [r["query_id"] for r in draw_sample(load_pairs(RUN_V4, ["test"]), 100, 2028)]
    assert drawn == [r["query_id"] for r in _rows(ROUND5["a"])]


def test_round6_sample_is_the_seeded_draw_of_the_published_splits() -> None:
    """Round 6, the acceptance audit of the current build (issue 32), seed 1208: 100 published
    test pairs per relation, Broaden's 58 topped up to 100 from the published validation split."""
    if not (RUN / "benchmark").exists():
        pytest.skip("no build at runs/neurips")
    test = draw_sample(load_pairs(RUN, ["test"]), 100, 1208)
    val = draw_sample(load_pairs(RUN, ["validation"]), 42, 1208)
    drawn = [r["query_id"] for r in test] + [
        r["query_id"] for r in val if r["relation"] == "broaden"
    ]
    assert drawn == [r["query_id"] for r in _rows(ROUND6["a"])]


def test_score_precision_and_marker_errors() -> None:
    rows = [
        {"relation": "address", "marker": "a", "label": True},
        {"relation": "address", "marker": "a", "label": True},
        {"relation": "address", "marker": "a", "label": False},
        {"relation": "address", "marker": "b", "label": False},
        {"relation": "address", "marker": "b", "label": None},
        {"relation": "specify", "marker": "c", "label": True},
    ]
    s = score(rows)
    assert s["address"]["true"] == 2 and s["address"]["labelled"] == 4
    assert s["address"]["unlabelled"] == 1
    assert s["address"]["precision"] == 0.5
    assert dict(s["address"]["errors_by_marker"]) == {"a": 1, "b": 1}
    assert s["specify"]["precision"] == 1.0
    assert not s["specify"]["errors_by_marker"]
    lo, hi = s["address"]["ci95"]
    # Wilson interval for 2/4 at 95%: 0.150 .. 0.850
    assert math.isclose(lo, 0.1500, abs_tol=5e-4) and math.isclose(hi, 0.8500, abs_tol=5e-4)


def test_wilson_known_values() -> None:
    lo, hi = wilson_interval(45, 50)
    assert math.isclose(lo, 0.7864, abs_tol=5e-4) and math.isclose(hi, 0.9565, abs_tol=5e-4)
    lo, hi = wilson_interval(50, 50)
    assert hi == 1.0 and math.isclose(lo, 0.9287, abs_tol=5e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_sample_is_seeded_and_capped() -> None:
    pairs = [
        {"relation": rel, "query_id": f"{rel}{i}"}
        for rel, n in (("address", 80), ("broaden", 7), ("specify", 60))
        for i in range(n)
    ]
    a = draw_sample(pairs, 50, seed=7)
    b = draw_sample(pairs, 50, seed=7)
    c = draw_sample(pairs, 50, seed=8)
    assert a == b and a != c
    rels = [r["relation"] for r in a]
    assert rels.count("address") == 50 and rels.count("broaden") == 7
    assert len({r["query_id"] for r in a}) == len(a)


def test_load_pairs_by_split_with_pending(tmp_path: Path) -> None:
    """``--split test --include-pending`` reads the raw test split: queries plus held queries."""
    import pyarrow as pa_
    import pyarrow.parquet as pq

    def query(qid: str, rel: str, marker: str, gold: str) -> dict:
        return {
            "query_id": qid,
            "text": f"q {qid}",
            "relation": rel,
            "marker": marker,
            "paper_id": "p",
            "gold_id": gold,
        }

    for split, queries, pending in (
        ("train", [query("t1", "address", "to address this", "g0")], []),
        (
            "test",
            [query("q1", "specify", "for example", "g1")],
            [query("q2", "broaden", "more generally", "g2")],
        ),
    ):
        d = tmp_path / "benchmark" / split
        d.mkdir(parents=True)
        pq.write_table(pa_.Table.from_pylist(queries), d / "queries.parquet")
        if pending:
            pq.write_table(pa_.Table.from_pylist(pending), d / "pending_queries.parquet")
        cands = [
            {"candidate_id": q["gold_id"], "text": f"gold {q['query_id']}"}
            for q in queries + pending
        ]
        pq.write_table(pa_.Table.from_pylist(cands), d / "candidates.parquet")

    assert [r["query_id"] for r in load_pairs(tmp_path)] == ["t1", "q1"]
    assert [r["query_id"] for r in load_pairs(tmp_path, ["test"])] == ["q1"]
    raw = load_pairs(tmp_path, ["test"], include_pending=True)
    assert [(r["query_id"], r["gold"], r["split"]) for r in raw] == [
        ("q2", "gold q2", "test"),
        ("q1", "gold q1", "test"),
    ]


def test_agreement_percent_kappa_and_disagreements() -> None:
    def row(qid: str, rel: str, label: bool | None) -> dict:
        return {"query_id": qid, "relation": rel, "marker": "m", "label": label, "note": ""}

    a = [
        row("1", "address", True),
        row("2", "address", True),
        row("3", "address", False),
        row("4", "address", False),
        row("5", "broaden", True),
        row("6", "broaden", None),
    ]
    b = [
        row("1", "address", True),
        row("2", "address", False),
        row("3", "address", False),
        row("4", "address", False),
        row("5", "broaden", True),
        row("6", "broaden", True),
    ]
    stats, dis = agreement(a, b)
    assert stats["address"]["n"] == 4 and stats["address"]["agree"] == 3
    # observed 0.75; chance 0.5*0.25 + 0.5*0.75 = 0.5; kappa = 0.25 / 0.5
    assert math.isclose(stats["address"]["kappa"], 0.5)
    # broaden: one pair, true in both passes; chance agreement is 1, kappa 1.0 (not nan)
    assert stats["broaden"]["n"] == 1 and stats["broaden"]["kappa"] == 1.0
    assert [(x["query_id"], y["label"]) for x, y in dis] == [("2", False)]
    assert cohen_kappa([True, False], [True, False]) == 1.0


def test_shipped_tiers_are_derived_from_the_audits() -> None:
    """data/tiers.tsv is the script's output for the audit files; rerun it after a new audit."""
    from ratio.lexicon import load_lexicon
    from ratio.lexicon.model import DATA_DIR
    from ratio.lexicon.tiers import load_tiers

    shipped = (DATA_DIR / "tiers.tsv").read_text(encoding="utf-8")
    tiers = load_tiers(DATA_DIR / "tiers.tsv")
    sources = [line for line in shipped.splitlines() if line.startswith("# sources:")]
    files = sources[0].split(":", 1)[1].split()
    rows = [r for f in files for r in read_labelled(REPO_ROOT / f)]
    stats = marker_precision(rows, load_lexicon())
    assert format_tiers(stats, tiers.thresholds, tiers.min_audited, files) == shipped
    tier_sources = [*AUDIT_FILES, ROUND3["adjudicated"], ROUND4["adjudicated"]]
    assert sorted(files) == sorted(str(p.relative_to(REPO_ROOT)) for p in tier_sources)
    # pairs labelled in several rounds count once: the newest two-pass adjudicated label wins
    assert files[:2] == [
        str(ROUND4["adjudicated"].relative_to(REPO_ROOT)),
        str(ROUND3["adjudicated"].relative_to(REPO_ROOT)),
    ]
    # the stated targets: Address and Specify 0.90, Broaden 0.80
    assert tiers.thresholds == {"address": 0.9, "broaden": 0.8, "specify": 0.9}


def test_tiers_cli_per_relation_threshold(tmp_path: Path, capsys) -> None:
    """``--threshold 0.9 --threshold broaden=0.8``: each marker is held against its relation's
    threshold, and the header states all three."""
    from ratio.lexicon.tiers import load_tiers

    def row(i: int, rel: str, marker: str, label: bool) -> dict:
        return {
            "query_id": f"{marker}{i}",
            "relation": rel,
            "marker": marker,
            "query": "Query sentence that states something long enough.",
            "gold": "A gold sentence that is complete and plain.",
            "label": label,
        }

    rows = [row(i, "address", "to address this", i < 17) for i in range(20)]  # 0.85
    rows += [row(i, "broaden", "more broadly", i < 17) for i in range(20)]  # 0.85
    rows += [row(i, "specify", "for example", i < 19) for i in range(20)]  # 0.95
    labelled = tmp_path / "audit.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "tiers.tsv"
    args = ["tiers", "--threshold", "0.9", "--threshold", "broaden=0.8", "--min-audited", "10"]
    assert pa.main([*args, "--out", str(out), str(labelled)]) == 0
    tiers = load_tiers(out)
    assert tiers.thresholds == {"address": 0.9, "broaden": 0.8, "specify": 0.9}
    assert tiers.needs_validation() == ["to address this"]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        pa.main(["tiers", "--threshold", "contrast=0.8", str(labelled)])
    assert "unknown relation 'contrast'" in capsys.readouterr().err


def test_marker_precision_counts_rule_drops_apart_and_skips_moved_markers() -> None:
    from ratio.lexicon import load_lexicon

    def row(qid, marker, gold, label, rel="specify"):
        q = "Query sentence that states something long enough."
        return {
            "query_id": qid,
            "relation": rel,
            "marker": marker,
            "query": q,
            "gold": gold,
            "label": label,
        }

    rows = [
        row("1", "specifically", "We use three datasets in all experiments.", True),
        row("2", "specifically", "We define the weighted BC objective as follows:", False),
        row("3", "specifically", "Large models outperformed small ones.", False),
        row("1", "specifically", "duplicate id: the first label counts.", False),
        row("4", "to account for this", "We expand the image at many scales.", False, "address"),
    ]
    (s,) = marker_precision(rows, load_lexicon())  # "to account for this" is a distractor now
    assert (s.marker, s.audited, s.valid, s.dropped_by_rules) == ("specifically", 2, 1, 1)
    assert s.tier(0.85, 2) == "needs_validation" and s.tier(0.85, 3) == "core"
    assert s.tier(0.5, 2) == "core"


def test_similarity_filter_auc_is_mann_whitney() -> None:
    """``scripts/similarity_filter.py``'s AUC: the share of (valid, invalid) pairs ordered right,
    ties half; checked against scikit-learn's ROC AUC on random scores with ties."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    sf = load_script("similarity_filter")
    assert sf.auc(np.array([3.0, 2.0, 1.0]), np.array([True, True, False])) == 1.0
    assert sf.auc(np.array([1.0, 1.0]), np.array([True, False])) == 0.5
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, 200).astype(float)
    labels = rng.random(200) < 0.7
    assert abs(sf.auc(scores, labels) - roc_auc_score(labels, scores)) < 1e-12


def test_distinct_labelled_counts_a_pair_once_with_the_first_files_label(tmp_path: Path) -> None:
    """A pair audited in two rounds counts once, with the newer (first given) label; unlabelled
    rows are left out."""
    newer, older = tmp_path / "r2.jsonl", tmp_path / "r1.jsonl"
    newer.write_text(
        json.dumps({"query_id": "q1", "label": False})
        + "\n"
        + json.dumps({"query_id": "q3", "label": None})
        + "\n"
    )
    older.write_text(
        json.dumps({"query_id": "q1", "label": True})
        + "\n"
        + json.dumps({"query_id": "q2", "label": True})
        + "\n"
    )
    rows = distinct_labelled([newer, older])
    assert {r["query_id"]: r["label"] for r in rows} == {"q1": False, "q2": True}


def test_label_classifier_cues_name_the_audited_failure_signs() -> None:
    """``scripts/label_classifier.py``'s surface cues fire on the failure types the audits
    named: a colon-ended deferral, a section reference, an anaphoric opening."""
    lc = load_script("label_classifier")
    plain = lc.surface("We train a small model with dropout.")
    deferral = lc.surface("We introduce two complementary regularizers below:")
    assert len(plain) == len(deferral) == 10
    assert deferral[1] and deferral[8] and not plain[1] and not plain[8]
    assert lc.surface("This is shown in Section 3.")[4:8:3] == [True, True]
    assert plain[3] and not plain[4]


def _guideline_sections() -> dict[str, str]:
    """docs/annotation-guideline.md split at its ``## `` headings: title -> body."""
    text = (REPO_ROOT / GUIDELINE).read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_guideline_lists_exactly_the_failure_kinds() -> None:
    """The guideline's "Labels and failure kinds" table and ``FAILURE_KINDS`` name the same
    codes per relation, in the same (decision-procedure) order; every relation has codes."""
    table = _guideline_sections()["Labels and failure kinds"]
    rows = re.findall(r"^\| (\w+) \| `(\w+)` \|", table, flags=re.M)
    listed: dict[str, tuple[str, ...]] = {}
    for rel, code in rows:
        listed[rel] = (*listed.get(rel, ()), code)
    assert listed == FAILURE_KINDS
    assert set(FAILURE_KINDS) == set(RELATIONS)
    for codes in FAILURE_KINDS.values():
        assert len(set(codes)) == len(codes)


def test_guideline_examples_use_their_relations_codes_and_illustrate_each() -> None:
    """Every "**Invalid — `code`**" verdict in a relation's section is one of its codes, and
    each code of each relation is the verdict of at least one real example."""
    sections = _guideline_sections()
    used: dict[str, set[str]] = {rel: set() for rel in RELATIONS}
    verdict = re.compile(r"\*\*Invalid — `(\w+)`\*\*")
    for rel in RELATIONS:
        codes = set(verdict.findall(sections[rel.capitalize()]))
        assert codes <= set(FAILURE_KINDS[rel]), (rel, codes - set(FAILURE_KINDS[rel]))
        used[rel] |= codes
    # the text-artifact examples mix relations: a round example's relation is its audit row's
    artifacts = set(verdict.findall(sections["Text artifacts"]))
    assert artifacts <= {c for codes in FAILURE_KINDS.values() for c in codes}
    for bullet in re.split(r"\n\* ", sections["Text artifacts"]):
        qid = re.search(r"Round \d (q[0-9a-f]{16})", bullet)
        code = verdict.search(bullet)
        if qid and code:
            rows = [
                r
                for f in sorted((REPO_ROOT / "tests/data").glob("precision_audit*.jsonl"))
                for r in _rows(f)
                if r["query_id"] == qid.group(1)
            ]
            assert rows, qid.group(1)
            assert code.group(1) in FAILURE_KINDS[rows[0]["relation"]], qid.group(1)
            used[rows[0]["relation"]].add(code.group(1))
    assert used == {rel: set(codes) for rel, codes in FAILURE_KINDS.items()}


def test_failure_kind_reads_the_code_a_note_starts_with() -> None:
    assert failure_kind("address", "vague_gold: names no mechanism") == "vague_gold"
    assert failure_kind("specify", "adjudicated (B): setup_or_deferral: only the setup") == (
        "setup_or_deferral"
    )
    assert failure_kind("broaden", "lost_math:") == "lost_math"
    # a code of another relation, a note from before the codes, a valid pair's note
    assert failure_kind("address", "inverse: more general") is None
    assert failure_kind("broaden", "sibling point: another open question") is None
    assert failure_kind("specify", "text artifact (relation holds): lost hyphen") is None
    assert failure_kind("specify", "") is None


def test_sample_tells_its_readers_the_guideline_and_codes(tmp_path: Path, capsys) -> None:
    """``sample`` writes the pairs and tells the readers how to label them."""
    text = reading_instructions()
    assert GUIDELINE in text and (REPO_ROOT / GUIDELINE).is_file()
    assert all(code in text for codes in FAILURE_KINDS.values() for code in codes)
    import pyarrow as pa_
    import pyarrow.parquet as pq

    d = tmp_path / "benchmark" / "test"
    d.mkdir(parents=True)
    q = {
        "query_id": "q1",
        "text": "q",
        "relation": "address",
        "marker": "m",
        "paper_id": "p",
        "gold_id": "g1",
    }
    pq.write_table(pa_.Table.from_pylist([q]), d / "queries.parquet")
    pq.write_table(
        pa_.Table.from_pylist([{"candidate_id": "g1", "text": "g"}]), d / "candidates.parquet"
    )
    out = tmp_path / "sample.jsonl"
    assert pa.main(["sample", "--run", str(tmp_path), "--out", str(out)]) == 0
    assert [r["query_id"] for r in _rows(out)] == ["q1"]
    assert capsys.readouterr().err.strip() == text
