"""Scale-across fabrics: power-constrained cluster dimensioning and the WAN bandwidth a distributed
data-parallel run needs (Camilli 2025 chapter 3)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dtsim.physics.collectives import propagation_delay


def sync_time(grad_bits, bandwidth_bits_s, propagation_s, hop_s):
    """T_synch = T_prop + T_hop + T_ser with T_ser = S_grad / BW_net (Camilli 2025 eq. 3.8, 3.11)."""
    return propagation_s + hop_s + np.asarray(grad_bits, dtype=float) / bandwidth_bits_s


def min_sync_bandwidth(grad_bits, sync_budget_s, propagation_s, hop_s):
    """BW_min = S_grad / (T_synch − T_prop − T_hop) (Camilli 2025 eq. 3.13, the budget T_synch being
    α_net·T_batch, eq. 3.6); +∞ where latency alone spends the budget."""
    room = np.asarray(sync_budget_s, dtype=float) - propagation_s - hop_s
    with np.errstate(divide="ignore"):
        return np.where(room > 0, np.asarray(grad_bits, dtype=float) / np.where(room > 0, room, 1.0), np.inf)


def epoch_steps(samples, local_batch, ranks):
    """N_steps = ⌊N_samples / (bs_local · ws)⌋: an epoch's steps, the last incomplete global batch
    dropped as PyTorch does by default (Camilli 2025 eq. 5.2, 5.3)."""
    return np.floor(np.asarray(samples, dtype=float) / (np.asarray(local_batch, dtype=float) * ranks))


def peak_throughput_bits_s(event_bytes, duration_s):
    """TH_peak = Bytes_AR · 8 / (Dur/event): a synchronization burst's rate on the wire (Camilli 2025
    eq. 4.1)."""
    return np.asarray(event_bytes, dtype=float) * 8.0 / duration_s


@dataclass(frozen=True)
class FabricPlan:
    power_per_dc_w: float
    pods: float
    pods_per_dc: float
    peak_flop_s: float
    critical_batch_tokens: float
    steps: float
    batch_time_s: float
    sync_budget_s: float
    propagation_s: float
    hop_s: float
    gradient_bits: float
    min_bandwidth_bits_s: float
    rack_bandwidth_bits_s: float
    dc_internal_bandwidth_bits_s: float
    compute_flop: float = 0.0  # F·N·D, the training's model FLOPs
    required_mfu: float = 0.0  # the MFU that fits them into the compute share of train_days


def plan_fabric(
    cluster_power_w: float,
    datacenters: int,
    pod_power_w: float,
    pod_peak_flop_s: float,
    parameters: float,
    tokens: float,
    bits_per_param: float,
    train_days: float,
    network_fraction: float,
    ring_km: float,
    hop_latency_s: float,
    critical_batch_k: float,
    trays_per_rack: int,
    ports_per_tray: int,
    port_bits_s: float,
    sync_budget_s: float | None = None,
    flops_per_param_token: float = 6.0,
) -> FabricPlan:
    """Camilli 2025 §3.2–3.4:
      P_dc = P_cluster / N_dc (3.1); N_pod = P_cluster / P_pod (3.2); pods per DC = N_pod / N_dc (3.3);
      TH_cluster = N_pod · TH_pod (3.4); B_crit = k·√S_data (3.7); T_batch = T_train · B_crit / S_data;
      T_synch ≤ α_net · T_batch (3.6); T_prop = L · 5 µs/km (3.9); T_hop = N_dc · τ_hop (3.10);
      S_grad = N_param · bits (3.12); BW_min = S_grad / (T_synch − T_prop − T_hop) (3.13);
      BW_rack = trays · ports · BW_port (3.15); BW_dc = pods per DC · BW_rack (3.16).
    `sync_budget_s` overrides α_net·T_batch (the thesis rounds 0.05 × 4.9 s to 250 ms).
    Whether the compute fits the schedule it dimensions: the training's F·N·D model FLOPs over the
    compute share (1 − α_net) of T_train at the cluster's peak is the MFU the schedule requires; above
    1 no utilization can meet it.
    """
    pods = cluster_power_w / pod_power_w
    b_crit = critical_batch_k * np.sqrt(tokens)
    steps = tokens / b_crit
    batch_time = train_days * 86400.0 / steps
    budget = network_fraction * batch_time if sync_budget_s is None else sync_budget_s
    prop = float(propagation_delay(ring_km))
    hop = datacenters * hop_latency_s
    grad_bits = parameters * bits_per_param
    bw_min = float(min_sync_bandwidth(grad_bits, budget, prop, hop))
    rack = trays_per_rack * ports_per_tray * port_bits_s
    compute = flops_per_param_token * parameters * tokens
    compute_time = train_days * 86400.0 * (1.0 - network_fraction)
    return FabricPlan(
        power_per_dc_w=cluster_power_w / datacenters,
        pods=pods,
        pods_per_dc=pods / datacenters,
        peak_flop_s=pods * pod_peak_flop_s,
        critical_batch_tokens=float(b_crit),
        steps=float(steps),
        batch_time_s=float(batch_time),
        sync_budget_s=float(budget),
        propagation_s=prop,
        hop_s=hop,
        gradient_bits=grad_bits,
        min_bandwidth_bits_s=bw_min,
        rack_bandwidth_bits_s=rack,
        dc_internal_bandwidth_bits_s=pods / datacenters * rack,
        compute_flop=compute,
        required_mfu=compute / (pods * pod_peak_flop_s * compute_time) if compute_time > 0 else float("inf"),
    )
