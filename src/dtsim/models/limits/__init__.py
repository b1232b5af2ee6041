"""The frontier-limits model of Erdil & Schneider-Joseph 2024 (Erdil & Schneider-Joseph 2024, "Data Movement Limits to
Frontier Model Training"): the toy model and its scaling relations, the GEMM and network model, the
vectorized parallelism and cluster-size search, the closed forms, and the utilization curves.
CLI: `dtsim limits closed-form | curve | search`."""

from dtsim.models.limits.curve import (
    LimitsPoint,
    LinearScalingStop,
    curve,
    linear_scaling_stop,
    shape_for_compute,
)
from dtsim.models.limits.hardware import get as get_hardware
from dtsim.models.limits.hardware import scenarios
from dtsim.models.limits.scaling import shape_for
from dtsim.models.limits.search import cluster_size, optimal_layout

search = cluster_size  # `dtsim limits search`: the smallest cluster that trains a shape in time

__all__ = [
    "LimitsPoint",
    "LinearScalingStop",
    "cluster_size",
    "curve",
    "get_hardware",
    "linear_scaling_stop",
    "optimal_layout",
    "scenarios",
    "search",
    "shape_for",
    "shape_for_compute",
]
