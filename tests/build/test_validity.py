"""Mining-time validity rules, on golds and queries the precision audits labelled."""

from __future__ import annotations

import pytest

from ratio.build.validity import RULE_NAMES, RULES, failed_rule

Q = "Estimating the asymptotic variance from a single chain is difficult."


@pytest.mark.parametrize(
    ("relation", "gold", "math_after", "rule"),
    [
        # the formula the gold introduced was removed by the cleanup
        ("specify", "With probability at least 1 -δ, we have", True, "gold_before_display_math"),
        ("specify", "The LL problem in (3) can be expressed as", True, "gold_before_display_math"),
        ("broaden", "The objective takes the general form", True, "gold_before_display_math"),
        # cut off, whatever followed
        ("specify", "We define the following estimating function,", False, "gold_unfinished"),
        ("specify", "The variance [MATH] is calculated as", False, "gold_unfinished"),
        (
            "broaden",
            "It would be interesting to know whether the kernel given by",
            False,
            "gold_unfinished",
        ),
        ("address", "We define the weighted BC objective as follows:", False, "gold_unfinished"),
        ("address", "We transform the data into a 2D shape by averaging,", True, "gold_unfinished"),
        # a Specify instance after a colon is lost with the list or formula
        ("specify", "We introduce the following modifications:", False, "gold_colon"),
        (
            "specify",
            "The train error has well defined limits under the asymptotics:",
            False,
            "gold_colon",
        ),
        # deferrals, also for Address
        (
            "address",
            "We propose the following technical innovations for the converse.",
            False,
            "gold_deferral",
        ),
        ("address", "In this paper, we make the following contributions.", False, "gold_deferral"),
        (
            "broaden",
            "These functions are characterized by the following proposition.",
            False,
            "gold_deferral",
        ),
        (
            "address",
            "We introduce a consistency regularization [CIT], as detailed below.",
            True,
            "gold_deferral",
        ),
        # roadmap asides
        (
            "specify",
            "In Section 4.1 we detail known bounds that are recovered as special cases.",
            False,
            "gold_outline",
        ),
        (
            "specify",
            "Section 5.1 details the datasets, settings, and evaluation metrics.",
            False,
            "gold_outline",
        ),
        (
            "address",
            "We delve in Sections 4 and 5 into the computation of the solutions.",
            False,
            "gold_outline",
        ),
        (
            "specify",
            "The bounds and the rates are derived in Sections 3 and 4, respectively.",
            False,
            "gold_outline",
        ),
        # Address golds that only say that remedies exist
        ("address", "Several effective methods have been proposed.", False, "gold_vague_existence"),
        ("address", "Researchers have proposed various strategies.", False, "gold_vague_existence"),
        (
            "address",
            "Other conditioning methods [CIT] are proposed.",
            False,
            "gold_vague_existence",
        ),
        (
            "address",
            "An increasing number of studies have attempted to propose more advanced models [CIT].",
            False,
            "gold_vague_existence",
        ),
        # round 3: a short deferral to a later step, generic techniques before a colon
        (
            "address",
            "We introduce a state-action guardian in the next step.",
            False,
            "gold_deferral",
        ),
        (
            "address",
            "We investigate the loss landscape in the subsequent sections.",
            False,
            "gold_deferral",
        ),
        # an Address gold before a colon lost its remedy too (4 of 9 audited held)
        ("address", "A common sampling strategy is employed:", False, "gold_colon"),
        ("address", "We introduce two complementary regularizers:", False, "gold_colon"),
        ("address", "We employ a QK-attention module [CIT], represented as:", True, "gold_colon"),
    ],
)
def test_failing_golds(relation, gold, math_after, rule):
    assert failed_rule(relation, Q, gold, math_after) == rule


@pytest.mark.parametrize(
    ("relation", "gold", "math_after"),
    [
        # an Address gold may name its remedy before a removed formula
        ("address", "We decouple the defense and the attack by solving a non-zero-sum game.", True),
        # complete sentences, also right before display math
        ("specify", "We use a sliding window that keeps only local interactions.", True),
        ("specify", "Large models (72B) outperformed small models (7B) in accuracy.", False),
        ("specify", "Condition A1 guarantees that the matrix [MATH] is identifiable.", False),
        ("broaden", "The same argument applies to any convex loss (see Section 3).", False),
        (
            "specify",
            "In Section 4 we show that the estimator is consistent under weak mixing.",
            False,
        ),
        # existence claims with substance, and the rule is Address-only
        ("address", "Several methods have been proposed, such as pruning and distillation.", False),
        (
            "address",
            "Prior work proposed low-rank adapters that freeze the backbone weights and "
            "train small matrices instead.",
            False,
        ),
        ("specify", "Several effective methods have been proposed.", False),
        ("specify", "A model trained on ImageNet reaches 80% top-1 accuracy!", False),
        # a long sentence that names its content before the pointer; a named remedy before ":"
        (
            "address",
            "We leverage the dual formalism, which is elaborated in the next section.",
            False,
        ),
    ],
)
def test_passing_golds(relation, gold, math_after):
    assert failed_rule(relation, Q, gold, math_after) is None


@pytest.mark.parametrize(
    "query",
    [
        "There are two open problems:",
        "The bound holds with probability at least 1 -δ, where",
        "We therefore consider the loss,",
        "The update rule is given as follows",
    ],
)
def test_unfinished_query(query):
    assert failed_rule("address", query, "We apply dropout to every attention layer.") == (
        "query_unfinished"
    )


@pytest.mark.parametrize(
    "query",
    [
        "where I (·) is the indicator function.",
        "which verifies none of the assumptions above if c = 0.",
        "where ‖ · ‖ 2 is the spectral norm.",
        "of the form { (f i, { (q ij, a ij) }) }.",
    ],
)
def test_fragment_query(query):
    assert failed_rule("broaden", query, "The same holds for any convex loss.") == "query_fragment"


@pytest.mark.parametrize(
    "query",
    ["Where the data are scarce, models overfit.", "iPhone photos are noisy.", "k-NN is slow."],
)
def test_query_starting_otherwise_is_kept(query):
    assert failed_rule("specify", query, "For example, a 3x3 median filter removes it.") is None


def test_rules_are_named_once_and_known_relations_only():
    assert len(set(RULE_NAMES)) == len(RULES)
    for rule in RULES:
        assert set(rule.relations) <= {"address", "broaden", "specify"}, rule.name
        assert rule.description


def test_first_failing_rule_wins():
    # ends in ":" (gold_colon) and defers (gold_deferral): counted once, under the earlier rule
    gold = "We introduce the following modifications:"
    assert RULE_NAMES.index("gold_colon") < RULE_NAMES.index("gold_deferral")
    assert failed_rule("specify", Q, gold) == "gold_colon"
    assert failed_rule("address", Q, gold) == "gold_colon"
    assert failed_rule("address", Q, gold.replace(":", ".")) == "gold_deferral"
