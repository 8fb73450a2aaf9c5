"""Footnote markers left in the text as plain digits ("GLARE 1 , a", "tool6 due to", "head 2 .").

Nougat writes most markers as superscript math, which ``clean_inline`` removes, but sometimes
glues the digit to the word ("tool6"); docling writes every marker as a bare number after the
word ("we propose GLARE 1 , a reinforced ..."). A bare number is also how a paper writes a value
("layers 1 and 2", "top 5 accuracy"), so the digit is removed only where the paper shows it was a
footnote mark: the paper has a footnote with that number (Nougat's "Footnote 6: ..." or docling's
block "6 Code is available ...") at most ``WINDOW`` characters after the mark, and the mark is
the only candidate for that footnote in that stretch. A candidate is a number of one or two
digits

* glued to a lowercase word of three or more letters ("tool6", "assumptions2."), or
* after a word of two or more letters and a space, and followed by punctuation, the end of
  the line or a function word ("GLARE 1 , a", "earlier 6 )", "SimPO 8 and use"), or
* between a sentence's end and the next one's capital ("operator. 2 Then"),

and never after a word that takes a number ("Table 2", "top 5", "of 3", "step 4").
Runs on the raw Markdown, where the footnotes still are (``ratio.corpus.text.blocks`` drops them).

Tested by tests/corpus/text/test_footnotes.py.
"""

from __future__ import annotations

import re
from collections import Counter

WINDOW = 8000  # a page and a half of text: docling puts a footnote at its page's end

# Where a footnote's own text starts: Nougat "Footnote 6:", docling a block "6 Code is ...".
_NOTE = re.compile(r"Footnote\s*(\d{1,2})\s*:|(?:^|\n\n)(\d{1,2}) (?=https?://|www\.|[A-Z][a-z])")
_GLUED = re.compile(r"(?<![A-Za-z0-9\-_\\])([a-z]{3,})(\d{1,2})(?=[ \t]|[,.;:)](?!\d)|$)", re.M)
# What follows a mark inside a sentence: a function word or a verb form, never the noun a
# value counts ("totaling 20 videos", "use 4 heads").
_FOLLOW = (
    "and or but for to with of in on at by from as is are was were be has have that which where"
    " while when using via alongside than"
).split()
_SPACED = re.compile(
    r"(?<![A-Za-z0-9\-_\\])([A-Za-z][A-Za-z\-]*[A-Za-z]|\))[ \t](\d{1,2})"
    r"(?=[ \t]?[,;)]|[ \t]:|:$|[ \t]?\.(?!\d)|[ \t]*$|[ \t](?:" + "|".join(_FOLLOW) + r")\b)",
    re.M,
)
_AFTER_SENTENCE = re.compile(r"(?<=[a-z)][.!?])[ \t](\d{1,2})(?=[ \t][A-Z][a-z])")

# Words after which a number is a value or a label, not a mark.
TAKES_NUMBER = frozenset(
    """
    table tables figure figures fig section sections sec appendix chapter eq equation equations
    theorem lemma proposition corollary definition assumption assumptions remark example claim
    step steps stage phase level levels layer layers round rounds epoch epochs iteration
    iterations part case cases type task tasks setting group version top rank order degree size
    dimension dim length width depth number seed batch class classes problem question item line
    lines row column page pages algorithm alg exercise model block head heads module option
    of to is are was were be by than with from at and or for in on the all only about over under
    first last every each per around approximately nearly exactly least most equal equals
    between within up down after before into onto times since until among set k n volume vol
    value values index weight score rate ratio factor scale constant parameter threshold budget
    probability near being exceeds exceed reaches reach interval window horizon variant
    """.split()
)


def _notes(text: str) -> list[tuple[int, int, int]]:
    """(start, end, number) of every footnote's text in the paper: Nougat's runs to the end of
    its line, docling's to the end of its block."""
    out = []
    for m in _NOTE.finditer(text):
        stop = "\n" if m.group(1) else "\n\n"
        end = text.find(stop, m.end())
        out.append((m.start(), end if end >= 0 else len(text), int(m.group(1) or m.group(2))))
    return out


def _candidates(text: str) -> list[tuple[int, int, int]]:
    """(start, end, number) of each possible mark; start..end is what removing it deletes."""
    found = []
    for m in _GLUED.finditer(text):
        if m.group(1).lower() not in TAKES_NUMBER:
            found.append((m.start(2), m.end(2), int(m.group(2))))
    for m in _SPACED.finditer(text):
        if m.group(1).lower() not in TAKES_NUMBER:
            found.append((m.start(2) - 1, m.end(2), int(m.group(2))))
    for m in _AFTER_SENTENCE.finditer(text):
        if text[m.start() - 3 : m.start() - 1] == "\\)":
            continue  # a step number after inline math ("... to M. 2 Copy"), not a mark
        found.append((m.start(1) - 1, m.end(1), int(m.group(1))))
    return sorted(found)


def strip_footnote_marks(text: str, counts: Counter | None = None) -> str:
    """Remove the footnote marks the paper's own footnotes vouch for (see the module docstring)."""
    if "Footnote" not in text and "\n\n" not in text:
        return text
    notes = _notes(text)
    if not notes:
        return text
    # a footnote's own numbers (values, other marks) are no marks for another footnote
    candidates = [c for c in _candidates(text) if not any(a <= c[0] < b for a, b, _ in notes)]
    drop: list[tuple[int, int]] = []
    for pos, _, number in notes:
        near = [(s, e) for s, e, n in candidates if n == number and pos - WINDOW <= s < pos]
        if len(near) == 1:
            drop.append(near[0])
    if not drop:
        return text
    out: list[str] = []
    last = 0
    for start, end in sorted(set(drop)):
        if start < last:
            continue
        out.append(text[last:start])
        last = end
    if counts is not None:
        counts["footnote_mark_removed"] += len(out)
    return "".join(out) + text[last:]
