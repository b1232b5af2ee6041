"""Utilization against training compute (Erdil & Schneider-Joseph 2024 §6.2, Figures 6–9), the compute at which linear
scaling stops (Tables 3–4), the parallelism fractions (Figure 7), and the cluster for a given compute."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.models.limits import scaling
from dtsim.models.limits.hardware import LimitsHardware
from dtsim.models.limits.search import SECONDS_PER_MONTH, Best, cluster_size
from dtsim.physics import cost

LINEAR_SCALING_FRACTION = Assumptions().limits_linear_scaling_fraction  # Tables 3–4


@dataclass(frozen=True)
class LimitsPoint:
    """One point of a utilization curve (or the answer of `dtsim limits search`): the compute-optimal
    model, the smallest cluster that trains it within the time limit, its best layout and where the
    time goes. Units are in the field names (`_flop`, `_s`, `_months`, `_gb`); counts are plain
    (`params`, `n_gpus`, `batch_tokens`, `layers`), `utilization` and `bubble_fraction` are fractions
    of one. `as_dict()` is the flat JSON of `dtsim limits curve --json`."""

    d_model: int
    d_ff: int
    params: float
    layers: int
    sparsity: int  # E, experts per MoE layer (1 = dense)
    batch_tokens: int
    training_flop: float
    months: float  # training time on `n_gpus`
    utilization: float
    n_gpus: int
    dp: int
    tp_model: int
    tp_ff: int
    pp: int
    pp_interleaving: int
    ep: int
    microbatches: int
    schedule: str  # "1f1b" | "zero-bubble"
    bubble_fraction: float
    levels: dict[str, list[int]]  # "<degree>_per_level": the degree's factor at each network level
    parallelism_fraction: dict[str, float]  # log(N_X) / log(N_GPU) for dp, tp, pp, ep (Figure 7)
    step_s: float
    gemm_months: float
    tp_comm_months: float
    dp_comm_months: float
    pp_comm_months: float
    latency_months: float
    gemm_shape_per_gpu: tuple[int, int, int]
    memory: dict[str, Any]  # per-GPU `_gb` figures and which memory checks pass
    layouts_searched: int
    # The run's GPU-hours, the GPUs' purchase cost (catalog price) and facility energy (board power ×
    # time × PUE), counted as `simulate` and `step --tokens` count them (physics/cost.py).
    gpu_hours: float
    capital_cost_usd: float
    energy_kwh: float

    def as_dict(self) -> dict[str, Any]:
        """The flat JSON form: the per-level factors spread into the top level, lists for tuples."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "levels":
                out.update({k: list(v) for k, v in value.items()})
            elif f.name == "gemm_shape_per_gpu":
                out[f.name] = list(value)
            elif isinstance(value, dict):
                out[f.name] = dict(value)
            else:
                out[f.name] = value
        return out


@dataclass(frozen=True)
class LinearScalingStop:
    """Where a curve stops scaling linearly (Tables 3–4)."""

    threshold_utilization: float  # LINEAR_SCALING_FRACTION × one GPU's sustained utilization
    first_point_flop: float  # training compute of the first point below the threshold
    crossing_flop: float  # where the curve crosses it, log-linear between points


# the LimitsPoint fields copied from the model's Shape and from the search's layout, in JSON order
SHAPE_FIELDS = ("d_model", "d_ff", "params", "layers", "sparsity", "batch_tokens", "training_flop")
LAYOUT_FIELDS = ("dp", "tp_model", "tp_ff", "pp", "pp_interleaving", "ep", "microbatches", "schedule")


def limits_point(shape: scaling.Shape, best: Best, hw: LimitsHardware) -> LimitsPoint:
    """The curve point of `shape` trained with the search's answer `best` on `hw` (whose catalog GPU
    prices the run and gives its board power)."""
    L = best.layout
    n = best.n_gpus
    steps = shape.steps
    gpu = catalog.gpus()[hw.gpu]
    seconds = best.months * SECONDS_PER_MONTH
    pue = Assumptions().pue

    def frac(x: int) -> float:
        return math.log(x) / math.log(n) if n > 1 else 0.0

    def months(seconds_per_step: float) -> float:
        return seconds_per_step * steps / SECONDS_PER_MONTH

    comm = best.comm_s
    return LimitsPoint(
        **{k: getattr(shape, k) for k in SHAPE_FIELDS},
        months=best.months,
        utilization=best.utilization,
        n_gpus=n,
        **{k: L[k] for k in LAYOUT_FIELDS},
        bubble_fraction=L["bubble_fraction"],
        levels=dict(best.levels),
        parallelism_fraction={
            "dp": frac(L["dp"]),
            "tp": frac(L["tp_model"] * L["tp_ff"]),
            "pp": frac(L["pp"]),
            "ep": frac(L["ep"]),
        },
        step_s=best.step_s,
        gemm_months=months(comm["gemm"]),
        tp_comm_months=months(comm["tp_comm"]),
        dp_comm_months=months(comm["dp_comm"]),
        pp_comm_months=months(comm["pp_comm"]),
        latency_months=months(comm["dp_lat"] + comm["tp_lat"] + comm["pp_lat"]),
        gemm_shape_per_gpu=tuple(best.gemm_shape),
        memory=best.memory,
        layouts_searched=best.searched,
        gpu_hours=float(cost.gpu_hours(n, seconds)),
        capital_cost_usd=float(cost.capital_cost(n, gpu.price_usd)),
        energy_kwh=float(cost.energy_kwh(n, gpu.board_power_w, seconds, pue)),
    )


def curve(
    hw: LimitsHardware,
    sparse: bool = False,
    batch_law: str = "default",
    months: float = 3.0,
    seq_len: int = 2048,
    memory: str = "per-gpu",
    d_models: list[int] | None = None,
    stop_utilization: float = 0.001,
) -> list[LimitsPoint]:
    """One point per d_model (the reference grid by default) with the smallest cluster that trains the
    compute-optimal run within `months` and its best layout; stops at the first width no cluster can
    train in time (the latency wall) or whose utilization falls below `stop_utilization`."""
    out = []
    for d in d_models or scaling.d_model_grid():
        shape = scaling.shape_for(d, sparse=sparse, batch_law=batch_law, seq_len=seq_len)
        best = cluster_size(shape, hw, months, memory)
        if best is None:
            break
        out.append(limits_point(shape, best, hw))
        if best.utilization < stop_utilization:
            break
    return out


def linear_scaling_stop(points: list[LimitsPoint], hw: LimitsHardware) -> LinearScalingStop | None:
    """Where utilization first falls below 80% of one GPU's sustained utilization: the first such
    point, and the compute where the curve crosses the threshold (log-linear between points)."""
    threshold = LINEAR_SCALING_FRACTION * hw.max_utilization
    for i, p in enumerate(points):
        if p.utilization < threshold:
            crossing = p.training_flop
            if i > 0:
                q = points[i - 1]
                x0, x1 = math.log10(q.training_flop), math.log10(p.training_flop)
                y0, y1 = q.utilization, p.utilization
                if y0 != y1:
                    crossing = 10 ** (x0 + (threshold - y0) * (x1 - x0) / (y1 - y0))
            return LinearScalingStop(
                threshold_utilization=threshold, first_point_flop=p.training_flop, crossing_flop=crossing
            )
    return None


def shape_for_compute(
    compute_flop: float, sparse: bool = False, batch_law: str = "default", seq_len: int = 2048
):
    """The model the scaling relations give for a training compute (§6.1 item 6): the width (a multiple
    of 256) whose compute-optimal run uses the least compute ≥ the target."""
    lo, hi = 256, 2**24
    if scaling.shape_for(hi, sparse, batch_law, seq_len).training_flop < compute_flop:
        raise ValueError("compute beyond the largest model the scaling relations describe")
    while hi - lo > 256:
        mid = (lo + hi) // 2 // 256 * 256
        if scaling.shape_for(mid, sparse, batch_law, seq_len).training_flop >= compute_flop:
            hi = mid
        else:
            lo = mid
    # the layer rounding makes compute non-monotone in width: take the first width at or above target
    for d in range(max(256, lo - 16 * 256), hi + 256, 256):
        s = scaling.shape_for(d, sparse, batch_law, seq_len)
        if s.training_flop >= compute_flop:
            return s
    return scaling.shape_for(hi, sparse, batch_law, seq_len)


def parallelism_fractions(points: list[LimitsPoint]) -> dict[str, np.ndarray]:
    """log(N_X) / log(N_GPU) along a curve, per degree (Figure 7)."""
    return {k: np.array([p.parallelism_fraction[k] for p in points]) for k in ("dp", "tp", "pp", "ep")}
