"""Each deliberate deviation from the original simulator, asserted on its own (docs/deviations.md).

For every deviation: (a) on the oracle data, switching that one fix on in the reference model
changes some outputs of some case (the deviation is real, not vacuous), and (b) on a hand-built
scenario dtsim gives the corrected number, computed here by hand from the formula.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import pytest

import dtsim
from tests.oracle.mapping import load_cases, same
from tests.oracle.reference_model import ALL_FIXES, calc

DOC = Path(__file__).resolve().parents[1] / "docs" / "deviations.md"


def f(n, c=0.05):
    return 1 + c * math.log2(n) if n > 1 else 1.0


@functools.cache
def changed_cases() -> dict[str, int]:
    """For each deviation, the number of oracle cases in which switching it alone changes an output."""
    counts = dict.fromkeys(ALL_FIXES, 0)
    for _, inputs, _ in load_cases():
        base = calc(inputs)
        for fix in ALL_FIXES:
            other = calc(inputs, frozenset({fix}))
            counts[fix] += any(not same(base[k], other[k], rel=1e-12) for k in base)
    return counts


@pytest.mark.parametrize("fix", sorted(ALL_FIXES))
def test_each_deviation_changes_some_oracle_case(fix):
    assert changed_cases()[fix] > 0


def test_deviation_document_lists_every_fix_with_its_count():
    text = DOC.read_text()
    for fix in ALL_FIXES:
        row = re.search(rf"^\| {fix} \|.*\| (\d+) \|$", text, re.M)
        assert row, f"{fix} missing from docs/deviations.md"
        assert int(row.group(1)) == changed_cases()[fix], fix


# --- hand-computed checks, one per deviation -----------------------------------------------------------

T_300B = 6 * 300e9 * 131072 / (32e15 * 0.4)  # one step of the 300B model on one default node


def _handoff_s(params, bw_bps, bytes_per_value=2, micro=8, batch=131072, c_act=1, directions=2):
    h = 0.03 * math.sqrt(params)
    return directions * batch / micro * h * 8 * bytes_per_value / c_act / bw_bps


def test_D1_pipeline_compute_is_divided_by_stages():
    r = dtsim.simulate(parameters_b=300)  # 4,800 GB over 2,304 GB nodes: S = 3, 24 groups
    assert (r.mode, r.pp_stages, r.pp_groups) == ("pp-group-diloco", 3, 24)
    slot = T_300B / (8 * 3) + (_handoff_s(300e9, 100e6) + 0.1) * f(3)
    assert r.inner_step_s == pytest.approx(10 * slot, rel=1e-12)
    original_slot = T_300B / 8 + (_handoff_s(300e9, 100e6) + 0.1) * f(3)
    assert r.inner_step_s < 10 * original_slot


def test_D2_fewer_nodes_than_stages_is_infeasible_and_one_pipeline_counts_once():
    r = dtsim.simulate(parameters_b=600, num_nodes=4)  # S = 5 > 4 nodes
    assert r.mode == "infeasible"
    assert r.wall_clock_days is None and r.effective_days is None and r.global_mfu is None
    assert "INSUFFICIENT_NODES" in [w.code for w in r.warnings]
    r = dtsim.simulate(parameters_b=600, num_nodes=8)  # one pipeline of 5, 3 nodes idle
    assert (r.mode, r.pp_groups, r.idle_nodes) == ("pp-over-wan", 1, 3)
    assert r.details["total_s"] == pytest.approx(12e12 / 131072 * r.inner_step_s, rel=1e-12)


def test_D3_hierarchy_uses_whole_groups_or_falls_back():
    r = dtsim.simulate(num_nodes=12, hierarchical=True)  # 12 // 8 = 1 group
    assert r.mode == "flat-diloco" and r.mode_reason_code == "hierarchy-fallback"
    assert "HIERARCHY_FALLBACK" in [w.code for w in r.warnings]
    r = dtsim.simulate(num_nodes=20, hierarchical=True)  # 2 groups; the larger has 10 nodes
    v_bits = 144e9 * 16 / 16
    assert r.regional_sync_s == pytest.approx((2 * v_bits / 1e9 + 0.02) * f(10), rel=1e-12)
    assert r.sync_s == pytest.approx((2 * v_bits / 1e8 + 0.1) * f(2), rel=1e-12)


def test_D4_regional_expert_parallelism_pays_regional_latency_without_hierarchy():
    r = dtsim.simulate(
        moe=True,
        parameters_b=600,
        active_parameters_b=100,
        expert_parallelism="regional",
        pflops_per_node=15.6,
        vram_per_node_gb=4000,
    )
    assert r.details["ep_latency_s"] == pytest.approx(2 * 0.020 * 32, rel=1e-12)
    assert r.compute_step_s == pytest.approx(6 * 100e9 * 131072 / (15.6e15 * 0.4) + 1.28, rel=1e-12)


def test_D5_moe_chi_uses_active_parameters():
    moe = dtsim.simulate(
        moe=True,
        parameters_b=600,
        active_parameters_b=100,
        expert_parallelism="global",
        replica_penalty="none",
    )
    dense = dtsim.simulate(parameters_b=100, replica_penalty="none")
    # Same active parameters, tokens and compute: the same Chinchilla χ.
    assert moe.chi == pytest.approx(dense.chi, rel=1e-12)
    assert moe.model_flop == dense.model_flop == 6 * 100e9 * 12e12


def test_D8a_pipeline_handoffs_use_the_slower_direction():
    r = dtsim.simulate(parameters_b=300, bandwidth_up_mbps=400, bandwidth_down_mbps=50)
    slot = T_300B / 24 + (_handoff_s(300e9, 50e6) + 0.1) * f(3)
    assert r.inner_step_s == pytest.approx(10 * slot, rel=1e-12)


def test_D8b_sync_payload_is_what_a_node_holds():
    r = dtsim.simulate(moe=True, parameters_b=600, active_parameters_b=100, expert_parallelism="global")
    held = 100e9 + 500e9 / 72
    assert r.model_state_memory_gb == pytest.approx(held * 16 / 1e9, rel=1e-12)  # ≈ 1,711 GB (seed 000 §2.4)
    v_bits = held * 16 / 16
    assert r.sync_s == pytest.approx((2 * v_bits / 1e8 + 0.1) * f(72), rel=1e-12)


def test_D9_one_node_with_backup_workers_has_no_speedup_factor():
    r = dtsim.simulate(num_nodes=1, straggler_strategy="backup", parameters_b=10, tokens_t=0.2)
    assert r.sync_s == pytest.approx(2 * 10e9 * 16 / 16 / 1e8 + 0.1, rel=1e-12)


def test_M1_pipeline_stage_nodes_sync_their_own_stage():
    r = dtsim.simulate(parameters_b=300)  # S = 3, 24 groups
    v_bits = 300e9 / 3 * 16 / 16
    assert r.sync_s == pytest.approx((2 * v_bits / 1e8 + 0.1) * f(24), rel=1e-12)


def test_M2_pure_pipeline_has_no_diloco_penalty_and_one_replica():
    r = dtsim.simulate(parameters_b=600, num_nodes=8)
    assert r.mode == "pp-over-wan"
    assert r.efficiency_h == 1.0 and r.details["replicas"] == 1.0 and r.replica_loss_multiplier == 1.0
    assert r.inner_steps_used is None


def test_M3_moe_hidden_size_follows_active_parameters():
    r = dtsim.simulate(moe=True, parameters_b=2000, active_parameters_b=200, expert_parallelism="none")
    assert r.mode == "pp-group-diloco"
    assert r.details["hidden"] == pytest.approx(0.03 * math.sqrt(200e9), rel=1e-12)


def test_M4_pipelines_longer_than_a_group_cross_the_wan():
    inside = dtsim.simulate(parameters_b=300, hierarchical=True, nodes_per_group=8)
    across = dtsim.simulate(parameters_b=300, hierarchical=True, nodes_per_group=2)
    assert inside.details["pp_regional"] and not across.details["pp_regional"]
    assert across.inner_step_s == pytest.approx(
        10 * (T_300B / 24 + (_handoff_s(300e9, 100e6) + 0.1) * f(3)), rel=1e-12
    )
    assert inside.inner_step_s == pytest.approx(
        10 * (T_300B / 24 + (_handoff_s(300e9, 1e9) + 0.02) * f(3)), rel=1e-12
    )
    assert "PP_SPANS_REGIONS" in [w.code for w in across.warnings]


def test_M5_pipeline_groups_have_no_regional_tier():
    r = dtsim.simulate(parameters_b=300, hierarchical=True)
    assert r.details["h_eff"] == 128
    alpha = 0.08 / (1 + math.log10(300) / 5)
    assert r.efficiency_h == pytest.approx(1 - alpha * math.log10(128), rel=1e-12)
