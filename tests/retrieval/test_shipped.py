"""The move model committed under ``models/``: complete, verified, and better than what it
replaces on its own validation record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ratio.cli.checks import run_check
from ratio.core.records import RELATIONS
from ratio.retrieval.dense import Encoder
from ratio.retrieval.models import REPO_ROOT, SHIPPED_ALIAS, ModelNotFoundError, resolve_model
from ratio.retrieval.shipped import CARD, RECORD, latest, load_shipped

SHIPPED = latest([REPO_ROOT / "models"])
LIMIT_MB = 60  # every committed model file together (DEVELOPERS.md)

pytestmark = pytest.mark.skipif(SHIPPED is None, reason="no models/ratio-moves-*-v<N> folder")


def test_the_shipped_folder_verifies_and_fits_the_size_limit():
    s = load_shipped(SHIPPED)
    sizes = [f["bytes"] for f in s.record["files"].values()]
    assert sum(sizes) < LIMIT_MB * 1e6
    on_disk = {
        p.relative_to(SHIPPED).as_posix()
        for p in SHIPPED.rglob("*")
        if p.is_file() and p.name != RECORD
    }
    assert on_disk == set(s.record["files"])  # nothing unlisted travels with it
    assert CARD in on_disk and s.name in s.card.read_text()


def test_its_record_beats_bm25_and_the_base_on_every_move():
    """What ``auto`` decides on: the model's, the base's and BM25's validation MRR@10 on one
    pool. The card's test table says the same on the test split."""
    s = load_shipped(SHIPPED)
    val = s.validation
    for move in RELATIONS:
        assert val["model"][move] > max(val["bm25"][move], val["baseline"][move]), move
    assert s.validation_pool["per_relation"].keys() == set(RELATIONS)


def test_it_loads_in_float32_and_each_instruction_moves_the_query():
    enc = Encoder(str(SHIPPED), backend="torch")
    assert str(next(enc.model.parameters()).dtype) == "torch.float32"  # fp16 on disk only
    s = load_shipped(SHIPPED)
    q = "Large language models hallucinate facts about rare entities."
    vecs = enc.encode([s.instructions[m] + q for m in RELATIONS])
    assert vecs.shape == (3, enc.dim) and np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    cos = vecs @ vecs.T
    assert (cos[np.triu_indices(3, 1)] < 0.999).all()  # three different queries


def test_the_card_states_licence_and_training_data():
    record = json.loads((SHIPPED / RECORD).read_text())
    assert record["base_licence"] and record["training"]["pairs_per_move"]
    assert record["base_licence"] in load_shipped(SHIPPED).card.read_text()


def test_ratio_doctor_verifies_and_loads_it():
    check = run_check("shipped model")
    assert check.status == "ok", check.detail
    assert SHIPPED.name in check.detail and "every file verified" in check.detail


def test_model_shipped_in_a_config_names_the_newest_version(monkeypatch, tmp_path):
    assert resolve_model(SHIPPED_ALIAS)[0] == SHIPPED.resolve()
    monkeypatch.setattr("ratio.retrieval.models.models_dirs", lambda: [tmp_path])
    with pytest.raises(ModelNotFoundError, match="no models/ratio-moves-"):
        resolve_model(SHIPPED_ALIAS)
