"""Run-in headings: a heading printed at the start of its paragraph, which the text then fuses
into the first sentence ("Area-Biased Splitting Additionally, we can ...", "Dataset We conduct
experiments ...") or leaves as a sentence of its own ("Graph Prompt Feature-Plus (GPF-plus).").

A mined pair whose query starts with "Query Branch" or whose gold is "Transferability Metric."
carries words that are no part of the claim, so the head is cut from its paragraph, but only
where the source shows it was a heading:

* **markup**: the paragraph opens with a bold or italic span of at most ``MAX_WORDS`` words that
  does not read as a sentence, then (after an optional parenthetical and "." or ":") text that
  starts a sentence ("**Transferability Metric.** For each ...", "**Definition 1** (Stein
  operator).: _For any ...", "_Remark 4_.: For all ...");
* **a missing space**, Nougat's sign of a run-in heading: "Setup.We evaluate ...", "Linear
  models.Adversarial training ...", and a heading glued to a sentence opener: "InterpolationIn
  Section 4 we ...";
* **a theorem label** before the statement, with its name if any: "Lemma 6 Let N (...)",
  "Definition 3.1 We say ...", "Proposition A.8 (Classic Auditing is Valid) . Classic ...";
* **a title-case phrase** before a capitalized sentence opener ("Reason for Using the ResNet
  Backbone Since the overall ...", "Dataset We conduct ...", "Query Branch Directly aligning
  ..."), or ended by "." or ":" before a capital ("Rotations from Current to Next Tokens in
  the First Layer. Me...", "New Problems: To mitigate ..."): docling writes bold run-in
  headings as plain text;
* **a known section name** ("Limitations", "Datasets", "Implementation Details": a category of
  ``ratio.corpus.text.sections``) before a capitalized word that is no label ("Limitations
  GDEs rely on ...", but not "Substituting Assumption A1 into ..." or "Lemma A.18 uses ...").

The cut head is dropped: the section already has its heading, and a run-in head is no sentence.
:func:`heading_only` tells a sentence that is nothing but a title-case heading, which ingest
drops.

Tested by tests/corpus/text/test_runin.py.
"""

from __future__ import annotations

import re
from collections import Counter

from ratio.corpus.text.sections import categorize

MAX_WORDS = 12

_MARKUP = re.compile(
    r"^(?P<mark>\*\*|__|\*|_)(?P<head>[^*_\n]{1,160}?)(?P=mark)(?![*_])"
    r"(?P<tail>[ \t]*(?:\([^()\n]{1,100}\))?[ \t]*[.:]*)[ \t]*"
)
_GLUED = re.compile(r"^(?P<head>[A-Z][^.:!?\n]{0,80}?[a-z0-9)\]])[.:](?=[A-Z][a-z])")
_GLUED_OPENER = re.compile(
    r"^(?P<head>[A-Z][A-Za-z\-]+(?: [A-Za-z\-]+){0,6}?[a-z]{2})(?=We [a-z]|(?:In|The|This|These"
    r"|Our|To|For|Here|Given|Let) (?:[A-Z]|(?:the|this|these|our|a|an|we|order|addition)\b))"
)
_LABEL = re.compile(
    r"^(?P<head>(?:Theorem|Lemma|Proposition|Corollary|Definition|Assumption|Remark|Example"
    r"|Conjecture|Claim|Fact|Observation|Problem|Property|Hypothesis|Condition)"
    r"[ \t]+(?:[A-Z](?:\.\d+)+|[A-Z]?\d+(?:\.\d+)*[a-z]?)(?:[ \t]*\([^()\n]{1,100}\))?)"
    r"[ \t]*[.:]?[ \t]+(?=[A-Z(])"
)
_TOKEN = re.compile(r"\S+")
_LABEL_REF = re.compile(r"[A-Z]?\d|[A-Z]\.\d")
_FUNCTION = frozenset(
    "a an the of and or for in on with to via vs vs. from by at as into over under".split()
)
# Capitalized words that start sentences, not titles; a run-in head ends right before one.
_OPENERS = frozenset(
    """
    We Our This These That Those It Its They Their There Here The In To For Given Following
    Since While When Although As By With Using However Additionally Moreover Furthermore
    Specifically Unlike Let Suppose Assume Consider Note Thus Therefore Hence First Second Third
    Finally Next Then Existing Most Many Recent Previous Prior Each All Both Such Instead Also
    Besides Overall Similarly Importantly Notably Intuitively Formally Recall Based Despite Even
    Once Because If After Before During Due Inspired Motivated Table Figure Unfortunately
    Interestingly Recently Traditionally Typically Generally Currently See From On At Under
    Without Through Across Among Beyond Compared Regarding Considering Assuming Upon Over Between
    Against Throughout Toward Towards Within Along Whereas And But Or So Yet Now Still Only Like
    """.split()
)
# One-word heads need a sentence that can only start there ("Dataset We conduct ...").
_PRONOUN_OPENERS = frozenset("We Our This These It They There Here The In To For".split())
# Words that make a bold or italic span a sentence, not a heading ("**We propose X.**").
_SENTENCE_WORDS = frozenset(
    "we our is are was were can will does do has have be been which that this these it".split()
)
_TITLE_END = re.compile(r"^(?P<head>[^.:!?\n]{3,120}?)(?P<end>[.:])[ \t]+(?=[A-Z]|\d\))")


def _plain(head: str) -> str:
    """The words of a head, with inline math and markup reduced to one placeholder word."""
    head = re.sub(r"\\\(.*?\\\)|\$[^$]*\$", "x", head)
    return head.replace("*", "").replace("_", " ").strip()


def _not_a_sentence(head: str) -> bool:
    """A head of at most ``MAX_WORDS`` words, capitalized, that neither opens like a sentence
    nor has a pronoun or an auxiliary ("We propose X" is a sentence)."""
    words = _plain(head).split()
    if not words or len(words) > MAX_WORDS or not words[0][:1].isupper():
        return False
    if words[0].rstrip(".,:;") in _OPENERS:
        return False
    return not any(w.lower().strip(".,:;") in _SENTENCE_WORDS for w in words)


def _titled(token: str) -> bool:
    """A word of a title: capitalized, an acronym or number, a hyphenated capitalized compound,
    or a short function word."""
    t = token.strip("()[]\"'")
    return bool(t) and (t[0].isupper() or t[0].isdigit() or t in _FUNCTION)


def _title_phrase(tokens: list[str]) -> bool:
    """Whether ``tokens`` are a heading in title case: at most ``MAX_WORDS``, no sentence
    opener first, content words capitalized (at least ``min`` of them), last word no function
    word."""
    if not tokens or len(tokens) > MAX_WORDS or tokens[0] in _OPENERS:
        return False
    if tokens[-1] in _FUNCTION or not all(_titled(t) for t in tokens):
        return False
    return sum(t[0].isupper() and t not in _OPENERS for t in tokens) >= 1


def _title_head(text: str) -> str | None:
    """The head of a paragraph that opens with a title-case run before a sentence opener."""
    tokens = _TOKEN.findall(text[:400])
    run = 0
    for tok in tokens:
        bare = tok.rstrip(",")
        if not _titled(bare) or bare != tok and bare not in _OPENERS:
            break
        run += 1
        if bare != tok:
            break  # "Additionally," ends the run
    for i in range(min(run, len(tokens) - 1) - 1, 0, -1):
        opener = tokens[i].rstrip(",")
        # an adverb before the run's first lowercase word opens the sentence ("Directly aligning")
        adverb = i == run - 1 and opener.endswith("ly") and opener[:1].isupper()
        if opener not in _OPENERS and not adverb:
            continue
        head = tokens[:i]
        if not _title_phrase(head) or any(t.endswith(",") for t in head):
            return None
        if len(head) == 1 and opener not in _PRONOUN_OPENERS:
            return None
        return " ".join(head)
    return None


def split_runin(text: str) -> tuple[str, str] | None:
    """(head, rest) when the paragraph ``text`` (raw Markdown) opens with a run-in heading the
    source marks as one (see the module docstring), else None."""
    if not text[:1].isalpha() and text[:1] not in "*_":
        return None
    m = _MARKUP.match(text)
    if m:
        rest = text[m.end() :]
        glued = m.end() == m.end("mark") + len(m.group("head")) + len(m.group("mark"))
        ended = (
            m.group("tail").strip().endswith((".", ":")) or m.group("head").rstrip()[-1:] in ".:"
        )
        starts = (
            rest[:1].isupper()
            or rest[:1].isdigit()
            or rest[:2] in ("_\\", "\\(")
            or (rest[:1] == "_" and rest[1:2].isupper())
        )
        if rest and _not_a_sentence(m.group("head")) and starts and (ended or not glued):
            return m.group("head").strip(), rest
        return None
    m = _GLUED.match(text)
    if m and _not_a_sentence(m.group("head")):
        return m.group("head"), text[m.end() :].lstrip(".: \t")
    m = _LABEL.match(text)  # its name may read as a sentence: "(Classic Auditing is Valid)"
    if m:
        return m.group("head"), text[m.end() :]
    m = _GLUED_OPENER.match(text)
    if m and _title_phrase(m.group("head").split()):
        return m.group("head"), text[m.end() :]
    head = _title_head(text)
    if head is not None:
        return head, text[len(head) :].lstrip()
    return _ended_head(text)


def _ended_head(text: str) -> tuple[str, str] | None:
    """A title-case head ended by "." or ":" ("New Problems: To mitigate ..."), or a known
    section name before a capitalized word ("Limitations GDEs rely ...")."""
    m = _TITLE_END.match(text)
    if m:
        tokens = m.group("head").split()
        capitals = sum(t[0].isupper() for t in tokens)
        if _title_phrase(tokens) and (capitals >= 2 or m.group("end") == ":"):
            return m.group("head"), text[m.end() :]
    tokens = _TOKEN.findall(text[:200])
    for n in range(min(4, len(tokens) - 1), 0, -1):
        head, nxt = tokens[:n], tokens[n]
        plain = all(t.isalnum() or "-" in t and t.replace("-", "").isalnum() for t in head)
        if (
            plain  # no "Proof. By", no parenthetical: one name
            and not any(t in _OPENERS for t in head)
            and _title_phrase(head)
            and nxt[:1].isupper()
            and not _LABEL_REF.match(nxt)  # "Substituting Assumption A1 into ...": a reference
            and categorize(" ".join(head)) != "other"
        ):
            return " ".join(head), text[len(" ".join(head)) :].lstrip()
    return None


def strip_runin(text: str, counts: Counter | None = None) -> str:
    """``text`` without its run-in heading (``counts["runin_heading"]`` counts the cuts)."""
    found = split_runin(text)
    if found is None or not found[1].strip():
        return text
    if counts is not None:
        counts["runin_heading"] += 1
    return found[1]


def heading_only(sentence: str) -> bool:
    """Whether a sentence is nothing but a title-case heading ("Graph Prompt Feature-Plus
    (GPF-plus).", "Rotations from Current to Next Tokens in the First Layer."): at most
    ``MAX_WORDS`` words, two or more of them capitalized content words, no sentence opener first,
    no comma, ending in ".", ":" or nothing."""
    s = sentence.strip()
    if not s or s[-1] in "?!," or "," in s:
        return False
    tokens = s.rstrip(".:").split()
    if len(tokens) < 2:
        return False
    capitals = sum(t[0].isupper() and t not in _OPENERS for t in tokens if t[:1].isalpha())
    return capitals >= 2 and _title_phrase(tokens)
