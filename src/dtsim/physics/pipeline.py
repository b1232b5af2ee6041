"""Pipeline parallelism over slow links: activation sizes and the GPipe step (MIRI simulator docs §3.3, §3.4)."""

from __future__ import annotations

import numpy as np


def hidden_size(params, coefficient):
    """h ≈ 0.03·√P when no hidden size is given (MIRI simulator docs §3.3 heuristic, validated ±20% on
    LLaMA-2 70B, GPT-3 175B and LLaMA-3.1 405B)."""
    return coefficient * np.sqrt(np.asarray(params, dtype=float))


def handoff_bits(batch_tokens, micro_batches, hidden, bytes_per_value, compression, directions):
    """Bits crossing one stage boundary per micro-batch: (B/M)·h·bytes·8 / C_act, times 2 when the
    backward activation gradients are counted (MIRI simulator docs §3.3; §10 item 6 says forward-only undercounts)."""
    return (
        directions
        * np.asarray(batch_tokens, dtype=float)
        / micro_batches
        * hidden
        * 8.0
        * bytes_per_value
        / compression
    )


def gpipe_step(micro_batches, stages, t_micro_compute, t_micro_transfer, latency_s, straggler):
    """One GPipe step of M micro-batches through S stages (MIRI simulator docs §3.3; Huang et al. 2019):

        T = (M + S − 1) · (t_comp + (t_comm + latency) · f(S))

    Returns the total and its parts, which sum to it: useful compute (M slots), bubble compute
    (S − 1 idle slots), transfer, latency and the straggler share of the communication.
    """
    slots = micro_batches + stages - 1.0
    comm = t_micro_transfer + latency_s
    total = slots * (t_micro_compute + comm * straggler)
    return {
        "total": total,
        "compute": micro_batches * t_micro_compute,
        "bubble": (stages - 1.0) * t_micro_compute,
        "transfer": slots * t_micro_transfer,
        "latency": slots * latency_s,
        "straggler": slots * comm * (straggler - 1.0),
    }


def interleaved_bubble_slots(stages, virtual_stages):
    """Idle micro-batch slots of a 1F1B schedule with v interleaved chunks per stage: (S − 1)/v
    (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters"); the
    bubble fraction is slots / (m + slots) = (S − 1)/(S − 1 + v·m). Zero-bubble schedules (ZB-H2)
    have none once m ≥ 2S − 1."""
    return (np.asarray(stages, dtype=float) - 1.0) / np.asarray(virtual_stages, dtype=float)


def bubble_fraction_seed002(stages, micro_batches, virtual_stages, zero_bubble):
    """Erdil & Schneider-Joseph 2024's named variant (§8.1.3, eq. 22) of the interleaved bubble: with fewer micro-batches
    than stages the interleaving cannot fill the pipeline, adding z = (v − 1)·max(0, S − m) slots:

        f_b = (S − 1 + z) / (S − 1 + z + v·m);  0 for ZB-H2.

    With z = 0 it is slots / (m + slots) of `interleaved_bubble_slots`."""
    s = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    v = np.asarray(virtual_stages, dtype=float)
    z = (v - 1.0) * np.maximum(0.0, s - m)
    fb = (s - 1.0 + z) / (s - 1.0 + z + v * m)
    return np.where(zero_bubble, 0.0, fb)
