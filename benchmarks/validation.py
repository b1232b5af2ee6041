"""How long `dtsim validate` and `dtsim calibrate` take on the bundled records (issue 5: under 60 s).

    python benchmarks/validation.py [--repeats 3]

Runs `python -m dtsim validate --json` in a fresh process (imports and catalog loading included: what a
user waits for) `--repeats` times, then `validate` and `calibrate` in this process, and prints the
median of each beside the number of records and the group summary.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

from dtsim.validation import calibrate, load_dataset, validate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    cold = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "dtsim", "validate", "--json"], capture_output=True, text=True
        )
        cold.append(time.perf_counter() - t0)
        result = json.loads(out.stdout)
    data = load_dataset()
    warm = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        validate(data)
        warm.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    calibrate(data)
    fit = time.perf_counter() - t0
    n = len(result["runs"])
    predicted = sum(1 for r in result["runs"] if r.get("predicted") is not None)
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    print(
        f"dtsim validate, fresh process: median {statistics.median(cold):.2f} s for {n} records ({predicted} predicted); target < 60 s"
    )
    print(f"validate in process: median {statistics.median(warm) * 1e3:.0f} ms; calibrate: {fit:.1f} s")
    for g, e in result["summary"].items():
        if e["median_abs_error"] is not None:
            print(
                f"  {g:16s} {','.join(e['roles']):12s} median |err| {e['median_abs_error']:6.1%}  max {e['max_abs_error']:6.1%}"
            )
    print("bounds all met" if result["bounds_ok"] else "bounds NOT all met")


if __name__ == "__main__":
    main()
