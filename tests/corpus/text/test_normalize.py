from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratio.corpus.text.normalize import (
    INTRO_CONNECTIVES,
    clean_gold_prefix,
    is_noise,
    match_form,
    strip_intro_clause,
    strip_noise,
    too_short,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "However ,  the \u201cmodel\u201d\u2014works ( see  Fig. 3 ) .",
            'however, the "model"-works (see fig. 3).',
        ),
        ("To address this,we propose [MATH].", "to address this, we propose [math]."),
        ("The \ufb01ne-tuned \uff21\uff22 model", "the fine-tuned ab model"),
        ("Values 1,000 and 2,5 stay", "values 1,000 and 2,5 stay"),
        ("  multiple\n\tspaces  here ", "multiple spaces here"),
        ("soft\u00adhyphen and zero\u200bwidth", "softhyphen and zerowidth"),
        ("It\u2019s the model\u2019s loss", "it's the model's loss"),
        ("", ""),
    ],
)
def test_match_form(text: str, expected: str) -> None:
    assert match_form(text) == expected


def test_match_form_keeps_marker_comma_boundary() -> None:
    assert match_form("In Particular , We show").startswith("in particular, ")


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("aB ,.;:()[]\u201c\u201d\u2014-\t\n1\ufb01\u00e9")),
        max_size=40,
    )
)
def test_match_form_is_idempotent(text: str) -> None:
    once = match_form(text)
    assert match_form(once) == once
    assert once == once.strip() and "  " not in once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\u2022 (a) The model works.", "The model works."),
        ("[3] We propose a method.", "We propose a method."),
        ("1) First we train.", "First we train."),
        ("2. The second step.", "The second step."),
        ("(iv) Results improve.", "Results improve."),
        ("- A bullet item.", "A bullet item."),
        ("1.5 times faster than before.", "1.5 times faster than before."),
        ("a new method is proposed.", "a new method is proposed."),
        ("[CIT] show that it holds.", "[CIT] show that it holds."),
        ("bad\x00 char\ufffd and  \n space", "bad char and space"),
        ("  (1)   ", "(1)"),
    ],
)
def test_strip_noise(text: str, expected: str) -> None:
    assert strip_noise(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("However, we show that X holds.", "We show that X holds."),
        ("In particular, the bound is tight.", "The bound is tight."),
        ("However, in particular, we prove it.", "We prove it."),
        ("First, we train the model.", "We train the model."),
        ("Moreover , our method wins.", "Our method wins."),
        ("However, k-means fails here.", "k-means fails here."),
        ("Therefore, [MATH].", "[MATH]."),
        ("However we show it.", "However we show it."),
        ("In Table 2, we show it.", "In Table 2, we show it."),
        ("Smith, Jones and Lee propose it.", "Smith, Jones and Lee propose it."),
        ("However,", "However,"),
    ],
)
def test_strip_intro_clause(text: str, expected: str) -> None:
    assert strip_intro_clause(text) == expected


def test_intro_connectives_list_size() -> None:
    assert 100 <= len(INTRO_CONNECTIVES) <= 250
    assert {"however", "first", "in particular", "moreover"} <= INTRO_CONNECTIVES
    assert all(c == c.strip().lower() and c for c in INTRO_CONNECTIVES)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("firstly, we propose a loss.", "We propose a loss."),
        ("second, the model overfits.", "The model overfits."),
        ("Second: the model overfits.", "The model overfits."),
        ("(1) we use a prior.", "We use a prior."),
        ("i) the encoder is frozen.", "The encoder is frozen."),
        ("(b) the decoder is trained.", "The decoder is trained."),
        ("first of all, it is cheap.", "It is cheap."),
        ("we introduce a new loss.", "We introduce a new loss."),
        ("first-order methods suffice.", "First-order methods suffice."),
        ("i.e., the same model.", "i.e., the same model."),  # not a list marker
        ("1.5 times faster.", "1.5 times faster."),
        ("k-means is used.", "k-means is used."),
        ("[MATH] is small.", "[MATH] is small."),
    ],
)
def test_clean_gold_prefix(text: str, expected: str) -> None:
    assert clean_gold_prefix(text) == expected


def test_too_short() -> None:
    assert too_short("x" * 34)
    assert not too_short("x" * 35)
    assert too_short("  " + "x" * 34 + "  ")
    assert not too_short("x" * 10, min_chars=5)


@pytest.mark.parametrize(
    "text",
    [
        "[MATH] = [MATH] + [MATH].",
        "where [MATH]; [MATH]; [MATH]; [MATH]; [MATH].",
        "Let \u03c0 PP h = \u03c0 (\u00b7 | o c, o h p, \u03f5 h) and \u03c0 DP h = \u03c0 (\u00b7 | o c, o h p).",
        "\u2113 (\u03b8, g; z) = h (\u03b8, g; z) + \u00b5 2 \u2225 \u03b8 \u2225 2 2.",
        "The loss \\mathbf{x} is \\frac{1}{2} of the total here.",
        "We show that the m\ufffdthod is better than all other ones.",
        "loss loss loss loss loss loss loss loss loss loss loss loss loss",
        "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
    ],
)
def test_is_noise_true(text: str) -> None:
    assert is_noise(text)


@pytest.mark.parametrize(
    "text",
    [
        "We propose a simple method that improves retrieval of related sentences.",
        "In terms of runtime, our method runs at 109.231 \u00b1 3.112 s, comparable to SMM [CIT] (107.281 s).",
        "For DeepSeek-R1-Distill-Llama-8B, Basic Harmless improves from 80.4 \u2192 96.0 (+15.6) and Redteam from 58.5.",
        "The bound in Theorem 2 is loose since [MATH] is a large number in practice [CIT].",
        # rendered formulas count as placeholders, a run of them as one (009LK0vLcY, 01XV5Za56k)
        "where ζ: = max_{i∈[n]}‖x_i‖_2 and μ: = y^{(0)}+y^{(1)} is the total outcome vector.",
        "If x,v ∈ ℝ^n, where v has monotonically nondecreasing coordinates, and |x_i-x_{i+1}| ≤"
        " v_{i+1}-v_i for all i ∈ [n-1], then |x_i-x_j| ≤ v_j-v_i for all (i,j) ∈ [n]×[n] with"
        " i < j.",
    ],
)
def test_is_noise_false(text: str) -> None:
    assert not is_noise(text)
