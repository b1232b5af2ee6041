"""Speed of the frontier-limits curves against the reference implementation (issue 6, item 3).

    python benchmarks/limits_speed.py [--repeats 3] [--baseline DIR]

With `--baseline DIR` (a checkout of earlier code, e.g. `git worktree add DIR <commit>`) each curve is
also timed with that tree's dtsim, in subprocesses that alternate with this tree's, and the two sets of
points are compared field by field: the speed-up is a ratio measured side by side in one run.

For each curve of shared/reference/epoch/reference_runs.json the reference's own `seconds` field is
what the reference implementation needed for that curve on this machine class; dtsim computes the same
curve (cluster-size search and full layout search per point) in a fresh process first (imports and
caches cold; the import time is printed apart, as the reference's `seconds` times the curve loop of a
notebook whose imports were done) and then `--repeats` times in this process. The claim checked is
the issue's: the dense H100 curve in at most a tenth of the reference's time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from dtsim.models.limits import curve, get_hardware

REF = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "epoch" / "reference_runs.json"
SCENARIO = {
    "V100 SXM": "v100-sxm",
    "A100 SXM": "a100-sxm",
    "H100 SXM": "h100-sxm",
    "H100 SXM Low Latency": "h100-sxm-low-latency",
    "H100 SXM Global NVLink": "h100-sxm-global-nvlink",
    "H100 SXM Global NVLink and LL": "h100-sxm-global-nvlink-ll",
    "H100 SXM Infinite Network and LL": "h100-sxm-infinite-network-ll",
}
COLD = (
    "import time; t0=time.perf_counter(); from dtsim.models.limits import curve, get_hardware; t1=time.perf_counter(); "
    "pts=curve(get_hardware('h100-sxm')); t2=time.perf_counter(); print(t1-t0, t2-t1, len(pts))"
)


TIMED = (
    "import json, sys, time; from dtsim.models.limits import curve, get_hardware; "
    "hw = get_hardware(sys.argv[1]); sparse = sys.argv[2] == 'sparse'; months = float(sys.argv[3]); "
    "pts = curve(hw, sparse=sparse, months=months); t0 = time.perf_counter(); "
    "pts = curve(hw, sparse=sparse, months=months); "
    "print(json.dumps({'s': time.perf_counter() - t0, 'points': [p.as_dict() for p in pts]}))"
)


def side_by_side(baseline: Path, repeats: int) -> None:
    """Each curve timed warm (its second call in a process) with this tree's dtsim and the baseline's,
    the two alternating process by process; medians and their ratio, and whether the points agree."""
    here = Path(__file__).resolve().parents[1] / "src"
    trees = {"now": here, "before": baseline.resolve() / "src"}
    print(f"side by side with {baseline}: warm curve, median of {repeats} processes per tree, alternating")
    cases = [
        (g, sparse, months)
        for g in ("h100-sxm", "v100-sxm")
        for sparse in ("dense", "sparse")
        for months in (3.0, 6.0)
    ]
    ratios = []
    for gpu, sparse, months in cases:
        times: dict[str, list[float]] = {k: [] for k in trees}
        points: dict[str, Any] = {}
        for _ in range(repeats):
            for name, src in trees.items():
                out = subprocess.run(
                    [sys.executable, "-c", TIMED, gpu, sparse, str(months)],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={**os.environ, "PYTHONPATH": str(src)},
                )
                got = json.loads(out.stdout)
                times[name].append(got["s"])
                points[name] = got["points"]
        now, before = statistics.median(times["now"]), statistics.median(times["before"])
        ratios.append(before / now)
        same = "identical points" if points["now"] == points["before"] else "POINTS DIFFER"
        print(
            f"  {gpu:9s} {sparse:6s} {months:3.0f} months: now {now:5.3f} s, before {before:5.3f} s, "
            f"{before / now:4.2f}× ({len(points['now'])} points, {same})"
        )
    print(
        f"before / now: median {statistics.median(ratios):.2f}×, range {min(ratios):.2f}–{max(ratios):.2f}×"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="a checkout of earlier code to time side by side")
    args = ap.parse_args()
    if args.baseline is not None:
        side_by_side(args.baseline, args.repeats)
        return
    ref = json.loads(REF.read_text())
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    out = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True, check=True)
    import_s, cold_s, n = out.stdout.split()
    import_s, cold_s = float(import_s), float(cold_s)
    h100 = next(c for c in ref["groups"]["base_dense"] if c["setting"] == "H100 SXM")
    print(
        f"dense H100 curve, first call in a fresh process (every cache cold): {cold_s:.2f} s for {n} points "
        f"(+ {import_s:.2f} s to import dtsim and numpy); reference {h100['seconds']:.2f} s → "
        f"{h100['seconds'] / cold_s:.1f}× faster (target ≥ 10×: {'met' if cold_s <= h100['seconds'] / 10 else 'NOT met'})"
    )
    for group in ("base_dense", "base_sparse", "grand_dense"):
        for c in ref["groups"][group]:
            hw = get_hardware(SCENARIO[c["gpu"]])
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                pts = curve(hw, sparse="sparse" in group)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            print(
                f"  {group:12s} {c['setting']:34s} {len(pts):3d} points to {pts[-1].training_flop:7.1e} FLOP  "
                f"dtsim {med:5.2f} s  reference {c['seconds']:6.2f} s  {c['seconds'] / med:6.1f}×"
            )


if __name__ == "__main__":
    main()
