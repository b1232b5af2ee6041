"""`sweep --uncertainty N` (issue 14, items 2, 5 and 6): every grid point's headline outputs at P10/P50/P90
over the same draws, bands on the plots, and grids on Dask with the same numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dtsim.analysis.grid import add_bands, parse_vary, run_grid
from dtsim.analysis.uncertainty import load_uncertain_scenario, run_monte_carlo
from dtsim.interfaces.cli.main import app

runner = CliRunner()


def _bands(set_texts, axes, n=128, seed=3, fixed=False, **options):
    scenario, dists = load_uncertain_scenario(None, None, set_texts, fixed_assumptions=fixed)
    grid = run_grid(scenario, [parse_vary(a) for a in axes], **options)
    add_bands(grid, scenario, dists, n, seed, **options)
    return scenario, dists, grid


def test_each_points_band_is_that_points_monte_carlo():
    """The quantiles at a grid point equal `simulate --uncertainty` of the scenario with that point's
    value, same seed: the same draws (common to every point) through the same batch path."""
    scenario, dists, grid = _bands(["mfu=0.3..0.5", "latency_ms=lognormal:100:0.3"], ["num_nodes=8,72,300"])
    for i, nodes in enumerate((8, 72, 300)):
        mc = run_monte_carlo(scenario.model_copy(update={"num_nodes": nodes}), dists, 128, seed=3)
        for out in ("wall_clock_days", "global_mfu", "cost_usd"):
            for q in ("p10", "p50", "p90"):
                assert grid.columns[f"{out}_{q}"][i] == pytest.approx(mc.outputs[out][q], rel=1e-12), (out, q)
        assert grid.columns["feasible_share"][i] == pytest.approx(mc.shares["feasible"].get("yes", 0.0))


def test_nothing_uncertain_gives_bands_equal_to_the_point():
    """Done-when: with --fixed-assumptions and no distribution, P10 = P50 = P90 = the point everywhere."""
    _, _, grid = _bands([], ["num_nodes=8,72", "bandwidth_mbps=10,1000"], n=16, fixed=True)
    for out in ("wall_clock_days", "global_mfu", "energy_kwh"):
        for q in ("p10", "p50", "p90"):
            np.testing.assert_array_equal(grid.columns[f"{out}_{q}"], grid.columns[out])


def test_bands_widen_with_the_spread_of_an_input():
    fast = "bandwidth_mbps=100000"  # compute-bound, so the MFU moves the wall-clock time
    _, _, narrow = _bands(["mfu=0.39..0.41", fast], ["num_nodes=72"], fixed=True)
    _, _, wide = _bands(["mfu=0.2..0.6", fast], ["num_nodes=72"], fixed=True)
    width = lambda g: g.columns["wall_clock_days_p90"][0] - g.columns["wall_clock_days_p10"][0]  # noqa: E731
    assert width(wide) > 5 * width(narrow) > 0


def test_the_same_numbers_on_a_local_dask_cluster():
    """Done-when (item 5): grids and their bands computed by two worker processes equal one process."""
    pytest.importorskip("distributed")
    axes = ["num_nodes=8:512:40:log", "bandwidth_mbps=10,100,1000"]
    from dtsim.analysis import grid as grid_mod

    _, _, one = _bands(["mfu=0.3..0.5"], axes, n=64)
    old = grid_mod.CHUNK
    try:
        grid_mod.CHUNK = 1 << 10  # several blocks, so both workers get some
        _, _, two = _bands(["mfu=0.3..0.5"], axes, n=64, scheduler="local", workers=2)
    finally:
        grid_mod.CHUNK = old
    assert set(one.columns) == set(two.columns)
    for k, v in one.columns.items():
        np.testing.assert_array_equal(np.asarray(v), np.asarray(two.columns[k]), err_msg=k)


def test_cli_json_plot_and_text(tmp_path):
    png = tmp_path / "band.png"
    args = ["sweep", "--vary", "num_nodes=8,72,144", "--set", "mfu=0.3..0.5", "--uncertainty", "64"]
    res = runner.invoke(app, [*args, "--seed", "2", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert d["uncertainty"]["draws_per_point"] == 64 and d["uncertainty"]["seed"] == 2
    assert "mfu" in d["uncertainty"]["inputs"]
    row = d["points"][1]
    assert row["wall_clock_days_p10"] <= row["wall_clock_days_p50"] <= row["wall_clock_days_p90"]
    text = runner.invoke(app, [*args, "--plot", str(png)], terminal_width=200)
    assert text.exit_code == 0, text.output
    assert "P10 / P50 / P90" in text.output and "seed" in text.output and png.stat().st_size > 5000
    plain = json.loads(runner.invoke(app, ["sweep", "--vary", "num_nodes=8,72", "--json"]).output)
    assert isinstance(plain, list)  # without --uncertainty the records are as they were


def test_a_point_with_no_defined_draw_is_null_in_json():
    """An output undefined on every draw at a point is null (JSON has no NaN), not NaN or a crash."""
    res = runner.invoke(
        app,
        [
            "sweep",
            "--vary",
            "num_nodes=1,8",
            "--uncertainty",
            "8",
            "--seed",
            "1",
            "--json",
            "--metric",
            "outer_step_s",
        ],
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.output, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    for row in d["points"]:
        for k, v in row.items():
            assert v is None or not isinstance(v, float) or math.isfinite(v), k


@pytest.mark.parametrize(
    "args,field,needle",
    [
        (["--seed", "1"], "--seed", "needs --uncertainty"),
        (["--uncertainty", "8", "--set", "num_nodes=8..64"], "--vary", "vary it or draw"),
        (["--uncertainty", "100000"], "--uncertainty", "per grid point"),
        (["--uncertainty", "8", "--scheduler", "http://x"], "--scheduler", "tcp://host:port"),
        (["--uncertainty", "8", "--corr", "mfu,latency_ms=0.5"], "--corr", "not an uncertain input"),
    ],
)
def test_bad_sweep_uncertainty_input_names_the_field(args, field, needle):
    res = runner.invoke(app, ["sweep", "--vary", "num_nodes=8,72", "--fixed-assumptions", *args])
    if args[0] == "--seed":
        res = runner.invoke(app, ["sweep", "--vary", "num_nodes=8,72", *args])
    assert res.exit_code == 2, res.output
    assert field in res.output and needle in res.output and "Traceback" not in res.output


def test_a_grid_draws_the_assumptions_any_of_its_points_reads():
    """The unread-assumption screen over a sweep: a grid of flat and hierarchical points draws the
    hierarchical exponent (the hierarchies read it), a flat grid holds it, and both say what they held."""
    _, _, flat = _bands([], ["num_nodes=8,16"], n=16)
    _, _, mixed = _bands([], ["num_nodes=8,64", "hierarchical=false,true"], n=16)
    assert "assumptions.hierarchical_h_exponent" in flat.bands.unread
    assert "assumptions.hierarchical_h_exponent" in mixed.bands.inputs
    assert "assumptions.hierarchical_h_exponent" not in mixed.bands.unread
    assert flat.bands.as_dict()["unread"] == flat.bands.unread
    res = runner.invoke(
        app, ["sweep", "--vary", "num_nodes=8,16", "-q", "--uncertainty", "16", "--seed", "1"]
    )
    assert res.exit_code == 0, res.output
    assert "none changes an output at any screened grid point" in " ".join(res.output.split())
