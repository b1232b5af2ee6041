"""Data-parallel closed forms (Data Parallelism from Associativity): compute/communication ratio, scaling efficiency, gradient
accumulation, and the bucketed overlap of DDP."""

from __future__ import annotations

import numpy as np


def compute_comm_ratio(batch, flop_s, bw_bytes_s, bytes_per_value=2.0):
    """R = T_compute / T_comm = 3·b·β / (F·sizeof) (Data Parallelism from Associativity "Compute-Communication Ratio")."""
    return 3.0 * np.asarray(batch, dtype=float) * bw_bytes_s / (flop_s * bytes_per_value)


def critical_local_batch(flop_s, bw_bytes_s, bytes_per_value=2.0):
    """The local batch above which data parallelism is compute-bound, R > 1: b > F·sizeof / (3β)."""
    return flop_s * bytes_per_value / (3.0 * bw_bytes_s)


def weak_scaling_efficiency(t_compute, t_comm):
    """E_weak = T_c / (T_c + T_r(P)) (Data Parallelism from Associativity "Weak Scaling")."""
    return t_compute / (t_compute + t_comm)


def strong_scaling_efficiency(t_compute_one, ranks, t_comm):
    """E_strong = T_c(1) / (P·(T_c(1)/P + T_r)) (Data Parallelism from Associativity "Strong Scaling")."""
    return t_compute_one / (ranks * (t_compute_one / ranks + t_comm))


def accumulation_speedup(steps, t_compute, t_comm):
    """All-reducing once per A micro-batches instead of every one:
    (A·T_c + A·T_r) / (A·T_c + T_r) (Data Parallelism from Associativity "Gradient Accumulation"), T_c per micro-batch."""
    a = np.asarray(steps, dtype=float)
    return (a * t_compute + a * t_comm) / (a * t_compute + t_comm)


def exposed_bucketed_allreduce(t_comm, t_backward, buckets):
    """Communication left exposed when DDP all-reduces gradient buckets during the backward pass
    (Data Parallelism from Associativity "Bucket-Based Overlap"): bucket i can overlap the backward compute that remains after
    it is ready, so all but the last bucket hide under up to (1 − 1/k) of the backward pass; the last
    bucket, ready only when backward ends, is always exposed."""
    k = np.maximum(np.asarray(buckets, dtype=float), 1.0)
    hideable = t_backward * (1.0 - 1.0 / k)
    return np.maximum(t_comm / k, t_comm - hideable)
