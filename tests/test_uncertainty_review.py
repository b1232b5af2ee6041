"""Regressions from trying the --uncertainty commands as a new user would (issue 14): each was a
traceback, invalid JSON, a hang or a misleading number."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dtsim.analysis.datacenter_uncertainty import describe_fastest
from dtsim.analysis.uncertainty import level_name, parse_levels, share
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app

runner = CliRunner()
STEP = [
    "step",
    "--model",
    "gpt3-175b",
    "--gpu",
    "a100-80gb",
    "--nodes",
    "48",
    "--gbs",
    "1536",
    "--tokens",
    "3e11",
]


def _strict(text: str):
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


@pytest.mark.parametrize(
    "args,field",
    [
        (["sweep", "--vary", "num_nodes=8,64", "--plot", "/nonexistent/p.png"], "--plot"),
        (["sweep", "--vary", "num_nodes=8,64", "--out", "/nonexistent/x.parquet"], "--out"),
        (["sweep", "--vary", "num_nodes=8,64", "--out", "/nonexistent/x.csv"], "--out"),
        (["sensitivity", "--base", "16", "--plot", "/nonexistent/s.png"], "--plot"),
        (["sweep", "--vary", "num_nodes=8,64", "--uncertainty", "8", "--workers", "100000"], "--workers"),
    ],
)
def test_files_that_cannot_be_written_and_too_many_workers_are_clear_errors(args, field):
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert field in res.output and "Traceback" not in res.output


def test_target_json_is_strict_and_an_unreachable_target_says_why_on_stderr():
    res = runner.invoke(app, ["target", "--params-b", "100", "--tokens-t", "2", "--json"])
    assert res.exit_code == 0
    d = _strict(res.stdout)
    assert (
        d["modes"]["pp-over-wan"]["best"] is None or "inner_steps_used" in d["modes"]["pp-over-wan"]["best"]
    )
    never = runner.invoke(app, ["target", "--params-b", "100000", "--tokens-t", "2000", "--json"])
    assert never.exit_code == 2 and "no configuration" in never.stderr
    _strict(never.stdout)


def test_a_layout_that_never_fits_has_no_times_and_no_chance_of_finishing():
    """Draws where the layout does not fit give no step time (its time is not an answer), so the chance
    of finishing in time is undefined, not 98 %."""
    never = [*STEP, "--tp", "1", "--pp", "1"]
    res = runner.invoke(app, [*never, "--uncertainty", "256", "--seed", "1", "--prob", "days<=50", "--json"])
    d = _strict(res.stdout)
    assert d["uncertainty"]["days"]["p50"] is None and d["probabilities"][0]["p"] is None
    assert d["monte_carlo"]["shares"]["fits"] == {"no": 1.0}
    assert any("does not fit in GPU memory on any draw" in w for w in d["monte_carlo"]["warnings"])
    text = runner.invoke(app, [*STEP, "--tp", "1", "--pp", "1", "--uncertainty", "64", "--prob", "days<=50"])
    assert text.exit_code == 0 and "no draw defines days<=50" in text.output


def test_drawn_mfu_above_the_peak_is_flagged():
    plan = ["plan", "--model", "mixtral-8x7b", "--gpu", "tpu-v5p", "--nodes", "64", "--top", "1"]
    res = runner.invoke(app, [*plan, "--uncertainty", "4096", "--seed", "1", "--prob", "mfu>1", "--json"])
    d = _strict(res.stdout)
    if d["probabilities"][0]["p"] > 0:
        assert any("MFU above 100 %" in w for w in d["monte_carlo"]["warnings"])
    else:  # the model moved: the flag must then be absent
        assert not any("MFU above 100 %" in w for w in d["monte_carlo"]["warnings"])


def test_layout_numbers_in_the_fastest_sentence_follow_the_table():
    rows = [{"rank": 1, "p_fastest": 0.0}, {"rank": 2, "p_fastest": 1.0}, {"rank": 3, "p_fastest": 0.0}]
    assert "of the 3 layouts listed, #0 is the fastest" in describe_fastest(rows, first=0)
    assert "next most often fastest is #1 (100%)" in describe_fastest(rows, first=0)
    assert "next most often fastest is #2" in describe_fastest(rows, first=1)
    assert share(0.999) == ">99%" and share(0.001) == "<1%" and share(1.0) == "100%" and share(0.0) == "0%"


def test_an_answer_that_nothing_moves_says_so_and_lists_no_driver():
    res = runner.invoke(
        app, ["target", "--params-b", "100", "--tokens-t", "2", "--uncertainty", "64", "--json"]
    )
    d = _strict(res.stdout)
    mc = d["monte_carlo"]
    assert mc["drivers"]["wall_clock_days"] == []
    assert any("moves this run's days" in w for w in mc["warnings"])
    assert not any("wall_clock_days" in w and "standard error" in w for w in mc["warnings"])


def test_distributions_without_uncertainty_run_at_their_medians_and_say_so():
    for args in (["sweep", "--vary", "num_nodes=8,64"], ["target", "--params-b", "100", "--tokens-t", "2"]):
        res = runner.invoke(app, [*args, "--set", "mfu=0.3..0.5", "--json"])
        assert res.exit_code == 0 and "ran at their medians" in res.stderr
        _strict(res.stdout)


def test_level_names_keep_their_digits():
    assert [level_name(q) for q in parse_levels("2.5,50,99.99999")] == ["p2.5", "p50", "p99.99999"]
    # fractions where percent is asked are refused, naming the field and the way to write them
    with pytest.raises(ScenarioError, match="levels are percentages"):
        parse_levels("0.1,0.5,0.9")
    assert [level_name(q) for q in parse_levels("0.1,50")] == ["p0.1", "p50"]  # tail levels still work
    assert level_name(0.1) == "p10"


def test_datacenter_draw_limit_names_the_rounding_and_what_fits():
    res = runner.invoke(app, [*STEP, "--tp", "8", "--pp", "12", "--uncertainty", "16777216"])
    assert res.exit_code == 2 and "rounded up" in res.output and "at most" in res.output


def test_simulate_report_shows_p50_and_range_beside_each_headline_output():
    """Issue 14 item 6: the Rich report shows `P50 [P10–P90]` beside each headline output."""
    res = runner.invoke(app, ["simulate", "--uncertainty", "256", "--seed", "1"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    wall = next(line for line in res.output.splitlines() if line.startswith("Wall-clock"))
    assert "P50" in wall and "[" in wall and "–" in wall
    mfu = next(line for line in res.output.splitlines() if line.startswith("η-adjusted MFU"))
    assert "P50" in mfu
    plain = runner.invoke(app, ["simulate"], env={"COLUMNS": "200"})
    assert "P50" not in plain.output


def test_target_takes_probabilities_of_its_own():
    args = ["target", "--params-b", "100", "--tokens-t", "2", "--set", "mfu=0.3..0.5", "--uncertainty", "128"]
    d = _strict(runner.invoke(app, [*args, "--seed", "1", "--prob", "global_mfu>=0.35", "--json"]).stdout)
    assert [p["expr"] for p in d["probabilities"]][1:] == ["global_mfu>=0.35"]
    assert 0 < d["probabilities"][1]["p"] < 1
    alone = runner.invoke(
        app, ["target", "--params-b", "100", "--tokens-t", "2", "--prob", "global_mfu>=0.35"]
    )
    assert alone.exit_code == 2 and "needs --uncertainty" in alone.output


def test_answers_take_any_levels_and_a_zero_seed_alone_is_refused():
    """Review: --levels without 10/90 crashed target's answer check; --seed 0 without --uncertainty was
    taken as not given (0 == False)."""
    args = ["target", "--params-b", "100", "--tokens-t", "2", "--uncertainty", "16", "--levels", "25,50,75"]
    d = _strict(runner.invoke(app, [*args, "--json"]).stdout)
    assert set(d["uncertainty"]["wall_clock_days"]) >= {"p25", "p50", "p75"}
    for cmd in (["simulate"], ["step", "--model", "gpt2"], ["sweep", "--vary", "num_nodes=8,64"]):
        res = runner.invoke(app, [*cmd, "--seed", "0"])
        assert res.exit_code == 2 and "needs --uncertainty" in res.output, cmd


def test_a_searched_configuration_runs_as_the_search_evaluated_it():
    """Review: the search evaluates every configuration with regional_steps auto; the configuration's
    scenario fields say so, so its Monte Carlo runs the same run."""
    from dtsim.analysis.search import configuration_fields
    from dtsim.analysis.space_options import space_from_options

    space = space_from_options(["16x-h100-sxm"], 1000, None, None, None, None, None, None, 100.0, "fp16")
    f = configuration_fields(space.nodes[0], 64, 100.0, "auto", 16.0, 8, 1.0)
    assert f["regional_steps"] == "auto" and f["hierarchical"] and f["nodes_per_group"] == 8


def test_in_time_counts_a_draw_that_cannot_run_as_late():
    from dtsim.analysis.uncertainty import answer_monte_carlo, load_uncertain_scenario

    base, dists = load_uncertain_scenario(None, "governance", ["mfu=0.3..0.5"], fixed_assumptions=True)
    fields = {"num_nodes": 3, "gpu": "h100-sxm", "gpus_per_node": 16, "parameters_b": 100.0}
    mc = answer_monte_carlo(base, fields, 2.0, dists, 64, 1e6, seed=1)
    p = mc.probabilities[0]
    assert p["defined"] == 1.0 and p["undefined_counts_as"] is False and 0.0 <= p["p"] <= 1.0
