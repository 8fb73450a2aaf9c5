"""P(accept) from the real in-process llama.cpp (SmolLM2-135M): teacher-forced verdict probabilities.

Checked against llama.cpp's own log-probabilities (a second model instance with
``logits_all``, asked for the next token after the same text), so the KV-cache prefix
reuse of the scorer cannot silently score the wrong sequence. Skipped (with the reason)
when llama-cpp-python or the GGUF file is missing.
"""

from __future__ import annotations

import math

import pytest

from ratio.judge.llm.backends import JudgeError
from ratio.judge.llm.cache import JudgmentCache
from ratio.judge.llm.llamacpp import llama_cpp_available, resolve_gguf
from ratio.judge.llm.prompts import get_prompt, silver_pair_text
from ratio.judge.llm.runner import Judge, Shot, Task

if not llama_cpp_available():
    pytest.skip(
        "llama-cpp-python is not installed (pip install 'llama-cpp-python[server]')",
        allow_module_level=True,
    )
try:
    SMOL = resolve_gguf("smollm2")
except JudgeError as e:
    pytest.skip(f"SmolLM2 GGUF missing ({e})", allow_module_level=True)

pytestmark = pytest.mark.slow

GOOD = silver_pair_text(
    "Large language models often produce confident but incorrect answers.",
    "for example",
    "GPT-4 states wrong dates with high confidence.",
)
BAD = silver_pair_text(
    "Large language models often produce confident but incorrect answers.",
    "for example",
    "The weather in Paris was mild that year.",
)


@pytest.fixture(scope="module")
def llama():
    from ratio.judge.llm.backends import LlamaCppBackend

    return LlamaCppBackend("smollm2", n_ctx=2048, n_threads=1, seed=0)


def _task(pair: str, prompt: str = "silver/specify/anchor-compact", shots=()) -> Task:
    return Task(get_prompt(prompt), {"pair": pair}, "q", "c", "specify", tuple(shots))


def test_p_accept_equals_llama_cpps_own_next_token_probabilities(llama):
    from llama_cpp import Llama

    t = _task(GOOD)
    c = llama.score(t.messages(), shape="decision", schema={}, max_tokens=8, seed=0)
    (p,) = c.verdict_p
    assert 0.0 < p < 1.0 and c.text == ('{"decision": true}' if p >= 0.5 else '{"decision": false}')
    ref = Llama(model_path=str(SMOL), n_ctx=2048, n_threads=1, logits_all=True, verbose=False)
    prompt = llama._chat_prompt(t.messages()) + '{"decision":'
    out = ref.create_completion(
        ref.tokenize(prompt.encode(), add_bos=False, special=True),
        max_tokens=1,
        temperature=0.0,
        logprobs=50,
    )
    top = out["choices"][0]["logprobs"]["top_logprobs"][0]
    yes, no = math.exp(top[" true"]), math.exp(top[" false"])
    assert p == pytest.approx(yes / (yes + no), abs=2e-3)


def test_scores_do_not_depend_on_what_was_scored_before(llama):
    first = llama.score(_task(GOOD).messages(), shape="decision", schema={}, max_tokens=8, seed=0)
    other = _task(BAD, "silver/address/minimal-v2").messages()
    chain = llama.score(other, shape="problem_solution", schema={}, max_tokens=8, seed=0)
    again = llama.score(_task(GOOD).messages(), shape="decision", schema={}, max_tokens=8, seed=0)
    assert again.verdict_p == pytest.approx(first.verdict_p, abs=1e-6)
    assert len(chain.verdict_p) == 3 and all(0 < v < 1 for v in chain.verdict_p)


def test_judge_scores_caches_and_thresholds(llama, tmp_path):
    cache = tmp_path / "s.sqlite"
    shots = (Shot.of({"pair": BAD}, False), Shot.of({"pair": GOOD}, True))
    tasks = [_task(GOOD), _task(BAD), _task(GOOD, shots=shots)]
    judge = Judge(llama, JudgmentCache(cache), scoring="logprob", progress=False)
    res = judge.run(tasks)
    assert all(r.valid and 0 < r.p_accept < 1 for r in res), [r.error for r in res]
    assert res[2].p_accept != res[0].p_accept  # the examples are part of the conversation
    again = Judge(
        llama,
        JudgmentCache(cache),
        scoring="logprob",
        thresholds={"silver/specify/anchor-compact": 1.0},
        progress=False,
    ).run(tasks)
    assert all(r.cached for r in again) and not any(r.accepted for r in again)
    assert [r.p_accept for r in again] == [r.p_accept for r in res]
