from __future__ import annotations

from pathlib import Path

import pytest

from ratio.core.io import RatioError
from ratio.core.records import DISTRACTORS
from ratio.lexicon import LEXICON_RELATIONS, LexiconError, load_lexicon


def _write(tmp_path: Path, text: str, name: str = "lex.tsv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_shipped_lexicon_loads_with_all_relations():
    lx = load_lexicon()
    sizes = lx.sizes()
    assert set(sizes) == set(LEXICON_RELATIONS)
    assert all(n > 0 for n in sizes.values())
    assert sizes["address"] >= 1000 and sizes["broaden"] >= 100 and sizes["specify"] >= 50
    assert sum(sizes[d] for d in DISTRACTORS) >= 1000
    assert lx.version.startswith(lx.semver + "+") and len(lx.content_hash) == 12


def test_shipped_relations_pairwise_disjoint_and_disjoint_from_distractors():
    lx = load_lexicon()
    groups = {r: set(lx.markers(r)) for r in LEXICON_RELATIONS}
    for i, a in enumerate(LEXICON_RELATIONS):
        for b in LEXICON_RELATIONS[i + 1 :]:
            assert not groups[a] & groups[b], (a, b, sorted(groups[a] & groups[b])[:5])


def test_shipped_core_decisions():
    lx = load_lexicon()
    assert lx.relation_of("To address this issue,") == "address"
    assert lx.relation_of("to address") is None  # bare purposive head is not anaphoric
    assert lx.relation_of("to this end") == "common_irrelevant"  # refers to a goal, not a problem
    assert lx.relation_of("in general") == "common_irrelevant"  # non-anaphoric
    assert lx.relation_of("more generally") == "broaden"
    assert lx.relation_of("for example") == "specify"
    assert lx.relation_of("in particular") == "specify"
    assert lx.relation_of("however") == "explicit_contrast"
    assert lx.relation_of("similarly") == "explicit_similarity"
    assert lx.relation_of("in other words") == "implicit_similarity"
    assert all(m == m.lower() and not m.endswith(",") for m in lx.markers())


def test_two_relations_error_names_both_and_lines(tmp_path):
    p = _write(
        tmp_path,
        "# version: 1.0.0\nmarker\trelation\tsource\tnotes\n"
        "for example\tspecify\tmanual\t\nhowever\texplicit_contrast\tmanual\t\n"
        "For example,\tbroaden\tllm\tdup\n",
    )
    with pytest.raises(LexiconError) as ei:
        load_lexicon(p)
    msg = str(ei.value)
    assert "'specify'" in msg and "'broaden'" in msg and ":3" in msg and ":5" in msg
    assert isinstance(ei.value, RatioError)


def test_conflict_across_files_in_a_directory(tmp_path):
    _write(tmp_path, "to fix this\taddress\tmanual\t\n", "a.tsv")
    _write(tmp_path, "to fix this\tspecify\tllm\t\n", "b-llm.tsv")
    with pytest.raises(LexiconError, match="a.tsv:1.*b-llm.tsv:1|'address'.*'specify'"):
        load_lexicon(tmp_path)


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("only two\taddress\n", "expected 4"),
        ("a\tb\tc\td\te\n", "expected 4"),
        ("to fix this\tsolve\tmanual\t\n", "unknown relation 'solve'"),
        ("to fix this\taddress\tguess\t\n", "unknown source 'guess'"),
        (" , \taddress\tmanual\t\n", "empty marker"),
    ],
)
def test_malformed_line_reports_file_and_line(tmp_path, line, fragment):
    p = _write(
        tmp_path,
        "# version: 0.1\nmarker\trelation\tsource\tnotes\nfor example\tspecify\tmanual\t\n" + line,
    )
    with pytest.raises(LexiconError) as ei:
        load_lexicon(p)
    assert f"{p}:4" in str(ei.value) and fragment in str(ei.value)


def test_extra_llm_file_plugs_in_and_changes_version(tmp_path):
    base = load_lexicon()
    extra = _write(
        tmp_path, "to counter this drift eagerly\taddress\tllm\tgenerated\n", "lexicon-llm.tsv"
    )
    lx = load_lexicon(extra=[extra])
    assert lx.relation_of("to counter this drift eagerly") == "address"
    assert len(lx) == len(base) + 1 and lx.version != base.version
    assert lx.sizes_by_source()["address"]["llm"] == 1


def test_duplicate_same_relation_kept_once_and_hash_ignores_order_and_notes(tmp_path):
    a = _write(
        tmp_path, "for example\tspecify\tmanual\tx\nhowever\texplicit_contrast\tmanual\t\n", "a.tsv"
    )
    b = _write(
        tmp_path,
        "however\texplicit_contrast\tmanual\ty\nfor example\tspecify\tmanual\t\nfor example\tspecify\tmanual\t\n",
        "b.tsv",
    )
    la, lb = load_lexicon(a), load_lexicon(b)
    assert len(lb) == 2 and la.content_hash == lb.content_hash
    assert la.semver == "0"


def test_markers_rejects_unknown_relation():
    with pytest.raises(LexiconError):
        load_lexicon().markers("solve")


def test_missing_file_is_lexicon_error(tmp_path):
    with pytest.raises(LexiconError, match="not found"):
        load_lexicon(tmp_path / "nope.tsv")
