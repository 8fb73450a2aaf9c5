"""Which trained model serves each move, read from what the training stage wrote.

Training leaves under ``<train.out>`` a **specialist** per move at ``<move>/best`` (validation
on the move's sub-pool: 5,000 random candidates plus its golds) and one **unified** model at
``unified/best``, trained on every move with the move as a query instruction (validation on one
sub-pool for all moves, 6,019 on the NeurIPS run, so its scores and a specialist's come from
slightly different pools). :func:`validation_winner` turns their records into what ``auto``
serves for a move.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratio.config import RunConfig
from ratio.records import RELATIONS
from ratio.retrieval.models import PREFIX_SETUPS
from ratio.run import UNIFIED, RunDir
from ratio.stages import read_json
from ratio.training.data import unified_prefixes
from ratio.training.train import TRAINING_META
from ratio.training.validation import PRIMARY, relation_metric

# what ``auto`` chooses among; a tie goes to the earlier. The untuned base model is simpler
# than any trained one; the unified model is cheaper to serve than a specialist: one pool
# index and one model in memory serve every move that uses it.
AUTO_CHOICES = ("bm25", "baseline", "unified", "trained")


@dataclass
class TrainedModel:
    """A fine-tuned model as the training stage left it, with its validation record for one
    move (the unified model appears once per move, each with that move's scores)."""

    path: Path
    prefix: str = "none"  # prefix setup it was trained with (none | generic | recommended)
    base_model: str = ""  # the untuned model it started from
    val: float | None = None  # validation MRR@10 of the tuned model
    baseline_val: float | None = None  # the untuned base model, same validation set
    bm25_val: float | None = None  # BM25-unigram, same validation set
    instruction: str = ""  # unified model: the move's query instruction (replaces the prefix)
    bm25_overall: bool = False  # bm25_val is BM25's average over the moves (no per-move record)

    @property
    def worse_than_baseline(self) -> bool:
        """It lost to the untuned model or to BM25 on validation: ``auto`` will not serve it."""
        if self.val is None:
            return False  # no selection record: trust the training stage's choice
        return any(b is not None and self.val < b for b in (self.baseline_val, self.bm25_val))


def find_trained(cfg: RunConfig) -> dict[str, TrainedModel]:
    """Each move's specialist: ``<train.out>/<move>/best``, else ``<build.out>/models/<move>/best``,
    with its validation scores from ``selection.json`` next to it."""
    found: dict[str, TrainedModel] = {}
    for move in RELATIONS:
        records = _records(cfg, move)
        if records is None:
            continue
        path, meta, sel = records
        t = found[move] = _model(path, meta, cfg.train.prefix)
        try:
            trial = next(x for x in sel["trials"] if x["trial"] == sel["selected_trial"])
            t.val, t.baseline_val = trial[f"val_{PRIMARY}"], trial[f"baseline_val_{PRIMARY}"]
            t.bm25_val = sel.get(f"bm25_val_{PRIMARY}")
        except (KeyError, StopIteration, TypeError):
            pass
    return found


def find_unified(cfg: RunConfig) -> dict[str, TrainedModel]:
    """The unified model once per move (same folder, that move's instruction and scores);
    empty without one. BM25's score for a move is BM25's on that move when training recorded
    it, else (older runs) its average over the moves, flagged ``bm25_overall``."""
    records = _records(cfg, UNIFIED)
    if records is None:
        return {}
    path, meta, sel = records
    instructions = _signature(meta).get("query_prefixes") or unified_prefixes(
        cfg.train.unified_instruction
    )
    found: dict[str, TrainedModel] = {}
    for move in RELATIONS:
        t = found[move] = _model(path, meta, cfg.train.prefix)
        t.instruction = instructions.get(move, "")
        t.val = _score(meta.get("best"), move)
        t.baseline_val = _score(meta.get("baseline"), move)
        t.bm25_val = _score(sel.get("bm25_val"), move)
        if t.bm25_val is None and sel.get(f"bm25_val_{PRIMARY}") is not None:
            t.bm25_val, t.bm25_overall = sel[f"bm25_val_{PRIMARY}"], True
    return found


def validation_scores(
    specialist: TrainedModel | None, unified: TrainedModel | None
) -> dict[str, float | None]:
    """Validation MRR@10 of each of :data:`AUTO_CHOICES` for one move (None: not recorded).
    BM25 and the untuned base get the best they reached on either record, so a trained model
    wins only by beating both wherever they were measured."""
    records = [t for t in (specialist, unified) if t is not None]
    return {
        "bm25": _best(t.bm25_val for t in records),
        "baseline": _best(t.baseline_val for t in records),
        "unified": unified.val if unified else None,
        "trained": specialist.val if specialist else None,
    }


def validation_winner(specialist: TrainedModel | None, unified: TrainedModel | None) -> str:
    """What ``auto`` serves for a move (one of :data:`AUTO_CHOICES`): the best on validation
    MRR@10, ties to the simpler. Trained models without a validation record are served only
    when no model has one (the training stage chose them; nothing says otherwise), the
    specialist first."""
    scores = validation_scores(specialist, unified)
    known = {k: v for k, v in scores.items() if v is not None}
    if "trained" not in known and "unified" not in known:
        return "trained" if specialist is not None else "unified"
    return max(known, key=lambda k: (known[k], -AUTO_CHOICES.index(k)))


def _records(cfg: RunConfig, target: str) -> tuple[Path, dict[str, Any], dict[str, Any]] | None:
    """A target's selected model folder, its training record and its selection record (``{}``
    where missing or unreadable); None when neither models folder holds a model for it."""
    run = RunDir.of(cfg)
    for models in (run.trained, run.models):
        d = models.best(target)
        if (d / "modules.json").is_file() or (d / "config.json").is_file():
            return d, _read_json(d / TRAINING_META), _read_json(models.selection(target))
    return None


def _signature(meta: dict[str, Any]) -> dict[str, Any]:
    sig = meta.get("signature")
    return sig if isinstance(sig, dict) else {}


def _model(path: Path, meta: dict[str, Any], default_prefix: str) -> TrainedModel:
    sig = _signature(meta)
    prefix = sig.get("prefix", default_prefix)
    prefix = prefix if prefix in PREFIX_SETUPS else "none"
    return TrainedModel(path, prefix, base_model=sig.get("base_model", ""))


def _read_json(path: Path) -> dict[str, Any]:
    data = read_json(path)
    return data if isinstance(data, dict) else {}


def _score(record: Any, move: str) -> float | None:
    """``move``'s primary metric in a multi-relation record, if it holds one."""
    v = record.get(relation_metric(move)) if isinstance(record, dict) else None
    return float(v) if isinstance(v, (int, float)) else None


def _best(values) -> float | None:
    return max((v for v in values if v is not None), default=None)
