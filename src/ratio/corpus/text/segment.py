"""Sentence segmentation of cleaned paragraphs.

Mining pairs consecutive sentences (paper section 4), so a wrong split after "et al." or "Fig."
produces a bogus (query, gold) pair and a missed split glues two sentences into one query. The
default ``ratio`` splitter is a single regex pass over candidate boundaries (terminal punctuation,
optional closers, whitespace, a plausible sentence start) followed by a dictionary check of the
token before the period: scientific abbreviations (``Fig.``, ``Eq.``, ``Sec.``, ``et al.``,
``i.e.``, ``w.r.t.``, ...), initials, and list numbers veto a split. It is pure Python plus ``re``
and runs at several hundred thousand sentences per second; ``benchmarks/segmenters.py`` compares it
with blingfire, pysbd, syntok and a plain regex on ``tests/data/segmentation_gold.jsonl``
(see ``docs/segmentation.md``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from itertools import pairwise
from typing import Any

Segmenter = Callable[[str], list[str]]

# Candidate boundary: terminal punctuation, optional closing quotes/brackets, whitespace, then
# something that can start a sentence: an upper-case letter, a digit, an opening bracket or quote
# (covers "[MATH] is ...", "[CIT] show ...", "(i) ..."), a bullet ("•", "- ", "* "), a Greek
# capital, or a mixed-case token such as "t-SNE", "k-means", "pLDDT", "mAP".
_START = (
    r"[A-Z0-9\[(\"'\u201c\u2018\u00c0-\u00de\u0391-\u03a9\u2022]|[-*] |[a-z][A-Z\-]|[a-z]{1,3}[A-Z]"
)
_CANDIDATE = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+(?=" + _START + ")")
_STARTS = re.compile(_START)
# The end of a sentence right before a position: terminal punctuation, closers, whitespace.
_ENDED = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+$")

# Tokens (lower-cased, with their final period) after which a period never ends a sentence in
# running scientific text: Latin abbreviations and titles are followed by the rest of the clause.
_NEVER_FINAL = frozenset(
    """
    e.g. eg. i.e. ie. cf. c.f. vs. v.s. viz. w.r.t. wrt. a.k.a. aka. resp. approx. ca. esp.
    incl. abbr. et. dept. univ. inst. conf. proc. trans. jan. feb.
    mar. apr. jun. jul. aug. sep. sept. oct. nov. dec.
    """.split()
)

# Reference abbreviations: not final when a number or label follows ("Fig. 3", "Sec. A.1",
# "Eq. (5)", "App. B", "No. T45-401"), final otherwise ("... takes 3 sec. We ...").
_REF_ABBR = frozenset(
    """
    fig. figs. eq. eqs. eqn. eqns. sec. secs. sect. tab. tabs. thm. thms. lem. lemm. lems.
    prop. props. def. defn. defs. cor. corr. alg. algs. algo. app. apps. appx. appxs. apx.
    ch. chap. chaps. vol. vols. no. nos. pp. p. ref. refs. ex. exp. exps. assump. asm. obs.
    rem. conj. prob. pt. pts. col. cols. ln. ll. fn. suppl. sup. supp. sp. l. r.
    """.split()
)
_REF_NEXT = re.compile(r"[(\[\d]|[A-Z]{1,2}(?:[.\-),:;]|$)|[A-Z]{1,4}-?\d|[IVX]+\b")

# Abbreviations that do end sentences when followed by an ordinary sentence opener
# ("..., etc. We then ...", "... left open by Hanneke et al. To achieve ..."), but not when
# followed by a name or a citation ("i.i.d. Gaussian", "Ma et al. Ma et al. [CIT]").
_AMBIGUOUS = frozenset(
    "etc. al. i.i.d. iid. u.s. u.k. e.u. a.m. p.m. ph.d. et.al. dr. mr. mrs. ms. prof.".split()
)

# Sentence openers used to disambiguate the abbreviations above: these words start a sentence
# far more often than they continue one after an abbreviation.
_OPENERS = frozenset(
    """
    The This These That Those We Our Us It Its In For To As However Moreover Furthermore Finally
    First Second Third Then Thus Therefore Hence Here Note Since While When If On By With From At
    After Although Another Each All Both Such A An One Some Most Many They Their There Similarly
    Additionally Specifically Instead Also Unlike Given Let Following Using Despite Based Other
    Overall Importantly Notably Consequently Accordingly Nevertheless Nonetheless Besides
    Meanwhile Indeed Still Yet But And Or So Because Unfortunately Interestingly Further
    Whereas Even Only Next Lastly Figure Figures Table Tables Section Appendix Fig Eq See Recall
    Under During Without Through Across Among Beyond Compared Due Before Once Where Why How What
    Which Whether Within No Not Now Later Previous Prior Recently Existing Traditional Current
    Several Few Various Theorem Lemma Proposition Definition Corollary Assumption Algorithm
    Experiments Results Formally Intuitively Empirically Theoretically Clearly Typically
    Generally Usually Often Like Regarding Considering Assuming Suppose Consider Define Denote
    Observe Remark Proof Example Namely Again Otherwise Alternatively Conversely Subsequently
    Initially Ultimately Surprisingly Remarkably Crucially Critically Ideally Every Though
    Whenever Two Three Four Five Thereby
    """.split()
)

# Words after which a single capital letter is a label ("Appendix A.") rather than an initial.
_LABEL_WORDS = frozenset(
    """
    appendix appendices section sections table tables figure figures fig algorithm theorem lemma
    corollary proposition definition assumption part step phase case type model setting
    stage class level group condition variant option version eq equation example remark
    """.split()
)

_STRIP_LEAD = "([{\"'\u201c\u2018"
_INITIAL = re.compile(r"[A-Z]\.")
_SMALL_INT = re.compile(r"\d{1,2}\.")
_DOTTED = re.compile(r"(?:[a-z]{1,2}\.){2,4}")
_STRANDED_CIT = frozenset(("[CIT].", "[CIT];", "[CIT])."))  # not "[CIT], in particular, ..."
_NAME_CONTEXT = frozenset(
    "by and of & with to from thank thanks prof prof. dr dr. author authors".split()
)
_LABEL_NEXT = re.compile(r"[A-Z]\.\d")


def can_start(text: str) -> bool:
    """Whether the splitter sees a sentence start in ``text`` (its first characters)."""
    return _STARTS.match(text) is not None


def after_sentence_end(before: str) -> bool:
    """Whether ``before`` ends in a candidate sentence end: what follows must pass
    :func:`can_start` for the splitter to cut there ("... convex. [MATH] is", not "... convex.
    x is")."""
    return _ENDED.search(before[-8:]) is not None


def _is_boundary(text: str, p: int, end: int, last_cut: int) -> bool:
    """Decide a candidate whose terminal punctuation is at ``p`` and next sentence starts at ``end``."""
    punct = text[p]
    ws = text.rfind(" ", 0, p) + 1
    token = text[ws : p + 1]
    cut = max(token.rfind("("), token.rfind("["))
    if cut >= 0 and cut < len(token) - 2:
        token = token[cut + 1 :]  # "path(Eq." -> "Eq.", "(e.g." -> "e.g."
    token = token.lstrip(_STRIP_LEAD)
    if punct != ".":
        # "?" and "!" are terminal unless glued to math/factorials like "n!".
        return not (
            punct == "!"
            and len(token) > 1
            and token[-2].isalnum()
            and end < len(text)
            and text[end].islower()
        )
    if p + 1 < len(text) and text[p + 1] not in " \t\n":
        # A closer sits between the period and the space ("...(see Fig. 3).", "[CIT].)").
        return True
    nxt_end = text.find(" ", end)
    nxt = text[end : nxt_end if nxt_end != -1 else len(text)]
    if nxt in _STRANDED_CIT or (nxt == "[CIT]" and end + 5 == len(text)):
        # a citation stranded after the period belongs to the previous sentence
        return False
    if token == "." and text[p - 2 : p - 1].isdigit() and nxt[:1].isdigit():
        # docling spaces decimals out: "δ = 0 . 7 ."
        return False
    low = token.lower()
    if low in _NEVER_FINAL:
        return False
    if low in _REF_ABBR and _REF_NEXT.match(nxt):
        return False
    if low[:-1] in _LABEL_WORDS and nxt[:1].isdigit():
        # Nougat artifact "in Section. 4.2 and Section. 4.3"
        return False
    if low in _AMBIGUOUS or _DOTTED.fullmatch(low):
        # multi-period abbreviations ("U.S.", "i.i.d.", "etc."): split only before a true opener.
        if low == "etc.":
            return nxt[:1].isupper() or nxt[:1] == "["
        return nxt.rstrip(",") in _OPENERS
    if _LABEL_NEXT.match(nxt):
        # "(Appendix. B.2)", "see App. A.8.3": the next token is a section label, not a sentence.
        return False
    if len(token) == 2 and "A" <= token[0] <= "Z":
        # Single capital letter: an initial ("M. Chen", "A. B. Author"), a panel label
        # ("Figure 6: A. Framework ...") or a variable/label ending a sentence ("explore B. In
        # contrast", "class H. We"); docling keeps math letters, so sentence end is the default.
        if _INITIAL.match(nxt):
            return False
        prev_end = ws - 1
        prev_start = text.rfind(" ", 0, max(prev_end, 0)) + 1
        prev = text[prev_start:prev_end] if prev_end > 0 else ""
        prev_low = prev.lower().rstrip(".")
        if prev_low in _LABEL_WORDS or prev_low + "." in _REF_ABBR or prev_low.isdigit():
            # "Appendix A. We", "App. E. As shown": a label ends the sentence.
            return True
        if prev == "":
            return False
        if prev[-1] in ".!?;:,(&)\"'" or prev_low in _NAME_CONTEXT or prev[0].isupper():
            # names and panel labels: "(CFI). M. Jiang", "Figure 6: A. Framework", "The work of
            # X. Yu", "Anthony L. Caterini" -- but "x 1: N. To account", "S, V, O, P. Let"
            return nxt.rstrip(",") in _OPENERS
        return True
    if len(token) > 2 and token[-2].isupper() and token[-3] in ".:)":
        # an initial glued to the previous word by the extractor: "Acknowledgement.M. Chen"
        return nxt.rstrip(",") in _OPENERS
    if _SMALL_INT.fullmatch(token) and (ws == 0 or ws == last_cut):
        # Inline list number right after a sentence start: "... as follows. 1. We ...".
        return False
    return True


def segment(paragraph: str) -> list[str]:
    """Split one cleaned paragraph into sentences (the project's default splitter)."""
    text = paragraph.strip()
    if not text:
        return []
    out: list[str] = []
    start = 0
    for m in _CANDIDATE.finditer(text):
        end = m.end()  # m.start() is the terminal punctuation, closers and spaces follow
        if _is_boundary(text, m.start(), end, start):
            sent = text[start:end].rstrip()
            if sent:
                out.append(sent)
            start = end
    tail = text[start:].rstrip()
    if tail:
        out.append(tail)
    return out


_PLAIN = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[(])")


def segment_regex(paragraph: str) -> list[str]:
    """Baseline: split after every ., ! or ? followed by space and a capital or bracket."""
    return [s for s in _PLAIN.split(paragraph.strip()) if s]


def segment_blingfire(paragraph: str) -> list[str]:
    """blingfire's model-free tokenizer-based splitter (C++, very fast)."""
    import blingfire

    return [s for s in blingfire.text_to_sentences(paragraph.strip()).split("\n") if s]


@lru_cache(maxsize=1)
def _pysbd() -> Any:  # a pysbd.Segmenter (pysbd ships no types)
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def segment_pysbd(paragraph: str) -> list[str]:
    """pysbd's Golden-Rules splitter (pure Python, slow)."""
    return [s.strip() for s in _pysbd().segment(paragraph.strip()) if s.strip()]


def segment_syntok(paragraph: str) -> list[str]:
    """syntok's tokenizer-based splitter; sentences rebuilt from token offsets.

    Each sentence runs on to the next one's start, so the sentences cover the paragraph
    contiguously (syntok leaves the text between sentences out of them).
    """
    from syntok import segmenter

    text = paragraph.strip()
    starts = [sent[0].offset for para in segmenter.analyze(text) for sent in para if sent]
    bounds = [0, *starts[1:], len(text)]
    return [text[a:b].strip() for a, b in pairwise(bounds)] if starts else []


SEGMENTERS: dict[str, Segmenter] = {
    "ratio": segment,
    "blingfire": segment_blingfire,
    "pysbd": segment_pysbd,
    "syntok": segment_syntok,
    "regex": segment_regex,
}


def get_segmenter(name: str) -> Segmenter:
    """Look up a splitter by config name; unknown names raise a ``ValueError`` listing the choices."""
    try:
        return SEGMENTERS[name]
    except KeyError:
        raise ValueError(
            f"unknown segmenter {name!r}; choose one of {', '.join(sorted(SEGMENTERS))}"
        ) from None
