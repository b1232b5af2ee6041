"""Compute: total training FLOPs, per-step compute time, expert-parallel latency (MIRI simulator docs §1)."""

from __future__ import annotations

import numpy as np


def model_flop(active_params, tokens, flops_per_param_token):
    """C = 6·P·D with P the active parameters per token (MIRI simulator docs §1.1, §1.4; Kaplan et al. 2020)."""
    return flops_per_param_token * np.asarray(active_params, dtype=float) * tokens


def step_flop(active_params, batch_tokens, flops_per_param_token):
    """FLOPs of one local step of B tokens: 6·P_active·B (MIRI simulator docs §1.2)."""
    return flops_per_param_token * np.asarray(active_params, dtype=float) * batch_tokens


def step_compute_time(step_flops, peak_flop_s, mfu):
    """Seconds of matmul work for one step: 6·P_active·B / (peak · MFU) (MIRI simulator docs §1.2)."""
    return step_flops / (np.asarray(peak_flop_s, dtype=float) * mfu)


def ep_latency(latency_s, moe_layers, all_to_all_per_layer):
    """T_EP = 2 · latency · L_MoE: two latency-bound all-to-alls per MoE layer (MIRI simulator docs §1.5)."""
    return all_to_all_per_layer * np.asarray(latency_s, dtype=float) * moe_layers
