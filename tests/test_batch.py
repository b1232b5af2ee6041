"""The batch path: arrays of any field, one code path with the scalar API, identical results."""

from __future__ import annotations

import numpy as np
import pytest

import dtsim
from dtsim.models.decentralized.encode import BATCH_FIELDS
from dtsim.models.decentralized.engine import CHUNK_ROWS
from dtsim.models.decentralized.warning_rules import CODES


def _random_fields(n, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "num_nodes": rng.integers(2, 5000, n),
        "bandwidth_up_mbps": 10 ** rng.uniform(0, 4, n),
        "bandwidth_down_mbps": 10 ** rng.uniform(0, 4, n),
        "latency_ms": rng.uniform(0, 400, n),
        "parameters_b": 10 ** rng.uniform(0, 3.5, n),
        "inner_steps": rng.integers(1, 2000, n),
        "compression": 10 ** rng.uniform(0, 3, n),
        "straggler_strategy": rng.choice(["none", "threshold", "backup", "relay"], n),
        "precision": rng.choice(["FP16", "fp8", "fp4"], n),
        "streaming": rng.choice([True, False], n),
        "hierarchical": rng.choice([True, False], n),
        "nodes_per_group": np.full(n, 2),  # a regional group of one is refused with hierarchical
        "vram_per_node_gb": rng.choice([80, 640, 2304], n),
        "activation_compression": rng.choice([1, 4, 10, 30], n),
    }


def test_batch_rows_are_identical_to_scalar_runs():
    fields = _random_fields(400)
    batch = dtsim.simulate_batch(**fields)
    modes = set(batch["mode"])
    assert {"flat-diloco", "hierarchical-diloco", "pp-group-diloco", "pp-over-wan", "infeasible"} <= modes
    for i in range(len(batch)):
        row = {k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in fields.items()}
        scalar = dtsim.simulate(**row)
        via_batch = batch.result(i)
        assert via_batch.model_dump(exclude={"scenario", "cost_sources"}) == scalar.model_dump(
            exclude={"scenario", "cost_sources"}
        )
        for key in ("wall_clock_days", "effective_days", "chi", "global_mfu", "sync_s", "outer_step_s"):
            value = getattr(scalar, key)
            column = batch[key][i]
            assert np.isnan(column) if value is None else column == value, (i, key)
        assert batch["mode"][i] == scalar.mode
        assert batch["bottleneck"][i] == scalar.bottleneck
        # the batch's warning bits (400 rows: combined rule by rule) decode to the warnings of a
        # single run (one row: combined in one table product)
        codes = [CODES[k] for k in range(len(CODES)) if int(batch["warning_bits"][i]) >> k & 1]
        assert codes == [w.code for w in scalar.warnings], i


def test_chunking_does_not_change_results():
    n = CHUNK_ROWS + 1000
    rng = np.random.default_rng(3)
    nodes = rng.integers(1, 5000, n)
    bw = 10 ** rng.uniform(0, 4, n)
    batch = dtsim.simulate_batch(num_nodes=nodes, bandwidth_mbps=bw)
    for i in (0, CHUNK_ROWS - 1, CHUNK_ROWS, n - 1):
        scalar = dtsim.simulate(num_nodes=int(nodes[i]), bandwidth_mbps=float(bw[i]))
        assert batch["wall_clock_days"][i] == scalar.wall_clock_days
        assert batch["chi"][i] == scalar.chi


@pytest.mark.parametrize("big_first", [True, False])
def test_chunks_whose_rows_fall_in_different_modes(big_first):
    """A chunk whose rows all fall in one mode may give that mode's outputs as one shared value while
    another chunk gives them per row (found in review: an IndexError one way, unwritten rows the
    other). Every column of every row must equal a batch of that row alone."""
    n = CHUNK_ROWS + 10
    small, big = np.full(n - 10, 100.0), np.full(10, 2000.0)
    p = np.r_[small, big] if big_first is False else np.r_[big, small]
    batch = dtsim.simulate_batch(parameters_b=p)
    assert set(batch["mode"]) == {"flat-diloco", "pp-group-diloco"}
    for i in (0, 9, 10, CHUNK_ROWS - 1, CHUNK_ROWS, n - 1):
        alone = dtsim.simulate_batch(parameters_b=p[i : i + 1])
        for key, column in batch.columns.items():
            x, y = column[i], alone.columns[key][0]
            assert x == y or (x != x and y != y), (i, key, x, y)


def test_shared_outputs_broadcast_to_every_row():
    batch = dtsim.simulate_batch(num_nodes=np.array([8, 16, 32]))
    assert batch["model_flop"].shape == (3,)
    assert np.all(batch["model_flop"] == 6 * 144e9 * 12e12)
    assert not batch["model_flop"].flags.writeable


def test_batch_accepts_a_base_scenario_and_scalars():
    base = dtsim.Scenario(parameters_b=70, tokens_t=2)
    batch = dtsim.simulate_batch(base, num_nodes=[4, 8], mfu=0.5)
    assert batch["wall_clock_days"][0] == dtsim.simulate(base, num_nodes=4, mfu=0.5).wall_clock_days


def test_batch_with_auto_inner_steps():
    batch = dtsim.simulate_batch(inner_steps=["auto", 128, "auto-quality"])
    assert batch["inner_steps_used"][0] == dtsim.simulate(inner_steps="auto").inner_steps_used
    assert batch["inner_steps_used"][1] == 128
    assert batch["inner_steps_used"][2] == dtsim.simulate(inner_steps="auto-quality").inner_steps_used


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"num_nodes": [4, 0, 8]}, "num_nodes[1] = 0.0: must be an integer ≥ 1"),
        ({"num_nodes": [4, 2.5]}, "num_nodes[1] = 2.5: must be an integer ≥ 1"),
        ({"mfu": [0.4, float("nan")]}, "mfu[1] = nan: must be a number ≥ 0.001 and ≤ 1"),
        ({"bandwidth_mbps": [100, -1]}, "bandwidth_up_mbps[1] = -1.0"),
        ({"precision": ["fp16", "fp3"]}, "precision[1] = 'fp3': must be one of fp16, bf16, fp8, fp4"),
        ({"inner_steps": ["auto", "sometimes"]}, "inner_steps[1] = 'sometimes'"),
        ({"num_nodes": [4, 8], "mfu": [0.4]}, "all array fields must have the same length"),
        ({"name": ["a", "b"]}, "not a batch field"),
        (
            {"hierarchical": [True, True], "nodes_per_group": [8, 80]},
            "nodes_per_group[1] = 80.0: must be ≤ num_nodes",
        ),
        ({"moe": [True, False]}, "active_parameters_b[0]"),
        ({"hardware_growth": ["2x/yr", "fast"]}, "hardware_growth[1] = 'fast'"),
    ],
)
def test_batch_validation_names_the_row(fields, needle):
    with pytest.raises(dtsim.ScenarioError) as exc:
        dtsim.simulate_batch(**fields)
    assert needle in str(exc.value)


def test_every_batch_field_is_a_scenario_field():
    names = set(dtsim.Scenario.model_fields)
    assert set(BATCH_FIELDS) <= names


def test_feasible_is_false_for_an_infeasible_run_in_both_paths():
    """A model no node count can hold: mode infeasible. The scalar result said feasible null while the
    batch column (and so every sweep) said false; both say false now."""
    s = dtsim.load_scenario(overrides={"num_nodes": 1, "parameters_b": 10000})
    r = dtsim.simulate(s)
    b = dtsim.simulate_batch(s, num_nodes=np.array([1.0, 2.0]))
    assert r.mode == "infeasible" and r.feasible is False
    assert b["feasible"][0] == r.feasible and b.result(0).feasible is False
