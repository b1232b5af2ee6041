"""Speed of `dtsim sweep`, `dtsim target` and `dtsim governance` (issue 8), side by side with a loop of
scalar `simulate` calls over the same points.

    python benchmarks/analysis_speed.py [--loop 300]

1. A 100,000-point sweep (latency 400 values × bandwidth 250 log-spaced, default scenario) through
   `run_grid` and the table written to CSV; the scalar loop runs `--loop` of the same points and is
   extrapolated per point. The issue's bound: under 5 s.
2. `dtsim target` over the full default space (every node preset, node counts 1–100,000, model sizes,
   H, compression, hierarchy, activation compression) for 1e25 FLOP quality-adjusted; the issue's bound:
   under 60 s, with the space size printed.
3. `dtsim governance` with its default caps and targets.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

import dtsim
from dtsim import catalog
from dtsim.analysis.governance import DEFAULT_COMPUTE_CAPS, DEFAULT_MEMORY_CAPS, Cap, analyse
from dtsim.analysis.grid import parse_vary, run_grid, write_table
from dtsim.analysis.search import NodeSpec, Space, Target, search
from dtsim.schema.scenario import load_scenario


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loop", type=int, default=300, help="scalar simulate calls timed for the ratio")
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")

    base = dtsim.Scenario()
    axes = [parse_vary("latency_ms=1:300:400"), parse_vary("bandwidth_mbps=1:10000:250:log")]
    dtsim.simulate(base)  # load the catalog once
    t0 = time.perf_counter()
    g = run_grid(base, axes)
    t_grid = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        write_table(g, Path(d) / "sweep.csv")
        t_csv = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    idx = rng.choice(g.n, args.loop, replace=False)
    t0 = time.perf_counter()
    for i in idx:
        r = dtsim.simulate(
            base.replace(
                latency_ms=float(g.columns["latency_ms"][i]),
                bandwidth_mbps=float(g.columns["bandwidth_mbps"][i]),
            )
        )
        assert r.wall_clock_days == g.columns["wall_clock_days"][i]
    per_scalar = (time.perf_counter() - t0) / args.loop
    print(
        f"sweep: {g.n:,} points in {t_grid:.2f} s (+ CSV {t_csv:.2f} s, {len(g.columns)} columns); "
        f"scalar loop {per_scalar * 1e3:.2f} ms/point → {per_scalar * g.n:.0f} s for the grid; "
        f"batch/loop speed ratio {per_scalar * g.n / t_grid:.0f}×; bound < 5 s: "
        f"{'met' if t_grid + t_csv < 5 else 'MISSED'}"
    )

    gov = load_scenario(preset="governance")
    space = Space(nodes=[NodeSpec.from_preset(n) for n in catalog.nodes()])
    t0 = time.perf_counter()
    res = search(gov, space, Target("quality", 1e25))
    t_target = time.perf_counter() - t0
    w = res.winner
    print(
        f"target: {res.configurations:,} configurations × {len(space.node_counts)} node counts = {res.rows:,} rows "
        f"(+{res.refined_rows:,} refined) in {t_target:.1f} s → {w.num_nodes:,} × {w.node.id}, {w.params_b:.0f}B, "
        f"{w.mode}, ${w.cost_usd:,.0f}; scalar loop would take ≈ {per_scalar * res.rows / 3600:.1f} h; "
        f"bound < 60 s: {'met' if t_target < 60 else 'MISSED'}"
    )

    caps = [Cap(c) for c in DEFAULT_COMPUTE_CAPS] + [Cap(16, m) for m in DEFAULT_MEMORY_CAPS]
    t0 = time.perf_counter()
    gr = analyse(gov, caps)
    print(
        f"governance: {len(caps)} caps × {len(gr.targets)} targets, {gr.rows:,} rows in {time.perf_counter() - t0:.1f} s"
    )


if __name__ == "__main__":
    main()
