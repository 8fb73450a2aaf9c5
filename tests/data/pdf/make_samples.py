"""Rebuild the PDFs of this folder (see README.md): real paper text typeset by pdfLaTeX.

Two CC BY 4.0 arXiv papers from the unarXive sample in ``../shared`` are typeset with
pdfLaTeX, one in two columns and one in one, with running headers, page numbers, a title
footnote and a numbered bibliography, so the reader meets what real LaTeX papers put on a
page. Their true text (what was typeset, section by section) goes to ``<name>.truth.json`` so
the tests need neither the shared corpus nor LaTeX. Then the bad inputs are made from them:
``encrypted.pdf`` (pypdf, user password), ``corrupt.pdf`` (cut after 4 KB) and ``scanned.pdf``
(page 1 rendered to a grey image, nothing else: no text layer).

    apt-get install texlive-latex-base texlive-latex-recommended
    .venv/bin/python tests/data/pdf/make_samples.py      # needs pypdf for the encrypted copy
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tempfile
from pathlib import Path

import pypdfium2 as pdfium
import zstandard

HERE = Path(__file__).resolve().parent
SAMPLE = (
    HERE.parents[3] / "shared" / "corpora" / "samples" / "unarxive" / "arXiv_src_2212_086.jsonl.zst"
)

PAPERS = {
    # name: (arXiv id, two columns?, sections to keep (None: all), running header)
    "twocol": (
        "2212.11808",
        True,
        [
            "Introduction",
            "Poisoning attacks: AML attacks on the learning stage: Manipulating the training data",
            "Evasion attacks: AML attacks on the testing stage: Manipulating the testing data",
            "Related Works",
            "Goals and Approaches",
            "Approach: Use a finite set of operators for research customization",
            "Experiment methodology",
            "Discussions, Conclusions and Future Directions",
        ],
        "Mutation-based Text Generation for AML",
    ),
    "onecol": ("2212.11813", False, None, "FieldView: exploring three-dimensional fields"),
}

_TEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_PLACEHOLDER = re.compile(r"\{\{(cite|formula|figure|table|ref):([^}]*)\}\}")


def _records() -> dict[str, dict]:
    out = {}
    with SAMPLE.open("rb") as fh:
        text = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(fh), encoding="utf-8")
        for line in text:
            rec = json.loads(line)
            if rec["paper_id"] in {v[0] for v in PAPERS.values()}:
                out[rec["paper_id"]] = rec
    return out


def _escape(text: str) -> str:
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in text)


def _paper(rec: dict, keep: list[str] | None) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Sections of (heading, paragraphs) as plain text with ``[n]`` citations, and the
    bibliography entries in citation order. Paragraphs with formulas are left out."""
    order: dict[str, int] = {}
    sections: list[tuple[str, list[str]]] = []
    for para in rec["body_text"]:
        if keep is not None and para["section"] not in keep:
            continue
        text = " ".join(para["text"].split())
        if "{{formula:" in text or len(text) < 80:
            continue

        def cite(m: re.Match[str]) -> str:
            if m.group(1) != "cite":
                return ""
            key = m.group(2)
            if key not in rec["bib_entries"]:
                return ""
            order.setdefault(key, len(order) + 1)
            return f"[{order[key]}]"

        text = _PLACEHOLDER.sub(cite, text)
        text = re.sub(r"\](?:\s*,?\s*\[)", ", ", text)  # [1], [2] -> [1, 2] like \cite{a,b}
        text = " ".join(text.replace(" ,", ",").replace(" .", ".").split())
        if not sections or sections[-1][0] != para["section"]:
            sections.append((para["section"], []))
        sections[-1][1].append(text)
    bib = [
        " ".join(rec["bib_entries"][k].get("bib_entry_raw", "").split())
        for k in sorted(order, key=order.get)
    ]
    return sections, bib


def _latex(rec: dict, two_col: bool, header: str, sections, bib) -> str:
    meta = rec["metadata"]
    title = _escape(" ".join(meta["title"].split()))
    authors = _escape(re.sub(r"\\.|[{}\"']", "", meta["authors"]))
    body = []
    for heading, paras in sections:
        body.append(f"\\section{{{_escape(heading)}}}")
        for p in paras:
            # citations were numbered by first use, as \cite would; keep them as typed text
            body.append(_escape(p) + "\n")
    items = "\n".join(f"\\bibitem{{b{i}}} {_escape(b)}" for i, b in enumerate(bib, start=1))
    cls = "[10pt,twocolumn]{article}" if two_col else "[11pt]{article}"
    return rf"""\documentclass{cls}
\usepackage[margin=0.9in]{{geometry}}
\usepackage{{fancyhdr}}
\pagestyle{{fancy}}
\fancyhf{{}}
\fancyhead[L]{{\small Preprint. Typeset for Ratio's tests}}
\fancyhead[R]{{\small {_escape(header)}}}
\fancyfoot[C]{{\thepage}}
\title{{{title}\thanks{{Text of arXiv:{rec["paper_id"]} (CC BY 4.0), typeset with pdf\LaTeX{{}} for testing.}}}}
\author{{{authors}}}
\date{{}}
\begin{{document}}
\maketitle
\thispagestyle{{fancy}}
\begin{{abstract}}
{_escape(" ".join(rec["abstract"]["text"].split()))}
\end{{abstract}}
{chr(10).join(body)}
\begin{{thebibliography}}{{99}}
{items}
\end{{thebibliography}}
\end{{document}}
"""


def build() -> None:
    recs = _records()
    for name, (pid, two_col, keep, header) in PAPERS.items():
        rec = recs[pid]
        sections, bib = _paper(rec, keep)
        tex = _latex(rec, two_col, header, sections, bib)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / f"{name}.tex").write_text(tex, encoding="utf-8")
            for _ in range(2):
                subprocess.run(
                    ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"],
                    cwd=tmp,
                    check=True,
                    capture_output=True,
                )
            (HERE / f"{name}.pdf").write_bytes((Path(tmp) / f"{name}.pdf").read_bytes())
        truth = {
            "arxiv_id": pid,
            "license": rec["metadata"]["license"],
            "title": " ".join(rec["metadata"]["title"].split()),
            "header": header,
            "abstract": " ".join(rec["abstract"]["text"].split()),
            "sections": [{"heading": h, "paragraphs": ps} for h, ps in sections],
            "references": bib,
        }
        (HERE / f"{name}.truth.json").write_text(
            json.dumps(truth, indent=1, ensure_ascii=False) + "\n"
        )
    _bad_inputs()


def _bad_inputs() -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(str(HERE / "twocol.pdf")))
    writer.encrypt(user_password="ratio", owner_password="ratio-owner", algorithm="AES-128")
    with (HERE / "encrypted.pdf").open("wb") as fh:
        writer.write(fh)
    (HERE / "corrupt.pdf").write_bytes((HERE / "twocol.pdf").read_bytes()[:4096])
    page = pdfium.PdfDocument(str(HERE / "onecol.pdf"))[0]
    image = page.render(scale=100 / 72, grayscale=True).to_pil()
    image.save(HERE / "scanned.pdf", "PDF", resolution=100.0)


if __name__ == "__main__":
    build()
