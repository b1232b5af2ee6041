"""The recipes of docs/architecture.md, followed step by step: add an accelerator, a strategy, a field,
a measured run. Each test does what the recipe says and checks that the rest of dtsim picks it up."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import dtsim
from dtsim import catalog
from dtsim.models.decentralized import decision
from dtsim.models.decentralized.encode import BATCH_FIELDS
from dtsim.models.decentralized.strategies import REGISTRY, STRATEGIES
from dtsim.models.decentralized.strategies.base import BREAKDOWN_KEYS
from dtsim.schema.fields import BOUNDS, INTEGER_FIELDS
from dtsim.schema.scenario import FIELD_NAMES, Scenario

# --- recipe 1: an accelerator is one entry of catalog/gpus.yaml, with a source for each number ---------


@pytest.fixture
def catalog_with_new_gpu(monkeypatch):
    real = catalog.load_table

    def load_table(name):
        table = real(name)
        if name == "gpus.yaml":
            table = copy.deepcopy(table)
            row = copy.deepcopy(table["h100-sxm"])
            row.update(name="Example X1", fp16_tflops=1500, fp8_tflops=3000, memory_gb=200, price_usd=40000)
            row["sources"] = {
                k: "recipe test" for k in ("fp16_tflops", "fp8_tflops", "memory_gb", "price_usd")
            }
            table["example-x1"] = row
        return table

    monkeypatch.setattr(catalog, "load_table", load_table)
    catalog.gpus.cache_clear()
    yield
    catalog.gpus.cache_clear()


def test_recipe_add_an_accelerator(catalog_with_new_gpu):
    s = dtsim.load_scenario(overrides={"gpu": "example-x1", "gpus_per_node": 8})
    assert s.pflops_per_node == pytest.approx(8 * 1.5) and s.vram_per_node_gb == pytest.approx(8 * 200)
    one = dtsim.simulate(s)
    assert one.cost_usd == pytest.approx(one.gpu_count * 40000)
    batch = dtsim.simulate_batch(dtsim.Scenario(), gpu=np.array(["example-x1", "h100-sxm"], dtype=object))
    assert (
        batch.result(0).wall_clock_days
        == dtsim.simulate(dtsim.load_scenario(overrides={"gpu": "example-x1"})).wall_clock_days
    )


# --- recipe 2: a strategy is a class in strategies/, registered, and a branch of the decision tree -----

MODE_SCENARIOS = {
    "flat-diloco": {},
    "hierarchical-diloco": {"hierarchical": True, "nodes_per_group": 8},
    "pp-group-diloco": {"parameters_b": 10_000, "num_nodes": 1000},
    "pp-over-wan": {"parameters_b": 10_000, "num_nodes": 100},
}


def test_recipe_add_a_strategy_every_registered_one_follows_the_interface():
    assert (*(s.id for s in STRATEGIES), "infeasible") == decision.MODE_IDS
    assert set(MODE_SCENARIOS) == {s.id for s in STRATEGIES}, "give every strategy a scenario here"
    for strategy in STRATEGIES:
        assert REGISTRY[strategy.code] is strategy
        for trait in ("diloco", "pipelined", "regional_tier"):
            assert isinstance(getattr(strategy, trait), bool), (strategy.id, trait)
        r = dtsim.simulate(dtsim.load_scenario(overrides=MODE_SCENARIOS[strategy.id]))
        assert r.mode == strategy.id
        parts = r.breakdown_s
        assert set(parts) == set(BREAKDOWN_KEYS)
        assert math.fsum(parts.values()) == pytest.approx(r.outer_step_s, rel=1e-9)
        assert (r.inner_steps_used is None) == (not strategy.diloco)
        assert (r.regional_steps_used is not None) == strategy.regional_tier
        assert (r.pp_groups > 0) == strategy.pipelined


# --- recipe 3: a field is a BOUNDS entry (numbers), a Scenario field and an encode.py column --------------


def test_recipe_add_a_field_every_field_is_declared_everywhere_it_is_read():
    # a label, the overrides of the assumptions table (per batch), and the node groups with what reads
    # only them (set once for a batch: every row shares the groups)
    not_batched = {"name", "assumptions", "node_groups", "region_rtt_ms", "work_assignment"}
    assert set(BOUNDS) <= set(FIELD_NAMES) | {"bandwidth_mbps"}
    assert set(INTEGER_FIELDS) <= set(BOUNDS)
    for name in FIELD_NAMES:
        info = Scenario.model_fields[name]
        assert info.description, f"{name}: give the field a description (help text and docs)"
        assert name in BATCH_FIELDS or name in not_batched, (
            f"{name}: add it to models/decentralized/encode.py"
        )
    assert set(BATCH_FIELDS) <= set(FIELD_NAMES) | {"bandwidth_mbps"}


# --- recipe 4: a measured run is a record in a YAML file (bundled, or passed with --runs DIR) ------------

RUN_FILE = """
groups:
  MINE:
    description: my own nccl-tests run
    role: check
    defaults: {kind: collective, op: allreduce, convention: nccl-busbw, metric: busbw_gb_s, unit: GB/s, gpus_per_node: 8}
records:
  - {id: MINE-A100x8, group: MINE, source: "my lab notebook", certainty: P, measured: 230.0, ranks: 8,
     size_bytes: 8589934592, intra_fabric: nvlink3}
"""


def test_recipe_add_a_measured_run(tmp_path):
    from dtsim.validation import load_dataset, validate

    (tmp_path / "mine.yaml").write_text(RUN_FILE, encoding="utf-8")
    data = load_dataset(tmp_path)
    assert data.problems == []
    out = validate(data, ["MINE"])
    (row,) = out.runs
    assert row.id == "MINE-A100x8" and row.predicted > 0
    assert row.error == pytest.approx(row.predicted / 230.0 - 1.0)
    assert out.summary["MINE"].runs == 1
