"""Each artifact detector on ingested sentences of the corpus (the seeded sample of
docs/precision-audit.md, "Text artifacts before and after the repairs"; sentences as ingest
wrote them, paper ids where the sentence was looked up)."""

from __future__ import annotations

import pytest

from ratio.corpus.text.artifacts import KINDS, count, detect, placeholder_share


@pytest.mark.parametrize(
    ("kind", "sentence"),
    [
        ("heading", "Dataset We conduct experiments on QM9 [CIT] and PCBA [CIT]."),  # 1Qo6DzdPOG
        (
            "heading",
            "Query Branch Directly aligning high-resolution, low-level queries with high-level"
            " semantic keys often results in weak or noisy attention.",  # HnYk0mMEIt
        ),
        (
            "heading",
            "Broader Impact: TransVIP was developed to improve cross-lingual communication and"
            " assist with automated video dubbing workflows.",
        ),
        ("heading", "Language Interfaced Imitation Learning."),
        ("heading", "Theorem 3.2 (Structure-Preserving Interpolation Bound)."),
        (
            "footnote",
            "Work in the AI literature has focused on two types of models: functional causal"
            " models1 and causal Bayesian networks [CIT].",
        ),
        (
            "footnote",
            "we recommend that practitioners utilize the smECE calibration measurement tool6 due"
            " to its theoretical guarantees",  # OONojmx3wH
        ),
        (
            "words",
            "Although these methodsachieved promising matching performance, most of them"
            " implicitly require large-scale well-aligned data for training.",
        ),
        (
            "words",
            "Cross-view camera localization has evolved from the study of coarse localization"
            " through image retrieval[CIT] to a highly accurate 3-DoF pose estimation task[CIT].",
        ),
        (
            "words",
            "GPT-4o utilizes voice activity detection (V AD), which restricts its interaction",
        ),
        (
            "flat_math",
            "In this formulation, the sparsity regularizer is ∥ M ∥ 0, which is computationally"
            " intractable and thus we use the ℓ 1 -norm, ∥ M ∥ 1 as a proxy.",
        ),
        (
            "flat_math",
            "G ∈ 64, 16, 4; for Skin-Lesions-14 (input size 3 × 28 × 28), G ∈ 49, 16, 4.",
        ),
        (
            "emphasis",
            "DelayPredict vs. _SkipPredict._The main difference between DelayPredict and"
            " SkipPredict is in the waiting time.",
        ),
        ("placeholder", "Then [MATH] is [MATH]-Lipschitz continuous."),
    ],
)
def test_detector_flags(kind, sentence):
    assert kind in detect(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        # prose that opens like a heading, rendered math, values, names
        "In Table 1, SimGRL demonstrates state-of-the-art performance in 4 out of 6 tasks.",
        "Based on Lemma 1, 2, and 3, Mat2Seq sequences satisfy uniqueness for crystal structures.",
        "For example, let Q ∈ ℝ^{d×d} be orthonormal, i.e., Q^⊤Q = I_d, and let c′_i = Qc^*_i.",
        "where K_H < 0 and ⟨·,·⟩_L is the Lorentz inner product",
        "If the batch size exceeds 24, the GPU memory cost of the KV cache will exceed the capacity.",
        "will not sample these actions, with probability 1.",
        'We compare 1) a random initialization, 2) a CLIP-based initialization ("a photo of a'
        ' [CLASS]" prompt), and 3) our CLIP+GPT-3 initialization.',
        "We have our given form for H 2 stated in Equation (30), suppose its SVD is H 2 = U 2 Σ V T 2.",
        # 0YUHjKjjUY: intact flattened math
        "The gradient map ∇ f : C → D transforms the distribution of points x ∈ C into a"
        " distribution over y = ∇ f ( x ) ∈ D.",
        "For [MATH] cameras, where [MATH] means the dot product between the [MATH]th column",
        # 00Bwl1woOJ: an identifier, not emphasis
        "RESeL_PPO. We apply RESeL's stabilization techniques [CIT] to PPO training.",
    ],
)
def test_detector_passes(sentence):
    assert detect(sentence) == []


def test_placeholder_share_and_count():
    assert placeholder_share("Then [MATH] is [MATH]-Lipschitz continuous.") == pytest.approx(0.4)
    assert placeholder_share("") == 0.0
    counts, n = count(
        ["Then [MATH] is [MATH]-Lipschitz continuous.", "Dataset We conduct experiments."]
    )
    assert n == 2 and counts == {"placeholder": 1, "heading": 1}
    assert list(KINDS) == ["heading", "footnote", "words", "flat_math", "emphasis", "placeholder"]
