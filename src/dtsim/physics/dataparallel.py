"""Data-parallel closed forms (Data Parallelism from Associativity): compute/communication ratio, scaling efficiency, gradient
accumulation, and the bucketed overlap of DDP."""

from __future__ import annotations

import numpy as np


def compute_comm_ratio(batch, flop_s, bw_bytes_s, bytes_per_value=2.0):
    """R = T_compute / T_comm = 3·b·β / (F·sizeof) (Data Parallelism from Associativity "Compute-Communication Ratio")."""
    return 3.0 * np.asarray(batch, dtype=float) * bw_bytes_s / (flop_s * bytes_per_value)


def critical_local_batch(flop_s, bw_bytes_s, bytes_per_value=2.0, ratio=1.0):
    """The local batch above which data parallelism is compute-bound, R > 1: b > F·sizeof / (3β); for a
    target ratio R, b = R·F·sizeof / (3β) (Data Parallelism from Associativity "Compute-Communication
    Ratio" and its Exercise 2)."""
    return ratio * flop_s * bytes_per_value / (3.0 * bw_bytes_s)


def dp_compute_time(params, batch, flop_s, flops_per_param_token=6.0):
    """T_compute = 6·Ψ·b / F: one rank's forward and backward over b tokens (Data Parallelism from
    Associativity "Compute Time"; 6 FLOP per parameter per token, Kaplan et al. 2020)."""
    return flops_per_param_token * np.asarray(params, dtype=float) * batch / flop_s


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


def _largest_root(a, b, c):
    """The positive root of a·x² + b·x + c = 0 with a ≥ 0 and c < 0 (x ≥ it makes the quadratic ≥ 0),
    in the form that does not cancel (Press et al., Numerical Recipes §5.6): 2c / (−b − √(b² − 4ac))
    where b ≥ 0, (−b + √(b² − 4ac)) / 2a where b < 0 (the first form subtracted two nearly equal numbers
    there: 8.6e9 ranks where the root is 2.4e10); +∞ where a = 0 and b ≤ 0 (never reached)."""
    a, b, c = (np.asarray(x, dtype=float) for x in (a, b, c))
    root = np.sqrt(b * b - 4.0 * a * c)
    with np.errstate(divide="ignore", invalid="ignore"):
        falling = (-b + root) / (2.0 * a)  # b < 0: both terms positive
        den = -b - root
        rising = np.where(den < 0, 2.0 * c / np.where(den < 0, den, -1.0), np.inf)
        return np.where(b < 0, np.where(a > 0, falling, np.inf), rising)


def weak_scaling_max_ranks(t_compute, size_bytes, bw_bytes_s, alpha_s, efficiency):
    """The most ranks P at which weak scaling keeps E_weak(P) = T_c / (T_c + T_r(P)) ≥ e, with the ring
    all-reduce T_r(P) = 2(P−1)·α + 2(P−1)/P·S/β (Data Parallelism from Associativity "Weak Scaling" and
    "Communication Time"). E_weak falls as P grows, so E ≥ e ⇔ T_r(P) ≤ X = T_c·(1/e − 1); times P this is
    the quadratic 2α·P² + (2S/β − 2α − X)·P − 2S/β ≤ 0, whose positive root bounds P (+∞ when α = 0 and
    the bandwidth term 2S/β alone never exceeds X). Returned as a real number; the answer is its floor."""
    x = np.asarray(t_compute, dtype=float) * (1.0 / np.asarray(efficiency, dtype=float) - 1.0)
    s_beta = 2.0 * np.asarray(size_bytes, dtype=float) / bw_bytes_s
    return _largest_root(2.0 * np.asarray(alpha_s, dtype=float), s_beta - 2.0 * alpha_s - x, -s_beta)


def strong_scaling_max_ranks(t_compute_one, size_bytes, bw_bytes_s, alpha_s, efficiency):
    """The most ranks P at which strong scaling keeps E_strong(P) = T_c(1) / (T_c(1) + P·T_r(P)) ≥ e
    (Data Parallelism from Associativity "Strong Scaling", T_r(P) as in weak_scaling_max_ranks):
    P·T_r(P) ≤ X = T_c(1)·(1/e − 1) is 2α·P² + (2S/β − 2α)·P − (2S/β + X) ≤ 0, bounded by its positive
    root (with α = 0: P ≤ 1 + X·β/(2S)). Returned as a real number; the answer is its floor."""
    x = np.asarray(t_compute_one, dtype=float) * (1.0 / np.asarray(efficiency, dtype=float) - 1.0)
    s_beta = 2.0 * np.asarray(size_bytes, dtype=float) / bw_bytes_s
    a = 2.0 * np.asarray(alpha_s, dtype=float)
    return _largest_root(a, s_beta - a, -(s_beta + x))


def weak_scaling_limit(t_compute, size_bytes, bw_bytes_s, alpha_s):
    """E_weak as P → ∞: T_c / (T_c + 2S/β) when the per-step latency α is 0 (the ring's bandwidth term
    tends to 2S/β, Data Parallelism from Associativity "Communication Time"), 0 when α > 0 (the latency
    term 2(P−1)·α grows without bound)."""
    t_c = np.asarray(t_compute, dtype=float)
    return np.where(np.asarray(alpha_s) > 0, 0.0, t_c / (t_c + 2.0 * np.asarray(size_bytes) / bw_bytes_s))


def accumulated_step_times(steps, t_compute, t_comm):
    """(T_no-accum, T_accum) of A micro-batches: A·(T_c + T_r) when every micro-batch all-reduces,
    A·T_c + T_r when the gradients accumulate and all-reduce once (Data Parallelism from Associativity
    "Gradient Accumulation" and its Exercise 5), T_c per micro-batch."""
    a = np.asarray(steps, dtype=float)
    return a * (t_compute + t_comm), a * t_compute + t_comm
