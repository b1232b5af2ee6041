"""Property tests over the whole valid input space (hypothesis).

Every field is drawn across its full schema range (log-uniformly for the wide ones), enums and
flags included, so these tests exercise every mode, every straggler strategy and the infeasible case.
"""

from __future__ import annotations

import math
import os

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dtsim
from dtsim.schema.fields import BOUNDS

SETTINGS = settings(
    max_examples=int(os.environ.get("DTSIM_HYPOTHESIS_EXAMPLES", "200")),
    deadline=None,
    derandomize=os.environ.get("DTSIM_HYPOTHESIS_RANDOM") is None,
    suppress_health_check=[HealthCheck.too_slow],
)


def log_range(name, lo=None, hi=None):
    b = BOUNDS[name]
    lo = lo if lo is not None else b.get("ge", b.get("gt"))
    hi = hi if hi is not None else b["le"]
    lo = max(lo, 1e-300)
    return (
        st.floats(math.log10(lo), math.log10(hi))
        .map(lambda e: float(10**e))
        .map(lambda x: min(max(x, lo), hi))
    )


def log_int(name, hi=None):
    b = BOUNDS[name]
    top = hi if hi is not None else int(b["le"])
    return (
        st.floats(0, math.log10(top))
        .map(lambda e: round(10**e))
        .map(lambda x: min(max(x, int(b["ge"])), top))
    )


@st.composite
def scenarios(draw, **fixed):
    f = {
        "parameters_b": draw(log_range("parameters_b")),
        "tokens_t": draw(log_range("tokens_t")),
        "num_nodes": draw(log_int("num_nodes")),
        "pflops_per_node": draw(log_range("pflops_per_node")),
        "vram_per_node_gb": draw(log_range("vram_per_node_gb")),
        "bandwidth_up_mbps": draw(log_range("bandwidth_up_mbps")),
        "bandwidth_down_mbps": draw(log_range("bandwidth_down_mbps")),
        "latency_ms": draw(st.one_of(st.just(0.0), log_range("latency_ms", lo=1e-3))),
        "mfu": draw(st.floats(0.001, 1.0)),
        "inner_steps": draw(st.one_of(log_int("inner_steps"), st.sampled_from(["auto", "auto-quality"]))),
        "regional_steps": draw(st.one_of(log_int("regional_steps", hi=10_000), st.just("auto"))),
        "compression": draw(log_range("compression")),
        "compression_scenario": draw(st.sampled_from(["optimistic", "expected", "conservative"])),
        "error_feedback": draw(st.booleans()),
        "activation_compression": draw(log_range("activation_compression")),
        "local_batch_tokens": draw(log_int("local_batch_tokens")),
        "micro_batches": draw(log_int("micro_batches")),
        "precision": draw(st.sampled_from(["fp16", "bf16", "fp8", "fp4"])),
        "streaming": draw(st.booleans()),
        "pipeline_backward": draw(st.booleans()),
        "regional_bandwidth_mbps": draw(log_range("regional_bandwidth_mbps")),
        "regional_latency_ms": draw(st.one_of(st.just(0.0), log_range("regional_latency_ms", lo=1e-3))),
        "straggler_strategy": draw(st.sampled_from(["none", "threshold", "backup", "relay"])),
        "replica_penalty": draw(st.sampled_from(["none", "h-scaled", "fixed"])),
        "moe": draw(st.booleans()),
        "moe_layers": draw(st.integers(0, 200)),
        "expert_parallelism": draw(st.sampled_from(["none", "regional", "global"])),
        "hidden_size": draw(st.one_of(st.none(), log_int("hidden_size"))),
        "gpu": draw(st.one_of(st.none(), st.sampled_from(["h100-sxm", "tpu-v4", "mi300x"]))),
    }
    f["micro_batches"] = min(f["micro_batches"], f["local_batch_tokens"])  # a micro-batch holds ≥ 1 token
    low = min(2, f["num_nodes"])  # a regional group holds two nodes at least (one is refused)
    f["nodes_per_group"] = draw(st.integers(low, max(low, min(f["num_nodes"], 10_000))))
    f["hierarchical"] = draw(st.booleans()) and f["nodes_per_group"] >= 2
    if f["moe"]:
        f["active_parameters_b"] = f["parameters_b"] * draw(st.floats(0.01, 1.0))
        f["active_parameters_b"] = max(f["active_parameters_b"], BOUNDS["active_parameters_b"]["ge"])
        assume(f["active_parameters_b"] <= f["parameters_b"])
    if f["gpu"] is not None:
        f["gpus_per_node"] = draw(st.integers(1, 1000))
    f.update(fixed)
    return f


def sim(fields):
    return dtsim.simulate(dtsim.load_scenario(layers=[fields]))


NUMERIC_ALWAYS = (
    "compute_step_s",
    "efficiency_compression",
    "efficiency_activation",
    "model_flop",
    "hardware_flop",
    "memory_per_node_gb",
    "model_state_memory_gb",
    "max_days",
)
TIME_LIKE = (
    "wall_clock_days",
    "effective_days",
    "inner_step_s",
    "sync_s",
    "regional_sync_s",
    "outer_step_s",
    "efficiency",
    "efficiency_h",
    "global_mfu",
    "global_hfu",
    "chi",
    "quality_adjusted_flop",
    "peak_flop_capacity",
    "replica_loss_multiplier",
)


@SETTINGS
@given(scenarios())
def test_outputs_are_finite_and_in_range(fields):
    r = sim(fields)
    for key in NUMERIC_ALWAYS:
        assert math.isfinite(getattr(r, key)), key
    if r.mode == "infeasible":
        assert r.wall_clock_days is None and r.outer_step_s is None and r.feasible is False
        assert {"INSUFFICIENT_NODES", "PIPELINE_TOO_DEEP"} & {w.code for w in r.warnings}
        return
    for key in TIME_LIKE:
        value = getattr(r, key)
        assert value is not None and math.isfinite(value), key
    assert r.wall_clock_days > 0
    assert 0.4 - 1e-12 <= r.efficiency_h <= 1.0
    assert 0 < r.efficiency <= 1.0
    assert 0 < r.chi <= 1.0
    assert r.effective_days >= r.wall_clock_days * (1 - 1e-12)
    assert 0 < r.global_mfu <= fields["mfu"] * (1 + 1e-9)
    parts = [v for v in r.breakdown_s.values()]
    assert all(v is not None and v >= -1e-9 * r.outer_step_s for v in parts)
    assert sum(parts) == np.float64(r.outer_step_s) * (1 + 0 * sum(parts)) or math.isclose(
        sum(parts), r.outer_step_s, rel_tol=1e-9
    )
    json_text = r.to_json()
    assert "NaN" not in json_text and "Infinity" not in json_text


def _scaled(fields, **factors):
    out = dict(fields)
    for key, k in factors.items():
        out[key] = min(out[key] * k, BOUNDS[key]["le"])
    return out


@SETTINGS
@given(scenarios(inner_steps=128, regional_steps=16), st.floats(1.0, 1000.0))
def test_more_bandwidth_never_slows_a_run(fields, k):
    a = sim(fields)
    b = sim(_scaled(fields, bandwidth_up_mbps=k, bandwidth_down_mbps=k, regional_bandwidth_mbps=k))
    assume(a.mode != "infeasible")
    assert b.mode == a.mode
    assert b.wall_clock_days <= a.wall_clock_days * (1 + 1e-12)
    assert b.effective_days <= a.effective_days * (1 + 1e-12)


@SETTINGS
@given(scenarios(inner_steps=128, regional_steps=16), st.floats(1.0, 1000.0))
def test_more_latency_never_speeds_a_run(fields, k):
    fields = dict(
        fields,
        latency_ms=max(fields["latency_ms"], 1.0),
        regional_latency_ms=max(fields["regional_latency_ms"], 1.0),
    )
    a = sim(fields)
    b = sim(_scaled(fields, latency_ms=k, regional_latency_ms=k))
    assume(a.mode != "infeasible")
    assert b.wall_clock_days >= a.wall_clock_days * (1 - 1e-12)


@SETTINGS
@given(scenarios(), st.floats(1.0, 1000.0))
def test_more_compression_never_adds_bytes(fields, k):
    a = sim(fields)
    b = sim(_scaled(fields, compression=k))
    assert b.details["payload_bits"] <= a.details["payload_bits"] * (1 + 1e-12)
    c = sim(_scaled(fields, activation_compression=k))
    assert c.details["handoff_bits"] <= a.details["handoff_bits"] * (1 + 1e-12)


@SETTINGS
@given(scenarios(hierarchical=False, moe=False, inner_steps=128), st.integers(1, 1000))
def test_more_nodes_never_lower_aggregate_compute_or_flat_throughput(fields, extra):
    a = sim(fields)
    bigger = dict(fields, num_nodes=min(fields["num_nodes"] + extra, BOUNDS["num_nodes"]["le"]))
    b = sim(bigger)
    # Aggregate peak compute grows with the node count.
    assert bigger["num_nodes"] * bigger["pflops_per_node"] >= fields["num_nodes"] * fields["pflops_per_node"]
    # In flat DiLoCo, tokens per second never fall when nodes are added: N / f(N) increases.
    assume(a.mode == "flat-diloco")
    assert b.mode == "flat-diloco"
    assert b.wall_clock_days <= a.wall_clock_days * (1 + 1e-12)


@SETTINGS
@given(scenarios())
def test_batch_path_equals_scalar_path(fields):
    scalar = sim(fields)
    batch = dtsim.simulate_batch(
        dtsim.load_scenario(layers=[fields]), num_nodes=np.array([fields["num_nodes"]] * 3)
    )
    row = batch.result(1)
    assert row.model_dump(exclude={"scenario", "cost_sources"}) == scalar.model_dump(
        exclude={"scenario", "cost_sources"}
    )
    for key in ("wall_clock_days", "chi", "sync_s"):
        col = batch[key]
        value = getattr(scalar, key)
        assert np.isnan(col[0]) if value is None else col[0] == value, key


# --- every batch field: a batch row equals `simulate` of the same fields ----------------------------

from dtsim import catalog  # noqa: E402
from dtsim.errors import ScenarioError  # noqa: E402
from dtsim.models.decentralized.encode import BATCH_FIELDS, BOOLS, ENUMS, OPTIONAL  # noqa: E402

_GROWTH_TEXT = st.one_of(
    st.floats(-50, 300).map(lambda v: f"{v:.3g}%/yr"),
    st.floats(0.5, 5).map(lambda v: f"{v:.3g}x/yr"),
    st.floats(-0.3, 1.5).map(lambda v: f"{v:.3g} OOM/yr"),
)


def _value(field):
    """Values one batch row may give `field`: (scalar value, array element). Optional numbers are
    None on the scalar path and NaN in an array."""
    if field in ("node", "gpu"):
        ids = sorted(catalog.nodes() if field == "node" else catalog.gpus())
        return st.one_of(st.none(), st.sampled_from(ids))
    if field in ENUMS:
        return st.sampled_from(list(ENUMS[field][1]))
    if field in BOOLS:
        return st.booleans()
    if field == "outer_overlap_steps":
        return st.integers(0, 50)
    if field.endswith("_growth"):
        return _GROWTH_TEXT
    if field == "inner_steps":
        return st.one_of(log_int("inner_steps"), st.sampled_from(["auto", "auto-quality"]))
    if field == "regional_steps":
        return st.one_of(log_int("regional_steps", hi=10_000), st.just("auto"))
    if field == "bandwidth_mbps":
        return log_range("bandwidth_up_mbps")
    if field in ("latency_ms", "regional_latency_ms"):
        return st.one_of(st.just(0.0), log_range(field, lo=1e-3))
    if field == "moe_layers":
        return st.integers(0, 200)
    if field == "nodes_per_group":
        return st.integers(2, 10_000)  # a regional group of one is refused with hierarchical
    if field == "gpus_per_node":
        inner = st.integers(1, 1000)
    elif field == "hidden_size":
        inner = log_int("hidden_size")
    elif field == "mfu":
        inner = st.floats(0.001, 1.0)
    elif field == "tcp_streams":
        inner = st.integers(1, 64)
    elif field in ("num_nodes", "local_batch_tokens", "micro_batches"):
        inner = log_int(field)
    else:
        inner = log_range(field)
    return st.one_of(st.none(), inner) if field in OPTIONAL else inner


def _array(field, values):
    if field in OPTIONAL:
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    if field in ("node", "gpu") or any(isinstance(v, str) for v in values):
        return np.array(values, dtype=object)
    return np.array(values)


@st.composite
def batches(draw):
    base = draw(scenarios())
    if draw(st.booleans()):  # a base on a node preset half the time
        base["node"] = draw(st.sampled_from(sorted(catalog.nodes())))
    k = draw(st.integers(1, 3))
    varied = draw(st.lists(st.sampled_from(BATCH_FIELDS), min_size=1, max_size=4, unique=True))
    if "bandwidth_mbps" in varied:
        varied = [f for f in varied if f not in ("bandwidth_up_mbps", "bandwidth_down_mbps")]
    rows = {f: draw(st.lists(_value(f), min_size=k, max_size=k)) for f in varied}
    return base, rows, k


def _same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@SETTINGS
@given(batches())
def test_every_batch_field_matches_the_scalar_path(case):
    """Any subset of the batch fields, varied over 1–3 rows on any valid base (node presets, explicit
    GPUs, optional fields unset or set): the batch raises exactly when some row's scalar scenario is
    invalid, and otherwise row i is `simulate(load_scenario(layers=[base, row_i]))`, field for field."""
    base, rows, k = case
    try:
        scenario = dtsim.load_scenario(layers=[base])
    except ScenarioError:
        assume(False)
    expected, invalid = [], False
    for i in range(k):
        try:
            row = {f: v[i] for f, v in rows.items()}
            expected.append(dtsim.simulate(dtsim.load_scenario(layers=[base, row])))
        except ScenarioError:
            invalid = True
    try:
        batch = dtsim.simulate_batch(scenario, **{f: _array(f, v) for f, v in rows.items()})
    except ScenarioError as exc:
        assert invalid, f"batch refused rows every scalar run accepts: {exc}"
        return
    assert not invalid, "batch accepted a row the scalar path refuses"
    for i, scalar in enumerate(expected):
        got = batch.result(i).model_dump(exclude={"scenario", "cost_sources"})
        want = scalar.model_dump(exclude={"scenario", "cost_sources"})
        assert _same(got, want), (
            i,
            {key: (got[key], want[key]) for key in got if not _same(got[key], want.get(key))},
        )
        for key in ("wall_clock_days", "chi", "sync_s", "global_mfu"):
            value = getattr(scalar, key)
            col = batch[key][i]
            assert np.isnan(col) if value is None else col == value, key
