"""Plain-text structure on real ACL Anthology text (tests/data/own_corpus, see its README)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from ratio.corpus.text.plain import (
    is_reference_line,
    parse_plaintext,
    sentence_per_line,
    strip_tex_residue,
    trailing_references,
)

PAPERS = Path(__file__).resolve().parents[2] / "data" / "own_corpus" / "papers"


def _parse(name: str) -> tuple[list, Counter, str]:
    drops: Counter = Counter()
    sections = parse_plaintext((PAPERS / f"{name}.txt").read_text(encoding="utf-8"), drops)
    return sections, drops, " ".join(p for s in sections for p in s.paragraphs)


def test_wrapped_pdf_text_gets_headings_and_loses_furniture_and_references():
    # C08-1021: one PDF line per line, page headers, "Acknowledgments", "References"
    sections, drops, text = _parse("C08-1021")
    assert not sentence_per_line((PAPERS / "C08-1021.txt").read_text().splitlines())
    heads = [(s.heading, s.category) for s in sections]
    assert heads[:2] == [("Abstract", "abstract"), ("Introduction", "introduction")]
    assert ("Topic Signatures", "method") in heads  # a title wrapped over two lines
    assert heads[-1] == ("Conclusions and future research", "conclusion")
    assert "fully automatic method" in text and "semantically-related concepts" in text
    assert "WordNet (Fellbaum, 1998)" in text  # "Word-\nNet" joined: the paper writes WordNet
    assert "Theoretical Computer Science" not in text and "Vossen, P., editor" not in text
    assert "Manchester, August 2008" not in text  # title block
    assert drops["references_section"] == 1 and drops["skipped_section"] == 1
    assert drops["page_header"] > 0 and drops["page_number"] > 0


def test_sentence_per_line_text_with_glued_labels():
    # D07-1109: one sentence per line; "... Abstract We develop" and
    # "References Steven Abney and Marc Light." are glued to their neighbours
    sections, drops, text = _parse("D07-1109")
    assert sentence_per_line((PAPERS / "D07-1109.txt").read_text().splitlines())
    assert sections[0].heading == "Abstract"
    assert sections[0].paragraphs[0].startswith("We develop latent Dirichlet allocation")
    assert drops["references_section"] == 1
    assert "Steven Abney" not in text and "In Proceedings of" not in text
    assert "jbg@princeton.edu" not in text


def test_reference_cuts_without_a_heading_of_their_own():
    # P06-4007: "... from the U.S. Government. References S. Kan. 2005."
    _, _, text = _parse("P06-4007")
    assert "Kan. 2005" not in text and "TREC 2005" not in text
    # W06-3804: "2.3 Reference" is a subsection, not the bibliography
    sections, _, text = _parse("W06-3804")
    assert "Reference" in [s.heading for s in sections]
    assert "Generic summarization and keyphrase extraction" not in text


def test_trailing_reference_block_found_by_its_entries():
    body = [f"Sentence number {i} of the body says something about parsing." for i in range(30)]
    refs = [
        "Eisenberg, D. 2002.",
        "Dip, the database of interacting proteins.",
        "Nucleic Acids Research, 30(1):303-305.",
        "Smith, J. and K. Lee. 2004. Parsing things. In Proceedings of ACL, pages 1-8.",
        "Jones, A. 1999. A study. Journal of Studies, 4(2):11-20.",
        "Brown, P. F. 1993. The mathematics of statistical machine translation.",
        "Computational Linguistics, 19(2):263-311.",
    ]
    assert trailing_references(body + refs) == 30
    assert trailing_references(body) is None
    assert is_reference_line("Leacock, C., M. Chodorow, and G. Miller. 1998.")
    assert not is_reference_line("Using WordNet (Fellbaum, 1998) is a usual practice in NLP.")


def test_latex_residue():
    line = r"is shown 2.3ex plus .2ex in Table~\ref{tab:x} ([\ref=criterion]) \emph{very} well \cite{a,b}."
    assert strip_tex_residue(line) == "is shown in Table very well [CIT]."
    text = "\n".join(
        [r"1 Introduction", r"We follow \cite{smith} closely.", r"The bound ([\ref=eq1]) holds."]
    )
    [sec] = parse_plaintext(text)
    assert sec.paragraphs == ["We follow [CIT] closely. The bound holds."]


def test_numbered_footnote_words_are_not_headings():
    text = "\n".join(
        [
            "1 Introduction",
            "We study the problem of finding good things in large collections of documents.",
            "3 If",
            "everything that belongs to a node belongs to one child, the nodes are partitioned.",
            "2 Related Work",
            "Earlier systems used rules written by hand for each of the languages at hand.",
        ]
    )
    sections = parse_plaintext(text)
    assert [s.heading for s in sections] == ["Introduction", "Related Work"]
    assert not any(re.search(r"^If$", s.heading) for s in sections)
