from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ratio.core.schemas import SENTENCES
from ratio.lexicon import LexiconError, load_lexicon
from ratio.lexicon.corpus import iter_pairs
from ratio.lexicon.discover import apply_review, count_spans, discover, write_review
from ratio.lexicon.expand import expand, parse_patterns
from ratio.lexicon.extend import extend
from ratio.lexicon.extend import write_candidates as write_extensions

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "models" / "all-MiniLM-L6-v2"

SENTS = [
    "Training is slow on long inputs.",
    "To address this issue, we cache keys.",
    "",
    "Memory grows quadratically.",
    "To address this limitation, we use sparse attention.",
    "",
    "Labels are noisy.",
    "To address this potential bias, we reweight samples.",
    "",
    "Data is scarce.",
    "To address data scarcity, we augment.",
    "",
    "The loss is convex.",
    "For example, squared loss is convex.",
    "For example, logistic loss is convex.",
    "In contrast, hinge loss is not smooth.",
]


def test_iter_pairs_list_respects_paragraph_breaks():
    pairs = list(iter_pairs(SENTS))
    assert pairs[0][0] is None and pairs[1][0] == SENTS[0]
    assert pairs[2] == (None, SENTS[3], "")


def test_count_spans_and_discover_examples():
    counts = count_spans(SENTS)
    assert counts["for example"] == 2 and counts["to address this issue"] == 1
    assert "training is slow on long inputs." not in counts
    found = discover(SENTS, top=3, examples=1, seed=1)
    assert found[0].span == "for example" and found[0].count == 2
    assert found[0].relation == "specify" and len(found[0].examples) == 1
    prev, sent, _ = found[0].examples[0]
    assert sent.startswith("For example") and prev in SENTS


def test_discover_is_seeded():
    many = []
    for i in range(50):
        many += [f"Claim {i} holds.", f"For example, case {i} works.", ""]
    a = discover(many, top=1, examples=5, seed=7)[0].examples
    b = discover(many, top=1, examples=5, seed=7)[0].examples
    c = discover(many, top=1, examples=5, seed=8)[0].examples
    assert a == b and a != c and len(a) == 5


def _sentences_parquet(path: Path) -> Path:
    rows = {
        "paper_id": ["p1"] * 3 + ["p2"] * 2,
        "year": [2023] * 5,
        "date": [None] * 5,
        "venue": ["x"] * 5,
        "section": ["intro"] * 5,
        "section_category": ["introduction"] * 5,
        "is_appendix": [False] * 5,
        "paragraph_idx": [0, 0, 1, 0, 0],
        "sentence_idx": [0, 1, 0, 0, 2],
        "text": [
            "Inference is slow.",
            "To mitigate this, we prune.",
            "More generally, pruning helps.",
            "A claim.",
            "For instance, a case.",
        ],
    }
    rows["match"] = [t.lower() for t in rows["text"]]
    rows["math_after"] = [False] * 5
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pydict(rows, schema=SENTENCES), path / "s0.parquet")
    return path


def test_parquet_source_pairs_only_consecutive(tmp_path):
    d = _sentences_parquet(tmp_path / "sentences")
    pairs = list(iter_pairs(d))
    assert pairs[1][0] == "Inference is slow."  # same paragraph, idx 0 -> 1
    assert pairs[2][0] is None  # new paragraph
    assert pairs[4][0] is None  # idx 0 -> 2: not consecutive
    assert count_spans(d)["to mitigate this"] == 1


def test_write_review_and_apply_review_roundtrip(tmp_path):
    paths = write_review(discover(SENTS, top=10, examples=2), tmp_path / "rev")
    assert paths["html"].read_text().count("<section") == 6
    with open(paths["review"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["decision"] = {"to address this limitation": "address", "for example": "specify"}.get(
            r["span"], "reject"
        )
    with open(paths["review"], "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "reviewed.tsv"
    counts = apply_review(paths["review"], out, base=load_lexicon())
    assert counts["address"] == 1 and counts["specify"] == 1
    lx = load_lexicon(out)
    assert lx.relation_of("to address this limitation") == "address" and len(lx) == 2


def test_apply_review_bad_decision_and_conflict_name_line(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text(
        "span,count,lexicon_relation,decision,notes\nfoo bar,3,,reject,\nto fix it,2,,solve,\n"
    )
    with pytest.raises(LexiconError, match=r"r.csv:3: unknown decision 'solve'"):
        apply_review(p, tmp_path / "o.tsv")
    p.write_text("span,decision\nhowever,address\n")
    with pytest.raises(
        LexiconError, match=r"r.csv:2: 'however' decided 'address'.*'explicit_contrast'"
    ):
        apply_review(p, tmp_path / "o.tsv", base=load_lexicon())


def test_extend_collects_anaphoric_extensions(tmp_path):
    found = extend(["to address"], SENTS, relation="address")
    markers = {e.marker: e.count for e in found}
    assert markers == {
        "to address this issue": 1,
        "to address this limitation": 1,
        "to address this potential bias": 1,
    }
    everything = {e.marker for e in extend(["to address"], SENTS, anaphoric_only=False)}
    assert "to address data scarcity" in everything and "to address" not in everything
    out = tmp_path / "ext.tsv"
    n = write_extensions(found, out, lexicon=load_lexicon())
    new = load_lexicon(out)
    assert n == len(new) and "to address this issue" not in new  # already shipped
    assert {e.source for e in new.entries} == {"extendable"}


PATTERNS = """
@slot problem noun
issue | overfitting!
@slot fix verb
address | deal with
@template address accept t1
(in order) to [fix] [dem] [problem]
@template address review t2
[fix:ing] [dem*] {issue|issues}
"""


def test_expand_agreement_inflection_and_options(tmp_path):
    p = tmp_path / "p.txt"
    p.write_text(PATTERNS)
    got = {c.marker: c for c in expand(p)}
    assert "to address this issue" in got and "to address these issues" in got
    assert "in order to deal with these issues" in got
    assert "to address these issue" not in got and "to address this issues" not in got
    assert "to address this overfitting" in got and "to address these overfittings" not in got
    assert "dealing with those issues" in got and "dealing with that issue" in got
    assert got["to address this issue"].accepted and not got["addressing this issue"].accepted
    assert len([c for c in got.values() if c.template == "t1"]) == 2 * 2 * 3


def test_expand_bad_template_reports_line(tmp_path):
    p = tmp_path / "p.txt"
    p.write_text("@slot a word\nx\n@template address accept t\nto [missing] this\n")
    with pytest.raises(LexiconError, match=r"p.txt:3: template 't' uses unknown slot \[missing\]"):
        parse_patterns(p)


def test_shipped_patterns_accepted_output_is_in_lexicon():
    ps = parse_patterns()
    assert any(t.relation == "address" for t in ps.templates)
    lx = load_lexicon()
    accepted = [c for c in expand(ps) if c.accepted]
    assert accepted and all(lx.relation_of(c.marker) is not None for c in accepted)


def test_cli_stats_match_and_expand(tmp_path):
    from ratio.cli import app

    r = CliRunner().invoke(app, ["lexicon", "stats"])
    assert r.exit_code == 0 and "address\t" in r.output and "version\t" in r.output
    r = CliRunner().invoke(app, ["lexicon", "match", "More broadly, it works."])
    assert r.output.startswith("broaden\tmore broadly\tit works.")
    p = tmp_path / "p.txt"
    p.write_text(PATTERNS)
    out = tmp_path / "cand.tsv"
    r = CliRunner().invoke(app, ["lexicon", "expand", "--patterns", str(p), "--out", str(out)])
    assert r.exit_code == 0, r.output
    cand = load_lexicon(out)
    assert cand.sizes_by_source()["address"] == {"pattern": len(cand)}


def test_cli_discover_on_txt(tmp_path):
    from ratio.cli import app

    txt = tmp_path / "s.txt"
    txt.write_text("\n".join(SENTS))
    r = CliRunner().invoke(
        app, ["lexicon", "discover", str(txt), "--out", str(tmp_path / "d"), "--top", "5"]
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "d" / "review.html").exists()


@pytest.mark.slow
@pytest.mark.skipif(not MODEL.is_dir(), reason="local all-MiniLM-L6-v2 not present")
def test_neighbors_tiny(tmp_path):
    from ratio.lexicon.neighbors import load_encoder, neighbors, write_candidates

    spans = {"to remedy this flaw": 3, "in the kitchen": 5, "on tuesday": 2, "for illustration": 4}
    found = neighbors({"to fix this issue": "address"}, spans, load_encoder(MODEL), k=2)
    assert [n.span for n in found][0] == "to remedy this flaw"
    assert len(found) == 2 and found[0].score >= found[1].score
    out = tmp_path / "nb.tsv"
    write_candidates(found, out)
    assert load_lexicon(out).relation_of("to remedy this flaw") == "address"


class _BagOfWords:
    """A tiny deterministic encoder (stands in for the external sentence-transformers model)."""

    def encode(self, texts, **_kw):
        import numpy as np

        vocab = ["fix", "this", "issue", "remedy", "kitchen", "tuesday", "problem"]
        m = np.array([[float(w in t.split()) for w in vocab] + [0.01] for t in texts])
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_neighbors_ranking_filters_and_exclusion():
    from ratio.lexicon.neighbors import neighbors

    spans = {
        "to fix this issue": 9,  # equal to the seed: never its own neighbour
        "remedy this issue": 4,
        "fix this problem": 1,  # below min_count
        "in the kitchen": 5,
        "to address this issue": 7,  # already in the lexicon
        "a very long span of more than five words": 3,
    }
    found = neighbors(
        {"to fix this issue": "address"},
        spans,
        _BagOfWords(),
        k=5,
        min_count=2,
        exclude=load_lexicon(),
    )
    assert [n.span for n in found] == ["remedy this issue", "in the kitchen"]
    assert found[0].relation == "address" and found[0].count == 4
