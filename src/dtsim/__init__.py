"""dtsim: how long a large-model training run takes, what limits it, how to parallelize it.

>>> import dtsim
>>> r = dtsim.simulate(dtsim.Scenario(num_nodes=72))
>>> r.mode, round(r.wall_clock_days), round(r.effective_days)
('flat-diloco', 433, 491)
"""

from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.models.decentralized.engine import BatchResult, simulate, simulate_batch
from dtsim.models.decentralized.result import Result
from dtsim.schema.scenario import Scenario, load_scenario

__version__ = "0.1.0"
__all__ = [
    "Assumptions",
    "BatchResult",
    "Result",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "simulate",
    "simulate_batch",
]
