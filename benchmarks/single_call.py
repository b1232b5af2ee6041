"""The paths users hit one call at a time, side by side with a baseline checkout of dtsim.

    python benchmarks/single_call.py [--baseline DIR] [--repeats 7]

Each figure is measured in a fresh subprocess per source tree (this checkout's src/, and DIR/src when
--baseline names an older checkout, e.g. `git worktree add /tmp/base 33e375e`), so both trees run on
the same interpreter and machine in one run; the median of --repeats is printed, and the ratio
baseline / this when a baseline is given.

- `dtsim --help`: wall time of the whole process (`python -m dtsim --help`).
- `import dtsim`: wall time of `python -c "import dtsim"`.
- `simulate()`: per call, a warm loop over `dtsim.simulate(Scenario())`.
- `load_scenario()`: per call, a warm loop over `dtsim.load_scenario(overrides={...})`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"

LOOP = """
import time, dtsim
s = dtsim.Scenario()
dtsim.simulate(s)
n = {n}
t = time.perf_counter()
for _ in range(n):
    {call}
print((time.perf_counter() - t) / n)
"""
CALLS = {
    "simulate() per call": "dtsim.simulate(s)",
    "load_scenario() per call": "dtsim.load_scenario(overrides={'num_nodes': 144, 'gpu': 'h100-sxm'})",
}


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src)}


def process_seconds(src: Path, args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, *args], env=_env(src), check=True, capture_output=True)
    return time.perf_counter() - t


def loop_seconds(src: Path, call: str, n: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", LOOP.format(n=n, call=call)], env=_env(src), check=True, capture_output=True
    )
    return float(out.stdout.decode().strip().splitlines()[-1])


def measure(src: Path, repeats: int) -> dict[str, float]:
    figures = {
        "dtsim --help (process)": [process_seconds(src, ["-m", "dtsim", "--help"]) for _ in range(repeats)],
        "import dtsim (process)": [process_seconds(src, ["-c", "import dtsim"]) for _ in range(repeats)],
    }
    for name, call in CALLS.items():
        figures[name] = [loop_seconds(src, call, 2000) for _ in range(max(3, repeats // 2))]
    return {k: statistics.median(v) for k, v in figures.items()}


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:8.3f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, help="an older dtsim checkout to compare with")
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores")
    this = measure(HERE, a.repeats)
    base = measure(a.baseline.resolve() / "src", a.repeats) if a.baseline else None
    for name, seconds in this.items():
        line = f"{name:28s} {_fmt(seconds)}"
        if base:
            line += f"   baseline {_fmt(base[name])}   baseline/this {base[name] / seconds:5.2f}x"
        print(line)


if __name__ == "__main__":
    main()
