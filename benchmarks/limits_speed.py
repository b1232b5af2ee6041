"""Speed of the frontier-limits curves against the reference implementation (issue 6, item 3).

    python benchmarks/limits_speed.py [--repeats 3]

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
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
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
