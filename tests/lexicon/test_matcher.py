from __future__ import annotations

import timeit

import pytest

from ratio.lexicon import Lexicon, LexiconEntry, MarkerMatcher, leading_span, load_lexicon


def _lex(*pairs: tuple[str, str]) -> Lexicon:
    return Lexicon(LexiconEntry(m, r, "manual") for m, r in pairs)


@pytest.fixture(scope="module")
def matcher() -> MarkerMatcher:
    return MarkerMatcher(load_lexicon())


def test_comma_boundary_and_rest(matcher):
    s = "To address this issue, we propose a sparse variant."
    m = matcher.match(s)
    assert m is not None and (m.marker, m.relation) == ("to address this issue", "address")
    assert s[m.start_of_rest :] == "we propose a sparse variant."
    assert matcher.match("To address this issue we propose a sparse variant.") is None


def test_longest_marker_wins_across_commas():
    mm = MarkerMatcher(
        _lex(("that is", "implicit_similarity"), ("that is, more generally", "broaden"))
    )
    m = mm.match("That is, more generally, the bound holds.")
    assert m.marker == "that is, more generally" and m.relation == "broaden"
    assert m.start_of_rest == len("That is, more generally, ")
    assert mm.match("That is, the bound holds.").marker == "that is"


def test_prefix_of_span_is_not_a_match():
    mm = MarkerMatcher(_lex(("for example", "specify")))
    assert mm.match("For example in Figure 2, the loss drops.") is None


def test_case_whitespace_and_quotes(matcher):
    for s in [
        "FOR EXAMPLE, x is y.",
        '  "For   example , x is y.',
        "(For example, x)",
        "“For example, x”",
    ]:
        m = matcher.match(s)
        assert m is not None and m.marker == "for example", s
        assert s[m.start_of_rest :].startswith("x")


def test_mid_sentence_and_degenerate_inputs(matcher):
    assert matcher.match("We, for example, use Adam.") is None
    assert matcher.match("Results improve; however, costs rise.") is None
    for s in ["", ",", "   ", "however", "However,", None]:
        m = matcher.match(s)
        if s == "However,":
            assert m.marker == "however" and m.start_of_rest == len(s)
        else:
            assert m is None


def test_match_finds_each_relation(matcher):
    texts = ["More generally, x.", "no marker here", "In contrast, y.", "For instance, z."]
    assert [m.relation if (m := matcher.match(t)) else None for t in texts] == [
        "broaden",
        None,
        "explicit_contrast",
        "specify",
    ]


def test_leading_span():
    assert leading_span("To Address This Issue, we") == "to address this issue"
    assert leading_span("one two three four five six seven eight, x") is None
    assert leading_span("one two three four five six seven eight, x", max_words=8) is not None
    assert leading_span("no comma here") is None
    assert leading_span(", starts with comma") is None


def _naive(markers: list[tuple[str, str]], text: str):
    low = text.lower()
    best = None
    for mk, rel in markers:
        if low.startswith(mk + ",") and (best is None or len(mk) > len(best[0])):
            best = (mk, rel)
    return best


def test_agrees_with_naive_loop_and_is_much_faster(matcher):
    lx = load_lexicon()
    markers = [(e.marker, e.relation) for e in lx.entries]
    texts = [
        f"{m.capitalize()}, the model is trained on data {i}."
        for i, (m, _) in enumerate(markers[::101])
    ]
    texts += [f"We train the model with {i} steps, then evaluate." for i in range(len(texts))]
    for t in texts:
        got = matcher.match(t)
        assert ((got.marker, got.relation) if got else None) == _naive(markers, t), t
    sample = texts[:: max(1, len(texts) // 60)]
    # best of repeats on both sides: a preempted run on a busy 2-core machine says nothing
    naive_s = min(timeit.repeat(lambda: [_naive(markers, t) for t in sample], number=1, repeat=3))
    fast_s = min(timeit.repeat(lambda: [matcher.match(t) for t in sample], number=5, repeat=5)) / 5
    assert naive_s / fast_s > 50, (naive_s, fast_s)
