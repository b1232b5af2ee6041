"""Monte Carlo of `simulate` (--uncertainty): side by side with the batch path alone on the same draws,
and on a local Dask cluster against this one process.

    python benchmarks/uncertainty_speed.py [--n 1048576] [--repeats 5] [--workers 2] [--no-dask]

Scenario: the default, with mfu ~ uniform(0.3, 0.5), bandwidth_mbps ~ lognormal(1000, 0.5) and
latency_ms ~ triangular(20, 50, 200), plus the assumptions table's distributions (what a plain
`--uncertainty` draws). `run_monte_carlo` draws the scrambled Sobol sample, maps it through the
inverse CDFs, runs the batch path in blocks and summarises the headline outputs; the baseline runs
only `simulate_batch` on the same pre-drawn arrays in the same blocks. Dask: the same Monte Carlo on a
`distributed.LocalCluster` of --workers processes, once warm (the cluster already running, as with
`--scheduler tcp://…`) and once cold (`--workers N`: the cluster started and stopped inside the
call). Everything is timed in this one run, alternating; medians of --repeats runs and their ratios.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import time

from dtsim.analysis import uncertainty as unc
from dtsim.models.decentralized.engine import simulate_batch

SETS = ["mfu=0.3..0.5", "bandwidth_mbps=lognormal:1000:0.5", "latency_ms=triangular:20:50:200"]


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 20, help="draws (rounded up to a power of two)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local Dask worker processes")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask comparison")
    args = ap.parse_args()
    scenario, dists = unc.load_uncertain_scenario(set_texts=SETS)
    n = unc.sample_count(args.n)
    drawn = unc.draws(dists, n, seed=1)
    asm = {k.removeprefix("assumptions."): drawn.pop(k) for k in list(drawn) if k.startswith("assumptions.")}
    unc.run_monte_carlo(scenario, dists, 1024, seed=1)  # warm: catalog, scipy, the batch path

    def monte_carlo(**options):
        return unc.run_monte_carlo(scenario, dists, n, seed=1, **options)

    def batch_alone():
        for a in range(0, n, unc.CHUNK):
            b = a + unc.CHUNK
            simulate_batch(
                scenario,
                assumption_rows={k: v[a:b] for k, v in asm.items()},
                **{k: v[a:b] for k, v in drawn.items()},
            )

    mc = _median_time(monte_carlo, args.repeats)
    batch = _median_time(batch_alone, args.repeats)
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores; {n:,} draws, {len(dists)} inputs"
    )
    print(f"Monte Carlo (draw + batch + summary), one process: {mc:.3f} s  ({n / mc / 1e6:.2f} M draws/s)")
    print(
        f"batch path alone on the same draws:                {batch:.3f} s  ({n / batch / 1e6:.2f} M rows/s)"
    )
    print(f"Monte Carlo / batch alone: {mc / batch:.2f}×")
    datacenter(args.repeats)
    if args.no_dask:
        return
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=args.workers, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR
    ) as cluster:
        address = cluster.scheduler_address
        monte_carlo(scheduler=address)  # warm the workers' imports
        warm = _median_time(lambda: monte_carlo(scheduler=address), args.repeats)
        same = monte_carlo(scheduler=address).outputs == monte_carlo().outputs
    cold = _median_time(lambda: monte_carlo(workers=args.workers), max(1, args.repeats // 2))
    print(
        f"LocalCluster of {args.workers} processes, warm:  {warm:.3f} s  (speed-up over one process {mc / warm:.2f}×)"
    )
    print(
        f"LocalCluster of {args.workers} processes, cold (started per call): {cold:.3f} s  ({mc / cold:.2f}×)"
    )
    print(f"identical results on the cluster and in one process: {same}")


def datacenter(repeats: int) -> None:
    """`step --uncertainty`: draws of the model error and the table's assumptions through the vectorized
    step, against `step()` called once per draw with those assumptions (what a loop would cost)."""
    from dtsim.analysis.datacenter_uncertainty import datacenter_inputs, datacenter_monte_carlo
    from dtsim.models.datacenter.step import step
    from dtsim.models.datacenter.workload import Cluster, Layout, Workload

    w = Workload(
        model="gpt3-175b",
        cluster=Cluster(gpu="a100-80gb", nodes=48, gpus_per_node=8),
        layout=Layout(tp=8, pp=12, gbs=1536),
        tokens=3e11,
    )
    n = 1 << 16
    datacenter_monte_carlo(w, [w.layout], 1024, seed=1)  # warm
    mc = _median_time(lambda: datacenter_monte_carlo(w, [w.layout], n, seed=1), repeats)
    dists = datacenter_inputs({}, False, False)
    drawn = unc.draws(dists, 256, seed=1)
    rows = [{k.removeprefix("assumptions."): float(v[i]) for k, v in drawn.items()} for i in range(256)]
    loop = _median_time(lambda: [step(w.model_copy(update={"assumptions": r})) for r in rows], 1) / 256
    print(
        f"step --uncertainty, GPT-3 175B on 384 A100: {n:,} draws in {mc:.3f} s ({mc / n * 1e6:.1f} µs a draw); "
        f"step() once per draw {loop * 1e3:.2f} ms ({loop / (mc / n):.0f}× the vectorized draw)"
    )


if __name__ == "__main__":
    main()
