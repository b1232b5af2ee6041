"""`dtsim target` with the χ Newton iteration skipping infeasible rows (issue 15 item 7) and the
search's row pick without a sort, side by side with both as they were, in one run.

    python benchmarks/target_speed.py [--repeats 3] [--target 1e25] [--nodes 16x-h100-sxm,...]

The search is the full default space of `dtsim target --quality-flop 1e25` (every node preset, node
counts 1–100,000, model sizes, H, compression, hierarchy, activation compression) on the governance
preset. "before" runs the same search with `physics.quality.compute_optimal_params` and
`analysis.search._pick` replaced by the previous code, kept below: every row of a batch was iterated
until all had converged, and an infeasible row's NaN loss never converges, so every batch holding one
ran all 60 Newton steps on all rows; each best row was found by a full `np.lexsort` of the candidates.
"now" iterates only the rows still moving and narrows to each key's minimum. The two alternate run by
run; the script reports the medians, their ratio, the share of each search the inversion and the pick
took, and checks that both searches give the same answer (winner and each mode's best, field by
field, floats by their repr).
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
from dtsim.analysis import search as search_module
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


def previous_pick(mask, *keys):
    """search._pick before: the first row of a full lexsort of the candidates."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    order = np.lexsort(tuple(k[idx] for k in reversed(keys)))
    return int(idx[order[0]])


NOW = quality.compute_optimal_params
NOW_PICK = search_module._pick
SECONDS = {"inversion": 0.0, "pick": 0.0}


def _timed(fn, what):
    def timed(*args):
        t = time.perf_counter()
        try:
            return fn(*args)
        finally:
            SECONDS[what] += time.perf_counter() - t

    return timed


@contextmanager
def code(inversion, pick):
    """Search with `inversion` as the Chinchilla inversion and `pick` as the row pick, timing both."""
    quality.compute_optimal_params = _timed(inversion, "inversion")
    search_module._pick = _timed(pick, "pick")
    try:
        yield
    finally:
        quality.compute_optimal_params = NOW
        search_module._pick = NOW_PICK


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
    share: dict[str, dict[str, list[float]]] = {n: {"inversion": [], "pick": []} for n in times}
    answers = {}
    variants = {"before": (previous_compute_optimal_params, previous_pick), "now": (NOW, NOW_PICK)}
    for _ in range(args.repeats):
        for name, (inversion, pick) in variants.items():
            SECONDS.update(inversion=0.0, pick=0.0)
            with code(inversion, pick):
                t = time.perf_counter()
                res = search(base, space, target)
                dt = time.perf_counter() - t
            times[name].append(dt)
            for what in SECONDS:
                share[name][what].append(SECONDS[what] / dt)
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
            f"χ inversion {statistics.median(share[name]['inversion']):.0%} of it, row pick "
            f"{statistics.median(share[name]['pick']):.0%}"
        )
    pairs = sorted(b / n for b, n in zip(times["before"], times["now"], strict=True))
    print(
        f"before / now: {before / now:.2f}× (run pairs {pairs[0]:.2f}–{pairs[-1]:.2f}×); answers identical: {same}"
    )
    if not same:
        raise SystemExit("the two searches disagree")


if __name__ == "__main__":
    main()
