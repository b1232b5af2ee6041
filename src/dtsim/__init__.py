"""dtsim: how long a large-model training run takes, what limits it, how to parallelize it.

>>> import dtsim
>>> r = dtsim.simulate(dtsim.Scenario(num_nodes=72))
>>> r.mode, round(r.wall_clock_days), round(r.effective_days)
('flat-diloco', 433, 491)
"""

from __future__ import annotations

import importlib
from typing import Any

from dtsim.errors import ScenarioError

__version__ = "0.1.0"

# Public names resolved on first use (PEP 562), so `import dtsim` and `dtsim --help` stay fast:
# the models import numpy and pydantic, which a command that never simulates does not need.
_LAZY: dict[str, str] = {
    "Assumptions": "dtsim.assumptions",
    "BatchResult": "dtsim.models.decentralized.engine",
    "simulate": "dtsim.models.decentralized.engine",
    "simulate_batch": "dtsim.models.decentralized.engine",
    "Result": "dtsim.models.decentralized.result",
    "Scenario": "dtsim.schema.scenario",
    "load_scenario": "dtsim.schema.scenario",
    # one public function per analysis command; "module:attribute" where the names differ
    "sweep": "dtsim.analysis.grid:run_grid",
    "target": "dtsim.analysis.search:search",
    "governance": "dtsim.analysis.governance:analyse",
    "emulate": "dtsim.emulator.launcher:run",
    # how sure: scenarios with distributions, Monte Carlo through the batch path, Sobol indices
    "load_uncertain_scenario": "dtsim.analysis.uncertainty",
    "monte_carlo": "dtsim.analysis.uncertainty:run_monte_carlo",
    "sensitivity": "dtsim.analysis.sensitivity",
    # the datacenter model and the validation; each takes calibration= (a `dtsim calibrate --out` file)
    "step": "dtsim.models.datacenter.step",
    "steps": "dtsim.models.datacenter.step",
    "plan": "dtsim.models.datacenter.plan",
    "validate": "dtsim.validation.runner",
    # the network commands; `dtsim.limits` is the limits model's package (limits.curve, limits.search)
    "collective": "dtsim.models.network",
    "fabric": "dtsim.models.network",
    "limits": "dtsim.models.limits:",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dtsim' has no attribute {name!r}")
    module, colon, attribute = module.partition(":")
    imported = importlib.import_module(module)
    value = imported if colon and not attribute else getattr(imported, attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Assumptions",
    "BatchResult",
    "Result",
    "Scenario",
    "ScenarioError",
    "collective",
    "emulate",
    "fabric",
    "governance",
    "limits",
    "load_scenario",
    "load_uncertain_scenario",
    "monte_carlo",
    "plan",
    "sensitivity",
    "simulate",
    "simulate_batch",
    "step",
    "steps",
    "sweep",
    "target",
    "validate",
]
