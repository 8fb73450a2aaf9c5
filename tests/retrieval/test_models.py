from __future__ import annotations

import pytest

from ratio.retrieval.models import (
    GENERIC_PREFIXES,
    KNOWN_MODELS,
    STELLA_S2P,
    ModelNotFoundError,
    model_key,
    prefixes,
    resolve_model,
)
from tests.conftest import MODELS


def test_recommended_prefixes():
    assert prefixes(KNOWN_MODELS["modernbert-embed-large"], "recommended") == (
        "search_query: ",
        "search_document: ",
    )
    q, d = prefixes(KNOWN_MODELS["stella_en_1.5B_v5"], "recommended")
    assert q == STELLA_S2P and q.endswith("\nQuery: ") and d == ""
    assert prefixes(KNOWN_MODELS["all-mpnet-base-v2"], "recommended") == ("", "")
    assert prefixes(KNOWN_MODELS["all-mpnet-base-v2"], "generic") == GENERIC_PREFIXES
    assert prefixes(KNOWN_MODELS["all-mpnet-base-v2"], "none") == ("", "")


def test_unknown_model_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("RATIO_MODELS", str(tmp_path))
    with pytest.raises(ModelNotFoundError, match=str(tmp_path)):
        resolve_model("no-such-model")


def test_resolve_from_env_dir_and_path(tmp_path, monkeypatch):
    d = tmp_path / "my-model"
    d.mkdir()
    (d / "config.json").write_text('{"model_type": "model2vec"}')
    monkeypatch.setenv("RATIO_MODELS", str(tmp_path))
    path, spec = resolve_model("my-model")
    assert path == d.resolve() and spec.name == "my-model" and spec.static
    assert resolve_model(str(d))[0] == d.resolve()
    k1 = model_key(d)
    (d / "model.safetensors").write_bytes(b"x" * 10)
    assert model_key(d) != k1 and model_key(d).startswith("my-model-")


@pytest.mark.skipif(not (MODELS / "potion-mpnet-256").is_dir(), reason="model not downloaded")
def test_repo_models_resolve():
    path, spec = resolve_model("potion-mpnet-256")
    assert path.name == "potion-mpnet-256" and spec.static


def test_model_key_differs_for_same_sized_weights(tmp_path):
    """Two fine-tunes of one backbone have equal file sizes; their caches must not collide."""
    from ratio.retrieval.models import model_key

    keys = set()
    for rel, payload in (("address", b"\x00" * 64), ("broaden", b"\x01" * 64)):
        d = tmp_path / rel / "best"
        d.mkdir(parents=True)
        (d / "model.safetensors").write_bytes(payload)
        keys.add(model_key(d))
    assert len(keys) == 2
