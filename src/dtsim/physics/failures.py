"""Failures and goodput: the share of a run's wall-clock time that ends up as kept training progress.

Failures arrive as a Poisson process (exponential times between failures, mean M). Two ways a run
survives them:

- **Restart the job** (synchronous training: one failure stops everyone). Work is cut into segments of
  τ seconds, each followed by a checkpoint of δ seconds; a failure loses the segment in progress and
  costs a restart of R seconds before it is redone. The expected time to finish one segment is
  (M + R)·(e^{(τ+δ)/M} − 1) — the expected completion time of a task of length t = τ + δ that restarts
  from its beginning after each failure, with a repair time R (Daly 2006, "A higher order estimate of
  the optimum checkpoint interval for restart dumps", Future Generation Computer Systems 22(3), §3,
  with failures during the restart not counted). Goodput = τ / that. The interval τ is Daly's
  higher-order optimum, τ = √(2δM)·[1 + ⅓·√(δ/(2M)) + δ/(18M)] − δ for δ < 2M, else M
  (Young 1974's √(2δM) to first order).
- **Drop out and rejoin** (DiLoCo replicas, elastic): the failed replica loses the inner steps since
  the last outer synchronization, is down for R seconds (restart and fetching the global model), and
  rejoins at the next outer-step boundary; the others go on. A replica that has been up X seconds
  (X ~ Exp(M)) since it joined at a boundary kept ⌊X/T⌋ rounds of T seconds and its cycle lasts
  ⌈(X + R)/T⌉ rounds, so goodput = E⌊X/T⌋ / E⌈(X + R)/T⌉ (renewal-reward theorem), with
  E⌊X/T⌋ = q/(1 − q) and E⌈(X + R)/T⌉ = k₀ + e^{R/M}·q^{k₀}/(1 − q), q = e^{−T/M}, k₀ = ⌊R/T⌋ + 1.

tests/test_failures.py checks both closed forms against a discrete-event simulation.
"""

from __future__ import annotations

import numpy as np


def daly_interval_s(checkpoint_s, mtbf_s):
    """Daly 2006's higher-order optimum checkpoint interval (seconds of work between checkpoints)."""
    d = np.asarray(checkpoint_s, dtype=float)
    m = np.asarray(mtbf_s, dtype=float)
    small = d < 2.0 * m
    safe_m = np.where(small, m, 1.0)
    with np.errstate(over="ignore", under="ignore"):
        x = d / (2.0 * safe_m)
        tau = np.sqrt(2.0 * d * safe_m) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d
    return np.where(small, np.maximum(tau, 0.0), m)


def restart_goodput(interval_s, checkpoint_s, restart_s, mtbf_s):
    """Kept work over wall-clock time when every failure restarts the job from its last checkpoint:
    τ / ((M + R)·(e^{(τ+δ)/M} − 1)). 1 when M is infinite (no failures)."""
    tau = np.asarray(interval_s, dtype=float)
    m = np.asarray(mtbf_s, dtype=float)
    finite = np.isfinite(m)
    safe_m = np.where(finite, m, 1.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        expected = (safe_m + restart_s) * np.expm1((tau + checkpoint_s) / safe_m)
        g = np.where(finite, tau / expected, 1.0)
    return np.where(np.isfinite(g), g, 0.0)


def elastic_goodput(round_s, rejoin_s, mtbf_s):
    """Share of a replica's time that ends in kept rounds when it drops out on failure and rejoins at
    the next outer-step boundary: E⌊X/T⌋ / E⌈(X + R)/T⌉, X ~ Exp(M). 1 when M is infinite."""
    t = np.asarray(round_s, dtype=float)
    r = np.asarray(rejoin_s, dtype=float)
    m = np.asarray(mtbf_s, dtype=float)
    finite = np.isfinite(m) & (t > 0)
    safe_m = np.where(finite, m, 1.0)
    safe_t = np.where(finite, t, 1.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        q = np.exp(-safe_t / safe_m)
        k0 = np.floor(r / safe_t) + 1.0
        kept = q / -np.expm1(-safe_t / safe_m)
        cycle = k0 + np.exp((r - k0 * safe_t) / safe_m) / -np.expm1(-safe_t / safe_m)
        g = np.where(finite, kept / cycle, 1.0)
    return np.where(np.isfinite(g), g, 0.0)
