"""LLM lexicon work (paper 4.1 "LLM expansion", Appendix I.1): expand, grade, keep strong-true.

The model proposes new markers for a relation from examples already in the lexicon (the
paper does not print its generation prompt, so ``markers/expand`` is Ratio's); the
Appendix I.1 classifier grades them, and only strong-true ones (true, high confidence:
holds in almost all contexts) go to ``lexicon-llm.tsv`` (``source = llm``), loadable
with ``load_lexicon(extra=[path])``. Markers the base lexicon lists under any relation
are left out, so the extra file can never contradict it.

Tested by tests/judge/test_pipeline.py.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ratio.core.config import RunConfig
from ratio.core.io import RatioError, write_text_atomic
from ratio.core.layout import RunDir
from ratio.judge.llm.prompts import get_prompt
from ratio.judge.llm.runner import Judge, Task
from ratio.lexicon import load_lexicon
from ratio.lexicon.model import Lexicon
from ratio.lexicon.spans import normalize_marker

CLASSIFIED = ("address", "broaden")  # Appendix I.1: Specify markers were all expert-vetted
DEFINITIONS = {
    "address": "the sentence after the phrase offers a solution, improvement or mitigation that is "
    "directly inspired by and targets the problem stated in the sentence before it",
    "broaden": "the sentence after the phrase is a generalization of the sentence before it: it "
    "broadens, abstracts or extends its scope",
}


@dataclass
class GradedMarker:
    marker: str
    relation: str
    grade: str  # strong-true | weak-true | false | invalid
    confidence: str
    rationale: str
    origin: str  # "expansion" or "given"


def expand(
    judge: Judge,
    lexicon: Lexicon,
    relation: str,
    *,
    n: int = 40,
    rounds: int = 1,
    examples: int = 25,
    seed: int = 13,
) -> list[str]:
    """New candidate markers for ``relation`` (normalized, not already in the lexicon)."""
    if relation not in CLASSIFIED:
        raise RatioError(
            f"marker expansion is for {', '.join(CLASSIFIED)} (Specify was curated by hand)"
        )
    prompt = get_prompt("markers/expand")
    known = lexicon.markers(relation)
    if not known:
        raise RatioError(f"the lexicon has no {relation} markers to use as examples")
    rng = random.Random(seed)
    tasks = []
    for r in range(rounds):
        ex = rng.sample(known, min(examples, len(known)))
        tasks.append(
            Task(
                prompt,
                {
                    "relation": relation,
                    "definition": DEFINITIONS[relation],
                    "examples": "\n".join(f"- {m}" for m in ex),
                    "n": str(n),
                },
                tag=f"{relation}:{r}",
            )
        )
    out: dict[str, None] = {}
    for res in judge.run(tasks, desc=f"expand {relation}"):
        if not res.valid or not res.parsed:
            continue
        for m in res.parsed["markers"]:
            norm = normalize_marker(m)
            if norm and len(norm.split()) <= 7 and norm not in lexicon:
                out.setdefault(norm)
    return list(out)


def grade(
    judge: Judge, relation: str, markers: list[str], origin: str = "given"
) -> list[GradedMarker]:
    """Grade markers with the I.1 classifier of ``relation``."""
    if relation not in CLASSIFIED:
        raise RatioError(f"the I.1 classifier exists for {', '.join(CLASSIFIED)} only")
    prompt = get_prompt(f"markers/{relation}")
    tasks = [Task(prompt, {"marker": m}, candidate_id=m, tag=relation) for m in markers]
    out = []
    for m, r in zip(markers, judge.run(tasks, desc=f"grade {relation}"), strict=True):
        if r.valid and r.parsed:
            verdict = (r.parsed["grade"], r.parsed["confidence"], r.parsed["reason"])
        else:
            verdict = ("invalid", "", r.error)
        out.append(GradedMarker(m, relation, *verdict, origin))
    return out


def _clean(s: str) -> str:
    return " ".join(s.replace("\t", " ").split())


def write_llm_lexicon(
    graded: list[GradedMarker], lexicon: Lexicon, out_dir: Path, model: str
) -> dict:
    """Write the strong-true markers as ``lexicon-llm.tsv`` and every grade for review."""
    kept: dict[str, GradedMarker] = {}  # marker -> its first strong-true grade
    for g in graded:
        if g.grade == "strong-true" and g.marker not in lexicon:
            kept.setdefault(g.marker, g)
    header = [
        "# Ratio marker lexicon: LLM-expanded markers (paper 4.1); only strong-true kept.",
        f"# model: {model}",
        "marker\trelation\tsource\tnotes",
    ]
    body = [
        f"{g.marker}\t{g.relation}\tllm\tstrong-true ({g.origin}): {_clean(g.rationale)[:200]}"
        for g in kept.values()
    ]
    write_text_atomic(out_dir / "lexicon-llm.tsv", "\n".join(header + body) + "\n")
    review = ["marker\trelation\tgrade\tconfidence\torigin\trationale"] + [
        f"{g.marker}\t{g.relation}\t{g.grade}\t{g.confidence}\t{g.origin}\t{_clean(g.rationale)}"
        for g in graded
    ]
    write_text_atomic(out_dir / "markers-graded.tsv", "\n".join(review) + "\n")
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for g in graded:
        counts[g.relation][g.grade] = counts[g.relation].get(g.grade, 0) + 1
    return {
        "kept": len(kept),
        "graded": len(graded),
        "by_relation": dict(counts),
        "lexicon": str(out_dir / "lexicon-llm.tsv"),
        "review": str(out_dir / "markers-graded.tsv"),
    }


def build_llm_lexicon(
    config: RunConfig,
    judge: Judge,
    relations: Iterable[str] = CLASSIFIED,
    *,
    n: int = 40,
    rounds: int = 1,
    given: list[str] | None = None,
    out_dir: Path | None = None,
) -> dict:
    """Expand (``n`` per round; 0: none) and grade each relation's markers, then write them.

    ``given`` markers are graded under every relation too.
    """
    lexicon = load_lexicon(config.resolve(config.lexicon.path) if config.lexicon.path else None)
    graded: list[GradedMarker] = []
    for rel in relations:
        new = expand(judge, lexicon, rel, n=n, rounds=rounds, seed=config.build.seed) if n else []
        graded += grade(judge, rel, new, origin="expansion")
        if given:
            graded += grade(judge, rel, given, origin="given")
    out = out_dir or RunDir.of(config).judge.lexicon
    return write_llm_lexicon(graded, lexicon, out, judge.backend.model)
