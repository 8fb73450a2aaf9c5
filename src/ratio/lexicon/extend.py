"""``extend``: every corpus extension of a few hand-picked head markers.

Paper §4.1: for selected heads such as "to address", all extensions of at most
five further words up to a comma were collected ("to address this potential
bias,"). A bare head is not itself a marker (it is not anaphoric), so by default
only extensions that refer back (this/these/the above/...) are proposed.

Tested by tests/lexicon/test_tools.py.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tqdm import tqdm

from ratio.lexicon.corpus import SentenceSource, iter_pairs
from ratio.lexicon.model import LEXICON_RELATIONS, Lexicon, LexiconError, write_lexicon
from ratio.lexicon.spans import leading_span, normalize_marker

# Words that tie an extension back to the previous sentence.
ANAPHORA = re.compile(
    r"\b(this|these|that|those|such|it|them|above|aforementioned|above-mentioned|"
    r"former|latter|both|said|the (?:issue|problem|challenge|limitation|gap|concern)s?)\b"
)
# Extensions that pose a question or name a purpose rather than a problem.
NOT_PROBLEM = re.compile(
    r"\b(questions?|q\d|rq\d|tasks?|goals?|aims?|needs?|settings?|scenarios?|cases?|points?|"
    r"requirements?|inquiry|desiderat\w*|considerations?|domains?|circumstances?|dynamics)\b"
)
# Only plain words: digits, brackets and abbreviations mark extraction noise, not phrasing.
PLAIN = re.compile(r"^[a-z][a-z '-]*$")


@dataclass(frozen=True, slots=True)
class Extension:
    head: str
    marker: str
    relation: str
    count: int
    example: str


def extend(
    heads: dict[str, str] | Iterable[str],
    source: SentenceSource,
    max_extra_words: int = 5,
    min_count: int = 1,
    anaphoric_only: bool = True,
    relation: str = "address",
) -> list[Extension]:
    """All extensions (1..``max_extra_words`` more words, up to a comma) of each head.

    ``heads`` maps head → relation (or is a list of heads, all of ``relation``).
    Returned sorted by head, then descending count.
    """
    if not isinstance(heads, dict):
        heads = dict.fromkeys(heads, relation)
    head_rel = {normalize_marker(h): r for h, r in heads.items()}
    for h, r in head_rel.items():
        if r not in LEXICON_RELATIONS:
            raise LexiconError(f"head {h!r}: unknown relation {r!r}")
    by_first: dict[str, list[tuple[str, int]]] = {}
    for h in head_rel:
        by_first.setdefault(h.split()[0], []).append((h, len(h.split())))
    max_words = max((len(h.split()) for h in head_rel), default=0) + max_extra_words
    counts: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], str] = {}
    for _prev, text, _pid in tqdm(iter_pairs(source), desc="extend", unit=" sent", disable=None):
        span = leading_span(text, max_words)
        if span is None:
            continue
        words = span.split()
        for h, n in by_first.get(words[0], ()):
            if n < len(words) <= n + max_extra_words and " ".join(words[:n]) == h:
                key = (h, span)
                counts[key] += 1
                example.setdefault(key, text)
    out = []
    for (h, span), n in counts.items():
        if n < min_count:
            continue
        tail = span[len(h) :]
        if anaphoric_only and (
            not ANAPHORA.search(tail) or NOT_PROBLEM.search(tail) or not PLAIN.match(span)
        ):
            continue
        out.append(Extension(h, span, head_rel[h], n, example[(h, span)]))
    out.sort(key=lambda e: (e.head, -e.count, e.marker))
    return out


def write_candidates(
    extensions: list[Extension],
    out_tsv: str | os.PathLike,
    lexicon: Lexicon | None = None,
    source: str = "extendable",
) -> int:
    """Write extensions as a lexicon TSV for review, skipping markers ``lexicon`` has; returns
    the number of rows written."""
    rows = []
    for e in extensions:
        if lexicon is None or e.marker not in lexicon:
            ex = " ".join(e.example.split())[:160]
            rows.append(
                (e.marker, e.relation, source, f"head={e.head}; count={e.count}; e.g. {ex}")
            )
    write_lexicon(out_tsv, rows)
    return len(rows)
