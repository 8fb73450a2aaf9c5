"""The request interface every judge backend implements: its answer and its errors.

The ``openai`` client retries connection errors, 408/409/429 and 5xx itself. What is left
is sorted by what a caller should do: :class:`TransientError` (leave uncached, a rerun
tries again), :class:`RequestRejected` (400/413/422: record it invalid) and
:class:`FatalBackendError` (401/403/404: stop instead of recording thousands of failures).

Tested by tests/judge/llm/test_runner.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ratio.core.io import RatioError
from ratio.judge.llm.prompts import VERDICTS


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
