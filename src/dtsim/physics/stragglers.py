"""Straggler factors and mitigation strategies (seed 000 §5; reference README "relay")."""

from __future__ import annotations

import numpy as np

STRATEGIES = ("none", "threshold", "backup", "relay")
STRATEGY_ALIASES = {"redundancy": "backup", "backup-workers": "backup", "backup_workers": "backup"}


def straggler_factor(n, strategy, asm):
    """Slowdown of a synchronous exchange among n participants.

    none:      f(n) = 1 + c·log2(n)                  (seed 000 §5.1, c = 0.05)
    threshold: f = 1, paid for by an efficiency penalty  (seed 000 §5.2, §4.5)
    backup:    f' = 1 + r·(f(n) − 1), r = 0.3           (seed 000 §5.2, 70% reduction)
    relay:     f(n) = 1 + c_relay·log2(n), c_relay = 0.02 (original simulator)
    For n ≤ 1 every factor is 1: one participant waits for nobody.
    """
    n = np.asarray(n, dtype=float)
    log2n = np.log2(np.maximum(n, 1.0))
    base = 1.0 + asm.straggler_coefficient * log2n
    out = np.where(
        strategy == 1,
        1.0,
        np.where(
            strategy == 2,
            1.0 + asm.backup_straggler_residual * (base - 1.0),
            np.where(strategy == 3, 1.0 + asm.relay_straggler_coefficient * log2n, base),
        ),
    )
    return out


def effective_nodes(n, strategy, asm):
    """Nodes doing useful work: N / (1 + backup fraction) with backup workers, else N (seed 000 §5.2)."""
    return np.where(strategy == 2, np.asarray(n, dtype=float) / (1.0 + asm.backup_worker_fraction), n)


def strategy_penalty(strategy, asm):
    """P_strategy in η: 1.15 for threshold aggregation, 1 otherwise (seed 000 §4.1, §4.5)."""
    return np.where(strategy == 1, asm.threshold_efficiency_penalty, 1.0)
