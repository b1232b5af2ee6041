"""The longer fuzz run of the HTTP API (issue 15): tests/test_api_fuzz.py — Schemathesis over every
operation of the OpenAPI schema plus raw requests (bytes, content types, nesting, huge numbers, alias
bombs in share links) — with more examples and several seeds, in parallel processes.

    python benchmarks/fuzz_api.py                 # 4,000 examples, seeds 1-6: about 108,000 cases
    python benchmarks/fuzz_api.py --examples 500 --seeds 7 --jobs 1

Each seed is one pytest process of the same test file CI runs (seed 20261125, 100 examples), with
DTSIM_FUZZ_SEED and DTSIM_FUZZ_EXAMPLES set; every case goes through the same checks: no 5xx,
responses that conform to the schema, strict JSON, no traceback, under 10 s each. Prints the cases per
operation and seed, the total, and any failure (Schemathesis prints a curl line to reproduce it);
exits 1 if any seed failed. Schemathesis's coverage phase is a fixed enumeration, so part of each
seed's cases repeat across seeds; the fuzzing phase and the raw tests draw new cases per seed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_seed(seed: int, examples: int, folder: Path) -> tuple[int, int, dict[str, int], float, str]:
    report = folder / f"seed-{seed}.json"
    env = dict(
        os.environ,
        DTSIM_FUZZ_SEED=str(seed),
        DTSIM_FUZZ_EXAMPLES=str(examples),
        DTSIM_FUZZ_REPORT=str(report),
    )
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_api_fuzz.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    cases = json.loads(report.read_text())["cases"] if report.exists() else {}
    return seed, proc.returncode, cases, seconds, proc.stdout[-6000:] + proc.stderr[-2000:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=4000, help="Hypothesis examples per operation and test")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)))
    ap.add_argument("--out", type=Path, help="write the counts and outcome as JSON here")
    args = ap.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {args.examples} examples, seeds {args.seeds}, {args.jobs} jobs"
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda s: run_seed(s, args.examples, Path(tmp)), args.seeds))
    wall = time.perf_counter() - started

    totals: collections.Counter[str] = collections.Counter()
    failed = []
    for seed, rc, cases, seconds, output in results:
        totals.update(cases)
        status = "passed" if rc == 0 else f"FAILED (exit {rc})"
        print(f"seed {seed}: {sum(cases.values()):,} cases in {seconds:.0f} s, {status}")
        if rc != 0:
            failed.append(seed)
            print(output)
    print()
    width = max(len(k) for k in totals) if totals else 10
    for key, n in sorted(totals.items()):
        print(f"  {key:<{width}}  {n:>9,}")
    total = sum(totals.values())
    print(f"  {'total':<{width}}  {total:>9,}   ({wall:.0f} s wall, {total / wall:.0f} cases/s)")
    print("result:", "nothing failed" if not failed else f"seeds {failed} failed")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "examples": args.examples,
                    "seeds": args.seeds,
                    "cases": dict(totals),
                    "total": total,
                    "wall_s": round(wall),
                    "failed_seeds": failed,
                },
                indent=1,
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
