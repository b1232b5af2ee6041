"""`dtsim plan` and `dtsim step --layouts` speed: the vectorized paths side by side with a loop of
`dtsim step` calls.

    python benchmarks/plan_speed.py [--loop 300] [--repeats 3]

The issue-4 case: a 176B GPT (hidden 14336, 70 layers, 112 heads, vocabulary 250,680, sequence
2048, global batch 2048) on 48 nodes × 8 A100-80GB. The planner evaluates every candidate layout at
once; the loop evaluates `--loop` of the same candidates one at a time through the scalar `step()`
path and is scaled per layout; `dtsim.steps` (what `step --layouts FILE` runs) evaluates the same
layouts in one call, its results checked equal to the loop's. Reports the planner's wall time (median
of `--repeats`), the per-layout cost of each path and their ratios.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

from dtsim.models.datacenter.plan import PlanOptions, enumerate_layouts, plan
from dtsim.models.datacenter.step import RECOMPUTES, SCHEDULES, Cluster, Layout, Workload, step, steps
from dtsim.physics.transformer import get_architecture

SHAPE = {"name": "gpt-176b", "hidden": 14336, "layers": 70, "heads": 112, "vocab": 250_680, "seq_len": 2048}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loop", type=int, default=300, help="layouts evaluated one by one")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    a = get_architecture(SHAPE)
    cluster = Cluster(gpu="a100-80gb", nodes=48, gpus_per_node=8)
    opt = PlanOptions(gbs=2048)
    plan(a, cluster, opt, top=10)  # warm the catalog and caches
    times, searched = [], 0
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        p = plan(a, cluster, opt, top=10)
        times.append(time.perf_counter() - t0)
        searched = p.searched
    vec = statistics.median(times)

    lay, _ = enumerate_layouts(a, cluster, opt)
    idx = np.linspace(0, len(lay["dp"]) - 1, min(args.loop, len(lay["dp"]))).astype(int)
    layouts = []
    for i in idx:
        layout = Layout(
            dp=int(lay["dp"][i]),
            tp=int(lay["tp"][i]),
            pp=int(lay["pp"][i]),
            vpp=int(lay["vpp"][i]),
            cp=int(lay["cp"][i]),
            ep=int(lay["ep"][i]),
            sequence_parallel=bool(lay["sp"][i]),
            mbs=int(lay["mbs"][i]),
            gbs=2048,
            zero=int(lay["zero"][i]),
            recompute=RECOMPUTES[int(lay["recompute"][i])],
            schedule=SCHEDULES[int(lay["schedule"][i])],
            embedding_stages="balanced" if lay["balanced"][i] else "first-last",
        )
        layouts.append(layout)
    t0 = time.perf_counter()
    looped = [step(Workload(model=a, cluster=cluster, layout=layout)) for layout in layouts]
    loop_per = (time.perf_counter() - t0) / len(idx)
    batch = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        together = steps(Workload(model=a, cluster=cluster, layout=layouts[0]), layouts)
        batch.append(time.perf_counter() - t0)
    steps_per = statistics.median(batch) / len(layouts)
    assert [r.model_dump() for r in together] == [r.model_dump() for r in looped]
    vec_per = vec / searched
    best = p.ranked[0]
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(
        f"planner: {searched:,} layouts in {vec:.3f} s (median of {args.repeats}); target < 10 s: {'met' if vec < 10 else 'NOT met'}"
    )
    print(
        f"per layout: vectorized {vec_per * 1e6:.1f} µs, step() loop {loop_per * 1e6:.0f} µs ({len(idx)} layouts); ratio {loop_per / vec_per:,.0f}×"
    )
    print(
        f"step --layouts (dtsim.steps, {len(layouts)} layouts in one call): {steps_per * 1e6:.0f} µs a layout "
        f"(median of {args.repeats}), the step() loop {loop_per / steps_per:.1f}× that; target < 1 ms a layout: "
        f"{'met' if steps_per < 1e-3 else 'NOT met'} (one step() call: {loop_per * 1e3:.2f} ms)"
    )
    lay0 = best.layout
    print(
        f"fastest: {best.step_time_s:.2f} s/iteration, MFU {best.mfu:.1%}, {best.memory_per_gpu_gb:.1f} GB/GPU "
        f"(dp {lay0['dp']}, tp {lay0['tp']}, pp {lay0['pp']}, vpp {lay0['vpp']}, mbs {lay0['mbs']}, zero {lay0['zero']}, "
        f"recompute {lay0['recompute']}, {lay0['schedule']})"
    )


if __name__ == "__main__":
    main()
