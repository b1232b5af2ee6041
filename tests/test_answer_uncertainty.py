"""`target --uncertainty` and `governance --uncertainty` (issue 14, item 2): how sure a searched answer is —
the configuration found, drawn over the base's distributions and the assumptions table, and the chance it
trains the target's tokens within the time limit."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dtsim.analysis.governance import Cap, analyse, answers_held
from dtsim.analysis.uncertainty import load_uncertain_scenario
from dtsim.interfaces.cli.main import app

runner = CliRunner()
TARGET = ["target", "--params-b", "100", "--tokens-t", "2", "--node", "16x-h100-sxm"]


def _json(args):
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_nothing_uncertain_gives_the_winner_itself():
    """Done-when: with --fixed-assumptions and no distribution, every draw is the winner's point: its
    days at P10 = P50 = P90, and it finishes in time on every draw."""
    out = _json([*TARGET, "--uncertainty", "64", "--fixed-assumptions", "--seed", "1", "--json"])
    days = out["uncertainty"]["wall_clock_days"]
    assert days["p10"] == days["p50"] == days["p90"] == pytest.approx(out["winner"]["days"], rel=1e-9)
    assert out["probabilities"][0]["p"] == 1.0
    assert out["probabilities"][0]["expr"].startswith("wall_clock_days<=547.875")


def test_an_uncertain_base_spreads_the_answer_and_can_miss_the_limit():
    """A wide MFU and a time limit just above the winner's days: some draws miss it, and the P50 sits
    near the winner's point."""
    point = _json([*TARGET, "--set", "mfu=0.2..0.6", "--days", "400", "--json"])
    limit = point["winner"]["days"] * 1.05
    draw = ["--uncertainty", "256", "--seed", "2", "--fixed-assumptions", "--json"]
    out = _json([*TARGET, "--set", "mfu=0.2..0.6", "--days", f"{limit}", *draw])
    days = out["uncertainty"]["wall_clock_days"]
    assert days["p10"] < out["winner"]["days"] < days["p90"]
    assert 0.05 < out["probabilities"][0]["p"] < 0.95
    assert out["monte_carlo"]["inputs"] == {"mfu": "uniform(low=0.2, high=0.6)"}


def test_a_drawn_field_the_answer_sets_is_not_drawn_and_a_warning_says_so():
    # given with --set, a field the search sets is refused outright (it would be ignored)
    res = runner.invoke(app, [*TARGET, "--set", "num_nodes=8..64", "--uncertainty", "16", "--seed", "1"])
    assert res.exit_code == 2 and "search sets num_nodes itself" in " ".join(res.output.split())
    # in a base the library is given, it is not drawn and a warning says so
    from dtsim.interfaces.operations import target_search

    base, dists = load_uncertain_scenario(None, None, ["num_nodes=8..64"], fixed_assumptions=False)
    out = target_search(
        base, dists, params_b=100, tokens_t=2, node=["16x-h100-sxm"], uncertainty=16, seed=1
    ).payload
    assert "num_nodes" not in out["monte_carlo"]["inputs"]
    assert any("num_nodes" in w and "set by the configuration" in w for w in out["monte_carlo"]["warnings"])


@pytest.mark.parametrize(
    "args,field",
    [
        (["--seed", "1"], "--seed"),
        (["--uncertainty", "16", "--reach", "local", "--budget", "1e6"], "--uncertainty"),
        (["--uncertainty", "0"], "--uncertainty"),
    ],
)
def test_target_uncertainty_bad_input_names_the_field(args, field):
    base = TARGET if "--reach" not in args else ["target", "--node", "16x-h100-sxm"]
    res = runner.invoke(app, [*base, *args])
    assert res.exit_code == 2, res.output
    assert field in res.output and "Traceback" not in res.output


def test_governance_answers_held_for_every_reachable_cheapest_run():
    base, dists = load_uncertain_scenario(None, "governance", ["mfu=0.3..0.5"], fixed_assumptions=True)
    res = analyse(base, [Cap(16.0), Cap(4.0)], (1e24,), gpus=["h100-sxm"], precisions=("fp16",))
    held = answers_held(res, base, dists, 64, res.days_limit, seed=3)
    reachable = [(ci, x) for ci, cr in enumerate(res.caps) for x, rec in cr.cheapest.items() if rec]
    assert sorted(held) == sorted(reachable) and reachable
    for (ci, x), h in held.items():
        rec = res.caps[ci].cheapest[x]
        assert h["days"]["p10"] <= rec["days"] * 1.0000001 or h["days"]["p10"] <= h["days"]["p90"]
        assert 0.0 <= h["p_within_limit"] <= 1.0 and h["inputs"] == ["mfu"]
    again = answers_held(res, base, dists, 64, res.days_limit, seed=3)
    assert again == held


def test_governance_cli_uncertainty_json():
    caps = ["--compute-cap", "16", "--memory-cap", "2048", "--targets", "1e24", "--gpu", "h100-sxm"]
    out = _json(["governance", *caps, "--uncertainty", "32", "--seed", "1", "--fixed-assumptions", "--json"])
    cheapest = out["caps"][0]["cheapest"]["1e+24"]
    assert cheapest["uncertainty"]["p_within_limit"] == 1.0
    d = cheapest["uncertainty"]["days"]
    assert d["p10"] == d["p50"] == d["p90"] == pytest.approx(cheapest["days"], rel=1e-9)
    # the text names the cells each warning holds for, not one warning as if for all
    caps2 = ["--compute-cap", "16,4", "--memory-cap", "none", "--targets", "1e24", "--gpu", "h100-sxm"]
    res = runner.invoke(
        app, ["governance", *caps2, "--uncertainty", "32", "--seed", "1"], env={"COLUMNS": "300"}
    )
    lines = [ln for ln in res.output.splitlines() if ln.startswith("warning (")]
    assert lines and all(ln.startswith(("warning (every cell)", "warning (≤ ")) for ln in lines), lines
    assert any("only 32 draws" in ln and ln.startswith("warning (every cell)") for ln in lines)


def test_target_and_governance_grids_give_the_same_answers_on_a_local_dask_cluster():
    """Done-when (item 5): the target search and the threshold analysis, their configuration groups
    run in blocks on two worker processes, give exactly the single-process answers."""
    pytest.importorskip("distributed")
    from dtsim.analysis.search import Target, search
    from dtsim.analysis.space_options import space_from_options

    base, _ = load_uncertain_scenario(None, "governance", [], fixed_assumptions=True)
    space = space_from_options(
        ["16x-h100-sxm", "50x-a100-80gb"], 100_000, None, None, None, None, None, None, 100.0, "fp16"
    )
    tgt = Target("model", params_b=100, tokens_t=2)
    one = search(base, space, tgt)
    two = search(base, space, tgt, scheduler="local", workers=2)
    # repr: NaN fields (h_used of a pipeline mode) compare unequal to themselves
    assert repr((one.winner, one.by_mode, one.closest)) == repr((two.winner, two.by_mode, two.closest))
    assert one.rows == two.rows and one.refined_rows == two.refined_rows
    caps = [Cap(16.0), Cap(4.0)]
    g1 = analyse(base, caps, (1e24, 1e25), gpus=["h100-sxm"], precisions=("fp16",))
    g2 = analyse(
        base, caps, (1e24, 1e25), gpus=["h100-sxm"], precisions=("fp16",), scheduler="local", workers=2
    )
    assert [c.cheapest for c in g1.caps] == [c.cheapest for c in g2.caps] and g1.rows == g2.rows
