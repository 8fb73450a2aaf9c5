"""Paper-level artifact repairs: PDF line numbers, small caps, acronyms glued to a word.

The damaged phrases are the ones the precision audits found in mined pairs of the NeurIPS
corpus (docling output); the prose around them is written for the tests.
"""

from __future__ import annotations

from collections import Counter

from ratio.corpus.text.markdown import parse_markdown
from ratio.corpus.text.repair import (
    is_line_numbered,
    join_small_caps,
    repair_paper,
    split_glued_acronyms,
    strip_line_numbers,
)


def _bare_lines(start: int, stop: int) -> str:
    """Line numbers docling kept as blocks of their own, one per blank-line block."""
    return "\n\n".join(str(n) for n in range(start, stop)) + "\n\n"


def _numbered_paper() -> str:
    return (
        "## 6 Conclusion and Discussion\n\n"
        + _bare_lines(258, 282)
        + "Third, a better understanding of the sample-independent lifting operator is needed. "
        "For example, 282 our construction of sample-dependent lifted critical point requires "
        "a specific sample size threshold, 283 which naturally leads to the question whether "
        "sample-dependent lifted critical points exist when 284 we keep the sample size fixed "
        "while varying samples. More generally, one can study a constrained operator 285\n\n"
        + _bare_lines(286, 300)
        + "This pattern persists across compression levels. For instance, the parameter 145\n\n"
        "α in EfficientReasoning balances brevity and accuracy, trained for 100 epochs on "
        "10, 50, and 100 classes in 2019 and 2020 (RQ3 below). 146\n\n" + _bare_lines(147, 160)
    )


def test_line_numbers_inside_sentences_are_removed():
    counts: Counter = Counter()
    out = strip_line_numbers(_numbered_paper(), counts)
    assert (
        "For example, our construction of sample-dependent lifted critical point requires "
        "a specific sample size threshold, which naturally leads to the question whether "
        "sample-dependent lifted critical points exist when we keep the sample size fixed"
    ) in out
    assert "one can study a constrained operator\n" in out
    assert "For instance, the parameter\n\nα in" in out
    for n in (258, 281, 286, 299, 147):
        assert f"\n{n}\n" not in out
    assert counts["line_number_removed"] >= 24 + 4 + 14 + 2


def test_real_numbers_survive_in_a_line_numbered_paper():
    out = strip_line_numbers(_numbered_paper())
    # not in a run of consecutive values a line apart, a year, or a small label
    assert "trained for 100 epochs on 10, 50, and 100 classes in 2019 and 2020 (RQ3 below)." in out


def test_numbers_stay_when_the_paper_has_no_line_numbers():
    text = (
        "We use 3 layers with 282 units.\n\nStage 1 trains 283 heads.\n\n"
        "Stage 2 uses 284 tokens per batch and 285 warmup steps.\n\n"
    )
    assert not is_line_numbered(text)
    assert strip_line_numbers(text) == text


def test_small_caps_joined_on_the_papers_own_words():
    text = (
        "To address the problem, we propose Cam ouflaged SAM2 ( CamSAM2 ). Camouflaged objects "
        "blend in. We propose an innovative S patioT emporal R etrievalA ugmented P attern "
        "Learning framework, STRAP. Spatio-temporal graphs, retrieval and augmented pattern learning."
    )
    counts: Counter = Counter()
    out = join_small_caps(text, counts)
    assert "we propose Camouflaged SAM2 ( CamSAM2 )" in out
    assert "SpatioTemporal RetrievalAugmented Pattern Learning framework" in out
    assert counts["small_caps_joined"] == 6


def test_small_caps_needs_evidence_and_leaves_words_alone():
    text = (
        "A model is trained. We investigate A round of training. The V oyager agent fails. "
        "Around the clock, models round numbers. Open babel is a tool."
    )
    out = join_small_caps(text)
    # "model", "round" and "babel" are words here; "Voyager" never occurs joined
    assert out == text


def test_small_caps_a_in_a_run_is_joined():
    text = "We propose MAGIC ( M edically A ccurate G eneration ). Medically accurate generation."
    assert "( Medically Accurate Generation )" in join_small_caps(text)


def test_glued_acronym_split_only_with_evidence():
    text = (
        "Our BMW model learns a memory bank. For instance, BMWboosts the mAP from 81.2 to 86.3. "
        "Pretraining boosts accuracy. XGBoost and GANs are baselines; NASbench is new."
    )
    counts: Counter = Counter()
    out = split_glued_acronyms(text, counts)
    assert "For instance, BMW boosts the mAP" in out
    assert "XGBoost and GANs are baselines; NASbench is new." in out  # no standalone parts
    assert counts["glued_acronym_split"] == 1


def test_repair_paper_runs_every_repair():
    text = _numbered_paper() + "Camouflaged. Cam ouflaged objects. BMW model: BMWboosts; boosts."
    out = repair_paper(text)
    assert "282" not in out and "Camouflaged objects" in out and "BMW boosts" in out


def test_parse_markdown_repairs_and_records_display_math():
    text = (
        "## 1 Introduction\n\n"
        "The sample size is fixed. With probability at least 1 -δ, we have\n\n"
        "\\[ \\|x\\| \\leq \\epsilon \\]\n\n"
        "where the norm is Euclidean. Specifically, the parameter is small.\n\n"
        "The LL problem in (3) can be expressed as\n\n"
        "<!-- formula-not-decoded -->\n\n"
        "which is convex. We define the following estimating function, "
        "$$ g(x) = x^2 $$ and use it throughout.\n\n"
        "A plain paragraph ends here.\n\n"
        "Another plain paragraph.\n"
    )
    drops: Counter = Counter()
    (sec,) = parse_markdown(text, "docling", drops)
    assert sec.paragraphs == [
        "The sample size is fixed. With probability at least 1 -δ, we have",
        "where the norm is Euclidean. Specifically, the parameter is small.",
        "The LL problem in (3) can be expressed as",
        "which is convex. We define the following estimating function,",
        "and use it throughout.",
        "A plain paragraph ends here.",
        "Another plain paragraph.",
    ]
    assert sec.math_after == [True, False, True, True, False, False, False]


def test_display_math_block_is_a_hard_break_that_is_recorded():
    # a one-line display block: the paragraphs around it are not joined across it
    text = "## Method\n\nWe minimize the loss\n\n\\[ L = \\sum_i \\ell_i \\]\n\nwhere each term is a loss.\n"
    (sec,) = parse_markdown(text, "nougat")
    assert sec.paragraphs == ["We minimize the loss", "where each term is a loss."]
    assert sec.math_after == [True, False]
