"""Ways of training, one module each, behind one registry.

Each strategy maps the rows of a batch that the decision tree assigned to it to a time breakdown:
the wall time of an outer step, the total run time, the effective inner steps for η, the number of
DiLoCo replicas, and the parts of the outer step (compute, latency, sync, pipeline, bubble,
straggler). The engine calls `REGISTRY[mode].evaluate(frame, H)` for the rows in that mode.
"""

from __future__ import annotations

from dtsim.models.decentralized.strategies.base import Strategy
from dtsim.models.decentralized.strategies.flat_diloco import FlatDiLoCo
from dtsim.models.decentralized.strategies.hierarchical_diloco import HierarchicalDiLoCo
from dtsim.models.decentralized.strategies.pp_group_diloco import PPGroupDiLoCo
from dtsim.models.decentralized.strategies.pp_wan import PPOverWAN

REGISTRY: dict[int, Strategy] = {
    s.code: s for s in (FlatDiLoCo(), HierarchicalDiLoCo(), PPGroupDiLoCo(), PPOverWAN())
}

__all__ = ["REGISTRY", "Strategy"]
