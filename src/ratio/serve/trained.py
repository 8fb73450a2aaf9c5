"""Which trained model serves each move, read from what the training stage wrote.

Training leaves under ``<train.out>`` a **specialist** per move at ``<move>/best`` (validation
on the move's sub-pool: 5,000 random candidates plus its golds) and one **unified** model at
``unified/best``, trained on every move with the move as a query instruction (validation on one
sub-pool for all moves, 6,019 on the NeurIPS run, so its scores and a specialist's come from
slightly different pools). A **shipped** model (``models/ratio-moves-*-v<N>``, see
:mod:`ratio.retrieval.shipped`) carries the same record as the unified one. :func:`validation_winner`
turns these records into what ``auto`` serves for a move, comparing scores measured on one
validation pool only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratio.core.config import RunConfig
from ratio.core.layout import UNIFIED, RunDir
from ratio.core.records import RELATIONS
from ratio.retrieval.models import PREFIX_SETUPS, models_dirs
from ratio.retrieval.shipped import ShippedModelError, latest, load_shipped
from ratio.runner.stages import read_json
from ratio.training.data import unified_prefixes
from ratio.training.train import TRAINING_META
from ratio.training.validation import PRIMARY, relation_metric

# what ``auto`` chooses among; a tie goes to the earlier. The untuned base model is simpler
# than any trained one; the unified model is cheaper to serve than a specialist: one pool
# index and one model in memory serve every move that uses it.
# The shipped model comes before a locally trained unified model: a tie means the local
# run reproduced it.
AUTO_CHOICES = ("bm25", "baseline", "shipped", "unified", "trained")


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
    pool: dict[str, Any] | None = None  # the validation set the scores come from (its summary)
    name: str = ""  # a shipped model's folder name (its index is named after it)
    card: Path | None = None  # a shipped model's card

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
        t.pool = meta.get("validation")
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
        t.pool = meta.get("validation")
        t.val = _score(meta.get("best"), move)
        t.baseline_val = _score(meta.get("baseline"), move)
        t.bm25_val = _score(sel.get("bm25_val"), move)
        if t.bm25_val is None and sel.get(f"bm25_val_{PRIMARY}") is not None:
            t.bm25_val, t.bm25_overall = sel[f"bm25_val_{PRIMARY}"], True
    return found


def shipped_folder(cfg: RunConfig) -> Path | None:
    """The folder ``[serve] shipped`` names: ``latest`` (the newest version under the model
    directories), a folder name there, a path, or ``none``."""
    choice = (cfg.serve.shipped or "none").strip()
    if choice.lower() == "none":
        return None
    if choice == "latest":
        return latest(models_dirs())
    direct = Path(choice).expanduser()
    for p in [direct if direct.is_absolute() else cfg.resolve(choice)] + [
        d / choice for d in models_dirs()
    ]:
        if p.is_dir():
            return p
    raise ShippedModelError(
        f"[serve] shipped = {choice!r}: no such folder (looked in "
        f"{', '.join(str(d) for d in models_dirs())}); use latest, a folder or none"
    )


def find_shipped(cfg: RunConfig) -> dict[str, TrainedModel]:
    """The shipped model once per move, verified (a broken folder raises, never falls back)."""
    folder = shipped_folder(cfg)
    if folder is None:
        return {}
    s = load_shipped(folder)
    scores = s.validation
    found = {}
    for move in RELATIONS:
        found[move] = TrainedModel(
            path=s.path,
            prefix=s.record.get("prefix", "none"),
            base_model=s.base_model,
            val=(scores.get("model") or {}).get(move),
            baseline_val=(scores.get("baseline") or {}).get(move),
            bm25_val=(scores.get("bm25") or {}).get(move),
            instruction=s.instructions[move],
            pool=s.validation_pool,
            name=s.name,
            card=s.card,
        )
    return found


def common_pool(
    specialist: TrainedModel | None,
    unified: TrainedModel | None,
    shipped: TrainedModel | None = None,
) -> dict[str, Any] | None:
    """The one validation pool ``auto`` compares on: the locally trained unified model's (this
    run's data), else the shipped model's, else the specialist's (each specialist validates on
    its own move's sub-pool, so it is compared with the others only where pools agree)."""
    for t in (unified, shipped, specialist):
        if t is not None:
            return t.pool
    return None


def validation_scores(
    specialist: TrainedModel | None,
    unified: TrainedModel | None,
    shipped: TrainedModel | None = None,
) -> dict[str, float | None]:
    """Validation MRR@10 of each of :data:`AUTO_CHOICES` for one move on the common pool
    (None: not recorded there). BM25 and the untuned base get the best they reached on any
    record from that pool, so a trained model wins only by beating both."""
    pool = common_pool(specialist, unified, shipped)
    models = {"shipped": shipped, "unified": unified, "trained": specialist}
    same = {k: t for k, t in models.items() if t is not None and t.pool == pool}
    return {
        "bm25": _best(t.bm25_val for t in same.values()),
        "baseline": _best(t.baseline_val for t in same.values()),
        **{k: same[k].val if k in same else None for k in models},
    }


def validation_winner(
    specialist: TrainedModel | None,
    unified: TrainedModel | None,
    shipped: TrainedModel | None = None,
) -> str:
    """What ``auto`` serves for a move (one of :data:`AUTO_CHOICES`): the best on validation
    MRR@10 on the common pool, ties to the simpler, so a model that lost to BM25 or to its
    base is never served. Trained models without a validation record are served only when no
    model has one (the training stage chose them; nothing says otherwise), the specialist
    first."""
    scores = validation_scores(specialist, unified, shipped)
    known = {k: v for k, v in scores.items() if v is not None}
    if not {"trained", "unified", "shipped"} & set(known):
        return "trained" if specialist is not None else "unified" if unified else "shipped"
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
