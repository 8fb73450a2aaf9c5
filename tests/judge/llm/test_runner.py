"""Backends + runner + cache against the fake OpenAI API: retries, invalid recording, cache, resume, batch."""

from __future__ import annotations

import pytest

from ratio.judge.llm.backends import (
    FatalBackendError,
    OpenAIBatchBackend,
    OpenAIChatBackend,
    RequestRejected,
)
from ratio.judge.llm.cache import JudgmentCache
from ratio.judge.llm.prompts import get_prompt
from ratio.judge.llm.runner import Judge, Task, results_table

PRICES = {"fake-model": {"input": 2.0, "output": 8.0}}


def _judge(
    fake, tmp_path, *, batch=False, concurrency=4, max_retries=2, sleeps=None, name="c.sqlite"
):
    cls = OpenAIBatchBackend if batch else OpenAIChatBackend
    backend = cls(fake.base_url, "fake-model", "sk-test", timeout_s=10, concurrency=concurrency)
    return Judge(
        backend,
        JudgmentCache(tmp_path / name),
        max_retries=max_retries,
        backoff_s=0.5,
        prices=PRICES,
        poll_s=0,
        progress=False,
        sleep=(sleeps.append if sleeps is not None else (lambda s: None)),
    )


def _tasks(*pairs: str):
    p = get_prompt("silver/specify/anchor-compact")
    return [Task(p, {"pair": t}, f"q{i}", f"c{i}", "specify") for i, t in enumerate(pairs)]


def test_chat_backend_parses_validates_and_accounts(fake_openai, tmp_path):
    j = _judge(fake_openai, tmp_path)
    res = j.run(_tasks("A good pair.", "A bad pair.", "Another good one."))
    assert [r.accepted for r in res] == [True, False, True]
    assert all(r.valid and r.attempts == 1 for r in res)
    u = j.usage
    assert u.requests == 3 and u.new == 3 and u.cached == 0 and u.invalid == 0
    assert u.input_tokens == sum(r.input_tokens for r in res) > 0
    expected = (u.input_tokens * 2.0 + u.output_tokens * 8.0) / 1e6
    assert u.cost_usd == pytest.approx(expected)
    table = results_table(res, j.backend)
    assert table.num_rows == 3 and table["accepted"].to_pylist() == [True, False, True]


def test_invalid_json_is_retried_then_recorded_with_raw(fake_openai, tmp_path):
    j = _judge(fake_openai, tmp_path, max_retries=2)
    flaky, garbage = j.run(_tasks("FLAKY good", "GARBAGE good"))
    assert flaky.valid and flaky.accepted and flaky.attempts == 2
    assert not garbage.valid and garbage.accepted is None
    assert garbage.attempts == 3 and "{oops" in garbage.raw and garbage.error.startswith("invalid")
    # the invalid verdict is kept (not dropped) and cached: a rerun does not pay again
    calls = fake_openai.chat_calls
    again = _judge(fake_openai, tmp_path, max_retries=2).run(_tasks("FLAKY good", "GARBAGE good"))
    assert fake_openai.chat_calls == calls
    assert [r.valid for r in again] == [True, False] and again[1].raw == garbage.raw


def test_rate_limit_is_retried_by_the_openai_client(fake_openai, tmp_path):
    sleeps: list[float] = []
    j = _judge(fake_openai, tmp_path, sleeps=sleeps)
    (r,) = j.run(_tasks("RATELIMIT good"))
    assert r.valid and r.accepted and r.attempts == 1
    # the client saw the 429 and asked again itself; the runner did not add a second backoff
    assert sum(n for m, n in fake_openai.per_message.items() if "RATELIMIT" in m) == 2
    assert sleeps == []


def test_unreachable_server_is_a_transport_failure_left_uncached(tmp_path):
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAIChatBackend(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, timeout_s=5)
    j = Judge(backend, JudgmentCache(tmp_path / "u.sqlite"), progress=False)
    (r,) = j.run(_tasks("a good pair"))
    assert not r.valid and "Connection error" in r.error
    assert JudgmentCache(tmp_path / "u.sqlite").count() == 0  # a rerun tries again


def test_rerun_hits_cache_and_duplicates_are_paid_once(fake_openai, tmp_path):
    j = _judge(fake_openai, tmp_path)
    first = j.run(_tasks("x good", "y", "x good"))  # the third repeats the first request
    assert fake_openai.chat_calls == 2
    assert first[2].accepted is True and first[2].task.query_id == "q2"
    j2 = _judge(fake_openai, tmp_path)
    second = j2.run(_tasks("x good", "y", "x good"))
    assert fake_openai.chat_calls == 2
    assert j2.usage.cached == 3 and j2.usage.new == 0 and j2.usage.cost_usd == 0
    assert [r.accepted for r in second] == [r.accepted for r in first]


def test_interrupted_run_resumes_without_repaying(fake_openai, tmp_path):
    texts = [f"pair {i} good" for i in range(6)]
    fake_openai.fail_after = 3  # the "key" stops working after three answers
    with pytest.raises(FatalBackendError):
        _judge(fake_openai, tmp_path, concurrency=1).run(_tasks(*texts))
    assert JudgmentCache(tmp_path / "c.sqlite").count() == 3
    fake_openai.fail_after = None
    before = fake_openai.chat_calls
    j = _judge(fake_openai, tmp_path, concurrency=1)
    res = j.run(_tasks(*texts))
    assert fake_openai.chat_calls - before == 3
    assert j.usage.cached == 3 and all(r.accepted for r in res)


def test_batch_api_maps_results_by_custom_id_and_retries_invalid(fake_openai, tmp_path):
    j = _judge(fake_openai, tmp_path, batch=True, max_retries=1)
    res = j.run(_tasks("a good", "b", "FLAKY good", "GARBAGE", "c good"))
    assert [r.accepted for r in res] == [True, False, True, None, True]
    assert not res[3].valid and "{oops" in res[3].raw
    assert len(fake_openai.batches) == 2  # the retry round holds only the two invalid answers
    assert j.usage.requests == 7
    expected = 0.5 * (j.usage.input_tokens * 2.0 + j.usage.output_tokens * 8.0) / 1e6
    assert j.usage.cost_usd == pytest.approx(expected)  # batch price multiplier


def test_interrupted_batch_is_polled_not_resubmitted(fake_openai, tmp_path):
    def interrupt(_s):
        raise KeyboardInterrupt

    backend = OpenAIBatchBackend(fake_openai.base_url, "fake-model", "k", timeout_s=10)
    j = Judge(
        backend, JudgmentCache(tmp_path / "b.sqlite"), poll_s=0, progress=False, sleep=interrupt
    )
    with pytest.raises(KeyboardInterrupt):
        j.run(_tasks("a good", "b"))
    assert len(fake_openai.batches) == 1
    j2 = Judge(backend, JudgmentCache(tmp_path / "b.sqlite"), poll_s=0, progress=False)
    res = j2.run(_tasks("a good", "b"))
    assert len(fake_openai.batches) == 1
    assert [r.accepted for r in res] == [True, False]


def test_verdicts_only_answers_are_cached_apart(fake_openai, tmp_path):
    full = _judge(fake_openai, tmp_path)
    short = _judge(fake_openai, tmp_path)
    short.reasons = False
    t = _tasks("a good pair")[0]
    assert full.key(t) != short.key(t)  # a shorter answer is not the paper's answer
    assert "reason" not in str(short.schema(t.prompt)) and "reason" in str(full.schema(t.prompt))
    full.run([t])
    assert short.run([t])[0].cached is False


def test_logprob_scoring_reads_p_accept_and_applies_thresholds(fake_openai, tmp_path):
    j = _judge(fake_openai, tmp_path)
    j.scoring = "logprob"
    res = j.run(_tasks("p=0.81 pair", "p=0.62 pair", "p=0.30 pair"))
    assert [round(r.p_accept, 6) for r in res] == [0.81, 0.62, 0.30]
    assert [r.accepted for r in res] == [True, True, False]  # the default threshold 0.5
    assert all(b["logprobs"] and b["top_logprobs"] == 20 for b in fake_openai.bodies)
    # a calibrated threshold changes the verdicts, not the requests: all from the cache
    strict = _judge(fake_openai, tmp_path)
    strict.scoring, strict.thresholds = "logprob", {"silver/specify/anchor-compact": 0.7}
    again = strict.run(_tasks("p=0.81 pair", "p=0.62 pair", "p=0.30 pair"))
    assert strict.usage.cached == 3 and [r.accepted for r in again] == [True, False, False]
    table = results_table(again, strict.backend)
    assert table["p_accept"].to_pylist() == [r.p_accept for r in again]
    # sampled and scored judgments are cached apart
    assert _judge(fake_openai, tmp_path).run(_tasks("p=0.81 pair"))[0].cached is False


def test_problem_solution_p_accept_is_the_product_of_its_verdicts(fake_openai, tmp_path):
    j = _judge(fake_openai, tmp_path)
    j.scoring = "logprob"
    p = get_prompt("silver/address/minimal-v2")
    (r,) = j.run([Task(p, {"pair": "p=0.9 pair"}, "q", "c", "address")])
    assert r.parsed["verdict_p"] == pytest.approx([0.9, 0.9, 0.9])
    assert r.p_accept == pytest.approx(0.9**3)


def test_few_shot_examples_are_earlier_turns_answered_by_their_labels(fake_openai, tmp_path):
    from ratio.judge.llm.runner import Shot

    j = _judge(fake_openai, tmp_path)
    shots = (Shot.of({"pair": "An accepted pair."}, True), Shot.of({"pair": "A bad one."}, False))
    (t,) = _tasks("p=0.7 pair")
    t.shots = shots
    j.run([t])
    msgs = fake_openai.bodies[-1]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "An accepted pair." in msgs[1]["content"] and msgs[2]["content"] == '{"decision": true}'
    assert msgs[4]["content"] == '{"decision": false}' and "p=0.7" in msgs[5]["content"]
    (plain,) = _tasks("p=0.7 pair")
    assert j.key(plain) != j.key(t)  # other examples, another request


def test_batch_scoring_reads_logprobs_from_the_output_file(fake_openai, tmp_path):
    j = _judge(fake_openai, tmp_path, batch=True)
    j.scoring = "logprob"
    res = j.run(_tasks("p=0.9 a", "p=0.2 b"))
    assert [round(r.p_accept, 6) for r in res] == [0.9, 0.2]
    assert len(fake_openai.batches) == 1 and all(b["logprobs"] for b in fake_openai.bodies)


def test_a_401_without_a_key_says_so_and_stops_the_run(fake_openai, tmp_path):
    fake_openai.fail_after = 0
    backend = OpenAIChatBackend(fake_openai.base_url, "fake-model", "", timeout_s=10)
    j = Judge(backend, JudgmentCache(tmp_path / "k.sqlite"), progress=False)
    with pytest.raises(FatalBackendError, match="HTTP 401.*invalid api key") as e:
        j.run(_tasks("a good pair"))
    assert "no API key was given" in str(e.value)


class _Rejecting:
    """A backend whose server refuses every request (e.g. the prompt exceeds the context)."""

    kind, model, concurrency, retries_itself = "stub", "stub-model", 1, False

    def complete(self, messages, **kw):
        raise RequestRejected("413: prompt too long")

    score = complete


def test_a_rejected_request_is_recorded_invalid_with_its_reason(tmp_path):
    j = Judge(_Rejecting(), JudgmentCache(tmp_path / "c.sqlite"), progress=False)
    (r,) = j.run(_tasks("A pair too long to fit."))
    assert not r.valid and r.accepted is None and r.parsed is None
    assert r.raw == "" and r.error == "rejected: 413: prompt too long" and r.attempts == 1
    assert results_table([r], j.backend)["error"].to_pylist() == [r.error]
