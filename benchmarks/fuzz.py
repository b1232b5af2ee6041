"""The long fuzz run (issue 15 item 2): many more cases than CI runs, with other seeds.

    python benchmarks/fuzz.py [--cli-cases 100000] [--field-cases 100000] [--seed 1]

CLI cases come from tests/cli_fuzzing.py (every option of every command, extreme, wrong-typed and
plausible values; a 30 s limit per case); field cases are tests/test_cli_fuzz.py's Hypothesis test of
the scenario fields table, run with more examples and random (not derandomized) seeds. Prints the
case counts, exit codes, the slowest case and every failure; exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli-cases", type=int, default=100_000)
    ap.add_argument("--field-cases", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    failed = False
    if args.cli_cases:
        import cli_fuzzing

        report = cli_fuzzing.run(args.cli_cases, args.seed, limit_s=30.0)
        print(
            f"CLI: {report.cases:,} cases in {report.seconds:.0f} s, exit codes {dict(sorted(report.exit_codes.items()))}, "
            f"slowest {report.slowest[0]:.2f} s (dtsim {' '.join(report.slowest[1])}), "
            f"{len(report.failures)} failures"
        )
        for f in report.failures:
            print(f"  {f.kind}: dtsim {' '.join(f.args)} -> {f.detail}")
        failed |= bool(report.failures)
    if args.field_cases:
        env = {**os.environ, "DTSIM_FUZZ_FIELD_CASES": str(args.field_cases)}
        t = time.perf_counter()
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-seed",
            str(args.seed),
        ]
        cmd += ["tests/test_cli_fuzz.py::test_every_field_with_extreme_and_wrong_values"]
        # derandomize is on in the test; a seed given here only matters with it off
        env["DTSIM_FUZZ_RANDOM"] = "1"
        res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        print(
            f"fields: {args.field_cases:,} cases in {time.perf_counter() - t:.0f} s: {res.stdout.strip().splitlines()[-1]}"
        )
        if res.returncode != 0:
            print(res.stdout[-4000:])
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
