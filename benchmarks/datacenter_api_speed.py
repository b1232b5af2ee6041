"""The datacenter operations of the HTTP API (POST /api/step, /step/trace, /plan, /collective, /fabric)
against the library calls they make, side by side in one process (FastAPI's TestClient: no network).

What the API adds to a call is validating the body, naming errors, JSON and the response; the work is
the library's. The big case of issue 17's "under a second" is a plan of a ~176B model on 48 × 8 A100s.

    python benchmarks/datacenter_api_speed.py [--repeats K]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

from fastapi.testclient import TestClient

import dtsim
from dtsim.interfaces.api.app import create_app
from dtsim.models.datacenter.plan import PlanOptions
from dtsim.models.datacenter.workload import Cluster, Layout, Workload
from dtsim.physics.transformer import get_architecture

STEP = {"model": "gpt3-175b", "nodes": 48, "tp": 8, "pp": 12, "gbs": 1536, "fabric": "dgx-a100-hdr"}
PLAN = {"model": "mcore-177b", "nodes": 48, "gpu": "a100-80gb", "gbs": 1536}
ROWS = [{"tp": tp, "pp": pp, "mbs": m} for tp in (1, 2, 4, 8) for pp in (6, 12, 24, 48) for m in (1, 2, 4)]


def median_s(call, repeats: int) -> float:
    call()  # warm: imports, catalog caches
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    repeats = parser.parse_args().repeats
    warnings.simplefilter("ignore")
    client = TestClient(create_app(ui=False))

    def post(path, body):
        def call():
            resp = client.post(path, json=body)
            assert resp.status_code == 200, resp.text[:300]

        return call

    workload = Workload(
        model="gpt3-175b",
        cluster=Cluster(nodes=48, fabric="dgx-a100-hdr"),
        layout=Layout(tp=8, pp=12, gbs=1536),
    )
    arch, cluster = get_architecture("mcore-177b"), Cluster(nodes=48, gpu="a100-80gb")
    cases = [
        ("step, 175B on 48 x 8", post("/api/step", STEP), lambda: dtsim.step(workload)),
        ("step/trace, 175B on 48 x 8", post("/api/step/trace", STEP), None),
        ("step, a batch of 48 layouts", post("/api/step", {**STEP, "layouts": ROWS}), None),
        (
            "plan, 177B on 48 x 8 A100",
            post("/api/plan", PLAN),
            lambda: dtsim.plan(arch, cluster, PlanOptions(gbs=1536)),
        ),
        ("collective", post("/api/collective", {"fabric": "nvlink3"}), None),
        ("fabric", post("/api/fabric", {}), None),
    ]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {repeats}")
    for name, api, library in cases:
        line = f"{name:30s} API {median_s(api, repeats) * 1e3:8.1f} ms"
        if library is not None:
            line += f"   library {median_s(library, repeats) * 1e3:8.1f} ms"
        print(line)


if __name__ == "__main__":
    main()
