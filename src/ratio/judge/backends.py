"""Judge backends: one ``complete(system, user)`` call behind three transports.

* :class:`OpenAIChatBackend`: chat completions over HTTP with
  ``response_format={"type": "json_object"}`` -- OpenAI, vLLM, llama.cpp's server, Ollama.
* :class:`OpenAIBatchBackend`: the OpenAI Batch API (upload JSONL, create a batch, poll,
  download, map results back by ``custom_id``); half the price, hours of latency.
* :class:`LlamaCppBackend`: a GGUF model in process through llama-cpp-python, with the
  answer constrained by a JSON-schema grammar (offline, no server).

HTTP uses only the standard library, so the paid-API path needs no extra dependency.
Errors are sorted by what a caller should do: :class:`TransientError` (429, 5xx,
timeouts: retry with backoff), :class:`RequestRejected` (400/413/422: this request
cannot succeed; record it invalid) and :class:`FatalBackendError` (401/403/404:
misconfiguration; stop the run instead of recording thousands of failures).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ratio.config import JudgeConfig
from ratio.io import RatioError


class JudgeError(RatioError):
    """A judging run cannot go on (bad backend settings, missing model, failed batch)."""


class TransientError(JudgeError):
    """Worth retrying after a pause."""


class RequestRejected(JudgeError):
    """The server refused this one request; retrying it unchanged will not help."""


class FatalBackendError(JudgeError):
    """Every request will fail the same way (authentication, unknown model or URL)."""


@dataclass
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def with_usage(cls, text: str, usage: dict | None) -> Completion:
        """A completion with token counts from an OpenAI-style ``usage`` block (llama.cpp too)."""
        usage = usage or {}
        return cls(
            text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        )


class Backend(Protocol):
    kind: str
    model: str
    concurrency: int

    def complete(
        self,
        system: str,
        user: str,
        *,
        schema: dict,
        temperature: float,
        max_tokens: int,
        seed: int,
    ) -> Completion: ...


# --------------------------------------------------------------------------- HTTP


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

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        *,
        timeout_s: float = 120.0,
        concurrency: int = 4,
        extra_body: dict | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.concurrency = max(1, concurrency)
        self.extra_body = dict(extra_body or {})

    def _headers(self, content_type: str | None = "application/json") -> dict[str, str]:
        h = {"Accept": "application/json"}
        if content_type:
            h["Content-Type"] = content_type
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def _http(
        self,
        method: str,
        path: str,
        data: bytes | None = None,
        content_type: str | None = "application/json",
    ) -> bytes:
        url = f"{self.base_url}{path}"
        req = urllib.request.Request(
            url, data=data, method=method, headers=self._headers(content_type)
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            body = e.read().decode("utf-8", "replace") if e.fp else ""
            raise _classify_http(e.code, f"{method} {url}", body) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            raise TransientError(f"{method} {url}: {getattr(e, 'reason', e)}") from None

    def _json(self, method: str, path: str, payload: Any | None = None) -> dict:
        data = json.dumps(payload).encode() if payload is not None else None
        raw = self._http(method, path, data)
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            raise TransientError(f"{method} {path}: response is not JSON: {raw[:200]!r}") from None

    def request_body(
        self, system: str, user: str, *, temperature: float, max_tokens: int, seed: int
    ) -> dict:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": temperature,
            "response_format": {"type": "json_object"},
            "seed": seed,
        }
        if "max_completion_tokens" not in self.extra_body:  # reasoning models want the other name
            body["max_tokens"] = max_tokens
        body.update(self.extra_body)
        return body

    @staticmethod
    def parse_completion(resp: dict) -> Completion:
        try:
            text = resp["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise TransientError(f"malformed chat completion: {str(resp)[:200]}") from None
        return Completion.with_usage(text, resp.get("usage"))

    def complete(
        self,
        system: str,
        user: str,
        *,
        schema: dict,
        temperature: float,
        max_tokens: int,
        seed: int,
    ) -> Completion:
        body = self.request_body(
            system, user, temperature=temperature, max_tokens=max_tokens, seed=seed
        )
        return self.parse_completion(self._json("POST", "/chat/completions", body))


class OpenAIBatchBackend(OpenAIChatBackend):
    """The Batch API: one JSONL upload, one batch, results mapped back by ``custom_id``."""

    kind = "batch"
    ENDPOINT = "/v1/chat/completions"
    DONE = ("completed", "failed", "expired", "cancelled")

    def upload(self, lines: list[dict]) -> str:
        boundary = uuid.uuid4().hex
        payload = "".join(json.dumps(x) + "\n" for x in lines).encode()
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'.encode(),
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="ratio-judge.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n'
            ).encode()
            + payload
            + b"\r\n",
            f"--{boundary}--\r\n".encode(),
        ]
        raw = self._http(
            "POST", "/files", b"".join(parts), f"multipart/form-data; boundary={boundary}"
        )
        return json.loads(raw)["id"]

    def submit(self, requests: list[tuple[str, dict]]) -> str:
        """Upload ``(custom_id, chat body)`` pairs and create a batch; returns its id."""
        lines = [
            {"custom_id": cid, "method": "POST", "url": self.ENDPOINT, "body": body}
            for cid, body in requests
        ]
        file_id = self.upload(lines)
        batch = self._json(
            "POST",
            "/batches",
            {"input_file_id": file_id, "endpoint": self.ENDPOINT, "completion_window": "24h"},
        )
        return batch["id"]

    def wait(
        self, batch_id: str, poll_s: float, timeout_s: float = 26 * 3600, sleep=time.sleep
    ) -> dict:
        start = time.monotonic()
        while True:
            try:
                batch = self._json("GET", f"/batches/{batch_id}")
            except TransientError:
                batch = {"status": "unknown"}
            if batch.get("status") in self.DONE:
                return batch
            if time.monotonic() - start > timeout_s:
                raise JudgeError(
                    f"batch {batch_id} not finished after {timeout_s:.0f} s; rerun to resume"
                )
            sleep(poll_s)

    def results(self, batch: dict) -> dict[str, Completion | str]:
        """``custom_id`` -> :class:`Completion`, or an error string for a failed request."""
        out: dict[str, Completion | str] = {}
        for field_ in ("output_file_id", "error_file_id"):
            fid = batch.get(field_)
            if not fid:
                continue
            for line in (
                self._http("GET", f"/files/{fid}/content", None, None).decode().splitlines()
            ):
                if not line.strip():
                    continue
                rec = json.loads(line)
                cid = rec.get("custom_id")
                resp = rec.get("response") or {}
                if rec.get("error") or resp.get("status_code", 200) != 200:
                    out[cid] = f"batch error: {rec.get('error') or resp.get('body')}"
                    continue
                try:
                    out[cid] = self.parse_completion(resp.get("body") or {})
                except TransientError as e:
                    out[cid] = str(e)
        return out

    def complete(self, *args, **kwargs) -> Completion:  # pragma: no cover - batch only
        raise JudgeError("the batch backend answers whole batches; use Judge.run")


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


class LlamaCppBackend:
    """A GGUF model in this process; answers constrained to the prompt's JSON schema."""

    kind = "llamacpp"
    concurrency = 1  # one model, one context: calls are serialised

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
        self.llm = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads or None,
            seed=seed,
            verbose=False,
        )

    def complete(
        self,
        system: str,
        user: str,
        *,
        schema: dict,
        temperature: float,
        max_tokens: int,
        seed: int,
    ) -> Completion:
        with self._lock:
            out = self.llm.create_chat_completion(
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format={"type": "json_object", "schema": schema},
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
            )
        return Completion.with_usage(
            out["choices"][0]["message"].get("content") or "", out.get("usage")
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
        )
    raise JudgeError(
        f"judge.backend: unknown backend {cfg.backend!r}; use openai, batch or llamacpp"
    )
