"""Failures and goodput: the closed forms of physics/failures.py against a discrete-event simulation of
the same process (fixed seeds), and the way the decentralized model uses them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import dtsim
from dtsim.physics import failures


def _simulate_restart(tau, delta, restart, mtbf, segments, rng):
    """Discrete events: segments of τ work + δ checkpoint; an exponential failure inside a segment
    loses it and costs a restart R before it is tried again. Returns kept work / wall-clock time."""
    clock = 0.0
    need = tau + delta
    done = 0
    while done < segments:
        x = rng.exponential(mtbf)
        if x >= need:
            clock += need
            done += 1
        else:
            clock += x + restart
    return segments * tau / clock


def _simulate_elastic(round_s, rejoin, mtbf, horizon_rounds, rng):
    """One replica: joins at a boundary, fails after X ~ Exp(M), keeps ⌊X/T⌋ rounds, is down R and
    rejoins at the next boundary. Returns kept rounds / elapsed rounds."""
    kept = elapsed = 0
    while elapsed < horizon_rounds:
        x = rng.exponential(mtbf)
        kept += math.floor(x / round_s)
        elapsed += math.ceil((x + rejoin) / round_s)
    return kept / elapsed


@pytest.mark.parametrize(
    ("delta", "restart", "mtbf"),
    [(60.0, 600.0, 3600.0 * 8), (300.0, 1800.0, 3600.0 * 4), (30.0, 120.0, 3600.0 * 50)],
)
def test_restart_goodput_matches_a_discrete_event_simulation(delta, restart, mtbf):
    rng = np.random.default_rng(20261125)
    tau = float(failures.daly_interval_s(delta, mtbf))
    closed = float(failures.restart_goodput(tau, delta, restart, mtbf))
    simulated = _simulate_restart(tau, delta, restart, mtbf, 40_000, rng)
    assert abs(simulated - closed) / closed < 0.02
    assert 0 < closed < 1


@pytest.mark.parametrize(
    ("round_s", "rejoin", "mtbf"),
    [(1800.0, 900.0, 3600.0 * 24), (600.0, 2000.0, 3600.0 * 6), (3600.0, 300.0, 3600.0 * 100)],
)
def test_elastic_goodput_matches_a_discrete_event_simulation(round_s, rejoin, mtbf):
    rng = np.random.default_rng(7)
    closed = float(failures.elastic_goodput(round_s, rejoin, mtbf))
    simulated = _simulate_elastic(round_s, rejoin, mtbf, 2_000_000, rng)
    assert abs(simulated - closed) / closed < 0.02
    assert 0 < closed < 1


def test_daly_interval_is_the_optimum_of_the_restart_model():
    """Daly's interval sits at the minimum of the expected time per unit of work (within the 1 % his
    higher-order estimate promises for δ ≪ M), and reduces to Young's √(2δM) to first order."""
    delta, restart, mtbf = 120.0, 600.0, 3600.0 * 10
    tau = float(failures.daly_interval_s(delta, mtbf))
    grid = np.linspace(tau * 0.3, tau * 3, 2001)
    best = grid[np.argmax(failures.restart_goodput(grid, delta, restart, mtbf))]
    assert abs(best - tau) / tau < 0.01
    assert abs(tau + delta - math.sqrt(2 * delta * mtbf)) / math.sqrt(2 * delta * mtbf) < 0.05
    assert float(failures.daly_interval_s(10 * mtbf, mtbf)) == mtbf  # δ ≥ 2M: checkpoint every M


def test_no_failures_means_goodput_one():
    assert failures.restart_goodput(100.0, 10.0, 60.0, np.inf) == 1.0
    assert failures.elastic_goodput(100.0, 60.0, np.inf) == 1.0
    r = dtsim.simulate(num_nodes=8)
    assert r.goodput == 1.0


def test_the_model_charges_failures_by_mode():
    """DiLoCo replicas rejoin (elastic goodput over the outer step, with the restart and the model's
    download as the rejoin time); a synchronous pipeline over the WAN restarts from checkpoints."""
    from dtsim.assumptions import Assumptions

    asm = Assumptions({})
    base = {"num_nodes": 8, "node": "dgx-h100", "parameters_b": 10, "tokens_t": 1, "bandwidth_mbps": 1000}
    r = dtsim.simulate(base | {"node_mtbf_hours": 200})
    rejoin = asm.restart_s + 8 * 10e9 * 2 / 1e9  # fp16 model over the 1 Gbit/s download
    expected = float(failures.elastic_goodput(r.outer_step_s, rejoin, 200 * 3600))
    assert r.mode == "flat-diloco" and r.goodput == pytest.approx(expected, rel=1e-12)
    assert r.wall_clock_days == pytest.approx(r.failure_free_days / r.goodput, rel=1e-12)
    assert dtsim.simulate(base).wall_clock_days == pytest.approx(r.failure_free_days, rel=1e-12)

    pipe = {"num_nodes": 3, "parameters_b": 200, "vram_per_node_gb": 1500, "tokens_t": 0.01}
    p = dtsim.simulate(pipe | {"node_mtbf_hours": 500})
    assert p.mode == "pp-over-wan"
    stages = p.pp_stages
    checkpoint = 8 * 200e9 * 16 / stages / (asm.checkpoint_write_gbps * 1e9)
    job = 500 * 3600 / stages
    tau = float(failures.daly_interval_s(checkpoint, job))
    expected = float(failures.restart_goodput(tau, checkpoint, asm.restart_s + checkpoint, job))
    assert p.goodput == pytest.approx(expected, rel=1e-12) and 0 < p.goodput < 1

    # a pipeline of DiLoCo replicas (mode C): each of its S nodes fetches its stage's 1/S of the model
    # over its own link, at once (a trial user's case: the whole model over one link was charged)
    c = dtsim.simulate(parameters_b=600, node_mtbf_hours=100)
    assert c.mode == "pp-group-diloco"
    rejoin = asm.restart_s + 8 * 600e9 * 2 / c.pp_stages / 100e6  # fp16, the default 100 Mbit/s
    expected = float(failures.elastic_goodput(c.outer_step_s, rejoin, 100 * 3600 / c.pp_stages))
    assert c.details["rejoin_goodput"] == pytest.approx(expected, rel=1e-12)
    # ... and a replica that loses a 40-hour round per failure does better checkpointing (next test)
    assert c.recovery == "restart" and c.goodput == c.details["restart_goodput"] > expected


def test_a_deep_pipeline_replica_checkpoints_instead_of_losing_its_round():
    """A trial user's case: 60 nodes of a 2-trillion-parameter model at a 10-hour node MTBF took 3e245
    days, every failure losing the pipeline's whole round since the last outer step. Checkpointing at
    Daly's interval, with the others waiting at the sync for the failed replica, keeps more: the model
    takes the better way and says which (`recovery`)."""
    from dtsim.assumptions import Assumptions

    asm = Assumptions({})
    r = dtsim.simulate(parameters_b=2000, num_nodes=60, node_mtbf_hours=10)
    assert r.mode == "pp-group-diloco" and r.recovery == "restart"
    used = r.pp_groups * r.pp_stages
    checkpoint = 8 * r.memory_per_node_gb * 1e9 / (asm.checkpoint_write_gbps * 1e9)
    job = 10 * 3600 / used
    tau = float(failures.daly_interval_s(checkpoint, job))
    expected = float(failures.restart_goodput(tau, checkpoint, asm.restart_s + checkpoint, job))
    assert r.goodput == pytest.approx(expected, rel=1e-12)
    assert r.details["rejoin_goodput"] < 1e-100 < r.goodput  # rejoining would never finish
    assert r.wall_clock_days == pytest.approx(r.failure_free_days / r.goodput, rel=1e-12)
    (w,) = [w for w in r.warnings if w.code == "LOW_GOODPUT"]
    assert "checkpoints" in w.message and "rejoining without checkpoints" in w.message
    # flat DiLoCo with short rounds keeps rejoining
    assert dtsim.simulate(num_nodes=8, node_mtbf_hours=200).recovery == "rejoin"
    assert dtsim.simulate(num_nodes=8).recovery == "none"


def test_a_node_of_a_hierarchy_rejoins_its_region_at_the_next_regional_sync():
    """A trial user's case: at a 1-hour node MTBF a hierarchy showed goodput 0.003 where flat showed 0.07,
    every failure charged a whole global cycle (16 regional rounds). A node of a regional group loses its
    inner steps since the last regional sync, fetches the regional model over the regional link and
    rejoins at the next regional sync."""
    from dtsim.assumptions import Assumptions

    asm = Assumptions({})
    base = {"num_nodes": 64, "nodes_per_group": 8, "node_mtbf_hours": 1}
    h = dtsim.simulate(base | {"hierarchical": True})
    assert h.mode == "hierarchical-diloco" and h.recovery == "rejoin" and h.regional_steps_used > 1
    model_bits = 8 * h.details["parameters_held"] * 2  # fp16 values, in bits
    rejoin = asm.restart_s + model_bits / (h.scenario["regional_bandwidth_mbps"] * 1e6)
    round_s = h.outer_step_s / h.regional_steps_used
    expected = float(failures.elastic_goodput(round_s, rejoin, 3600))
    assert h.goodput == pytest.approx(expected, rel=1e-12)
    flat = dtsim.simulate(base | {"hierarchical": False})
    assert flat.recovery == "rejoin" and h.goodput > 5 * flat.goodput  # 0.43 against 0.07
    (w,) = [w for w in h.warnings if w.code == "LOW_GOODPUT"]
    assert "since the last regional sync" in w.message


def test_failures_are_the_bottleneck_when_they_cost_more_than_any_part():
    r = dtsim.simulate(num_nodes=64, hierarchical=False, node_mtbf_hours=1)
    lost = r.outer_step_s * (1 / r.goodput - 1)
    assert lost > max(v or 0 for v in r.breakdown_s.values())
    assert r.bottleneck == "failures" and r.bottleneck_share == pytest.approx(1 - r.goodput, rel=1e-12)
    mild = dtsim.simulate(num_nodes=64, hierarchical=False, node_mtbf_hours=1e5)
    assert mild.bottleneck in mild.breakdown_s and 0.999 < mild.goodput < 1
    share = mild.breakdown_s[mild.bottleneck] / mild.outer_step_s * mild.goodput
    assert mild.bottleneck_share == pytest.approx(share, rel=1e-12)
    # the batch decodes the same words, row for row
    batch = dtsim.simulate_batch({"num_nodes": 64, "hierarchical": False}, node_mtbf_hours=np.array([1, 1e5]))
    assert list(batch["bottleneck"]) == ["failures", mild.bottleneck]
    assert list(batch["recovery"]) == ["rejoin", "rejoin"]
    skip = {"scenario", "cost_sources", "mfu_source"}  # a batch row has no scenario object
    assert batch.result(0).model_dump(exclude=skip) == r.model_dump(exclude=skip)


def test_low_goodput_is_said_and_a_run_that_never_ends_has_no_times():
    r = dtsim.simulate(num_nodes=8, node_mtbf_hours=5)
    (w,) = [w for w in r.warnings if w.code == "LOW_GOODPUT"]
    assert "Goodput" in w.message and "rejoins" in w.message
    never = dtsim.simulate(parameters_b=2000, num_nodes=40, node_mtbf_hours=0.01)  # neither way finishes
    assert never.goodput == 0 and never.wall_clock_days is None
    assert any("never finishes" in w.message for w in never.warnings)
    assert dtsim.simulate(num_nodes=8, node_mtbf_hours=1e6).goodput > 0.99


def test_a_goodput_so_small_its_time_overflows_is_a_run_that_never_ends_without_numpy_warnings():
    # a trial user's sweep: RuntimeWarnings from the engine on stderr, and a goodput of 1e-310 (the time
    # overflows); those rows now have no times, and nothing overflows (nor do the GPU-hours and energy of
    # the rows just past them, whose times are finite)
    import warnings

    base = {"parameters_b": 2000, "num_nodes": 40}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        batch = dtsim.simulate_batch(base, node_mtbf_hours=np.linspace(0.0131, 0.0143, 13))
        single = dtsim.simulate(base | {"node_mtbf_hours": 0.0127})
    assert 0 < single.goodput < 1e-300 and single.wall_clock_days is None and single.effective_days is None
    assert any("never finishes" in w.message for w in single.warnings)
    days = batch["wall_clock_days"]
    assert np.isnan(days[0]) and np.all(np.isfinite(days[1:]))
    assert np.all(np.diff(days[1:]) < 0)  # a longer MTBF, a shorter run


def test_failures_leave_the_steps_own_largest_part_to_what_reads_it():
    """A review's cases: with failures the bottleneck, SYNC_NOT_HIDDEN said "compute is still the largest
    part" of a network-bound step, and limiting_group moved from the slowest-compute group to the
    slowest-link one. Both read the step's own largest part; the web badge gives bottleneck_share."""
    from dtsim.interfaces.web.results import bottleneck_text

    r = dtsim.simulate(num_nodes=64, node_mtbf_hours=5)
    assert r.bottleneck == "failures"
    largest = max(r.breakdown_s, key=lambda k: r.breakdown_s[k] or 0)
    assert largest == "global_sync"
    (w,) = [w for w in r.warnings if w.code == "SYNC_NOT_HIDDEN"]
    assert "the run is network-bound" in w.message and "compute is still" not in w.message
    groups = [
        {"count": 4, "node": "dgx-h100", "region": "us-east", "bandwidth_mbps": 100000},
        {"count": 4, "node": "dgx-b200", "region": "us-east", "bandwidth_mbps": 10000},
    ]
    calm = dtsim.simulate(node_groups=groups, parameters_b=10)
    failing = dtsim.simulate(node_groups=groups, parameters_b=10, node_mtbf_hours=0.1)
    assert failing.bottleneck == "failures" and failing.limiting_group == calm.limiting_group == 0
    mild = dtsim.simulate(num_nodes=64, node_mtbf_hours=20)
    assert bottleneck_text(mild) == f"bottleneck: global sync ({mild.bottleneck_share:.0%})"
    assert bottleneck_text(r) == f"bottleneck: lost to failures ({r.bottleneck_share:.0%})"


def test_recovery_is_a_text_output_everywhere_the_others_are():
    """`recovery` decodes in batches, grids and --uncertainty (its share, and --prob on it)."""
    from dtsim.analysis import uncertainty as unc
    from dtsim.models.decentralized.engine import TEXT_OUTPUTS

    assert {name: code for name, (code, _) in TEXT_OUTPUTS.items()} == unc.CODED
    scenario, dists = unc.load_uncertain_scenario(
        fields={"parameters_b": 600}, set_texts=["node_mtbf_hours=5..500"], fixed_assumptions=True
    )
    mc = unc.run_monte_carlo(scenario, dists, 128, seed=1, probs=["recovery==restart"])
    assert set(mc.shares["recovery"]) <= {"rejoin", "restart"} and sum(mc.shares["recovery"].values()) == 1
    assert mc.probabilities[0]["p"] == pytest.approx(mc.shares["recovery"].get("restart", 0.0))


def test_a_searched_pipeline_answer_carries_no_inner_steps():
    """A review's case: target's pp-over-wan winner carried inner_steps (the search gives every row
    some), so its own warnings said FIELDS_IGNORED and its `--set` line named a field it does not use."""
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    args = ["target", "--params-b", "2000", "--tokens-t", "0.003", "--objective", "time", "-n", "dgx-h100"]
    out = CliRunner().invoke(app, [*args, "--max-nodes", "64", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["winner"]["mode"] == "pp-over-wan"
    assert "FIELDS_IGNORED" not in {w["code"] for w in data["winner_warnings"]}
    solve = ["target", "--solve", "days", "--params-b", "2000", "--tokens-t", "0.003", "-n", "dgx-h100"]
    out = CliRunner().invoke(app, [*solve, "--set", "num_nodes=50", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert "inner_steps" not in data["scenario_fields"]
    assert "FIELDS_IGNORED" not in {w["code"] for w in data["warnings"]}


def test_one_replica_restarts_and_the_failure_models_inputs_are_in_details():
    """A trial user's cases: a single node "rejoined" (fetching the model from nobody), and the round,
    rejoin time, checkpoint and interval behind a goodput were nowhere to check by hand."""
    from dtsim.assumptions import Assumptions

    asm = Assumptions({})
    one = dtsim.simulate(num_nodes=1, node_mtbf_hours=50)
    assert one.mode == "flat-diloco" and one.recovery == "restart"
    assert one.details["rejoin_goodput"] is None and one.goodput == one.details["restart_goodput"]
    r = dtsim.simulate(dtsim.load_scenario(preset="intellect-1", overrides={"node_mtbf_hours": 3}))
    d = r.details
    assert d["failure_round_s"] == pytest.approx(r.outer_step_s, rel=1e-12)
    fetch = 8 * d["parameters_held"] * 2 / (r.scenario["bandwidth_down_mbps"] * 1e6)
    assert d["rejoin_s"] == pytest.approx(asm.restart_s + fetch, rel=1e-9)
    assert d["job_mtbf_s"] == pytest.approx(3 * 3600 / 11, rel=1e-12)
    expected = float(failures.elastic_goodput(d["failure_round_s"], d["rejoin_s"], 3 * 3600))
    assert r.goodput == pytest.approx(expected, rel=1e-12)
    tau = float(failures.daly_interval_s(d["checkpoint_s"], d["job_mtbf_s"]))
    assert d["checkpoint_interval_s"] == pytest.approx(tau, rel=1e-12)
    assert dtsim.simulate(num_nodes=8).details["rejoin_s"] is None  # no failures: no such numbers


def test_auto_quality_weighs_what_failures_cost():
    """A trial user's case: inner_steps auto-quality picked H = 75 at every MTBF, and at 0.3 h that ran
    235 days where H = 20 ran 145. The objective is per wall-clock day, failures included."""
    base = dtsim.load_scenario(preset="intellect-1", overrides={"inner_steps": "auto-quality"})
    chosen = {m: dtsim.simulate(base.replace(node_mtbf_hours=m)) for m in (1e6, 3, 0.3)}
    hs = [chosen[m].inner_steps_used for m in (1e6, 3, 0.3)]
    assert hs[0] > hs[1] > hs[2]
    fast = chosen[0.3]

    def per_day(r):
        return r.quality_adjusted_flop / r.wall_clock_days

    for h in (max(1, fast.inner_steps_used - 1), fast.inner_steps_used + 1, 20, 75):
        other = dtsim.simulate(base.replace(node_mtbf_hours=0.3, inner_steps=h))
        assert per_day(fast) >= per_day(other) * (1 - 1e-12), h


def test_goodput_is_a_headline_where_failures_are_modelled():
    """A trial user's case: --uncertainty gave no goodput range and /api/sweep no goodput, bottleneck or
    recovery, though both model failures."""
    from fastapi.testclient import TestClient

    from dtsim.analysis import uncertainty as unc
    from dtsim.interfaces.api.app import create_app

    scenario, dists = unc.load_uncertain_scenario(
        preset="intellect-1", set_texts=["node_mtbf_hours=lognormal:5:1"], fixed_assumptions=True
    )
    mc = unc.run_monte_carlo(scenario, dists, 128, seed=1)
    assert 0 < mc.outputs["goodput"]["p10"] < mc.outputs["goodput"]["p90"] <= 1
    plain, dists = unc.load_uncertain_scenario(set_texts=["mfu=0.3..0.5"], fixed_assumptions=True)
    assert "goodput" not in unc.run_monte_carlo(plain, dists, 128, seed=1).outputs  # no failures: no row

    client = TestClient(create_app(ui=False))
    r = client.post("/api/sweep?preset=intellect-1", json={"field": "node_mtbf_hours", "values": [3, 30]})
    assert r.status_code == 200, r.text
    body = r.json()
    singles = [
        dtsim.simulate(dtsim.load_scenario(preset="intellect-1", overrides={"node_mtbf_hours": m}))
        for m in (3, 30)
    ]
    assert body["columns"]["goodput"] == pytest.approx([s.goodput for s in singles], rel=1e-12)
    assert body["bottleneck"] == [s.bottleneck for s in singles]
    assert body["recovery"] == [s.recovery for s in singles] == ["rejoin", "rejoin"]


def test_auto_quality_over_a_varied_mtbf_runs_in_a_batch_as_single_runs_do():
    """A review's case: auto-quality with only node_mtbf_hours varied crashed the batch path (sweeps,
    --uncertainty, /api/sweep) on a broadcast of rows × candidates."""
    base = dtsim.load_scenario(preset="intellect-1", overrides={"inner_steps": "auto-quality"})
    mtbf = np.array([0.3, 3.0, 1e6])
    batch = dtsim.simulate_batch(base, node_mtbf_hours=mtbf)
    singles = [dtsim.simulate(base.replace(node_mtbf_hours=float(m))) for m in mtbf]
    assert list(batch["inner_steps_used"]) == [s.inner_steps_used for s in singles] == [17, 45, 75]
    assert batch["wall_clock_days"] == pytest.approx([s.wall_clock_days for s in singles], rel=1e-12)


def test_a_searched_answer_over_a_preset_names_none_of_its_values_as_set():
    """A review's case: target over intellect-1 rebuilt its answer from every field of the base, so the
    preset's inner_steps counted as given and the pp-over-wan answer said FIELDS_IGNORED."""
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    args = ["target", "--preset", "intellect-1", "--solve", "days", "--params-b", "400", "--tokens-t", "1"]
    out = CliRunner().invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    sim = dtsim.simulate(dtsim.load_scenario(preset="intellect-1", overrides=data["scenario_fields"]))
    assert sim.mode == "pp-over-wan"  # the mode that has no use for the preset's inner_steps
    assert "FIELDS_IGNORED" not in {w["code"] for w in data["warnings"]}


def test_a_sweep_with_failures_bands_its_goodput():
    """A trial user's case: `sweep --uncertainty` over node_mtbf_hours gave no goodput band."""
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    def points(*vary):
        args = [
            "sweep",
            "--preset",
            "intellect-1",
            *vary,
            "--uncertainty",
            "64",
            "--seed",
            "1",
            "--json",
            "-q",
        ]
        out = CliRunner().invoke(app, args)
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)["points"]

    failing = points("--vary", "node_mtbf_hours=3,30")
    assert all(p["goodput_p10"] <= p["goodput_p50"] <= p["goodput_p90"] <= 1 for p in failing)
    assert failing[0]["goodput_p50"] < failing[1]["goodput_p50"]  # a longer MTBF keeps more
    assert "goodput_p10" not in points("--vary", "num_nodes=8,16")[0]  # no failures: no band
