"""Validity rules applied at mining time: mined pairs that cannot hold their relation.

The precision audits (docs/precision-audit.md) found false pairs whose failure is visible in
the text itself, whatever the marker: a gold that only leads into a display equation the
cleanup removed ("With probability at least 1 - δ, we have"), a sentence cut off mid-clause
("The variance [MATH] is calculated as"), a Specify or Broaden gold whose content sat in a lost
list or formula after its colon, a gold that defers its content ("These functions
are characterized by the following proposition."), a roadmap pointer instead of content
("We delve in Sections 4 and 5 into ..."), a query that is the tail of a formula or clause
split from its sentence ("where I (·) is the indicator function."), and, for Address, a gold
that only says that solutions exist ("Several effective methods have been proposed.").
Each is a named rule with a precise test; a relation pair failing one is dropped and counted
under the first rule it fails (``RULES`` order), so the build report says what each rule
removed.

Dropping is deliberate: restoring a removed equation as ``[MATH]`` leaves a pair whose gold
says nothing readable ("Specifically, we define the objective as [MATH]"), and the audit
counted such golds false. A gold ending in ":" lost what followed, whatever its relation: the
audited Address golds that end so and pass the other rules held 4 of 9 times ("We introduce
two complementary regularizers:", "We derive the following upper bound ...:" failed). An
Address gold before removed display math is kept: it may name its remedy before the formula.
Distractor candidates are not filtered: they are never golds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ratio.core.records import RELATIONS

_TERMINAL = ".!?"
_CLOSERS = "\"')]}\u201d\u2019"
# Function words a finished sentence does not end on: "is calculated as", "given by",
# "we have by Lemma 3.1 that", "where". Checked only when no terminal punctuation follows.
_DANGLING = frozenset(
    "a an the as by of to for from with in on at into onto than that which where whose when "
    "while if whether and or but nor is are was were be been being has have had can could "
    "may might must shall should will would do does we our its their this these those "
    "follows following given namely i.e e.g such via".split()
)
_LAST_WORD = re.compile(r"([A-Za-z]+)\W*$")
_AS_FOLLOWS = re.compile(r"\bas follows\W*$", re.I)
# Content deferred to what comes next: "... characterized by the following proposition.",
# "we make the following contributions:", "... is given below.", "... as described next."
_DEFERRAL = re.compile(
    r"(?:\bthe following(?:\s+[\w-]+){0,6}|\b(?:given|shown|described|defined|listed|presented|"
    r"summarized|detailed|stated|provided|formalized|introduced|outlined) (?:below|next|"
    r"in what follows)|\bas below)\s*[.:]?\s*$",
    re.I,
)
# A short sentence that puts its content off to a later step or section: "We introduce a
# state-action guardian in the next step." (a longer one usually names its content first).
_LATER = re.compile(
    r"\bin the (?:next|following|subsequent) (?:steps?|sections?|subsections?|paragraphs?|parts?)"
    r"\s*[.:]?\s*$",
    re.I,
)
_MAX_LATER_WORDS = 10
# A sentence starting with a lowercase connective or function word is the tail of a formula
# or of a clause the segmenter split ("where I (·) is the indicator function.").
_FRAGMENT_START = frozenset(
    "where which whereas wherein whereby whose and or but nor then thus hence so with for of "
    "to the a an is are was were in on at by as than that".split()
)
_FIRST_WORD = re.compile(r"^\W*([A-Za-z]+)")
# Roadmap asides: a pointer to other sections instead of content.
_SECTION = r"(?:sections?|sec\.|secs\.|appendix|appendices|app\.|§)\s*~?[A-Z]?\d"
_OUTLINE = re.compile(
    rf"^(?:(?:in|see|cf\.?)\s+)?{_SECTION}[\w.]*\s*(?:,\s*)?(?:we\s+)?(?:(?:first\s+|then\s+|"
    r"further\s+|also\s+|briefly\s+)?(?:describe|present|introduce|discuss|detail|review|"
    r"provide|give|report|summarize|outline|explain|elaborate)s?\b|(?:is|are)\s+"
    r"(?:devoted|dedicated|organized))"
    rf"|\b{_SECTION}[\w.]*(?:\s*(?:,|and|&)\s*[A-Z]?\d[\w.]*)+\b.*\brespectively\b"
    rf"|\bwe\s+(?:delve|dive)\s+in(?:to)?\s+{_SECTION}",
    re.I,
)
# Address golds that only assert that remedies exist: an indefinite body of work as the subject
# and a bare "have been proposed" predicate, in a short sentence with no named method.
_EXISTENCE = re.compile(
    r"^(?:(?:several|many|various|numerous|some|other|different|multiple|recent|existing|previous|"
    r"prior|an increasing number of|a (?:growing )?(?:number|variety|range|series|body|line) of|"
    r"a few|few)\s+)(?:[\w-]+\s+){0,3}?(?:methods?|approaches|works?|studies|techniques|"
    r"strategies|solutions|efforts|researchers|papers|algorithms|models|frameworks|lines of "
    r"(?:work|research)|research(?: lines)?)\b(?:\s*\[CIT\])?\s+(?:have|has|had|were|are)\s+"
    r"(?:(?:been|also|recently|already|since)\s+){0,2}(?:proposed|developed|introduced|explored|"
    r"attempted|suggested|studied|investigated|made|put forward|presented|designed)\b"
    r"|^researchers\s+have\s+(?:proposed|developed|explored|attempted|suggested|studied)\b",
    re.I,
)
_MAX_VAGUE_WORDS = 16
_SPECIFIC = re.compile(r"\b(?:such as|e\.g\.|including|namely|by\s+\w+ing|which|that)\b|:", re.I)


def ends_with_colon(text: str) -> bool:
    return text.rstrip().rstrip(_CLOSERS).endswith(":")


def unfinished(text: str) -> bool:
    """Cut off: ends in "," or ";", "as follows", or (unpunctuated) on a function word."""
    t = text.rstrip()
    if not t:
        return False
    end = t.rstrip(_CLOSERS)[-1:] or t[-1]
    if end in ",;":
        return True
    if _AS_FOLLOWS.search(t):
        return True
    if end in _TERMINAL or end == ":":
        return False  # a colon is judged by "gold_colon" and "gold_deferral"
    m = _LAST_WORD.search(t)
    return m is not None and m.group(1).lower() in _DANGLING


def deferral(text: str) -> bool:
    """Announces content that follows it (or, when short, puts it off to a later step)."""
    if _DEFERRAL.search(text):
        return True
    return _LATER.search(text) is not None and len(text.split()) <= _MAX_LATER_WORDS


def fragment(text: str) -> bool:
    """The rest of a sentence the segmenter or a removed formula split ("where ...")."""
    m = _FIRST_WORD.match(text)
    return m is not None and m.group(1) in _FRAGMENT_START


def outline(text: str) -> bool:
    """A roadmap aside ("In Section 4, we describe ...") rather than a statement."""
    return _OUTLINE.search(text) is not None


def vague_existence(text: str) -> bool:
    """A short gold that only says remedies exist, with nothing specific (no "such as", no
    named method, no clause)."""
    if not _EXISTENCE.search(text):
        return False
    words = len(text.replace("[CIT]", " ").split())
    return words <= _MAX_VAGUE_WORDS and not _SPECIFIC.search(text)


@dataclass(frozen=True)
class Rule:
    """One validity rule: its name (the report key), what it tests, on which relations."""

    name: str
    description: str
    relations: tuple[str, ...]
    test: Callable[[str, str, bool], bool]  # (query, gold, gold_math_after) -> fails


RULES: tuple[Rule, ...] = (
    Rule(
        "gold_before_display_math",
        "Specify/Broaden gold without final punctuation right before removed display math",
        ("specify", "broaden"),
        lambda q, g, math_after: math_after and g.rstrip().rstrip(_CLOSERS)[-1:] not in _TERMINAL,
    ),
    Rule(
        "gold_unfinished",
        'gold ends in "," or ";", in "as follows", or on a function word ("is given by")',
        RELATIONS,
        lambda q, g, math_after: unfinished(g),
    ),
    Rule(
        "gold_colon",
        'gold ends in ":" (its content was in the list or formula after it)',
        RELATIONS,
        lambda q, g, math_after: ends_with_colon(g),
    ),
    Rule(
        "query_unfinished",
        'query ends in ":", "," or ";", in "as follows", or on a function word',
        RELATIONS,
        lambda q, g, math_after: unfinished(q) or ends_with_colon(q),
    ),
    Rule(
        "query_fragment",
        'query starts with a lowercase connective ("where ...", "which ..."): a split fragment',
        RELATIONS,
        lambda q, g, math_after: fragment(q),
    ),
    Rule(
        "gold_deferral",
        'gold defers its content ("the following proposition.", "as detailed below:")',
        RELATIONS,
        lambda q, g, math_after: deferral(g),
    ),
    Rule(
        "gold_outline",
        'gold is a roadmap aside ("In Section 4.1 we detail ...", "Sections 3 and 4, respectively")',
        RELATIONS,
        lambda q, g, math_after: outline(g),
    ),
    Rule(
        "gold_vague_existence",
        'Address gold only says remedies exist ("Several methods have been proposed.")',
        ("address",),
        lambda q, g, math_after: vague_existence(g),
    ),
)
RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)


def failed_rule(relation: str, query: str, gold: str, gold_math_after: bool = False) -> str | None:
    """The name of the first rule the pair fails, or ``None`` when it passes them all."""
    for rule in RULES:
        if relation in rule.relations and rule.test(query, gold, gold_math_after):
            return rule.name
    return None
