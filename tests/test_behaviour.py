"""Behaviour pinned end to end on a small real slice: the outputs must not change silently.

``ratio build`` (ingest -> mine -> dedup -> split -> BEIR export -> reports) over the first
papers of three NeurIPS shards (2023 train, 2024 validation, 2025 test), then ``ratio
evaluate`` with BM25 and the static model, both through the CLI; the run directory's
content digest (``scripts/behaviour_snapshot.py``) must equal the pin committed in
``tests/data/behaviour/``. Any change to a table's content, the export, a report or an
evaluation result fails here, with the list of what differs.

When a behaviour change is intended, regenerate the pin deliberately and commit it with
the change that explains it (review ``git diff tests/data/behaviour/`` first):

    RATIO_UPDATE_BEHAVIOUR=1 .venv/bin/python -m pytest -p no:cacheprovider -n 0 \\
        tests/test_behaviour.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ratio.cli import app
from ratio.corpus.slices import first_lines, write_zst
from tests.conftest import MODELS, NEURIPS, REPO_ROOT, load_script

PIN = REPO_ROOT / "tests/data/behaviour/neurips-slice.json"
PAPERS_PER_SHARD = 12
SHARDS = ("neurips-2023-00", "neurips-2024-00", "neurips-2025-00")
STATIC_MODEL = "potion-mpnet-256"
# boilerplate_min_papers: low enough that corpus-level boilerplate removal has work here (2 hits)
CONFIG = f"""\
name = "behaviour"

[corpus]
inputs = ["corpus"]
format = "ratio-jsonl"

[ingest]
boilerplate_min_papers = 2

[build]
out = "run"

[[evaluate.systems]]
name = "BM25-unigram"
kind = "bm25"
ngram = 1

[[evaluate.systems]]
name = "BM25-bigram"
kind = "bm25"
ngram = 2

[[evaluate.systems]]
name = "static-mpnet (model2vec)"
kind = "dense"
model = "{STATIC_MODEL}"

[[evaluate.systems]]
name = "static+BM25 (rrf)"
kind = "hybrid"
components = ["static-mpnet (model2vec)", "BM25-unigram"]
fusion = "rrf"

[[evaluate.systems]]
name = "BM25-unigram (sub-pool)"
kind = "bm25"
ngram = 1
max_pool = 200
max_queries = 20
"""


bs = load_script("behaviour_snapshot")
# the runs whose scores come from float arithmetic (the static model's cosines and their RRF
# fusion): compared within bs.FLOAT_TOLERANCE, since CPUs differ in their last bits (issue 27)
FLOAT_RUNS = r"^eval/.*/runs/static"


def build_and_evaluate(root: Path) -> Path:
    """The slice's run directory after ``ratio build`` and ``ratio evaluate``."""
    (root / "corpus").mkdir()
    for shard in SHARDS:
        lines = first_lines(NEURIPS / f"{shard}.jsonl.zst", PAPERS_PER_SHARD)
        write_zst(root / "corpus" / f"{shard}.jsonl.zst", lines)
    config = root / "behaviour.toml"
    config.write_text(CONFIG, encoding="utf-8")
    runner = CliRunner()
    for command in ("build", "evaluate"):
        res = runner.invoke(app, [command, "--config", str(config)])
        assert res.exit_code == 0, res.output
    return root / "run"


@pytest.mark.slow
def test_outputs_equal_the_pin(tmp_path):
    if not NEURIPS.is_dir():
        pytest.skip(f"shared corpus not found at {NEURIPS}")
    if not (MODELS / STATIC_MODEL).is_dir():
        pytest.skip(f"model {STATIC_MODEL} not found under {MODELS}")
    snap = bs.snapshot(build_and_evaluate(tmp_path), FLOAT_RUNS)
    if os.environ.get("RATIO_UPDATE_BEHAVIOUR"):
        PIN.parent.mkdir(parents=True, exist_ok=True)
        bs.write_snapshot(snap, PIN)
        pytest.skip(f"pin rewritten: {PIN}")
    diffs = bs.compare(json.loads(PIN.read_text(encoding="utf-8")), snap)
    assert not diffs, "outputs differ from the pin (see the module docstring):\n" + "\n".join(
        diffs[:40]
    )


def test_float_runs_allow_noise_and_fail_real_changes():
    pin = {"q": ["a 0.50", "b 0.40", "c 0.30"]}
    assert not bs.compare_runs(pin, {"q": ["a 0.5001", "b 0.3999", "c 0.30"]})
    assert not bs.compare_runs(pin, {"q": ["a 0.50", "b 0.40", "d 0.2999"]})  # tie at the cut
    assert bs.compare_runs(pin, {"q": ["a 0.50", "c 0.30", "d 0.29"]})  # b dropped, not at cut
    assert bs.compare_runs(pin, {"q": ["b 0.40", "a 0.30", "c 0.30"]})  # a moved
    assert bs.compare_runs(pin, {"q": ["b 0.40", "a 0.50", "c 0.30"]})  # reordered


def test_fused_runs_allow_one_component_term_at_its_cut():
    step = 1 / (bs.RRF_K + bs.HYBRID_DEPTH)
    pin = {"q": ["a 0.030", "b 0.014", "c 0.0100"]}
    # b left one component's list at its cut: it loses one cut-rank term and the list's end
    lost = {"q": ["a 0.030", "c 0.0100", "d 0.0099"]}
    assert not bs.compare_runs(pin, lost, fused=True)
    assert bs.compare_runs(pin, lost)  # a plain float run does not allow it
    stepped = {"q": ["a 0.030", "b " + repr(0.014 - step), "c 0.0100"]}
    assert not bs.compare_runs(pin, stepped, fused=True)
    # a change of several ranks in a component is no cut term
    assert bs.compare_runs(pin, {"q": ["a 0.020", "b 0.014", "c 0.0100"]}, fused=True)
    assert bs.compare_runs(pin, {"q": ["b 0.014", "c 0.0100", "d 0.0099"]}, fused=True)
