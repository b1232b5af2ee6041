"""The paths users hit one call at a time, side by side with a baseline checkout of dtsim.

    python benchmarks/single_call.py [--baseline DIR] [--repeats 7]

Each figure is measured in a fresh subprocess per source tree (this checkout's src/, and DIR/src when
--baseline names an older checkout, e.g. `git worktree add /tmp/base 33e375e`), so both trees run on
the same interpreter and machine in one run, the two trees alternating round by round; the median of
--repeats rounds is printed, and the ratio baseline / this when a baseline is given.

- `dtsim --help`: wall time of the whole process (`python -m dtsim --help`).
- `import dtsim`: wall time of `python -c "import dtsim"`.
- `simulate()`: per call, a warm loop over `dtsim.simulate(Scenario())`.
- `step()`: per call, a warm loop over `dtsim.step` of GPT-3 175B on 64 × 8 A100-80GB (TP 8, PP 8).
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
try:
    from dtsim.models.datacenter.step import step
    from dtsim.models.datacenter.workload import Cluster, Layout, Workload
except ImportError:  # a checkout from before the core restructuring
    from dtsim.datacenter import Cluster, Layout, Workload, step
w = Workload(model="gpt3-175b", cluster=Cluster(gpu="a100-80gb", nodes=64), layout=Layout(tp=8, pp=8, gbs=1536))
step(w)
n = {n}
t = time.perf_counter()
for _ in range(n):
    {call}
print((time.perf_counter() - t) / n)
"""
CALLS = {
    "simulate() per call": "dtsim.simulate(s)",
    "step() per call": "step(w)",
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


def measure_once(src: Path) -> dict[str, float]:
    figures = {
        "dtsim --help (process)": process_seconds(src, ["-m", "dtsim", "--help"]),
        "import dtsim (process)": process_seconds(src, ["-c", "import dtsim"]),
    }
    for name, call in CALLS.items():
        figures[name] = loop_seconds(src, call, 1000)
    return figures


def measure(trees: list[Path], repeats: int) -> list[dict[str, float]]:
    """Median of `repeats` rounds; each round measures every tree once, one after the other, so a
    slow spell of a shared machine falls on both sides of a ratio alike."""
    rounds = [[measure_once(src) for src in trees] for _ in range(repeats)]
    return [{k: statistics.median(r[i][k] for r in rounds) for k in rounds[0][i]} for i in range(len(trees))]


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:8.3f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, help="an older dtsim checkout to compare with")
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores")
    trees = [HERE] + ([a.baseline.resolve() / "src"] if a.baseline else [])
    this, base = [*measure(trees, a.repeats), None][:2]
    for name, seconds in this.items():
        line = f"{name:28s} {_fmt(seconds)}"
        if base:
            line += f"   baseline {_fmt(base[name])}   baseline/this {base[name] / seconds:5.2f}x"
        print(line)


if __name__ == "__main__":
    main()
