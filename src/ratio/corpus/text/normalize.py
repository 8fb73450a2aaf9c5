"""Sentence normalization and cleaning before pairing (paper Appendix B.1).

Each heuristic is a small pure function (``str`` methods, a few compiled regexes and set
lookups; no allocation-heavy parsing) so ingest and mining can apply it per sentence at corpus
scale.
"""

from __future__ import annotations

import re
import string
import unicodedata

# --- match form ---------------------------------------------------------------------------

# Typographic variants NFKC leaves alone but which must compare equal for matching and dedup.
_TYPO = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u2033\u00ab\u00bb", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        # soft hyphen, zero-width space and joiners, word joiner, BOM
        **dict.fromkeys("\u00ad\u200b\u200c\u200d\u2060\ufeff", None),
    }
)
_SPACE_BEFORE = re.compile(r" +([,.;:!?%)\]}])")
_CLOSERS_AFTER_SPACE = tuple(" " + c for c in ",.;:!?%)]}")
_SPACE_AFTER_OPEN = re.compile(r"([(\[{]) +")
_COMMA_NO_SPACE = re.compile(r",(?=[^\s\d,])")


def match_form(text: str) -> str:
    """Lower-cased comparison form: NFKC, unified quotes/dashes, collapsed whitespace, no space
    before closing punctuation or after opening brackets, one space after commas.

    Commas are kept because lexicon markers end at a comma boundary ("to address this, ").
    """
    t = text
    if not t.isascii():  # NFKC and the character table only matter outside ASCII
        t = unicodedata.normalize("NFKC", t).translate(_TYPO)
    t = " ".join(t.lower().split())
    if any(c in t for c in _CLOSERS_AFTER_SPACE):  # cheap C-level pre-checks before the regexes
        t = _SPACE_BEFORE.sub(r"\1", t)
    if "( " in t or "[ " in t or "{ " in t:
        t = _SPACE_AFTER_OPEN.sub(r"\1", t)
    if "," in t:
        t = _COMMA_NO_SPACE.sub(", ", t)
    return t


# --- noise removal ------------------------------------------------------------------------

# Control characters (except tab/newline, which become spaces), U+FFFD, private-use area.
_INVALID = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd\ue000-\uf8ff\u200b-\u200d\u2060\ufeff\u00ad]"
)
# A list marker at the very start: "[3] ", "(1) ", "1) ", "1. ", "(a) ", "a) ", "(iv) ", "iv) ",
# "• ", "- ", "* ", "– ". Numbered markers need following whitespace so "1.5 times" and
# "3) and" inside math stay; a bare letter needs a bracket so "a new method" stays.
_LIST_MARKER = re.compile(
    r"^(?:\[\d{1,3}\]|\(\d{1,2}\)|\d{1,2}[.)](?!\d)|\(?[a-z]\)|\(?(?:i|ii|iii|iv|v|vi|vii|viii|ix|x)\)"
    r"|\((?:i|ii|iii|iv|v|vi|vii|viii|ix|x|[a-zA-Z])\)|[\u2022\u00b7\u25aa\u25e6\u2023\u2219\u25cf*\-\u2013\u2014])"
    r"\s+"
)


def strip_noise(text: str) -> str:
    """Remove invalid characters, redundant whitespace and leading stray list markers.

    Keeps the original casing and the ``[MATH]``/``[CIT]`` placeholders: this is the stored text,
    not the comparison form.
    """
    t = text
    if not (t.isascii() and t.isprintable()):
        t = _INVALID.sub("", t)
    t = " ".join(t.split())
    for _ in range(3):  # "• (a) text"
        m = _LIST_MARKER.match(t)
        if m is None:
            break
        t = t[m.end() :]
    return t


# --- intro-clause removal (antecedent / query) ---------------------------------------------

# Common sentence-initial connectives and framing adverbials that only link the sentence to its
# predecessor. Stripping them from the query keeps it self-contained (B.1: "however, first, in
# particular"). Looked up on the lower-cased span before the first comma.
INTRO_CONNECTIVES: frozenset[str] = frozenset(
    " ".join(c.split())
    for c in """
    however|moreover|furthermore|further|additionally|in addition|also|besides|likewise|similarly
    |in particular|particularly|specifically|more specifically|notably|importantly|more importantly
    |first|firstly|second|secondly|third|thirdly|fourth|finally|lastly|last|next|then|subsequently
    |first of all|to begin with|to start with|initially|in the first place|at first|on the one hand
    |on the other hand|in contrast|by contrast|conversely|instead|rather|nevertheless|nonetheless
    |still|yet|even so|that said|having said that|meanwhile|at the same time|in the meantime
    |thus|hence|therefore|consequently|as a result|accordingly|as such|so|for this reason
    |indeed|in fact|actually|of course|clearly|obviously|naturally|certainly|undoubtedly
    |in other words|that is|namely|put differently|put simply|simply put|to put it simply
    |for example|for instance|e.g.|i.e.|as an example|in this case|in that case|in such cases
    |in general|generally|generally speaking|overall|in summary|to summarize|in short|in brief
    |in conclusion|to conclude|altogether|all in all|ultimately|eventually|in the end
    |interestingly|surprisingly|remarkably|unfortunately|fortunately|crucially|critically
    |intuitively|formally|informally|empirically|theoretically|practically|in practice
    |in theory|in principle|technically|essentially|basically|broadly|roughly|typically
    |usually|often|frequently|traditionally|historically|recently|currently|previously
    |here|now|again|otherwise|alternatively|equally|correspondingly|analogously
    |above all|after all|in any case|regardless|in this regard|in this respect|to this end
    |along these lines|on top of that|what is more|by the same token|as mentioned|as noted
    |as discussed|as shown|as expected|as before|as above|thereby|thereafter
    |afterwards|later|finally yet importantly|last but not least|at last|simultaneously
    """.split("|")
) - {""}

_INTRO_MAX_WORDS = max(len(c.split()) for c in INTRO_CONNECTIVES)


def _upper_first(t: str) -> str:
    """Capitalize a leading lower-case word unless it is mixed-case or symbol-led ("k-means",
    "mAP", "t-SNE" stay)."""
    if t and t[0].islower() and (len(t) == 1 or t[1].islower() or t[1] in " ,'"):
        return t[0].upper() + t[1:]
    return t


def strip_intro_clause(query_text: str) -> str:
    """Drop leading discourse connectives ("However, ", "In particular, ", "First, ") from the
    antecedent sentence and re-capitalize; other text is returned unchanged."""
    t = query_text.lstrip()
    changed = False
    for _ in range(3):  # "However, in particular, ..."
        comma = t.find(",", 0, 40)
        if comma <= 0:
            break
        head = t[:comma].strip().lower()
        if head.count(" ") >= _INTRO_MAX_WORDS or head not in INTRO_CONNECTIVES:
            break
        rest = t[comma + 1 :].lstrip()
        if not rest:
            break
        t, changed = rest, True
    return _upper_first(t) if changed else query_text


# --- gold prefix cleaning -------------------------------------------------------------------

_GOLD_PREFIX = re.compile(
    r"^(?:"
    r"(?:first(?:ly)?|second(?:ly)?|third(?:ly)?|fourth(?:ly)?|fifth(?:ly)?|sixth|seventh|eighth"
    r"|ninth|tenth|last(?:ly)?|finally|first of all|next)\s*[,:]\s*"
    r"|(?:\(\d{1,2}\)|\d{1,2}[.)](?!\d)|\(?(?:i|ii|iii|iv|v|vi|vii|viii|ix|x)[.)]|\(?[a-h]\)"
    r"|[\u2022\u00b7*\-\u2013\u2014])\s+"
    r")",
    re.IGNORECASE,
)


def clean_gold_prefix(text: str) -> str:
    """Strip ordinal and list prefixes ("firstly, ", "second, ", "(1) ", "i) ") left at the start
    of a gold after its marker was removed, and capitalize the continuation."""
    t = text.lstrip()
    for _ in range(3):  # "second, (b) ..."
        m = _GOLD_PREFIX.match(t)
        if m is None or m.end() == len(t):
            break
        t = t[m.end() :]
    return _upper_first(t)


# --- drop filters ---------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\[(?:MATH|CIT|math|cit)\]")
_WORD = re.compile(r"[^\W\d_]{2,}")
# a whitespace token that is a word, allowing surrounding brackets/quotes and trailing punctuation
_WORD_TOKEN = re.compile(r"(?<!\S)[(\[\"']*[^\W\d_][^\W_]+(?:[-'][^\W_]+)*[.,;:!?)\]\"']*(?!\S)")
_DELETE_ASCII_LETTERS = str.maketrans("", "", string.ascii_letters)
_ASCII_WORD_START = re.compile(r" [(\[\"']*[A-Za-z]{2}")
_LATEX_CMD = re.compile(r"\\[a-zA-Z]{2,}")
# A token of a formula written as text: one with a math symbol, a script ("x_i", "ℝ^d") or a
# relation, or lone letters other than "a", "A", "I" ("x", "(θ,", "x,v"). The noise test counts
# a run of these as one ``[MATH]``, so a sentence reads the same whether its formulas were
# rendered (``ratio.corpus.text.flatmath``), flattened by docling or replaced by placeholders.
_MATH_SYMBOLS = "=<>_^∈∉≤≥‖∥∑∏∫→←↦∼≈≠±×·∞∂∇⊂⊆⊃⊇∪∩∖ℝℕℤℚℂ𝔼ℙ⊤⊥′∣"
_FORMULA_TOKEN = (
    r"(?:\S*[" + re.escape(_MATH_SYMBOLS) + r"]\S*|[(\[]*[^\W\d_aAI](?:,[^\W\d_])*[)\],.;:]*)"
)
_FORMULA_RUN = re.compile(r"(?<!\S)" + _FORMULA_TOKEN + r"(?:\s+" + _FORMULA_TOKEN + r")*(?!\S)")


def too_short(text: str, min_chars: int = 35) -> bool:
    """B.1 length filter: sentences under ``min_chars`` characters are dropped."""
    return len(text.strip()) < min_chars


def is_noise(text: str) -> bool:
    """True for text that is not prose: mostly non-letters, dominated by ``[MATH]``/``[CIT]``
    or formula tokens, fewer than three words, LaTeX residue, U+FFFD, or a degenerate
    repetition loop."""
    if "\ufffd" in text:
        return True
    n_ph = 0
    rest = text
    if "[" in text:
        rest, n_ph = _PLACEHOLDER.subn(" ", text)
    rest, n_math = _FORMULA_RUN.subn(" ", rest)
    n_ph += n_math
    tokens = rest.split()
    if not tokens:
        return True
    nonspace = sum(map(len, tokens))
    if rest.isascii():  # fast path for ~95% of sentences: C-level translate and an ASCII regex
        letters = len(rest) - len(rest.translate(_DELETE_ASCII_LETTERS))
        n_word_tokens = len(_ASCII_WORD_START.findall(" " + " ".join(tokens)))
    else:
        # docling keeps math as spaced-out symbols ("ℓ (θ, g; z) = h")
        letters = len("".join(_WORD.findall(rest)))
        n_word_tokens = len(_WORD_TOKEN.findall(rest))
    if n_word_tokens < 3 or n_ph > n_word_tokens:
        return True
    # few letters per character, or few whitespace tokens that are words; numeric result
    # sentences ("80.4 → 96.0 (+15.6)") pass both
    if letters < 0.5 * nonspace or n_word_tokens < 0.35 * len(tokens):
        return True
    if "\\" in rest and len(_LATEX_CMD.findall(rest)) >= 2:
        return True
    return len(tokens) >= 12 and len({t.lower() for t in tokens}) < 0.3 * len(tokens)
