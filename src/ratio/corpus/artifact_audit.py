"""Text-artifact rates before and after a change of the text pipeline, on real ingest output.

A repair is judged on what ingest writes, not on hand-picked strings: a seeded sample of papers
is ingested by the real pipeline of two source trees (the code before the change, say the main
checkout, and the code after it), each in its own Python process with its own ``PYTHONPATH``,
and ``ratio.corpus.text.artifacts`` counts each artifact kind on a seeded sample of sentences
and on every sentence of the sample papers. ``scripts/text_artifacts.py`` is its command line;
docs/precision-audit.md ("Text artifacts before and after the repairs") has the measured table.

Tested by tests/corpus/test_artifact_audit.py.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from ratio.corpus.slices import first_lines, write_zst
from ratio.corpus.text.artifacts import KINDS, count, detect


@dataclass
class Rates:
    """One run's artifact counts: on the sentence sample and on all sentences."""

    sample: dict[str, int] = field(default_factory=dict)
    n_sample: int = 0
    every: dict[str, int] = field(default_factory=dict)
    n_every: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)


def sample_papers(
    corpus: Path, out: Path, seed: int, per_shard: int, first: int
) -> dict[str, list[str]]:
    """Write ``per_shard`` papers drawn (``random.Random(f"{seed}:{shard}")``) from the first
    ``first`` lines of each shard of ``corpus`` to ``out``; returns the paper ids by shard."""
    out.mkdir(parents=True, exist_ok=True)
    drawn: dict[str, list[str]] = {}
    for shard in sorted(corpus.glob("*.jsonl.zst")):
        lines = first_lines(shard, first)
        rng = random.Random(f"{seed}:{shard.name}")
        picked = [
            lines[i] for i in sorted(rng.sample(range(len(lines)), min(per_shard, len(lines))))
        ]
        write_zst(out / shard.name, picked)
        drawn[shard.name] = [json.loads(line)["id"] for line in picked]
    return drawn


def ingest_with(src: Path, papers: Path, out: Path, python: str = sys.executable) -> Path:
    """Ingest ``papers`` with the ``ratio`` package under ``src`` (a separate process, so two
    source trees never share imported modules); returns the sentence shard folder."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [python, "-c", "from ratio.cli import main; main()", "ingest", str(papers)]
    cmd += ["--out", str(out), "--format", "ratio-jsonl", "--workers", "1"]
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return out / "sentences"


def read_sentences(folder: Path) -> list[str]:
    """Every sentence of the shards in ``folder``, in shard and row order."""
    out: list[str] = []
    for path in sorted(folder.glob("*.parquet")):
        out.extend(pq.read_table(path, columns=["text"])["text"].to_pylist())
    return out


def measure(sentences: list[str], seed: int, n_sample: int, n_examples: int = 0) -> Rates:
    """Counts per kind on a seeded sample of ``n_sample`` sentences and on all of them; up to
    ``n_examples`` flagged sample sentences per kind."""
    rng = random.Random(seed)
    idx = sorted(rng.sample(range(len(sentences)), min(n_sample, len(sentences))))
    sample = [sentences[i] for i in idx]
    rates = Rates(n_sample=len(sample), n_every=len(sentences))
    found, _ = count(sample)
    rates.sample = dict(found)
    every, _ = count(sentences)
    rates.every = dict(every)
    if n_examples:
        for s in sample:
            for kind in detect(s):
                shown = rates.examples.setdefault(kind, [])
                if len(shown) < n_examples:
                    shown.append(s)
    return rates


def examples(before: Rates, after: Rates) -> str:
    """The flagged sample sentences of both runs, by kind, to read each detector's precision."""
    out = []
    for kind in KINDS:
        for name, rates in (("before", before), ("after", after)):
            shown = rates.examples.get(kind, [])
            out.append(f"\n{kind}, {name} ({len(shown)} shown):")
            out.extend(f"  {s[:240]}" for s in shown)
    return "\n".join(out)


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.2f}% ({k:,})" if n else "-"


def table(before: Rates, after: Rates) -> str:
    """The before/after table in Markdown."""
    head = (
        f"| kind | sample before (n={before.n_sample:,}) | sample after (n={after.n_sample:,}) "
        f"| all before (n={before.n_every:,}) | all after (n={after.n_every:,}) |"
    )
    rows = [head, "|---|---:|---:|---:|---:|"]
    for kind, label in KINDS.items():
        cells = (
            _pct(before.sample.get(kind, 0), before.n_sample),
            _pct(after.sample.get(kind, 0), after.n_sample),
            _pct(before.every.get(kind, 0), before.n_every),
            _pct(after.every.get(kind, 0), after.n_every),
        )
        rows.append(f"| {label} (`{kind}`) | " + " | ".join(cells) + " |")
    return "\n".join(rows)
