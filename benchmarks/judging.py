"""Judging throughput per backend, against calling llama.cpp directly in the same run.

    python benchmarks/judging.py [--model smollm2|qwen2.5-1.5b] [--pairs 6] [--threads 2]

Judges the same seeded sample of real silver pairs (Address, Specify, Broaden from the
test split of ``--build-out``) with the relation's first silver prompt, through:

* ``reference``: ``Llama.create_chat_completion`` in a plain loop (same grammar, no Ratio);
* ``llamacpp``: Ratio's in-process backend through ``Judge`` (cache, validation, retries);
* ``llamacpp verdicts-only``: the same with ``reasons = false`` (no free-text reasons);
* ``llamacpp P(accept)``: ``scoring = "logprob"``: verdict probabilities, no generation;
* ``openai → llama_cpp.server``: the HTTP backend against a local OpenAI-compatible server;
* ``cache``: a rerun of the first Ratio pass, every answer from SQLite.

Prints judgments/s, generated tokens per judgment and each row's ratio to the reference.
The Batch API is not timed: its turnaround is OpenAI's (minutes to 24 h), not ours.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def sample_tasks(build_out: Path, pairs: int, seed: int):
    """``pairs`` seeded test-split pairs per relation, each with its relation's first prompt."""
    import pyarrow.compute as pc

    from ratio.core.layout import RunDir
    from ratio.core.sampling import stratified_sample
    from ratio.judge.llm.prompts import relation_prompts
    from ratio.judge.silver import silver_tasks

    bench = RunDir(build_out).benchmark.load("test")
    c = bench.candidates
    gold = dict(zip(c["candidate_id"].to_pylist(), c["text"].to_pylist(), strict=True))
    tasks = []
    for rel in ("address", "specify", "broaden"):
        q = bench.queries.filter(pc.equal(bench.queries["relation"], rel))
        sample = stratified_sample(q, pairs, seed, by="marker")
        tasks += silver_tasks(sample, gold, relation_prompts("silver", rel)[:1])
    return tasks


def reference(llm, tasks, max_tokens: int) -> tuple[float, int]:
    t0, out_tokens = time.perf_counter(), 0
    for t in tasks:
        out = llm.create_chat_completion(
            messages=[
                {"role": "system", "content": t.prompt.system},
                {"role": "user", "content": t.user},
            ],
            response_format={"type": "json_object", "schema": t.prompt.schema},
            temperature=0.0,
            max_tokens=max_tokens,
            seed=0,
        )
        out_tokens += out["usage"]["completion_tokens"]
    return time.perf_counter() - t0, out_tokens


def through_judge(
    backend, tasks, cache: Path, max_tokens: int, reasons: bool = True, scoring: str = "sample"
):
    from ratio.judge.llm.cache import JudgmentCache
    from ratio.judge.llm.runner import Judge

    judge = Judge(
        backend,
        JudgmentCache(cache),
        max_tokens=max_tokens,
        reasons=reasons,
        scoring=scoring,
        max_retries=1,
    )
    t0 = time.perf_counter()
    res = judge.run(tasks)
    secs = time.perf_counter() - t0
    invalid = sum(not r.valid for r in res)
    return secs, judge.usage.output_tokens, invalid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--pairs", type=int, default=6, help="pairs per relation")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--build-out", type=Path, default=REPO / "runs" / "neurips")
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from llama_cpp import Llama

    from ratio.corpus.slices import start_llama_server
    from ratio.judge.llm.backends import OpenAIChatBackend
    from ratio.judge.llm.llamacpp import LlamaCppBackend, resolve_gguf

    tasks = sample_tasks(args.build_out, args.pairs, args.seed)
    gguf = resolve_gguf(args.model)
    n = len(tasks)
    rows: list[dict] = []

    def add(name: str, secs: float, out_tokens: int, invalid: int = 0) -> None:
        rows.append(
            {
                "run": name,
                "judgments": n,
                "seconds": round(secs, 2),
                "judgments_per_s": round(n / secs, 4),
                "output_tokens_per_judgment": round(out_tokens / n, 1),
                "invalid": invalid,
            }
        )
        print(json.dumps(rows[-1]), flush=True)

    with tempfile.TemporaryDirectory(prefix="ratio-judge-bench-") as td:
        td = Path(td)
        llm = Llama(model_path=str(gguf), n_ctx=4096, n_threads=args.threads, verbose=False)
        add("reference: llama.cpp loop", *reference(llm, tasks, args.max_tokens))
        del llm
        backend = LlamaCppBackend(str(gguf), n_threads=args.threads)
        add("llamacpp", *through_judge(backend, tasks, td / "a.sqlite", args.max_tokens))
        add(
            "llamacpp verdicts-only",
            *through_judge(backend, tasks, td / "b.sqlite", args.max_tokens, reasons=False),
        )
        add(
            "llamacpp P(accept)",
            *through_judge(backend, tasks, td / "d.sqlite", args.max_tokens, scoring="logprob"),
        )
        add("cache (rerun)", *through_judge(backend, tasks, td / "a.sqlite", args.max_tokens))
        del backend
        if not args.skip_server:
            proc, url = start_llama_server(
                gguf, td / "server.log", alias="judge", threads=args.threads
            )
            try:
                http = OpenAIChatBackend(url, "judge", timeout_s=600, concurrency=1)
                add(
                    "openai → llama_cpp.server",
                    *through_judge(http, tasks, td / "c.sqlite", args.max_tokens),
                )
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    ref = rows[0]["judgments_per_s"]
    print(f"\nmodel {gguf.name}, {args.threads} threads, {n} judgments per run")
    print("| run | judgments/s | output tokens / judgment | invalid | vs reference |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['run']} | {r['judgments_per_s']:.3f} | {r['output_tokens_per_judgment']} | "
            f"{r['invalid']} | {r['judgments_per_s'] / ref:.2f}x |"
        )
    if args.json:
        args.json.write_text(json.dumps({"model": gguf.name, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
