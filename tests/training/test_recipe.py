"""The machine- and library-dependent choices of a trial: precision, loss, checkpoints."""

from __future__ import annotations

import pytest

from ratio.core.config import load_config
from ratio.training.data import TrainingError
from ratio.training.recipe import make_loss, use_bf16


def test_auto_precision_is_bf16_only_where_the_cpu_has_bf16_units(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert use_bf16("auto", frozenset({"avx2", "avx512_bf16"}))
    assert use_bf16("auto", frozenset({"avx2", "amx_bf16", "amx_tile"}))
    assert not use_bf16("auto", frozenset({"avx2", "fma", "avx512f", "avx512_vnni"}))
    assert use_bf16("bf16", frozenset()) and not use_bf16("fp32", frozenset({"amx_bf16"}))
    with pytest.raises(TrainingError, match="train.precision must be one of auto, fp32, bf16"):
        use_bf16("fp16")


def test_cached_mnrl_is_the_same_loss_as_mnrl(static_model):
    import torch

    from ratio.retrieval.models import ModelNotFoundError
    from ratio.training.train import load_base_model

    try:
        model = load_base_model("all-MiniLM-L6-v2", 64)
    except ModelNotFoundError:
        pytest.skip("all-MiniLM-L6-v2 is not fetched (scripts/fetch_models.py)")
    pairs = [
        ("privacy auditing in one training run", "we audit privacy with a single run"),
        ("reward models are over-optimized", "we regularize the policy toward the reference"),
        ("long contexts are slow", "we use sparse attention to cut the cost"),
        ("labels are noisy", "a robust loss downweights suspicious labels"),
    ]
    feats = [model.tokenize([p[i] for p in pairs]) for i in (0, 1)]
    labels = torch.zeros(len(pairs))
    losses = {}
    for kind in ("mnrl", "cached_mnrl"):
        cfg = load_config(None, {"train.loss": kind, "train.mini_batch_size": 2})
        losses[kind] = float(make_loss(model, cfg.train)(feats, labels).detach())
    assert losses["cached_mnrl"] == pytest.approx(losses["mnrl"], rel=1e-5)
    cfg = load_config(None, {"train.loss": "triplet"})
    with pytest.raises(TrainingError, match="train.loss must be one of mnrl, cached_mnrl"):
        make_loss(model, cfg.train)
    static = load_base_model(str(static_model))
    cfg = load_config(None, {"train.loss": "cached_mnrl"})
    with pytest.raises(TrainingError, match="train.loss = 'cached_mnrl': .*StaticEmbedding"):
        make_loss(static, cfg.train)
