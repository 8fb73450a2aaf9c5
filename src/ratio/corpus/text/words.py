"""Words the extractor joined or split: lost compound hyphens and spaces, kerned acronyms.

docling drops the hyphen of a compound that broke at a line end ("low-\\nquality" comes out as
"lowquality", "target-conditioned" as "targetconditioned"), Nougat sometimes drops a space
("reducedto"), and PDF kerning splits capitals around a "V" ("V AD", "JA V", "CA VP"). Neither
can be read off the token itself: "dataset", "pretrained", "subgoal" and "backpack" are joined
too and must stay. So every change needs vocabulary evidence:

* **Joined words.** A lowercase token of six or more letters (capitalized only where it opens a
  sentence, else it is a name: "Tableformer") is split in two when it is no word of its own
  while both parts are frequent words (in at least ``MIN_PART_DF`` papers of the corpus
  vocabulary), and something shows the two parts belong together: the hyphenated compound is
  in the corpus vocabulary or the paper, the paper writes the two words apart, a part is a
  function word ("reducedto", "theexplanation", "modelssuch"), a part forms ``COMPOUNDING``
  hyphenated compounds of the vocabulary ("-based", "-aware", "self-"), or both parts are long
  and very frequent. No word of its own: not in pyspellchecker's English list, not one letter
  away from a word ("realease" is "release" misspelt), and in at most ``MAX_JOINED_DF`` papers
  of the vocabulary and ``MAX_IN_PAPER`` times in the paper, unless the corpus writes the
  compound ``DOMINANCE`` times more often (a paper's repeated "highquality" becomes the
  "high-quality" of 776 papers; "finetuning", in 408, stays beside "fine-tuning"). The result keeps a hyphen when the corpus or the
  paper has the hyphenated form, or the tail makes a modifier ("text-conditioned"); it is two
  words after a function word or a plural head ("methods achieved"), or when the paper writes
  them apart.
* **Kerned acronyms.** Two runs of capitals split at a "V", three letters at least ("X V" are
  two variables), are joined when the joined acronym occurs elsewhere in the paper, in the
  corpus vocabulary, or is spelled out by the words right before it ("voice activity
  detection (V AD)").

The corpus vocabulary (``data/words.tsv.gz``) is the document frequency of every word and
hyphenated compound in Nougat papers of the training and validation years, written by
``scripts/text_artifacts.py vocab`` with :func:`count_vocabulary`. Nougat keeps the hyphens
of the LaTeX source, so the docling artifacts are not in it.

Tested by tests/corpus/text/test_words.py.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from ratio.corpus.text.hyphens import english_words

VOCABULARY = Path(__file__).with_name("data") / "words.tsv.gz"
MIN_PART_DF = 30  # papers a part must occur in (of the vocabulary's ~3,300)
STRONG_PART_DF = 300  # both parts this frequent and 4+ letters: a compound without more evidence
MAX_JOINED_DF = 1  # a joined form in more papers than this is an established spelling
MAX_IN_PAPER = 2  # ...or when the paper itself writes it more often
MIN_ENGLISH_FREQ = 5  # pyspellchecker frequency below which a word is not English
MIN_ACRONYM_DF = 3
# Tails that make the compound a modifier, written with a hyphen when nothing says otherwise.
_MODIFIER_ENDINGS = tuple(
    "ed ent ant ive able ible ful less free aware based specific level wise like".split()
)
# Function words that end a joined pair ("reducedto"); "or", "in", "on" would also split real
# words ("trustor", "toxin").
FUNCTION_TAILS = frozenset({"to", "of", "and", "the"})
# Function words of three or more letters: a part that is one was a word apart ("theexplanation",
# "modelssuch", "theoreticallyvia": Nougat lost the space), never a compound.
FUNCTION_WORDS = frozenset(
    "the and for with from that this which via such into than when while where their our its"
    " also".split()
)
COMPOUNDING = 20  # a part of this many hyphenated compounds of the vocabulary forms compounds
DOMINANCE = 10  # the corpus writes the compound this many times more often than the joined form
# Suffixes that are words of their own ("match" + "ability"): no evidence of a lost break.
SUFFIX_TAILS = frozenset("ability ably ness ment ity ship hood ize ise ized ization".split())

# Math and LaTeX commands hold tokens that are no words ("\mathrm{argmax}", "\(x\)").
_MATH = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]|\$\$.*?\$\$|\$[^$\n]*\$", re.S)
_VOCAB_TOKEN = re.compile(r"(?<![A-Za-z0-9\\_/@.])[A-Za-z]+(?:-[A-Za-z]+)*(?![A-Za-z0-9_/@])")
# A candidate joined word: lowercase (or capitalized) letters only, not part of a path, URL,
# identifier, LaTeX command or hyphenated compound.
_JOINED = re.compile(r"(?<![A-Za-z0-9\\_/@.\-])[A-Za-z][a-z]{5,}(?![A-Za-z0-9_/@\-]|\.[a-z])")
_KERNED = re.compile(r"(?<![A-Za-z0-9\-])([A-Z]{1,4}) ([A-Z][A-Z0-9]{0,4}s?)(?![A-Za-z0-9\-])")
_WORD = re.compile(r"[A-Za-z]+")


def count_vocabulary(texts: Iterable[str]) -> tuple[Counter, int]:
    """Document frequency of lowercase words and hyphenated compounds over ``texts`` (papers),
    math removed; and the number of texts."""
    df: Counter = Counter()
    n = 0
    for text in texts:
        n += 1
        df.update({w.lower() for w in _VOCAB_TOKEN.findall(_MATH.sub(" ", text))})
    return df, n


def write_vocabulary(df: Counter, n_papers: int, path: Path, source: str, min_df: int = 2) -> int:
    """Write the words in at least ``min_df`` papers as ``word<TAB>papers`` (gzip, sorted, no
    timestamp: the same counts give the same bytes); returns how many."""
    rows = sorted((w, c) for w, c in df.items() if c >= min_df and len(w) <= 40)
    head = f"# papers: {n_papers}; min_df: {min_df}; source: {source}\n"
    body = "".join(f"{w}\t{c}\n" for w, c in rows)
    with open(path, "wb") as fh, gzip.GzipFile(filename="", fileobj=fh, mode="wb", mtime=0) as gz:
        gz.write((head + body).encode())
    return len(rows)


@lru_cache(maxsize=1)
def corpus_vocabulary() -> dict[str, int]:
    """The shipped corpus vocabulary (word -> papers); empty when the file is missing."""
    if not VOCABULARY.exists():  # pragma: no cover - shipped with the package
        return {}
    out: dict[str, int] = {}
    with gzip.open(VOCABULARY, "rt") as fh:
        for line in fh:
            if not line.startswith("#"):
                word, count = line.rstrip("\n").split("\t")
                out[word] = int(count)
    return out


class _Paper:
    """What one paper's text says about a spelling: its token counts and its raw lowercase text."""

    __slots__ = ("lower", "tokens")

    def __init__(self, text: str) -> None:
        self.lower = text.lower()
        self.tokens = Counter(t.lower() for t in _VOCAB_TOKEN.findall(text))

    def apart(self, a: str, b: str) -> int:
        return self.lower.count(f" {a} {b} ")


def _established(word: str, paper: _Paper) -> bool:
    """A spelling the language, the corpus or the paper uses as a word of its own."""
    return (
        english_words().get(word, 0) >= MIN_ENGLISH_FREQ
        or corpus_vocabulary().get(word, 0) > MAX_JOINED_DF
        or paper.tokens[word] > MAX_IN_PAPER
    )


def _typo(word: str, paper: _Paper) -> bool:
    """Whether one letter less makes a word ("realease" is "release" misspelt, not "real ease")."""
    return any(_established(word[:i] + word[i + 1 :], paper) for i in range(len(word)))


def split_joined(word: str, paper: _Paper | None = None) -> str | None:
    """``word`` written as the compound or the two words it was joined from, or None.

    ``paper`` is the evidence of the paper it came from (see the module docstring).
    """
    paper = paper or _Paper("")
    low = word.lower()
    if english_words().get(low, 0) >= MIN_ENGLISH_FREQ or _typo(low, paper):
        return None
    vocab = corpus_vocabulary()
    best: tuple[tuple[int, int, int], str, str] | None = None
    for i in range(3, len(low) - 1):
        a, b = low[:i], low[i:]
        if (len(b) < 3 and b not in FUNCTION_TAILS) or b in SUFFIX_TAILS:
            continue
        da, db = vocab.get(a, 0), vocab.get(b, 0)
        if da < MIN_PART_DF or db < MIN_PART_DF:
            continue
        hyphen = vocab.get(f"{a}-{b}", 0) + paper.tokens[f"{a}-{b}"]
        key = (hyphen + paper.apart(a, b), min(da, db), len(a))
        if best is None or key > best[0]:
            best = (key, a, b)
    if best is None:
        return None
    (together, part_df, _), a, b = best
    hyphenated = vocab.get(f"{a}-{b}", 0) + paper.tokens[f"{a}-{b}"]
    joined = max(vocab.get(low, 0), paper.tokens[low])
    if _established(low, paper) and hyphenated < DOMINANCE * max(1, joined):
        return None  # the corpus or the paper spells it joined ("dataset", "subgoal")
    strong = part_df >= STRONG_PART_DF and len(a) >= 4 and len(b) >= 4
    compounding = _compounding(a, b)
    function = b in FUNCTION_TAILS or a in FUNCTION_WORDS or b in FUNCTION_WORDS
    if not (together or function or strong or compounding):
        return None
    apart = paper.apart(a, b)
    plural = a.endswith("s") and not a.endswith(("ss", "us", "is"))
    if function or apart > hyphenated or plural and not hyphenated:
        sep = " "  # "reduced to", "methods achieved": a plural is no compound's first part
    elif hyphenated or compounding or b.endswith(_MODIFIER_ENDINGS):
        sep = "-"  # "text-conditioned", "label-independent": a compound modifier
    else:
        sep = " "  # "preference matching": two nouns
    if word[0].isupper():
        a = a.capitalize()
    return f"{a}{sep}{b}"


@lru_cache(maxsize=1)
def _compound_parts() -> tuple[Counter, Counter]:
    """How many hyphenated two-part compounds of the vocabulary each head and each tail forms."""
    heads: Counter = Counter()
    tails: Counter = Counter()
    for w in corpus_vocabulary():
        if w.count("-") == 1:
            head, tail = w.split("-")
            heads[head] += 1
            tails[tail] += 1
    return heads, tails


def _compounding(a: str, b: str) -> bool:
    """Whether ``a`` or ``b`` (four letters or more) is a part that forms hyphenated compounds
    ("-based", "-aware", "self-", "multi-"), so that "Xbased" lost its hyphen."""
    heads, tails = _compound_parts()
    return (len(a) >= 4 and heads[a] >= COMPOUNDING) or (len(b) >= 4 and tails[b] >= COMPOUNDING)


def _spelled_out(acronym: str, before: str) -> bool:
    """Whether the words right before "(ACRONYM)" start with its letters ("voice activity
    detection (V AD)", "joint audio-video (JA V)")."""
    if not before.endswith("("):
        return False
    letters = acronym.rstrip("s")
    words = _WORD.findall(before[-120:])[-len(letters) :]
    return len(words) == len(letters) and all(
        w[0].upper() == c for w, c in zip(words, letters, strict=True)
    )


def join_kerned(text: str, counts: Counter | None = None) -> str:
    """Join acronyms kerning split at a "V" ("V AD" -> "VAD") where the evidence is there."""
    if " V" not in text and "V " not in text:
        return text
    # two single capitals ("X V", "V T") are math variables, not a split acronym
    found = [
        m
        for m in _KERNED.finditer(text)
        if (m.group(1)[-1] == "V" or m.group(2)[0] == "V") and len(m.group(0)) >= 4
    ]
    if not found:
        return text
    tokens = Counter(_WORD.findall(text))
    split = Counter(m.group(1) + m.group(2) for m in found)
    vocab = corpus_vocabulary()
    out: list[str] = []
    last = 0
    for m in found:
        joined = m.group(1) + m.group(2)
        elsewhere = tokens[joined] > 0 or tokens[joined.rstrip("s")] > 0
        if not (
            elsewhere
            or vocab.get(joined.lower(), 0) >= MIN_ACRONYM_DF
            or _spelled_out(joined, text[max(0, m.start() - 120) : m.start()].rstrip(" "))
        ):
            continue
        # a part that stands alone in the paper more often than in these splits is a word
        if tokens[m.group(2)] > split[joined] and len(m.group(2)) > 1:
            continue
        out.append(text[last : m.end(1)])
        last = m.end(1) + 1
    if counts is not None and out:
        counts["kerned_acronym_joined"] += len(out)
    return "".join(out) + text[last:] if out else text


def _sentence_start(text: str, start: int, end: int) -> bool:
    """A capitalized token that opens a sentence whose next word is lowercase
    ("Highquality data is ..."): not a name, which is followed by a surname or a comma."""
    before = text[:start].rstrip(" ")
    opens = not before or before[-1] in ".!?\n"
    return opens and text[end : end + 1] == " " and text[end + 1 : end + 2].islower()


def repair_words(text: str, counts: Counter | None = None) -> str:
    """Split joined words and join kerned acronyms in a paper's raw text (math left alone)."""
    text = join_kerned(text, counts)
    paper = _Paper(_MATH.sub(" ", text))
    spans = [m.span() for m in _MATH.finditer(text)] if ("\\(" in text or "$" in text) else []
    out: list[str] = []
    last = 0
    k = 0
    for m in _JOINED.finditer(text):
        while k < len(spans) and spans[k][1] <= m.start():
            k += 1
        if k < len(spans) and spans[k][0] <= m.start():
            continue  # inside math
        word = m.group(0)
        if word[0].isupper() and not _sentence_start(text, m.start(), m.end()):
            continue  # a name ("Chensheng Peng", "Tableformer"), unless it opens a sentence
        fixed = split_joined(word, paper)
        if fixed is None:
            continue
        out.append(text[last : m.start()] + fixed)
        last = m.end()
    if counts is not None and out:
        counts["joined_word_split"] += len(out)
    return "".join(out) + text[last:] if out else text
