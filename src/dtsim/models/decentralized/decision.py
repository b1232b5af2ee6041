"""The decision tree of MIRI simulator docs Appendix A, vectorized: which mode each scenario runs in, and why.

Model fits on one node (P × β ≤ VRAM)?                    → A (flat DiLoCo), or A′ when
    hierarchical and at least two whole groups exist; otherwise fall back to A.
MoE with EP: does (P_shared + P_experts/N_EP) × β fit?    → the same, with "EP made it fit".
Still too large: S = ⌈M / VRAM⌉ stages.
    ⌊N_eff / S⌋ ≥ 2 whole pipelines                      → C (PP-group DiLoCo)
    exactly one pipeline fits                             → B (pure PP over WAN)
    fewer nodes than stages                               → infeasible (no mode can hold the model)
More stages than the deepest pipeline considered (a stage holds at least one layer) → infeasible.
"""

from __future__ import annotations

import numpy as np

from dtsim.models.decentralized.strategies import BY_ID, INFEASIBLE, MODE_IDS, MODE_LABELS
from dtsim.models.decentralized.strategies.hierarchical_diloco import group_layout

FLAT = BY_ID["flat-diloco"].code
HIERARCHICAL = BY_ID["hierarchical-diloco"].code
PP_GROUPS = BY_ID["pp-group-diloco"].code
PP_OVER_WAN = BY_ID["pp-over-wan"].code
__all__ = ["INFEASIBLE", "MODE_IDS", "MODE_LABELS", "REASONS", "decide"]

# Reason codes: the branch of the tree each row took.
REASONS = (
    "fits",  # 0
    "ep-fits",  # 1
    "fits-hierarchical",  # 2
    "ep-fits-hierarchical",  # 3
    "hierarchy-fallback",  # 4
    "pp-groups",  # 5
    "pp-single-pipeline",  # 6
    "too-few-nodes",  # 7
    "pipeline-too-deep",  # 8
)


def decide(f):
    """Mode and reason codes for every row of a frame with the memory quantities already derived."""
    fits = f.memory_bytes <= f.vram_bytes
    ep_helped = f.moe & (f.ep_mode > 0) & (f.full_memory_bytes > f.vram_bytes)
    groups_hier, _ = group_layout(f)
    too_deep = f.stages > f.asm.max_pipeline_stages
    pipelines = np.where(too_deep, 0.0, np.floor(f.n_eff / f.stages))
    hier_ok = f.hierarchical & (groups_hier >= 2)

    mode = np.where(
        fits,
        np.where(hier_ok, HIERARCHICAL, FLAT),
        np.where(pipelines >= 2, PP_GROUPS, np.where(pipelines >= 1, PP_OVER_WAN, INFEASIBLE)),
    ).astype(np.int8)
    reason = np.where(
        fits,
        np.where(
            f.hierarchical & ~hier_ok,
            4,
            np.where(hier_ok, np.where(ep_helped, 3, 2), np.where(ep_helped, 1, 0)),
        ),
        np.where(too_deep, 8, np.where(pipelines >= 2, 5, np.where(pipelines >= 1, 6, 7))),
    ).astype(np.int8)
    return mode, reason, ep_helped & fits
