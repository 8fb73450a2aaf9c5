"""Run many judgments through one backend: cache, concurrency, retries, accounting.

Only cache misses reach the backend: on a thread pool (HTTP, llama.cpp) or as one OpenAI
batch per round. An answer that does not parse as the prompt's JSON shape is retried at
a slightly higher temperature (a deterministic model would repeat itself) and after
``max_retries`` recorded invalid with its raw text -- results are never dropped. Only
transport failures are left uncached, so a rerun tries them again.

With ``scoring="logprob"`` a task is accepted when ``p_accept`` reaches its prompt's
calibrated threshold (0.5 otherwise); the cache keeps the probability, so a new threshold
needs no new request. Few-shot examples (``Task.shots``) are shown as earlier turns,
each answered the way its label says.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import KW_ONLY, asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from tqdm import tqdm

from ratio.core.io import RatioError, write_text_atomic
from ratio.core.layout import RunDir
from ratio.core.schemas import JUDGMENTS
from ratio.judge.llm.backends import OpenAIBatchBackend, make_backend
from ratio.judge.llm.cache import JudgmentCache, request_key
from ratio.judge.llm.interface import Backend, Completion, RequestRejected, TransientError
from ratio.judge.llm.prompts import InvalidResponse, Prompt, example_answer, verdicts_only

SCORING = ("sample", "logprob")


@dataclass(frozen=True)
class Shot:
    """A few-shot example: template values of a labelled pair and its label."""

    values: tuple[tuple[str, str], ...]
    accepted: bool

    @classmethod
    def of(cls, values: dict[str, str], accepted: bool) -> Shot:
        return cls(tuple(sorted(values.items())), accepted)


@dataclass
class Task:
    """One request: a prompt, the values of its user template, and what it is about."""

    prompt: Prompt
    values: dict[str, str]
    query_id: str = ""
    candidate_id: str = ""
    tag: str = ""  # free label: a system name, a list order, a marker ...
    shots: tuple[Shot, ...] = ()

    @property
    def user(self) -> str:
        return self.prompt.render(**self.values)

    def messages(self) -> list[dict[str, str]]:
        """System prompt, each shot as a user turn answered per its label, then this pair."""
        p = self.prompt
        msgs = [{"role": "system", "content": p.system}]
        for s in self.shots:
            msgs.append({"role": "user", "content": p.render(**dict(s.values))})
            msgs.append({"role": "assistant", "content": example_answer(p.shape, s.accepted)})
        msgs.append({"role": "user", "content": self.user})
        return msgs


@dataclass
class Result:
    task: Task
    key: str
    valid: bool
    accepted: bool | None
    parsed: dict | None
    raw: str
    error: str = ""
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False

    @property
    def p_accept(self) -> float | None:
        """The model's probability of accepting (scored judgments only)."""
        return (self.parsed or {}).get("p_accept") if self.valid else None


@dataclass
class _Attempts:
    """What the requests for one task have brought so far (thread and batch paths alike)."""

    attempts: int = 0
    invalid: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    raw: str = ""
    error: str = ""

    def add(self, c: Completion) -> None:
        self.input_tokens += c.input_tokens
        self.output_tokens += c.output_tokens
        self.raw = c.text

    def result(self, task: Task, key: str, parsed: dict | None = None) -> Result:
        """Valid with the parsed answer; without one, invalid with the last error."""
        counts = (self.attempts, self.input_tokens, self.output_tokens)
        if parsed is None:
            return Result(task, key, False, None, None, self.raw, self.error, *counts)
        return Result(task, key, True, parsed.get("accepted"), parsed, self.raw, "", *counts)


@dataclass
class Usage:
    """What one run cost: calls, tokens, dollars, time."""

    judgments: int = 0
    cached: int = 0
    new: int = 0
    requests: int = 0
    retries: int = 0
    invalid: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    by_prompt: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        rate = round(self.new / self.seconds, 4) if self.seconds > 0 else 0.0
        return asdict(self) | {"judgments_per_s": rate, "cost_usd": round(self.cost_usd, 6)}


def price_of(prices: dict, model: str, batch: bool) -> tuple[float, float]:
    """USD per token (input, output) from a table of USD per 1M tokens (``*`` = any model)."""
    p = prices.get(model) or prices.get("*") or {}
    mult = float(p.get("batch_multiplier", 0.5)) if batch else 1.0
    return float(p.get("input", 0.0)) * mult / 1e6, float(p.get("output", 0.0)) * mult / 1e6


@dataclass(eq=False)
class Judge:
    """Judges tasks with one backend and one cache; ``usage`` accumulates over runs."""

    backend: Backend
    cache: JudgmentCache
    _: KW_ONLY
    max_retries: int = 3
    backoff_s: float = 1.0
    temperature: float = 0.0
    max_tokens: int = 256
    prices: dict = field(default_factory=dict)
    poll_s: float = 30.0
    seed: int = 0
    retry_invalid: bool = False
    reasons: bool = True
    scoring: str = "sample"
    thresholds: dict[str, float] = field(default_factory=dict)
    progress: bool = True
    sleep: Callable[[float], None] = time.sleep
    usage: Usage = field(default_factory=Usage, init=False)

    def __post_init__(self) -> None:
        if self.scoring not in SCORING:
            raise RatioError(f"judge.scoring: {self.scoring!r} is not one of {', '.join(SCORING)}")
        self.max_retries = max(0, self.max_retries)
        self.prices = self.prices or {}
        self.thresholds = dict(self.thresholds or {})

    def key(self, task: Task) -> str:
        p = task.prompt
        digest = p.digest if self.reasons else p.digest + "+verdicts-only"
        if self.scoring == "logprob":
            digest += "+p-accept"
        if task.shots:
            shots = json.dumps([[s.values, s.accepted] for s in task.shots])
            digest += "+shots:" + hashlib.sha256(shots.encode()).hexdigest()[:16]
        return request_key(
            self.backend.kind, self.backend.model, p.id, p.version, digest, task.user
        )

    def interpret(self, task: Task, c: Completion) -> dict:
        """The parsed answer of one completion; raises :class:`InvalidResponse`."""
        p = task.prompt
        if self.scoring == "sample":
            return p.parse(c.text)
        if c.verdict_p is None:
            raise InvalidResponse("no verdict probabilities in the answer")
        try:
            parsed = p.parse(c.text)
        except InvalidResponse:
            parsed = {}  # a teacher-forced answer holds the verdicts only
        return parsed | {
            "accepted": all(v >= 0.5 for v in c.verdict_p),  # the greedy verdict
            "p_accept": math.prod(c.verdict_p),
            "verdict_p": c.verdict_p,
        }

    def _request(self, task: Task, invalid: int) -> Completion:
        p = task.prompt
        kw: dict[str, Any] = {"max_tokens": self.max_tokens, "seed": self.seed + invalid}
        kw["schema"] = self.schema(p)
        if self.scoring == "logprob":
            return self.backend.score(task.messages(), shape=p.shape, **kw)
        return self.backend.complete(task.messages(), temperature=self._temperature(invalid), **kw)

    def schema(self, prompt: Prompt) -> dict:
        return prompt.schema if self.reasons else verdicts_only(prompt.schema)

    def _temperature(self, invalid: int) -> float:
        return self.temperature if invalid == 0 else max(self.temperature, min(1.0, 0.3 * invalid))

    def _charge(self, used: Result | Completion, batch: bool) -> None:
        pin, pout = price_of(self.prices, self.backend.model, batch)
        self.usage.input_tokens += used.input_tokens
        self.usage.output_tokens += used.output_tokens
        self.usage.cost_usd += used.input_tokens * pin + used.output_tokens * pout

    def _store(self, res: Result) -> None:
        p = res.task.prompt
        input_hash = hashlib.sha256(res.task.user.encode()).hexdigest()[:24]
        request = (self.backend.kind, self.backend.model, p.id, p.version, input_hash)
        self.cache.put(res.key, request, res)

    def _one(self, task: Task, key: str) -> tuple[Result, bool]:
        """Returns the result and whether it may be cached (not a transport failure)."""
        st = _Attempts()
        transient = 0
        max_transient = 0 if getattr(self.backend, "retries_itself", False) else self.max_retries
        while True:  # bounded: each branch below either returns or raises a counter
            st.attempts += 1
            try:
                c = self._request(task, st.invalid)
            except TransientError as e:
                st.error = str(e)
                transient += 1
                if transient > max_transient:
                    return st.result(task, key), False
                self.sleep(self.backoff_s * 2 ** (transient - 1) * (1 + 0.1 * random.random()))
                continue
            except RequestRejected as e:
                st.error = f"rejected: {e}"
                return st.result(task, key), True
            st.add(c)
            try:
                return st.result(task, key, self.interpret(task, c)), True
            except InvalidResponse as e:
                st.error = f"invalid: {e}"
                st.invalid += 1
                if st.invalid > self.max_retries:  # the model answered, just never validly
                    return st.result(task, key), True

    def _run_threads(self, todo: list[tuple[str, Task]], bar) -> dict[str, Result]:
        out: dict[str, Result] = {}
        it = iter(todo)
        with ThreadPoolExecutor(max_workers=self.backend.concurrency) as pool:
            running = set()
            try:  # keep at most 2x workers in flight: cheap interruption
                for key, task in itertools.islice(it, 2 * self.backend.concurrency):
                    running.add(pool.submit(self._one, task, key))
                while running:
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for f in done:
                        running.remove(f)
                        res, cacheable = f.result()
                        self.usage.requests += res.attempts
                        self.usage.retries += max(0, res.attempts - 1)
                        self._charge(res, batch=False)
                        if cacheable:
                            self._store(res)
                        out[res.key] = res
                        bar.update(1)
                        for key, task in itertools.islice(it, 1):  # the next task, if any
                            running.add(pool.submit(self._one, task, key))
            except BaseException:
                for f in running:
                    f.cancel()
                raise
        return out

    def _ingest_batch(
        self,
        backend: OpenAIBatchBackend,
        batch: dict,
        tasks: dict[str, Task],
        state: dict[str, _Attempts],
        final: bool,
    ) -> dict[str, Result]:
        done: dict[str, Result] = {}
        scored = self.scoring == "logprob"
        shapes = {k: t.prompt.shape for k, t in tasks.items()} if scored else None
        for key, c in backend.results(batch, shapes).items():
            task = tasks.get(key)
            if task is None:
                continue
            st = state.setdefault(key, _Attempts())
            st.attempts += 1
            if isinstance(c, str):
                st.error = c
                continue
            st.add(c)
            self._charge(c, batch=True)
            try:
                done[key] = st.result(task, key, self.interpret(task, c))
            except InvalidResponse as e:
                st.invalid += 1
                st.error = f"invalid: {e}"
                if not final and st.invalid <= self.max_retries:
                    continue
                done[key] = st.result(task, key)
            self._store(done[key])
        return done

    def _run_batch(self, todo: list[tuple[str, Task]], bar) -> dict[str, Result]:
        backend = self.backend
        assert isinstance(backend, OpenAIBatchBackend)
        tasks = dict(todo)
        out: dict[str, Result] = {}
        state: dict[str, _Attempts] = {}
        # resume: batches an earlier (interrupted) run already submitted and paid for
        for batch_id, keys in self.cache.open_batches(backend.kind, backend.model):
            if not set(keys) & tasks.keys():
                continue
            batch = backend.wait(batch_id, self.poll_s, sleep=self.sleep)
            out.update(self._ingest_batch(backend, batch, tasks, state, final=False))
            self.cache.close_batch(batch_id, batch.get("status", "done"))
        scored = self.scoring == "logprob"
        for rnd in range(self.max_retries + 1):
            remaining = [k for k in tasks if k not in out]
            if not remaining:
                break
            reqs = []
            for k in remaining:
                n_inv = state[k].invalid if k in state else 0
                body = backend.request_body(
                    tasks[k].messages(),
                    temperature=0.0 if scored else self._temperature(n_inv),
                    max_tokens=self.max_tokens,
                    seed=self.seed + n_inv,
                    logprobs=scored,
                )
                reqs.append((k, body))
            batch_id = backend.submit(reqs)
            self.cache.add_batch(batch_id, backend.kind, backend.model, remaining)
            self.usage.requests += len(reqs)
            if rnd:
                self.usage.retries += len(reqs)
            batch = backend.wait(batch_id, self.poll_s, sleep=self.sleep)
            got = self._ingest_batch(backend, batch, tasks, state, final=rnd == self.max_retries)
            self.cache.close_batch(batch_id, batch.get("status", "done"))
            out.update(got)
            bar.update(len(got))
        for k in tasks:  # never silently dropped: still missing = transport failure, uncached
            if k not in out:
                st = state.get(k) or _Attempts(error="no result in batch output")
                out[k] = st.result(tasks[k], k)
        return out

    def run(self, tasks: Sequence[Task], desc: str = "judging") -> list[Result]:
        """Results in task order; identical requests are made (and paid) once."""
        t0 = time.monotonic()
        keys = [self.key(t) for t in tasks]
        first: dict[str, Task] = {}
        for k, t in zip(keys, tasks, strict=True):
            first.setdefault(k, t)
        results: dict[str, Result] = {
            k: Result(first[k], **vars(c), cached=True)  # a cached row has Result's fields
            for k, c in self.cache.get_many(list(first)).items()
            if c.valid or not self.retry_invalid
        }
        todo = [(k, t) for k, t in first.items() if k not in results]
        # grouped by prompt, consecutive requests share the long system prefix, which
        # llama.cpp (KV cache) and hosted APIs (prompt caching) reuse instead of re-reading
        todo.sort(key=lambda kt: kt[1].prompt.id)
        with tqdm(total=len(todo), desc=desc, disable=None if self.progress else True) as bar:
            if todo:
                if isinstance(self.backend, OpenAIBatchBackend):
                    results.update(self._run_batch(todo, bar))
                else:
                    results.update(self._run_threads(todo, bar))
        u = self.usage
        u.judgments += len(tasks)
        u.cached += sum(1 for k in keys if results[k].cached)
        u.new += len(todo)
        u.seconds += time.monotonic() - t0
        out = []
        for k, t in zip(keys, tasks, strict=True):
            r = results[k]
            if r.task is not t:  # a duplicate request: same answer, this task's labels
                r = replace(r, task=t, input_tokens=0, output_tokens=0, cached=True)
            if r.p_accept is not None:  # the calibrated verdict, from the cached probability
                r.accepted = r.p_accept >= float(self.thresholds.get(t.prompt.id, 0.5))
            out.append(r)
            bp = u.by_prompt.setdefault(t.prompt.id, {"n": 0, "accepted": 0, "invalid": 0})
            bp["n"] += 1
            bp["accepted"] += int(bool(r.accepted) and r.valid)
            bp["invalid"] += int(not r.valid)
        u.invalid += sum(1 for r in out if not r.valid)
        return out


def write_report(out_dir: Path, report: dict, markdown: str) -> None:
    """A judging step's ``report.json`` (machine-readable) and ``report.md`` (for people)."""
    write_text_atomic(out_dir / "report.json", json.dumps(report, indent=2, default=str) + "\n")
    write_text_atomic(out_dir / "report.md", markdown)


def results_table(results: Sequence[Result], backend: Backend) -> pa.Table:
    cols: dict[str, list] = {f.name: [] for f in JUDGMENTS}
    for r in results:
        t = r.task
        cols["query_id"].append(t.query_id)
        cols["candidate_id"].append(t.candidate_id)
        cols["prompt_id"].append(t.prompt.id)
        cols["prompt_version"].append(t.prompt.version)
        cols["tag"].append(t.tag)
        cols["accepted"].append(r.accepted if r.valid else None)
        cols["valid"].append(r.valid)
        cols["parsed"].append(json.dumps(r.parsed) if r.parsed is not None else None)
        cols["raw"].append(r.raw)
        cols["error"].append(r.error)
        cols["backend"].append(backend.kind)
        cols["model"].append(backend.model)
        cols["attempts"].append(r.attempts)
        cols["input_tokens"].append(r.input_tokens)
        cols["output_tokens"].append(r.output_tokens)
        cols["cached"].append(r.cached)
        cols["p_accept"].append(r.p_accept)
    return pa.table(cols, schema=JUDGMENTS)


def open_judge(config, *, backend: Backend | None = None, progress: bool = True, **kw) -> Judge:
    """A :class:`Judge` for a run config: its backend, cache file, retries and prices."""
    jc = config.judge
    return Judge(
        backend or make_backend(jc, seed=config.build.seed),
        JudgmentCache(RunDir.of(config).judge.cache),
        max_retries=jc.max_retries,
        backoff_s=jc.backoff_s,
        temperature=jc.temperature,
        max_tokens=jc.max_tokens,
        prices=jc.prices,
        poll_s=jc.batch_poll_s,
        seed=config.build.seed,
        reasons=jc.reasons,
        scoring=jc.scoring,
        thresholds=jc.thresholds,
        progress=progress,
        **kw,
    )


__all__ = ["Judge", "Result", "Shot", "Task", "Usage", "results_table"]
