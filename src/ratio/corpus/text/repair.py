"""Paper-level repairs of extractor artifacts that damage sentences: line numbers, footnote
marks, small caps, acronyms glued to the next word, joined and kerned words.

Each repair needs evidence from the whole paper, so it runs on a paper's raw Markdown before
block parsing (``parse_markdown``), and each one changes text only when that evidence is there:

* **Line numbers.** Review-version PDFs number their lines, and docling/Nougat keep the numbers
  as text: whole blocks of bare integers ("258", "259", ...) and numbers inside sentences
  ("threshold, 283 which naturally ... when 284 we keep"). A paper counts as line-numbered when
  at least ``MIN_NUMBERED_LINES`` bare-integer lines are consecutive with a neighbour; in such a
  paper an integer token is removed when it sits in a run of at least three consecutive values
  (``n``, ``n+1``, ...), each within ``LINE_WINDOW`` characters of the previous one, in text
  order. Real numbers rarely form such runs ("from 2019 to 2020" is two, "layers 1, 2, 3" is
  comma-separated and never a candidate).
* **Small caps.** Bold or small-caps initials come out as "S patioT emporal R etrievalA ugmented"
  or "Cam ouflaged". A head (one capital, or a short capitalized piece) and the lowercase fragment
  after it are joined when the joined word occurs elsewhere in the paper and the fragment never
  occurs there as a word of its own ("ouflaged", "patio" do not; "model" in "A model" does).
  The head "A"/"I" is itself a word, so when the fragment is an English word too ("A round")
  it is joined only inside a run of such breaks ("M edically A ccurate G eneration").
* **Glued acronyms.** "BMWboosts" is split into "BMW boosts" when both parts occur as words of
  their own in the paper and the glued form is rare in it; "XGBoost", "GANs", "ResNets" do not
  qualify (no standalone tail, or a tail shorter than three letters).

Footnote marks (``ratio.corpus.text.footnotes``) and joined or kerned words
(``ratio.corpus.text.words``) have modules of their own. Marks go after the line numbers, which
would otherwise read as marks, and before the word repairs, which must not see "tool6".
"""

from __future__ import annotations

import re
from collections import Counter

from ratio.corpus.text.footnotes import strip_footnote_marks
from ratio.corpus.text.hyphens import is_word
from ratio.corpus.text.words import repair_words

MIN_NUMBERED_LINES = 10
LINE_WINDOW = 400
MIN_RUN = 3
MIN_LINE_CHARS = 25  # consecutive numbers closer than this are values ("x 1 , x 2"), not lines

# An integer on a line of its own (a line number docling kept as a block). The patterns below
# open with a literal or a character class so the regex engine can skip ahead to candidates;
# what must come before a match is checked in Python.
_BARE_LINE = re.compile(r"\n(\d{1,4})[ \t]*(?=\n|$)")
# An integer followed by a space or a line end. A decimal point, comma, bracket or percent sign
# after it (docling spaces them: "0 . 5") makes it a value, not a line number.
_INT_TOKEN = re.compile(r"\d{1,4}(?![\d])(?=[ \t]*(?:\n|$)|[ \t]+(?![ \t.,;:)\]}%]))")
_YEARS = range(1900, 2100)

_TOKEN = re.compile(r"[A-Za-z]+")
# A small-caps break: a head (a capital and up to three lowercase letters) then a space and a
# lowercase fragment ending the word. The head must start a word, or be one capital glued to a
# lowercase letter ("S patioT emporal": "T" heads "emporal").
_SMALL_CAPS = re.compile(r"([A-Z][a-z]{0,3}) ([a-z]{2,})(?![a-z])")
_WORD_HEADS = frozenset({"A", "I"})
_RUN_GAP = 40  # characters between two breaks of one small-caps phrase
_GLUED_ACRONYM = re.compile(r"[A-Z][A-Z0-9]+([a-z]{3,})(?![A-Za-z0-9])")
_MAX_GLUED = 2  # a glued form used more often than this is a name ("ONNXruntime" style)


def repair_paper(text: str, counts: Counter | None = None) -> str:
    """All repairs in order; ``counts`` gets ``line_number_removed``, ``footnote_mark_removed``,
    ``small_caps_joined``, ``glued_acronym_split``, ``kerned_acronym_joined`` and
    ``joined_word_split``."""
    text = strip_line_numbers(text, counts)
    text = strip_footnote_marks(text, counts)
    words = Counter(_TOKEN.findall(text))
    text = join_small_caps(text, counts, words)
    text = split_glued_acronyms(text, counts, words)
    return repair_words(text, counts)


def _splice(text: str, out: list[str], last: int, counts: Counter | None, key: str) -> str:
    """``out`` (one piece per repair) and the rest of ``text`` from ``last``, the repairs
    counted under ``key``; ``text`` itself when there were none."""
    if not out:
        return text
    if counts is not None:
        counts[key] += len(out)
    return "".join(out) + text[last:]


def _lower(words: Counter) -> Counter:
    out: Counter = Counter()
    for w, c in words.items():
        out[w.lower()] += c
    return out


# ----------------------------------------------------------------------------- line numbers


def _line_apart(text: str, a: int, b: int) -> bool:
    """Whether positions ``a`` < ``b`` can be two consecutive line numbers: a line of text
    apart, or on bare lines with only whitespace between them."""
    gap = b - a
    if gap > LINE_WINDOW:
        return False
    return gap >= MIN_LINE_CHARS or not text[a:b].lstrip("0123456789").strip()


def _runs(text: str, tokens: list[tuple[int, int]]) -> list[bool]:
    """For each (position, value) token, whether it is in a run of ``MIN_RUN`` consecutive values.

    ``back[i]`` is the run length ending at token ``i`` (its predecessor is the latest earlier
    token holding ``value - 1`` a line before it, see ``_line_apart``), ``ahead[i]`` the length
    starting there; a token belongs to a run of ``back + ahead - 1`` tokens.
    """
    n = len(tokens)
    back = [1] * n
    prev = [-1] * n
    last_at: dict[int, int] = {}  # value -> index of its latest token
    for i, (pos, val) in enumerate(tokens):
        j = last_at.get(val - 1)
        if j is not None and _line_apart(text, tokens[j][0], pos):
            back[i] = back[j] + 1
            prev[i] = j
        last_at[val] = i
    ahead = [1] * n
    for i in range(n - 1, -1, -1):
        j = prev[i]
        if j >= 0 and ahead[i] + 1 > ahead[j]:
            ahead[j] = ahead[i] + 1
    return [back[i] + ahead[i] - 1 >= MIN_RUN for i in range(n)]


def is_line_numbered(text: str) -> bool:
    """True when the paper carries PDF line numbers as bare-integer lines."""
    values = {int(v) for v in _BARE_LINE.findall(text)}
    if len(values) < MIN_NUMBERED_LINES:
        return False
    linked = sum(1 for v in values if v - 1 in values or v + 1 in values)
    return linked >= MIN_NUMBERED_LINES


def _candidates(text: str) -> list[tuple[int, int, int]]:
    """(start, end, value) of the integer tokens that could be line numbers.

    A token starts a word (after a space or line break) or is glued to the end of one
    ("QwQ144 Preview", "transformer41"). Years never are line numbers; below 10 (the title
    block) only a bare line is, since small numbers inside prose are labels ("RQ3", "G 2 δ").
    """
    out = []
    for m in _INT_TOKEN.finditer(text):
        start, end = m.span()
        before = text[start - 1] if start else "\n"
        if not (before in " \t\n" or before.isascii() and before.isalpha()):
            continue
        value = int(m.group())
        if value in _YEARS:
            continue
        if value < 10:
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", end)
            line = text[line_start : line_end if line_end >= 0 else len(text)]
            if line.strip(" \t0123456789"):
                continue
        out.append((start, end, value))
    return out


def strip_line_numbers(text: str, counts: Counter | None = None) -> str:
    """Remove PDF line numbers from a line-numbered paper (see the module docstring)."""
    if not is_line_numbered(text):
        return text
    found = _candidates(text)
    in_run = _runs(text, [(start, value) for start, _, value in found])
    out: list[str] = []
    last = 0
    for (start, end, _), drop in zip(found, in_run, strict=True):
        if not drop:
            continue
        # take one neighbouring space with the number so "a 283 b" becomes "a b"; a number
        # glued to a word ("se797 curely") sat in a broken word, so its space goes too
        if end < len(text) and text[end] in " \t":
            end += 1
        elif start > last and text[start - 1] in " \t":
            start -= 1
        out.append(text[last:start])
        last = end
    return _splice(text, out, last, counts, "line_number_removed")


# ----------------------------------------------------------------------------- small caps


def join_small_caps(text: str, counts: Counter | None = None, words: Counter | None = None) -> str:
    """Join small-caps breaks ("Cam ouflaged" -> "Camouflaged") the paper's own words support.

    ``words`` is the paper's case-sensitive token count (computed when not given).
    """
    breaks = []
    for m in _SMALL_CAPS.finditer(text):
        start = m.start()
        before = text[start - 1] if start else " "
        if before.isalpha():
            # only a one-capital head may be glued, and only to a lowercase letter
            if not (before.islower() and m.end(1) - start == 1):
                continue
        elif before.isalnum():
            continue
        breaks.append(m)
    if not breaks:
        return text
    vocab = _lower(words if words is not None else Counter(_TOKEN.findall(text)))
    # a fragment or head counts as a word only where it occurs outside the candidate breaks
    as_fragment = Counter(m.group(2) for m in breaks)
    as_head = Counter(m.group(1).lower() for m in breaks)
    ok: list[bool] = []
    for m in breaks:
        head, frag = m.group(1), m.group(2)
        low_head = head.lower()
        good = vocab[low_head + frag] > 0 and vocab[frag] <= as_fragment[frag]
        if good and len(head) > 1:
            # a multi-letter head must not be a word of its own ("The playerin", "Open babel")
            good = vocab[low_head] <= as_head[low_head]
        ok.append(good)
    out: list[str] = []
    last = 0
    for i, m in enumerate(breaks):
        good = ok[i]
        if good and m.group(1) in _WORD_HEADS and is_word(m.group(2)):
            near_before = i > 0 and ok[i - 1] and m.start() - breaks[i - 1].end() <= _RUN_GAP
            near_after = (
                i + 1 < len(breaks) and ok[i + 1] and breaks[i + 1].start() - m.end() <= _RUN_GAP
            )
            good = near_before or near_after
        if good:  # drop the space after the head
            out.append(text[last : m.end(1)])
            last = m.end(1) + 1
    return _splice(text, out, last, counts, "small_caps_joined")


# ----------------------------------------------------------------------------- glued acronyms


def split_glued_acronyms(
    text: str, counts: Counter | None = None, words: Counter | None = None
) -> str:
    """Split an acronym glued to the next word ("BMWboosts" -> "BMW boosts") when both occur."""
    found = [
        m
        for m in _GLUED_ACRONYM.finditer(text)
        if not (m.start() and text[m.start() - 1].isalnum())
    ]
    if not found:
        return text
    words = words if words is not None else Counter(_TOKEN.findall(text))
    lower = _lower(words)
    glued = Counter(m.group(0) for m in found)
    out: list[str] = []
    last = 0
    for m in found:
        acronym, tail = text[m.start() : m.start(1)], m.group(1)
        # case-sensitive: "BMW" must occur as written; the tail as a word in any case
        if glued[m.group(0)] > _MAX_GLUED or not words[acronym] or not lower[tail]:
            continue
        out.append(text[last : m.start(1)] + " ")
        last = m.start(1)
    return _splice(text, out, last, counts, "glued_acronym_split")
