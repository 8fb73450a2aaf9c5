"""`ratio serve --index-only` and `ratio mcp`'s wiring through the Typer app."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ratio.cli import app
from ratio.serve.engine import ServeError


def test_serve_index_only_builds_pool_and_reports(tiny_config, tmp_path):
    idx = tmp_path / "idx"
    args = ["serve", "--config", str(tiny_config), "--split", "train", "--index-dir", str(idx)]
    res = CliRunner().invoke(app, [*args, "--warm", "bm25", "--index-only"])
    assert res.exit_code == 0, res.output
    assert "180 candidates" in res.output and "address=bm25" in res.output
    assert (idx / "pool.arrow").is_file() and any((idx / "retrievers").iterdir())


def test_serve_unknown_split_is_a_user_error(tiny_config):
    res = CliRunner().invoke(app, ["serve", "--config", str(tiny_config), "--split", "nope"])
    assert isinstance(res.exception, ServeError)
    assert "splits with a pool: test, train" in str(res.exception)


@pytest.mark.parametrize("cmd", ["serve", "mcp"])
def test_commands_are_registered(cmd):
    res = CliRunner().invoke(app, [cmd, "--help"])
    assert res.exit_code == 0 and "--config" in res.output


def test_search_on_an_unbuilt_run_builds_it_first(neurips_slice, tmp_path):
    """A fresh checkout serves without `ratio build`: the engine runs the build first (the
    ingested collection is enough for source = sentences, but the build makes both)."""
    cfg = tmp_path / "fresh.toml"
    cfg.write_text(
        f'[corpus]\ninputs = ["{neurips_slice}"]\nformat = "ratio-jsonl"\n\n'
        f'[build]\nout = "run"\n\n[serve]\nretriever = "bm25"\nshipped = "none"\nsplit = "test"\n',
        encoding="utf-8",
    )
    res = CliRunner().invoke(app, ["search", "privacy of training data", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    assert "yet: building it first" in res.output
    assert (tmp_path / "run" / "benchmark" / "test" / "candidates.parquet").is_file()
    assert "address · bm25 · top" in res.output
