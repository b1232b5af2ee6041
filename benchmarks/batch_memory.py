"""Peak memory of one large batch: how much of it is the outputs (issue 12, item 8).

    python benchmarks/batch_memory.py [--n 4000000]

Simulates --n flat-DiLoCo scenarios (the scenarios of benchmarks/batch_throughput.py) in a fresh
process and prints the bytes of the per-row output columns beside the process's peak resident memory.
Run it with `PYTHONPATH=DIR/src` to measure another checkout the same way.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batch_throughput import scenarios

import dtsim


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4_000_000)
    a = ap.parse_args()
    fields = scenarios(a.n)
    inputs = sum(v.nbytes for v in fields.values())
    batch = dtsim.simulate_batch(**fields)
    outputs = sum(v.nbytes for v in batch.columns.values() if v.strides != (0,))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    print(
        f"{a.n:,} scenarios: inputs {inputs / 1e9:.2f} GB, per-row outputs {outputs / 1e9:.2f} GB, "
        f"peak resident memory {peak / 1e9:.2f} GB"
    )


if __name__ == "__main__":
    main()
