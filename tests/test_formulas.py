"""Hand-checked formulas, one seed 000 section at a time. Every expected number is computed here from
the seed's formula and the scenario's inputs, not read back from dtsim."""

from __future__ import annotations

import math

import pytest

import dtsim
from dtsim.physics.runlength import parse_growth


def f(n, c=0.05):
    """Seed 000 §5.1 straggler factor."""
    return 1 + c * math.log2(n) if n > 1 else 1.0


def alpha(p):
    """Seed 000 §4.3."""
    return 0.08 / (1 + math.log10(p / 1e9) / 5)


DEFAULT_T = 6 * 144e9 * 131072 / (32e15 * 0.4)  # §1.2 with the §9 defaults = 8.84736 s
DEFAULT_V = 144e9 * 16 / 16  # §3.1 payload bits with 16× compression


# --- §1 compute -------------------------------------------------------------------------------------


def test_s1_1_total_compute_is_6PD():
    r = dtsim.simulate()
    assert r.model_flop == 6 * 144e9 * 12e12 == 1.0368e25


def test_s1_2_step_time():
    r = dtsim.simulate()
    assert r.compute_step_s == pytest.approx(8.84736, rel=1e-12)
    assert pytest.approx(8.84736, rel=1e-12) == DEFAULT_T


def test_s1_4_and_1_5_moe_compute_and_ep_latency():
    r = dtsim.simulate(moe=True, parameters_b=600, active_parameters_b=100, expert_parallelism="global")
    assert r.model_flop == 6 * 100e9 * 12e12
    t_ep = 2 * 0.100 * 32  # two all-to-alls per MoE layer, 32 layers, 100 ms
    assert r.compute_step_s == pytest.approx(6 * 100e9 * 131072 / (32e15 * 0.4) + t_ep, rel=1e-12)


# --- §2 memory --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("precision", "beta"), [("fp16", 16), ("bf16", 16), ("fp8", 14), ("fp4", 13)])
def test_s2_1_bytes_per_parameter(precision, beta):
    r = dtsim.simulate(precision=precision, parameters_b=100)
    assert r.model_state_memory_gb == pytest.approx(100 * beta, rel=1e-12)


def test_s2_2_stage_count_is_the_ceiling():
    # 300B × 16 B = 4,800 GB over 2,304 GB nodes: ⌈2.083⌉ = 3 stages (Appendix A example)
    r = dtsim.simulate(parameters_b=300)
    assert r.pp_stages == 3 and r.pp_groups == 24
    assert r.memory_per_node_gb == pytest.approx(1600, rel=1e-12)


def test_s2_4_worked_example_600B_moe_on_72_nodes_is_about_1711_GB():
    r = dtsim.simulate(moe=True, parameters_b=600, active_parameters_b=100, expert_parallelism="global")
    assert r.model_state_memory_gb == pytest.approx((100e9 + 500e9 / 72) * 16 / 1e9, rel=1e-12)
    assert round(r.model_state_memory_gb) == 1711
    assert r.mode == "flat-diloco" and r.mode_reason_code == "ep-fits"
    assert "EP_SAVED_MEMORY" in [w.code for w in r.warnings]
    without = dtsim.simulate(moe=True, parameters_b=600, active_parameters_b=100)
    assert without.model_state_memory_gb == 9600 and without.mode == "pp-group-diloco"


def test_s2_4_regional_ep_degree_is_the_group_size():
    r = dtsim.simulate(
        moe=True,
        parameters_b=600,
        active_parameters_b=100,
        expert_parallelism="regional",
        hierarchical=True,
        vram_per_node_gb=4000,
    )
    assert r.details["ep_degree"] == 8
    assert r.model_state_memory_gb == pytest.approx((100e9 + 500e9 / 8) * 16 / 1e9, rel=1e-12)


# --- §3 communication and modes -----------------------------------------------------------------------


def test_s3_1_flat_diloco_streaming():
    r = dtsim.simulate()
    sync = (2 * DEFAULT_V / 100e6 + 0.1) * f(72)
    assert r.sync_s == pytest.approx(sync, rel=1e-12)
    outer = max(128 * DEFAULT_T, sync)
    assert r.outer_step_s == pytest.approx(outer, rel=1e-12)
    total = 12e12 / (131072 * 72 * 128) * outer
    assert r.wall_clock_days == pytest.approx(total / 86400, rel=1e-12)
    assert sum(r.breakdown_s.values()) == pytest.approx(r.outer_step_s, rel=1e-12)


def test_s3_1_flat_diloco_without_streaming_adds():
    r = dtsim.simulate(streaming=False, compression=150)
    sync = (2 * 144e9 * 16 / 150 / 100e6 + 0.1) * f(72)
    assert r.outer_step_s == pytest.approx(128 * DEFAULT_T + sync, rel=1e-12)


def test_s3_1_asymmetric_links():
    r = dtsim.simulate(bandwidth_up_mbps=20, bandwidth_down_mbps=300)
    assert r.sync_s == pytest.approx((DEFAULT_V / 20e6 + DEFAULT_V / 300e6 + 0.1) * f(72), rel=1e-12)
    same = dtsim.simulate(bandwidth_mbps=50)
    assert same.sync_s == pytest.approx((2 * DEFAULT_V / 50e6 + 0.1) * f(72), rel=1e-12)


def test_s3_2_hierarchical_diloco():
    r = dtsim.simulate(hierarchical=True)  # 72 nodes, 8 per group → 9 groups
    reg = (2 * DEFAULT_V / 1e9 + 0.020) * f(8)
    glob = (2 * DEFAULT_V / 100e6 + 0.1) * f(9)
    assert r.regional_sync_s == pytest.approx(reg, rel=1e-12)
    assert r.sync_s == pytest.approx(glob, rel=1e-12)
    regional_cycle = max(128 * DEFAULT_T, reg)
    global_cycle = max(16 * regional_cycle, glob)
    assert r.outer_step_s == pytest.approx(global_cycle, rel=1e-12)
    total = 12e12 / (131072 * 72 * 128 * 16) * global_cycle
    assert r.wall_clock_days == pytest.approx(total / 86400, rel=1e-12)
    assert r.regional_steps_used == 16
    assert sum(r.breakdown_s.values()) == pytest.approx(r.outer_step_s, rel=1e-12)


def test_s3_2_hierarchical_without_streaming():
    r = dtsim.simulate(hierarchical=True, streaming=False)
    reg = (2 * DEFAULT_V / 1e9 + 0.020) * f(8)
    glob = (2 * DEFAULT_V / 100e6 + 0.1) * f(9)
    assert r.outer_step_s == pytest.approx(16 * (128 * DEFAULT_T + reg) + glob, rel=1e-12)


def _pipeline_step(params, stages, bw, rtt, micro=8, batch=131072, pflops=32, mfu=0.4, bpv=2):
    t = 6 * params * batch / (pflops * 1e15 * mfu)
    handoff = 2 * batch / micro * 0.03 * math.sqrt(params) * 8 * bpv / bw
    return (micro + stages - 1) * (t / (micro * stages) + (handoff + rtt) * f(stages))


def test_s3_3_pure_pipeline_over_wan():
    r = dtsim.simulate(parameters_b=600, num_nodes=8)  # S = 5, one pipeline
    step = _pipeline_step(600e9, 5, 100e6, 0.1)
    assert r.inner_step_s == pytest.approx(step, rel=1e-12)
    assert r.wall_clock_days == pytest.approx(12e12 / 131072 * step / 86400, rel=1e-12)
    assert "PP_OVER_WAN" in [w.code for w in r.warnings]


def test_s3_4_pp_group_diloco():
    r = dtsim.simulate(parameters_b=300)  # Appendix A example: S = 3, G = 24
    step = _pipeline_step(300e9, 3, 100e6, 0.1)
    sync = (2 * 300e9 / 3 * 16 / 16 / 100e6 + 0.1) * f(24)
    outer = max(128 * step, sync)
    assert r.outer_step_s == pytest.approx(outer, rel=1e-12)
    assert r.wall_clock_days == pytest.approx(12e12 / (131072 * 24 * 128) * outer / 86400, rel=1e-12)
    assert sum(r.breakdown_s.values()) == pytest.approx(r.outer_step_s, rel=1e-12)
    assert "PP_GROUP_MODE" in [w.code for w in r.warnings]


def test_s3_4_pp_groups_use_regional_links_when_hierarchical():
    r = dtsim.simulate(parameters_b=300, hierarchical=True)
    assert r.inner_step_s == pytest.approx(_pipeline_step(300e9, 3, 1e9, 0.020), rel=1e-12)


def test_s3_3_explicit_hidden_size_and_forward_only_traffic():
    r = dtsim.simulate(parameters_b=300, hidden_size=16384, pipeline_backward=False, micro_batches=16)
    t = 6 * 300e9 * 131072 / (32e15 * 0.4)
    handoff = 131072 / 16 * 16384 * 16 / 100e6
    assert r.inner_step_s == pytest.approx((16 + 2) * (t / 48 + (handoff + 0.1) * f(3)), rel=1e-12)


# --- §4 efficiency --------------------------------------------------------------------------------------


def test_s4_1_to_4_3_eta_flat():
    r = dtsim.simulate()
    assert r.efficiency_h == pytest.approx(1 - alpha(144e9) * math.log10(128), rel=1e-12)


def test_s4_4_hierarchical_effective_steps():
    r = dtsim.simulate(hierarchical=True)
    assert r.details["h_eff"] == pytest.approx(128 * 16**0.5, rel=1e-12)
    assert r.efficiency_h == pytest.approx(1 - alpha(144e9) * math.log10(512), rel=1e-12)


def test_s4_5_threshold_penalty_and_floor():
    r = dtsim.simulate(straggler_strategy="threshold")
    assert r.efficiency_h == pytest.approx((1 - alpha(144e9) * math.log10(128)) / 1.15, rel=1e-12)
    assert r.sync_s == pytest.approx(2 * DEFAULT_V / 100e6 + 0.1, rel=1e-12)  # f = 1
    low = dtsim.simulate(parameters_b=1, inner_steps=10_000_000, straggler_strategy="threshold")
    assert low.efficiency_h == 0.4
    assert "EFFICIENCY_FLOOR" in [w.code for w in low.warnings]


def test_efficiency_multiplies_compression_and_activation_quality():
    r = dtsim.simulate(parameters_b=300, compression=150, error_feedback=False, activation_compression=10)
    assert r.efficiency_compression == pytest.approx(0.96, rel=1e-12)  # expected table, no EF, 150×
    assert r.efficiency_activation == pytest.approx(0.98 ** (2 * (3 - 1)), rel=1e-12)
    assert r.efficiency == pytest.approx(r.efficiency_h * 0.96 * 0.98**4, rel=1e-12)


# --- §5 stragglers ----------------------------------------------------------------------------------


def test_s5_1_straggler_factor_for_72_nodes_is_about_1_31():
    r = dtsim.simulate(compression=1e6)  # a tiny payload: the sync is latency × f(72)
    factor = r.sync_s / (2 * 144e9 * 16 / 1e6 / 100e6 + 0.1)
    assert factor == pytest.approx(1 + 0.05 * math.log2(72), rel=1e-12)
    assert round(factor, 2) == 1.31


def test_s5_2_backup_workers():
    r = dtsim.simulate(straggler_strategy="backup")
    n_eff = 72 / 1.1
    assert r.details["n_eff"] == pytest.approx(n_eff, rel=1e-12)
    assert r.sync_s == pytest.approx((2 * DEFAULT_V / 100e6 + 0.1) * (1 + 0.3 * (f(n_eff) - 1)), rel=1e-12)


def test_relay_straggler():
    r = dtsim.simulate(straggler_strategy="relay")
    assert r.sync_s == pytest.approx((2 * DEFAULT_V / 100e6 + 0.1) * f(72, 0.02), rel=1e-12)


# --- §6 utilization -------------------------------------------------------------------------------------


def test_s6_global_mfu_and_hfu():
    r = dtsim.simulate()
    t_eff = r.effective_days * 86400
    assert r.global_mfu == pytest.approx(6 * 144e9 * 12e12 / (72 * 32e15 * t_eff), rel=1e-12)
    assert r.global_hfu == pytest.approx(r.global_mfu / 0.8, rel=1e-12)
    assert r.effective_days == pytest.approx(r.wall_clock_days / r.efficiency, rel=1e-12)
    ratio = dtsim.simulate(assumptions={"hfu_mfu_ratio": 0.67})
    assert ratio.global_hfu == pytest.approx(ratio.global_mfu / 0.67, rel=1e-12)


# --- §7 maximum run length ------------------------------------------------------------------------------


def test_s7_default_growth_rates():
    r = dtsim.simulate()
    g = math.log10(1.37) + math.log10(3.0) + math.log10(3.5)
    assert r.max_days == pytest.approx(365 / (g * math.log(10)), rel=1e-12)
    assert round(r.max_days) == 137


@pytest.mark.parametrize(
    ("text", "oom"),
    [
        ("37%/yr", math.log10(1.37)),
        ("1.37x/yr", math.log10(1.37)),
        ("1.37×/yr", math.log10(1.37)),
        ("0.137 OOM/yr", 0.137),
        ("250 %/year", math.log10(3.5)),
        ("3X", math.log10(3)),
    ],
)
def test_s7_growth_units(text, oom):
    assert parse_growth(text) == pytest.approx(oom, rel=1e-12)


def test_s7_manual_override_and_feasibility():
    r = dtsim.simulate(parameters_b=10, tokens_t=0.2, max_run_days=20)
    assert r.max_days == 20
    assert r.feasible == (r.effective_days <= 20)


# --- H choice -------------------------------------------------------------------------------------


def test_inner_steps_auto_is_the_smallest_hiding_H():
    r = dtsim.simulate(inner_steps="auto")
    sync = (2 * DEFAULT_V / 100e6 + 0.1) * f(72)
    h = math.ceil(sync / DEFAULT_T)
    assert r.inner_steps_used == h == 426
    assert h * DEFAULT_T >= sync > (h - 1) * DEFAULT_T
    assert r.breakdown_s["global_sync"] == 0


def test_inner_steps_auto_quality_maximises_quality_per_day():
    base = {"streaming": False, "compression": 100}
    best = dtsim.simulate(inner_steps="auto-quality", **base)

    def score(h):
        r = dtsim.simulate(inner_steps=h, **base)
        return r.quality_adjusted_flop / r.wall_clock_days

    h = best.inner_steps_used
    assert 1 < h < 4096
    assert all(score(h) >= score(k) for k in (1, 2, h // 2, h - 1, h + 1, 2 * h, 4 * h))


# --- cost ---------------------------------------------------------------------------------------------


def test_cost_and_energy():
    r = dtsim.simulate(node="16x-h100-sxm", num_nodes=10, parameters_b=10, tokens_t=0.2)
    hours = r.wall_clock_days * 24
    assert r.gpu_count == 160
    assert r.cost_usd == 160 * 25_000
    assert r.gpu_hours == pytest.approx(160 * hours, rel=1e-12)
    assert r.energy_kwh == pytest.approx(160 * 700 * hours * 1.56 / 1000, rel=1e-12)
    assert set(r.cost_sources) == {"pue", "price_usd", "board_power_w"}


# --- Appendix A --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "mode", "reason"),
    [
        ({}, "flat-diloco", "fits"),
        ({"hierarchical": True}, "hierarchical-diloco", "fits-hierarchical"),
        ({"hierarchical": True, "num_nodes": 15}, "flat-diloco", "hierarchy-fallback"),
        (
            {"moe": True, "parameters_b": 600, "active_parameters_b": 100, "expert_parallelism": "global"},
            "flat-diloco",
            "ep-fits",
        ),
        (
            {
                "moe": True,
                "parameters_b": 600,
                "active_parameters_b": 100,
                "expert_parallelism": "global",
                "hierarchical": True,
            },
            "hierarchical-diloco",
            "ep-fits-hierarchical",
        ),
        ({"parameters_b": 300}, "pp-group-diloco", "pp-groups"),
        ({"parameters_b": 300, "num_nodes": 5}, "pp-over-wan", "pp-single-pipeline"),
        ({"parameters_b": 300, "num_nodes": 2}, "infeasible", "too-few-nodes"),
    ],
)
def test_appendix_a_decision_tree(fields, mode, reason):
    r = dtsim.simulate(**fields)
    assert (r.mode, r.mode_reason_code) == (mode, reason)
    assert r.mode_reason


def test_appendix_a_insufficient_nodes_names_every_fix():
    r = dtsim.simulate(parameters_b=300, num_nodes=2)
    message = next(w.message for w in r.warnings if w.code == "INSUFFICIENT_NODES")
    for part in (
        "FP16 144B",
        "FP8 165B",
        "FP4 177B",
        "smaller model",
        "mixture-of-experts",
        "3 nodes for one pipeline",
        "6 for PP-group DiLoCo",
    ):
        assert part in message, part
