"""One-dimensional sweeps: vary one field of a scenario across a range, by the batch path."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dtsim.errors import ScenarioError
from dtsim.models.decentralized.encode import BATCH_FIELDS
from dtsim.models.decentralized.engine import BatchResult, simulate_batch
from dtsim.schema.fields import BOUNDS, INTEGER_FIELDS
from dtsim.schema.scenario import Scenario

# Fields a sweep can vary: every numeric batch field (and bandwidth_mbps, which sets both directions).
SWEEPABLE = tuple(f for f in BATCH_FIELDS if f in BOUNDS and f not in ("max_run_days", "hidden_size"))
MAX_POINTS = 400
SWEEP_OUTPUTS = (
    "wall_clock_days",
    "effective_days",
    "global_mfu",
    "efficiency",
    "quality_adjusted_flop",
    "cost_usd",
    "goodput",  # 1 without node_mtbf_hours; wall_clock_days includes it
)


def current_value(scenario: Scenario, field: str) -> float:
    if field == "bandwidth_mbps":
        return min(scenario.bandwidth_up_mbps, scenario.bandwidth_down_mbps)
    value = getattr(scenario, field)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ScenarioError([(field, value, "has no numeric value to sweep around; give values explicitly")])
    return float(value)


def default_range(scenario: Scenario, field: str, points: int = 41) -> np.ndarray:
    """`points` values from a tenth to ten times the current value (log-spaced), inside the field's
    bounds; mfu runs linearly over its whole range; integers are rounded and de-duplicated."""
    if field not in SWEEPABLE:
        raise ScenarioError([("field", field, f"cannot be swept; choose one of {', '.join(SWEEPABLE)}")])
    if not 2 <= points <= MAX_POINTS:
        raise ScenarioError([("points", points, f"must be between 2 and {MAX_POINTS}")])
    b = BOUNDS[field]
    lo_bound = b.get("ge", b.get("gt"))
    hi_bound = b["le"]
    if field == "mfu":
        values = np.linspace(0.05, 0.8, points)
    else:
        x = current_value(scenario, field)
        if x <= 0:
            values = np.linspace(0.0, 100.0, points)
        else:
            lo = max(x / 10, lo_bound if lo_bound > 0 else x / 10)
            hi = min(x * 10, hi_bound)
            values = np.geomspace(lo, hi, points)
    if field in INTEGER_FIELDS:
        values = np.unique(np.maximum(np.round(values), math.ceil(lo_bound)))
    return np.clip(values, lo_bound, hi_bound)


def sweep(scenario: Scenario, field: str, values: Any) -> BatchResult:
    """The scenario with `field` set to each of `values` (validated like any batch field)."""
    if field not in SWEEPABLE:
        raise ScenarioError([("field", field, f"cannot be swept; choose one of {', '.join(SWEEPABLE)}")])
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or not 1 <= values.size <= MAX_POINTS:
        raise ScenarioError([("values", f"{values.size} values", f"give 1 to {MAX_POINTS} values")])
    return simulate_batch(scenario, **{field: values})
