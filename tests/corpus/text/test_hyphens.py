"""Line-break hyphen repair: broken words are joined, compounds keep their hyphen."""

from __future__ import annotations

from collections import Counter

import pytest

from ratio.corpus.text.hyphens import Vocabulary, decide, repair_hyphens


@pytest.mark.parametrize(
    ("raw", "fixed"),
    [
        # the examples, from the ACL Anthology Network text and a Markdown paper
        ("the most appro- priate senses", "the most appropriate senses"),
        ("split into sen- tences first", "split into sentences first"),
        ("time-\nsynchronized streams", "time-synchronized streams"),
        ("a fully auto-\nmatic method", "a fully automatic method"),
        ("semantically-\nrelated concepts", "semantically-related concepts"),
        ("co-\noccurrence counts", "co-occurrence counts"),
        ("state-of-the-\nart results", "state-of-the-art results"),
        ("Bayes-\nNash equilibria", "Bayes-Nash equilibria"),
        # suspended hyphens are left exactly as written
        ("pre- and post-processing", "pre- and post-processing"),
        ("string- to-string alignment", "string- to-string alignment"),
    ],
)
def test_repair_without_paper_evidence(raw, fixed):
    assert repair_hyphens(raw) == fixed


def test_the_papers_own_spelling_wins_over_the_word_list():
    # "WordNet" is written whole elsewhere, so the capitalized break is joined
    assert repair_hyphens("Word-\nNet (Fellbaum, 1998). WordNet grew.").startswith("WordNet (")
    # "data-base" is this paper's spelling, although "database" is an English word
    text = "a data-\nbase of facts; the data-base is large and the data-base is new"
    assert repair_hyphens(text).startswith("a data-base of")
    # a paragraph is repaired with the vocabulary of the whole paper
    vocab = Vocabulary("We keep the time-synchronized streams.")
    assert decide("time", "synchronized", vocab) == "hyphen"
    assert decide("synchro", "nized", Vocabulary("")) == "join"


def test_counts_and_untouched_text():
    counts: Counter = Counter()
    out = repair_hyphens("appro- priate and time-\nsynchronized, pre- and post-", counts=counts)
    assert out == "appropriate and time-synchronized, pre- and post-"
    assert counts == {"hyphen_joined": 1, "hyphen_kept": 1}
    plain = "No breaks here - a dash, 3D- printing and x-axis stay."
    assert repair_hyphens(plain) == plain
