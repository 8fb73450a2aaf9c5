"""silver / topk / pairwise / calibrate / markers / annotate end to end on a tiny benchmark.

The fake API (conftest) accepts a pair when "good" is in the message; "half" pairs are
accepted only by prompts without "Execute the steps in order" (so the two Address
prompts disagree on them), "maybe" likewise for top-k.
"""

from __future__ import annotations

import csv
import json
import urllib.request

import pyarrow.parquet as pq
import pytest

from ratio.core.layout import RunDir
from ratio.judge.llm.runner import open_judge
from tests.judge.conftest import shaped_answer


def _split_responder(system: str, user: str) -> str:
    strict = "Execute the steps in order" in system
    ok = ("good" in user and "half" not in user) or (
        ("half" in user or "maybe" in user) and not strict
    )
    return shaped_answer(system, ok)


def _judge(cfg, fake, responder=_split_responder):
    cfg.judge.base_url = fake.base_url
    fake.responder = responder
    return open_judge(cfg, progress=False)


def _candidate_responder(system: str, user: str) -> str:
    """Top-k: judge the candidate line (s2) only."""
    return _split_responder(system, user.split("s2:")[-1])


def test_silver_keeps_pairs_both_prompts_accept(bench_config, fake_openai):
    from ratio.judge.silver import build_silver

    res = build_silver(bench_config, _judge(bench_config, fake_openai))
    # qa3 ("half") is accepted by one Address prompt only -> dropped
    assert sorted(res.kept["address"]) == ["qa1", "qa4"]
    assert sorted(res.kept["specify"]) == ["qs1", "qs3"] and res.kept["broaden"] == ["qb1"]
    rep = res.report["relations"]["address"]
    assert rep["sampled"] == 4 and rep["kept_fraction"] == 0.5
    assert rep["markers"]["to address this issue"] == {
        "sampled": 2,
        "kept": 1,
        "kept_fraction": 0.5,
    }
    assert rep["prompts"]["silver/address/minimal-v2"]["accepted"] == 3
    assert rep["prompts"]["silver/address/ordered-v2"]["accepted"] == 2
    # the silver split loads like any benchmark split, pool = the test pool
    bench = RunDir.of(bench_config).benchmark
    silver = bench.load("silver")
    assert sorted(silver.queries["query_id"].to_pylist()) == ["qa1", "qa4", "qb1", "qs1", "qs3"]
    assert sorted(silver.qrels["candidate_id"].to_pylist()) == ["ca1", "ca4", "cb1", "cs1", "cs3"]
    assert silver.candidates.num_rows == bench.load("test").candidates.num_rows
    j = pq.read_table(silver.directory / "judgments.parquet")
    assert j.num_rows == 18 and j["valid"].to_pylist() == [True] * 18
    assert (
        "judge.silver"
        in pq.read_schema(silver.directory / "queries.parquet").metadata[b"ratio.stage"].decode()
    )
    # the pairs went in as "query. Marker, gold"
    assert (
        "Training is unstable good. To address this issue, we clip gradients good."
        in fake_openai.per_message
    )
    calls = fake_openai.chat_calls
    build_silver(bench_config, _judge(bench_config, fake_openai))  # rerun: all cached
    assert fake_openai.chat_calls == calls


def _write_runs(cfg, tmp_path):
    from ratio.metrics import Ranking
    from ratio.metrics.trec import write_run

    tuned = Ranking.from_dict(
        {
            "qa1": {"ca1": 3.0, "cx1": 2.0, "cx3": 1.5, "cx2": 1.0},
            "qa2": {"cx2": 2.0, "ca2": 1.0},
            "qa3": {"cx2": 1.0, "cx1": 0.5},
            "qa4": {"cx1": 1.0, "ca4": 0.9},
        },
        name="tuned",
    )
    base = Ranking.from_dict({q: {"cx2": 1.0} for q in ("qa1", "qa2", "qa3", "qa4")}, name="base")
    return write_run(tuned, tmp_path / "tuned.address.trec"), write_run(
        base, tmp_path / "base.address.trec"
    )


def test_topk_hard_soft_metrics_and_discovered_positives(bench_config, fake_openai, tmp_path):
    from ratio.judge.topk import judge_topk

    pt, pb = _write_runs(bench_config, tmp_path)
    res = judge_topk(
        bench_config,
        _judge(bench_config, fake_openai, _candidate_responder),
        {"tuned": pt, "base": pb},
        "address",
        split="test",
        n_queries=4,
    )
    t = res.report["systems"]["tuned"]
    # accepted (hard): qa1 -> ca1, cx1; qa3 -> cx1; qa4 -> cx1, ca4 ("good" texts); soft adds cx3 ("maybe")
    assert t["hard"]["hit_rate@10"] == pytest.approx(0.75)
    assert t["soft"]["precision@10"] == pytest.approx((3 + 0 + 1 + 2) / 10 / 4)
    assert t["hard"]["mrr@10"] == pytest.approx((1 + 0 + 0.5 + 1) / 4)
    assert t["p1"]["precision@10"] >= t["p2"]["precision@10"]
    assert res.report["systems"]["base"]["hard"]["hit_rate@10"] == 0.0
    d = t["discovered"]["hard"]
    assert d["share_with_accepted_alternative"] == pytest.approx(0.75)
    assert d["share_alternative_without_gold"] == pytest.approx(0.25)  # qa3: gold ca3 not listed
    assert d["cross_paper_share"] == 1.0
    assert t["gold"]["mrr@10"] == pytest.approx((1 + 0.5 + 0 + 0.5) / 4)
    assert (res.out_dir / "report.md").read_text().count("| tuned |") >= 5
    # the judge never saw rank or system: same (q, c) for both systems is one request
    assert (
        len({(r.task.query_id, r.task.candidate_id, r.task.prompt.id) for r in res.results})
        == fake_openai.chat_calls
    )


def test_pairwise_both_orders(bench_config, fake_openai, tmp_path):
    from ratio.judge.pairwise import judge_pairwise

    pt, pb = _write_runs(bench_config, tmp_path)
    cfg = bench_config
    cfg.judge.base_url = fake_openai.base_url

    def prefers_good_list(system, user):
        a, _, b = user.partition("Candidate List A:")[2].partition("Candidate List B:")
        return shaped_answer(system, a.count("good") >= b.count("good"))

    fake_openai.responder = prefers_good_list
    res = judge_pairwise(
        cfg,
        open_judge(cfg, progress=False),
        ("tuned", pt),
        ("base", pb),
        "address",
        split="test",
        n_queries=4,
    )
    r = res.report
    assert r["n_queries"] == 4 and r["invalid"] == 0
    # qa2: neither list has "good" -> A both times -> unstable; the other three prefer tuned
    assert (r["wins_first_system"], r["wins_second_system"]) == (3, 0)
    assert r["stable"] == pytest.approx(0.75) and r["slot_a"] == pytest.approx(5 / 8)


def test_calibrate_scores_prompts_against_labels(bench_config, fake_openai, tmp_path):
    from ratio.judge.calibrate import calibrate

    labels = tmp_path / "labels.csv"
    rows = [
        ("qa1", "Training is unstable good.", "We clip gradients good.", "y", "y"),
        ("qa2", "Models overfit.", "We use dropout.", "n", "n"),
        ("qa3", "Memory is scarce good.", "We quantize half good.", "y", "n"),
        ("qa4", "Labels are noisy.", "We relabel good.", "y", "y"),
    ]
    with open(labels, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "item_id",
                "relation",
                "query_id",
                "candidate_id",
                "query",
                "marker",
                "candidate",
                "annotator",
                "label",
            ]
        )
        for q, qt, ct, l1, l2 in rows:
            w.writerow([q, "address", q, "c" + q[1:], qt, "to address this", ct, "ann1", l1])
            w.writerow([q, "address", q, "c" + q[1:], qt, "to address this", ct, "ann2", l2])
        w.writerow(["qa9", "address", "qa9", "ca9", "x", "y", "z", "ann1", "s"])
    rep = calibrate(bench_config, _judge(bench_config, fake_openai), labels, reference="ann1")
    e = rep["relations"]["address"]
    assert e["n_units"] == 4 and set(e["prompts"]) == {
        "silver/address/minimal-v2",
        "silver/address/ordered-v2",
    }
    lenient = e["prompts"]["silver/address/minimal-v2"]["before"]  # accepts qa1, qa3, qa4 == ann1
    assert lenient["f1"] == 1.0 and lenient["kappa"] == 1.0
    assert e["kept"][0] == "silver/address/minimal-v2"
    assert e["human_panel"]["agreement"] == pytest.approx(0.75)
    assert 'address = ["minimal-v2", "ordered-v2"]' in rep["config_snippet"]


def test_markers_expand_grade_and_write_loadable_lexicon(bench_config, fake_openai, tmp_path):
    from ratio.judge import lexicon_llm
    from ratio.lexicon import load_lexicon

    judge = _judge(bench_config, fake_openai)
    fake_openai.responder = lambda s, u: shaped_answer(s, "thwart" in u or "defuse" in u)
    lex = load_lexicon()
    new = lexicon_llm.expand(judge, lex, "address", n=5)
    # normalized; markers the lexicon already has (under any relation) are not "new"
    assert new == ["to thwart this quirk", "to defuse this quirk"]
    graded = lexicon_llm.grade(judge, "address", new)
    summary = lexicon_llm.write_llm_lexicon(graded, lex, tmp_path / "lex", "fake-model")
    assert summary["kept"] == 2
    merged = load_lexicon(extra=[tmp_path / "lex" / "lexicon-llm.tsv"])
    assert merged.relation_of("to thwart this quirk") == "address"
    assert len(merged) == len(lex) + 2
    assert {e.source for e in merged.entries if e.marker == "to defuse this quirk"} == {"llm"}


def test_cli_markers_expands_grades_and_writes_under_judge_out(bench_config, fake_openai, tmp_path):
    from typer.testing import CliRunner

    from ratio.cli import app

    fake_openai.responder = lambda s, u: shaped_answer(s, "thwart" in u or "defuse" in u)
    given = tmp_path / "markers.txt"
    given.write_text("to defuse this quirk\n\n  to smooth this quirk \n", encoding="utf-8")
    args = ["judge", "markers", "-c", str(tmp_path / "ratio.toml"), "-r", "address"]
    args += ["--base-url", fake_openai.base_url, "--expand", "5", "--candidates", str(given)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output[: r.output.rindex("}") + 1])
    # two expanded, two given; "to defuse this quirk" came both ways and is kept once
    assert summary["graded"] == 4 and summary["kept"] == 2
    assert summary["by_relation"] == {"address": {"strong-true": 3, "false": 1}}
    assert summary["lexicon"] == str(RunDir.of(bench_config).judge.lexicon / "lexicon-llm.tsv")
    assert "judgments/s" in r.output


def test_annotation_server_round_trip(bench_config, tmp_path):
    from ratio.judge.annotate import AnnotationStore, make_server, prepare_items, read_items

    items = prepare_items(bench_config, ["address", "broaden"], 2, tmp_path / "items.csv")
    rows = read_items(items)
    assert len(rows) == 4 and {r["relation"] for r in rows} == {"address", "broaden"}
    labels = tmp_path / "labels.csv"
    srv = make_server(AnnotationStore(rows, labels, "me"), port=0)
    import threading

    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        page = urllib.request.urlopen(base + "/").read().decode()
        assert "keydown" in page
        st = json.loads(urllib.request.urlopen(base + "/api/state").read())
        first = st["item"]["item_id"]
        req = urllib.request.Request(
            base + "/api/label",
            data=json.dumps({"item_id": first, "label": "y"}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        st2 = json.loads(urllib.request.urlopen(req).read())
        assert st2["done"] == 1 and st2["item"]["item_id"] != first
        bad = urllib.request.Request(
            base + "/api/label", data=b'{"item_id": "x", "label": "q"}', method="POST"
        )
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(bad)
    finally:
        srv.shutdown()
        srv.server_close()
    with open(labels, newline="") as fh:
        got = list(csv.DictReader(fh))
    assert [(g["item_id"], g["annotator"], g["label"]) for g in got] == [(first, "me", "y")]
    assert AnnotationStore(rows, labels, "me").state()["done"] == 1  # resumes
    assert AnnotationStore(rows, labels, "you").state()["done"] == 0


def test_cli_silver_and_topk(bench_config, fake_openai, tmp_path):
    from typer.testing import CliRunner

    from ratio.cli import app

    cfg = tmp_path / "ratio.toml"
    common = ["-c", str(cfg), "--backend", "openai", "--base-url", fake_openai.base_url]
    r = CliRunner().invoke(app, ["judge", "silver", *common, "--n", "address=2", "-r", "address"])
    assert r.exit_code == 0, r.output
    assert "address: kept" in r.output and "judgments/s" in r.output
    pt, _ = _write_runs(bench_config, tmp_path)
    r = CliRunner().invoke(
        app, ["judge", "topk", f"tuned={pt}", *common, "-r", "address", "--split", "test"]
    )
    assert r.exit_code == 0, r.output
    assert "Hard agreement" in r.output


def test_annotation_items_from_the_silver_sample_reuse_its_judgments(
    bench_config, fake_openai, tmp_path
):
    from ratio.core.io import RatioError
    from ratio.judge.annotate import prepare_items, read_items
    from ratio.judge.calibrate import calibrate
    from ratio.judge.silver import build_silver

    with pytest.raises(RatioError, match="ratio judge silver"):
        prepare_items(bench_config, ["address"], 2, tmp_path / "x.csv", from_silver=True)
    build_silver(bench_config, _judge(bench_config, fake_openai), n={"address": 3})
    rows = read_items(
        prepare_items(bench_config, ["address"], 2, tmp_path / "i.csv", from_silver=True)
    )
    sample = pq.read_table(
        bench_config.resolve(bench_config.build.out) / "benchmark/silver/sample.parquet"
    )
    assert len(rows) == 2 and {r["query_id"] for r in rows} <= set(sample["query_id"].to_pylist())
    labels = tmp_path / "labels.csv"
    with open(labels, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[*rows[0].keys(), "annotator", "label"])
        w.writeheader()
        w.writerows({**r, "annotator": "me", "label": "yn"[i % 2]} for i, r in enumerate(rows))
    calls = fake_openai.chat_calls
    calibrate(bench_config, _judge(bench_config, fake_openai), labels, reference="me")
    assert fake_openai.chat_calls == calls  # every calibration judgment came from the cache
