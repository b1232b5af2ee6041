"""The scenario schema: defaults, case-insensitive enums, layering, and the words of its errors."""

from __future__ import annotations

import json
import math

import pytest

import dtsim
from dtsim.schema.fields import BOUNDS
from dtsim.schema.scenario import load_scenario, scenario_json_schema


def test_defaults_are_seed_000_section_9():
    s = dtsim.Scenario()
    assert (s.parameters_b, s.tokens_t, s.num_nodes, s.pflops_per_node, s.vram_per_node_gb) == (
        144,
        12,
        72,
        32,
        2304,
    )
    assert (s.bandwidth_up_mbps, s.bandwidth_down_mbps, s.latency_ms, s.mfu) == (100, 100, 100, 0.4)
    assert (s.inner_steps, s.compression, s.local_batch_tokens, s.micro_batches) == (128, 16, 131072, 8)
    assert (s.precision.value, s.streaming, s.nodes_per_group) == ("fp16", True, 8)
    assert (s.regional_bandwidth_mbps, s.regional_latency_ms, s.regional_steps) == (1000, 20, 16)
    assert load_scenario(preset="default") == s


@pytest.mark.parametrize("value", ["FP16", "fp16", "Fp16", " fp16 "])
def test_enums_are_case_insensitive(value):
    assert dtsim.Scenario(precision=value).precision.value == "fp16"


@pytest.mark.parametrize(
    ("raw", "expected"), [(True, True), ("true", True), ("False", False), (" TRUE ", True)]
)
def test_booleans_accept_true_and_false(raw, expected):
    assert dtsim.Scenario(streaming=raw).streaming is expected


@pytest.mark.parametrize("raw", [1, 0, "yes", "no", 1.0, None])
def test_booleans_refuse_anything_else(raw):
    with pytest.raises(dtsim.ScenarioError) as exc:
        load_scenario(layers=[{"streaming": raw}])
    assert exc.value.problems[0][0] == "streaming"


@pytest.mark.parametrize(
    ("field", "raw"), [("num_nodes", "72"), ("mfu", "0.4"), ("num_nodes", True), ("num_nodes", 7.5)]
)
def test_numbers_refuse_strings_booleans_and_fractions_of_integers(field, raw):
    with pytest.raises(dtsim.ScenarioError) as exc:
        load_scenario(layers=[{field: raw}])
    assert exc.value.problems[0][0] == field


def test_integral_floats_are_integers():
    assert dtsim.Scenario(num_nodes=72.0).num_nodes == 72


def test_backup_aliases():
    assert dtsim.Scenario(straggler_strategy="redundancy").straggler_strategy.value == "backup"
    assert dtsim.Scenario(straggler_strategy="Backup-Workers").straggler_strategy.value == "backup"


def test_single_bandwidth_sets_both_directions():
    s = dtsim.Scenario(bandwidth_mbps=250)
    assert s.bandwidth_up_mbps == s.bandwidth_down_mbps == 250


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"num_nodes": 0}, "num_nodes", "must be an integer ≥ 1"),
        ({"num_nodes": -5}, "num_nodes", "≥ 1"),
        ({"parameters_b": math.nan}, "parameters_b", "must be a number"),
        ({"tokens_t": math.inf}, "tokens_t", "must be a number"),
        ({"mfu": 1.5}, "mfu", "≤ 1"),
        ({"latency_ms": -1}, "latency_ms", "≥ 0"),
        ({"compression": 0.5}, "compression", "≥ 1"),
        ({"micro_batches": 2.5}, "micro_batches", "an integer"),
        ({"precision": "fp2"}, "precision", "must be one of: fp16, bf16, fp8, fp4"),
        ({"moe": True}, "active_parameters_b", "required when moe is true"),
        ({"moe": True, "active_parameters_b": 200}, "active_parameters_b", "must be ≤ parameters_b = 144"),
        ({"hierarchical": True, "nodes_per_group": 100}, "nodes_per_group", "must be ≤ num_nodes = 72"),
        ({"inner_steps": 0}, "inner_steps", "'auto' or 'auto-quality'"),
        ({"regional_steps": "auto-quality"}, "regional_steps", "or 'auto'"),
        ({"software_growth": "2 per year"}, "software_growth", "not a growth rate"),
        (
            {"hardware_growth": "0.5x/yr", "software_growth": "0.5x/yr", "investment_growth": "1x/yr"},
            "hardware_growth + software_growth + investment_growth",
            "must be > 0 OOM/yr",
        ),
        (
            {"assumptions": {"straggler_coefficient": -1}},
            "assumptions.straggler_coefficient",
            "between 0 and 1",
        ),
        (
            {"assumptions": {"compression_quality_keys": [4, 1]}},
            "assumptions.compression_quality_keys",
            "increasing",
        ),
        ({"parameters_b": 0.01, "assumptions": {"alpha_size_divisor": 1}}, "parameters_b", "α is undefined"),
        ({"node": "dgx-h200"}, "node", "unknown node"),
        ({"unknown_field": 1}, "unknown_field", "unknown field"),
    ],
)
def test_errors_name_field_value_and_allowed(fields, field, words):
    with pytest.raises(dtsim.ScenarioError) as exc:
        load_scenario(layers=[fields])
    problems = exc.value.problems
    assert any(p[0] == field and words in p[2] for p in problems), problems


def test_json_schema_covers_every_field_with_bounds():
    schema = scenario_json_schema()
    props = schema["properties"]
    for name, _bound in BOUNDS.items():
        assert name in props
    assert {"type": "number", "minimum": 0.001, "maximum": 1} in props["mfu"]["anyOf"]  # or 'auto'
    assert {"type": "string", "enum": ["fp16", "bf16", "fp8", "fp4"]} in props["precision"]["anyOf"]
    assert props["num_nodes"]["type"] == "integer"


def test_replace_and_round_trip():
    s = dtsim.Scenario(num_nodes=9, node="16x-h100-sxm")
    assert s.replace(num_nodes=10).num_nodes == 10
    assert load_scenario(layers=[s.to_fields()]) == s


def test_json_schema_states_every_bound_as_minimum_maximum():
    """Every bounded field publishes its BOUNDS limits as JSON Schema keywords (inside `anyOf` for the
    optional ones), never as pydantic's own `ge`/`le`, which validators would ignore."""
    schema = scenario_json_schema()
    text = json.dumps(schema)
    assert '"ge":' not in text and '"le":' not in text
    for name, b in BOUNDS.items():
        prop = schema["properties"].get(name)
        if prop is None:
            continue
        numeric = [p for p in prop.get("anyOf", [prop]) if p.get("type") in ("integer", "number")]
        assert numeric, name
        low = numeric[0].get("minimum", numeric[0].get("exclusiveMinimum"))
        assert (low, numeric[0]["maximum"]) == (b.get("ge", b.get("gt")), b["le"]), name


def test_an_unknown_field_does_not_hide_the_others_problems():
    """A trial user's case: {num_nodes: -3, bogus: 1, latency_ms: inf} reported only bogus; fixing it
    revealed the next. Every problem is one line."""
    from dtsim.errors import ScenarioError
    from dtsim.schema.scenario import make_scenario

    with pytest.raises(ScenarioError) as err:
        make_scenario({"num_nodes": -3, "bogus": 1, "latency_ms": float("inf")})
    assert [p[0] for p in err.value.problems] == ["bogus", "num_nodes", "latency_ms"]


def test_a_set_value_meant_as_a_list_or_table_says_why_it_does_not_read():
    """A trial user's case: --set node_groups=[…] with .nan, a repeated key or a missing comma all said
    "Input should be a valid list"; the same text in a file said what was wrong."""
    from dtsim.errors import ScenarioError
    from dtsim.schema.scenario import parse_set

    for raw, why in (
        ("[{count: 2, node: dgx-h100, bandwidth_up_mbps: .nan}]", "must be a number, not NaN"),
        ("[{count: 2, node: dgx-h100, node: dgx-b200}]", "the key 'node' is given twice"),
        ("[{count: 2 node: dgx-h100}]", "malformed YAML"),
    ):
        with pytest.raises(ScenarioError) as exc:
            parse_set([f"node_groups={raw}"])
        (where, value, message) = exc.value.problems[0]
        assert where == "node_groups" and value == raw and why in message, message
    assert parse_set(["name=a: b: c"]) == {"name": "a: b: c"}  # other text that is not YAML stays text


def test_a_gpu_given_over_a_node_keeps_its_count_and_a_count_scales_the_node():
    """A trial user's case: `--preset intellect-1 --set gpu=h100-sxm` (the GPU the preset's dgx-h100
    already has) gave nodes of 16 GPUs, the default scenario's count: 176 GPUs and 15.35 days instead of
    88 and 26.9, without a word. A GPU without a count keeps the base's count (a node preset's); a count
    alone scales the base's peak and memory (`--set gpus_per_node=64` kept 32 PFLOPS and 2,304 GB)."""
    base = load_scenario(preset="intellect-1")
    same = load_scenario(preset="intellect-1", overrides={"gpu": "h100-sxm"})
    assert (same.gpus_per_node, same.pflops_per_node, same.vram_per_node_gb) == (
        8,
        pytest.approx(base.pflops_per_node),
        base.vram_per_node_gb,
    )
    assert dtsim.simulate(same).wall_clock_days == pytest.approx(dtsim.simulate(base).wall_clock_days)
    assert load_scenario(preset="intellect-1", overrides={"gpu": "b200"}).gpus_per_node == 8
    assert (
        load_scenario(preset="intellect-1", overrides={"gpu": "b200", "gpus_per_node": 4}).gpus_per_node == 4
    )
    default = load_scenario()
    four = load_scenario(overrides={"gpus_per_node": 64})
    assert four.pflops_per_node == pytest.approx(default.pflops_per_node * 4)
    assert four.vram_per_node_gb == pytest.approx(default.vram_per_node_gb * 4)
    layered = load_scenario(
        overrides={"gpus_per_node": 4},
        file_fields={"gpu": "h100-sxm", "gpus_per_node": 8, "pflops_per_node": 10.0},
    )
    assert layered.pflops_per_node == pytest.approx(5.0)  # the file's own per-GPU figure, halved
    with pytest.raises(dtsim.ScenarioError) as exc:  # a node preset fixes its count
        load_scenario(preset="intellect-1", overrides={"gpus_per_node": 4})
    assert exc.value.problems[0][0] == "gpus_per_node"
    with pytest.raises(dtsim.ScenarioError) as exc:  # the derived peak past its bound names the count
        load_scenario(overrides={"gpus_per_node": 10_000_000})
    assert exc.value.problems[0][:2] == ("gpus_per_node", 10_000_000)
    assert "at most 5,000,000 GPUs per node" in exc.value.problems[0][2]
    groups = load_scenario(
        preset="intellect-1", overrides={"node_groups": [{"count": 4, "gpu": "a100-80gb"}, {"count": 4}]}
    )
    assert dtsim.simulate(groups).gpu_count == 64  # 8 A100s a node, as the base's nodes hold 8
