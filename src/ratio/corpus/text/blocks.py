"""What one blank-line block of extractor Markdown holds: paragraph items, or nothing.

Tables, captions, footnotes, algorithm lines, reference entries and symbol debris are dropped
(counted in ``drops`` by reason). Display math splits a paragraph into items with a hard break
between them: the sentences around it are not adjacent prose. A list item is a paragraph of its
own; soft-wrapped lines are joined, repairing line-end hyphens.

Tested by tests/corpus/text/test_markdown.py, tests/corpus/text/test_plain.py.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ratio.corpus.text.hyphens import Vocabulary, decide

# Display math inside a block, with an optional trailing equation number "(3.1)".
_DISPLAY_MATH = re.compile(
    r"(?:\\\[.*?\\\]|\$\$.*?\$\$"
    r"|\\begin\{(equation|align|gather|multline|eqnarray|displaymath)(\*?)\}.*?\\end\{\1\2\})"
    r"(?:[ \t]*\([ \t]*[A-Z]?[\d.]+[a-z]?[ \t]*\))?",
    re.S,
)
LIST_ITEM = re.compile(r"^[ \t]*(?:[*+\-\u2022\u25e6\u25aa\u2023\u2013]|\d{1,2}[.)])[ \t]+")
CAPTION = re.compile(
    r"^[\s*_]*(?:Figure|Fig\.|Table|Tab\.|Algorithm|Listing|Alg\.)[ \t~]*"
    r"(?:S?[A-Z]?\d+(?:\.\d+)*[a-z]?|[IVX]+)[ \t*_]*(?:[:.|\-\u2013\u2014]|\*\*|$)"
)
ALGO_TITLE = re.compile(r"^[\s*_]*(?:Algorithm|Procedure)\s*\d+\b")
_FOOTNOTE = re.compile(
    r"^(?:Footnote\s*[^\s:]*\s*:"  # Nougat "Footnote 3: ..."
    r"|\\\(\s*\{\}\^\{[^}]*\}\s*\\\)"  # Nougat superscript marker first
    r"|[\u2020\u2021\u00a7\u00b6*\u2217\u02da]\s*(?=[A-Z])"  # "† Corresponding author", "*Equal"
    r"|\d{1,2}[ \t]+(?=https?://|www\.|[A-Z][a-z]))"  # docling "3 Notice that ..."
)
_INLINE_FOOTNOTE = re.compile(r"\s*\bFootnote\s*[^\s:]{0,6}\s*:.*$")
_ALGO_LINE = re.compile(r"^(?:\d{1,3}:|Require:|Ensure:)\s")
_SUBCAPTION = re.compile(r"^\([a-z]\)\s")
_REFERENCE_ENTRY = re.compile(r"^[\s*\-]*\[\d{1,4}\]\s*\S")
YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_PIPE_LINE = re.compile(r"^\s*\|")
_TABLE_ROW = re.compile(r"(?:&.*\\\\|\\hline|\\toprule|\\midrule|\\bottomrule|\\multicolumn)")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+|\{[^}]*\}@")
_WORDY = re.compile(r"[A-Za-z]{3,} [A-Za-z]{2,} [A-Za-z]{2,} [A-Za-z]{2,}")
_LETTERS = re.compile(r"[^\W\d_]+")
_INLINE_MATH = re.compile(r"\\\(.*?\\\)|\$[^$]*\$", re.S)
_HYPHEN_END = re.compile(r"(?<![A-Za-z0-9\-])[A-Za-z]+(?:-[A-Za-z]+)*-$")
_WORD_START = re.compile(r"[A-Za-z]+")


def letters_ok(text: str) -> bool:
    """False for blocks that are mostly symbols, digits or math (figure debris, axis labels)."""
    if _WORDY.search(text, 0, 400):
        return True  # four plain words in a row: prose (fast path)
    if len(text) > 400:
        text = text[:400]  # the head is representative; counting whole paragraphs is slow
    if "\\(" in text or "$" in text:
        text = _INLINE_MATH.sub(" x ", text)
    n_letters = sum(map(len, _LETTERS.findall(text)))
    if n_letters < 4:
        return False
    return n_letters >= 0.5 * (len(text) - text.count(" "))


def _join_lines(lines: list[str], vocab: Vocabulary | None = None) -> str:
    """Join soft-wrapped lines, repairing hyphenation at line ends ("representa-\\ntion").

    ``ratio.corpus.text.hyphens.decide`` tells a broken word from a compound that broke at its
    hyphen ("time-\\nsynchronized" stays hyphenated).
    """
    out = lines[0].strip()
    for nxt in lines[1:]:
        nxt = nxt.strip()
        if not nxt:
            continue
        verdict = None
        if out.endswith("-") and nxt[:1].isalpha():
            m = _HYPHEN_END.search(out)
            right = _WORD_START.match(nxt)
            verdict = decide(m.group(0)[:-1], right.group(0), vocab) if m and right else None
        if verdict == "join":
            out = out[:-1] + nxt
        else:
            out += nxt if verdict == "hyphen" else " " + nxt
    return out


def _is_table_row(ln: str) -> bool:
    """A LaTeX tabular row ("a & b \\\\") or rule, found with plain substring tests (hot path)."""
    if "\\" not in ln:
        return False
    if "&" in ln and "\\\\" in ln:
        return True
    return (
        "\\hline" in ln
        or "rule" in ln
        and _TABLE_ROW.search(ln) is not None
        or "\\multicolumn" in ln
    )


def _is_table_block(lines: list[str]) -> bool:
    pipes = sum(1 for ln in lines if _PIPE_LINE.match(ln))
    if pipes and pipes * 2 >= len(lines):
        return True
    rows = sum(1 for ln in lines if _is_table_row(ln))
    return rows > 0 and rows * 2 >= len(lines)


@dataclass(slots=True)
class Item:
    """A paragraph candidate: text, whether it may be joined to its neighbours, and whether a
    display equation the cleanup removed came right after it (its last sentence may lead
    into that equation: "we have", "is defined as follows:")."""

    text: str
    is_list: bool
    hard_before: bool
    math_after: bool = False


# Stands in a block's item list where a display equation was removed.
DISPLAY = Item("", False, True)


def block_items(
    lines: list[str], drops: Counter, vocab: Vocabulary | None = None
) -> list[Item] | None:
    """Paragraph items of one blank-line block, or None when the whole block is dropped."""
    if _is_table_block(lines):
        drops["table"] += 1
        return None
    first = lines[0].lstrip()
    if CAPTION.match(first):
        drops["caption"] += 1
        return None
    # Break the block into list items (each its own paragraph) and prose runs.
    groups: list[tuple[bool, list[str]]] = []
    for ln in lines:
        if _PIPE_LINE.match(ln):
            continue
        if "Footnote" in ln:
            # Nougat appends footnotes to the line they interrupt: "...\);10 Footnote 10: ..."
            m = _INLINE_FOOTNOTE.search(ln)
            if m and m.start() > 0:
                drops["footnote"] += 1
                ln = ln[: m.start()]
        m = LIST_ITEM.match(ln)
        if m:
            groups.append((True, [ln[m.end() :]]))
        elif groups:
            groups[-1][1].append(ln)
        else:
            groups.append((False, [ln]))
    items: list[Item] = []
    for is_list, glines in groups:
        text = _join_lines(glines, vocab)
        # Display math splits the paragraph: the two sides are not adjacent prose.
        if "\\[" in text or "$$" in text or "\\begin{" in text:
            # re.split also returns the two capture groups; keep only the prose pieces
            pieces = _DISPLAY_MATH.split(text)[::3]
            if len(pieces) > 1:
                drops["display_math"] += len(pieces) - 1
            for k, piece in enumerate(pieces):
                if k:
                    items.append(DISPLAY)
                piece = piece.strip()
                if piece:
                    items.append(Item(piece, is_list, k > 0))
            continue
        items.append(Item(text, is_list, False))
    return items


def keep_item(item: Item, drops: Counter) -> bool:
    reason = _drop_reason(item)
    if reason is not None:
        drops[reason] += 1
    return reason is None


def _drop_reason(item: Item) -> str | None:
    t = item.text
    if (
        CAPTION.match(t)
        or (ALGO_TITLE.match(t) and len(t) < 200 and t[-1] not in ".:")
        or (_SUBCAPTION.match(t) and len(t) < 150 and t[-1] not in ".:;,")
    ):
        return "caption"
    if t.startswith(("<latexit", "&lt;latexi")):
        return "non_text"
    if _ALGO_LINE.match(t) and len(t) < 300:
        return "code"
    if _FOOTNOTE.match(t) and not item.is_list:
        return "footnote"
    if _REFERENCE_ENTRY.match(t) and YEAR.search(t):
        return "reference"
    return None if letters_ok(t) else "non_text"
