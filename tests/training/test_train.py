"""Real (tiny) training runs of the static model on a benchmark written in the real schemas."""

from __future__ import annotations

import json

import pytest
from transformers import TrainerCallback

from ratio.core.config import ConfigError, load_config
from ratio.core.io import RatioError
from ratio.training.data import TrainingError
from ratio.training.train import train
from tests.training.conftest import make_config, write_benchmark


def test_tiny_run_saves_a_loadable_model_with_validation_metrics(tiny_bench, static_model, capfd):
    from sentence_transformers import SentenceTransformer

    cfg = make_config(tiny_bench)
    sel = train(cfg, "address", progress=False)["address"]
    assert "widget examples" not in capfd.readouterr().err  # library bars stay out
    root = tiny_bench / "models" / "address"
    trial = root / "trial-0"
    metrics = json.loads((trial / "metrics.json").read_text())
    assert metrics["n_pairs"] == 32
    assert metrics["validation"]["n_queries"] == 12
    assert [e["epoch"] for e in metrics["epochs"]] == [1.0]
    assert 0.0 <= metrics["best"]["mrr@10"] <= 1.0
    assert set(metrics["baseline"]) == {"recall@1", "recall@10", "mrr@10", "mrr@100"}
    assert metrics["throughput"]["train_samples_per_s"] > 0
    for name in ("config.json", "log.json"):
        assert json.loads((trial / name).read_text())
    assert sel["selected_trial"] == 0 and (root / "selection.json").is_file()
    # <relation>/best is the selected trial's model, an ordinary sentence-transformers dir
    assert (root / "best").resolve() == (trial / "best").resolve()
    assert json.loads((root / "best" / "ratio_training.json").read_text())["trial"] == 0
    model = SentenceTransformer(str(root / "best"), device="cpu")
    emb = model.encode(["query: a", "document: b"])
    assert emb.shape == (2, 256)
    # (test_unified ranks a test pool with such a directory through the dense retriever)
    # a finished trial is reused, not retrained
    again = train(cfg, "address", progress=False)["address"]["results"][0]
    assert again["throughput"]["wall_s"] == metrics["throughput"]["wall_s"]


class _Interrupt(Exception):
    pass


class _StopAfterFirstSave(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        raise _Interrupt(f"interrupted at step {state.global_step}")


def test_interrupted_run_resumes_from_last_checkpoint(tiny_bench, static_model):
    cfg = make_config(tiny_bench, grid=[{"epochs": 2, "batch_size": 8, "lr": 0.05}])
    with pytest.raises(_Interrupt):
        train(cfg, "address", progress=False, callbacks=[_StopAfterFirstSave()])
    trial = tiny_bench / "models" / "address" / "trial-0"
    assert (trial / "checkpoints" / "checkpoint-4").is_dir()
    assert not (trial / "metrics.json").exists()
    res = train(cfg, "address", progress=False)["address"]["results"][0]
    assert res["throughput"]["resumed_from"].endswith("checkpoint-4")
    assert res["throughput"]["global_steps"] == 8
    # the first epoch's validation (before the interruption) survives in the restored log
    assert [e["epoch"] for e in res["epochs"]] == [1.0, 2.0]
    assert not (trial / "checkpoints").exists()  # cleaned once the trial finished


class _StopAtStep(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise _Interrupt(f"killed after the checkpoint of step {state.global_step}")


def _weights(model_dir):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_a_run_killed_mid_epoch_resumes_to_the_uninterrupted_result(tmp_path, static_model):
    import torch

    grid = [{"epochs": 2, "batch_size": 8, "lr": 0.05}]  # 32 pairs: 4 steps an epoch
    runs = {}
    for name in ("straight", "killed"):
        root = write_benchmark(
            tmp_path / name,
            {"address": 32, "broaden": 1, "specify": 16},
            {"address": 12, "broaden": 0, "specify": 8},
        )
        cfg = make_config(root, grid=grid, save_steps=3)
        if name == "killed":  # step 6 is mid-way through epoch 2
            with pytest.raises(_Interrupt):
                train(cfg, "address", progress=False, callbacks=[_StopAtStep(6)])
            assert (root / "models/address/trial-0/checkpoints/checkpoint-6").is_dir()
        runs[name] = (root, train(cfg, "address", progress=False)["address"]["results"][0])
    (a_root, a), (b_root, b) = runs["straight"], runs["killed"]
    assert b["throughput"]["resumed_from"].endswith("checkpoint-6")
    assert b["throughput"]["global_steps"] == a["throughput"]["global_steps"] == 8
    assert b["epochs"] == a["epochs"]  # every validation score, both epochs
    assert b["best"] == a["best"]
    wa, wb = (_weights(r / "models/address/best") for r in (a_root, b_root))
    assert wa.keys() == wb.keys()
    diff = {k: float((wa[k] - wb[k]).abs().max()) for k in wa}
    assert all(torch.equal(wa[k], wb[k]) for k in wa), (diff, a["epochs"], a["best"])


def test_a_bf16_trial_trains_on_a_cpu(tiny_bench, static_model):
    cfg = make_config(tiny_bench, precision="bf16")
    res = train(cfg, "address", progress=False)["address"]["results"][0]
    assert res["signature"]["precision"] == "bf16"
    assert 0.0 <= res["best"]["mrr@10"] <= 1.0


def test_restart_discards_an_interrupted_trials_checkpoints(tiny_bench, static_model):
    cfg = make_config(tiny_bench, grid=[{"epochs": 2, "batch_size": 8, "lr": 0.05}])
    with pytest.raises(_Interrupt):
        train(cfg, "address", progress=False, callbacks=[_StopAfterFirstSave()])
    res = train(cfg, "address", progress=False, resume=False)["address"]["results"][0]
    assert res["throughput"]["resumed_from"] is None
    assert res["throughput"]["global_steps"] == 8


def test_single_pair_training_set_is_rejected_before_training(tiny_bench):
    cfg = make_config(tiny_bench)
    with pytest.raises(TrainingError, match=r"1 training pair\(s\) for broaden.*at least 2"):
        train(cfg, "broaden", progress=False)
    assert not (tiny_bench / "models").exists()


def test_empty_training_set_is_rejected(tmp_path):
    root = write_benchmark(tmp_path / "run", {"address": 0, "specify": 4}, {"address": 3})
    with pytest.raises(TrainingError, match=r"0 training pair\(s\) for address"):
        train(make_config(root), "address", progress=False)


def test_a_base_model_folder_that_is_no_model_is_rejected_before_training(tiny_bench, tmp_path):
    """A folder without sentence-transformers files (e.g. a checkpoint path typed wrong) stops
    with the folder named; nothing is written under ``train.out``."""
    not_a_model = tmp_path / "notes"
    not_a_model.mkdir()
    (not_a_model / "README.md").write_text("not a model\n", encoding="utf-8")
    cfg = make_config(tiny_bench, base_model=str(not_a_model))
    with pytest.raises(RatioError, match=r"model .*notes.* not found"):
        train(cfg, "address", progress=False)
    assert not (tiny_bench / "models").exists()


def test_relation_without_validation_queries_is_rejected(tmp_path):
    root = write_benchmark(tmp_path / "run", {"specify": 8}, {"address": 3})
    with pytest.raises(TrainingError, match="no specify queries in the validation split"):
        train(make_config(root), "specify", progress=False)


def test_all_checks_every_relation_before_training_any(tiny_bench):
    # address and specify are fine, broaden has one pair: nothing may be trained
    with pytest.raises(TrainingError, match="broaden"):
        train(make_config(tiny_bench), "all", progress=False)
    assert not (tiny_bench / "models").exists()


def test_unknown_relation_and_trial_index(tiny_bench):
    with pytest.raises(TrainingError, match="unknown relation 'solve'"):
        train(make_config(tiny_bench), "solve", progress=False)
    with pytest.raises(TrainingError, match=r"train.trials \[3\] out of range"):
        train(make_config(tiny_bench, trials=[3]), "address", progress=False)
    with pytest.raises(TrainingError, match="--relation all"):
        train(make_config(tiny_bench), "address", unified=True, progress=False)


def test_unknown_train_key_is_rejected(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('[train]\nbase_model = "all-MiniLM-L6-v2"\nlearning_rate = 1e-5\n')
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) 'learning_rate' in \[train\]"):
        load_config(p)
