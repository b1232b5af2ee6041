"""Utilization against training compute (seed 002 §6.2, Figures 6–9), the compute at which linear
scaling stops (Tables 3–4), the parallelism fractions (Figure 7), and the cluster for a given compute."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dtsim.assumptions import Assumptions
from dtsim.models.limits import scaling
from dtsim.models.limits.hardware import LimitsHardware
from dtsim.models.limits.search import SECONDS_PER_MONTH, Best, cluster_size

LINEAR_SCALING_FRACTION = Assumptions().limits_linear_scaling_fraction  # Tables 3–4


def point_dict(shape: scaling.Shape, best: Best) -> dict[str, Any]:
    L = best.layout
    n = best.n_gpus
    steps = shape.steps

    def frac(x: int) -> float:
        return math.log(x) / math.log(n) if n > 1 else 0.0

    comm = best.comm_s
    return {
        "d_model": shape.d_model,
        "d_ff": shape.d_ff,
        "params": shape.params,
        "layers": shape.layers,
        "sparsity": shape.sparsity,
        "batch_tokens": shape.batch_tokens,
        "training_flop": shape.training_flop,
        "months": best.months,
        "utilization": best.utilization,
        "n_gpus": n,
        **{
            k: L[k]
            for k in ("dp", "tp_model", "tp_ff", "pp", "pp_interleaving", "ep", "microbatches", "schedule")
        },
        "bubble_fraction": L["bubble_fraction"],
        **best.levels,
        "parallelism_fraction": {
            "dp": frac(L["dp"]),
            "tp": frac(L["tp_model"] * L["tp_ff"]),
            "pp": frac(L["pp"]),
            "ep": frac(L["ep"]),
        },
        "step_s": best.step_s,
        "gemm_months": comm["gemm"] * steps / SECONDS_PER_MONTH,
        "tp_comm_months": comm["tp_comm"] * steps / SECONDS_PER_MONTH,
        "dp_comm_months": comm["dp_comm"] * steps / SECONDS_PER_MONTH,
        "pp_comm_months": comm["pp_comm"] * steps / SECONDS_PER_MONTH,
        "latency_months": (comm["dp_lat"] + comm["tp_lat"] + comm["pp_lat"]) * steps / SECONDS_PER_MONTH,
        "gemm_shape_per_gpu": list(best.gemm_shape),
        "memory": best.memory,
        "layouts_searched": best.searched,
    }


def curve(
    hw: LimitsHardware,
    sparse: bool = False,
    batch_law: str = "default",
    months: float = 3.0,
    seq_len: int = 2048,
    memory: str = "per-gpu",
    d_models: list[int] | None = None,
    stop_utilization: float = 0.001,
) -> list[dict[str, Any]]:
    """One point per d_model (the reference grid by default) with the smallest cluster that trains the
    compute-optimal run within `months` and its best layout; stops at the first width no cluster can
    train in time (the latency wall) or whose utilization falls below `stop_utilization`."""
    out = []
    for d in d_models or scaling.d_model_grid():
        shape = scaling.shape_for(d, sparse=sparse, batch_law=batch_law, seq_len=seq_len)
        best = cluster_size(shape, hw, months, memory)
        if best is None:
            break
        out.append(point_dict(shape, best))
        if best.utilization < stop_utilization:
            break
    return out


def linear_scaling_stop(points: list[dict[str, Any]], hw: LimitsHardware) -> dict[str, Any] | None:
    """Where utilization first falls below 80% of one GPU's sustained utilization: the first such
    point, and the compute where the curve crosses the threshold (log-linear between points)."""
    threshold = LINEAR_SCALING_FRACTION * hw.max_utilization
    for i, p in enumerate(points):
        if p["utilization"] < threshold:
            crossing = p["training_flop"]
            if i > 0:
                q = points[i - 1]
                x0, x1 = math.log10(q["training_flop"]), math.log10(p["training_flop"])
                y0, y1 = q["utilization"], p["utilization"]
                if y0 != y1:
                    crossing = 10 ** (x0 + (threshold - y0) * (x1 - x0) / (y1 - y0))
            return {
                "threshold_utilization": threshold,
                "first_point_flop": p["training_flop"],
                "crossing_flop": crossing,
            }
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


def parallelism_fractions(points: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    return {k: np.array([p["parallelism_fraction"][k] for p in points]) for k in ("dp", "tp", "pp", "ep")}
