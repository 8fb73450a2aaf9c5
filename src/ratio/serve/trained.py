"""Which trained model serves each move, read from what the training stage wrote.

Training (:mod:`ratio.training.train`) leaves, per move, the selected model as
``<train.out>/<move>/best`` with its training record (:data:`TRAINING_META`) inside and
``selection.json`` beside it (validation MRR@10 of the tuned model, its untuned base
and BM25). The service reads both to decide what ``auto`` means for a move.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ratio.config import RunConfig
from ratio.records import RELATIONS
from ratio.run import ModelsDir, RunDir
from ratio.training.train import PRIMARY, TRAINING_META

PREFIXES = ("none", "generic", "recommended")


@dataclass
class TrainedModel:
    """A move's fine-tuned model as the training stage left it, with its validation record."""

    path: Path
    prefix: str = "none"  # prefix setup it was trained with (none | generic | recommended)
    base_model: str = ""  # the untuned model it started from
    val: float | None = None  # validation MRR@10 of the tuned model
    baseline_val: float | None = None  # the untuned base model, same validation set
    bm25_val: float | None = None  # BM25-unigram, same validation set

    @property
    def worse_than_baseline(self) -> bool:
        """It lost to the untuned model or to BM25 on validation: ``auto`` will not serve it."""
        if self.val is None:
            return False  # no selection record: trust the training stage's choice
        return any(b is not None and self.val < b for b in (self.baseline_val, self.bm25_val))

    @property
    def auto_choice(self) -> str:
        """The best of tuned, untuned base and BM25 on validation MRR@10 (ties: the simpler)."""
        scores = {"bm25": self.bm25_val, "baseline": self.baseline_val, "trained": self.val}
        known = {k: v for k, v in scores.items() if v is not None}
        if "trained" not in known:
            return "trained"
        return max(known, key=lambda k: (known[k], -list(scores).index(k)))


def find_trained(cfg: RunConfig) -> dict[str, TrainedModel]:
    """Each move's trained model: ``<train.out>/<move>/best`` (the training stage's layout,
    ``<build.out>/models/<base>-<prefix>`` by default), else ``<build.out>/models/<move>/best``.

    The prefix and base model come from the model's training record (``TRAINING_META``), the
    validation scores from ``selection.json`` next to it.
    """
    run = RunDir.of(cfg)
    found: dict[str, TrainedModel] = {}
    for move in RELATIONS:
        for models in (run.trained, run.models):
            t = _trained(models, move, cfg.train.prefix)
            if t is not None:
                found[move] = t
                break
    return found


def _trained(models: ModelsDir, move: str, default_prefix: str) -> TrainedModel | None:
    d = models.best(move)
    if not ((d / "modules.json").is_file() or (d / "config.json").is_file()):
        return None
    t = TrainedModel(d, default_prefix)
    try:
        sig = json.loads((d / TRAINING_META).read_text()).get("signature", {})
        t.prefix = sig.get("prefix", t.prefix)
        t.base_model = sig.get("base_model", "")
    except (OSError, ValueError):
        pass
    try:
        sel = json.loads(models.selection(move).read_text())
        trial = next(x for x in sel["trials"] if x["trial"] == sel["selected_trial"])
        t.val, t.baseline_val = trial[f"val_{PRIMARY}"], trial[f"baseline_val_{PRIMARY}"]
        t.bm25_val = sel.get(f"bm25_val_{PRIMARY}")
    except (OSError, ValueError, KeyError, StopIteration, TypeError):
        pass
    t.prefix = t.prefix if t.prefix in PREFIXES else "none"
    return t
