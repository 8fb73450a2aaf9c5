"""Run-in headings cut from real corpus paragraphs (paper ids quoted), and real openings kept."""

from __future__ import annotations

from collections import Counter

import pytest

from ratio.corpus.text.runin import heading_only, split_runin, strip_runin


@pytest.mark.parametrize(
    ("paper", "text", "head", "rest"),
    [
        # docling: a bold run-in heading written as plain text before a sentence opener
        (
            "BH9niRIiy2",
            "Area-Biased Splitting Additionally, we can refine the 2D splitting scheme to enhance"
            " specific capabilities of the hy-plane.",
            "Area-Biased Splitting",
            "Additionally, we can refine",
        ),
        (
            "1Qo6DzdPOG",
            "Dataset We conduct experiments on QM9 [16] and PCBA [28].",
            "Dataset",
            "We conduct experiments",
        ),
        (
            "0kAfwgpeug",
            "Reason for Using the ResNet Backbone Since the overall performance trend remains"
            " consistent across different backbone models",
            "Reason for Using the ResNet Backbone",
            "Since the overall",
        ),
        (
            "HnYk0mMEIt",
            "Query Branch Directly aligning high-resolution, low-level queries with high-level"
            " semantic keys often results in weak or noisy attention",
            "Query Branch",
            "Directly aligning",
        ),
        # docling: a known section name before a capitalized word
        (
            "ERQRSnqLRb",
            "Limitations GDEs rely on sensible choices of meta-distributional priors (i.e."
            " construction of sets, Sec. 3), often requiring careful, domain-specific design.",
            "Limitations",
            "GDEs rely on",
        ),
        # docling: title-case heads ended by ":" or "."
        (
            "01hPO0uJhS",
            "New Problems: To mitigate the aforementioned limitations, we argue that the"
            " recommender system should complement the existing problem formulation",
            "New Problems:",
            "To mitigate",
        ),
        (
            "0TD3eO46gk",
            "Rotations from Current to Next Tokens in the First Layer. Measuring these median"
            " rotations,",
            "Rotations from Current to Next Tokens in the First Layer",
            "Measuring these",
        ),
        # docling: theorem labels before the statement
        (
            "1ajMY3nUKg",
            "Lemma 6 Let N ( µ 1 , Σ 1 ) and N ( µ 2 , Σ 2 ) be two multivariate normal"
            " distributions",
            "Lemma 6",
            "Let N ( µ 1",
        ),
        (
            "7GwcxPIkip",
            "Theorem 1 (Curvature of the Polyak surrogate) . Let f ( x ) be convex and define"
            " x ⋆ ∈ argmin x f ( x ) .",
            "Theorem 1 (Curvature of the Polyak surrogate)",
            "Let f ( x ) be convex",
        ),
        (
            "004uTlSufe",
            "Proposition A.8 (Classic Auditing is Valid) . Classic auditing is a valid"
            " guessing-based auditing method.",
            "Proposition A.8 (Classic Auditing is Valid)",
            "Classic auditing is",
        ),
        # Nougat: bold or italic heads, and heads glued to the sentence
        (
            "2ep5PXEZiw",
            r"**Transferability Metric.** For each pre-trained model \(\phi_{m}\), a"
            " transferability metric outputs a scalar score",
            "Transferability Metric.",
            "For each pre-trained model",
        ),
        (
            "0eRDQQK2TW",
            r"**Definition 1** (Stein operator).: _For any differentiable vector-valued function"
            r" \(g:\mathbb{R}^{d}\to\mathbb{R}^{d}\)",
            "Definition 1",
            "_For any differentiable",
        ),
        (
            "02Uc0G2Cym",
            "Linear models.Adversarial training of linear models was recently studied by Charles"
            " et al. (2019)",
            "Linear models",
            "Adversarial training",
        ),
        (
            "25vRtG56YH",
            "InterpolationIn Section 4 we discussed a two-stage interpolation from dense matrices"
            " to sparse matrices",
            "Interpolation",
            "In Section 4 we",
        ),
    ],
)
def test_run_in_heading_is_cut(paper, text, head, rest):
    found = split_runin(text)
    assert found is not None, paper
    assert found[0] == head, paper
    assert found[1].startswith(rest), paper


@pytest.mark.parametrize(
    ("paper", "text"),
    [
        # sentence openings that look like heads but are sentences
        (
            "0AumdfLzpK",
            "In Table 1, SimGRL demonstrates state-of-the-art performance in 4 out of 6",
        ),
        ("18FGRNd0wZ", "Based on Lemma 1, 2, and 3, Mat2Seq sequences satisfy uniqueness"),
        ("004uTlSufe", "Consider the All or Nothing algorithm (AON p), which outputs its entire"),
        ("0N73P8pH2l", "From Lemma B.6, the elements of [MATH] will approximately follow"),
        ("0xFgYI6oZr", "By Theorem E.3 with | D | = O (ε -2 k log(k)), d = k, we have that"),
        ("9Hweh7Wx8R", "Substituting Assumption A1 into the above yields:"),
        # a label that is the sentence's subject
        (
            "004uTlSufe",
            "Lemma A.18 uses the above lemma to show that classic auditing is asymptotically tight",
        ),
        ("004uTlSufe", "Proposition D.2). Therefore,"),
        # bold spans that start a sentence, not a heading
        ("090ORrOAPL", "**Out-of-distribution detection** can be formulated as a binary"),
        ("0jZH883i34", "**Tab. 4** illustrates the transfer learning accuracy of the unlearned"),
        ("1vPqOmqSfO", "**Computationally** we emphasize that Jacobian-vector products can be"),
        # italic theorem statements (Nougat) are sentences, not heads
        ("1YGgaouVgZ", r"_where \(f_{\#}P=P\circ f^{-1}\) is the pushforward measure._"),
    ],
)
def test_sentence_openings_are_kept(paper, text):
    assert split_runin(text) is None, paper


def test_strip_runin_counts_and_keeps_a_heading_without_text():
    counts: Counter = Counter()
    # 1Qo6DzdPOG: the paragraph after the head is kept whole
    assert strip_runin("Dataset We conduct experiments on QM9 [16] and PCBA [28].", counts) == (
        "We conduct experiments on QM9 [16] and PCBA [28]."
    )
    assert counts["runin_heading"] == 1
    assert strip_runin("**Inputs:**", counts) == "**Inputs:**"  # nothing after it: not cut here
    assert counts["runin_heading"] == 1


@pytest.mark.parametrize(
    ("sentence", "only"),
    [
        ("Graph Prompt Feature-Plus (GPF-plus).", True),  # 0LmWBhIYLi, after cleanup
        ("Rotations from Current to Next Tokens in the First Layer.", True),  # 0TD3eO46gk
        ("Proof of Theorem 3.", True),
        ("See Appendix C for the proof of Theorem 3.", False),
        ("We conduct experiments on QM9 [CIT] and PCBA [CIT].", False),  # 1Qo6DzdPOG
        ("GPT-4, Claude and Gemini.", False),  # a list, not a title
    ],
)
def test_heading_only(sentence, only):
    assert heading_only(sentence) is only
