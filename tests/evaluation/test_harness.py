from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ratio.core import schemas
from ratio.core.config import load_config
from ratio.core.layout import BenchmarkError, RunDir
from ratio.evaluation.harness import EvaluationError, evaluate_systems
from tests.conftest import MODELS

# (relation, query, gold) triples; the last specify query shares no word with its gold
PAIRS = [
    (
        "address",
        "Transformers scale quadratically with sequence length.",
        "We propose linear attention kernels so transformers scale to long sequence length.",
    ),
    (
        "address",
        "Labelled medical images are scarce and expensive.",
        "We pretrain on unlabelled medical images with self-supervision to cut labelling cost.",
    ),
    (
        "address",
        "Reward models are easy to exploit during policy optimization.",
        "We regularize policy optimization with an ensemble of reward models.",
    ),
    (
        "specify",
        "Several tokenizers split numbers inconsistently.",
        "For example, the tokenizer splits numbers like 1234 into pieces 12 and 34.",
    ),
    (
        "specify",
        "Our method helps in many regimes.",
        "Concretely, on CIFAR-10 with 1% labels accuracy rises from 61.2 to 70.4.",
    ),
    (
        "broaden",
        "Dropout on attention weights reduced overfitting in our translation model.",
        "More generally, stochastic regularization of attention weights reduces overfitting.",
    ),
]
DISTRACTORS = [
    "Quadratic memory is a known limitation of attention.",
    "Medical imaging datasets often come from a single hospital.",
    "Policy gradient methods have high variance.",
    "Tokenizers are trained on web text.",
    "Translation quality is measured with BLEU.",
    "We thank the anonymous reviewers for their feedback.",
    "Code is available on GitHub.",
    "All experiments use three random seeds.",
    "The appendix lists hyperparameters for every model.",
    "Linear probes evaluate the learned representations.",
]


def write_benchmark(root, extra_candidates: list[str] = ()):  # type: ignore[assignment]
    d = root / "run" / "benchmark" / "test"
    d.mkdir(parents=True, exist_ok=True)
    q_rows, c_rows, r_rows = [], [], []
    for i, (rel, q, g) in enumerate(PAIRS):
        cid, qid = f"c{i:03d}", f"q{i:03d}"
        c_rows.append(
            dict(
                candidate_id=cid,
                text=g,
                paper_id=f"p{i}",
                year=2025,
                section_category="method",
                origin=rel,
                marker="m",
            )
        )
        q_rows.append(
            dict(
                query_id=qid,
                text=q,
                relation=rel,
                marker="m",
                paper_id=f"p{i}",
                year=2025,
                section_category="method",
                gold_id=cid,
            )
        )
        r_rows.append(dict(query_id=qid, candidate_id=cid, relevance=1))
    for j, t in enumerate([*DISTRACTORS, *extra_candidates]):
        c_rows.append(
            dict(
                candidate_id=f"x{j:03d}",
                text=t,
                paper_id=f"d{j}",
                year=2025,
                section_category="other",
                origin="common_irrelevant",
                marker=None,
            )
        )
    pq.write_table(pa.Table.from_pylist(q_rows, schemas.QUERIES), d / "queries.parquet")
    pq.write_table(pa.Table.from_pylist(c_rows, schemas.CANDIDATES), d / "candidates.parquet")
    pq.write_table(pa.Table.from_pylist(r_rows, schemas.QRELS), d / "qrels.parquet")
    return d


SYSTEMS = """
[[evaluate.systems]]
name = "bm25"
kind = "bm25"

[[evaluate.systems]]
name = "bm25-bi"
kind = "bm25"
ngram = 2

[[evaluate.systems]]
name = "hybrid (rrf)"
kind = "hybrid"
components = ["bm25", "bm25-bi"]
fusion = "rrf"

[[evaluate.systems]]
name = "bm25-small"
kind = "bm25"
max_pool = 9
"""


def make_config(tmp_path, systems: str = SYSTEMS, ks: str = "[1, 10, 100]"):
    p = tmp_path / "run.toml"
    p.write_text(
        f'[build]\nout = "run"\nseed = 7\n\n[evaluate]\nsplit = "test"\nout = "eval"\n'
        f'relations = ["specify", "address", "broaden"]\nks = {ks}\n{systems}'
    )
    return load_config(p)


def expected_bm25(tmp_path) -> dict[str, dict[str, float]]:
    """Metrics computed independently: bm25s's own ranking, gold rank -> recall / reciprocal rank."""
    import bm25s
    import Stemmer

    st = Stemmer.Stemmer("english")
    cands = [g for _, _, g in PAIRS] + DISTRACTORS
    model = bm25s.BM25()
    model.index(
        bm25s.tokenize(cands, stopwords="en", stemmer=st, show_progress=False), show_progress=False
    )
    out: dict[str, dict[str, list[float]]] = {}
    for i, (rel, q, _) in enumerate(PAIRS):
        toks = bm25s.tokenize(
            [q], stopwords="en", stemmer=st, return_ids=False, show_progress=False
        )[0]
        s = model.get_scores(toks)
        rank = int((s > s[i]).sum()) + 1 if s[i] > 0 else None
        m = out.setdefault(rel, {"recall@1": [], "recall@10": [], "mrr@10": [], "mrr@100": []})
        m["recall@1"].append(float(rank == 1))
        m["recall@10"].append(float(rank is not None and rank <= 10))
        m["mrr@10"].append(1 / rank if rank and rank <= 10 else 0.0)
        m["mrr@100"].append(1 / rank if rank else 0.0)
    return {rel: {k: float(np.mean(v)) for k, v in m.items()} for rel, m in out.items()}


def test_end_to_end_tables_runs_and_metrics(tmp_path):
    from ratio.evaluation.tables import ResultsTable
    from ratio.metrics.trec import read_run

    write_benchmark(tmp_path)
    cfg = make_config(tmp_path)
    res = evaluate_systems(cfg, progress=False)
    out = tmp_path / "eval"
    for f in ("results.md", "results.csv", "results.json"):
        assert (out / f).is_file()
    md = (out / "results.md").read_text()
    assert (
        "| System | Setup | Specify R@1 | Specify R@10 | Specify M@10 | Specify M@100 | Address R@1"
        in md
    )
    assert "n = 2 / 3 / 1 queries for Specify / Address / Broaden" in md
    assert "seeded sub-pool of 9 (seed 7)" in md  # the sub-pool is stated
    table = ResultsTable.from_json((out / "results.json").read_text())
    assert [r.system for r in table.rows] == ["bm25", "bm25-bi", "hybrid (rrf)", "bm25-small"]
    doc = json.loads((out / "results.json").read_text())
    assert doc["meta"]["oracle"] == "none" and len(doc["records"]) == 12

    expected = expected_bm25(tmp_path)
    for rel, metrics in expected.items():
        got = res.table("bm25", rel)
        for m, v in metrics.items():
            assert got[m] == pytest.approx(v), (rel, m)
    assert res.table("bm25", "address")["recall@1"] == 1.0
    assert res.table("bm25", "specify")["recall@10"] == 0.5  # the no-overlap query misses

    run = read_run(out / "runs" / "bm25.address.trec")
    assert sorted(run.query_ids) == ["q000", "q001", "q002"]
    assert run.ranked("q000")[0][0] == "c000"
    assert (out / "runs" / "hybrid-rrf.broaden.trec").is_file()  # file-safe name

    small = [r for r in res.rows if r["system"] == "bm25-small"]
    assert all(r["pool_size"] == 9 for r in small)
    ids = read_run(out / "runs" / "bm25-small.address.trec").doc_ids()
    assert {f"c{i:03d}" for i in range(6)} >= {d for d in ids[:, 0] if d.startswith("c")}


def test_index_cache_reused_and_invalidated(tmp_path):
    write_benchmark(tmp_path)
    cfg = make_config(tmp_path)
    evaluate_systems(cfg, systems=["bm25"], progress=False)
    meta = tmp_path / "run" / "indexes" / "bm25" / "test-shared" / "retriever.json"
    first = meta.stat().st_mtime_ns
    evaluate_systems(cfg, systems=["bm25"], progress=False)
    assert meta.stat().st_mtime_ns == first  # reloaded, not rebuilt
    write_benchmark(tmp_path, extra_candidates=["A new candidate sentence about attention."])
    evaluate_systems(cfg, systems=["bm25"], progress=False)
    assert json.loads(meta.read_text())["n_docs"] == 17  # pool changed: rebuilt


def test_sub_pool_is_seeded_and_keeps_golds(tmp_path):
    write_benchmark(tmp_path)
    cfg = make_config(tmp_path)
    a = evaluate_systems(cfg, systems=["bm25-small"], write=False, progress=False)
    b = evaluate_systems(cfg, systems=["bm25-small"], write=False, progress=False)
    assert [r["pool"] for r in a.rows] == [r["pool"] for r in b.rows]
    assert "all 6 golds of the evaluated queries + 3 random others" in a.rows[0]["pool"]


def test_oracle_pools(tmp_path):
    write_benchmark(tmp_path)
    cfg = make_config(tmp_path)
    rel = evaluate_systems(cfg, oracle="relation", systems=["bm25"], progress=False)
    sizes = {r["relation"]: r["pool_size"] for r in rel.rows}
    assert sizes == {"address": 3, "specify": 2, "broaden": 1}
    golds = evaluate_systems(cfg, oracle="golds", systems=["bm25"], progress=False)
    assert all("golds only" in r["pool"] for r in golds.rows)
    assert golds.table("bm25", "broaden")["recall@1"] == 1.0
    assert (tmp_path / "eval" / "runs" / "bm25.address.oracle-relation-address.trec").is_file()
    assert "Results on test (oracle pool: golds)" in (tmp_path / "eval" / "results.md").read_text()


def test_config_errors(tmp_path):
    cfg = make_config(tmp_path)
    with pytest.raises(BenchmarkError, match="benchmark/test/queries.parquet"):
        evaluate_systems(cfg)
    write_benchmark(tmp_path)
    with pytest.raises(EvaluationError, match="no system named"):
        evaluate_systems(cfg, systems=["nope"])
    dup = make_config(
        tmp_path, systems='[[evaluate.systems]]\nname="a"\n[[evaluate.systems]]\nname="a"\n'
    )
    with pytest.raises(EvaluationError, match="duplicate"):
        evaluate_systems(dup)
    with pytest.raises(EvaluationError, match="oracle"):
        evaluate_systems(cfg, oracle="bogus")


def test_evaluate_cli(tmp_path):
    from typer.testing import CliRunner

    from ratio.cli import app

    write_benchmark(tmp_path)
    make_config(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["evaluate", "--config", str(tmp_path / "run.toml"), "--system", "bm25"])
    assert r.exit_code == 0, r.output
    assert "| bm25 | unigram |" in r.output


def test_evaluate_cli_out_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    """``--out`` is typed from where the user stands, like ``ratio serve --candidates``; only
    paths inside the config are relative to the config file."""
    from typer.testing import CliRunner

    from ratio.cli import app

    write_benchmark(tmp_path)
    make_config(tmp_path)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    cfg = str(tmp_path / "run.toml")
    r = CliRunner().invoke(app, ["evaluate", "-c", cfg, "-s", "bm25", "--out", "mine"])
    assert r.exit_code == 0, r.output
    assert (cwd / "mine" / "results.md").is_file() and not (tmp_path / "mine").exists()


def test_cli_held_split_adds_the_held_queries_in_its_own_folder(tmp_path):
    """``--split test+held`` evaluates the held (needs_validation) test queries too, and writes
    beside ``evaluate.out`` instead of over the published split's tables."""
    from typer.testing import CliRunner

    from ratio.cli import app

    write_benchmark(tmp_path)
    make_config(tmp_path)
    d = tmp_path / "run" / "benchmark" / "test"
    queries = pq.read_table(d / "queries.parquet")
    qrels = pq.read_table(d / "qrels.parquet")
    held = [i for i, r in enumerate(queries.column("relation").to_pylist()) if r == "broaden"]
    keep = [i for i in range(queries.num_rows) if i not in held]
    pq.write_table(queries.take(held), d / "pending_queries.parquet")
    pq.write_table(queries.take(keep), d / "queries.parquet")
    qrels_keep = [
        i for i, q in enumerate(qrels.column("query_id").to_pylist()) if int(q[1:]) in keep
    ]
    pq.write_table(qrels.take(qrels_keep), d / "qrels.parquet")
    runner = CliRunner()
    cfg = str(tmp_path / "run.toml")
    r = runner.invoke(app, ["evaluate", "-c", cfg, "-s", "bm25"])
    assert r.exit_code == 0, r.output
    assert f"note: broaden {len(held)} test queries" in r.output and "--split test+held" in r.output
    r = runner.invoke(app, ["evaluate", "-c", cfg, "-s", "bm25", "--split", "test+held"])
    assert r.exit_code == 0, r.output
    assert "note:" not in r.output
    published = json.loads((tmp_path / "eval" / "results.json").read_text())
    raw = json.loads((tmp_path / "eval-test+held" / "results.json").read_text())
    n = {r["relation"]: r["n_queries"] for r in raw["records"]}
    assert n["broaden"] == len(held) > 0
    assert "broaden" not in {r["relation"] for r in published["records"] if r["n_queries"]}


@pytest.mark.skipif(not (MODELS / "potion-mpnet-256").is_dir(), reason="model not downloaded")
def test_dense_and_hybrid_systems(tmp_path):
    write_benchmark(tmp_path)
    systems = """
[[evaluate.systems]]
name = "static"
kind = "dense"
model = "potion-mpnet-256"
prefix = "generic"

[[evaluate.systems]]
name = "bm25"

[[evaluate.systems]]
name = "static+bm25"
kind = "hybrid"
components = ["static", "bm25"]
fusion = "score"
"""
    cfg = make_config(tmp_path, systems=systems)
    res = evaluate_systems(cfg, progress=False)
    assert {r["system"] for r in res.rows} == {"static", "bm25", "static+bm25"}
    assert all(0.0 <= v <= 1.0 for r in res.rows for v in r["metrics"].values())
    assert (tmp_path / "run" / "embeddings").is_dir()  # embeddings cached under build.out
    # the harness's dense run equals a direct search of the same pool
    from ratio.metrics.trec import read_run
    from ratio.retrieval.dense import DenseRetriever

    bench = RunDir(tmp_path / "run").benchmark.load("test")
    direct = DenseRetriever("potion-mpnet-256", prefix="generic")
    direct.index(bench.candidate_ids, bench.candidate_texts)
    qids, texts = bench.relation_queries("address")
    top = direct.search(texts, 3)
    run = read_run(tmp_path / "eval" / "runs" / "static.address.trec")
    for qid, row in zip(qids, top.doc_ids(), strict=True):
        assert [d for d, _ in run.ranked(qid)[:3]] == list(row)


def test_setup_label_names_each_kind_in_the_papers_setup_column():
    from ratio.core.config import SystemConfig
    from ratio.evaluation.harness import setup_label

    assert setup_label(SystemConfig(kind="bm25", ngram=2)) == "bigram"
    assert setup_label(SystemConfig(kind="dense", prefix="generic", index="hnsw")) == "generic-hnsw"
    view = SystemConfig(kind="instructed", components=["Unified"], instruction="specify: ")
    assert setup_label(view) == "Unified, query 'specify: '"
    assert setup_label(SystemConfig(kind="hybrid", components=["a", "b"])) == "rrf(a+b)"
