"""Algorithmic efficiency: η from inner steps, compression quality, activation compression quality,
and the replica penalty (MIRI simulator docs §4; reference README)."""

from __future__ import annotations

import numpy as np

from dtsim.physics.numeric import broadcast, power, select

COMPRESSION_SCENARIOS = ("optimistic", "expected", "conservative")
REPLICA_PENALTIES = ("none", "h-scaled", "fixed")


def alpha(total_params, asm):
    """α = α_base / (1 + log10(P / 10⁹) / divisor): larger models tolerate longer local training
    (MIRI simulator docs §4.3; Charles et al. 2025)."""
    return asm.alpha_base / (
        1.0 + np.log10(np.asarray(total_params, dtype=float) / 1e9) / asm.alpha_size_divisor
    )


def hierarchical_effective_steps(inner_steps, regional_steps, asm):
    """H_eff = H_inner · H_regional^0.5 (MIRI simulator docs §4.4, heuristic exponent)."""
    return inner_steps * power(regional_steps, asm.hierarchical_h_exponent)


def eta_h(h_eff, alpha_value, penalty, floor):
    """η_H = max(floor, (1 − α·log10(H_eff)) / P_strategy) (MIRI simulator docs §4.1, §4.2)."""
    return np.maximum(floor, (1.0 - alpha_value * np.log10(h_eff)) / penalty)


def log_interp(x, keys, values):
    """Piecewise-linear interpolation in log(x) between table keys, held constant outside them.

    `values` has the key axis last; any leading axes broadcast against x's own shape after the caller
    selects a row (see compression_quality). This is the original simulator's lookup rule
    (reference README: "log-linearly interpolated between table keys").
    """
    x = np.asarray(x, dtype=float)
    logk = np.log(keys)
    # np.minimum(np.maximum(...)) is np.clip without its per-call wrapper cost (same values, NaN too)
    xc = np.minimum(np.maximum(x, keys[0]), keys[-1])
    i = np.minimum(np.maximum(np.searchsorted(keys, xc, side="right") - 1, 0), len(keys) - 2)
    t = (np.log(xc) - logk[i]) / (logk[i + 1] - logk[i])
    lo = np.take_along_axis(values, i[..., None], axis=-1)[..., 0] if values.ndim > 1 else values[i]
    hi = np.take_along_axis(values, (i + 1)[..., None], axis=-1)[..., 0] if values.ndim > 1 else values[i + 1]
    return lo + t * (hi - lo)


def compression_quality(ratio, error_feedback, scenario, asm):
    """η_C: quality factor of pseudo-gradient compression, looked up by ratio in the table for
    (error feedback on/off, scenario) (reference README; MIRI Compression_Quality.md)."""
    ratio, ef, scen = broadcast(np.asarray(ratio, dtype=float), error_feedback, scenario)
    rows = asm.compression_table[ef.astype(int), scen.astype(int)]
    return log_interp(ratio, asm.compression_keys, rows)


def activation_quality(ratio, stages, scenario, asm):
    """η_act = q(ratio)^(2·(S−1)): each of the S−1 pipeline boundaries is crossed forward and backward
    (reference README; MIRI Compression_Quality.md §6). 1 when the model is not pipelined."""
    ratio, scen = broadcast(np.asarray(ratio, dtype=float), scenario)
    per_handoff = log_interp(ratio, asm.activation_keys, asm.activation_table[scen.astype(int)])
    return power(per_handoff, 2.0 * (np.asarray(stages, dtype=float) - 1.0))


def replica_beta(total_params, asm):
    """β = 1.0923 · P^−0.2342 (P in parameters): the loss exponent of the replica count
    (reference README; fitted to Charles et al. 2025)."""
    return asm.replica_beta_coefficient * power(total_params, asm.replica_beta_exponent)


def replica_loss_multiplier(replicas, total_params, h_eff, mode, asm):
    """Loss multiplier M^β for M independent DiLoCo replicas.

    mode 0 (none): 1.
    mode 1 (h-scaled): β scaled by ln(H)/ln(H_ref), so H = 1 (synchronous) costs nothing — the
        original's later Python model.
    mode 2 (fixed): β unscaled — the original web app.
    """
    beta = replica_beta(total_params, asm)
    scale = select(mode == 1, np.log(h_eff) / np.log(asm.replica_h_reference), 1.0)
    mult = power(np.maximum(replicas, 1.0), beta * scale)
    return select(mode == 0, 1.0, mult)
