"""A fake OpenAI API on loopback (chat completions + files + batches) and a tiny benchmark.

The fake stands in only for the paid API; everything on our side (backends, runner,
cache, prompts) runs for real against it over HTTP. Its answers are driven by words in
the user message so tests can script behaviour:

* ``GARBAGE``   -> always answers text that is not JSON
* ``FLAKY``     -> the first answer for that exact message is not JSON, later ones are
* ``RATELIMIT`` -> the first request for that message gets HTTP 429
* ``p=0.73``    -> the model's P(accept) of every verdict is 0.73 (what ``logprobs`` report),
  and it answers accepting when that is at least 0.5
* otherwise the ``responder`` decides (default: accept when ``good`` is in the message)

With ``logprobs`` requested, the answer comes back cut into word/space/punctuation tokens,
each verdict value with both values among its ``top_logprobs``.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pytest

from ratio.core.io import write_parquet_atomic
from ratio.core.schemas import CANDIDATES, QRELS, QUERIES


def shaped_answer(system: str, accept: bool) -> str:
    """A valid answer in the JSON shape the system prompt asks for."""
    if "is_problem_valid" in system:
        v = "True" if accept else "False"
        return json.dumps(
            {
                "is_problem_valid": {"is_valid": "True", "reason": "ok"},
                "is_solution_valid": {"is_valid": v, "reason": "ok"},
                "match_evaluation": {"is_match": v, "reason": "fake"},
            }
        )
    if '"winner"' in system:
        return json.dumps({"winner": "A" if accept else "B", "confidence": 0.8, "reason": "fake"})
    if '"markers"' in system:
        return json.dumps(
            {
                "markers": [
                    "to thwart this quirk",
                    "To Defuse This Quirk,",
                    "however",
                    "to counter this issue",
                ]
            }
        )
    if '"label"' in system:
        return json.dumps({"label": accept, "rationale": "fake", "confidence": "high"})
    return json.dumps({"decision": accept, "confidence": 0.9, "reason": "fake"})


P_ACCEPT = re.compile(r"p=(0\.\d+)")


def default_responder(system: str, user: str) -> str:
    m = P_ACCEPT.search(user)
    return shaped_answer(system, float(m.group(1)) >= 0.5 if m else "good" in user)


def token_logprobs(content: str, user: str) -> dict:
    """``choices[0].logprobs`` for ``content``: verdict tokens carry both values."""
    m = P_ACCEPT.search(user)
    items = []
    for tok in re.findall(r"\s+|\w+|[^\w\s]", content):
        if tok.lower() in ("true", "false"):
            yes, no = ("true", "false") if tok.islower() else ("True", "False")
            pa = float(m.group(1)) if m else (0.9 if tok == yes else 0.1)
            top = [
                {"token": yes, "logprob": math.log(pa)},
                {"token": no, "logprob": math.log(1 - pa)},
            ]
            lp = top[0]["logprob"] if tok == yes else top[1]["logprob"]
        else:
            top, lp = [{"token": tok, "logprob": 0.0}], 0.0
        items.append({"token": tok, "logprob": lp, "bytes": None, "top_logprobs": top})
    return {"content": items}


class FakeOpenAI:
    def __init__(self):
        self.responder = default_responder
        self.chat_calls = 0
        self.bodies: list[dict] = []  # every chat request body, batch lines included
        self.per_message: Counter[str] = Counter()
        self.fail_after: int | None = None  # answer 401 once this many chat calls succeeded
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.batch_polls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, body: dict) -> tuple[int, dict]:
        system = body["messages"][0]["content"]
        user = body["messages"][-1]["content"]
        with self.lock:
            if self.fail_after is not None and self.chat_calls >= self.fail_after:
                return 401, {"error": {"message": "invalid api key"}}
            self.per_message[user] += 1
            self.bodies.append(body)
            n = self.per_message[user]
            self.chat_calls += 1
        if "RATELIMIT" in user and n == 1:
            return 429, {"error": {"message": "slow down"}}
        if "GARBAGE" in user or ("FLAKY" in user and n == 1):
            content = "Sure! Here is my verdict: {oops"
        else:
            content = self.responder(system, user)
        usage = {
            "prompt_tokens": (len(system) + len(user)) // 4,
            "completion_tokens": len(content) // 4,
        }
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
            "logprobs": token_logprobs(content, user) if body.get("logprobs") else None,
        }
        return 200, {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [choice],
            "usage": usage,
        }

    def _handler(self):
        fake = self

        class H(BaseHTTPRequestHandler):
            def _send(self, code: int, obj, raw: bytes | None = None):
                body = raw if raw is not None else json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length", 0)))

            def do_POST(self):  # noqa: N802
                if self.path == "/v1/chat/completions":
                    code, obj = fake.answer(json.loads(self._body()))
                    self._send(code, obj)
                elif self.path == "/v1/files":
                    data = self._body()
                    m = re.search(
                        rb'name="file"[^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n(.*?)\r\n--', data, re.S
                    )
                    fid = f"file-{len(fake.files)}"
                    fake.files[fid] = m.group(1)
                    self._send(200, {"id": fid, "object": "file", "purpose": "batch"})
                elif self.path == "/v1/batches":
                    req = json.loads(self._body())
                    lines = [
                        json.loads(x)
                        for x in fake.files[req["input_file_id"]].decode().splitlines()
                        if x
                    ]
                    out = []
                    for ln in lines:
                        code, obj = fake.answer(ln["body"])
                        out.append(
                            {
                                "id": "r",
                                "custom_id": ln["custom_id"],
                                "response": {"status_code": code, "body": obj},
                                "error": None,
                            }
                        )
                    random.Random(len(fake.batches)).shuffle(out)  # results come back in any order
                    ofid = f"file-out-{len(fake.batches)}"
                    fake.files[ofid] = "".join(json.dumps(o) + "\n" for o in out).encode()
                    bid = f"batch_{len(fake.batches)}"
                    fake.batches[bid] = {"id": bid, "status": "validating", "output_file_id": ofid}
                    self._send(200, {"id": bid, "status": "validating"})
                else:
                    self._send(404, {"error": "no route"})

            def do_GET(self):  # noqa: N802
                m = re.fullmatch(r"/v1/batches/([\w-]+)", self.path)
                if m:
                    b = fake.batches[m.group(1)]
                    fake.batch_polls[b["id"]] += 1
                    status = "in_progress" if fake.batch_polls[b["id"]] == 1 else "completed"
                    self._send(200, {**b, "status": status})
                    return
                m = re.fullmatch(r"/v1/files/([\w-]+)/content", self.path)
                if m:
                    self._send(200, None, raw=fake.files[m.group(1)])
                    return
                self._send(404, {"error": "no route"})

            def log_message(self, *a):
                pass

        return H


@pytest.fixture
def fake_openai():
    f = FakeOpenAI()
    yield f
    f.close()


def make_benchmark(build_out: Path) -> None:
    """A tiny test split: 4 address, 3 specify, 2 broaden queries and their golds."""
    d = build_out / "benchmark" / "test"
    rows = [
        # query_id, relation, marker, query text, gold id, gold text, paper
        (
            "qa1",
            "address",
            "to address this issue",
            "Training is unstable good.",
            "ca1",
            "We clip gradients good.",
            "P1",
        ),
        (
            "qa2",
            "address",
            "to address this issue",
            "Models overfit.",
            "ca2",
            "We use dropout.",
            "P2",
        ),
        (
            "qa3",
            "address",
            "to address",
            "Memory is scarce good.",
            "ca3",
            "We quantize half good.",
            "P3",
        ),
        ("qa4", "address", "to address", "Labels are noisy.", "ca4", "We relabel good.", "P4"),
        (
            "qs1",
            "specify",
            "for example",
            "Many tasks exist good.",
            "cs1",
            "Translation good.",
            "P5",
        ),
        ("qs2", "specify", "for example", "Methods vary.", "cs2", "SGD, Adam.", "P6"),
        (
            "qs3",
            "specify",
            "specifically",
            "Gains are large good.",
            "cs3",
            "Up 3 points good.",
            "P7",
        ),
        (
            "qb1",
            "broaden",
            "more generally",
            "Dropout helps good.",
            "cb1",
            "Regularization helps good.",
            "P8",
        ),
        ("qb2", "broaden", "more generally", "X is fast.", "cb2", "Y is slow.", "P9"),
    ]
    queries = pa.table(
        {
            "query_id": [r[0] for r in rows],
            "text": [r[3] for r in rows],
            "relation": [r[1] for r in rows],
            "marker": [r[2] for r in rows],
            "paper_id": [r[6] for r in rows],
            "year": [2025] * len(rows),
            "section_category": ["introduction"] * len(rows),
            "gold_id": [r[4] for r in rows],
        },
        schema=QUERIES,
    )
    extra = [
        ("cx1", "An unrelated good remedy.", "P9"),
        ("cx2", "Nothing here.", "P1"),
        ("cx3", "Another maybe remedy.", "P2"),
    ]
    cids = [r[4] for r in rows] + [e[0] for e in extra]
    ctexts = [r[5] for r in rows] + [e[1] for e in extra]
    cpapers = [r[6] for r in rows] + [e[2] for e in extra]
    n = len(cids)
    cands = pa.table(
        {
            "candidate_id": cids,
            "text": ctexts,
            "paper_id": cpapers,
            "year": [2025] * n,
            "section_category": ["method"] * n,
            "origin": ["address"] * n,
            "marker": [""] * n,
            "paragraph_idx": [0] * n,
            "sentence_idx": [1] * n,
        },
        schema=CANDIDATES,
    )
    qrels = pa.table(
        {
            "query_id": [r[0] for r in rows],
            "candidate_id": [r[4] for r in rows],
            "relevance": [1] * len(rows),
        },
        schema=QRELS,
    )
    for name, t in (("queries", queries), ("candidates", cands), ("qrels", qrels)):
        write_parquet_atomic(d / f"{name}.parquet", t)


@pytest.fixture
def bench_config(tmp_path):
    """A RunConfig whose build.out holds the tiny benchmark; judge output under tmp_path."""
    from ratio.core.config import load_config

    make_benchmark(tmp_path / "run")
    cfg_path = tmp_path / "ratio.toml"
    cfg_path.write_text(
        '[build]\nout = "run"\nseed = 13\n[judge]\nbackend = "openai"\nmax_retries = 1\nbackoff_s = 0.0\n'
    )
    return load_config(cfg_path)
