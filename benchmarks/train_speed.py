"""Training speed per base model and precision, against all-MiniLM-L6-v2 in fp32, in one run.

Usage:
  .venv/bin/python benchmarks/train_speed.py [--config configs/neurips.toml]
      [--relation specify] [--models all-MiniLM-L6-v2,all-mpnet-base-v2]
      [--precisions fp32,bf16] [--batch-size 32] [--steps 12] [--max-seq-length 0]
      [--out FILE.json]

For each model and precision: the training recipe of ``ratio train`` (MNRL, scale 20,
duplicate-free batches, AdamW) on seeded (query, gold) pairs of the run's train split, for
``--steps`` optimizer steps. The first two steps are a warm-up and not timed. Reports
train-only samples/s (pairs per second) and the ratio to the first model's first precision.
It also prints, per tokenizer, the token lengths of the training sentences (p50 / p95 / p99 /
max), which is what ``train.max_seq_length`` should cover (``--max-seq-length 0``: each
model's p99, rounded up to a multiple of 8). State the CPU and the load with the numbers: the
script prints the CPU summary and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from ratio.core.config import load_config
from ratio.core.layout import RunDir
from ratio.retrieval.cpu import cpu_summary
from ratio.training.data import relation_pairs
from ratio.training.recipe import make_loss, st_class
from ratio.training.train import load_base_model

WARMUP_STEPS = 2


def token_lengths(model, texts: list[str]) -> np.ndarray:
    tok = model.tokenizer
    return np.array([len(tok(t, add_special_tokens=True)["input_ids"]) for t in texts])


def measure(model_name, precision, pairs, args) -> dict:
    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from transformers import TrainerCallback

    model = load_base_model(model_name, 512)
    texts = [t for p in pairs for t in p]
    lengths = token_lengths(model, texts)
    p99 = int(np.percentile(lengths, 99))
    seq = args.max_seq_length or -(-p99 // 8) * 8
    model.max_seq_length = seq
    marks: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):
            marks.append(time.perf_counter())

    BatchSamplers = st_class(("base.sampler", "BatchSamplers"), ("training_args", "BatchSamplers"))
    targs = SentenceTransformerTrainingArguments(
        output_dir=str(Path(args.tmp) / "ckpt"),
        max_steps=args.steps,
        per_device_train_batch_size=args.batch_size,
        learning_rate=2e-5,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        seed=13,
        disable_tqdm=True,
        dataloader_pin_memory=False,
        bf16=precision == "bf16",
        use_cpu=not torch.cuda.is_available(),
    )
    cfg = load_config(None, {"train.loss": "mnrl"})
    data = Dataset.from_dict({"anchor": [q for q, _ in pairs], "positive": [g for _, g in pairs]})
    trainer = SentenceTransformerTrainer(
        model=model,
        args=targs,
        train_dataset=data,
        loss=make_loss(model, cfg.train),
        callbacks=[Clock()],
    )
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    timed = marks[-1] - marks[WARMUP_STEPS - 1]
    steps = len(marks) - WARMUP_STEPS
    return {
        "model": model_name,
        "precision": precision,
        "max_seq_length": seq,
        "tokens": {
            "p50": int(np.percentile(lengths, 50)),
            "p95": int(np.percentile(lengths, 95)),
            "p99": p99,
            "max": int(lengths.max()),
        },
        "batch_size": args.batch_size,
        "timed_steps": steps,
        "samples_per_s": round(steps * args.batch_size / timed, 2),
        "steps_per_s": round(steps / timed, 3),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/neurips.toml")
    ap.add_argument("--relation", default="specify")
    ap.add_argument("--models", default="all-MiniLM-L6-v2,all-mpnet-base-v2")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--max-seq-length", type=int, default=0)
    ap.add_argument("--tmp", default="/tmp/ratio-train-speed")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    cfg = load_config(args.config)
    bench = RunDir.of(cfg).benchmark.load("train")
    _, queries, golds_ids = relation_pairs(bench, args.relation)
    texts = dict(
        zip(
            bench.candidates.column("candidate_id").to_pylist(),
            bench.candidates.column("text").to_pylist(),
            strict=True,
        )
    )
    rng = np.random.default_rng(13)
    n = args.steps * args.batch_size * 2
    idx = rng.choice(len(queries), size=min(n, len(queries)), replace=False)
    pairs = [(queries[i], texts[golds_ids[i]]) for i in idx]
    print(cpu_summary(), f"| load average before: {os.getloadavg()[0]:.2f}")
    rows = []
    for model in args.models.split(","):
        for precision in args.precisions.split(","):
            r = measure(model, precision, pairs, args)
            ref = rows[0]["samples_per_s"] if rows else r["samples_per_s"]
            r["ratio_to_reference"] = round(r["samples_per_s"] / ref, 2)
            rows.append(r)
            print(json.dumps(r))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print("\n| model | precision | max_seq_length (p99 tokens) | samples/s | steps/s | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['model']} | {r['precision']} | {r['max_seq_length']} ({r['tokens']['p99']}) "
            f"| {r['samples_per_s']} | {r['steps_per_s']} | {r['ratio_to_reference']} |"
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"cpu": cpu_summary(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
