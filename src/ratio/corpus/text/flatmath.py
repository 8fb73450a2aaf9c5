"""Inline math as readable text: short LaTeX rendered ("x_{i}^{2}" as "x_i^2"), flattened
formulas that lost their structure replaced by ``[MATH]``.

Every inline formula used to become ``[MATH]``, so "Hence [MATH] is positively homogenous of
degree [MATH]." said nothing a reader could check, and a quarter of the sentences of theory
papers were mostly placeholders. Most inline formulas are a symbol or a short expression
(``\\(x\\)``, ``\\(\\mathcal{X}\\)``, ``\\(t\\in[T]\\)``, ``\\(O(n\\log n)\\)``), so :func:`render_tex`
writes them as text: Greek letters and operators as Unicode, fonts dropped (``\\mathbb{R}`` as
"ℝ"), sub- and superscripts as ``_`` and ``^`` with braces only around more than one token
(``x_i^2``, ``x_{t+1}``), fractions as "a/b", spaces around relations ("t ∈ [T]"). A formula
that renders longer than ``MAX_CHARS``, or uses a command this renderer does not know, stays
``[MATH]``: a half-rendered formula is worse than a placeholder.

docling writes inline math as text already, but flattened: braces, fractions and scripts are
gone ("ϕ ( x ) = 1 2 ( f ( x ) -f ( x ⋆ )) 2" for ϕ(x) = ½(f(x) − f(x⋆))², "G ∈ 64 , 16 , 4" for
G ∈ {64, 16, 4}). What was lost cannot be restored, so :func:`replace_flattened` replaces such a
formula by ``[MATH]`` when it shows the loss (:func:`lost_structure`): two numbers side by side,
a number right after a closing norm bar or bracket, or a list of numbers after a set relation
with no bracket. Intact flattened formulas ("x ∈ C", "k = 2") stay.

Tested by tests/corpus/text/test_flatmath.py.
"""

from __future__ import annotations

import re

MAX_CHARS = 32

_GREEK = {
    name: chr(code)
    for name, code in (
        ("alpha", 0x3B1), ("beta", 0x3B2), ("gamma", 0x3B3), ("delta", 0x3B4),
        ("epsilon", 0x3F5), ("varepsilon", 0x3B5), ("zeta", 0x3B6), ("eta", 0x3B7),
        ("theta", 0x3B8), ("vartheta", 0x3D1), ("iota", 0x3B9), ("kappa", 0x3BA),
        ("lambda", 0x3BB), ("mu", 0x3BC), ("nu", 0x3BD), ("xi", 0x3BE), ("pi", 0x3C0),
        ("varpi", 0x3D6), ("rho", 0x3C1), ("varrho", 0x3F1), ("sigma", 0x3C3),
        ("varsigma", 0x3C2), ("tau", 0x3C4), ("upsilon", 0x3C5), ("phi", 0x3D5),
        ("varphi", 0x3C6), ("chi", 0x3C7), ("psi", 0x3C8), ("omega", 0x3C9),
        ("Gamma", 0x393), ("Delta", 0x394), ("Theta", 0x398), ("Lambda", 0x39B),
        ("Xi", 0x39E), ("Pi", 0x3A0), ("Sigma", 0x3A3), ("Upsilon", 0x3A5), ("Phi", 0x3A6),
        ("Psi", 0x3A8), ("Omega", 0x3A9),
    )
}  # fmt: skip
_RELATIONS = {
    "in": "∈", "notin": "∉", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "neq": "≠",
    "ne": "≠", "approx": "≈", "sim": "∼", "simeq": "≃", "cong": "≅", "equiv": "≡",
    "propto": "∝", "to": "→", "rightarrow": "→", "leftarrow": "←", "gets": "←",
    "mapsto": "↦", "Rightarrow": "⇒", "implies": "⇒", "Leftrightarrow": "⇔", "iff": "⇔",
    "subset": "⊂", "subseteq": "⊆", "supset": "⊃", "supseteq": "⊇", "ll": "≪", "gg": "≫",
    "coloneqq": "≔", "doteq": "≐", "preceq": "⪯", "succeq": "⪰", "prec": "≺", "succ": "≻",
    "lesssim": "≲", "gtrsim": "≳", "perp": "⊥", "mid": "∣",
}  # fmt: skip
_SYMBOLS = {
    "times": "×", "cdot": "·", "pm": "±", "mp": "∓", "infty": "∞", "partial": "∂",
    "nabla": "∇", "forall": "∀", "exists": "∃", "emptyset": "∅", "varnothing": "∅",
    "cup": "∪", "cap": "∩", "setminus": "∖", "wedge": "∧", "vee": "∨", "neg": "¬",
    "oplus": "⊕", "otimes": "⊗", "odot": "⊙", "circ": "∘", "star": "⋆", "ast": "∗",
    "dagger": "†", "top": "⊤", "bot": "⊥", "|": "‖", "lVert": "‖", "rVert": "‖",
    "Vert": "‖", "vert": "|", "lvert": "|", "rvert": "|", "langle": "⟨", "rangle": "⟩",
    "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "ldots": "…", "dots": "…",
    "cdots": "⋯", "prime": "′", "ell": "ℓ", "sum": "∑", "prod": "∏", "int": "∫",
    "uparrow": "↑", "downarrow": "↓", "checkmark": "✓", "colon": ":", "bullet": "•",
    "{": "{", "}": "}", "%": "%", "#": "#", "&": "&", "$": "$", "_": "_",
}  # fmt: skip
_FUNCTIONS = frozenset(
    "log ln exp min max sup inf lim arg det tr Pr sin cos tan tanh deg dim ker liminf limsup"
    " argmin argmax".split()
)
_FONTS = frozenset(
    "mathbf mathcal mathbb bm boldsymbol mathrm mathsf mathtt mathfrak mathscr mathit text"
    " textbf textit textrm texttt textsc textsf operatorname mbox emph".split()
)
_BLACKBOARD = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼", "P": "ℙ", "1": "𝟙"}
_ACCENTS = {
    "hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303", "widetilde": "\u0303",
    "bar": "\u0304", "overline": "\u0304", "vec": "\u20d7", "dot": "\u0307", "ddot": "\u0308",
}  # fmt: skip
_DROPPED = frozenset(
    "left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr limits nolimits displaystyle"
    " textstyle , ; ! :".split()
)
_SPACES = frozenset(("quad", "qquad", " "))
_FRACTIONS = frozenset(("frac", "nicefrac", "tfrac", "dfrac"))
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[{}^_]|\s+|.", re.S)
_ATOM = re.compile(r"[A-Za-z0-9]+|.")
_SIMPLE = re.compile(r"[^\s+\-−=/·×,<>()]+")  # one factor: "α_0", "√K"; no parentheses needed
_SPACED_RELATIONS = frozenset("=<>" + "".join(_RELATIONS.values()) + "≔")


class _Unknown(Exception):
    """A command the renderer does not know: the formula stays ``[MATH]``."""


class _Parser:
    """Recursive descent over LaTeX tokens; each ``group`` returns rendered text."""

    def __init__(self, tex: str) -> None:
        self.tokens = [t for t in _TOKEN.findall(tex) if not t.isspace()]
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        if self.i >= len(self.tokens):
            raise _Unknown("unexpected end")
        self.i += 1
        return self.tokens[self.i - 1]

    def group(self, until: str | None = None) -> str:
        out: list[str] = []
        while (tok := self.peek()) is not None and tok != until:
            if tok == "}":
                raise _Unknown("unbalanced brace")
            atom = self.atom()
            while self.peek() in ("_", "^"):
                mark = self.take()
                script = self.atom()
                if not script:
                    raise _Unknown("empty script")
                if mark == "^" and script == "′":
                    atom += script  # "x′"; "x^*" keeps its caret, or it would read as emphasis
                    continue
                script = script.replace(" ", "")  # "_{i=1}", not "_{i = 1}"
                simple = _ATOM.fullmatch(script) is not None
                atom += mark + (script if simple else "{" + script + "}")
            out.append(atom)
        if until is not None:
            self.take()
        return _join(out)

    def argument(self) -> str:
        tok = self.take()
        if tok == "{":
            return self.group("}")
        return self.command(tok) if tok.startswith("\\") else tok

    def atom(self) -> str:
        tok = self.take()
        if tok == "{":
            return self.group("}")
        if tok.startswith("\\"):
            return self.command(tok)
        if tok in ("_", "^"):
            raise _Unknown("script without a base")
        return tok

    def command(self, tok: str) -> str:
        name = tok[1:]
        if name in _GREEK:
            return _GREEK[name]
        if name in _RELATIONS:
            return _RELATIONS[name]
        if name in _SYMBOLS:
            return _SYMBOLS[name]
        if name in _FUNCTIONS:
            return name
        if name in _DROPPED:
            return ""
        if name in _SPACES:
            return " "
        if name in _FONTS:
            arg = self.argument()
            if name == "mathbb":
                return "".join(_BLACKBOARD.get(c, c) for c in arg)
            return arg
        if name in _ACCENTS:
            arg = self.argument()
            if len(arg) != 1:
                raise _Unknown("accent over more than one letter")
            return arg + _ACCENTS[name]
        if name in _FRACTIONS:
            num, den = self.argument(), self.argument()
            wrap = [x if _SIMPLE.fullmatch(x) else f"({x})" for x in (num, den)]
            return f"{wrap[0]}/{wrap[1]}"
        if name == "sqrt" and self.peek() != "[":
            arg = self.argument()
            return "√" + (arg if _SIMPLE.fullmatch(arg) else f"({arg})")
        raise _Unknown(name)


def _join(pieces: list[str]) -> str:
    """Concatenate rendered atoms, with a space on each side of a relation ("t ∈ [T]"), after
    a script before a letter ("∑_{i=1}^n g_i") and around a function name ("n log n")."""
    out = ""
    prev = ""
    for p in pieces:
        if not p:
            continue
        if p in _SPACED_RELATIONS:
            out = out.rstrip() + " " + p + " "
        elif (
            out
            and p[0].isalnum()
            and (
                _base(prev) != prev
                or out[-1].isalnum()
                and (_base(p) in _FUNCTIONS or _base(prev) in _FUNCTIONS)
            )
        ):
            out += " " + p
        else:
            out += p
        prev = p
    return " ".join(out.split())


def _base(atom: str) -> str:
    """An atom without its scripts ("max_i" -> "max")."""
    return re.split(r"[_^]", atom, maxsplit=1)[0]


def render_tex(tex: str) -> str | None:
    """Readable text for the inline formula ``tex`` (without its delimiters), or None when it
    is too long or uses a command the renderer does not know (see the module docstring)."""
    tex = tex.strip()
    if not tex or len(tex) > 6 * MAX_CHARS:
        return None
    try:
        parser = _Parser(tex)
        text = parser.group()
    except _Unknown:
        return None
    if not text or len(text) > MAX_CHARS or "{}" in text or text[0] in "_^":
        return None
    return text


# ----------------------------------------------------------------------------- flattened math

# A token of a flattened formula: a letter, a number, a symbol, a bracket, or a short mix of
# them ("-f", "x⋆", "∂f", "-1", "(2"); at most two letters ("Qx") and no short word, so that
# words end the formula.
_MATH_TOKEN = re.compile(
    r"(?:[A-Za-z\u0370-\u03ff]|\d+(?:\.\d+)?|[=+\-−·×/<>≤≥∈∉⊂⊆∪∩∑∏∫∥|→←↦∼≈≠±∞∂∇⋆∗′ˆ˜¯()\[\]⟨⟩{}:;,])+"
)
_LETTER = re.compile(r"[A-Za-z\u0370-\u03ff]")
_MATH_WORDS = frozenset("log exp max min sup inf argmin argmax KL det tr".split())
_SHORT_WORDS = frozenset("is an of to in be we or as at by if on it no so do up us".split())
_OPERATOR = re.compile(r"[=≤≥∈∉⊂⊆∥∑∏∫→↦∼≈≠±×·<>]")
# The signs that a flattened formula lost its structure (see the module docstring).
_LOST = re.compile(
    r"(?<![\w.,])\d+ \d+(?![\w.])"  # "1 2": a fraction or a script, flattened
    r"|(?:^|(?<=[\s(]))\S?[)∥|]+ \d(?![\w.])"  # "∥ x ∥ 2", "( ... )) 2": a lost power
    r"|[∈⊂⊆] \d+(?: ?, ?\d+)+(?! ?[)\]}])"  # "G ∈ 64 , 16 , 4": a set without its braces
)


def lost_structure(text: str) -> bool:
    """Whether ``text`` holds a flattened formula that shows lost braces or scripts."""
    return _LOST.search(text) is not None and _OPERATOR.search(text) is not None


def _is_math_token(tok: str) -> bool:
    return tok in _MATH_WORDS or (
        _MATH_TOKEN.fullmatch(tok) is not None
        and len(_LETTER.findall(tok)) <= 2
        and tok.lower().strip(",.;:()") not in _SHORT_WORDS
    )


def _depth_after(tok: str, depth: int) -> int | None:
    """The bracket depth after ``tok``, or None when it closes a bracket opened before."""
    for c in tok:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return None
    return depth


def _runs(text: str) -> list[tuple[int, int]]:
    """Spans of the formulas of ``text``: maximal runs of math tokens separated by single
    spaces. A bracket that closes one opened before the run ends it ("(input size 3 × 64 ),"),
    and so does a comma after a closing bracket ("... ), G ∈ ..."): two formulas."""
    spans: list[tuple[int, int]] = []
    depth = 0
    extendable = False
    for m in re.finditer(r"\S+", text):
        tok = m.group()
        extend = extendable and text[spans[-1][1] : m.start()] == " "
        after = _depth_after(tok, depth if extend else 0) if _is_math_token(tok) else None
        if after is None:
            extendable = False
            continue
        if extend:
            spans[-1] = (spans[-1][0], m.end())
        else:
            spans.append(m.span())
        depth = after
        extendable = not (len(tok) > 1 and tok[-1] == "," and tok[-2] in ")]}")
    return spans


def replace_flattened(text: str, placeholder: str) -> str:
    """Replace each flattened formula of ``text`` that lost its structure by ``placeholder``.

    A formula is a run of math tokens with an operator in it; punctuation that ends the
    sentence or clause stays outside the placeholder.
    """
    if text.isascii() and "=" not in text:
        return text
    out: list[str] = []
    last = 0
    for start, end in _runs(text):
        run = text[start:end]
        if not (_OPERATOR.search(run) and _LOST.search(run)):
            continue
        stripped = run.rstrip(",.;:").rstrip()
        out.append(text[last:start] + placeholder)
        last = start + len(stripped)
    return "".join(out) + text[last:] if out else text
