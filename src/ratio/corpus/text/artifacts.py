"""Detectors for the text artifacts the strict audit found in mined sentences (issue 32).

The audits label a pair on its content "as if repaired" (docs/annotation-guideline.md, T1),
but the benchmark text is what retrievers see, so how often each artifact survives ingest is
measured on its own (``scripts/text_artifacts.py``, docs/precision-audit.md). Each detector is
a stated surface test on one sentence, so a rate can be recomputed and a flagged sentence
explained; the repairs (``runin``, ``footnotes``, ``words``, ``flatmath``, ``clean``) use
evidence from the whole paper, which a sentence alone does not have, so a detector is wider
than its repair and its rate after the repairs counts what they left. What each one flags:

* ``heading`` - a run-in heading fused into the sentence or standing alone: the sentence opens
  with a title-case phrase (capitalized words, numbers and short function words, first word no
  sentence opener) directly followed by a capitalized sentence opener and a lowercase word
  ("Dataset We conduct ...", "Query Branch Directly aligning ...", "Area-Biased Splitting
  Additionally, we ..."), or with a title-case phrase of two or more capitalized words and a
  colon ("New Problems: To mitigate ..."); or the whole sentence is such a phrase of at most
  12 words ("Graph Prompt Feature-Plus (GPF-plus).").
* ``footnote`` - a footnote mark fused to a word: one or two digits glued to a lowercase word
  of four or more letters that is an English or corpus word ("tool6", "repository3."), not one
  that takes a number ("step2", ``footnotes.TAKES_NUMBER``) or names a numbered thing
  ("relu6", "cifar10"); or a number between a sentence's end and a capital ("operator. 2
  Then"). docling's spaced marks ("GLARE 1 , a") read "GLARE 1, a" after cleanup, as a value
  does ("with probability 1, a"), so a sentence alone cannot show them and they are not
  counted here; the repair finds them with the paper's footnotes.
* ``words`` - a joined or split word: a lowercase token of six or more letters that is no word
  (pyspellchecker, and at most one paper of the corpus vocabulary ``words.corpus_vocabulary``)
  but splits into two corpus words of 30+ papers each, the first no bound prefix ("pre", "sub",
  "eigen") and the second no suffix ("ability") ("lowquality", "targetconditioned",
  "reducedto"); a placeholder glued to a word ("conversion[CIT]", "[MATH]norm"); capitals
  split at a "V", four characters at least and not in a script ("V AD", "JA V", "CA VP"); a
  small-caps break whose joined form is an English word and whose
  tail is not ("Param etric").
* ``flat_math`` - math flattened with its structure lost: ``flatmath.lost_structure`` (two
  numbers side by side, a number after a closing norm bar or bracket, a list of numbers after a
  set relation without brackets, in a sentence with a math operator: "ϕ ( x ) = 1 2 ( ... ) 2",
  "G ∈ 64, 16, 4"), or a LaTeX command left in the text ("\\mathbf").
* ``emphasis`` - a Markdown emphasis mark left in: "_" or "*" (one or two) opening a word after
  a space, the start or a bracket ("_Let", "*Note"), or closing one before a space, the end or
  punctuation ("holds._"), and "**" anywhere; a script of rendered math ("x_i", "‖x‖_2",
  "x^*") is no emphasis.
* ``placeholder`` - the key content is only placeholders: :func:`placeholder_share` is at least
  ``PLACEHOLDER_SHARE`` ("If [MATH], then at least one of [MATH] and [MATH] is at least [MATH].").

Tested by tests/corpus/text/test_artifacts.py.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from ratio.corpus.text.flatmath import lost_structure
from ratio.corpus.text.footnotes import TAKES_NUMBER
from ratio.corpus.text.hyphens import english_words, is_word
from ratio.corpus.text.words import FUNCTION_TAILS, MIN_PART_DF, SUFFIX_TAILS, corpus_vocabulary

KINDS: dict[str, str] = {
    "heading": "(a) heading fused into the sentence, or a heading-only sentence",
    "footnote": "(b) footnote mark fused to a word or punctuation",
    "words": "(c) joined or split word",
    "flat_math": "(d) flattened math with braces or scripts lost, or LaTeX left",
    "emphasis": "(e) Markdown emphasis mark left in",
    "placeholder": "(f) key content only [MATH]/[CIT] placeholders",
}
PLACEHOLDER_SHARE = 0.25

_FW = r"(?:of|and|for|the|in|on|with|to|via|a|an|from|by|at|as|or|vs\.?)"
_CAP = r"[A-Z][\w'’\-]*"
_HEAD_WORD = rf"(?:{_CAP}|{_FW}|\d[\d.]*)"
_FIRST_NOT = (
    r"(?!(?:In|On|For|By|From|With|As|At|To|Under|Using|Given|Following|Based|Compared|See|Unlike"
    r"|Like|After|Before|During|Since|While|When|If|Although|Because|Despite|Consider|Let|Note"
    r"|Recall|Suppose|Assume|Thus|Therefore|Hence|Here|There|This|These|The|A|An|We|Our|It|They"
    r"|Its|Their|However|Moreover|Furthermore|Additionally|Specifically|Similarly|Finally|First"
    r"|Second|Third|Next|Then|Also|Both|Each|All|Most|Many|Some|One|Table|Figure|Fig|Section"
    r"|Appendix|Eq|Such|Only|Even|Instead|Overall)\b)"
)
_OPENER = (
    r"(?:We|Our|This|These|The|It|They|There|Here|In|To|For|Since|Given|Let|Note|However,"
    r"|Additionally,|Moreover,|Furthermore,|Specifically,|First,|Finally,|[A-Z][a-z]+ly,?)"
)
_FUSED = re.compile(rf"^{_FIRST_NOT}{_CAP}(?: {_HEAD_WORD}){{0,6}}? {_OPENER} [a-z(\[]")
_COLON = re.compile(rf"^{_FIRST_NOT}(?P<head>{_CAP}(?: {_HEAD_WORD}){{1,7}}): \S")
_PART = rf"(?:{_CAP}|{_FW}|\d[\d.]*|\([^()]{{1,40}}\)|[-–—&])"
_ONLY = re.compile(rf"^{_FIRST_NOT}{_CAP}(?: {_PART}){{1,11}}[.:]?$")

_GLUED_MARK = re.compile(r"(?<![\w\-])([a-z]{4,})\d{1,2}(?=[\s,.;:)]|$)")
_AFTER_SENTENCE = re.compile(r"[a-z][.!?] \d{1,2} [A-Z][a-z]")
# Lowercase names that carry a number of their own ("relu6", "conv3", "cifar10").
_NUMBERED_NAMES = frozenset("conv relu gelu silu float uint bits fold cuda mnist cifar wmt".split())

_TOKEN = re.compile(r"(?<![\w\-\[/.@])[a-z]{6,}(?![\w\-\]/@])")
# Bound prefixes and suffixes make closed words ("prefilling", "submixtures", "eigenprojections",
# "selectability") that are rare, not broken.
_PREFIXES = frozenset(
    "pre sub re un non over under back bit eigen semi multi co inter intra super hyper mis out up"
    " down counter mid micro macro mini meta poly auto bi tri uni de dis en ex extra ultra post"
    " anti proto trans".split()
)
_GLUED_PLACEHOLDER = re.compile(r"[A-Za-z]\[(?:CIT|MATH)\]|\[(?:CIT|MATH)\][A-Za-z]{3}")
# three letters at least: "X V", "V T" are variables; scripts ("∇_θ^X V^π") are math
_KERNED = re.compile(
    r"(?<![\w\-^_])(?=(?:[A-Z] ?){3})(?:[A-Z]{0,3}V [A-Z]{1,4}|[A-Z]{1,4} V[A-Z]{0,4})s?(?![\w\-^_])"
)
_SMALL_CAPS = re.compile(r"(?<![\w\-])([A-Z][a-z]{0,3}) ([a-z]{2,})(?![\w\-])")
_LATEX = re.compile(r"\\[A-Za-z]{2,}")
# An emphasis mark opens after a space, the start or an opening bracket and closes before a
# space, the end or punctuation; a rendered script follows a symbol or a letter ("‖x‖_2",
# "⟨·,·⟩_L", "c^*_i") and is no emphasis.
_EMPHASIS = re.compile(
    r"(?:^|(?<=[\s(\[\"']))(?:__?|\*\*?)(?=[A-Za-z])"
    r"|(?<=[A-Za-z.,;:!?)])(?:__?|\*\*?)(?=\s|$|[,.;:)])(?<!\^\*)"
    r"|(?<![{^*])\*\*(?!})"
)
_PLACEHOLDER = re.compile(r"\[(?:MATH|CIT)\]")


def placeholder_share(sentence: str) -> float:
    """The share of a sentence's whitespace tokens that hold a ``[MATH]`` or ``[CIT]``."""
    tokens = sentence.split()
    if not tokens:
        return 0.0
    return sum(1 for t in tokens if _PLACEHOLDER.search(t)) / len(tokens)


def _heading(s: str) -> bool:
    if _FUSED.search(s):
        return True
    m = _COLON.search(s)
    if m and sum(w[:1].isupper() for w in m.group("head").split()) >= 2:
        return True
    if _ONLY.search(s):
        words = s.rstrip(".:").split()
        return sum(w[:1].isupper() for w in words) >= 2
    return False


def _footnote(s: str) -> bool:
    for m in _GLUED_MARK.finditer(s):
        word = m.group(1)
        if word in TAKES_NUMBER or word in _NUMBERED_NAMES:
            continue
        if is_word(word) or corpus_vocabulary().get(word, 0) >= MIN_PART_DF:
            return True
    return _AFTER_SENTENCE.search(s) is not None


def joined_word(token: str) -> bool:
    """A lowercase token that is no word but two frequent corpus words run together."""
    vocab = corpus_vocabulary()
    if is_word(token) or vocab.get(token, 0) > 1:
        return False
    for i in range(3, len(token) - 1):
        a, b = token[:i], token[i:]
        if (len(b) < 3 and b not in FUNCTION_TAILS) or a in _PREFIXES or b in SUFFIX_TAILS:
            continue
        if vocab.get(a, 0) >= MIN_PART_DF and vocab.get(b, 0) >= MIN_PART_DF:
            return True
    return False


def _words(s: str) -> bool:
    if _GLUED_PLACEHOLDER.search(s) or _KERNED.search(s):
        return True
    if any(joined_word(t) for t in _TOKEN.findall(s)):
        return True
    words = english_words()
    for m in _SMALL_CAPS.finditer(s):
        head, tail = m.group(1), m.group(2)
        if is_word(head.lower() + tail) and not words.get(tail, 0) and not is_word(head.lower()):
            return True
    return False


_DETECTORS = {
    "heading": _heading,
    "footnote": _footnote,
    "words": _words,
    "flat_math": lambda s: lost_structure(s) or _LATEX.search(s) is not None,
    "emphasis": lambda s: _EMPHASIS.search(s) is not None,
    "placeholder": lambda s: placeholder_share(s) >= PLACEHOLDER_SHARE,
}


def detect(sentence: str) -> list[str]:
    """The artifact kinds (keys of :data:`KINDS`, in that order) found in ``sentence``."""
    return [kind for kind, test in _DETECTORS.items() if test(sentence)]


def count(sentences: Iterable[str]) -> tuple[Counter, int]:
    """How many of ``sentences`` each kind flags, and how many sentences there were."""
    counts: Counter = Counter()
    n = 0
    for s in sentences:
        n += 1
        counts.update(detect(s))
    return counts, n
