"""Hyperparameter grids: the paper's Table 7 as the default, and config-given grids.

Table 7 lists three to five trials per (backbone, relation), seeded from published
recommendations. A config may replace them with its own ``[[train.grid]]`` entries
(e.g. a CPU-sized grid, or the much larger learning rates static embeddings need);
an entry may name the ``relations`` it applies to, otherwise it applies to all.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ratio.core.io import RatioError
from ratio.core.layout import UNIFIED
from ratio.core.records import RELATIONS


class GridError(RatioError):
    pass


@dataclass(frozen=True)
class Trial:
    """One hyperparameter configuration (a row of Table 7)."""

    epochs: int = 1
    batch_size: int = 32
    lr: float = 2e-5
    weight_decay: float = 0.0
    warmup_ratio: float = 0.0
    max_grad_norm: float = 1.0  # the transformers default when Table 7 says nothing
    freeze_ratio: float = 0.0  # fraction of the lowest transformer layers kept frozen
    rationale: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _t(ep: int, bs: int, lr: float, why: str, **reg: float) -> Trial:
    return Trial(epochs=ep, batch_size=bs, lr=lr, rationale=why, **reg)


# Table 7 of the paper, by backbone family and relation. wd=weight_decay,
# wu=warmup_ratio, mgn=max_grad_norm, frz=freeze_ratio.
TABLE7: dict[str, dict[str, list[Trial]]] = {
    "mpnet": {
        "broaden": [
            _t(4, 64, 2e-5, "best-so-far"),
            _t(3, 64, 2e-5, "published", weight_decay=0.01),
            _t(5, 64, 3e-5, "higher capacity"),
            _t(4, 16, 1e-5, "anti-overfit", weight_decay=0.01, freeze_ratio=0.15),
            _t(4, 32, 1e-5, "best-practice"),
        ],
        "address": [
            _t(1, 32, 3e-5, "prior winner"),
            _t(2, 32, 3e-5, "prior winner, more epochs"),
            _t(1, 16, 2e-5, "published", weight_decay=0.01),
            _t(1, 32, 1e-5, "probe"),
        ],
        "specify": [
            _t(1, 64, 2e-5, "prior regime"),
            _t(1, 16, 2e-5, "published", weight_decay=0.01),
            _t(1, 32, 3e-5, "improve"),
        ],
    },
    "modernbert": {
        "broaden": [
            _t(3, 32, 2e-5, "best-so-far"),
            _t(1, 32, 2e-5, "Nomic recipe", weight_decay=0.01, warmup_ratio=0.06),
            _t(5, 32, 3e-5, "higher capacity"),
            _t(4, 16, 1e-5, "anti-overfit", weight_decay=0.01, freeze_ratio=0.15),
            _t(3, 32, 8e-5, "probe", max_grad_norm=0.5),
        ],
        "address": [
            _t(1, 24, 3e-5, "prior winner"),
            _t(2, 24, 3e-5, "prior winner, more epochs"),
            _t(1, 16, 8e-5, "probe", max_grad_norm=0.5),
            _t(1, 16, 2e-5, "Nomic recipe", weight_decay=0.01, warmup_ratio=0.06),
        ],
        "specify": [
            _t(1, 24, 2e-5, "prior regime"),
            _t(1, 24, 3e-5, "improve"),
            _t(1, 16, 2e-5, "Nomic recipe", weight_decay=0.01, warmup_ratio=0.06),
        ],
    },
    "stella": {
        "broaden": [
            _t(5, 16, 2e-5, "higher capacity", max_grad_norm=0.5),
            _t(5, 16, 5e-6, "anti-overfit", freeze_ratio=0.75),
            _t(2, 16, 1e-5, "best-so-far", max_grad_norm=0.5),
            _t(2, 16, 2e-6, "reference"),
            _t(1, 4, 5e-5, "reference", warmup_ratio=0.05),
        ],
        "address": [
            _t(1, 16, 2e-6, "prior winner"),
            _t(2, 16, 2e-6, "prior winner, more epochs"),
            _t(1, 16, 2e-5, "improve", max_grad_norm=0.5),
            _t(1, 4, 5e-5, "reference", warmup_ratio=0.05),
        ],
        "specify": [
            _t(1, 16, 5e-6, "GTE recipe", weight_decay=0.01, warmup_ratio=0.05, max_grad_norm=0.5),
            _t(1, 8, 2e-5, "improve", weight_decay=0.01, warmup_ratio=0.05, max_grad_norm=0.5),
            _t(1, 4, 5e-5, "reference", warmup_ratio=0.05),
        ],
    },
}


def family(base_model: str) -> str:
    """Which Table 7 block a backbone uses; sentence-transformers models default to mpnet's."""
    name = base_model.lower()
    return next((f for f in ("modernbert", "stella") if f in name), "mpnet")


_KEYS = {f.name for f in fields(Trial)}


def parse_grid(entries: list[dict], relation: str) -> list[Trial]:
    """The config's ``[[train.grid]]`` entries for ``relation`` (or ``unified``), validated."""
    out = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise GridError(f"train.grid[{i}] must be a table, got {e!r}")
        unknown = sorted(set(e) - _KEYS - {"relations"})
        if unknown:
            raise GridError(
                f"unknown key(s) {', '.join(map(repr, unknown))} in train.grid[{i}]; "
                f"known keys: relations, {', '.join(sorted(_KEYS))}"
            )
        rels = e.get("relations", [])
        if not isinstance(rels, list) or any(r not in (*RELATIONS, UNIFIED) for r in rels):
            raise GridError(
                f"train.grid[{i}].relations must list relations from "
                f"{', '.join((*RELATIONS, UNIFIED))}, got {rels!r}"
            )
        if rels and relation not in rels:
            continue
        kw = {k: v for k, v in e.items() if k != "relations"}
        for k in ("epochs", "batch_size"):
            if k in kw and (not isinstance(kw[k], int) or isinstance(kw[k], bool) or kw[k] < 1):
                raise GridError(f"train.grid[{i}].{k} must be a positive integer, got {kw[k]!r}")
        for k in ("lr", "weight_decay", "warmup_ratio", "max_grad_norm", "freeze_ratio"):
            if k in kw:
                if not isinstance(kw[k], (int, float)) or isinstance(kw[k], bool) or kw[k] < 0:
                    raise GridError(f"train.grid[{i}].{k} must be a number >= 0, got {kw[k]!r}")
                kw[k] = float(kw[k])
        if kw.get("freeze_ratio", 0.0) >= 1.0:
            raise GridError(f"train.grid[{i}].freeze_ratio must be < 1, got {kw['freeze_ratio']}")
        out.append(Trial(**kw))
    return out


def trials_for(base_model: str, entries: list[dict], relation: str) -> list[Trial]:
    """The trials to run for ``relation``: the config's grid, else Table 7 for the backbone."""
    if entries:
        trials = parse_grid(entries, relation)
        if not trials:
            raise GridError(f"train.grid has no entry for relation {relation!r}")
        return trials
    # the unified model trains on every pair: by default it gets the Specify trials
    return list(TABLE7[family(base_model)]["specify" if relation == UNIFIED else relation])
