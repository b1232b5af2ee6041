"""What each compression of the pseudo-gradient sends: the `--compression` spec and the payload bytes
per rank. Plain Python (no torch), so options are checked and predictions made without the `emulator`
extra; the averaging itself, on torch tensors, is `emulator/averager.py`."""

from __future__ import annotations

import math

from dtsim.errors import ScenarioError
from dtsim.physics.collectives import allreduce_bytes_per_rank

# int8 ring hand-offs in flight at once: each rank's chunk goes as this many pieces, each quantized with
# its own scale, the next posted before the last is done (PRIME's BUFFER_COUNT, src/zeroband/C/csrc/
# collectives.cpp); `emulator/averager.py` runs the ring
INT8_PIPELINE = 2


def parse(spec: str) -> tuple[str, float]:
    s = str(spec).strip().lower()
    if s in ("none", "fp16", "int8"):
        return s, 1.0
    if s.startswith("topk:"):
        try:
            ratio = float(s.split(":", 1)[1])
        except ValueError:
            ratio = float("nan")
        if not (math.isfinite(ratio) and ratio >= 1):
            raise ScenarioError([("compression", spec, "topk:RATIO needs a ratio ≥ 1, e.g. topk:100")])
        return "topk", ratio
    raise ScenarioError([("compression", spec, "must be none, fp16, int8 or topk:RATIO")])


def expected_bytes_per_rank(kind: str, ratio: float, numel: int, world: int, value_bytes: int = 4) -> float:
    """Payload each rank sends for one averaging of `numel` values (protocol overhead excluded)."""
    n = world
    if n <= 1:
        return 0.0
    if kind == "none":
        return float(allreduce_bytes_per_rank(n, numel * value_bytes))
    if kind == "fp16":
        return float(allreduce_bytes_per_rank(n, numel * 2))
    if kind == "int8":  # values (one byte each, padded to whole pieces) + one fp32 scale per piece each way
        pieces = n * INT8_PIPELINE
        padded = math.ceil(numel / pieces) * pieces
        return float(allreduce_bytes_per_rank(n, padded)) + 2 * (n - 1) * INT8_PIPELINE * 4
    k = math.ceil(numel / ratio)
    return (n - 1) * k * 8
