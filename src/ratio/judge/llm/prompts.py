"""Versioned judge prompts (paper Appendix I) and the JSON shapes their answers must have.

Prompts are data: ``prompts/<task>.<relation>.<name>.toml``. A top-10 prompt (I.3) is a
set of exact edits to its silver prompt (``derive_from`` + ``[[edits]]``), so the
difference the paper describes stays visible and checked: an edit that no longer matches
is an error, never a silent no-op. ``Prompt.digest`` hashes the rendered text, so the
judgment cache notices an edit even if ``version`` was not bumped (and a TOML comment, such
as the silver and top-k files' pointer to docs/annotation-guideline.md, changes nothing).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from ratio.core.io import RatioError

PROMPT_DIR = Path(__file__).parent / "prompts"

# The two prompts per relation the paper retained (Table 10), in Table 15's order.
DEFAULT_PAIR: dict[str, tuple[str, str]] = {
    "address": ("minimal-v2", "ordered-v2"),
    "specify": ("anchor-full-v2", "anchor-compact"),
    "broaden": ("relaxed", "directional"),
}


class PromptError(RatioError):
    """A prompt file is malformed or an edit/template does not apply."""


class InvalidResponse(ValueError):
    """A model answer that does not parse as the prompt's JSON shape."""


_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def _bool(v: Any, where: str) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
        return v.strip().lower() in _TRUE
    raise InvalidResponse(f"{where}: expected true/false, got {v!r}")


def _obj(d: Any, key: str) -> dict:
    v = d.get(key) if isinstance(d, dict) else None
    if not isinstance(v, dict):
        raise InvalidResponse(f"missing object {key!r}")
    return v


def _conf(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, list) and len(v) == 1:
        v = v[0]
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InvalidResponse(f"confidence {v!r} is not a number") from None
    if not 0.0 <= f <= 1.0:
        raise InvalidResponse(f"confidence {f} outside [0, 1]")
    return f


def _parse_marker(d: dict) -> dict:
    label = _bool(d.get("label"), "label")
    conf = str(d.get("confidence", "")).strip().lower()
    if conf not in ("high", "medium", "low"):
        raise InvalidResponse(f"confidence must be high/medium/low, got {d.get('confidence')!r}")
    # strong-true / weak-true / false (section 4.1) from the I.1 answer: true with high
    # confidence holds "in almost all contexts", true with less only "in some".
    grade = "false" if not label else ("strong-true" if conf == "high" else "weak-true")
    return {
        "accepted": label,
        "label": label,
        "confidence": conf,
        "grade": grade,
        "reason": str(d.get("rationale", "")),
    }


def _parse_problem_solution(d: dict) -> dict:
    p = _bool(_obj(d, "is_problem_valid").get("is_valid"), "is_problem_valid.is_valid")
    s = _bool(_obj(d, "is_solution_valid").get("is_valid"), "is_solution_valid.is_valid")
    m = _bool(_obj(d, "match_evaluation").get("is_match"), "match_evaluation.is_match")
    reason = str(_obj(d, "match_evaluation").get("reason", ""))
    # "match = True only if both are valid AND ..." -- enforce it even if the model did not
    return {
        "accepted": p and s and m,
        "problem_valid": p,
        "solution_valid": s,
        "match": m,
        "reason": reason,
    }


def _parse_decision(d: dict) -> dict:
    if "decision" not in d:
        raise InvalidResponse("missing 'decision'")
    dec = _bool(d["decision"], "decision")
    return {
        "accepted": dec,
        "confidence": _conf(d.get("confidence")),
        "reason": str(d.get("reason", "")),
    }


def _parse_winner(d: dict) -> dict:
    w = str(d.get("winner", "")).strip()
    w = {"a": "A", "b": "B", "tie": "tie", "list a": "A", "list b": "B"}.get(w.lower(), w)
    if w not in ("A", "B", "tie"):
        raise InvalidResponse(f"winner must be A, B or tie, got {d.get('winner')!r}")
    return {
        "accepted": None,
        "winner": w,
        "confidence": _conf(d.get("confidence")),
        "reason": str(d.get("reason", "")),
    }


def _parse_marker_list(d: dict) -> dict:
    ms = d.get("markers")
    if not isinstance(ms, list) or not all(isinstance(m, str) for m in ms):
        raise InvalidResponse("'markers' must be a list of strings")
    return {"accepted": None, "markers": [m.strip() for m in ms if m.strip()]}


def _object(**properties: dict) -> dict:
    """A JSON-schema object that requires every one of its properties."""
    return {"type": "object", "properties": properties, "required": list(properties)}


_STR = {"type": "string"}
_TF = {"type": "string", "enum": ["True", "False"]}
_NUM = {"type": "number"}

SHAPES: dict[str, tuple[Any, dict]] = {
    "marker": (
        _parse_marker,
        _object(
            label={"type": "boolean"},
            rationale=_STR,
            confidence={"type": "string", "enum": ["high", "medium", "low"]},
        ),
    ),
    "problem_solution": (
        _parse_problem_solution,
        _object(
            is_problem_valid=_object(is_valid=_TF, reason=_STR),
            is_solution_valid=_object(is_valid=_TF, reason=_STR),
            match_evaluation=_object(is_match=_TF, reason=_STR),
        ),
    ),
    "decision": (
        _parse_decision,
        _object(decision={"type": "boolean"}, confidence=_NUM, reason=_STR),
    ),
    "winner": (
        _parse_winner,
        _object(winner={"type": "string", "enum": ["A", "B", "tie"]}, confidence=_NUM, reason=_STR),
    ),
    "marker_list": (_parse_marker_list, _object(markers={"type": "array", "items": _STR})),
}

REASON_FIELDS = ("reason", "rationale")

# The fields that carry a shape's verdict; a prompt's output format must name each of them,
# since the answer grammar, the parser and the verdict probabilities all key on them.
VERDICT_FIELDS: dict[str, tuple[str, ...]] = {
    "marker": ("label",),
    "problem_solution": ("is_valid", "is_match"),
    "decision": ("decision",),
    "winner": ("winner",),
    "marker_list": ("markers",),
}


@dataclass(frozen=True)
class VerdictStep:
    """One yes/no verdict inside an answer, for reading its probability off the model.

    ``before`` is the answer text from the previous verdict's value (or the start) up to
    this value, in the order the verdicts-only grammar generates the fields; ``key`` is the
    JSON key whose value it is, to find it again in a sampled answer.
    """

    key: str
    before: str
    accept: str
    reject: str


# Binary shapes only: the accepting answer is the chain of every step's ``accept`` value.
VERDICTS: dict[str, tuple[VerdictStep, ...]] = {
    "decision": (VerdictStep("decision", '{"decision": ', "true", "false"),),
    "marker": (VerdictStep("label", '{"label": ', "true", "false"),),
    "problem_solution": (
        VerdictStep("is_valid", '{"is_problem_valid": {"is_valid": "', "True", "False"),
        VerdictStep("is_valid", '"}, "is_solution_valid": {"is_valid": "', "True", "False"),
        VerdictStep("is_match", '"}, "match_evaluation": {"is_match": "', "True", "False"),
    ),
}
_CLOSE = {"decision": "}", "marker": "}", "problem_solution": '"}}'}


def verdict_answer(shape: str, values: Sequence[bool]) -> str:
    """The verdicts-only answer text with these step values (a few-shot example's answer)."""
    steps = VERDICTS[shape]
    if len(values) != len(steps):
        raise ValueError(f"{shape}: {len(steps)} verdict value(s) needed, got {len(values)}")
    body = "".join(
        s.before + (s.accept if v else s.reject) for s, v in zip(steps, values, strict=True)
    )
    return body + _CLOSE[shape]


def example_answer(shape: str, accepted: bool) -> str:
    """A few-shot answer for a labelled pair: every step accepts, or only the last rejects.

    A human "no" does not say which sub-verdict failed; the last step (the match for
    problem/solution prompts) is the one that judges the pair as a whole.
    """
    n = len(VERDICTS[shape])
    return verdict_answer(shape, [True] * n if accepted else [True] * (n - 1) + [False])


def verdicts_only(schema: dict) -> dict:
    """``schema`` without its free-text reason fields, at any depth (a shorter answer)."""
    if schema.get("type") != "object":
        return schema
    props = {
        k: verdicts_only(v)
        for k, v in schema.get("properties", {}).items()
        if k not in REASON_FIELDS
    }
    req = [k for k in schema.get("required", []) if k not in REASON_FIELDS]
    return {**schema, "properties": props, "required": req}


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def extract_json(text: str) -> dict:
    """The JSON object in ``text``: plain, in a markdown fence, or the first ``{...}`` span."""
    t = text.strip()
    m = _FENCE.match(t)
    if m:
        t = m.group(1)
    try:
        obj = json.loads(t)
    except json.JSONDecodeError:
        start = t.find("{")
        if start < 0:
            raise InvalidResponse("no JSON object in response") from None
        try:
            obj, _ = json.JSONDecoder().raw_decode(t[start:])
        except json.JSONDecodeError as e:
            raise InvalidResponse(f"invalid JSON: {e.msg} at char {e.pos}") from None
    if not isinstance(obj, dict):
        raise InvalidResponse(f"expected a JSON object, got {type(obj).__name__}")
    return obj


@dataclass(frozen=True)
class Prompt:
    """One versioned prompt: system text, user template and answer shape."""

    id: str
    version: str
    task: str
    relation: str
    name: str
    shape: str
    system: str
    user: str
    source: str = ""
    file: str = ""
    fields: tuple[str, ...] = field(default=())

    @property
    def digest(self) -> str:
        h = hashlib.sha256(f"{self.shape}\n{self.system}\n\x00{self.user}".encode())
        return h.hexdigest()[:16]

    @property
    def schema(self) -> dict:
        return SHAPES[self.shape][1]

    def render(self, **values: str) -> str:
        """The user message; every template field must be given (and nothing else used)."""
        missing = [f for f in self.fields if f not in values]
        if missing:
            raise PromptError(f"{self.id}: missing template value(s) {missing}")
        return self.user.format_map({f: values[f] for f in self.fields})

    def parse(self, text: str) -> dict:
        """Parse and validate an answer; raises :class:`InvalidResponse`."""
        return SHAPES[self.shape][0](extract_json(text))


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()).strip()


def _template_fields(user: str, where: str) -> tuple[str, ...]:
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(user) if f is not None]
    except ValueError as e:
        raise PromptError(f"{where}: bad user template: {e}") from e
    for f in names:
        if not f.isidentifier():
            raise PromptError(f"{where}: template field {{{f}}} is not a plain name")
    return tuple(dict.fromkeys(names))


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise PromptError(f"{path}: {e}") from e


@functools.lru_cache(maxsize=4)
def load_prompts(directory: str | None = None) -> dict[str, Prompt]:
    """Every prompt in ``directory`` (default: the shipped ones), keyed by id."""
    d = Path(directory) if directory else PROMPT_DIR
    raw = {}
    for p in sorted(d.glob("*.toml")):
        data = _read(p)
        for key in ("id", "version", "task", "relation", "name", "user"):
            if key not in data:
                raise PromptError(f"{p}: missing key {key!r}")
        if data["id"] in raw:
            raise PromptError(f"{p}: duplicate prompt id {data['id']!r}")
        data["_file"] = str(p)
        raw[data["id"]] = data
    out: dict[str, Prompt] = {}
    for pid, data in raw.items():
        where = data["_file"]
        if "derive_from" in data:
            base = raw.get(data["derive_from"])
            if base is None or "derive_from" in base:
                raise PromptError(
                    f"{where}: derive_from {data['derive_from']!r} is not a base prompt"
                )
            system = _clean(base["system"])
            for i, e in enumerate(data.get("edits", [])):
                old, new = e.get("old"), e.get("new", "")
                n = system.count(old) if old else 0
                if n != 1:
                    raise PromptError(
                        f"{where}: edits[{i}] matches {n} times in {base['id']} (need 1)"
                    )
                system = system.replace(old, new)
            shape = data.get("shape", base.get("shape"))
        else:
            if "system" not in data or "shape" not in data:
                raise PromptError(f"{where}: a base prompt needs 'system' and 'shape'")
            system, shape = _clean(data["system"]), data["shape"]
        if shape not in SHAPES:
            raise PromptError(f"{where}: unknown shape {shape!r}; known: {', '.join(SHAPES)}")
        for fld in VERDICT_FIELDS[shape]:
            if f'"{fld}"' not in system:
                raise PromptError(
                    f"{where}: verdict field {fld!r} of shape {shape!r} is missing from the "
                    "prompt's output format (the system text must name it, quoted)"
                )
        user = _clean(data["user"])
        out[pid] = Prompt(
            id=pid,
            version=str(data["version"]),
            task=data["task"],
            relation=data["relation"],
            name=data["name"],
            shape=shape,
            system=_clean(system),
            user=user,
            source=data.get("source", ""),
            file=where,
            fields=_template_fields(user, where),
        )
    return out


def get_prompt(prompt_id: str) -> Prompt:
    prompts = load_prompts()
    if prompt_id not in prompts:
        raise PromptError(f"unknown prompt {prompt_id!r}; known: {', '.join(sorted(prompts))}")
    return prompts[prompt_id]


def relation_prompts(
    task: str, relation: str, names: list[str] | tuple[str, ...] | None = None
) -> list[Prompt]:
    """The prompts of one task and relation: ``names`` or the paper's retained pair."""
    chosen = list(names) if names else list(DEFAULT_PAIR[relation])
    return [get_prompt(f"{task}/{relation}/{n}") for n in chosen]


def candidates_for(task: str, relation: str) -> list[Prompt]:
    """Every prompt of one task and relation (calibration compares them all)."""
    return sorted(
        (p for p in load_prompts().values() if p.task == task and p.relation == relation),
        key=lambda p: p.id,
    )


def silver_pair_text(query: str, marker: str, gold: str) -> str:
    """``"querySentence. Discourse-marker, goldSentence"`` (Appendix E silver input)."""
    q = query.strip()
    if q and q[-1] not in ".!?":
        q += "."
    m = marker.strip().rstrip(",")
    m = m[:1].upper() + m[1:]
    g = gold.strip()
    if len(g) > 1 and g[0].isupper() and not g[1].isupper():
        g = g[0].lower() + g[1:]  # the build capitalised the gold after stripping the marker
    return f"{q} {m}, {g}"


def numbered(texts: list[str]) -> str:
    return "\n".join(f"{i}. {t}" for i, t in enumerate(texts, 1))
