"""Prompt files (Appendix I) load, derive as I.3 says, and parse/validate answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ratio.core.records import RELATIONS
from ratio.judge.llm.prompts import (
    DEFAULT_PAIR,
    InvalidResponse,
    PromptError,
    extract_json,
    get_prompt,
    load_prompts,
    relation_prompts,
    silver_pair_text,
    verdicts_only,
)

PAPER = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "ratio-paper.txt"


def test_every_task_has_its_prompts():
    ps = load_prompts()
    for rel in RELATIONS:
        for task in ("silver", "topk"):
            assert [p.name for p in relation_prompts(task, rel)] == list(DEFAULT_PAIR[rel])
        assert ps[f"pairwise/{rel}"].fields == ("query", "list_a", "list_b")
    assert {"markers/address", "markers/broaden", "markers/expand"} <= set(ps)
    assert all(p.version and p.digest for p in ps.values())


def test_topk_prompts_apply_the_two_i3_changes():
    for rel in RELATIONS:
        for name in DEFAULT_PAIR[rel]:
            silver, topk = get_prompt(f"silver/{rel}/{name}"), get_prompt(f"topk/{rel}/{name}")
            assert (
                "You are given s1 – a query sentence, and s2 – a candidate sentence." in topk.system
            )
            assert "connecting phrase" not in topk.system and "connecting term" not in topk.system
            assert "connecting" in silver.system
            assert topk.shape == silver.shape and topk.fields == ("query", "candidate")
            # everything after the input description is the silver text unchanged
            assert silver.system.splitlines()[-1] == topk.system.splitlines()[-1]


@pytest.mark.skipif(not PAPER.is_file(), reason="paper text not available")
def test_silver_prompts_are_verbatim_from_the_paper():
    paper = " ".join(PAPER.read_text(encoding="utf-8").split())
    for rel in RELATIONS:
        for name in DEFAULT_PAIR[rel]:
            for line in get_prompt(f"silver/{rel}/{name}").system.splitlines():
                assert " ".join(line.split()) in paper, line
    assert "making the query more specific or concrete" in get_prompt("pairwise/specify").system


def test_parsers_validate_shapes():
    ps = get_prompt("silver/address/minimal-v2")
    ok = {
        "is_problem_valid": {"is_valid": "True", "reason": "r"},
        "is_solution_valid": {"is_valid": "true", "reason": "r"},
        "match_evaluation": {"is_match": "True", "reason": "r"},
    }
    assert ps.parse(json.dumps(ok))["accepted"] is True
    # match without a valid problem is not a match
    bad_problem = {**ok, "is_problem_valid": {"is_valid": "False", "reason": "r"}}
    assert ps.parse(json.dumps(bad_problem))["accepted"] is False
    with pytest.raises(InvalidResponse):
        ps.parse(json.dumps({"decision": True}))
    dec = get_prompt("silver/specify/anchor-compact")
    assert (
        dec.parse('```json\n{"decision": false, "confidence": 0.7, "reason": "x"}\n```')["accepted"]
        is False
    )
    with pytest.raises(InvalidResponse):
        dec.parse('{"decision": "maybe"}')
    with pytest.raises(InvalidResponse):
        dec.parse('{"decision": true, "confidence": 7}')
    mk = get_prompt("markers/address")
    assert (
        mk.parse('{"label": true, "rationale": "r", "confidence": "medium"}')["grade"]
        == "weak-true"
    )
    assert (
        mk.parse('{"label": true, "rationale": "r", "confidence": "high"}')["grade"]
        == "strong-true"
    )
    win = get_prompt("pairwise/broaden")
    assert win.parse('{"winner": "tie", "confidence": 0.5, "reason": "r"}')["winner"] == "tie"
    with pytest.raises(InvalidResponse):
        win.parse('{"winner": "C"}')
    assert extract_json('Answer: {"a": 1} trailing') == {"a": 1}
    with pytest.raises(InvalidResponse):
        extract_json("no json here")


def test_derivation_edit_that_no_longer_matches_is_an_error(tmp_path):
    base = get_prompt("silver/specify/anchor-compact")
    (tmp_path / "base.toml").write_text(Path(base.file).read_text())
    (tmp_path / "derived.toml").write_text(
        'id = "topk/specify/x"\nversion = "1"\ntask = "topk"\nrelation = "specify"\nname = "x"\n'
        'derive_from = "silver/specify/anchor-compact"\nuser = "{query} {candidate}"\n'
        '[[edits]]\nold = "this text is not in the prompt"\nnew = ""\n'
    )
    with pytest.raises(PromptError, match="matches 0 times"):
        load_prompts(str(tmp_path))


def test_silver_input_format():
    s = silver_pair_text("Models overfit", "to address this issue", "We use dropout.")
    assert s == "Models overfit. To address this issue, we use dropout."
    assert silver_pair_text("A.", "for example", "GPT-4 does X.").endswith(
        "For example, GPT-4 does X."
    )
    p = get_prompt("silver/broaden/relaxed")
    assert p.render(pair=s).startswith("Input:\n")


def test_verdicts_only_drops_reasons_at_every_depth_and_still_parses():
    for p in load_prompts().values():
        text = json.dumps(verdicts_only(p.schema))
        assert '"reason"' not in text and '"rationale"' not in text, p.id
    ps = get_prompt("silver/address/minimal-v2")
    schema = verdicts_only(ps.schema)
    assert schema["properties"]["match_evaluation"]["required"] == ["is_match"]
    answer = {
        "is_problem_valid": {"is_valid": "True"},
        "is_solution_valid": {"is_valid": "True"},
        "match_evaluation": {"is_match": "False"},
    }
    assert ps.parse(json.dumps(answer))["accepted"] is False


def test_a_prompt_whose_output_format_lacks_its_verdict_field_is_an_error(tmp_path):
    bad = tmp_path / "silver.specify.bad.toml"
    bad.write_text(
        'id = "silver/specify/bad"\nversion = "1"\ntask = "silver"\nrelation = "specify"\n'
        'name = "bad"\nshape = "decision"\nuser = "{pair}"\n'
        "system = '''Judge the pair.\nOUTPUT: {\"verdict\": true, \"reason\": \"...\"}'''\n"
    )
    with pytest.raises(PromptError, match=r"silver\.specify\.bad\.toml: verdict field 'decision'"):
        load_prompts(str(tmp_path))


def test_verdict_answers_parse_as_their_shape():
    from ratio.judge.llm.prompts import VERDICTS, example_answer

    for shape in VERDICTS:
        p = next(p for p in load_prompts().values() if p.shape == shape)
        if shape == "marker":  # its parser also wants a confidence grade
            continue
        assert p.parse(example_answer(shape, True))["accepted"] is True
        assert p.parse(example_answer(shape, False))["accepted"] is False


def test_silver_and_topk_prompt_files_cite_the_guideline_outside_the_prompt_text():
    """The human labelling guideline is named in each silver/top-k file's TOML comment; TOML
    comments are not prompt text, so the text the model sees (and its cache key) is unchanged."""
    guideline = "docs/annotation-guideline.md"
    assert (Path(__file__).resolve().parents[3] / guideline).is_file()
    for p in load_prompts().values():
        assert guideline not in p.system + p.user
        if p.task in ("silver", "topk"):
            header = Path(p.file).read_text(encoding="utf-8").split("\nid = ", 1)[0]
            assert all(line.startswith("#") for line in header.splitlines())
            assert guideline in header, p.file
