"""The public Python API: one function per command, resolved lazily from `import dtsim`, each giving a
typed result that the CLI only formats."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from typer.testing import CliRunner

import dtsim
from dtsim.interfaces.cli.main import app
from dtsim.physics import collectives as coll

runner = CliRunner()


def test_every_public_name_resolves():
    for name in dtsim.__all__:
        assert getattr(dtsim, name) is not None, name
    assert callable(dtsim.limits.curve) and callable(dtsim.limits.search)


def test_collective_is_typed_and_is_the_alpha_beta_formula():
    r = dtsim.collective("allreduce", ranks=16, size_bytes=2e9, bandwidth_bytes_s=50e9, latency_s=5e-6)
    assert dataclasses.is_dataclass(r)
    assert r.time_s == float(coll.ring_allreduce_time(16, 2e9, 50e9, 5e-6))
    assert r.bytes_sent_per_rank == 2 * 15 / 16 * 2e9
    assert r.algbw_gb_s == pytest.approx(2e9 / r.time_s / 1e9)
    tree = dtsim.collective("allreduce", 16, 2e9, algorithm="tree", bandwidth_bytes_s=50e9, latency_s=5e-6)
    assert tree.time_s == float(coll.tree_allreduce_time(16, 2e9, 50e9, 5e-6))


def test_collective_cli_prints_the_function_result():
    out = runner.invoke(
        app, ["collective", "--op", "all-gather", "--ranks", "8", "--size-mb", "100", "--json"]
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == dtsim.collective("all-gather", 8, 100e6).as_dict()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"op": "gossip"}, "op"),
        ({"ranks": 0}, "ranks"),
        ({"ranks": 2.5}, "ranks"),
        ({"size_bytes": math.nan}, "size_bytes"),
        ({"fabric": "carrier-pigeon"}, "fabric"),
        ({"bandwidth_bytes_s": 0.0}, "bandwidth_bytes_s"),
        ({"latency_s": -1.0}, "latency_s"),
        ({"algorithm": "butterfly"}, "algorithm"),
    ],
)
def test_collective_refuses_bad_input_naming_the_parameter(kwargs, field):
    with pytest.raises(dtsim.ScenarioError) as err:
        dtsim.collective(**kwargs)
    assert err.value.problems[0][0] == field


def test_fabric_is_seed_001s_scenario_and_the_cli_prints_it():
    plan = dtsim.fabric()
    assert plan.peak_flop_s == pytest.approx(1.8e22)
    assert plan.min_bandwidth_bits_s / 1e15 == pytest.approx(5.1, abs=0.05)
    out = runner.invoke(app, ["fabric", "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    # the JSON is the plan's fields and what the text says of a plan that does not hold (warnings)
    assert [w["code"] for w in got.pop("warnings")] == ["SCHEDULE_NOT_MET"]
    assert got == pytest.approx(dataclasses.asdict(plan))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"datacenters": 0}, "datacenters"),
        ({"ring_km": -1.0}, "ring_km"),
        ({"network_fraction": 1.5}, "network_fraction"),
        ({"sync_budget_s": 0.0}, "sync_budget_s"),
        ({"parameters": math.nan}, "parameters"),
    ],
)
def test_fabric_refuses_bad_input_naming_the_parameter(kwargs, field):
    with pytest.raises(dtsim.ScenarioError) as err:
        dtsim.fabric(**kwargs)
    assert [p[0] for p in err.value.problems] == [field]
