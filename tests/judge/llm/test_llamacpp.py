"""The real local llama.cpp path with SmolLM2-135M: in-process backend and the OpenAI-compatible server.

Skipped (with the reason) when llama-cpp-python or the GGUF file is missing; get them with
``pip install 'llama-cpp-python[server]'`` and ``python scripts/fetch_llm.py --only smollm2``.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from ratio.corpus.slices import start_llama_server
from ratio.judge.llm.backends import JudgeError
from ratio.judge.llm.cache import JudgmentCache
from ratio.judge.llm.llamacpp import llama_cpp_available, resolve_gguf
from ratio.judge.llm.prompts import get_prompt, silver_pair_text
from ratio.judge.llm.runner import Judge, Task

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

PAIR = silver_pair_text(
    "Large language models often produce confident but incorrect answers.",
    "to address this issue",
    "We calibrate their confidence with temperature scaling on held-out data.",
)


def _tasks():
    return [
        Task(get_prompt("silver/specify/anchor-compact"), {"pair": PAIR}, "q1", "c1"),
        Task(
            get_prompt("topk/address/minimal-v2"),
            {"query": "Models overfit.", "candidate": "We use dropout."},
            "q2",
            "c2",
        ),
    ]


def _judge(backend, cache, **kw) -> Judge:
    return Judge(backend, JudgmentCache(cache), max_retries=1, progress=False, **kw)


@pytest.fixture(scope="module")
def llama():
    from ratio.judge.llm.backends import LlamaCppBackend

    return LlamaCppBackend("smollm2", n_ctx=2048, n_threads=1, seed=0)


def test_in_process_backend_answers_in_the_prompt_schema(llama, tmp_path):
    judge = _judge(llama, tmp_path / "c.sqlite", max_tokens=160)
    res = judge.run(_tasks())
    # the JSON-schema grammar makes even a 135M model answer in the exact shape
    assert all(r.valid for r in res), [r.raw for r in res]
    assert isinstance(res[0].parsed["accepted"], bool) and "match" in res[1].parsed
    assert judge.usage.input_tokens > 500 and judge.usage.output_tokens > 0
    again = Judge(llama, JudgmentCache(tmp_path / "c.sqlite"), progress=False).run(_tasks())
    assert [r.cached for r in again] == [True, True] and [r.raw for r in again] == [
        r.raw for r in res
    ]


def test_openai_compatible_server(tmp_path):
    pytest.importorskip("uvicorn", reason="llama_cpp.server needs llama-cpp-python[server]")
    from ratio.judge.llm.backends import OpenAIChatBackend

    # one thread: more threads than free cores makes llama.cpp crawl on a busy machine
    try:
        proc, base = start_llama_server(
            SMOL, tmp_path / "server.log", alias="smollm2", n_ctx=2048, threads=1, wait_s=60
        )
    except RuntimeError as e:
        pytest.fail(str(e))
    try:
        models = json.loads(urllib.request.urlopen(base + "/models", timeout=10).read())
        assert models["data"][0]["id"] == "smollm2"
        backend = OpenAIChatBackend(base, "smollm2", timeout_s=120, concurrency=1)
        judge = _judge(backend, tmp_path / "s.sqlite", max_tokens=160)
        res = judge.run(_tasks())
        for r in res:
            # json_object mode: the answer is JSON; if a tiny model picks the wrong keys it is
            # recorded invalid with its raw text, never dropped
            assert r.valid or (r.raw and r.error.startswith("invalid"))
            json.loads(r.raw)
        assert judge.usage.requests >= 2 and judge.usage.input_tokens > 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_verdicts_only_grammar_leaves_reasons_out(llama, tmp_path):
    judge = _judge(llama, tmp_path / "v.sqlite", max_tokens=96, reasons=False)
    (res,) = judge.run(_tasks()[:1])
    assert res.valid, res.raw
    assert "reason" not in json.loads(res.raw) and isinstance(res.parsed["accepted"], bool)
