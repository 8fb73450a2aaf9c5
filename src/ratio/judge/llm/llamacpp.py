"""A GGUF model in this process through llama-cpp-python (offline, no server).

Sampled answers are constrained by the prompt's JSON-schema grammar; scored answers read
each verdict's probability straight off the logits (teacher forcing).
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from ratio.judge.llm.interface import Completion, JudgeError, Messages, RequestRejected, scorable
from ratio.judge.llm.prompts import VERDICTS, verdict_answer

if TYPE_CHECKING:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_types import CreateChatCompletionResponse

LOCAL_MODELS = {
    "qwen2.5-1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
}


def model_dirs() -> list[Path]:
    dirs = [Path(__file__).resolve().parents[3] / "models" / "llm", Path.cwd() / "models" / "llm"]
    env = os.environ.get("RATIO_LLM_DIR")
    return [Path(env), *dirs] if env else dirs


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
