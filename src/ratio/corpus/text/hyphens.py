"""Line-break hyphen repair that keeps real compound hyphens.

PDF text breaks words at line ends: "appro-\\npriate", or, once a tool has joined the lines
with a space (the ACL Anthology Network text), "appro- priate". Deleting every such hyphen
also destroys real compounds that happen to break at their hyphen ("time-\\nsynchronized"
must stay "time-synchronized"), and keeping them all leaves "appro-priate". Which one a
break is cannot be read off the break itself, so each is decided from evidence, strongest
first:

1. the paper's own spelling: the joined form ("appropriate") or the hyphenated form
   ("time-synchronized") elsewhere in the same text; the more frequent one wins;
2. an English word list (``pyspellchecker``'s frequency dictionary): a joined form that is a
   word is joined ("sen- tences" -> "sentences");
3. two words on both sides ("time", "synchronized"; "co", "occurrence") make a compound, and
   the hyphen stays; a fragment on the right ("priate", "tences") means a broken word.

A right side that is a coordinator ("pre- and post-processing", "first- or second-order") is
a suspended hyphen and is left exactly as written. A right side that starts with a capital
is joined only on evidence from rule 1 ("Word- Net" -> "WordNet" when the paper writes
"WordNet"); otherwise the hyphen stays ("Bayes-\\nNash" -> "Bayes-Nash").

:func:`repair_hyphens` repairs a whole text, :func:`decide` one break (``ratio.corpus.text.blocks``
joins lines itself), :func:`join_line_break` two lines of a PDF paragraph. All take a
:class:`Vocabulary` of the whole paper: build it once per paper and pass it to every call.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

# A break: a letter word (possibly with hyphens of its own) ending in "-", then a line break
# or spaces, then a letter. Group "left" is the word before the hyphen, "gap" the break.
_BREAK = re.compile(
    r"(?P<left>(?<![A-Za-z0-9\-])[A-Za-z]+(?:-[A-Za-z]+)*)-(?P<gap>[ \t]*\r?\n[ \t]*|[ \t]+)"
    r"(?P<right>[A-Za-z]+)"
)
_TOKEN = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
# Suspended hyphens: "pre- and post-processing", "first- or second-order", "low- to mid-range".
COORDINATORS = frozenset({"and", "or", "nor", "to", "vs", "versus", "but", "as"})
# Word-list frequency below which a word is treated as unknown (typos, rare junk entries).
MIN_WORD_FREQ = 5


@lru_cache(maxsize=1)
def english_words() -> dict[str, int]:
    """pyspellchecker's English frequency dictionary (lowercase word -> count), loaded once.

    An empty dict when the package is missing: the repair then decides from the paper's
    own vocabulary and the fragment rule alone.
    """
    try:
        from spellchecker import SpellChecker
    except ImportError:  # pragma: no cover - a core dependency, but keep ingest working
        return {}
    return dict(SpellChecker().word_frequency.dictionary)


def is_word(word: str) -> bool:
    return english_words().get(word.lower(), 0) >= MIN_WORD_FREQ


class Vocabulary:
    """Lowercased word counts of one text, hyphenated compounds counted whole.

    Built lazily on the first lookup, so a paper without any break costs nothing.
    """

    __slots__ = ("_text", "_counts")

    def __init__(self, text: str = ""):
        self._text = text
        self._counts: Counter | None = None

    def count(self, word: str) -> int:
        if self._counts is None:
            self._counts = Counter(t.lower() for t in _TOKEN.findall(self._text))
            self._text = ""
        return self._counts.get(word.lower(), 0)


def decide(left: str, right: str, vocab: Vocabulary | None = None) -> str | None:
    """How to write the break between ``left-`` and ``right``.

    Returns ``"join"`` (a broken word), ``"hyphen"`` (a compound) or ``None`` (leave the text
    as it is: a suspended hyphen). ``left`` may itself contain hyphens ("state-of-the"); the
    decision looks at its last part.
    """
    if right.lower() in COORDINATORS:
        return None
    head = left.rsplit("-", 1)[-1]
    joined, hyphenated = head + right, head + "-" + right
    if vocab is not None:
        n_joined, n_hyphen = vocab.count(joined), vocab.count(hyphenated)
        if n_joined != n_hyphen:
            return "join" if n_joined > n_hyphen else "hyphen"
    if right[0].isupper():
        return "hyphen"  # "Bayes-Nash", "Word-Net": joined only on the paper's own evidence
    if "-" in left:
        return "hyphen"  # "state-of-the-\nart": the word already is a compound
    if is_word(joined):
        return "join"
    if is_word(head) and is_word(right):
        return "hyphen"
    return "join"


def repair_hyphens(
    text: str, vocab: Vocabulary | None = None, counts: Counter | None = None
) -> str:
    """Repair every line-break hyphen in ``text`` ("word-\\nword" and "word- word").

    ``vocab`` defaults to the vocabulary of ``text`` itself; pass one built from the whole
    paper when repairing it paragraph by paragraph. ``counts`` (if given) gets
    ``hyphen_joined`` and ``hyphen_kept``. A kept hyphen loses its gap ("time-synchronized");
    a suspended hyphen ("pre- and post-") is left untouched.
    """
    if "- " not in text and "-\n" not in text and "-\r" not in text and "-\t" not in text:
        return text
    vocab = vocab if vocab is not None else Vocabulary(text)

    def fix(m: re.Match[str]) -> str:
        left, right = m.group("left"), m.group("right")
        verdict = decide(left, right, vocab)
        if verdict is None:
            return m.group(0)
        if counts is not None:
            counts["hyphen_joined" if verdict == "join" else "hyphen_kept"] += 1
        return left + right if verdict == "join" else left + "-" + right

    return _BREAK.sub(fix, text)


# The hyphens PDF text ends a line with; PDFium marks those it takes for line-end ones U+FFFE.
_SOFT_HYPHENS = "-\u00ad\ufffe\x02\u2010"
_BROKEN_HEAD = re.compile(r"([A-Za-z][A-Za-z\-]*)[" + re.escape(_SOFT_HYPHENS) + r"]$")
_WORD = re.compile(r"[A-Za-z]+")


def join_line_break(left: str, right: str, vocab: Vocabulary | None = None) -> str:
    """Join two lines of a paragraph, repairing a word hyphenated across the break.

    ``decide`` tells a broken word ("represen-" + "tation") from a compound that broke at its
    hyphen ("part-" + "of-speech"), from the paper's own spelling (``vocab``) first. One case
    is settled here, where the break is known to be a line end: TeX does not hyphenate an
    all-capitals word, so "GEC-" + "specific" is a compound. A U+FFFE mark that is not a
    break's stays a hyphen.
    """
    if not left or left[-1] not in _SOFT_HYPHENS:
        return left + " " + right
    m = _BROKEN_HEAD.search(left)
    n = _WORD.match(right)
    if not m or not n:
        return left[:-1] + "-" + right
    head, tail = m.group(1), n.group(0)
    verdict = "hyphen" if head[-1].isupper() else decide(head, tail, vocab)
    if verdict is None:  # a suspended hyphen: "pre- and post-processing"
        return left[:-1] + "- " + right
    return left[:-1] + ("" if verdict == "join" else "-") + right
