"""Inline cleanup of one paragraph: math, citations, emphasis, entities, whitespace.

Matching and dedup work on sentence text, so inline noise must be normalized the
same way everywhere: a short inline formula is rendered as readable text and any other
becomes ``[MATH]`` (``ratio.corpus.text.flatmath``), and every citation
marker (a single reference or a whole group) becomes one ``[CIT]``. Rendered formulas are
held out of the later steps, whose patterns would read "[1,2]" as a citation or "‖x‖_2" as
emphasis. Emphasis markers that lost their partner (an italic theorem statement broken by a
display equation: "_Let x be ... holds." then "... for all t._") are removed. This runs on
every paragraph of the corpus, so it is a short fixed sequence of precompiled
``re.sub`` calls with static replacements, each guarded by a cheap substring test.
``strip_tex_residue`` writes the same placeholders for the LaTeX left in plain text.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from ratio.corpus.text.flatmath import render_tex, replace_flattened
from ratio.corpus.text.segment import after_sentence_end, can_start

MATH = "[MATH]"
CIT = "[CIT]"

# --- math -------------------------------------------------------------------------
# Nougat footnote markers are superscript-only math, e.g. "\({}^{1}\)" or "\({}^{\dagger}\)".
_FOOTMARK = re.compile(r"\\\(\s*\{\}\^\{?\\?[A-Za-z0-9*,]{0,12}\}?\s*\\\)")
_TEX_INLINE = re.compile(r"\\\((?:[^\\]|\\(?!\)))*?\\\)|\\\[(?:[^\\]|\\(?!\]))*?\\\]")
_DOLLAR = re.compile(r"\$\$[^$]+\$\$|\$(?<![\\$]\$)(?=\S)[^$\n]{1,400}?(?<=[^\s\\])\$(?!\d)")
_FORMULA = re.compile(r"\{\{formula:[^}]*\}\}")
_MATH_RUN = re.compile(r"\[MATH\](?:[\s,]*\[MATH\])+")
# A rendered formula waits behind a private-use mark until the markup steps are done.
_HELD = re.compile("\ue000(\\d+)\ue001")
_FLAT_MATH_CHARS = frozenset("=∈≤≥∥")

# --- citations --------------------------------------------------------------------
_CITE_TOKEN = re.compile(r"\{\{cite:[^}]*\}\}")
_LATEX_CITE = re.compile(
    r"\\(?:cite[a-zA-Z]*|ref|eqref|autoref|cref|Cref)\*?(?:\[[^\]]*\])*\{[^}]*\}"
)
_UNARXIVE_REF = re.compile(r"\{\{(?:figure|table|ref):[^}]*\}\}")
# [14], [14; 21], [1, 2], [1-3], [3–5, 9], [1, Section 7], [1, Thm. 2]
_NUM_CITE = re.compile(
    r"\[\s*[1-9]\d{0,3}[a-z]?(?:\s*[,;\-\u2013\u2014]\s*\d{1,4}[a-z]?)*"
    r"(?:\s*,\s*(?:Sec(?:tion|\.)?|Thm\.?|Theorem|Lemma|Prop(?:osition|\.)?|Cor(?:ollary|\.)?"
    r"|Chapter|Ch\.|Def(?:inition|\.)?|Appendix|App\.|Eq\.?|p\.|pp\.|Fig\.?|Table|Example|Ex\.)"
    r"\s*[\w.\-]{0,12})?\s*\]"
)
# alphanumeric keys common in theory papers: [FS23], [ABC+20], [KL19a; MW25]
_KEY_CITE = re.compile(
    r"\[[A-Z][A-Za-z+\-]{0,9}\d{2}[a-z]?(?:\s*[,;]\s*[A-Z][A-Za-z+\-]{0,9}\d{2}[a-z]?)*"
    r"(?:\s*,\s*(?:Sec(?:tion|\.)?|Thm\.?|Theorem|Lemma|Prop(?:osition|\.)?|Cor(?:ollary|\.)?"
    r"|Def(?:inition|\.)?|Appendix|App\.|Eq\.?|p\.|pp\.)\s*[\w.\-]{0,12})?\]"
)
_YEAR = r"(?:19|20)\d{2}[a-z]?"
_NAME = r"(?:(?:van|von|de|der|den|da|di|del|la|le|al)\s+)*[A-Z][A-Za-z\u00c0-\u024f'\u2019\-]+"
_CITE_ITEM = re.compile(
    rf"(?:(?:e\.g\.|i\.e\.|see|cf\.|c\.f\.|see also|also|as in|following|like|and)[,:]?\s+){{0,2}}"
    rf"{_NAME}(?:\s+{_NAME})?"
    rf"(?:\s+et\s+al\.?|\s*(?:,\s*)?(?:and|&)\s+{_NAME}(?:\s+{_NAME})?|(?:\s*,\s*{_NAME})+,?\s*(?:and|&)\s+{_NAME})?"
    rf",?\s+\(?{_YEAR}\)?(?:\s*,\s*{_YEAR})*"
)
# A parenthetical that contains a year: candidate author-year group.
_PAREN_YEAR = re.compile(r"\((?=[^()]{0,600}?\b(?:19|20)\d{2})([^()]{1,600})\)")
_YEAR_ONLY = re.compile(rf"\(\s*{_YEAR}(?:\s*[,;]\s*{_YEAR})*\s*\)")
_CIT_RUN = re.compile(r"\[CIT\](?:[\s,;\-\u2013]*\[CIT\])+")
_LEAD = re.compile(r"(?:(?:e\.g\.|i\.e\.|see also|see|cf\.|c\.f\.)[,:]?\s+){1,2}")
_SPLIT_GROUP = re.compile(r"\s*;\s*")

# --- markdown ---------------------------------------------------------------------
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]\n]{1,300})\]\((?:https?:|www\.|#|/|mailto:)[^)\s]*\)")
_BOLD = re.compile(r"\*\*(?!\s)([^*\n]{1,300}?)(?<!\s)\*\*")
_BOLD_U = re.compile(r"__(?<!\w__)(?!\s)([^_\n]{1,300}?)(?<!\s)__(?!\w)")
_ITAL = re.compile(r"\*(?<![\w*]\*)(?!\s)([^*\n]{1,400}?)(?<!\s)\*(?![\w*])")
_ITAL_U = re.compile(r"_(?<![\w\\]_)(?!\s)([^_\n]{1,400}?)(?<![\s\\])_(?!\w)")
# An underscore that opens an emphasis before a word, or closes one after it, whose partner
# is gone; an underscore between two word characters ("snake_case") is no emphasis.
_STRAY_U = re.compile(r"(?<![\w\\])_+(?=[A-Za-z0-9(\[])|(?<=[A-Za-z0-9.,;:!?)\]])_+(?![\w{])")
_CODE = re.compile(r"`([^`\n]{1,200})`")
# Nougat glues run-in headings to the text: "**Notations.**For" -> "Notations. For"
_BOLD_GLUED = re.compile(r"\*\*(?!\s)([^*\n]{1,300}?)(?<!\s)\*\*(?=[A-Za-z])")
_NOUGAT_DOTCOLON = re.compile(r"\.:(?=\s|$)")
# Nougat drops the space after run-in headings: "Limitations.We explore" -> "Limitations. We"
_GLUED_SENT = re.compile(r"[.:](?<=[a-z]{2}[.:])(?=[A-Z][a-z])")
_MD_ESCAPE = re.compile(r"\\([_*#&%`~|<>])")
_SPLIT_DECIMAL = re.compile(r"\. (?<=\d\. )(?=\d+\b)(?!\d+\s*[A-Z])")  # docling "0. 01" -> "0.01"
# PDF glyph debris: docling "GLYPH<30>", "glyph[star]" (but "glyph[lscript]" is the letter ℓ).
_GLYPH = re.compile(r"GLYPH<[^>]{0,20}>|glyph\[[a-z]{1,30}\]|/uniFFFD|\(cid:\d+\)")

# --- characters and spacing --------------------------------------------------------
# Invisible and control characters (not whitespace: that is collapsed right after).
_CONTROL = re.compile(
    "[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff\ue000-\uf8ff]"
)
# Combining marks with no base letter (docling "̸"); the U+FFFD replacement character.
_ORPHAN_MARK = re.compile("\ufffd|(?<![^\\W\\d_])[\u0300-\u036f]+")
_SPACE_PUNCT = re.compile(r" ([,.;:!?])(?= |$)")
_EMPTY_PAREN = re.compile(r"\(\s*[,;:]?\s*\)|\[\s*[,;]?\s*\]")
# A placeholder glued to a word ("conversion[CIT]", "[MATH]norm"); not to a suffix of the
# formula itself ("the [MATH]th column", "[MATH]s").
_GLUED_PLACEHOLDER = re.compile(
    r"(?<=[A-Za-z])(?=\[(?:CIT|MATH)\])|(?:(?<=\[CIT\])|(?<=\[MATH\]))(?=[A-Za-z]{3})"
)


def _author_year(m: re.Match[str]) -> str:
    """Replace author-year items inside one parenthetical; drop it if only citations remain."""
    out: list[str] = []
    changed = False
    for part in _SPLIT_GROUP.split(m.group(1)):
        if _CITE_ITEM.fullmatch(part.strip()):
            changed = True
            lead = _LEAD.match(part.strip())
            out.append((lead.group(0) if lead else "") + CIT)
        else:
            out.append(part)
    if not changed:
        return m.group(0)
    if all(p == CIT for p in out):
        return CIT
    return "(" + "; ".join(out) + ")"


def clean_inline(paragraph: str, markup: str = "markdown") -> str:
    """Normalize one paragraph's inline markup into plain readable text.

    ``markup`` is "markdown" (Nougat/docling), "latex" (unarXive: ``{{formula:..}}``,
    ``{{cite:..}}``, ``$..$``) or "plain".
    """
    s = paragraph
    held: list[str] = []

    def hold(m: re.Match[str]) -> str:
        """The formula as text, held back, or ``[MATH]`` (display math always, and a formula
        opening a sentence that the splitter would not see start: "... convex. x is")."""
        tex = m.group(0)
        if tex.startswith(("\\[", "$$")):
            return MATH
        text = render_tex(tex[2:-2] if tex.startswith("\\(") else tex[1:-1])
        if text is None:
            return MATH
        if not can_start(text) and after_sentence_end(m.string[max(0, m.start() - 8) : m.start()]):
            return MATH
        held.append(text)
        return f"\ue000{len(held) - 1}\ue001"

    if "&" in s:
        s = html.unescape(s)
    if markup == "markdown" and "\\(" not in s and not s.isascii() and _FLAT_MATH_CHARS & set(s):
        s = replace_flattened(s, MATH)  # docling's flattened formulas
    if markup != "plain":
        if "{{" in s:
            s = _FORMULA.sub(MATH, s)
            s = _CITE_TOKEN.sub(CIT, s)
            s = _UNARXIVE_REF.sub("", s)
        if "\\" in s:
            if "{}^" in s:
                s = _FOOTMARK.sub("", s)
            s = _TEX_INLINE.sub(hold, s)
            if "\\" in s:
                s = _LATEX_CITE.sub(CIT, s)
        if "$" in s:
            s = _DOLLAR.sub(hold, s)
    if "[" in s:
        s = _NUM_CITE.sub(CIT, s)
        s = _KEY_CITE.sub(CIT, s)
    if "(" in s:
        s = _YEAR_ONLY.sub(CIT, s)
        s = _PAREN_YEAR.sub(_author_year, s)
    if markup == "markdown":
        if "](" in s:
            s = _IMAGE.sub("", s)
            s = _LINK.sub(r"\1", s)
        if "*" in s:
            s = _BOLD_GLUED.sub(r"\1 ", s)
            s = _BOLD.sub(r"\1", s)
            s = _ITAL.sub(r"\1", s)
            if "**" in s:
                s = s.replace("**", "")  # unbalanced bold left by a page break
        if "_" in s:
            s = _BOLD_U.sub(r"\1", s)
            s = _ITAL_U.sub(r"\1", s)
            if "_" in s:
                s = _STRAY_U.sub("", s)
        if "\\" in s:
            s = _MD_ESCAPE.sub(r"\1", s)
        if "`" in s:
            s = _CODE.sub(r"\1", s)
        if ".:" in s:
            s = _NOUGAT_DOTCOLON.sub(":", s)
        if "GLYPH" in s or "glyph[" in s or "(cid:" in s:
            s = _GLYPH.sub("", s.replace("glyph[lscript]", "\u2113"))
    if "[MATH]" in s:
        s = _MATH_RUN.sub(MATH, s)
    if "[CIT]" in s:
        s = _CIT_RUN.sub(CIT, s)
    if held:
        s = _HELD.sub(lambda m: held[int(m.group(1))], s)
    if "[CIT]" in s or "[MATH]" in s:
        s = _GLUED_PLACEHOLDER.sub(" ", s)
    if not s.isprintable():
        s = _CONTROL.sub("", s)
    if not s.isascii():
        s = _ORPHAN_MARK.sub("", s)
    s = " ".join(s.split())
    if "(" in s or "[" in s:
        s = _EMPTY_PAREN.sub("", s)
        if "( " in s or "[ " in s or " )" in s or " ]" in s:
            s = s.replace("( ", "(").replace("[ ", "[").replace(" )", ")").replace(" ]", "]")
    if " ," in s or " ." in s or " ;" in s or " :" in s or " !" in s or " ?" in s:
        s = _SPACE_PUNCT.sub(r"\1", s)
    s = _GLUED_SENT.sub(r"\g<0> ", s)
    if ". " in s:
        s = _SPLIT_DECIMAL.sub(".", s)
    return s.strip()


# --- LaTeX residue in plain text (a TeX-to-text conversion) ----------------------------

_TEX_EVIDENCE = re.compile(r"\\[a-zA-Z]{2,}|\d?\.?\d+\s?(?:ex|em|pt)\s+plus\b|\[\\ref")
# glue left by \vspace/\@startsection: "2.3ex plus .2ex", "-3.5ex plus -1ex minus -.2ex"
_TEX_GLUE = re.compile(
    r"-?\d*\.?\d+\s?(?:ex|em|pt|mm|cm|in|bp|mu)(?:\s+(?:plus|minus)\s+-?\d*\.?\d+\s?"
    r"(?:ex|em|pt|mm|cm|in|bp|mu|fil+))+"
)
# LaTeXML-style references "([\ref=criterion])", "[\cite=smith2001]"
_TEX_BRACKET_REF = re.compile(r"\(?\[\\(?:eq)?ref[^\]]*\]\)?")
_TEX_BRACKET_CITE = re.compile(r"\[\\cite[^\]]*\]")
_TEX_CITE = re.compile(r"\\(?:cite[a-zA-Z]*|nocite)\*?(?:\[[^\]]*\])*\{[^}]*\}")
_TEX_REF = re.compile(r"~?\(?\\(?:ref|eqref|autoref|cref|Cref|pageref|label)\*?\{[^}]*\}\)?")
_TEX_FONT = re.compile(
    r"\\(?:emph|textbf|textit|texttt|textsc|textrm|textsf|underline|mbox|text)\{([^{}]*)\}"
)
_TEX_BRACE_FONT = re.compile(r"\{\\(?:bf|it|em|tt|sc|rm|sf|small|large|footnotesize)\s+([^{}]*)\}")
_TEX_INLINE_MATH = re.compile(r"\$[^$\n]{1,200}\$|\\\(.{1,200}?\\\)")
_TEX_COMMAND = re.compile(r"\\[a-zA-Z]+\*?(?:\[[^\]]*\])?(?:\{[^{}]*\})?")
_SPACES = re.compile(r"(?<=\S)[ \t]{2,}")


def has_tex_residue(text: str) -> bool:
    """Whether text extracted from TeX kept commands or glue worth removing."""
    return len(_TEX_EVIDENCE.findall(text, 0, 200_000)) >= 2


def strip_tex_residue(line: str, counts: Counter | None = None) -> str:
    """Remove the LaTeX a TeX-to-text conversion left behind in one line of text.

    Citations become ``[CIT]`` and inline math ``[MATH]`` (as ``clean_inline`` writes them);
    cross-references, labels, spacing glue and unknown commands go; font commands keep their
    argument ("\\emph{word}" -> "word").
    """
    if "\\" not in line and " plus " not in line:
        return line
    before = line
    line = _TEX_GLUE.sub(" ", line)
    if "\\" in line:
        line = _TEX_BRACKET_CITE.sub(CIT, line)
        line = _TEX_BRACKET_REF.sub("", line)
        line = _TEX_CITE.sub(CIT, line)
        line = _TEX_REF.sub("", line)
        line = _TEX_FONT.sub(r"\1", line)
        line = _TEX_BRACE_FONT.sub(r"\1", line)
        line = _TEX_INLINE_MATH.sub(MATH, line)
        line = _TEX_COMMAND.sub("", line)
    if line != before:
        line = _SPACES.sub(" ", line)
        if counts is not None:
            counts["latex_residue"] += 1
    return line
