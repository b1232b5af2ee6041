"""Ways of training, one module each, behind one registry.

Each strategy maps the rows of a batch that the decision tree assigned to it to a time breakdown:
the wall time of an outer step, the total run time, the effective inner steps for η, the number of
DiLoCo replicas, and the parts of the outer step (compute, latency, sync, pipeline, bubble,
straggler). It also says what it is (`diloco`, `pipelined`, `regional_tier`) and which nodes it uses,
so the engine, the result and the warnings ask the strategy instead of testing mode codes. The engine
calls `REGISTRY[mode].evaluate(frame, H)` for the rows in that mode.
"""

from __future__ import annotations

import numpy as np

from dtsim.models.decentralized.strategies.base import Strategy
from dtsim.models.decentralized.strategies.flat_diloco import FlatDiLoCo
from dtsim.models.decentralized.strategies.hierarchical_diloco import HierarchicalDiLoCo
from dtsim.models.decentralized.strategies.pp_group_diloco import PPGroupDiLoCo
from dtsim.models.decentralized.strategies.pp_wan import PPOverWAN

STRATEGIES: tuple[Strategy, ...] = (FlatDiLoCo(), HierarchicalDiLoCo(), PPGroupDiLoCo(), PPOverWAN())
REGISTRY: dict[int, Strategy] = {s.code: s for s in STRATEGIES}
BY_ID: dict[str, Strategy] = {s.id: s for s in STRATEGIES}
assert sorted(REGISTRY) == list(range(len(STRATEGIES))), "strategy codes are 0..n-1"
INFEASIBLE = len(STRATEGIES)  # the mode code of a row no strategy can hold
MODE_IDS = (*(REGISTRY[c].id for c in sorted(REGISTRY)), "infeasible")
MODE_LABELS = (*(REGISTRY[c].label for c in sorted(REGISTRY)), "infeasible")


def has_trait(mode_code, trait: str) -> np.ndarray:
    """Whether each row's strategy has `trait` (`diloco`, `pipelined`, `regional_tier`); False for
    infeasible rows."""
    return _TRAITS[trait][mode_code]


# trait → a lookup table indexed by mode code (the infeasible code last, False)
_TRAITS = {
    trait: np.array([bool(getattr(REGISTRY[c], trait)) for c in sorted(REGISTRY)] + [False])
    for trait in ("diloco", "pipelined", "regional_tier")
}


def is_mode(mode_code, strategy_id: str) -> np.ndarray:
    """Whether each row runs the strategy named `strategy_id`."""
    return np.asarray(mode_code) == BY_ID[strategy_id].code


__all__ = [
    "BY_ID",
    "INFEASIBLE",
    "MODE_IDS",
    "MODE_LABELS",
    "REGISTRY",
    "STRATEGIES",
    "Strategy",
    "has_trait",
    "is_mode",
]
