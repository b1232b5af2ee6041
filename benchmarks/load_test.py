"""Load test of `dtsim serve` on loopback: mixed API requests from concurrent clients, with and without
background jobs running beside them.

    python benchmarks/load_test.py [--requests 2000] [--clients 16] [--workers 1] [--mix mixed|simulate]

Starts the server as a subprocess (the same command users run), waits for it, then sends requests over
keep-alive connections, one per client thread:
- `simulate`: POST /api/simulate with varied scenarios only;
- `mixed` (default): single-scenario operations in turn — /api/simulate, /api/step, /api/collective,
  /api/fabric, /api/dataparallel/critical-batch, GET /api/presets — with varied inputs.

The run is made twice side by side on the same server: alone, then while one more client keeps a
background job running (POST /api/sensitivity with `Prefer: respond-async`, polled to the end, then the
next), so the figures show whether jobs slow the single-scenario operations. Prints throughput and
latency percentiles per run and per operation; exits non-zero if any request failed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable

Request = tuple[str, str, bytes | None]  # method, path, body


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def simulate_body(rng: random.Random) -> Request:
    body = {
        "num_nodes": rng.randint(2, 5000),
        "bandwidth_mbps": round(10 ** rng.uniform(0, 4), 3),
        "latency_ms": round(rng.uniform(1, 300), 2),
        "parameters_b": round(10 ** rng.uniform(0, 3), 2),
        "inner_steps": rng.choice([32, 128, 500, "auto"]),
        "hierarchical": rng.random() < 0.3,
        "nodes_per_group": 2,
    }
    return "POST", "/api/simulate", json.dumps(body).encode()


def step_body(rng: random.Random) -> Request:
    tp = rng.choice([1, 2, 4, 8])
    pp = rng.choice([1, 2, 4, 8])
    nodes = rng.choice([8, 16, 32, 64])
    dp = nodes * 8 // (tp * pp)
    body = {
        "model": rng.choice(["gpt3-175b", "llama3.1-70b", "llama3.1-8b"]),
        "gpu": rng.choice(["a100-80gb", "h100-sxm"]),
        "nodes": nodes,
        "tp": tp,
        "pp": pp,
        "gbs": dp * rng.choice([8, 16, 32]),
    }
    return "POST", "/api/step", json.dumps(body).encode()


def collective_body(rng: random.Random) -> Request:
    body = {
        "op": rng.choice(["allreduce", "all-gather", "reduce-scatter"]),
        "size_mb": round(10 ** rng.uniform(-3, 4), 4),
        "ranks": rng.choice([8, 16, 64, 256]),
        "fabric": rng.choice(["nvlink3", "nvlink4", "ib-ndr"]),
    }
    return "POST", "/api/collective", json.dumps(body).encode()


def fabric_body(rng: random.Random) -> Request:
    body = {"cluster_power_gw": rng.choice([1, 5, 10]), "datacenters": rng.choice([4, 10, 23])}
    return "POST", "/api/fabric", json.dumps(body).encode()


def critical_batch_body(rng: random.Random) -> Request:
    body = {"params_b": round(10 ** rng.uniform(-1, 2.5), 2), "ranks": rng.choice([8, 64, 512])}
    return "POST", "/api/dataparallel/critical-batch", json.dumps(body).encode()


def presets_request(_rng: random.Random) -> Request:
    return "GET", "/api/presets", None


MIXES: dict[str, tuple[Callable[[random.Random], Request], ...]] = {
    "simulate": (simulate_body,),
    "mixed": (simulate_body, step_body, collective_body, fabric_body, critical_batch_body, presets_request),
}
JOB_BODY = json.dumps({"scenario": {}, "base": 1024, "seed": 1}).encode()  # about 1 s of work


def start_server(port: int, workers: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "dtsim", "serve", "--port", str(port), "--workers", str(workers)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/schema", timeout=2)
            return server
        except OSError:
            if time.time() > deadline or server.poll() is not None:
                server.kill()
                raise SystemExit("server did not start") from None
            time.sleep(0.3)


def job_client(
    port: int, stop: threading.Event, running: threading.Event, done: list[str], failures: list[str]
) -> None:
    """Keep one background job running until `stop`: submit, poll to the end, submit the next; `running`
    is set once the first job runs (its worker process has started)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", "Prefer": "respond-async"}
    while not stop.is_set():
        conn.request("POST", "/api/sensitivity", JOB_BODY, headers)
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 202:
            failures.append(f"job submit {resp.status}: {data[:200]!r}")
            return
        href = json.loads(data)["href"]
        while True:
            time.sleep(0.2)
            conn.request("GET", href)
            resp = conn.getresponse()
            state = json.loads(resp.read())["state"]
            if state != "queued":
                running.set()
            if state in ("done", "failed", "cancelled"):
                done.append(state)
                break
            if stop.is_set():
                conn.request("DELETE", href)
                conn.getresponse().read()
                break
    conn.close()


def run(port: int, requests: int, clients: int, mix: str, with_jobs: bool) -> dict:
    latencies: dict[str, list[float]] = defaultdict(list)
    failures: list[str] = []
    lock = threading.Lock()
    per_client = [requests // clients + (i < requests % clients) for i in range(clients)]
    makers = MIXES[mix]

    def client(k: int, n: int) -> None:
        rng = random.Random(k)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        local, bad = defaultdict(list), []
        for i in range(n):
            method, path, payload = makers[(k + i) % len(makers)](rng)
            headers = {"Content-Type": "application/json"} if payload is not None else {}
            t0 = time.perf_counter()
            conn.request(method, path, payload, headers)
            resp = conn.getresponse()
            data = resp.read()
            local[path].append(time.perf_counter() - t0)
            if resp.status != 200:
                bad.append(f"{path} {resp.status}: {data[:200]!r}")
        conn.close()
        with lock:
            for path, values in local.items():
                latencies[path].extend(values)
            failures.extend(bad)

    stop, running, jobs_done = threading.Event(), threading.Event(), []
    job_thread = threading.Thread(target=job_client, args=(port, stop, running, jobs_done, failures))
    if with_jobs:
        job_thread.start()
        if not running.wait(120):  # the first job runs before the clients start
            failures.append("the background job did not start within 120 s")
    threads = [threading.Thread(target=client, args=(k, n)) for k, n in enumerate(per_client)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if with_jobs:
        stop.set()
        job_thread.join()
    return {
        "latencies": latencies,
        "failures": failures,
        "wall": wall,
        "jobs": jobs_done,
        "with_jobs": with_jobs,
    }


def pct(lat: list[float], q: float) -> float:
    lat = sorted(lat)
    return lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3


def report(title: str, res: dict) -> None:
    every = [x for values in res["latencies"].values() for x in values]
    n, wall = len(every), res["wall"]
    jobs = f"; background jobs finished meanwhile: {len(res['jobs'])}" if res["with_jobs"] else ""
    print(f"\n{title}: {n:,} requests in {wall:.2f} s, {n / wall:,.0f} requests/s{jobs}")
    print(
        f"  all: p50 {pct(every, 0.5):.1f} ms, p90 {pct(every, 0.9):.1f}, p99 {pct(every, 0.99):.1f}, "
        f"max {max(every) * 1e3:.1f}, mean {statistics.mean(every) * 1e3:.1f}"
    )
    for path, values in sorted(res["latencies"].items()):
        print(
            f"  {path:<36} n={len(values):>5}  p50 {pct(values, 0.5):6.1f}  p99 {pct(values, 0.99):6.1f} ms"
        )
    print(f"  errors: {len(res['failures'])}")
    for line in res["failures"][:5]:
        print("   ", line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--mix", choices=sorted(MIXES), default="mixed")
    ap.add_argument("--no-jobs", action="store_true", help="skip the run beside a background job")
    args = ap.parse_args()
    port = free_port()
    server = start_server(port, args.workers)
    try:
        run(port, min(200, args.requests), args.clients, args.mix, False)  # warm every operation
        alone = run(port, args.requests, args.clients, args.mix, False)
        beside = None if args.no_jobs else run(port, args.requests, args.clients, args.mix, True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"dtsim serve --workers {args.workers}; {args.clients} clients; mix {args.mix}")
    report("alone", alone)
    if beside is not None:
        report("beside a background job", beside)
    if alone["failures"] or (beside and beside["failures"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
