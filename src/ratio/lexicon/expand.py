"""``expand``: Hearst-style templates with typed slots → candidate markers (paper Table 5).

A template such as ``(in order) to [respond_problem] [dem] [problem]`` is filled
from curated word lists; verbs and nouns are inflected with lemminflect and the
demonstrative agrees in number with the noun after it ("this issue", "these
issues"). Output is a lexicon-format TSV with ``source=pattern`` for validation.

Tested by tests/lexicon/test_tools.py.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ratio.lexicon.model import DATA_DIR, LEXICON_RELATIONS, Lexicon, LexiconError, write_lexicon
from ratio.lexicon.spans import normalize_marker

DEFAULT_PATTERNS = DATA_DIR / "patterns.txt"
SLOT_TYPES = ("noun", "verb", "word")
_FORMS = {"ing": "VBG", "s": "VBZ", "ed": "VBN", "past": "VBD"}
_TOKEN = re.compile(r"\[[^\]]+\]|[(){}|]|[^\s(){}|\[\]]+")


@dataclass(frozen=True, slots=True)
class Slot:
    name: str
    form: str = ""  # "", "sg", "pl", or a verb form key of _FORMS
    dem: bool = False  # a demonstrative slot ([dem] / [dem*])
    wide: bool = False  # [dem*]: also that/those


@dataclass(slots=True)
class Template:
    relation: str
    accept: bool
    name: str
    text: str
    line: int


@dataclass(slots=True)
class PatternSet:
    slots: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # name -> (type, words)
    templates: list[Template] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Candidate:
    marker: str
    relation: str
    template: str
    accepted: bool


def parse_patterns(path: str | os.PathLike | None = None) -> PatternSet:
    """Read a patterns file (format documented at the top of ``data/patterns.txt``)."""
    p = Path(path) if path is not None else DEFAULT_PATTERNS
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise LexiconError(f"{p}: cannot read patterns: {e.strerror or e}") from e
    ps = PatternSet()
    current: tuple[str, str] | None = None  # ("slot", name) or ("template", "")
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@slot"):
            parts = line.split()
            if len(parts) != 3 or parts[2] not in SLOT_TYPES:
                raise LexiconError(f"{p}:{lineno}: expected '@slot NAME noun|verb|word'")
            ps.slots[parts[1]] = (parts[2], [])
            current = ("slot", parts[1])
        elif line.startswith("@template"):
            parts = line.split()
            if (
                len(parts) != 4
                or parts[1] not in LEXICON_RELATIONS
                or parts[2] not in ("accept", "review")
            ):
                raise LexiconError(
                    f"{p}:{lineno}: expected '@template RELATION accept|review NAME'"
                )
            ps.templates.append(Template(parts[1], parts[2] == "accept", parts[3], "", lineno))
            current = ("template", "")
        elif current is None:
            raise LexiconError(f"{p}:{lineno}: text before any @slot or @template")
        elif current[0] == "slot":
            ps.slots[current[1]][1].extend(w.strip() for w in line.split("|") if w.strip())
        else:
            t = ps.templates[-1]
            if t.text:
                raise LexiconError(f"{p}:{lineno}: template {t.name!r} has more than one line")
            t.text = line
    for t in ps.templates:
        for name in re.findall(r"\[([^\]:*]+)", t.text):
            if name != "dem" and name not in ps.slots:
                raise LexiconError(f"{p}:{t.line}: template {t.name!r} uses unknown slot [{name}]")
    return ps


def _parse_seq(tokens: list[str], i: int, stop: set[str]) -> tuple[list, int]:
    """Parse tokens into nodes: str | Slot | ("opt", seq) | ("alt", [seq, ...])."""
    seq: list = []
    while i < len(tokens) and tokens[i] not in stop:
        tok = tokens[i]
        if tok == "(":
            inner, i = _parse_seq(tokens, i + 1, {")"})
            seq.append(("opt", inner))
        elif tok == "{":
            alts = []
            while True:
                inner, i = _parse_seq(tokens, i + 1, {"|", "}"})
                alts.append(inner)
                if i >= len(tokens) or tokens[i] == "}":
                    break
            seq.append(("alt", alts))
        elif tok.startswith("["):
            body = tok[1:-1]
            name, _, form = body.partition(":")
            if name in ("dem", "dem*"):
                seq.append(Slot("dem", dem=True, wide=name == "dem*"))
            else:
                seq.append(Slot(name, form))
        else:
            seq.append(tok)
        i += 1
    if stop and i >= len(tokens):
        raise LexiconError(f"unbalanced brackets in template: {' '.join(tokens)}")
    return seq, i


def _flatten(seq: list) -> Iterator[list]:
    """Every choice of optional/alternative parts: lists of str | Slot."""
    if not seq:
        yield []
        return
    head, rest = seq[0], seq[1:]
    if isinstance(head, tuple) and head[0] == "opt":
        heads = [[], *list(_flatten(head[1]))]
    elif isinstance(head, tuple):
        heads = [h for alt in head[1] for h in _flatten(alt)]
    else:
        heads = [[head]]
    for h in heads:
        for r in _flatten(rest):
            yield h + r


@functools.cache
def _inflect(word: str, tag: str) -> str:
    from lemminflect import getInflection

    # verbs inflect their first word ("deal with"), nouns their last ("failure mode")
    words = word.split()
    i = -1 if tag.startswith("NN") else 0
    forms = getInflection(words[i], tag=tag)
    words[i] = forms[0] if forms else words[i]
    return " ".join(words)


def _fillers(slot: Slot, ps: PatternSet) -> list[tuple[str, str | None]]:
    """(surface form, number) choices for one slot; number is 'sg'/'pl' for nouns."""
    kind, words = ps.slots[slot.name]
    out: list[tuple[str, str | None]] = []
    for w in words:
        mass = w.endswith("!")
        w = w.rstrip("!")
        if kind == "noun":
            if slot.form in ("", "sg"):
                out.append((w, "sg"))
            if slot.form in ("", "pl") and not mass:
                out.append((_inflect(w, "NNS"), "pl"))
        elif kind == "verb" and slot.form:
            if slot.form not in _FORMS:
                raise LexiconError(f"unknown verb form :{slot.form} in [{slot.name}:{slot.form}]")
            out.append((_inflect(w, _FORMS[slot.form]), None))
        else:
            out.append((w, None))
    return out


def _literal_number(word: str) -> str | None:
    """'sg'/'pl' for a literal noun right after a demonstrative ("this issue", "these issues")."""
    from lemminflect import getLemma

    lemma = getLemma(word, upos="NOUN")
    return "pl" if lemma and lemma[0] != word else "sg"


def _number_after(flat: list, filled: list, number: dict[int, str | None], i: int) -> str | None:
    """Grammatical number the demonstrative at ``i`` must agree with, if any noun follows."""
    if i + 1 < len(flat) and isinstance(flat[i + 1], str):
        return _literal_number(flat[i + 1].split()[-1])
    return next((number[j] for j in range(i + 1, len(filled)) if number.get(j)), None)


def expand_template(template: Template, ps: PatternSet) -> list[str]:
    """All surface strings of one template (deduplicated, in generation order)."""
    tokens = _TOKEN.findall(template.text)
    seq, _ = _parse_seq(tokens, 0, set())
    out: dict[str, None] = {}
    for flat in _flatten(seq):
        slots = [(i, x) for i, x in enumerate(flat) if isinstance(x, Slot) and not x.dem]
        for combo in itertools.product(*(_fillers(s, ps) for _, s in slots)):
            filled: list = list(flat)
            number: dict[int, str | None] = {}
            for (i, _s), (form, num) in zip(slots, combo, strict=True):
                filled[i] = form
                number[i] = num
            dem_choices = []
            for i, x in enumerate(filled):
                if isinstance(x, Slot):
                    nxt = _number_after(flat, filled, number, i)
                    sg, pl = (
                        (["this", "that"], ["these", "those"]) if x.wide else (["this"], ["these"])
                    )
                    dem_choices.append(
                        (i, sg if nxt == "sg" else pl if nxt == "pl" else ["this", "these"])
                    )
            for dems in itertools.product(*(c for _, c in dem_choices)):
                for (i, _), d in zip(dem_choices, dems, strict=True):
                    filled[i] = d
                out[normalize_marker(" ".join(filled))] = None
    return [m for m in out if m]


def expand(patterns: str | os.PathLike | PatternSet | None = None) -> list[Candidate]:
    """All candidates of all templates; a marker produced by several templates is listed once."""
    ps = patterns if isinstance(patterns, PatternSet) else parse_patterns(patterns)
    seen: dict[str, Candidate] = {}
    for t in ps.templates:
        for m in expand_template(t, ps):
            prev = seen.get(m)
            if prev is None or (t.accept and not prev.accepted):
                seen[m] = Candidate(m, t.relation, t.name, t.accept)
    return list(seen.values())


def write_candidates(
    candidates: list[Candidate],
    out_tsv: str | os.PathLike,
    lexicon: Lexicon | None = None,
    counts: dict[str, int] | None = None,
    accepted_only: bool = False,
) -> int:
    """Write candidates as a lexicon TSV (``source=pattern``) for validation.

    Markers already in ``lexicon`` are skipped; ``counts`` (span → corpus
    frequency, e.g. from ``discover.count_spans``) is recorded in the notes.
    """
    rows = []
    for c in candidates:
        if (lexicon is not None and c.marker in lexicon) or (accepted_only and not c.accepted):
            continue
        notes = f"template={c.template}; {'accept' if c.accepted else 'review'}"
        if counts is not None:
            notes += f"; count={counts.get(c.marker, 0)}"
        rows.append((c.marker, c.relation, "pattern", notes))
    write_lexicon(out_tsv, rows)
    return len(rows)
