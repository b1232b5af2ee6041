"""Batch throughput of flat-DiLoCo scenarios, side by side with a plain Python loop over the scalar API.

    python benchmarks/batch_throughput.py [--n 1000000] [--loop 2000] [--repeats 5]

Both paths run in this one process on the same kind of scenarios (num_nodes, bandwidth, latency, H,
compression and MFU drawn at random; every scenario is in flat-DiLoCo mode). The loop is timed on a
subset and reported per scenario; its rows are checked against the batch bit for bit. One scalar
call first loads the catalog; the batch is then timed once cold (its first run in the process) and
`--repeats` times warm; the figure claimed is the median of the warm runs, printed beside the cold one.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

import dtsim


def scenarios(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "num_nodes": rng.integers(2, 10_000, n),
        "bandwidth_mbps": 10 ** rng.uniform(0, 4, n),
        "latency_ms": rng.uniform(1, 300, n),
        "inner_steps": rng.integers(1, 1000, n),
        "compression": 10 ** rng.uniform(0, 3, n),
        "mfu": rng.uniform(0.2, 0.6, n),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="scenarios in the batch")
    ap.add_argument("--loop", type=int, default=2_000, help="scenarios in the scalar loop")
    ap.add_argument("--repeats", type=int, default=5, help="warm batch runs")
    args = ap.parse_args()

    fields = scenarios(args.n)
    dtsim.simulate()  # loads the catalog and the assumptions table once
    t0 = time.perf_counter()
    batch = dtsim.simulate_batch(**fields)
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(args.repeats):
        del batch  # free the previous outputs first, as a caller replacing a result would
        t0 = time.perf_counter()
        batch = dtsim.simulate_batch(**fields)
        warm.append(time.perf_counter() - t0)
    modes = set(batch["mode"].tolist())
    assert modes == {"flat-diloco"}, modes

    t0 = time.perf_counter()
    loop = []
    for i in range(args.loop):
        row = {k: v[i].item() for k, v in fields.items()}
        loop.append(dtsim.simulate(**row))
    loop_s = (time.perf_counter() - t0) / args.loop

    mismatches = 0
    for i, r in enumerate(loop):
        for key in (
            "wall_clock_days",
            "effective_days",
            "chi",
            "global_mfu",
            "sync_s",
            "quality_adjusted_flop",
        ):
            mismatches += batch[key][i] != getattr(r, key)
    per_warm = statistics.median(warm) / args.n
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
        f"numpy {np.__version__}"
    )
    print(
        f"batch of {args.n:,} flat-DiLoCo scenarios: median {statistics.median(warm):.3f} s over {args.repeats} warm "
        f"runs = {1 / per_warm:,.0f} scenarios/s (first batch in the process {cold:.3f} s = {args.n / cold:,.0f}/s)"
    )
    print(
        f"scalar API loop over {args.loop:,} of them: {loop_s * 1e3:.3f} ms each = {1 / loop_s:,.0f} scenarios/s"
    )
    print(f"batch / loop speed ratio: {loop_s / per_warm:,.0f}x")
    print(
        f"rows compared bit for bit with the scalar path: {args.loop:,} × 6 outputs, mismatches: {mismatches}"
    )
    if mismatches:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
