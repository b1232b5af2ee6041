"""Straggler factors and mitigation strategies (MIRI simulator docs §5; reference README "relay")."""

from __future__ import annotations

import numpy as np

from dtsim.physics.numeric import select

STRATEGIES = ("none", "threshold", "backup", "relay")
STRATEGY_ALIASES = {"redundancy": "backup", "backup-workers": "backup", "backup_workers": "backup"}


def straggler_factor(n, strategy, asm):
    """Slowdown of a synchronous exchange among n participants, f = 1 + c·log2(n):

    none:      c = 0.05                              (MIRI simulator docs §5.1)
    threshold: c = 0 — no wait, paid for by an efficiency penalty (MIRI simulator docs §5.2, §4.5)
    backup:    c = 0.3 · 0.05, i.e. f' = 1 + 0.3·(f − 1), 70% less delay (MIRI simulator docs §5.2)
    relay:     c = 0.02                              (original simulator's relay mode)
    For n ≤ 1 every factor is 1: one participant waits for nobody (the original's log2 of a
    fraction gave factors below 1: reference README defect 9).
    """
    # np.choose broadcasts: the strategy and each coefficient may be one value or one per row
    coefficient = np.choose(
        np.asarray(strategy),
        (
            asm.straggler_coefficient,
            0.0,
            asm.backup_straggler_residual * asm.straggler_coefficient,
            asm.relay_straggler_coefficient,
        ),
    )
    return 1.0 + coefficient * np.log2(np.maximum(np.asarray(n, dtype=float), 1.0))


def effective_nodes(n, strategy, asm):
    """Nodes doing useful work: N / (1 + backup fraction) with backup workers, else N (MIRI simulator docs §5.2)."""
    return select(strategy == 2, np.asarray(n, dtype=float) / (1.0 + asm.backup_worker_fraction), n)


def strategy_penalty(strategy, asm):
    """P_strategy in η: 1.15 for threshold aggregation, 1 otherwise (MIRI simulator docs §4.1, §4.5)."""
    return select(strategy == 1, asm.threshold_efficiency_penalty, 1.0)
