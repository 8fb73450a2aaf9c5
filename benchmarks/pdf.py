"""Compare PDF text libraries on real papers whose LaTeX source gives the true body text.

Set: a folder with one sub-folder per paper holding ``paper.pdf`` (the PDF its authors
compiled), its LaTeX sources and a ``MAIN`` file naming the main ``.tex`` (first word, relative
to the sub-folder). docs/pdf.md lists the papers used (public GitHub repositories, with the
commit), how to lay them out, and the results.

Ground truth: the main ``.tex`` with its ``\\input`` files inlined, from ``\\begin{document}``
to the bibliography or ``\\appendix``, minus figures, tables, display math, footnotes and
comments, rendered to text by pylatexenc. Both sides are cleaned by ``clean_inline`` and split
by the project's sentence splitter; a sentence matches when its set of words (3+ letters,
lowercased) shares at least ``--threshold`` of the larger set with a sentence on the other side
(one-to-one, best first). Sentences with fewer than 5 such words are left out on both sides.
Precision: matched extracted sentences / extracted; recall: matched true ones / true ones.

Variants: each library's own text ("plain", lines in the library's order, blank-line blocks)
and, where the library gives glyph boxes, the same lines through Ratio's layout pass
(``ratio.corpus.readers.pdf.layout_markdown``: columns, margins, paragraphs, headings, hyphens).
Both go through ``parse_markdown`` like the reader, so references are cut when a heading says
where they start. Speed: pages per CPU second of the whole extraction (library + layout),
one process, best of ``--repeat`` runs; CPU time rather than wall time, so a busy machine
does not skew the comparison (every library here is single-threaded).

    pip install pypdf pdfplumber pylatexenc    # the libraries compared, and the TeX renderer
    .venv/bin/python benchmarks/pdf.py --set /tmp/pdfbench/src [--only pdfium-layout]

Prints a Markdown table (copied into docs/pdf.md).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ratio.corpus.readers.pdf import PageText, Segment, layout_markdown, pdfium_pages  # noqa: E402
from ratio.corpus.text.clean import clean_inline  # noqa: E402
from ratio.corpus.text.markdown import parse_markdown  # noqa: E402
from ratio.corpus.text.segment import get_segmenter  # noqa: E402

# ----------------------------------------------------------------------------- ground truth

_DROP_ENVS = (
    "figure",
    "figure*",
    "table",
    "table*",
    "wrapfigure",
    "wraptable",
    "tabular",
    "tabular*",
    "tabularx",
    "algorithm",
    "algorithm*",
    "algorithmic",
    "tikzpicture",
    "lstlisting",
    "verbatim",
    "minted",
    "equation",
    "equation*",
    "align",
    "align*",
    "gather",
    "gather*",
    "multline",
    "multline*",
    "eqnarray",
    "eqnarray*",
    "displaymath",
    "thebibliography",
    "acks",
)
_INPUT = re.compile(r"\\(?:input|include)\s*\{([^}]+)\}")
_COMMENT = re.compile(r"(?<!\\)%.*")
_END = re.compile(
    r"\\bibliography\s*\{|\\begin\{thebibliography\}|\\appendix\b|\\printbibliography"
    r"|\\section\*?\{\s*(?:acknowledge?ments?|references)\s*\}"
)


def _inline(tex_path: Path, depth: int = 0) -> str:
    text = _COMMENT.sub("", tex_path.read_text(encoding="utf-8", errors="replace"))
    if depth > 5:
        return text

    def sub(m: re.Match[str]) -> str:
        name = m.group(1).strip()
        for cand in (tex_path.parent / name, tex_path.parent / f"{name}.tex"):
            if cand.is_file():
                return _inline(cand, depth + 1)
        return ""

    return _INPUT.sub(sub, text)


def _drop_env(tex: str, env: str) -> str:
    """Remove every ``\\begin{env}...\\end{env}``, leaving a paragraph break."""
    begin, end = f"\\begin{{{env}}}", f"\\end{{{env}}}"
    out, pos = [], 0
    while True:
        i = tex.find(begin, pos)
        if i < 0:
            break
        j = tex.find(end, i)
        if j < 0:
            break
        out.append(tex[pos:i] + "\n\n")
        pos = j + len(end)
    out.append(tex[pos:])
    return "".join(out)


def _drop_macro(tex: str, name: str) -> str:
    """Remove ``\\name{...}`` with balanced braces (footnotes hold nested groups)."""
    out, pos = [], 0
    key = "\\" + name
    while True:
        i = tex.find(key + "{", pos)
        if i < 0:
            break
        depth, j = 0, i + len(key)
        while j < len(tex):
            if tex[j] == "{" and tex[j - 1] != "\\":
                depth += 1
            elif tex[j] == "}" and tex[j - 1] != "\\":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.append(tex[pos:i])
        pos = j + 1
    out.append(tex[pos:])
    return "".join(out)


def truth_paragraphs(folder: Path) -> list[str]:
    """The body paragraphs of a paper from its LaTeX source (see the module docstring)."""
    from pylatexenc.latex2text import LatexNodes2Text

    main = folder / (folder / "MAIN").read_text().split()[0]
    tex = _inline(main)
    start = tex.find("\\begin{document}")
    tex = tex[start + len("\\begin{document}") :] if start >= 0 else tex
    m = _END.search(tex)
    tex = tex[: m.start()] if m else tex.split("\\end{document}")[0]
    for env in _DROP_ENVS:
        tex = _drop_env(tex, env)
    for macro in ("footnote", "thanks", "caption", "label", "author", "title", "affiliation"):
        tex = _drop_macro(tex, macro)
    tex = re.sub(r"\\\[.*?\\\]|\$\$.*?\$\$", "\n\n", tex, flags=re.S)
    tex = re.sub(
        r"\\(?:cite[a-zA-Z]*|ref|eqref|autoref|cref|Cref)\*?(?:\[[^\]]*\])*\{[^}]*\}", "", tex
    )
    tex = re.sub(r"\$[^$]*\$", " ", tex)
    tex = re.sub(r"\\(?:sub)*section\*?\{[^}]*\}|\\paragraph\*?\{([^}]*)\}", r"\n\n\1 ", tex)
    text = LatexNodes2Text(math_mode="remove", strict_latex_spaces=True).latex_to_text(tex)
    return [" ".join(b.split()) for b in re.split(r"\n\s*\n", text) if b.strip()]


# ----------------------------------------------------------------------------- extractors


def _pdfium_plain(path: Path) -> str:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    pages = []
    for page in doc:
        tp = page.get_textpage()
        pages.append(tp.get_text_range().replace("\r\n", "\n").replace("\ufffe", "-"))
    return "\n\n".join(pages)


def _pypdf_plain(path: Path) -> str:
    from pypdf import PdfReader

    return "\n\n".join(p.extract_text() or "" for p in PdfReader(str(path)).pages)


def _pdfminer_plain(path: Path) -> str:
    from pdfminer.high_level import extract_text

    return extract_text(str(path))


def _pdfminer_pages(path: Path) -> list[PageText]:
    """pdfminer.six text lines as ``Segment`` boxes (its own line grouping, y flipped)."""
    from collections import Counter

    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTChar, LTTextContainer, LTTextLine

    from ratio.corpus.readers.pdf import _BOLD_FONT

    out = []
    for layout in extract_pages(str(path)):
        h = layout.height
        page = PageText(layout.width, h)
        for box in layout:
            if not isinstance(box, LTTextContainer):
                continue
            for line in box:
                if not isinstance(line, LTTextLine):
                    continue
                text = " ".join(line.get_text().split())
                chars = [c for c in line if isinstance(c, LTChar)]
                if not text or not chars:
                    continue
                size = Counter(round(c.size, 1) for c in chars).most_common(1)[0][0]
                page.segments.append(
                    Segment(
                        text=text.translate({0xFB01: "fi", 0xFB02: "fl", 0xFB00: "ff"}),
                        x0=line.x0,
                        x1=line.x1,
                        top=h - line.y1,
                        bottom=h - line.y0,
                        size=size,
                        bold=bool(_BOLD_FONT.search(chars[0].fontname)),
                    )
                )
        out.append(page)
    return out


EXTRACTORS: dict[str, Callable[[Path], str]] = {
    "pdfium-layout": lambda p: layout_markdown(pdfium_pages(p)[0]),
    "pdfminer-layout": lambda p: layout_markdown(_pdfminer_pages(p)),
    "pdfium-plain": _pdfium_plain,
    "pdfminer-plain": _pdfminer_plain,
    "pypdf-plain": _pypdf_plain,
}
LIBRARY = {
    "pdfium-layout": "pypdfium2",
    "pdfminer-layout": "pdfminer.six",
    "pdfium-plain": "pypdfium2",
    "pdfminer-plain": "pdfminer.six",
    "pypdf-plain": "pypdf",
}


# ----------------------------------------------------------------------------- scoring

_WORDS = re.compile(r"[a-z]{3,}")
_PLACEHOLDER = re.compile(r"\[(?:CIT|MATH)\]")


def _sentences(paragraphs: list[str], markup: str) -> list[frozenset[str]]:
    seg = get_segmenter("ratio")
    out = []
    for p in paragraphs:
        text = clean_inline(p, markup)
        for s in seg(text):
            words = frozenset(_WORDS.findall(_PLACEHOLDER.sub(" ", s).lower()))
            if len(words) >= 5:
                out.append(words)
    return out


def body_paragraphs(markdown: str) -> list[str]:
    """Paragraphs of the main body (no appendix), as the reader would keep them."""
    return [
        p
        for sec in parse_markdown(markdown, extractor="pdf")
        if not sec.is_appendix
        for p in sec.paragraphs
    ]


def match(pred: list[frozenset[str]], gold: list[frozenset[str]], threshold: float) -> int:
    """How many one-to-one pairs share ``threshold`` of the larger word set (best first)."""
    by_word: dict[str, list[int]] = {}
    for j, g in enumerate(gold):
        for w in g:
            by_word.setdefault(w, []).append(j)
    cands = []
    for i, p in enumerate(pred):
        seen: set[int] = set()
        for w in p:
            seen.update(by_word.get(w, ()))
        for j in seen:
            score = len(p & gold[j]) / max(len(p), len(gold[j]))
            if score >= threshold:
                cands.append((score, i, j))
    used_p: set[int] = set()
    used_g: set[int] = set()
    for _, i, j in sorted(cands, reverse=True):
        if i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
    return len(used_p)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--set", type=Path, required=True, help="folder of paper sub-folders")
    ap.add_argument("--only", default="", help="comma-separated extractor names")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--per-paper", action="store_true", help="also print one row per paper")
    args = ap.parse_args()
    import pypdfium2 as pdfium

    names = [n for n in args.only.split(",") if n] or list(EXTRACTORS)
    papers = sorted(p for p in args.set.iterdir() if (p / "paper.pdf").is_file())
    truth = {p.name: _sentences(truth_paragraphs(p), "plain") for p in papers}
    n_pages = {p.name: len(pdfium.PdfDocument(str(p / "paper.pdf"))) for p in papers}
    rows = []
    for name in names:
        fn = EXTRACTORS[name]
        tp = tg = tm_p = tm_g = 0
        seconds = 0.0
        for p in papers:
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.process_time()
                md = fn(p / "paper.pdf")
                best = min(best, time.process_time() - t0)
            seconds += best
            pred = _sentences(body_paragraphs(md), "plain")
            gold = truth[p.name]
            m = match(pred, gold, args.threshold)
            tp += len(pred)
            tg += len(gold)
            tm_p += m
            tm_g += m
            if args.per_paper:
                print(
                    f"  {name:16s} {p.name:14s} pages={n_pages[p.name]:3d} pred={len(pred):4d} "
                    f"gold={len(gold):4d} P={m / max(len(pred), 1):.3f} R={m / max(len(gold), 1):.3f}",
                    file=sys.stderr,
                )
        prec, rec = tm_p / max(tp, 1), tm_g / max(tg, 1)
        f1 = 2 * prec * rec / max(prec + rec, 1e-9)
        pages = sum(n_pages.values())
        rows.append((name, LIBRARY[name], prec, rec, f1, pages / seconds, tp, tg))
    print(f"{len(papers)} papers, {sum(n_pages.values())} pages, threshold {args.threshold}\n")
    print(
        "| extractor | library | precision | recall | F1 | pages/s | sentences out | true sentences |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, lib, prec, rec, f1, pps, tp, tg in rows:
        print(f"| {name} | {lib} | {prec:.3f} | {rec:.3f} | {f1:.3f} | {pps:.1f} | {tp} | {tg} |")


if __name__ == "__main__":
    main()
