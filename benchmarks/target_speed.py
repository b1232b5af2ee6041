"""`dtsim target` with the χ Newton iteration skipping infeasible rows (issue 15 item 7), side by side
with the iteration as it was, in one run.

    python benchmarks/target_speed.py [--repeats 3] [--target 1e25] [--nodes 16x-h100-sxm,...]

The search is the full default space of `dtsim target --quality-flop 1e25` (every node preset, node
counts 1–100,000, model sizes, H, compression, hierarchy, activation compression) on the governance
preset. "before" runs the same search with `physics.quality.compute_optimal_params` replaced by the
previous loop, kept below verbatim: every row of a batch is iterated until all have converged, and an
infeasible row's NaN loss never converges, so every batch holding one ran all 60 Newton steps on all
rows. "now" iterates only the rows still moving. The two alternate run by run; the script reports the
medians, their ratio, the share of the search the inversion took before, and checks that both
searches give the same answer (winner and each mode's best, field by field, floats by their repr).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from contextlib import contextmanager
from dataclasses import asdict

import numpy as np

from dtsim import catalog
from dtsim.analysis.search import NodeSpec, Space, Target, search
from dtsim.physics import quality
from dtsim.schema.scenario import load_scenario


def previous_compute_optimal_params(loss, asm):
    """compute_optimal_params before issue 15 item 7 (batch path): all rows iterate until all converge."""
    a, b = asm.chinchilla_alpha, asm.chinchilla_beta
    big_a = asm.chinchilla_a
    big_b = asm.chinchilla_b * asm.chinchilla_tokens_per_param ** (-b)
    k = np.asarray(loss, dtype=float) - asm.chinchilla_e
    x = np.maximum(np.log(big_a / k) / a, np.log(big_b / k) / b)
    if x.size == 1:
        return NOW(loss, asm)  # the one-row path did not change
    done = np.zeros(x.shape, dtype=bool)
    for _ in range(60):
        step = quality._newton_step(x, k, a, b, big_a, big_b)
        x = np.where(done, x, x + step)
        done |= np.abs(step) <= 1e-15 * np.maximum(np.abs(x), 1.0)
        if done.all():
            break
    return np.exp(x)


NOW = quality.compute_optimal_params
INVERSION_SECONDS = [0.0]


@contextmanager
def inversion(fn):
    """Search with `fn` as the Chinchilla inversion, timing the time spent inside it."""

    def timed(loss, asm):
        t = time.perf_counter()
        try:
            return fn(loss, asm)
        finally:
            INVERSION_SECONDS[0] += time.perf_counter() - t

    quality.compute_optimal_params = timed
    try:
        yield
    finally:
        quality.compute_optimal_params = NOW


def _answer(res) -> str:
    """The winner and each mode's best and closest run, field by field (repr: NaN equals NaN)."""
    rows = [res.winner, *res.by_mode.values(), *res.closest.values()]
    return repr([None if r is None else asdict(r) for r in rows])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--target", type=float, default=1e25, help="quality-adjusted FLOP")
    ap.add_argument("--nodes", default=None, help="node presets, comma-separated (default: all)")
    args = ap.parse_args()
    base = load_scenario(preset="governance")
    ids = args.nodes.split(",") if args.nodes else list(catalog.nodes())
    space = Space(nodes=[NodeSpec.from_preset(i) for i in ids])
    target = Target("quality", args.target)
    search(base, Space(nodes=space.nodes[:1], node_counts=space.node_counts[:8]), target)  # warm
    times: dict[str, list[float]] = {"before": [], "now": []}
    share: dict[str, list[float]] = {"before": [], "now": []}
    answers = {}
    for _ in range(args.repeats):
        for name, fn in (("before", previous_compute_optimal_params), ("now", NOW)):
            INVERSION_SECONDS[0] = 0.0
            with inversion(fn):
                t = time.perf_counter()
                res = search(base, space, target)
                dt = time.perf_counter() - t
            times[name].append(dt)
            share[name].append(INVERSION_SECONDS[0] / dt)
            answers[name] = _answer(res)
    same = answers["before"] == answers["now"]
    before, now = statistics.median(times["before"]), statistics.median(times["now"])
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cores; {res.configurations:,} configurations, {res.rows:,} rows "
        f"(+{res.refined_rows:,} refined), medians of {args.repeats} alternating runs"
    )
    for name, t in (("before", before), ("now", now)):
        print(
            f"{name:>6}: {t:.2f} s (runs {', '.join(f'{x:.2f}' for x in times[name])}); "
            f"χ inversion {statistics.median(share[name]):.0%} of it"
        )
    print(f"before / now: {before / now:.2f}×; answers identical: {same}")
    if not same:
        raise SystemExit("the two searches disagree")


if __name__ == "__main__":
    main()
