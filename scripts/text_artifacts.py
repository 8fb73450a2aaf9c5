"""Text-artifact rates before and after the text repairs, and the corpus vocabulary they use.

Why: the strict audits found run-in headings, footnote marks, joined words, flattened math,
Markdown emphasis and placeholder-only sentences in mined pairs (issue 32); each repair must
show on real ingest output that it lowers its artifact's rate. ``measure`` draws a seeded
sample of papers (``--per-shard`` from the first ``--first`` lines of every shard), ingests it
with the code under ``--before`` and under ``--after`` (each in its own process), and prints
each kind's rate on a seeded sample of ``--sentences`` sentences and over all sentences of the
sample papers. ``vocab`` counts the corpus vocabulary of ``ratio.corpus.text.words`` (document
frequencies over the Nougat papers of 2023 and 2024, ``--first`` lines per shard) into the
package data. The library code is ``ratio.corpus.artifact_audit`` and
``ratio.corpus.text.artifacts``; see docs/precision-audit.md.

    PYTHONPATH=src .venv/bin/python scripts/text_artifacts.py measure --before ../main/src \\
        --seed 32 --per-shard 20 --first 200 --sentences 2000
    PYTHONPATH=src .venv/bin/python scripts/text_artifacts.py vocab --first 300
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from ratio.corpus.artifact_audit import (
    examples,
    ingest_with,
    measure,
    read_sentences,
    sample_papers,
    table,
)
from ratio.corpus.slices import first_lines
from ratio.corpus.text.words import VOCABULARY, count_vocabulary, write_vocabulary

ROOT = Path(__file__).resolve().parents[1]
NEURIPS = ROOT.parent / "shared" / "corpora" / "neurips"


def _measure(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        papers = Path(tmp) / "papers"
        drawn = sample_papers(args.corpus, papers, args.seed, args.per_shard, args.first)
        print(f"papers: {sum(map(len, drawn.values()))} from {len(drawn)} shards, seed {args.seed}")
        runs = {}
        for name, src in (("before", args.before), ("after", args.after)):
            folder = ingest_with(src.resolve(), papers, Path(tmp) / name)
            runs[name] = measure(read_sentences(folder), args.seed, args.sentences, args.examples)
    print(table(runs["before"], runs["after"]))
    if args.examples:
        print(examples(runs["before"], runs["after"]))


def _vocab(args: argparse.Namespace) -> None:
    shards = sorted(args.corpus.glob("neurips-202[34]-*.jsonl.zst"))

    def texts():
        for shard in shards:  # a few hundred papers at a time
            for line in first_lines(shard, args.first):
                rec = json.loads(line)
                if rec.get("text") and rec.get("extractor") == "nougat":
                    yield rec["text"]

    df, n = count_vocabulary(texts())
    source = f"Nougat papers, first {args.first} lines of {len(shards)} shards 2023-2024"
    rows = write_vocabulary(df, n, args.out, source)
    print(f"{rows:,} words from {n:,} papers -> {args.out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="artifact rates before and after")
    m.add_argument("--corpus", type=Path, default=NEURIPS)
    m.add_argument("--before", type=Path, required=True, help="src/ of the code before")
    m.add_argument("--after", type=Path, default=ROOT / "src", help="src/ of the code after")
    m.add_argument("--seed", type=int, default=32)
    m.add_argument("--per-shard", type=int, default=20)
    m.add_argument("--first", type=int, default=200)
    m.add_argument("--sentences", type=int, default=2000)
    m.add_argument("--examples", type=int, default=0, help="flagged sentences shown per kind")
    v = sub.add_parser("vocab", help="count the corpus vocabulary into the package data")
    v.add_argument("--corpus", type=Path, default=NEURIPS)
    v.add_argument("--first", type=int, default=300)
    v.add_argument("--out", type=Path, default=VOCABULARY)
    args = ap.parse_args()
    (_measure if args.cmd == "measure" else _vocab)(args)


if __name__ == "__main__":
    main()
