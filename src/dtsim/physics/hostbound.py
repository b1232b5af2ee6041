"""A host-bound ring all-reduce: links faster than the CPU can feed them (gloo on CPU over a Linux
bridge, as in the thesis's testbed and the emulator's unshaped runs).

Camilli 2025 ch. 5 measures the testbed's all-reduce far below the bridge's capacity and its ranks'
CPUs saturated: two ranks at ~200 % CPU each on the host's 4 vCPUs (§5.2, figure 5.4), four ranks at
~100 % each (§5.3, figure 5.24). Gloo's copies, TCP stack and reductions run on the cores the rank
has, so the rate each rank moves its 2(N−1)/N·S bytes at scales with its cores — the model here:

    T = 2(N−1)/N · S / (r_core · c),   c = cores per rank (host cores / N when ranks share a host)

(Thakur, Rabenseifner & Gropp 2005's ring with the β term set by the host, not the link). Taking one
rate per link instead — fitted where each rank has one core and reused where it has two — is what put
dtsim's world-size-2 testbed prediction +200 % off (docs/emulator.md, "The world-size-2 gap");
`dtsim validate` now predicts the testbed per core (validation/predict.py, THESIS-WS2).
"""

from __future__ import annotations

import numpy as np

from dtsim.physics.collectives import allreduce_bytes_per_rank


def cores_per_rank(host_cores, ranks):
    """Cores each rank has when `ranks` ranks share a host of `host_cores` cores evenly: c = host cores / N
    (Camilli 2025 §4.1.1: one host of 4 vCPUs; §5.2 and §5.3 measure ~200 % CPU per rank at N = 2 and
    ~100 % at N = 4). Below one when ranks outnumber cores (time-shared)."""
    host = np.asarray(host_cores, dtype=float)
    n = np.asarray(ranks, dtype=float)
    if np.any(host <= 0) or np.any(n < 1):
        raise ValueError(f"host_cores must be > 0 and ranks >= 1, not {host_cores!r} and {ranks!r}")
    return host / n


def rank_host_rate(rate_per_core, cores):
    """Bytes/s one rank's host moves: r_core · c (module docstring)."""
    return np.asarray(rate_per_core, dtype=float) * np.asarray(cores, dtype=float)


def host_bound_allreduce_time(n, size, rate_per_core, cores_per_rank):
    """Seconds of a host-bound ring all-reduce of `size` bytes over `n` ranks, each with
    `cores_per_rank` cores moving `rate_per_core` bytes/s per core (module docstring)."""
    n = np.asarray(n, dtype=float)
    rate = rank_host_rate(rate_per_core, cores_per_rank)
    return np.where(n > 1, allreduce_bytes_per_rank(n, size) / rate, 0.0)


def host_rate_per_core(n, size, measured_s, cores_per_rank):
    """The per-core rate a measured host-bound all-reduce implies: the inverse of
    `host_bound_allreduce_time` (bytes per second per core)."""
    return allreduce_bytes_per_rank(n, size) / (
        np.asarray(measured_s, dtype=float) * np.asarray(cores_per_rank, dtype=float)
    )
