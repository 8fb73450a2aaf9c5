"""Operation-specific contrastive fine-tuning (paper §5.1, Appendix C).

``MultipleNegativesRankingLoss`` (scale 20, i.e. tau = .05) on (query, gold) pairs with
in-batch negatives, in duplicate-free batches so no in-batch "negative" is a copy of the
positive. Every trial of the grid (:mod:`ratio.training.grids`) is validated after each epoch
by MRR@10 on a seeded validation sub-pool; its best epoch is saved to
``<out>/<target>/trial-<i>/best`` and the best trial linked as ``<out>/<target>/best``, an
ordinary sentence-transformers directory. A finished trial is reused, an interrupted one
resumes from its last checkpoint (each epoch end, and every ``train.save_steps`` steps).
Seeds are fixed; the loss, precision and checkpoint recipe is :mod:`ratio.training.recipe`.

Several GPUs: the same command under ``accelerate launch $(which ratio) train ...`` or
``torchrun --nproc_per_node 4 $(which ratio) train ...`` trains with DDP, and the loss gathers
embeddings across devices (negatives = batch size x world size, as in the paper's 4-GPU
Address/Specify runs).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratio.core.config import RunConfig
from ratio.core.io import write_text_atomic
from ratio.core.layout import UNIFIED, ModelsDir, RunDir
from ratio.core.provenance import code_version, stamp
from ratio.core.records import RELATIONS
from ratio.retrieval.cpu import cpu_summary
from ratio.retrieval.dense import available_cores
from ratio.retrieval.models import is_static, quiet_offline_hf, resolve_model
from ratio.training.data import (
    EvalSet,
    PairSet,
    TrainingError,
    check_relation,
    mine_hard_negatives,
    setup_prefixes,
    training_pairs,
    unified_prefixes,
    validation_set,
)
from ratio.training.grids import Trial, trials_for
from ratio.training.recipe import make_loss, st_class, step_checkpoints, training_args, use_bf16
from ratio.training.validation import PRIMARY, bm25_validation, evaluate_model

log = logging.getLogger(__name__)

TRAINING_META = "ratio_training.json"  # written into every saved model directory


# ------------------------------------------------------------------ models


def load_base_model(name: str, max_seq_length: int = 128):
    """A trainable SentenceTransformer; a model2vec static model is wrapped in
    ``StaticEmbedding`` (how sentence-transformers trains static embeddings), so the result
    saves as an ordinary sentence-transformers directory."""
    quiet_offline_hf()
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(available_cores())
    path, _ = resolve_model(name)
    if is_static(path):
        where = ("sentence_transformer.modules", "StaticEmbedding"), ("models", "StaticEmbedding")
        static = st_class(*where).from_model2vec(str(path))
        # model2vec may store float16: Adam in fp16 overflows to NaN
        model = SentenceTransformer(modules=[static]).float()
    else:
        model = SentenceTransformer(str(path), local_files_only=True)
        if max_seq_length and (model.max_seq_length or 0) > max_seq_length:
            model.max_seq_length = max_seq_length  # sentences are short; caps padding cost
    card = getattr(model, "model_card_data", None)
    if card is not None:  # its widget examples are a progress bar of their own in the terminal
        card.generate_widget_examples = False
        # sentence-transformers 6.3 computes them at train start whatever that flag says
        card.set_widget_examples = lambda dataset: None
    return model


def freeze_lower_layers(model: Any, ratio: float) -> int:
    """Freeze embeddings and the lowest ``ratio`` of transformer layers; returns layers frozen."""
    if ratio <= 0:
        return 0
    auto = getattr(model[0], "auto_model", None)
    if auto is None:
        log.warning("freeze_ratio %.2f ignored: %s has no transformer layers", ratio, model[0])
        return 0
    for path in ("encoder.layer", "layers", "model.layers", "encoder.layers"):
        layers = auto
        for part in path.split("."):
            layers = getattr(layers, part, None)
        if layers is not None:
            break
    else:
        raise TrainingError(f"freeze_ratio: cannot find the layers of {type(auto).__name__}")
    n = int(round(ratio * len(layers)))
    emb = getattr(auto, "embeddings", None) or getattr(auto, "embed_tokens", None)
    for module in ([emb] if emb is not None else []) + list(layers[:n]):
        module.requires_grad_(False)
    return n


def make_evaluator(evalset: EvalSet, batch_size: int):
    """A sentence-transformers evaluator reporting validation MRR@10 (primary) and friends."""
    base: Any = st_class(("base.evaluation", "BaseEvaluator"), ("evaluation", "SentenceEvaluator"))

    class RetrievalEvaluator(base):
        def __init__(self) -> None:
            super().__init__()
            self.name = evalset.name
            self.primary_metric = PRIMARY
            self.greater_is_better = True

        def __call__(self, model, output_path=None, epoch: int = -1, steps: int = -1):
            return self.prefix_name_to_metrics(
                evaluate_model(model, evalset, batch_size), self.name
            )

    return RetrievalEvaluator()


# ------------------------------------------------------------------ plans


@dataclass
class Plan:
    """Everything one target (a relation, or ``unified``) needs, checked before training."""

    target: str
    relations: list[str]
    pairs: PairSet
    valset: EvalSet
    trials: list[tuple[int, Trial]]
    query_prefixes: dict[str, str]
    doc_prefix: str


def make_plans(config: RunConfig, relation: str, unified: bool = False) -> list[Plan]:
    """Load and check all inputs of a training run; raises before any model is loaded."""
    tc = config.train
    rels = check_relation(relation)
    if unified and rels != list(RELATIONS):
        raise TrainingError("--unified trains one model on every relation: use --relation all")
    _, spec = resolve_model(tc.base_model)
    qp, dp = setup_prefixes(tc.prefix, spec)
    if tc.val_pool < 0 or tc.max_pairs < 0 or tc.val_max_queries < 0:
        raise TrainingError(
            "train.val_pool, train.max_pairs and train.val_max_queries must be >= 0"
        )
    if not 0.0 <= tc.validation_train_share < 1.0:
        raise TrainingError(
            f"train.validation_train_share must be in [0, 1), got {tc.validation_train_share}"
        )
    bench = RunDir.of(config).benchmark
    train_b, val_b = bench.load("train"), bench.load("validation")
    fit = [train_b]
    if tc.validation_train_share:
        # the validation papers' pairs beyond the held-out share are training data too; the
        # held-out papers alone (queries and pool) select checkpoints and what `auto` serves
        extra, val_b = val_b.paper_split(tc.validation_train_share, tc.seed)
        fit.append(extra)
    targets = [(UNIFIED, rels)] if unified else [(r, [r]) for r in rels]
    plans = []
    for target, trels in targets:
        prefs = unified_prefixes(tc.unified_instruction) if unified else dict.fromkeys(trels, qp)
        kw: dict[str, Any] = {"query_prefixes": prefs, "doc_prefix": dp, "seed": tc.seed}
        pairs = training_pairs(fit, trels, max_pairs=tc.max_pairs, **kw)
        valset = validation_set(
            val_b, trels, pool_size=tc.val_pool, max_queries=tc.val_max_queries, **kw
        )
        grid = trials_for(tc.base_model, tc.grid, target)
        bad = [i for i in tc.trials if not 0 <= i < len(grid)]
        if bad:
            raise TrainingError(
                f"train.trials {bad} out of range: the {target} grid has {len(grid)} trials"
            )
        chosen = list(tc.trials) or list(range(len(grid)))
        plans.append(Plan(target, trels, pairs, valset, [(i, grid[i]) for i in chosen], prefs, dp))
    if tc.hard_negatives:
        for p in plans:
            log.info("mining BM25 hard negatives for %s (%d pairs)", p.target, len(p.pairs))
            p.pairs = mine_hard_negatives(train_b, p.pairs, k=tc.hard_negatives_k, seed=tc.seed)
    return plans


# ------------------------------------------------------------------ one trial


def _signature(config: RunConfig, plan: Plan, trial: Trial) -> dict[str, Any]:
    """What defines a trial's result; a finished trial is reused only if this matches."""
    tc = config.train
    return {
        "base_model": tc.base_model,
        "prefix": tc.prefix,
        "query_prefixes": plan.query_prefixes,
        "doc_prefix": plan.doc_prefix,
        "seed": tc.seed,
        "max_pairs": tc.max_pairs,
        "n_pairs": len(plan.pairs),
        "hard_negatives": tc.hard_negatives,
        "hard_negatives_k": tc.hard_negatives_k if tc.hard_negatives else None,
        "max_seq_length": tc.max_seq_length,
        "precision": "bf16" if use_bf16(tc.precision) else "fp32",
        "loss": tc.loss if tc.loss == "mnrl" else f"{tc.loss}/{tc.mini_batch_size}",
        "validation": plan.valset.summary(),
        "trial": trial.to_dict(),
    } | ({"validation_train_share": share} if (share := tc.validation_train_share) else {})


def run_trial(
    config: RunConfig,
    plan: Plan,
    index: int,
    trial: Trial,
    *,
    progress: bool = True,
    callbacks: Sequence[Any] = (),
    resume: bool = True,
) -> dict[str, Any]:
    """Train, validate each epoch, restore and save the best epoch; returns its metrics.
    An interrupted trial continues from its last checkpoint unless ``resume`` is false."""
    from sentence_transformers import SentenceTransformerTrainer
    from transformers import set_seed
    from transformers.trainer_utils import get_last_checkpoint

    tc = config.train
    tdir = RunDir.of(config).trained.trial(plan.target, index)
    sig = _signature(config, plan, trial)
    metrics_file, sig_file = tdir / "metrics.json", tdir / "signature.json"
    if metrics_file.is_file() and (tdir / "best" / "modules.json").is_file():
        done = json.loads(metrics_file.read_text())
        if done.get("signature") == sig:
            log.info("trial %s/%d already finished; reusing %s", plan.target, index, tdir)
            return done
    tdir.mkdir(parents=True, exist_ok=True)
    ckpt_dir = tdir / "checkpoints"
    last = get_last_checkpoint(str(ckpt_dir)) if ckpt_dir.is_dir() else None
    if last:
        state = json.loads((Path(last) / "trainer_state.json").read_text())
        if not resume:
            log.warning("discarding %s (step %s): starting over", last, state.get("global_step"))
            shutil.rmtree(ckpt_dir)
            last = None
        elif not sig_file.is_file() or json.loads(sig_file.read_text()) != sig:
            log.warning("checkpoints in %s are from another setup; starting over", ckpt_dir)
            shutil.rmtree(ckpt_dir)
            last = None
        else:
            step = state.get("global_step")
            log.info("resuming %s/trial-%d from %s (step %s)", plan.target, index, last, step)
    write_text_atomic(sig_file, json.dumps(sig, indent=2, sort_keys=True))

    set_seed(tc.seed)
    model = load_base_model(tc.base_model, tc.max_seq_length)
    frozen = freeze_lower_layers(model, trial.freeze_ratio)
    baseline_file = tdir / "baseline.json"
    if baseline_file.is_file():
        baseline = json.loads(baseline_file.read_text())
    else:  # the untrained model on the same validation set: what training must beat
        baseline = evaluate_model(model, plan.valset, tc.eval_batch_size)
        write_text_atomic(baseline_file, json.dumps(baseline, indent=2))
    loss = make_loss(model, tc)
    n, name = len(plan.pairs), plan.valset.name
    args = training_args(trial, ckpt_dir, tc, n, progress, name, PRIMARY, use_bf16(tc.precision))
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=plan.pairs.to_dataset(),
        loss=loss,
        evaluator=make_evaluator(plan.valset, tc.eval_batch_size),
        callbacks=[step_checkpoints(tc.save_steps), *callbacks],
    )
    t0 = time.perf_counter()
    out = trainer.train(resume_from_checkpoint=last)
    wall = time.perf_counter() - t0
    prefix = f"eval_{plan.valset.name}_"
    evals = [h for h in trainer.state.log_history if prefix + PRIMARY in h]
    epochs: list[dict[str, Any]] = [
        {
            "epoch": h.get("epoch"),
            "step": h.get("step"),
            **{k[len(prefix) :]: v for k, v in h.items() if k.startswith(prefix)},
        }
        for h in evals
    ]
    best = max(epochs, key=lambda e: e[PRIMARY]) if epochs else None
    # train_runtime includes the per-epoch validation; report training alone as well
    # this session's share of a resumed run
    start = int(Path(last).name.rsplit("-", 1)[-1]) if last else 0
    eval_s = sum(h.get("eval_runtime", 0.0) for h in evals if (h.get("step") or 0) > start)
    runtime = out.metrics.get("train_runtime") or 0.0
    train_only = max(runtime - eval_s, 1e-9)
    done_steps = trainer.state.global_step - start
    result = {
        "target": plan.target,
        "relations": plan.relations,
        "trial": index,
        "hyperparameters": trial.to_dict(),
        "frozen_layers": frozen,
        "n_pairs": len(plan.pairs),
        "validation": plan.valset.summary(),
        "baseline": baseline,
        "epochs": epochs,
        "best": best,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "beats_baseline": bool(best and best[PRIMARY] > baseline[PRIMARY]),
        "throughput": {
            "train_runtime_s": out.metrics.get("train_runtime"),
            "train_samples_per_s": out.metrics.get("train_samples_per_second"),
            "train_steps_per_s": out.metrics.get("train_steps_per_second"),
            "global_steps": trainer.state.global_step,
            "validation_s": eval_s,
            "train_only_s": train_only,
            "train_only_steps_per_s": done_steps / train_only if runtime else None,
            "train_only_samples_per_s": (
                min(done_steps * trial.batch_size, len(plan.pairs) * trial.epochs) / train_only
                if runtime and not last
                else None
            ),
            "wall_s": wall,
            "resumed_from": last,
            "device": str(model.device),
            "cpu": cpu_summary(),
            "world_size": args.world_size,
        },
        "signature": sig,
        "provenance": stamp("train", config.digest("train")),
    }
    if trainer.is_world_process_zero():
        best_dir, tmp = tdir / "best", tdir / ".best.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        trainer.model.save(str(tmp))  # load_best_model_at_end restored the best epoch
        (tmp / TRAINING_META).write_text(json.dumps(result, indent=2, default=str))
        shutil.rmtree(best_dir, ignore_errors=True)
        os.replace(tmp, best_dir)
        for name, doc in (
            ("config.json", {"config": config.to_dict(), "trial": trial.to_dict()}),
            ("log.json", trainer.state.log_history),
            ("metrics.json", result),
        ):
            write_text_atomic(tdir / name, json.dumps(doc, indent=2, default=str))
        shutil.rmtree(ckpt_dir, ignore_errors=True)  # the finished trial no longer needs them
    return result


# ------------------------------------------------------------------ selection


def select_best(
    models: ModelsDir,
    target: str,
    results: list[dict[str, Any]],
    bm25: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Link the trial with the best validation MRR@10 as ``<target>/best``; write selection.json
    with every trial's score, the untuned baseline's and BM25's on the same validation set
    (``bm25_val``: all of BM25's metrics, so a multi-relation target keeps BM25 per relation)."""
    target_dir = models.target(target)
    scored = [r for r in results if r.get("best")]
    if not scored:
        raise TrainingError(f"{target_dir}: no trial produced a validation score")
    winner = max(scored, key=lambda r: r["best"][PRIMARY])
    link = models.best(target)
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)
    src = models.trial(target, winner["trial"]) / "best"
    try:
        link.symlink_to(src.relative_to(target_dir), target_is_directory=True)
    except OSError:  # filesystems without symlinks
        shutil.copytree(src, link)
    selection = {
        "target": winner["target"],
        "selected_trial": winner["trial"],
        "selected_on": f"validation {PRIMARY}",
        f"bm25_val_{PRIMARY}": bm25[PRIMARY] if bm25 else None,
        "bm25_val": bm25,
        "model_dir": str(link),
        "trials": [
            {
                "trial": r["trial"],
                "hyperparameters": r["hyperparameters"],
                f"val_{PRIMARY}": r["best"][PRIMARY] if r.get("best") else None,
                f"baseline_val_{PRIMARY}": r["baseline"][PRIMARY],
                "best_epoch": r["best"]["epoch"] if r.get("best") else None,
            }
            for r in results
        ],
    }
    write_text_atomic(models.selection(target), json.dumps(selection, indent=2))
    return selection


def train(
    config: RunConfig,
    relation: str,
    *,
    unified: bool = False,
    progress: bool = True,
    callbacks: Sequence[Any] = (),
    resume: bool = True,
) -> dict[str, dict[str, Any]]:
    """Train every grid trial for ``relation`` (or ``all``) and select the best of each target:
    ``{target: selection}``, a target being a relation or ``unified``."""
    code_version()  # cached now: a commit landing during a long run must not relabel it
    plans = make_plans(config, relation, unified)
    models = RunDir.of(config).trained
    out: dict[str, dict[str, Any]] = {}
    for plan in plans:
        results = [
            run_trial(config, plan, i, trial, progress=progress, callbacks=callbacks, resume=resume)
            for i, trial in plan.trials
        ]
        bm25 = bm25_validation(plan.valset, plan.query_prefixes, plan.doc_prefix)
        out[plan.target] = select_best(models, plan.target, results, bm25)
        out[plan.target]["results"] = results
    return out


def summary_rows(selections: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per target: selected trial, validation MRR@10 before/after, throughput."""
    rows = []
    for target, sel in selections.items():
        res = next(r for r in sel["results"] if r["trial"] == sel["selected_trial"])
        rows.append(
            {
                "target": target,
                "trial": sel["selected_trial"],
                "n_pairs": res["n_pairs"],
                f"baseline_val_{PRIMARY}": res["baseline"][PRIMARY],
                f"val_{PRIMARY}": res["best"][PRIMARY],
                **{
                    k: res["throughput"][k]
                    for k in ("train_steps_per_s", "train_samples_per_s", "wall_s")
                },
                "model_dir": sel["model_dir"],
            }
        )
    return rows
