from __future__ import annotations

import pytest

from ratio.training.grids import TABLE7, GridError, family, parse_grid, trials_for


def test_table7_default_grid_sizes_and_a_row():
    sizes = {f: {r: len(t) for r, t in rels.items()} for f, rels in TABLE7.items()}
    assert sizes["mpnet"] == {"broaden": 5, "address": 4, "specify": 3}
    assert sizes["modernbert"] == {"broaden": 5, "address": 4, "specify": 3}
    assert sizes["stella"] == {"broaden": 5, "address": 4, "specify": 3}
    t = TABLE7["modernbert"]["broaden"][3]  # 4 16 1e-5 wd .01, frz .15 / anti-overfit
    assert (t.epochs, t.batch_size, t.lr, t.weight_decay, t.freeze_ratio) == (
        4,
        16,
        1e-5,
        0.01,
        0.15,
    )


def test_family_and_defaults():
    assert family("lightonai/modernbert-embed-large") == "modernbert"
    assert family("stella_en_1.5B_v5") == "stella"
    assert family("all-MiniLM-L6-v2") == "mpnet"
    assert trials_for("all-mpnet-base-v2", [], "address") == TABLE7["mpnet"]["address"]
    assert trials_for("all-mpnet-base-v2", [], "unified") == TABLE7["mpnet"]["specify"]


def test_config_grid_filters_by_relation_and_validates():
    entries = [{"epochs": 1, "lr": 1e-4}, {"epochs": 2, "relations": ["broaden"]}]
    assert [t.epochs for t in parse_grid(entries, "address")] == [1]
    assert [t.epochs for t in parse_grid(entries, "broaden")] == [1, 2]
    with pytest.raises(GridError, match="unknown key.*'learning_rate'"):
        parse_grid([{"learning_rate": 1e-5}], "address")
    with pytest.raises(GridError, match="batch_size must be a positive integer"):
        parse_grid([{"batch_size": 0}], "address")
    with pytest.raises(GridError, match="no entry for relation 'specify'"):
        trials_for("x", [{"relations": ["broaden"]}], "specify")
