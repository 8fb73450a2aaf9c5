"""How one trial trains: its loss, numeric precision, batches and checkpoints.

Apart from :mod:`ratio.training.train` (what is trained, validated and kept) because these
choices follow the installed library and the machine, not the benchmark: sentence-transformers
6 moved the classes used here, a CPU with bf16 matrix units trains faster under bf16 autocast
while one without them would emulate it slower than fp32, and a run longer than a session needs
checkpoints inside an epoch to lose little when the session ends.

Tested by tests/training/test_train.py and tests/training/test_recipe.py.
"""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path
from typing import Any

from ratio.core.config import TrainConfig
from ratio.retrieval.cpu import cpu_info
from ratio.training.data import TrainingError
from ratio.training.grids import Trial

PRECISIONS = ("auto", "fp32", "bf16")
LOSSES = ("mnrl", "cached_mnrl")
SCALE = 20.0  # the paper's temperature, tau = .05
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


def st_class(*where: tuple[str, str]) -> Any:
    """The first ``(module, class)`` of sentence-transformers that imports: version 6 moved
    the pieces training uses (the older 3-5 location comes second)."""
    for module, name in where:
        try:
            return getattr(importlib.import_module(f"sentence_transformers.{module}"), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"sentence-transformers has none of {where}")


def use_bf16(precision: str, flags: frozenset[str] | None = None) -> bool:
    """Whether a trial trains under bf16 autocast. ``auto`` asks the hardware: a GPU that has
    bf16, or a CPU with AMX / AVX512-BF16; anything else trains in fp32, since bf16 emulated
    in software is slower than fp32 there."""
    if precision not in PRECISIONS:
        raise TrainingError(
            f"train.precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        )
    if precision != "auto":
        return precision == "bf16"
    import torch

    if torch.cuda.is_available():
        return bool(torch.cuda.is_bf16_supported())
    return bool((cpu_info()[1] if flags is None else flags) & BF16_FLAGS)


def make_loss(model: Any, tc: TrainConfig) -> Any:
    """MultipleNegativesRankingLoss, or its GradCache form (``cached_mnrl``): the same loss and
    gradients over a whole batch, computed ``mini_batch_size`` sentences at a time, so a batch
    of 256 in-batch negatives fits the memory of 32."""
    if tc.loss not in LOSSES:
        raise TrainingError(f"train.loss must be one of {', '.join(LOSSES)}, got {tc.loss!r}")
    name = (
        "MultipleNegativesRankingLoss"
        if tc.loss == "mnrl"
        else "CachedMultipleNegativesRankingLoss"
    )
    cls = st_class(("sentence_transformer.losses", name), ("losses", name))
    kw: dict[str, Any] = {"scale": SCALE}
    params = inspect.signature(cls.__init__).parameters
    if tc.loss == "cached_mnrl":
        if tc.mini_batch_size < 1:
            raise TrainingError(f"train.mini_batch_size must be >= 1, got {tc.mini_batch_size}")
        kw["mini_batch_size"] = tc.mini_batch_size
        if "show_progress_bar" in params:
            kw["show_progress_bar"] = False  # one bar per mini-batch would flood the terminal
    # cross-device negatives under DDP (accelerate launch / torchrun), where supported
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and "gather_across_devices" in params:
        kw["gather_across_devices"] = True
    try:
        return cls(model, **kw)
    except ValueError as e:  # e.g. a static model: its inputs cannot be cut into mini-batches
        raise TrainingError(f"train.loss = {tc.loss!r}: {e}") from e


def step_checkpoints(every: int) -> Any:
    """A trainer callback that also saves a full checkpoint (model, optimizer, scheduler, RNG
    states, trainer state with the data position) every ``every`` optimizer steps; the epoch
    ends still save and validate, and they alone compete for the best checkpoint.

    It also gives the batch sampler its epoch at each epoch's start. A resumed epoch skips its
    trained batches through a wrapper (accelerate's ``skip_first_batches``) that transformers 5
    then tells the epoch, and the wrapper does not pass it on to sentence-transformers' sampler:
    without this the rest of the epoch would be drawn in epoch 0's order, and a run resumed
    mid-way through a later epoch would train on other batches than one never stopped."""
    from transformers import TrainerCallback

    class StepCheckpoints(TrainerCallback):
        def on_epoch_begin(self, args, state, control, train_dataloader=None, **kwargs):
            sampler = getattr(train_dataloader, "batch_sampler", None)
            while sampler is not None and not hasattr(sampler, "set_epoch"):
                sampler = getattr(sampler, "batch_sampler", None)
            if sampler is not None:
                sampler.set_epoch(int(state.epoch or 0))
            return control

        def on_step_end(self, args, state, control, **kwargs):
            if every > 0 and state.global_step % every == 0:
                control.should_save = True
            return control

    return StepCheckpoints()


def training_args(
    trial: Trial,
    ckpt_dir: Path,
    tc: TrainConfig,
    n_pairs: int,
    progress: bool,
    name: str,
    primary: str,
    bf16: bool,
) -> Any:
    """The trainer's arguments: duplicate-free batches, validation and a checkpoint at each
    epoch's end, the best epoch restored at the end, seeded data order."""
    import torch
    import transformers
    from sentence_transformers import SentenceTransformerTrainingArguments

    BatchSamplers = st_class(("base.sampler", "BatchSamplers"), ("training_args", "BatchSamplers"))
    steps_per_epoch = max(1, -(-n_pairs // trial.batch_size))
    kw: dict[str, Any] = {}
    if trial.warmup_ratio:  # in transformers 5 a float < 1 as warmup_steps is a ratio
        v5 = int(transformers.__version__.split(".")[0]) >= 5
        kw["warmup_steps" if v5 else "warmup_ratio"] = trial.warmup_ratio
    if bf16 and not torch.cuda.is_available():
        kw["use_cpu"] = True  # transformers takes bf16 without a GPU only when told it is CPU
    return SentenceTransformerTrainingArguments(
        output_dir=str(ckpt_dir),
        num_train_epochs=trial.epochs,
        per_device_train_batch_size=trial.batch_size,
        learning_rate=trial.lr,
        weight_decay=trial.weight_decay,
        max_grad_norm=trial.max_grad_norm,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        eval_strategy="epoch",
        save_strategy="epoch",
        load_best_model_at_end=True,
        metric_for_best_model=f"eval_{name}_{primary}",
        greater_is_better=True,
        save_total_limit=2,
        logging_steps=max(1, steps_per_epoch // 10),
        report_to="none",
        seed=tc.seed,
        data_seed=tc.seed,
        disable_tqdm=not progress,
        dataloader_pin_memory=False,  # CPU training: pinning only warns that it cannot pin
        bf16=bf16,
        **kw,
    )
