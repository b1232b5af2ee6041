"""`step --uncertainty` and `plan --uncertainty` (issue 14, items 2 and 4): the model's measured error and
the assumptions table's distributions drawn together through the datacenter step."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dtsim.analysis.datacenter_uncertainty import MODEL_ERROR, datacenter_inputs, datacenter_monte_carlo
from dtsim.assumptions import distributions
from dtsim.interfaces.cli.main import app
from dtsim.models.datacenter import model_error
from dtsim.models.datacenter.step import ASSUMPTIONS_READ, step, step_draws
from dtsim.models.datacenter.workload import Cluster, Layout, Workload

runner = CliRunner()

W = Workload(
    model="gpt3-175b",
    cluster=Cluster(gpu="a100-80gb", nodes=48, gpus_per_node=8),
    layout=Layout(tp=8, pp=12, mbs=1, gbs=1536),
    tokens=3e11,
)
STEP = ["step", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--nodes", "48", "--tp", "8", "--pp", "12"]
STEP += ["--gbs", "1536"]


def _json(args):
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_assumptions_read_by_the_step_are_the_listed_ones(monkeypatch):
    """ASSUMPTIONS_READ (what step/plan --uncertainty may draw) is what the datacenter step reads,
    recorded over layouts reaching ZeRO-3, FP8, materialised attention, data-parallel buckets and a run."""
    from dtsim import assumptions as asm_mod

    seen = set()
    original = asm_mod.Assumptions.__getattr__

    def record(self, name):
        seen.add(name)
        return original(self, name)

    monkeypatch.setattr(asm_mod.Assumptions, "__getattr__", record)
    h100 = Cluster(gpu="h100-sxm", nodes=4, gpus_per_node=8)
    step(W)
    step(Workload(model="gpt3-175b", cluster=h100, layout=Layout(tp=8, pp=4, gbs=64, zero=3), tokens=1e9))
    step(Workload(model="gpt3-175b", cluster=h100, precision="fp8", layout=Layout(tp=8, pp=4, gbs=64)))
    step(Workload(model="gpt3-175b", cluster=h100, layout=Layout(tp=8, pp=4, gbs=64, flash_attention=False)))
    read = {n for n in seen if not n.startswith("__") and n != "ndim"}
    assert read == set(ASSUMPTIONS_READ)


def test_step_draws_with_per_draw_assumptions_equal_single_steps_with_those_values():
    """A draw's assumption values give exactly what `step` gives with them as overrides."""
    rng = np.random.default_rng(4)
    n = 6
    rows = {k: d.ppf(rng.random(n)) for k, d in distributions(ASSUMPTIONS_READ).items()}
    layouts = [W.layout, Layout(tp=4, pp=24, gbs=1536, zero=3)]
    drawn = step_draws(W, layouts, rows)
    for j, layout in enumerate(layouts):
        for i in range(n):
            one = step(
                W.model_copy(
                    update={"layout": layout, "assumptions": {k: float(v[i]) for k, v in rows.items()}}
                )
            )
            assert drawn[j]["step_time_s"][i] == pytest.approx(one.step_time_s, rel=1e-12)
            assert drawn[j]["memory_per_gpu_gb"][i] == pytest.approx(one.memory_per_gpu_gb, rel=1e-12)
            assert bool(drawn[j]["fits"][i]) == one.fits


def test_model_error_quantile_function_passes_through_the_interval_bounds():
    """The score drawn for the model error has the conformal bounds as its quantiles: P10/P90 are the
    80 % interval's ends, P2.5/P97.5 the 95 % ones, held beyond them; the median is the table's."""
    t = model_error.table()
    q = model_error.score_quantile(np.asarray([0.0, 0.025, 0.1, 0.5, 0.9, 0.975, 1.0]))
    b80, b95 = t["bounds"]["0.8"], t["bounds"]["0.95"]
    assert q.tolist() == [
        b95["low"],
        b95["low"],
        b80["low"],
        t["median"],
        b80["high"],
        b95["high"],
        b95["high"],
    ]
    assert np.all(np.diff(model_error.score_quantile(np.linspace(0, 1, 101))) >= 0)


def test_fixed_assumptions_give_the_model_error_interval_of_step():
    """With the table held, only the model error varies: P10 and P90 of the step time are (to the
    Monte Carlo's resolution) step's own 80 % interval, the P50 the point × exp(median score)."""
    point = step(W)
    res = datacenter_monte_carlo(W, [W.layout], 4096, seed=2, fixed_assumptions=True)
    s = res.mc.outputs["step_time_s"]
    assert s["p10"] == pytest.approx(point.step_time_s_p10, rel=0.005)
    assert s["p90"] == pytest.approx(point.step_time_s_p90, rel=0.005)
    assert s["p50"] == pytest.approx(point.step_time_s * np.exp(model_error.table()["median"]), rel=0.005)
    assert res.mc.outputs["memory_per_gpu_gb"]["p10"] == res.mc.outputs["memory_per_gpu_gb"]["p90"]
    assert list(res.mc.inputs) == [MODEL_ERROR]


def test_assumptions_widen_the_range_and_move_memory():
    """Drawing the table too keeps the step time's range at least the model error's alone — within the
    Monte Carlo error of the two quantiles: the table's draws move this layout's step time little beside
    the model error (its driver, rank correlation 0.999), so the two ranges agree to about 0.5 %, either
    way from seed to seed — and the memory and energy now vary (framework overhead, PUE), each naming its
    driver."""
    held = datacenter_monte_carlo(W, [W.layout], 2048, seed=2, fixed_assumptions=True).mc.outputs
    both = datacenter_monte_carlo(W, [W.layout], 2048, seed=2)
    out = both.mc.outputs
    t, h = out["step_time_s"], held["step_time_s"]
    mc_error = t["quantile_se"]["p10"] + t["quantile_se"]["p90"]
    assert t["p90"] - t["p10"] >= h["p90"] - h["p10"] - mc_error
    assert both.mc.drivers["step_time_s"][0]["input"] == "model_error"
    assert out["memory_per_gpu_gb"]["p90"] > out["memory_per_gpu_gb"]["p10"]
    assert both.mc.drivers["memory_per_gpu_gb"][0]["input"] == "assumptions.framework_overhead_gb"
    assert any(d["input"] == "assumptions.pue" for d in both.mc.drivers["energy_kwh"])


def test_a_calibration_drops_the_model_error_and_says_so():
    """The model error describes the packaged model: with a calibration document only the assumptions
    vary, and a warning says why."""
    res = datacenter_monte_carlo(W, [W.layout], 256, seed=1, calibration=_doc())
    assert MODEL_ERROR not in res.mc.inputs
    assert any("no model-error interval" in w for w in res.mc.warnings)
    assert MODEL_ERROR in datacenter_inputs({}, False, True)
    assert datacenter_inputs({}, True, False) == {}


def test_same_seed_same_numbers_and_nothing_varies_gives_the_point():
    a = datacenter_monte_carlo(W, [W.layout], 512, seed=9)
    b = datacenter_monte_carlo(W, [W.layout], 512, seed=9)
    assert a.mc.outputs == b.mc.outputs
    point = step(W)
    from dtsim.analysis import datacenter_uncertainty as du

    none = du.datacenter_monte_carlo(W, [W.layout], 64, seed=1, fixed_assumptions=True, calibration=_doc())
    s = none.mc.outputs["step_time_s"]
    assert s["p10"] == s["p50"] == s["p90"] == point.step_time_s  # the calibration here is the packaged one


def _doc():
    from dtsim import catalog

    return dict(catalog.calibration_document())


def test_plan_uncertainty_gives_each_layout_its_range_and_chance_of_being_fastest():
    plan = ["plan", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--nodes", "48", "--gbs", "1536"]
    out = _json([*plan, "--top", "4", "--tokens", "3e11", "--uncertainty", "512", "--seed", "5", "--json"])
    rows = out["layout_uncertainty"]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    assert sum(r["p_fastest"] for r in rows) == pytest.approx(1.0)
    for r, ranked in zip(rows, out["layouts"], strict=True):
        assert r["step_time_s"]["p10"] < ranked["step_time_s"] < r["step_time_s"]["p90"]
        assert r["days"]["p10"] < r["days"]["p50"] < r["days"]["p90"]
    assert out["monte_carlo"]["samples"] == 512 and "step_time_s" in out["uncertainty"]


def test_step_cli_uncertainty_json_and_report():
    out = _json(
        [*STEP, "--tokens", "3e11", "--uncertainty", "256", "--seed", "1", "--prob", "days<=50", "--json"]
    )
    assert out["step_time_s"] > 0  # the point output kept as it is
    u = out["uncertainty"]
    assert u["step_time_s"]["p10"] < u["step_time_s"]["p50"] < u["step_time_s"]["p90"]
    assert {"days", "gpu_hours", "energy_kwh", "mfu", "memory_per_gpu_gb"} <= set(u)
    assert out["probabilities"][0]["expr"] == "days<=50"
    assert out["monte_carlo"]["shares"]["fits"] == {"yes": 1.0}
    text = runner.invoke(app, [*STEP, "--uncertainty", "256", "--seed", "1"])
    assert text.exit_code == 0 and "Uncertainty: 256 draws" in text.output and "model_error" in text.output


@pytest.mark.parametrize(
    "args,field,needle",
    [
        (["--seed", "3"], "--seed", "needs --uncertainty"),
        (["--fixed-assumptions"], "--fixed-assumptions", "needs --uncertainty"),
        (["--uncertainty", "0"], "--uncertainty", "whole number"),
        (["--uncertainty", "2000000"], "--uncertainty", "datacenter evaluations"),
        (["--uncertainty", "64", "--prob", "nope<=3"], "--prob", "unknown output"),
        (["--uncertainty", "64", "--levels", "0,50"], "--levels", "above 0"),
    ],
)
def test_step_uncertainty_bad_input_names_the_field(args, field, needle):
    res = runner.invoke(app, [*STEP, *args])
    assert res.exit_code == 2, res.output
    assert field in res.output and needle in res.output and "Traceback" not in res.output


def test_plan_refuses_uncertainty_with_target_params():
    res = runner.invoke(app, ["plan", "--target-params-b", "7", "--uncertainty", "64"])
    assert res.exit_code == 2 and "--target-params-b" in res.output


def test_same_seed_same_numbers_on_a_local_dask_cluster():
    """Blocks of the datacenter Monte Carlo computed by two worker processes equal the single-process run."""
    pytest.importorskip("distributed")
    one = datacenter_monte_carlo(W, [W.layout], 1 << 17, seed=4)
    two = datacenter_monte_carlo(W, [W.layout], 1 << 17, seed=4, scheduler="local", workers=2)
    assert one.mc.outputs == two.mc.outputs


def test_an_assumption_that_changes_no_drawn_output_is_held_and_said():
    """The unread-assumption screen (analysis/uncertainty.py) on the datacenter step: gpt3-175b at
    tp 8 × pp 12 fits at any usable-memory fraction of the table's range, so that fraction changes
    no drawn output and is held (listed under `unread`); each drawn one moves the step time."""
    res = datacenter_monte_carlo(W, [W.layout], 64, seed=1)
    assert res.mc.unread == ["assumptions.usable_memory_fraction"]
    assert res.as_dict()["monte_carlo"]["unread"] == res.mc.unread
    lo, hi = distributions(["usable_memory_fraction"])["usable_memory_fraction"].ppf(
        np.asarray([0.001, 0.999])
    )
    a, b = (step_draws(W, [W.layout], {"usable_memory_fraction": np.asarray([v])})[0] for v in (lo, hi))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert {"assumptions.hbm_efficiency", "assumptions.framework_overhead_gb"} <= set(res.mc.inputs)
