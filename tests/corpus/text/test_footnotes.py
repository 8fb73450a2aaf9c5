"""Footnote marks removed where the paper's own footnote vouches for them (real excerpts)."""

from __future__ import annotations

from collections import Counter

from ratio.corpus.text.footnotes import WINDOW, strip_footnote_marks

# 49EjZytlus (docling): the mark is a bare number before the comma, the footnote a block.
GLARE = (
    "To overcome these challenges, we propose GLARE 1 , a reinforced active learning framework"
    " that reformulates VS as a Markov Decision Process (MDP).\n\n"
    "1 Source code is available at https://github.com/biomed-AI/GLARE\n\n"
)
# OONojmx3wH (Nougat): the mark is glued to the word, the footnote a "Footnote 6:" line.
TOOL = (
    "More generally, to avoid issues stemming from ECE bin choice, we recommend that"
    " practitioners utilize the smECE calibration measurement tool6 due to its theoretical"
    " guarantees and stability across our experiments.\n\n"
    "Footnote 6: https://github.com/apple/ml-calibration\n\n"
)
# 0GvEaa9prl (docling): the mark sits between two sentences.
CIRCUIT = (
    "then P n is a decomposable PC obtained by replacing the literals of C n with corresponding"
    " indicator functions, followed by smoothing the circuit. 6 Note that P n outputs a positive"
    " value on an input x if and only if S n ( x ) = 1 .\n\n"
    "6 Smoothing a decomposable PC takes polynomial (worst-case quadratic) time [8].\n\n"
)
# 0QNmAvQQqj (docling): "is 4," is a value although the paper has a footnote 4 a page later;
# 9osvTOYbT4 (docling): "interval 2," is a setting, beside a footnote 2.
HOPS = (
    "However, since the maximum number of reasoning hops required by our datasets is 4,"
    " additional layers beyond this offer limited benefit.\n\n"
    "4 https://platform.openai.com/docs/models/o4-mini\n\n"
)
INTERVAL = (
    "When comparing validation accuracy under the same wall-clock time, interval 5 achieves the"
    " highest performance, followed by interval 2, while interval 100 performs the worst.\n\n"
    "2 Evaluation time is also included in the reported wall-clock time. The model is evaluated"
    " every 10 iterations.\n\n"
)


def test_marks_are_removed_where_the_footnote_exists():
    counts: Counter = Counter()
    assert "we propose GLARE , a reinforced" in strip_footnote_marks(GLARE, counts)
    assert "measurement tool due to its" in strip_footnote_marks(TOOL, counts)
    assert "the circuit. Note that P n" in strip_footnote_marks(CIRCUIT, counts)
    assert counts["footnote_mark_removed"] == 3


def test_the_footnote_text_itself_is_kept():
    out = strip_footnote_marks(CIRCUIT)
    assert "6 Smoothing a decomposable PC takes polynomial" in out
    assert "S n ( x ) = 1 ." in out  # a value inside math, not a mark


def test_values_stay():
    assert strip_footnote_marks(HOPS) == HOPS  # after "is": a value
    assert strip_footnote_marks(INTERVAL) == INTERVAL  # after "interval": a setting
    # without the footnote there is no evidence for a mark
    text = GLARE.split("\n\n")[0]
    assert strip_footnote_marks(text) == text


def test_a_footnote_far_after_the_mark_is_no_evidence():
    far = GLARE.replace("\n\n1 Source", "\n\n" + "Filler text. " * (WINDOW // 12) + "\n\n1 Source")
    assert "GLARE 1 ," in strip_footnote_marks(far)
