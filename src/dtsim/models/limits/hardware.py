"""Hardware for the frontier-limits model: a GPU's GEMM constants (catalog `micro:`) plus a network
hierarchy of any depth — per-level bidirectional bandwidth per GPU, per-level latency and the sizes of
the levels below the top (Erdil & Schneider-Joseph 2024 §6.1 item 3, §8.1.2)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError

DEFAULT_NETWORK_LATENCY_S = Assumptions().limits_network_latency_s  # gpu_presets.json


@dataclass(frozen=True)
class LimitsHardware:
    id: str
    name: str
    gpu: str
    micro: Any
    memory_bytes: float
    bandwidth: tuple[float, ...]  # bidirectional bytes/s per GPU, one per level (first: inside a node)
    latency: tuple[float, ...]  # seconds per level
    level_sizes: tuple[int, ...]  # GPUs grouped by each level below the top
    matmul_latency_s: float
    source: str
    bits: int = 16

    @property
    def bytewidth(self) -> float:
        return self.bits / 8.0

    @property
    def levels(self) -> int:
        return len(self.bandwidth)

    @property
    def peak_flop_s(self) -> float:
        """Datasheet dense peak at the boost clock (the utilization denominator)."""
        return self.micro.peak_flop_s(self.bits)

    @property
    def sustained_flop_s(self) -> float:
        return self.peak_flop_s * self.micro.sustained_share(self.bits)

    @property
    def max_utilization(self) -> float:
        """What one GPU sustains on long runs of large GEMMs: the clock derate."""
        return self.micro.clock_derate

    def replace(self, **changes) -> LimitsHardware:
        return dataclasses.replace(self, **changes)


MAX_LEVEL_BYTES_S = 1e18  # bidirectional bytes/s of one network level (the API's bound too)
MAX_LEVEL_LATENCY_US = 1e9  # µs of one level's latency (1,000 s)


def _check(hw: LimitsHardware) -> LimitsHardware:
    problems = []
    if len(hw.latency) != len(hw.bandwidth):
        problems.append(
            (
                "network_latency_s",
                list(hw.latency),
                f"needs one entry per bandwidth level ({len(hw.bandwidth)})",
            )
        )
    if len(hw.level_sizes) != len(hw.bandwidth) - 1:
        problems.append(
            (
                "level_sizes",
                list(hw.level_sizes),
                f"needs {len(hw.bandwidth) - 1} entries (levels below the top)",
            )
        )
    for b in hw.bandwidth:
        if not b > 0:
            problems.append(("network_bytes_per_s_bidirectional", b, "every level needs a bandwidth > 0"))
    for lat in hw.latency:
        if not (lat >= 0 and math.isfinite(lat)):
            problems.append(("network_latency_s", lat, "every level needs a finite latency ≥ 0"))
    for s in hw.level_sizes:
        if not (isinstance(s, int) and s >= 1):
            problems.append(("level_sizes", s, "every level size must be an integer ≥ 1"))
    if problems:
        raise ScenarioError(problems)
    return hw


@cache
def scenarios() -> dict[str, LimitsHardware]:
    out = {}
    for sid, row in catalog.load_table("limits.yaml").items():
        gpu = catalog.gpus()[row["gpu"]]
        micro = gpu.micro
        out[sid] = _check(
            LimitsHardware(
                id=sid,
                name=row["name"],
                gpu=row["gpu"],
                micro=micro,
                memory_bytes=float(row["memory_bytes"]),
                bandwidth=tuple(float(x) for x in row["network_bytes_per_s_bidirectional"]),
                latency=tuple(float(x) for x in row["network_latency_s"]),
                level_sizes=tuple(int(x) for x in row["level_sizes"]),
                matmul_latency_s=float(row.get("matmul_latency_s", micro.matmul_latency_s)),
                source=row["source"],
            )
        )
    return out


def from_gpu(gpu_id: str) -> LimitsHardware:
    """A DGX-style scenario for any catalog GPU with micro-architecture constants: nodes of 8 on the
    GPU's NVLink, its NICs above, 1.125 µs per level (the reference implementation's latency)."""
    gpu = catalog.gpus().get(gpu_id)
    gpu_model = {k for k, g in catalog.gpus().items() if g.micro is not None and not g.micro.systolic}
    if gpu_id not in gpu_model:
        known = ", ".join(sorted(set(scenarios()) | gpu_model))
        why = (
            "unknown"
            if gpu is None or gpu.micro is None
            else "a TPU: Erdil & Schneider-Joseph 2024's GEMM model is a GPU's (SMs, L2)"
        )
        raise ScenarioError(
            [("gpu", gpu_id, f"{why}; use a scenario or a GPU with micro constants: {known}")]
        )
    m = gpu.micro
    fab = catalog.fabrics()
    nvlink = 2e9 * fab[m.nvlink].bandwidth_gb_s
    nic = 2e9 * fab[m.nic].bandwidth_gb_s * m.nics_per_gpu
    return _check(
        LimitsHardware(
            id=gpu_id,
            name=f"{gpu.name} (nodes of 8)",
            gpu=gpu_id,
            micro=m,
            memory_bytes=gpu.memory_bytes,
            bandwidth=(nvlink, nic),
            latency=(DEFAULT_NETWORK_LATENCY_S, DEFAULT_NETWORK_LATENCY_S),
            level_sizes=(8,),
            matmul_latency_s=m.matmul_latency_s,
            source=f"catalog GPU {gpu_id}: {m.nvlink} inside nodes of 8, {m.nic} × {m.nics_per_gpu} per GPU above (wire rates)",
        )
    )


def get(name: str) -> LimitsHardware:
    """A scenario id (`h100-sxm`, `h100-sxm-low-latency`, …) or a catalog GPU id."""
    key = str(name).strip().lower()
    if key in scenarios():
        return scenarios()[key]
    return from_gpu(key)


def custom(
    base: LimitsHardware,
    bandwidth=None,
    latency=None,
    level_sizes=None,
    matmul_latency_s=None,
    peak_tflops=None,
    hbm_tb_s=None,
    memory_gb=None,
) -> LimitsHardware:
    """A variant of `base` with some constants replaced (validated), as Erdil & Schneider-Joseph 2024 Table 2 describes a
    chip: the dense peak at the model's precision (the same design clocked to reach it: SMs × FLOP per
    clock × clock), HBM bandwidth and capacity, and the network levels' bandwidth and latency."""
    problems = [
        (name, value, f"must be a finite number > 0 and ≤ {limit:g}")
        for name, value, limit in (
            ("peak_tflops", peak_tflops, 1e6),
            ("hbm_tb_s", hbm_tb_s, 1e4),
            ("memory_gb", memory_gb, 1e6),
        )
        if value is not None and not (math.isfinite(value) and 0 < value <= limit)
    ]
    # the network levels as the API bounds them: a bandwidth under one byte per second is no network
    # (and dividing by a subnormal one overflows to inf, then NaN), a latency over 1,000 s none either
    problems += [
        ("level_bandwidth", b, f"every level needs a finite bandwidth ≥ 1 byte/s and ≤ {MAX_LEVEL_BYTES_S:g}")
        for b in (bandwidth or ())
        if not (math.isfinite(b) and 1.0 <= b <= MAX_LEVEL_BYTES_S)
    ]
    problems += [
        (
            "level_latency_us",
            lat * 1e6,
            f"every level needs a finite latency ≥ 0 and ≤ {MAX_LEVEL_LATENCY_US:g} µs",
        )
        for lat in (latency or ())
        if not (math.isfinite(lat) and 0.0 <= lat * 1e6 <= MAX_LEVEL_LATENCY_US)
    ]
    if problems:
        raise ScenarioError(problems)
    micro = base.micro
    if peak_tflops is not None:
        per_clock = micro.flop_per_clock_per_thread[base.bits] * 128 * micro.num_sms
        micro = dataclasses.replace(micro, max_clock_hz=peak_tflops * 1e12 / per_clock)
    if hbm_tb_s is not None:
        micro = dataclasses.replace(micro, hbm_bytes_per_s=hbm_tb_s * 1e12)
    return _check(
        base.replace(
            id=base.id + "-custom",
            name=base.name + " (custom)",
            micro=micro,
            memory_bytes=base.memory_bytes if memory_gb is None else memory_gb * 1e9,
            bandwidth=base.bandwidth if bandwidth is None else tuple(float(x) for x in bandwidth),
            latency=base.latency if latency is None else tuple(float(x) for x in latency),
            level_sizes=base.level_sizes if level_sizes is None else tuple(int(x) for x in level_sizes),
            matmul_latency_s=base.matmul_latency_s if matmul_latency_s is None else float(matmul_latency_s),
        )
    )
