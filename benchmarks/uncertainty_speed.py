"""Monte Carlo of `simulate` (--uncertainty), side by side with the batch path alone on the same draws.

    python benchmarks/uncertainty_speed.py [--n 1048576] [--repeats 5]

Scenario: the default, with mfu ~ uniform(0.3, 0.5), bandwidth_mbps ~ lognormal(1000, 0.5) and
latency_ms ~ triangular(20, 50, 200). `run_monte_carlo` draws the scrambled Sobol sample, maps it
through the inverse CDFs, runs the batch path in chunks and summarises the headline outputs; the
baseline runs only `simulate_batch` on the same pre-drawn arrays in the same chunks. Both are timed
warm in this one process, alternating; medians of --repeats runs are printed with their ratio.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from dtsim.analysis import uncertainty as unc
from dtsim.models.decentralized.engine import simulate_batch

SETS = ["mfu=0.3..0.5", "bandwidth_mbps=lognormal:1000:0.5", "latency_ms=triangular:20:50:200"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 20, help="draws (rounded up to a power of two)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    scenario, dists = unc.load_uncertain_scenario(set_texts=SETS)
    n = unc.sample_count(args.n)
    drawn = unc.draws(dists, n, seed=1)
    unc.run_monte_carlo(scenario, dists, 1024, seed=1)  # warm: catalog, scipy, the batch path
    mc_times, batch_times = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        unc.run_monte_carlo(scenario, dists, n, seed=1)
        mc_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        for start in range(0, n, unc.CHUNK):
            simulate_batch(scenario, **{k: v[start : start + unc.CHUNK] for k, v in drawn.items()})
        batch_times.append(time.perf_counter() - t)
    mc, batch = statistics.median(mc_times), statistics.median(batch_times)
    print(f"python {platform.python_version()}, {platform.machine()}; {n:,} draws, {len(dists)} inputs")
    print(f"Monte Carlo (draw + batch + summary): {mc:.3f} s  ({n / mc / 1e6:.2f} M draws/s)")
    print(f"batch path alone on the same draws:    {batch:.3f} s  ({n / batch / 1e6:.2f} M rows/s)")
    print(f"Monte Carlo / batch alone: {mc / batch:.2f}×")


if __name__ == "__main__":
    main()
