"""Judge backends: one request interface (``ratio.judge.llm.interface``) behind three transports.

OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp's server, Ollama), the OpenAI
Batch API (half the price, hours of latency) and a GGUF model in process
(``ratio.judge.llm.llamacpp``).

Every backend can *sample* an answer or *score* one: the probability of each yes/no
verdict. A small model's sampled verdict is nearly always "yes"; the probability behind
it still ranks pairs, and a threshold chosen on human labels turns it into a verdict
(``ratio judge calibrate``). The OpenAI-compatible backends read it from the
``top_logprobs`` of a sampled answer.

Tested by tests/judge/llm/test_runner.py, tests/judge/llm/test_llamacpp.py.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable
from typing import Any

from ratio.core.config import JudgeConfig
from ratio.judge.llm.interface import (
    Backend,
    Completion,
    FatalBackendError,
    JudgeError,
    Messages,
    RequestRejected,
    TransientError,
    scorable,
)
from ratio.judge.llm.llamacpp import LlamaCppBackend
from ratio.judge.llm.prompts import VERDICTS


def _classify(rest: str, accept: str, reject: str) -> str | None:
    """Which verdict value a token's text (after the value start) begins to spell."""
    r = rest.lstrip().lower()
    if not r:
        return None
    for name, lit in (("accept", accept.lower()), ("reject", reject.lower())):
        if lit.startswith(r) or r.startswith(lit):
            return name
    return None


def verdict_p_from_logprobs(content: list[dict], shape: str) -> list[float] | None:
    """P(accept) per verdict from a sampled answer's ``logprobs.content`` (OpenAI format).

    Each verdict value is found by its key in the answer text; the token that starts it
    and that token's ``top_logprobs`` alternatives give the probability mass of each
    value, renormalised over the two (what an answer grammar would allow). Steps after
    the first are conditioned on the answer as sampled. None when a verdict is missing.
    """
    spans: list[tuple[int, int, str, list[dict]]] = []
    pos = 0
    for t in content:
        tok = t.get("token") or ""
        top = list(t.get("top_logprobs") or [])
        if not any(a.get("token") == tok for a in top):
            top.append({"token": tok, "logprob": t.get("logprob", 0.0)})
        spans.append((pos, pos + len(tok), tok, top))
        pos += len(tok)
    text = "".join(s[2] for s in spans)
    out: list[float] = []
    start = 0
    for step in VERDICTS[shape]:
        quote = '"' if step.before.endswith('"') else ""
        m = re.compile(re.escape(f'"{step.key}"') + r"\s*:\s*" + quote).search(text, start)
        if m is None:
            return None
        at = m.end()
        span = next((s for s in spans if s[0] <= at < s[1]), None)
        if span is None:
            return None
        lead = text[span[0] : at]
        mass = {"accept": 0.0, "reject": 0.0}
        for alt in span[3]:
            a = alt.get("token") or ""
            if not a.startswith(lead):
                continue
            which = _classify(a[len(lead) :], step.accept, step.reject)
            if which:
                mass[which] += math.exp(float(alt.get("logprob", -1e9)))
        total = mass["accept"] + mass["reject"]
        if total <= 0:
            return None
        out.append(mass["accept"] / total)
        start = at + 1
    return out


def _classify_http(code: int, what: str, body: str) -> JudgeError:
    msg = f"{what}: HTTP {code}: {body[:300]}"
    if code in (408, 409, 425, 429) or code >= 500:
        return TransientError(msg)
    if code in (401, 403, 404):
        return FatalBackendError(msg)
    return RequestRejected(msg)


class OpenAIChatBackend:
    """Chat completions against any OpenAI-compatible base URL (``.../v1``)."""

    kind = "openai"
    retries_itself = True
    TOP_LOGPROBS = 20  # the most OpenAI returns; enough for both verdict values

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        *,
        timeout_s: float = 120.0,
        concurrency: int = 4,
        extra_body: dict | None = None,
        max_retries: int = 3,
    ):
        try:
            import openai
        except ImportError as e:
            raise JudgeError(
                f"the {self.kind} backend needs the openai client (`pip install 'ratio-ir[judge]'`)"
            ) from e
        self._openai = openai
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.concurrency = max(1, concurrency)
        self.extra_body = dict(extra_body or {})
        self.keyless = not api_key
        # local servers (llama.cpp, vLLM, Ollama) want no key; the client insists on one
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "no-key",
            timeout=timeout_s,
            max_retries=max_retries,
        )

    def _call(self, what: str, fn: Callable, *args, **kwargs):
        """Run one client call, turning its typed errors into ours."""
        oa = self._openai
        try:
            return fn(*args, **kwargs)
        except oa.APIStatusError as e:
            hint = (
                " (no API key was given: set judge.api_key_env's variable)"
                if (e.status_code == 401 and self.keyless)
                else ""
            )
            raise _classify_http(e.status_code, f"{what} {self.base_url}{hint}", str(e)) from None
        except oa.APIConnectionError as e:  # includes timeouts
            raise TransientError(f"{what} {self.base_url}: {e}") from None

    def _kwargs(
        self,
        messages: Messages,
        *,
        temperature: float,
        max_tokens: int,
        seed: int,
        logprobs: bool = False,
    ) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "response_format": {"type": "json_object"},
            "seed": seed,
        }
        if "max_completion_tokens" not in self.extra_body:  # reasoning models want the other name
            kw["max_tokens"] = max_tokens
        if logprobs:
            kw |= {"logprobs": True, "top_logprobs": self.TOP_LOGPROBS}
        return kw

    def request_body(self, messages: Messages, **kw: Any) -> dict:
        """The JSON body of one chat request (a Batch API line's ``body``)."""
        return {**self._kwargs(messages, **kw), **self.extra_body}

    @staticmethod
    def parse_completion(resp: dict, shape: str | None = None) -> Completion:
        """Text, usage and (with ``shape``, when logprobs came back) the verdict probabilities."""
        try:
            choice = resp["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise TransientError(f"malformed chat completion: {str(resp)[:200]}") from None
        verdict_p = None
        if shape:
            content = (choice.get("logprobs") or {}).get("content")
            if content:
                verdict_p = verdict_p_from_logprobs(content, shape)
        return Completion.with_usage(text, resp.get("usage"), verdict_p=verdict_p)

    def _create(self, messages: Messages, **kw) -> dict:
        resp = self._call(
            "chat.completions.create",
            self.client.chat.completions.create,
            **self._kwargs(messages, **kw),
            extra_body=self.extra_body or None,
        )
        return resp.model_dump()

    def complete(
        self, messages: Messages, *, schema: dict, temperature: float, max_tokens: int, seed: int
    ) -> Completion:
        resp = self._create(messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
        return self.parse_completion(resp)

    def score(
        self, messages: Messages, *, shape: str, schema: dict, max_tokens: int, seed: int
    ) -> Completion:
        scorable(shape)
        resp = self._create(
            messages, temperature=0.0, max_tokens=max_tokens, seed=seed, logprobs=True
        )
        c = self.parse_completion(resp, shape)
        if c.verdict_p is None and not ((resp["choices"][0].get("logprobs") or {}).get("content")):
            raise FatalBackendError(
                f"{self.base_url} returned no token logprobs for {self.model}; "
                "use judge.scoring = 'sample' with this server"
            )
        return c


class OpenAIBatchBackend(OpenAIChatBackend):
    """The Batch API: one JSONL upload, one batch, results mapped back by ``custom_id``."""

    kind = "batch"
    ENDPOINT = "/v1/chat/completions"
    DONE = ("completed", "failed", "expired", "cancelled")

    def submit(self, requests: list[tuple[str, dict]]) -> str:
        """Upload ``(custom_id, chat body)`` pairs and create a batch; returns its id."""
        payload = "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": self.ENDPOINT, "body": body})
            + "\n"
            for cid, body in requests
        ).encode()
        file = ("ratio-judge.jsonl", payload, "application/jsonl")
        f = self._call("files.create", self.client.files.create, file=file, purpose="batch")
        batch = self._call(
            "batches.create",
            self.client.batches.create,
            input_file_id=f.id,
            endpoint=self.ENDPOINT,
            completion_window="24h",
        )
        return batch.id

    def wait(
        self, batch_id: str, poll_s: float, timeout_s: float = 26 * 3600, sleep=time.sleep
    ) -> dict:
        start = time.monotonic()
        while True:
            try:
                batch = self._call(
                    "batches.retrieve", self.client.batches.retrieve, batch_id
                ).model_dump()
            except TransientError:
                batch = {"status": "unknown"}
            if batch.get("status") in self.DONE:
                return batch
            if time.monotonic() - start > timeout_s:
                raise JudgeError(
                    f"batch {batch_id} not finished after {timeout_s:.0f} s; rerun to resume"
                )
            sleep(poll_s)

    def results(
        self, batch: dict, shapes: dict[str, str] | None = None
    ) -> dict[str, Completion | str]:
        """``custom_id`` -> :class:`Completion`, or an error string for a failed request.

        ``shapes`` (custom_id -> answer shape) asks for the verdict probabilities of
        scored requests.
        """
        out: dict[str, Completion | str] = {}
        for fid in (batch.get("output_file_id"), batch.get("error_file_id")):
            if not fid:
                continue
            text = self._call("files.content", self.client.files.content, fid).text
            for line in text.splitlines():
                if not line.strip():
                    continue
                rec = json.loads(line)
                cid = rec.get("custom_id")
                resp = rec.get("response") or {}
                if rec.get("error") or resp.get("status_code", 200) != 200:
                    out[cid] = f"batch error: {rec.get('error') or resp.get('body')}"
                    continue
                try:
                    out[cid] = self.parse_completion(
                        resp.get("body") or {}, (shapes or {}).get(cid)
                    )
                except TransientError as e:
                    out[cid] = str(e)
        return out

    def complete(self, *args, **kwargs) -> Completion:  # pragma: no cover - batch only
        raise JudgeError("the batch backend answers whole batches; use Judge.run")

    score = complete


def make_backend(cfg: JudgeConfig, seed: int = 0) -> Backend:
    if cfg.backend == "llamacpp":
        return LlamaCppBackend(cfg.model, n_ctx=cfg.n_ctx, n_threads=cfg.n_threads, seed=seed)
    if cfg.backend in ("openai", "batch"):
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        cls = OpenAIChatBackend if cfg.backend == "openai" else OpenAIBatchBackend
        return cls(
            cfg.base_url,
            cfg.model,
            key,
            timeout_s=cfg.timeout_s,
            concurrency=cfg.concurrency,
            extra_body=cfg.extra_body,
            max_retries=cfg.max_retries,
        )
    raise JudgeError(
        f"judge.backend: unknown backend {cfg.backend!r}; use openai, batch or llamacpp"
    )
