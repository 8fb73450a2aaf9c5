"""``ratio model export``: a training run's unified model as a shipped folder, checked at load."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ratio.core.config import SystemConfig
from ratio.core.records import RELATIONS
from ratio.evaluation.harness import evaluate_systems, results_caption
from ratio.retrieval.models import resolve_model
from ratio.retrieval.shipped import RECORD, ShippedModelError, latest, load_shipped, verify
from ratio.training.export import export_model, write_card
from ratio.training.unified import compare, train_unified
from tests.training.conftest import make_config, write_benchmark

RATIO = str(Path(sys.executable).with_name("ratio"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A unified model trained on a tiny benchmark (a static base: seconds), and its config."""
    from tests.training.conftest import STATIC

    if not (STATIC / "config.json").is_file():
        pytest.skip(f"static model not found at {STATIC}")
    root = write_benchmark(
        tmp_path_factory.mktemp("export") / "run",
        {"address": 16, "broaden": 8, "specify": 16},
        {"address": 6, "broaden": 4, "specify": 6},
    )
    cfg = make_config(root)
    train_unified(cfg, progress=False)
    return cfg, root / "models" / "unified" / "best"


def test_export_writes_a_verified_folder_with_record_and_card(trained, tmp_path):
    cfg, best = trained
    out = export_model(best, tmp_path / "ratio-moves-tiny-v1", config=cfg)
    s = load_shipped(out)
    assert (s.name, s.version) == ("ratio-moves-tiny-v1", 1)
    assert s.instructions == {r: f"{r}: " for r in RELATIONS}  # the "short" instructions
    for who in ("model", "baseline", "bm25"):  # one pool for every row
        assert set(s.validation[who]) == set(RELATIONS)
    assert s.validation_pool["pool_size"] > 0
    training = s.record["training"]
    assert sum(training["pairs_per_move"].values()) == training["n_pairs"] == 40
    card = s.card.read_text()
    assert "ratio-moves-tiny-v1" in card and "| BM25-unigram |" in card
    assert s.content_hash.startswith("sha256:") and verify(out) == s.content_hash
    # it loads like any model, by path or by name from a models directory
    assert resolve_model(str(out))[0] == out.resolve()
    assert latest([tmp_path]) == out
    # a re-export of the same weights is byte-identical, card and manifest included
    again = export_model(best, tmp_path / "again" / "ratio-moves-tiny-v1", config=cfg)
    assert load_shipped(again).content_hash == s.content_hash


def test_the_card_gets_the_test_table_and_the_manifest_follows(trained, tmp_path):
    cfg, best = trained
    out = export_model(best, tmp_path / "ratio-moves-tiny-v2", config=cfg)
    res = compare(
        cfg,
        systems=("bm25", "baseline", "shipped"),
        shipped=out,
        out=tmp_path / "cmp",
        command="ratio train-compare ...",
    )
    assert {r["setup"] for r in res.rows} == {"BM25", "generic-Baseline", "ratio-moves-tiny-v2"}
    write_card(out, [tmp_path / "cmp"])
    s = load_shipped(out)  # verified again after the card changed
    assert {r["system"] for r in s.record["test"][0]["rows"]} >= {"BM25", "ratio-moves-tiny-v2"}
    assert "| ratio-moves-tiny-v2 | address |" in s.card.read_text()
    assert "ratio train-compare ..." in s.card.read_text()
    # a later re-export of the same weights keeps the measured table
    export_model(best, out, config=cfg)
    assert load_shipped(out).record["test"] == s.record["test"]


@pytest.mark.parametrize("damage", ["truncated", "altered", "missing", "record"])
def test_a_damaged_folder_is_an_error_naming_the_file(trained, tmp_path, damage):
    cfg, best = trained
    out = export_model(best, tmp_path / "ratio-moves-tiny-v1", config=cfg)
    record = json.loads((out / RECORD).read_text())
    weights = max(record["files"], key=lambda f: record["files"][f]["bytes"])
    target = out / weights
    if damage == "truncated":
        target.write_bytes(target.read_bytes()[:100])
        match = f"{target}: 100 bytes.*truncated"
    elif damage == "altered":
        data = bytearray(target.read_bytes())
        data[-1] ^= 0xFF
        target.write_bytes(bytes(data))
        match = f"{target}: content differs.*altered"
    elif damage == "missing":
        target.unlink()
        match = f"{target}: missing"
    else:
        record["query_instructions"].pop("broaden")
        (out / RECORD).write_text(json.dumps(record))
        match = "'query_instructions' has no instruction for broaden"
    with pytest.raises(ShippedModelError, match=match):
        load_shipped(out)
    if damage != "record":
        with pytest.raises(ShippedModelError, match="ratio model export"):
            resolve_model(str(out))  # every load checks, not only the service's


def test_export_refuses_what_is_not_a_unified_training_output(trained, tmp_path):
    cfg, best = trained
    with pytest.raises(ShippedModelError, match="name a shipped model folder"):
        export_model(best, tmp_path / "my-model", config=cfg)
    bare = tmp_path / "bare"
    shutil.copytree(best, bare)
    (bare / "modules.json").unlink()
    with pytest.raises(ShippedModelError, match="not a sentence-transformers model folder"):
        export_model(bare, tmp_path / "ratio-moves-x-v1")
    shutil.copytree(best, bare, dirs_exist_ok=True)
    (bare / "ratio_training.json").unlink()
    with pytest.raises(ShippedModelError, match="ratio_training.json: missing"):
        export_model(bare, tmp_path / "ratio-moves-x-v1")


def test_a_failed_export_leaves_the_good_folder_in_place(trained, tmp_path):
    cfg, best = trained
    out = export_model(best, tmp_path / "ratio-moves-tiny-v1", config=cfg)
    before = load_shipped(out).content_hash
    with pytest.raises(ShippedModelError):
        export_model(best, out, dtype="int4")
    broken = tmp_path / "broken"
    shutil.copytree(best, broken)
    (broken / "ratio_training.json").write_text("{not json")
    with pytest.raises(ShippedModelError, match="not valid JSON"):
        export_model(broken, out)
    assert load_shipped(out).content_hash == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "ratio-moves-tiny-v1"]


def test_cli_export_and_verify(trained, tmp_path):
    cfg, best = trained
    out = tmp_path / "ratio-moves-tiny-v1"
    run = subprocess.run(
        [RATIO, "model", "export", str(best), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "MB, sha256:" in run.stdout
    (out / "modules.json").write_text("[]")
    run = subprocess.run(
        [RATIO, "model", "verify", str(out)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 2 and f"{out / 'modules.json'}: " in run.stderr


def test_evaluate_ranks_a_shipped_model_per_move_as_train_compare_does(trained, tmp_path):
    """A shipped folder named as an ``[[evaluate.systems]]`` model is read with each move's
    instruction: ``ratio evaluate`` and ``train-compare`` give it the same scores."""
    cfg, best = trained
    out = export_model(best, tmp_path / "ratio-moves-tiny-v1", config=cfg)
    system = SystemConfig(name="shipped", kind="dense", model=str(out), prefix="generic")
    ev = dataclasses.replace(cfg.evaluate, systems=[system], relations=list(RELATIONS))
    res = evaluate_systems(dataclasses.replace(cfg, evaluate=ev), write=False, progress=False)
    cmp = compare(cfg, systems=("shipped",), shipped=out, out=tmp_path / "cmp")
    got = {r["relation"]: r["metrics"]["mrr@10"] for r in res.rows}
    want = {r["relation"]: r["metrics"]["mrr@10"] for r in cmp.rows}
    assert got == pytest.approx(want, abs=1e-9)
    # its table quotes the card's own test numbers under it (none measured yet here)
    assert "no test table in its card yet" in results_caption(res.rows, res.meta)
    write_card(out, [tmp_path / "cmp"])
    res = evaluate_systems(dataclasses.replace(cfg, evaluate=ev), write=False, progress=False)
    caption = results_caption(res.rows, res.meta)
    assert "ratio-moves-tiny-v1's card" in caption and "(BM25-unigram" in caption
