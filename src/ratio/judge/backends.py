"""Judge backends: one request interface behind three transports.

OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp's server, Ollama), the OpenAI
Batch API (half the price, hours of latency) and a GGUF model in process through
llama-cpp-python (offline; answers constrained by a JSON-schema grammar).

Every backend can *sample* an answer or *score* one: the probability of each yes/no
verdict. A small model's sampled verdict is nearly always "yes"; the probability behind
it still ranks pairs, and a threshold chosen on human labels turns it into a verdict
(``ratio judge calibrate``). llama.cpp reads it off the logits (teacher forcing); the
OpenAI-compatible backends from the ``top_logprobs`` of a sampled answer.

The ``openai`` client retries connection errors, 408/409/429 and 5xx itself. What is left
is sorted by what a caller should do: :class:`TransientError` (leave uncached, a rerun
tries again), :class:`RequestRejected` (400/413/422: record it invalid) and
:class:`FatalBackendError` (401/403/404: stop instead of recording thousands of failures).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from ratio.config import JudgeConfig
from ratio.io import RatioError
from ratio.judge.prompts import VERDICTS, verdict_answer

if TYPE_CHECKING:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_types import CreateChatCompletionResponse


class JudgeError(RatioError):
    """A judging run cannot go on (bad backend settings, missing model, failed batch)."""


class TransientError(JudgeError):
    """Worth retrying after a pause."""


class RequestRejected(JudgeError):
    """The server refused this one request; retrying it unchanged will not help."""


class FatalBackendError(JudgeError):
    """Every request will fail the same way (authentication, unknown model or URL)."""


Messages = list[dict[str, str]]


@dataclass
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    # P(accept) of each yes/no verdict of the answer, in answer order (scoring only);
    # None when they could not be read (the answer is then treated as invalid)
    verdict_p: list[float] | None = None

    @classmethod
    def with_usage(cls, text: str, usage: Mapping[str, Any] | None, **kw) -> Completion:
        """A completion with token counts from an OpenAI-style ``usage`` block (llama.cpp too)."""
        usage = usage or {}
        return cls(
            text,
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            **kw,
        )


class Backend(Protocol):
    kind: str
    model: str
    concurrency: int
    retries_itself: bool  # transport retries happen inside the backend, not in the runner

    def complete(
        self, messages: Messages, *, schema: dict, temperature: float, max_tokens: int, seed: int
    ) -> Completion: ...

    def score(
        self, messages: Messages, *, shape: str, schema: dict, max_tokens: int, seed: int
    ) -> Completion: ...


def scorable(shape: str) -> None:
    if shape not in VERDICTS:
        raise JudgeError(
            f"answer shape {shape!r} has no yes/no verdict to score; scorable: {', '.join(VERDICTS)}"
        )


# --------------------------------------------------------------------------- verdict probabilities


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


# --------------------------------------------------------------------------- OpenAI client


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
            kw["logprobs"] = True
            kw["top_logprobs"] = self.TOP_LOGPROBS
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
        for field_ in ("output_file_id", "error_file_id"):
            fid = batch.get(field_)
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


# --------------------------------------------------------------------------- llama.cpp

LOCAL_MODELS = {
    "qwen2.5-1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
}


def model_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("RATIO_LLM_DIR"):
        dirs.append(Path(os.environ["RATIO_LLM_DIR"]))
    dirs.append(Path(__file__).resolve().parents[3] / "models" / "llm")
    dirs.append(Path.cwd() / "models" / "llm")
    return dirs


def resolve_gguf(model: str) -> Path:
    """A GGUF path from a known short name (``qwen2.5-1.5b``, ``smollm2``) or a path."""
    p = Path(model).expanduser()
    if p.is_file():
        return p
    name = LOCAL_MODELS.get(model, model)
    for d in model_dirs():
        if (d / name).is_file():
            return d / name
    raise JudgeError(
        f"GGUF model {model!r} not found (looked in {', '.join(str(d) for d in model_dirs())}); "
        "run `python scripts/fetch_llm.py` or give a path"
    )


def llama_cpp_available() -> bool:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


def _common_prefix(a: list[int], b: list[int]) -> int:
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


class LlamaCppBackend:
    """A GGUF model in this process; answers constrained to the prompt's JSON schema."""

    kind = "llamacpp"
    concurrency = 1  # one model, one context: calls are serialised
    retries_itself = False

    def __init__(self, model: str, *, n_ctx: int = 4096, n_threads: int = 0, seed: int = 0):
        try:
            from llama_cpp import Llama
        except ImportError as e:
            raise JudgeError(
                "the llamacpp backend needs llama-cpp-python (`pip install llama-cpp-python`)"
            ) from e
        path = resolve_gguf(model)
        self.model = path.name
        self._lock = threading.Lock()
        self._formatter: Jinja2ChatFormatter | None = None
        self.llm = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads or None,
            seed=seed,
            verbose=False,
        )

    def complete(
        self, messages: Messages, *, schema: dict, temperature: float, max_tokens: int, seed: int
    ) -> Completion:
        with self._lock:
            # Not streamed, so one response (llama_cpp's annotation has no overload on stream);
            # it types messages as TypedDicts, ours are the same role/content dicts.
            out = cast(
                "CreateChatCompletionResponse",
                self.llm.create_chat_completion(
                    messages=messages,  # type: ignore[arg-type]
                    response_format={"type": "json_object", "schema": schema},
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                ),
            )
        return Completion.with_usage(
            out["choices"][0]["message"].get("content") or "", out.get("usage")
        )

    # -- scoring ----------------------------------------------------------------

    def _chat_prompt(self, messages: Messages) -> str:
        """The model's own chat template applied to ``messages``, ready for the answer."""
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            template = self.llm.metadata.get("tokenizer.chat_template")
            if not template:
                raise JudgeError(f"{self.model}: the GGUF has no chat template to score with")

            def text(tok: int) -> str:
                return self.llm.detokenize([tok], special=True).decode() if tok >= 0 else ""

            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=text(self.llm.token_eos()),
                bos_token=text(self.llm.token_bos()),
            )
        # llama_cpp types messages as TypedDicts; ours are the same role/content dicts
        return self._formatter(messages=messages).prompt  # type: ignore[arg-type]

    def _tokens(self, text: str) -> list[int]:
        # the template already wrote any BOS text; special=True turns it into the token
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def _next_logprobs(self, tokens: list[int]):
        """log P(next token | tokens), reusing the evaluated prefix already in the KV cache."""
        import llama_cpp

        llm = self.llm
        if len(tokens) >= llm.n_ctx():
            raise RequestRejected(f"{len(tokens)} tokens do not fit n_ctx = {llm.n_ctx()}")
        # keep at least one token to evaluate, so the logits belong to this sequence
        keep = _common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens[:-1])
        llm.n_tokens = keep  # eval() drops the KV cache from here on
        llm.eval(tokens[keep:])
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)
        ).astype(np.float64)
        logits -= logits.max()
        return logits - math.log(float(np.exp(logits).sum()))

    def score(
        self, messages: Messages, *, shape: str, schema: dict, max_tokens: int, seed: int
    ) -> Completion:
        """P(accept) of every verdict step, the answer before it given (teacher forcing).

        Each step compares the first token where the accepting and the rejecting answer
        texts part (``true`` vs ``false``, ``True`` vs ``False``); later steps follow the
        accepting branch, so the product of the steps is P(the whole answer accepts).
        """
        scorable(shape)
        with self._lock:
            prompt = self._chat_prompt(messages)
            answer, probs = "", []
            n_prompt = len(self._tokens(prompt))
            for step in VERDICTS[shape]:
                head = prompt + answer + step.before
                acc, rej = self._tokens(head + step.accept), self._tokens(head + step.reject)
                at = _common_prefix(acc, rej)
                if at == 0 or at >= min(len(acc), len(rej)):
                    raise JudgeError(
                        f"{self.model}: cannot tell {step.accept!r} from {step.reject!r}"
                    )
                lp = self._next_logprobs(acc[:at])
                a, r = float(lp[acc[at]]), float(lp[rej[at]])
                probs.append(1.0 / (1.0 + math.exp(r - a)))
                answer += step.before + step.accept
            n_answer = len(self._tokens(prompt + answer)) - n_prompt
        return Completion(
            verdict_answer(shape, [p >= 0.5 for p in probs]), n_prompt, n_answer, probs
        )


def make_backend(cfg: JudgeConfig, seed: int = 0) -> Backend:
    """The backend a ``[judge]`` config asks for."""
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
