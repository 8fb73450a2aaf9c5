"""Joined words split and kerned acronyms joined on vocabulary evidence (real excerpts)."""

from __future__ import annotations

import gzip
from collections import Counter

import pytest

from ratio.corpus.text.words import (
    VOCABULARY,
    corpus_vocabulary,
    count_vocabulary,
    join_kerned,
    repair_words,
    split_joined,
    write_vocabulary,
)


@pytest.mark.parametrize(
    ("paper", "text", "repaired"),
    [
        # docling lost the hyphen of a compound broken at a line end
        (
            "1DgSkx8L63",
            "we apply the LAION aesthetic predictor [25] for filtering lowquality samples, NSFW"
            " detection [50] to remove inappropriate content",
            "for filtering low-quality samples",
        ),
        (
            "JMq90N6lLe",
            "To address this challenge, we introduce FuncBind, a framework based on computer vision"
            " to generate targetconditioned, all-atom molecules across atomic systems.",
            "to generate target-conditioned, all-atom",
        ),
        # Nougat lost a space before a function word
        (
            "BtCrHwiBHP",
            "More generally, stochastic convex optimization can be reducedto online learning via"
            " the _online to batch conversion_[7].",
            "can be reduced to online learning",
        ),
    ],
)
def test_joined_words_are_split(paper, text, repaired):
    counts: Counter = Counter()
    assert repaired in repair_words(text, counts), paper
    assert counts["joined_word_split"] == 1


@pytest.mark.parametrize(
    "word",
    [
        "dataset",  # joined spellings the corpus uses
        "pretrained",
        "finetuning",  # beside "fine-tuning", but common in its own right
        "subgoal",
        "backpack",  # English words
        "denying",
        "trustor",  # "trust" + "or": a function word as a tail would split real words
        "realease",  # a misspelt "release", not "real ease"
        "matchability",  # a suffix is no word of its own here
    ],
)
def test_words_that_stay(word):
    assert split_joined(word) is None


def test_a_capitalized_name_stays_but_a_sentence_start_is_split():
    # 0bvc7Zslu3 (docling references): "Tableformer:" is a name
    name = "Ahmed Nassar, Nikolaos Livathinos, Maksym Lysak, and Peter Staar. Tableformer: Table"
    assert repair_words(name) == name
    # 0sUihPtncP (docling references): a title that opens with a compound that lost its hyphen
    title = "Huamin Wang, and Weiwei Xu. Highquality surface reconstruction using gaussian"
    assert "Weiwei Xu. High-quality surface reconstruction" in repair_words(title)


def test_math_is_left_alone():
    # 1DgSkx8L63's phrase beside a formula that holds the same letters
    text = r"for filtering lowquality samples \(\mathrm{lowquality}\)"
    assert repair_words(text) == r"for filtering low-quality samples \(\mathrm{lowquality}\)"


@pytest.mark.parametrize(
    ("paper", "text", "joined"),
    [
        # the acronym is spelled out right before it
        (
            "91l4ZTMpO4",
            "Our evaluations indicate GPT-4o utilizes voice activity detection (V AD), which"
            " restricts its interaction with non-speech content",
            "voice activity detection (VAD)",
        ),
        (
            "MZoOpD9NHV",
            "the first unified multimodal large language model (MLLM) for joint audio-video"
            " (JA V) comprehension and generation.",
            "joint audio-video (JAV) comprehension",
        ),
    ],
)
def test_kerned_acronyms_are_joined(paper, text, joined):
    counts: Counter = Counter()
    assert joined in join_kerned(text, counts), paper
    assert counts["kerned_acronym_joined"] == 1


def test_single_capitals_around_a_v_are_math():
    # 0KAdFd5zku (docling): "X V" are a variable and its index set
    text = "We refer to the joint distribution P ( X V ) = ⊗ v ∈ V P ( X v | X pa( v ) ) as"
    assert join_kerned(text) == text


def test_the_vocabulary_file_is_what_its_counter_writes(tmp_path):
    """The shipped vocabulary's header says where it came from, and writing is deterministic."""
    with gzip.open(VOCABULARY, "rt") as fh:
        head = fh.readline()
    assert head.startswith("# papers: ") and "Nougat" in head
    vocab = corpus_vocabulary()
    assert vocab["dataset"] > 1000 and vocab["low-quality"] > 10 and "lowquality" not in vocab
    df, n = count_vocabulary([r"A low-quality \(x_{lowquality}\) sample.", "A sample."])
    assert n == 2 and df["sample"] == 2 and df["low-quality"] == 1 and "lowquality" not in df
    a, b = tmp_path / "a.tsv.gz", tmp_path / "b.tsv.gz"
    assert write_vocabulary(df, n, a, "test", min_df=1) == write_vocabulary(df, n, b, "test", 1)
    assert a.read_bytes() == b.read_bytes()
