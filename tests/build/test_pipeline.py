from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ratio.build import build, check_leakage, export
from ratio.core.config import RunConfig, SplitConfig
from ratio.core.io import RatioError
from tests.build.conftest import D1, G1, G2, LEXICON_TSV, Q1, Q2, sentence_rows, write_shard

EXTRA = "In particular, the encoder shares weights across all the layers."


def shard_rows(year: int, paper: str) -> list[dict]:
    return sentence_rows(
        f"{paper}{year}",
        year,
        [
            [Q1 + f" ({paper}{year})", G1.replace("dropout", f"dropout {paper}{year}")],
            [
                Q2 + f" ({paper}{year})",
                G2.replace("local", f"local {paper}{year}"),
                D1.replace("exact", f"exact {paper}{year}"),
            ],
            [Q2 + f" [{paper}{year}]", EXTRA.replace("encoder", f"encoder {paper}{year}")],
        ],
    )


def make_run(tmp_path: Path, lexicon_path: Path, workers: int = 1) -> RunConfig:
    cfg = RunConfig()
    cfg.build.out = str(tmp_path / "run")
    cfg.lexicon.path = str(lexicon_path)
    cfg.split = SplitConfig(train_end="2023", validation_end="2024", test_end="2025")
    cfg.ingest.workers = workers
    sents = tmp_path / "run" / "ingest" / "sentences"
    write_shard(sents, "s-2023", shard_rows(2023, "a") + shard_rows(2023, "b"))
    write_shard(sents, "s-2024", shard_rows(2024, "a"))
    write_shard(sents, "s-2025", shard_rows(2025, "a") + shard_rows(2025, "b"))
    return cfg


def mtimes(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_build_then_rebuild_does_no_work(tmp_path, lexicon_path):
    cfg = make_run(tmp_path, lexicon_path)
    r1 = build(cfg, progress=False)
    assert r1.ran == ["mine", "dedup", "split", "export", "reports"]
    assert r1.mined_shards == ["s-2023", "s-2024", "s-2025"]
    assert r1.counts["train"]["queries"] == {"address": 2, "specify": 2}
    assert r1.counts["test"]["candidates_by_origin"] == {
        "address": 2,
        "explicit_contrast": 2,
        "specify": 2,
    }
    out = Path(cfg.build.out)
    assert check_leakage(out / "benchmark") == 0
    assert (
        "final leakage (texts shared with an earlier split): **0**"
        in (out / "reports" / "build.md").read_text()
    )
    assert (out / "export" / "beir" / "test" / "specify" / "qrels" / "test.tsv").exists()
    table2 = (out / "reports" / "table2.md").read_text()
    assert (
        "| Manual | 1 | 1 | 1 | 0 | 3 | 1 | 5 | 2 |" in table2
    )  # address/broaden/specify cand vs data
    assert "| Explicit contrast | 1 | 1 |" in table2
    before = mtimes(out)
    r2 = build(cfg, progress=False)
    assert r2.ran == [] and r2.mined_shards == [] and len(r2.reused_shards) == 3
    assert r2.counts == r1.counts
    after = mtimes(out)
    assert after == before


def test_lexicon_change_reruns_mining_and_downstream(tmp_path, lexicon_path):
    cfg = make_run(tmp_path, lexicon_path)
    r1 = build(cfg, progress=False)
    assert "specify" in r1.counts["test"]["queries"]
    n_specify = r1.counts["test"]["queries"]["specify"]
    lexicon_path.write_text(LEXICON_TSV + "in particular\tspecify\tmanual\t\n", encoding="utf-8")
    r2 = build(cfg, progress=False)
    assert r2.lexicon_version != r1.lexicon_version
    assert r2.ran == ["mine", "dedup", "split", "export", "reports"]
    assert r2.mined_shards == ["s-2023", "s-2024", "s-2025"]
    assert r2.counts["test"]["queries"]["specify"] == n_specify + 2
    meta = json.loads((Path(cfg.build.out) / "benchmark" / "manifest.json").read_text())
    assert meta["lexicon_version"] == r2.lexicon_version


def test_split_change_keeps_mining_and_one_shard_change_remines_that_shard(tmp_path, lexicon_path):
    cfg = make_run(tmp_path, lexicon_path)
    build(cfg, progress=False)
    cfg.split = SplitConfig(train_end="2024", validation_end="2025-06", test_end="2025")
    r = build(cfg, progress=False)
    assert r.ran == ["split", "export", "reports"]
    assert r.counts["train"]["queries"] == {"address": 3, "specify": 3}
    # a changed shard is re-mined alone; its content, not its mtime, is the fingerprint
    sents = Path(cfg.build.out) / "ingest" / "sentences"
    write_shard(
        sents, "s-2023", shard_rows(2023, "a") + shard_rows(2023, "b")
    )  # same content, new mtime
    assert build(cfg, progress=False).ran == []
    write_shard(sents, "s-2024", shard_rows(2024, "c"))
    r = build(cfg, progress=False)
    assert r.mined_shards == ["s-2024"] and "mine" in r.ran and "dedup" in r.ran


def test_process_pool_mining_and_removed_shard(tmp_path, lexicon_path):
    cfg = make_run(tmp_path, lexicon_path, workers=2)
    r = build(cfg, progress=False)
    assert r.mined_shards == ["s-2023", "s-2024", "s-2025"]
    out = Path(cfg.build.out)
    (out / "ingest" / "sentences" / "s-2025.parquet").unlink()
    r = build(cfg, progress=False)
    assert not (out / "mine" / "s-2025.parquet").exists()
    assert r.counts["test"]["queries_total"] == 0
    mined = pq.read_table(out / "mine" / "s-2023.parquet")
    assert mined.schema.metadata[b"ratio.stage"] == b"mine"


def test_missing_sentences_and_export_without_build(tmp_path, lexicon_path):
    cfg = RunConfig()
    cfg.build.out = str(tmp_path / "empty")
    cfg.lexicon.path = str(lexicon_path)
    with pytest.raises(RatioError, match="no sentence shards"):
        build(cfg, progress=False)
    with pytest.raises(RatioError, match="ratio build"):
        export(cfg)


def test_cli_build_and_export(tmp_path, lexicon_path):
    from typer.testing import CliRunner

    from ratio.cli import app

    cfg = make_run(tmp_path, lexicon_path)
    toml = tmp_path / "run.toml"
    toml.write_text(
        f'[build]\nout = "run"\n[lexicon]\npath = "{lexicon_path}"\n'
        '[split]\ntrain_end = "2023"\nvalidation_end = "2024"\ntest_end = "2025"\n[ingest]\nworkers = 1\n'
    )
    runner = CliRunner()
    res = runner.invoke(app, ["build", "--config", str(toml)])
    assert res.exit_code == 0, res.output
    assert str(Path(cfg.build.out)) in res.output
    res = runner.invoke(app, ["export", "beir", "--config", str(toml)])
    assert res.exit_code == 0 and "up to date" in res.output


def raw_papers_run(tmp_path: Path, lexicon_path: Path) -> RunConfig:
    """A run config over three ratio-jsonl papers (2023, 2024, 2025) that go through ingest."""
    papers = []
    for i, year in enumerate((2023, 2024, 2025)):
        body = (
            f"## Method\n\n{Q1[:-1]} in paper {i}. "
            f"To address this issue, we apply dropout to every layer of model {i}.\n\n"
            f"{Q2[:-1]} in paper {i}. "
            f"On the other hand, dense attention is exact but slow for paper {i}.\n"
        )
        papers.append(
            {
                "id": f"p{i}",
                "title": f"Paper {i}",
                "year": year,
                "venue": "NeurIPS",
                "extractor": "nougat",
                "text": f"## Paper {i}\n\n{body}",
            }
        )
    src = tmp_path / "papers.jsonl"
    src.write_text("\n".join(json.dumps(p) for p in papers) + "\n")
    cfg = RunConfig()
    cfg.corpus.inputs = [str(src)]
    cfg.corpus.format = "ratio-jsonl"
    cfg.build.out = str(tmp_path / "run")
    cfg.lexicon.path = str(lexicon_path)
    cfg.split = SplitConfig(train_end="2023", validation_end="2024", test_end="2025")
    cfg.ingest.workers = 1
    return cfg


def test_build_from_raw_papers_through_ingest(tmp_path, lexicon_path):
    """End to end: ratio-jsonl papers -> the lead's ingest -> mine -> split -> export."""
    cfg = raw_papers_run(tmp_path, lexicon_path)
    r = build(cfg, progress=False)
    assert r.ran[0] == "ingest" and "export" in r.ran
    for split in ("train", "validation", "test"):
        assert r.counts[split]["queries"] == {"address": 1}, split
        assert r.counts[split]["candidates_by_origin"] == {"address": 1, "explicit_contrast": 1}
    assert build(cfg, progress=False).ran == []


def test_run_dir_from_before_the_stage_runner_is_up_to_date(tmp_path, lexicon_path):
    """Records as the code before ``ratio.runner.stages`` wrote them are still trusted: only the key
    and the outputs decide, so an existing run directory is not rebuilt."""
    cfg = raw_papers_run(tmp_path, lexicon_path)
    build(cfg, progress=False)
    out = Path(cfg.build.out)
    manifest = out / "ingest" / "manifest.json"
    m = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({k: m[k] for k in ("key", "sentences", "finalize_drops")}))
    for marker in [*(out / "ingest" / "raw").glob("*.done.json")]:
        done = json.loads(marker.read_text())
        del done["code_version"]
        marker.write_text(json.dumps({**done, "reused": False}, indent=1))
    before = mtimes(out)
    r = build(cfg, progress=False)
    assert r.ran == [] and r.stages["ingest"].detail["sentences"] == m["sentences"]
    after = mtimes(out)
    stats = str(out / "ingest" / "stats.json")  # rewritten by every ingest run
    assert {k: v for k, v in after.items() if k != stats} == {
        k: v for k, v in before.items() if k != stats
    }


def test_reports_carry_marker_counts_and_provenance(tmp_path, lexicon_path):
    cfg = make_run(tmp_path, lexicon_path)
    build(cfg, progress=False)
    reports = Path(cfg.build.out) / "reports"
    rows = [line.split("\t") for line in (reports / "markers.tsv").read_text().splitlines()]
    assert rows[0] == ["marker", "relation", "source", "mined", "benchmark"]
    by_marker = {r[0]: r for r in rows[1:]}
    # 5 papers x 1 "to address this issue" pair each; all survive dedup and the split
    assert by_marker["to address this issue"][1:] == ["address", "manual", "5", "5"]
    assert "ratio.lexicon_version=" in (reports / "table1.md").read_text()
