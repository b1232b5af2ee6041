"""Communication primitives for wide-area links (MIRI simulator docs §3; reference README "asymmetric links").

The datacenter collectives (ring, tree, hierarchical all-reduce) join this module with the
datacenter model; the WAN exchange here is the parameter-server-style pattern the decentralized
simulator assumes: every node uploads its payload and downloads the aggregate.
"""

from __future__ import annotations

import numpy as np


def payload_bits(params, bytes_per_value, compression):
    """Bits one node sends per synchronization: P · 8·bytes_per_value / C_r (MIRI simulator docs §3.1, §8)."""
    return np.asarray(params, dtype=float) * (8.0 * bytes_per_value) / compression


def wan_exchange_time(bits, up_bps, down_bps, latency_s):
    """Upload the payload, download the aggregate, pay one round trip.

    T = V/BW_up + V/BW_down + RTT. With a symmetric link this is MIRI simulator docs §3.1's 2·V/BW + Latency;
    the asymmetric form is the original simulator's later model (shared/reference/README.md).
    """
    return bits / up_bps + bits / down_bps + latency_s


def point_to_point_time(bits, bandwidth_bps):
    """Serialization time of a point-to-point transfer: bits / bandwidth."""
    return np.asarray(bits, dtype=float) / bandwidth_bps


# --- α-β collectives (Data Parallelism from Associativity "Communication Analysis"; Camilli 2025 §3.5; Patarasuk & Yuan 2009) -------
#
# `bw` is the achievable bus bandwidth per rank in bytes/s (wire rate × NCCL bus efficiency, see
# catalog/fabrics.yaml), `alpha` the latency of one step in seconds, `size` the message in bytes.


def ring_allreduce_time(n, size, bw, alpha, bidirectional=False):
    """Ring all-reduce: 2(n−1) steps, each rank sends 2(n−1)/n·S (reduce-scatter then all-gather).
    A bidirectional ring sends half each way, halving the bandwidth term (Camilli 2025 eq. 3.19 form)."""
    n = np.asarray(n, dtype=float)
    bw_term = 2.0 * (n - 1.0) / n * np.asarray(size, dtype=float) / bw
    return np.where(n > 1, 2.0 * (n - 1.0) * alpha + np.where(bidirectional, 0.5, 1.0) * bw_term, 0.0)


def nvls_allreduce_time(n, size, bw, alpha, ring_alpha=0.0):
    """NVLS all-reduce (NVLink SHARP, reduced in the NVSwitch): each rank sends S once and receives the
    sum once, S / bw at the NVLS algorithm bandwidth, after a latency of α_nvls but never less than
    the ring's 2(n−1)·ring_alpha (NCCL's tuner ranks NVLS's latency above the ring's low-latency
    protocols, NCCL src/graph/tuning.cc)."""
    n = np.asarray(n, dtype=float)
    lat = np.maximum(alpha, 2.0 * (n - 1.0) * ring_alpha)
    return np.where(n > 1, lat + np.asarray(size, dtype=float) / bw, 0.0)


def tree_allreduce_time(n, size, bw, alpha):
    """Double binary tree (NCCL): 2·⌈log2 n⌉ latency steps, about 2·S/bw of pipelined traffic."""
    n = np.asarray(n, dtype=float)
    return np.where(
        n > 1, 2.0 * np.ceil(np.log2(np.maximum(n, 1.0))) * alpha + 2.0 * np.asarray(size) / bw, 0.0
    )


def reduce_scatter_time(n, size, bw, alpha):
    """(n−1) steps, each rank sends (n−1)/n·S."""
    n = np.asarray(n, dtype=float)
    return np.where(n > 1, (n - 1.0) * alpha + (n - 1.0) / n * np.asarray(size, dtype=float) / bw, 0.0)


all_gather_time = reduce_scatter_time
all_gather_time.__doc__ = "All-gather: the mirror of reduce-scatter, (n−1)·α + (n−1)/n·S/bw."


def all_to_all_time(n, size, bw, alpha):
    """Each rank keeps 1/n of its S bytes and sends the rest: (n−1)·α + (n−1)/n·S/bw."""
    return reduce_scatter_time(n, size, bw, alpha)


def broadcast_time(n, size, bw, alpha):
    """Pipelined tree broadcast: ⌈log2 n⌉ latency steps plus S/bw."""
    n = np.asarray(n, dtype=float)
    return np.where(n > 1, np.ceil(np.log2(np.maximum(n, 1.0))) * alpha + np.asarray(size) / bw, 0.0)


def p2p_time(size, bw, alpha):
    """One point-to-point transfer: α + S/bw."""
    return alpha + np.asarray(size, dtype=float) / bw


def hierarchical_allreduce_time(size, levels):
    """All-reduce across levels [(ranks at this level, bw, α), ...] from the fastest level up:
    reduce-scatter inside each level, all-reduce the 1/∏n share across the next, all-gather back
    (NCCL's hierarchical algorithm; Erdil & Schneider-Joseph 2024 §8.1.2 does the same per level)."""
    total = 0.0
    share = np.asarray(size, dtype=float)
    for i, (n, bw, alpha) in enumerate(levels):
        n = np.asarray(n, dtype=float)
        if i == len(levels) - 1:
            total = total + ring_allreduce_time(n, share, bw, alpha)
        else:
            total = total + 2.0 * reduce_scatter_time(n, share, bw, alpha)
            share = share / np.maximum(n, 1.0)
    return total


def hierarchical_ring_words(per_level):
    """Erdil & Schneider-Joseph 2024's named variant (§8.1.2) of a hierarchical ring all-reduce, in words moved per word
    reduced: level h moves 2(p_h − 1) per word for each replica of the levels above, 2(p_h − 1)·∏_{k>h} p_k
    (the levels' bandwidth phases overlap; the caller divides by each level's aggregate bandwidth).
    `per_level` has shape (..., H): the participants at each level, lowest first."""
    p = np.asarray(per_level, dtype=float)
    return 2.0 * (p - 1.0) * products_above(p)


def products_below(x):
    """For per-level factors x[..., H] (lowest level first): ∏_{k<h} x[..., k] for h = 0…H, H + 1
    values (1 below the lowest level, the product of all at the top), multiplied from the bottom up."""
    x = np.asarray(x)
    out = np.ones((*x.shape[:-1], x.shape[-1] + 1), dtype=np.result_type(x, float))
    for h in range(x.shape[-1]):
        out[..., h + 1] = out[..., h] * x[..., h]
    return out


def products_above(x):
    """For per-level factors x[..., H] (lowest level first): ∏_{k>h} x[..., k] for each level h (1 at
    the top), multiplied from the top down, one level at a time (numpy's cumprod over a short last
    axis is several times slower than these H − 1 multiplications)."""
    x = np.asarray(x)
    out = np.ones(x.shape, dtype=np.result_type(x, float))
    for h in range(x.shape[-1] - 2, -1, -1):
        out[..., h] = out[..., h + 1] * x[..., h + 1]
    return out


def nccl_ring_busbw(per_node, nodes, intra_bw, nic_bw_per_gpu):
    """Bus bandwidth of NCCL's ring over ranks spread `per_node` to a node across `nodes` nodes.

    Inside one node the ring runs on NVLink. A ring that spans nodes crosses each node boundary on
    every channel; NCCL gives each channel its own NIC, so the node's `per_node` NICs carry the
    crossings in parallel and the ring runs at min(NVLink bus bandwidth, per_node × NIC bandwidth)
    (the NCCL rows of measured_runs.csv: 8 × 200 Gb/s HDR → 192 GB/s busbw per DGX A100;
    4 NICs → 86 GB/s; 8 × 50 GB/s EFA → 382 GB/s)."""
    per_node = np.asarray(per_node, dtype=float)
    return np.where(np.asarray(nodes) > 1, np.minimum(intra_bw, per_node * nic_bw_per_gpu), intra_bw)


def nccl_ring_time(n, size, busbw, alpha, steps_factor=2.0):
    """A pipelined ring collective: steps_factor·(n−1) steps of latency α (the pipeline fill) plus
    steps_factor·(n−1)/n·S of traffic per rank at the bus bandwidth. steps_factor 2 is an all-reduce
    (reduce-scatter then all-gather), 1 a reduce-scatter or an all-gather."""
    n = np.asarray(n, dtype=float)
    k = np.asarray(steps_factor, dtype=float)
    return np.where(
        n > 1,
        k * (n - 1.0) * alpha + k * (n - 1.0) / np.maximum(n, 1.0) * np.asarray(size, dtype=float) / busbw,
        0.0,
    )


def ring_allreduce_steps(n):
    """Latency steps of a ring all-reduce: 2(n−1) (n−1 reduce-scatter, n−1 all-gather; Data Parallelism from Associativity)."""
    return 2.0 * (np.asarray(n, dtype=float) - 1.0)


def shard_exchange_bytes_per_rank(n, size):
    """Bytes one rank sends in a ring reduce-scatter, all-gather or all-to-all of S bytes: (n−1)/n·S."""
    n = np.asarray(n, dtype=float)
    return (n - 1.0) / n * np.asarray(size, dtype=float)


def allreduce_bytes_per_rank(n, size):
    """Bytes one rank sends in a ring all-reduce: 2(n−1)/n·S (Camilli 2025 eq. 3.12 usage)."""
    n = np.asarray(n, dtype=float)
    return 2.0 * (n - 1.0) / n * np.asarray(size, dtype=float)


def ring_event_bytes(n, size):
    """Bytes all ranks inject in one ring all-reduce: 2(n−1)·S (Camilli 2025 eq. 3.18)."""
    return 2.0 * (np.asarray(n, dtype=float) - 1.0) * np.asarray(size, dtype=float)


def thesis_ring_time(n, size, bw, propagation_s):
    """Camilli 2025 eq. 3.19: T_ar = (N−1)·(T_prop + S/(N·BW)), a bidirectional ring whose every step
    pays the propagation delay."""
    n = np.asarray(n, dtype=float)
    return (n - 1.0) * (propagation_s + np.asarray(size, dtype=float) / (n * bw))


def propagation_delay(km, us_per_km=5.0):
    """Light in fibre, ≈ 2/3 c: 5 µs per km (Camilli 2025 eq. 3.9)."""
    return np.asarray(km, dtype=float) * us_per_km * 1e-6
