"""Load test of the search service on loopback: latency percentiles and requests/s.

Usage:
  .venv/bin/python benchmarks/serve_load.py [--candidates runs/neurips/benchmark/test/candidates.parquet]
      [--config configs/neurips.toml] [--retriever bm25 --retriever "static-mpnet (model2vec)"]
      [--queries runs/neurips/benchmark/test/queries.parquet]
      [--requests 1000] [--concurrency 1 --concurrency 8] [--cores 2] [--client raw|httpx] [--out FILE.json]

Starts ``ratio serve`` in a subprocess pinned to ``--cores`` CPUs (the target is
p95 < 100 ms on 2 cores), waits until it is healthy, then drives ``POST /search``
with asyncio at each concurrency level (a minimal keep-alive HTTP/1.1 client, or httpx) (closed loop: each of C workers
sends its next request when the previous answer arrives). Queries are the
benchmark's own queries (``queries.parquet`` next to the pool, or ``--queries``) so every
request is a different, realistic statement; ``--candidates ""`` serves the config's own
``[serve]`` collection (e.g. every sentence of a year); moves rotate address/broaden/specify.
Latency is measured at the client (includes HTTP and JSON), plus the server's
own ``/metrics`` percentiles; each row also gives the CPU the server and this client spent per
request (they share the cores). The first run builds the pool file and indexes
(under --index-dir, default ``<build.out>/serve/...``); later runs reuse them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

from ratio.retrieval.cpu import cpu_summary
from ratio.retrieval.models import OFFLINE_ENV

REPO = Path(__file__).resolve().parents[1]
MOVES = ("address", "broaden", "specify")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_queries(src: Path, n: int, seed: int = 13) -> list[str]:
    import pyarrow.parquet as pq

    texts = pq.read_table(src, columns=["text"]).column("text").to_pylist()
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(texts))[:n]
    return [texts[i] for i in idx]


def start_server(args, port: int, log) -> subprocess.Popen:
    cmd = [sys.executable, "-c", "from ratio.cli import main; main()", "serve"]
    cmd += ["--config", str(args.config), "--port", str(port)]
    if args.candidates:
        cmd += ["--candidates", str(args.candidates)]
    if args.index_dir:
        cmd += ["--index-dir", str(args.index_dir)]
    for r in args.retriever:
        cmd += ["--warm", r]
    env = {**OFFLINE_ENV, **os.environ}
    env.update(RATIO_THREADS=str(args.cores), OMP_NUM_THREADS=str(args.cores))
    cores = (
        sorted(os.sched_getaffinity(0))[: args.cores] if hasattr(os, "sched_getaffinity") else None
    )

    def pin() -> None:  # runs in the child: emulate a small machine
        if cores:
            os.sched_setaffinity(0, cores)

    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=pin)


def wait_healthy(base: str, proc: subprocess.Popen, timeout: float) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with code {proc.returncode} (see the log)")
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return time.perf_counter() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server not healthy after {timeout:.0f}s")


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) a process has used so far; 0 where there is no
    /proc. The server and this client share the cores, so each one's share is reported."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RawConnection:
    """One keep-alive HTTP/1.1 connection speaking just what ``POST /search`` needs. The client
    shares the server's cores, and httpx spends ~3 ms of CPU a request (measured: 2.9-3.1),
    a sixth of the service's; this spends ~0.3, so the cores measure the server, as they
    would with clients on other machines. ``--client httpx`` keeps the full client."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        data = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        self.writer.write(head.encode() + data)
        status_line, *headers = (await self.reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        length = next(
            (int(h.split(b":", 1)[1]) for h in headers if h.lower().startswith(b"content-length:")),
            None,
        )
        if length is None:
            raise SystemExit(f"the server answered without a Content-Length: {status_line!r}")
        await self.reader.readexactly(length)
        return int(status_line.split()[1])

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


async def drive(
    base: str,
    queries: list[str],
    retriever: str,
    k: int,
    conc: int,
    server_pid: int = 0,
    client: str = "raw",
) -> dict:
    lat: list[float] = []
    errors = 0
    it = iter(enumerate(queries))

    async def worker(post) -> None:
        nonlocal errors
        for i, q in it:
            body = {"query": q, "move": MOVES[i % 3], "k": k, "retriever": retriever}
            t = time.perf_counter()
            status = await post("/search", body)
            lat.append((time.perf_counter() - t) * 1000)
            if status != 200:
                errors += 1

    url = httpx.URL(base)
    limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as full:
        raw = [RawConnection(url.host, url.port or 80) for _ in range(conc)]

        async def via_httpx(path: str, body: dict) -> int:
            return (await full.post(path, json=body)).status_code

        posts = [c.post for c in raw] if client == "raw" else [via_httpx] * conc
        t0, server0, client0 = time.perf_counter(), cpu_seconds(server_pid), time.process_time()
        await asyncio.gather(*[worker(post) for post in posts])
        wall = time.perf_counter() - t0
        server_cpu, client_cpu = cpu_seconds(server_pid) - server0, time.process_time() - client0
        for c in raw:
            await c.close()
    a = np.array(lat)
    return {
        "retriever": retriever,
        "client": client,
        "concurrency": conc,
        "requests": len(a),
        "errors": errors,
        "rps": round(len(a) / wall, 1),
        "p50_ms": round(float(np.percentile(a, 50)), 2),
        "p95_ms": round(float(np.percentile(a, 95)), 2),
        "p99_ms": round(float(np.percentile(a, 99)), 2),
        "mean_ms": round(float(a.mean()), 2),
        "server_cpu_ms": round(server_cpu * 1000 / len(a), 2),  # per request
        "client_cpu_ms": round(client_cpu * 1000 / len(a), 2),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--candidates",
        type=str,
        default=str(REPO / "runs/neurips/benchmark/test/candidates.parquet"),
        help='a candidates.parquet to serve; "" = the config\'s [serve] collection',
    )
    p.add_argument(
        "--queries", type=Path, default=None, help="queries.parquet (default: beside the pool)"
    )
    p.add_argument("--config", type=Path, default=REPO / "configs/neurips.toml")
    p.add_argument("--retriever", action="append", default=None, help="repeatable")
    p.add_argument("--requests", type=int, default=1000, help="per retriever and concurrency")
    p.add_argument("--concurrency", type=int, action="append", default=None, help="repeatable")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="raw: a minimal HTTP/1.1 client (~0.3 ms CPU a request); httpx: the full one (~3)",
    )
    p.add_argument("--index-dir", type=Path, default=None)
    p.add_argument("--startup-timeout", type=float, default=3600)
    p.add_argument("--out", type=Path, default=None, help="write results as JSON")
    args = p.parse_args()
    args.retriever = args.retriever or ["bm25", "static-mpnet (model2vec)"]
    args.concurrency = args.concurrency or [1, 8]
    if args.candidates and not Path(args.candidates).is_file():
        raise SystemExit(
            f"no candidate pool at {args.candidates} (run `ratio build` or pass --candidates)"
        )
    if args.queries is None:
        pool = Path(args.candidates) if args.candidates else REPO / "runs/neurips/benchmark/test"
        args.queries = (pool.parent if args.candidates else pool) / "queries.parquet"
    if not args.queries.is_file():
        raise SystemExit(f"no queries at {args.queries} (pass --queries)")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"ratio-serve-load-{port}.log"
    with open(log_path, "w") as log:
        t0 = time.perf_counter()
        proc = start_server(args, port, log)
        try:
            ready = wait_healthy(base, proc, args.startup_timeout)
            print(f"server ready in {ready:.1f}s (log: {log_path})", file=sys.stderr)
            # a second start measures the restart cost with every index already on disk
            n_queries = args.requests * len(args.concurrency)
            queries = load_queries(args.queries, n_queries + 50)
            rows = []
            for r in args.retriever:
                asyncio.run(drive(base, queries[-50:], r, args.k, 4, 0, args.client))  # warm up
                for j, c in enumerate(args.concurrency):
                    qs = queries[j * args.requests : (j + 1) * args.requests]
                    rows.append(asyncio.run(drive(base, qs, r, args.k, c, proc.pid, args.client)))
                    print(json.dumps(rows[-1]), file=sys.stderr)
            server_metrics = httpx.get(base + "/metrics").json()
            info = httpx.get(base + "/info").json()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        restart_proc = start_server(args, port, log)
        try:
            restart = wait_healthy(base, restart_proc, args.startup_timeout)
        finally:
            restart_proc.terminate()
            restart_proc.wait(timeout=30)
    result = {
        "pool": args.candidates or info["pool"]["directory"],
        "cpu": cpu_summary(),
        "candidates": info["pool"]["candidates"],
        "cores": args.cores,
        "k": args.k,
        "first_start_s": round(ready, 1),
        "restart_s": round(restart, 1),
        "load_avg": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "machine": platform.platform(),
        "total_s": round(time.perf_counter() - t0, 1),
        "runs": rows,
        "server_metrics": server_metrics["routes"].get("POST /search", {}),
    }
    print(
        f"\npool: {result['candidates']:,} candidates ({result['pool']}); server pinned to "
        f"{args.cores} cores of {result['cpu']}; k={args.k}; first start "
        f"{result['first_start_s']}s, restart {result['restart_s']}s; load average "
        f"{result['load_avg']}\n"
    )
    print(
        "| retriever | concurrency | requests | req/s | p50 ms | p95 ms | p99 ms | errors "
        "| server CPU ms/req | client CPU ms/req |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['retriever']} | {r['concurrency']} | {r['requests']} | {r['rps']} | "
            f"{r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['errors']} | "
            f"{r['server_cpu_ms']} | {r['client_cpu_ms']} |"
        )
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
