from __future__ import annotations

import numpy as np
import pytest

from ratio.retrieval.cache import EmbeddingCache


def fake_encoder(calls: list[list[str]], fail_after: int | None = None):
    """A deterministic text -> vector function standing in for a model (cache logic only)."""

    def encode(texts: list[str]) -> np.ndarray:
        if fail_after is not None and len(calls) >= fail_after:
            raise KeyboardInterrupt("simulated interruption")
        calls.append(list(texts))
        out = np.zeros((len(texts), 4), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = [len(t), t.count("a"), t.count("e"), hash(t) % 97]
        return out

    return encode


TEXTS = [f"sentence number {i} about a topic" for i in range(20)]


def test_hits_skip_encoding_and_values_round_trip(tmp_path):
    calls: list[list[str]] = []
    c = EmbeddingCache(tmp_path, "model-x", "query: ", shard_size=8)
    first = c.get_or_encode(TEXTS, fake_encoder(calls))
    assert c.encoded == 20 and len(calls) == 3  # shards of 8, 8, 4
    assert calls[0][0].startswith("query: ")  # the encoder sees prefixed text
    again = EmbeddingCache(tmp_path, "model-x", "query: ").get_or_encode(TEXTS, fake_encoder(calls))
    assert len(calls) == 3
    np.testing.assert_array_equal(first, again)


def test_duplicates_and_partial_overlap_encode_only_new_texts(tmp_path):
    calls: list[list[str]] = []
    c = EmbeddingCache(tmp_path, "m", "")
    c.get_or_encode(TEXTS[:10] + TEXTS[:10], fake_encoder(calls))
    assert c.encoded == 10
    out = c.get_or_encode(TEXTS[5:15], fake_encoder(calls))
    assert c.encoded == 15 and out.shape == (10, 4)
    assert [t for call in calls for t in call] == TEXTS[:15]


def test_prefix_and_model_are_separate_keys(tmp_path):
    calls: list[list[str]] = []
    EmbeddingCache(tmp_path, "m", "").get_or_encode(TEXTS[:3], fake_encoder(calls))
    EmbeddingCache(tmp_path, "m", "document: ").get_or_encode(TEXTS[:3], fake_encoder(calls))
    EmbeddingCache(tmp_path, "m2", "").get_or_encode(TEXTS[:3], fake_encoder(calls))
    assert len(calls) == 3


def test_interrupted_encode_resumes_from_complete_shards(tmp_path):
    calls: list[list[str]] = []
    c = EmbeddingCache(tmp_path, "m", "", shard_size=5)
    with pytest.raises(KeyboardInterrupt):
        c.get_or_encode(TEXTS, fake_encoder(calls, fail_after=2))
    assert len(calls) == 2  # two shards (10 texts) made it to disk
    resumed = EmbeddingCache(tmp_path, "m", "", shard_size=5)
    assert len(resumed) == 10
    out = resumed.get_or_encode(TEXTS, fake_encoder(calls))
    assert resumed.encoded == 10 and out.shape == (20, 4)
    # vector shards are memory-mapped, not loaded
    assert all(isinstance(s, np.memmap) for s in resumed._shards)
