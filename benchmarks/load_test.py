"""Load test of `dtsim serve` on loopback: N simulate requests from C concurrent clients.

    python benchmarks/load_test.py [--requests 2000] [--clients 8]

Starts the server as a subprocess (the same command users run), waits for it, then sends POST
/api/simulate requests with varied scenarios over keep-alive connections, one per client thread.
Prints throughput and latency percentiles; exits non-zero if any request failed.
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def body(rng: random.Random) -> bytes:
    return json.dumps(
        {
            "num_nodes": rng.randint(2, 5000),
            "bandwidth_mbps": round(10 ** rng.uniform(0, 4), 3),
            "latency_ms": round(rng.uniform(1, 300), 2),
            "parameters_b": round(10 ** rng.uniform(0, 3), 2),
            "inner_steps": rng.choice([32, 128, 500, "auto"]),
            "hierarchical": rng.random() < 0.3,
            "nodes_per_group": 2,
        }
    ).encode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "dtsim", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/schema", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit("server did not start") from None
                time.sleep(0.3)
        latencies: list[float] = []
        failures: list[str] = []
        lock = threading.Lock()
        per_client = [
            args.requests // args.clients + (i < args.requests % args.clients) for i in range(args.clients)
        ]

        def client(k: int, n: int) -> None:
            rng = random.Random(k)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            local, bad = [], []
            for _ in range(n):
                payload = body(rng)
                t0 = time.perf_counter()
                conn.request("POST", "/api/simulate", payload, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                local.append(time.perf_counter() - t0)
                if resp.status != 200 or b'"mode"' not in data:
                    bad.append(f"{resp.status}: {data[:200]!r}")
            conn.close()
            with lock:
                latencies.extend(local)
                failures.extend(bad)

        threads = [threading.Thread(target=client, args=(k, n)) for k, n in enumerate(per_client)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait(timeout=10)
    lat = sorted(latencies)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3  # noqa: E731
    print(
        f"{len(lat):,} requests from {args.clients} clients in {wall:.2f} s: {len(lat) / wall:,.0f} requests/s"
    )
    print(
        f"latency ms: p50 {p(0.50):.1f}, p90 {p(0.90):.1f}, p99 {p(0.99):.1f}, max {lat[-1] * 1e3:.1f}, "
        f"mean {statistics.mean(lat) * 1e3:.1f}"
    )
    print(f"errors: {len(failures)}")
    if failures:
        print("\n".join(failures[:5]))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
