"""GPU-hours, capital cost and energy of a run."""

from __future__ import annotations

import numpy as np


def gpu_hours(gpu_count, seconds):
    return np.asarray(gpu_count, dtype=float) * seconds / 3600.0


def capital_cost(gpu_count, price_usd):
    """Purchase cost of the accelerators: GPUs × catalog price (the original simulator's cost_usd)."""
    return np.asarray(gpu_count, dtype=float) * price_usd


def energy_kwh(gpu_count, board_power_w, seconds, pue):
    """Facility energy: GPUs × board power × time × PUE. Board power is an upper bound on the
    accelerator's draw; host CPUs and networking enter only through PUE."""
    return np.asarray(gpu_count, dtype=float) * board_power_w * seconds / 3600.0 / 1000.0 * pue
