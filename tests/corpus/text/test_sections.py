from __future__ import annotations

import pytest

from ratio.core.records import SECTION_CATEGORIES
from ratio.corpus.text.sections import categorize, strip_numbering


@pytest.mark.parametrize(
    ("heading", "category"),
    [
        ("Abstract", "abstract"),
        ("1 Introduction", "introduction"),
        ("1.1 Our Contributions", "introduction"),
        ("2 Related Work", "related_work"),
        ("Background", "related_work"),
        ("Prior Work", "related_work"),
        ("Background and Related Work", "related_work"),
        ("Preliminaries", "method"),
        ("Problem Setup", "method"),
        ("3.2 Our Approach", "method"),
        ("Proof of Theorem 3.2", "method"),
        ("Experiments", "experiments"),
        ("Experimental Setup", "experiments"),
        ("Ablation Study", "experiments"),
        ("Evaluation", "experiments"),
        ("Implementation Details", "experiments"),
        ("Main Results", "results"),
        ("Experimental Results", "results"),
        ("Limitations", "discussion"),
        ("Broader Impact", "discussion"),
        ("Discussion", "discussion"),
        ("Conclusion and Limitations", "conclusion"),
        ("7 Conclusions", "conclusion"),
        ("Appendix A: Proofs", "appendix"),
        ("Supplementary Material", "appendix"),
        ("Intro", "introduction"),
        ("Paper Organization", "introduction"),
        ("User Study", "experiments"),
        ("Robustness", "results"),
        ("Our Techniques", "method"),
        # generic topic words stay "other" so a subsection inherits its parent's category
        ("Reinforcement Learning", "other"),
        ("Acknowledgments", "other"),
        ("Warm-up", "other"),
        ("", "other"),
    ],
)
def test_categorize(heading, category):
    assert categorize(heading) == category
    assert category in SECTION_CATEGORIES


def test_strip_numbering():
    assert strip_numbering("3.2 Our Approach") == "Our Approach"
    assert strip_numbering("A.1 Guessing-Based Auditing") == "Guessing-Based Auditing"
    assert strip_numbering("Appendix B: Proofs") == "Proofs"
    assert strip_numbering("IV. RESULTS") == "RESULTS"
    # a bare letter is numbering only inside an appendix
    assert strip_numbering("A Moment Bound for Sums") == "A Moment Bound for Sums"
    assert strip_numbering("B Gaps", appendix=True) == "Gaps"
