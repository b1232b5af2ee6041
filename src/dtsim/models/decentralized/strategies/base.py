"""The strategy interface and helpers shared by the DiLoCo strategies."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from dtsim.models.decentralized.frame import Frame
from dtsim.physics.numeric import select

# The breakdown of one outer step; every strategy fills every key and they sum to outer_step_s.
BREAKDOWN_KEYS = (
    "compute",
    "latency",
    "global_sync",
    "regional_sync",
    "pipeline_comm",
    "bubble",
    "straggler",
)

# What `bottleneck` names: a part of the outer step, "memory" where no layout holds the model, or
# "failures" where the time lost to node failures (outer step · (1/goodput − 1)) is larger than every part.
BOTTLENECKS = (*BREAKDOWN_KEYS, "memory", "failures")


class Strategy(Protocol):
    code: int  # the row's mode code in a batch (decision tree output)
    id: str
    label: str
    diloco: bool  # has an outer DiLoCo loop every H inner steps (else H is undefined)
    pipelined: bool  # splits the model into pipeline stages
    regional_tier: bool  # syncs regionally every H steps and globally every H_regional cycles

    def nodes_used(self, f: Frame) -> tuple[np.ndarray | float, np.ndarray | float]:
        """(pipelines, nodes that train) for the frame's rows; the rest of N_eff idles."""
        ...

    def evaluate(self, f: Frame, inner_steps) -> dict[str, np.ndarray]:
        """Time breakdown for inner steps H (an array broadcasting against the frame's columns)."""
        ...

    def auto_inner_steps(self, f: Frame) -> np.ndarray:
        """The smallest H whose compute block hides the synchronization (1 when nothing to hide)."""
        ...


def combine(streaming, compute_block, sync):
    """Streaming DiLoCo overlaps the sync with the next compute block (max); otherwise they add
    (MIRI simulator docs §3.1 "Effective Outer Step Time")."""
    return select(streaming, np.maximum(compute_block, sync), compute_block + sync)


def overlapped(f, block, sync, busy):
    """One outer step's wall time with the global sync overlapped τ = outer_overlap_steps outer steps
    (the outer update applied τ steps late: Streaming DiLoCo's overlap, Douillard et al. 2025; eager or
    delayed outer updates, Kale et al. 2025). Up to τ syncs are in flight, so each costs at most
    sync/τ of wall time — but the link still carries every payload (`busy`: its bandwidth time) and the
    compute block still runs: max(block, busy, sync/τ). τ = 1 is Streaming DiLoCo's max(block, sync);
    τ = 0 keeps the scenario's blocking or streaming combination."""
    tau = f.outer_overlap_steps
    late = np.maximum(np.maximum(block, busy), sync / np.maximum(tau, 1.0))
    return select(tau > 0, late, combine(f.streaming, block, sync))


def hidden_part(sync, exposed):
    """The part of a sync hidden under compute, sync − exposed, at least 0; a difference within
    rounding of the sync (a blocking sync, exposed = outer − block = sync) is 0, not 1e-13 s."""
    hidden = np.maximum(0.0, sync - exposed)
    return np.where(hidden <= 1e-9 * np.maximum(sync, exposed), 0.0, hidden)


def to_hide(f, sync, busy):
    """The wall time a compute block must cover to hide a global sync: the sync, or with τ > 0 the
    larger of its link time and sync/τ (see `overlapped`)."""
    tau = f.outer_overlap_steps
    return select(tau > 0, np.maximum(busy, sync / np.maximum(tau, 1.0)), sync)


def smallest_hiding_steps(sync, per_step):
    """⌈T_sync / T_step⌉, at least 1: the smallest H with H·T_step ≥ T_sync."""
    return np.maximum(1.0, np.ceil(sync / per_step))


def exposed_parts(exposed, bandwidth_part, latency_part, straggler):
    """Split the exposed (not overlapped) time of a sync whose full duration is
    (bandwidth_part + latency_part) · straggler into its bandwidth, latency and straggler shares."""
    unstraggled = bandwidth_part + latency_part  # > 0: every payload has at least one parameter
    share = exposed / (unstraggled * straggler)
    return share * bandwidth_part, share * latency_part, share * unstraggled * (straggler - 1.0)
