"""Node groups on the batch path (issue 16): 1 M scenarios of three node groups in three regions (a sweep
over bandwidth) against the same sweep of the homogeneous scenario, side by side in one process.

A grouped scenario whose regions may form a hierarchy runs every row twice (flat and by region) to keep
the faster, and once more only when rows choose differently (engine.run_frame_choosing), and carries
(rows × groups) link arrays: that is the price measured here.

    python benchmarks/node_groups_speed.py [--rows N] [--repeats K]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dtsim

GROUPED = {
    "node_groups": [
        {"count": 8, "region": "us-east", "node": "dgx-h100"},
        {"count": 8, "region": "eu-central", "node": "dgx-h100"},
        {"count": 8, "region": "singapore", "node": "dgx-b200"},
    ],
    "parameters_b": 10,
    "tokens_t": 1,
    "streaming": False,
    "inner_steps": 10,
}
FLAT_GROUPS = GROUPED | {"hierarchical": False}  # the groups, with the hierarchy not left to the model
HOMOGENEOUS = {"num_nodes": 24, "node": "dgx-h100", "parameters_b": 10, "tokens_t": 1, "streaming": False}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    bw = np.geomspace(10, 1e5, a.rows)
    times: dict[str, list[float]] = {
        "homogeneous": [],
        "groups, hierarchy fixed": [],
        "groups, by region": [],
    }
    cases = {"homogeneous": HOMOGENEOUS, "groups, hierarchy fixed": FLAT_GROUPS, "groups, by region": GROUPED}
    for base in cases.values():
        dtsim.simulate_batch(base, bandwidth_mbps=bw[:100])  # warm
    for _ in range(a.repeats):  # alternating, so drift hits every case alike
        for name, base in cases.items():
            t = time.perf_counter()
            dtsim.simulate_batch(base, bandwidth_mbps=bw)
            times[name].append(time.perf_counter() - t)
    ref = statistics.median(times["homogeneous"])
    print(f"{a.rows:,} rows, medians of {a.repeats} alternating runs")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:26s} {m:7.3f} s  {a.rows / m / 1e6:5.2f} M rows/s  {m / ref:5.2f}x homogeneous")


if __name__ == "__main__":
    main()
