"""Input uncertainty (issue 14, items 1, 2 and 6 for `simulate`): fields given as distributions, drawn
by scrambled Sobol sampling through the batch path, summarised as quantiles, moments and
probabilities."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from dtsim.analysis import uncertainty as unc
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app
from dtsim.models.decentralized.engine import simulate_batch

runner = CliRunner()


def _json(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("text", "kind", "median"),
    [
        ("0.3..0.5", "uniform", 0.4),
        ("uniform:10:20", "uniform", 15.0),
        ("triangular:0.3:0.35:0.5", "triangular", stats.triang.ppf(0.5, 0.25, loc=0.3, scale=0.2)),
        ("normal:100:5", "normal", 100.0),
        ("lognormal:100:0.3", "lognormal", 100.0),
        ("normal:0.4:0.1:0.2:0.5", "normal", stats.truncnorm.ppf(0.5, -2.0, 1.0, loc=0.4, scale=0.1)),
    ],
)
def test_distribution_texts_and_their_medians(text, kind, median):
    d = unc.parse_text("f", text)
    assert d.kind == kind
    assert d.point() == pytest.approx(median, rel=1e-9)


def test_draws_follow_the_distribution_and_truncation_holds():
    """The inverse CDF applied to Sobol points reproduces each distribution's quantiles, and a
    truncated normal never leaves its window."""
    d = unc.make_distribution("mfu", {"dist": "normal", "mean": 0.4, "sd": 0.2, "low": 0.1, "high": 0.6})
    x = unc.draws({"mfu": d}, 1 << 14, seed=3)["mfu"]
    assert x.min() >= 0.1 and x.max() <= 0.6
    tn = stats.truncnorm(-1.5, 1.0, loc=0.4, scale=0.2)
    assert np.quantile(x, [0.1, 0.5, 0.9]) == pytest.approx(tn.ppf([0.1, 0.5, 0.9]), abs=2e-3)
    ln = unc.make_distribution("latency_ms", {"dist": "lognormal", "median": 100, "sigma": 0.3})
    y = unc.draws({"latency_ms": ln}, 1 << 14, seed=3)["latency_ms"]
    assert np.quantile(np.log(y), [0.1, 0.9]) == pytest.approx(
        np.log(100) + 0.3 * stats.norm.ppf([0.1, 0.9]), abs=2e-3
    )
    c = unc.make_distribution("precision", {"dist": "choice", "values": ["fp16", "fp8"], "weights": [3, 1]})
    z = unc.draws({"precision": c}, 1 << 12, seed=1)["precision"]
    assert np.mean(z == "fp16") == pytest.approx(0.75, abs=0.01)


@pytest.mark.parametrize(
    ("spec", "field", "needle"),
    [
        ({"dist": "beta", "a": 1}, "mfu.dist", "known: uniform"),
        ({"dist": "uniform", "low": 0.5, "high": 0.3}, "mfu.high", "above low"),
        ({"dist": "triangular", "low": 0.3, "mode": 0.6, "high": 0.5}, "mfu.mode", "between low and high"),
        ({"dist": "normal", "mean": 0.4}, "mfu.sd", "normal needs mean, sd"),
        ({"dist": "normal", "mean": 0.4, "sd": -1}, "mfu.sd", "> 0"),
        ({"dist": "lognormal", "median": 0, "sigma": 0.3}, "mfu.median", "> 0"),
        ({"dist": "uniform", "low": "nan", "high": 1}, "mfu.low", "finite number"),
        ({"dist": "uniform", "low": 0.1, "high": 0.2, "mode": 0.1}, "mfu.mode", "not a parameter of uniform"),
        ({"dist": "choice", "values": []}, "mfu.values", "non-empty list"),
        ({"dist": "choice", "values": [1, 2], "weights": [1]}, "mfu.weights", "list of 2 numbers"),
    ],
)
def test_bad_distributions_name_the_parameter(spec, field, needle):
    with pytest.raises(ScenarioError) as exc:
        unc.make_distribution("mfu", spec)
    where, _, message = exc.value.problems[0]
    assert where == field and needle in message


def test_sobol_draws_are_deterministic_with_a_seed_and_rounded_to_a_power_of_two():
    d = {"mfu": unc.parse_text("mfu", "0.3..0.5"), "num_nodes": unc.parse_text("num_nodes", "8..64")}
    a = unc.draws(d, unc.sample_count(1000), seed=5, integer_fields=("num_nodes",))
    b = unc.draws(d, unc.sample_count(1000), seed=5, integer_fields=("num_nodes",))
    c = unc.draws(d, unc.sample_count(1000), seed=6, integer_fields=("num_nodes",))
    assert len(a["mfu"]) == 1024
    assert np.array_equal(a["mfu"], b["mfu"]) and not np.array_equal(a["mfu"], c["mfu"])
    assert np.all(a["num_nodes"] == np.round(a["num_nodes"]))


def test_without_distributions_every_quantile_is_the_point():
    """Done-when: nothing uncertain given, P10 = P50 = P90 = the point, with no spread."""
    point = _json(["simulate", "--json"])
    out = _json(["simulate", "--uncertainty", "256", "--json"])
    for name in ("wall_clock_days", "global_mfu", "cost_usd"):
        u = out["uncertainty"][name]
        assert u["p10"] == u["p50"] == u["p90"] == pytest.approx(point[name], rel=1e-12)
        assert u["std"] == 0.0
    assert out["monte_carlo"]["inputs"] == {}


def test_monte_carlo_equals_the_batch_path_on_the_same_draws():
    """The summary is of exactly what the batch path gives for the drawn rows."""
    scenario, dists = unc.load_uncertain_scenario(
        set_texts=["bandwidth_mbps=lognormal:1000:0.5", "mfu=0.3..0.5"]
    )
    mc = unc.run_monte_carlo(scenario, dists, 4096, seed=11, probs=["wall_clock_days<=130"])
    drawn = unc.draws(dists, 4096, seed=11)
    days = simulate_batch(scenario, **drawn)["wall_clock_days"]
    assert mc.outputs["wall_clock_days"]["p50"] == pytest.approx(np.quantile(days, 0.5))
    assert mc.outputs["wall_clock_days"]["p90"] == pytest.approx(np.quantile(days, 0.9))
    assert mc.probabilities[0]["p"] == pytest.approx(np.mean(days <= 130))
    assert mc.outputs["wall_clock_days"]["p10"] < mc.outputs["wall_clock_days"]["p90"]
    assert sum(mc.shares["feasible"].values()) == pytest.approx(1.0)


def test_quantile_standard_error_shrinks_with_more_draws():
    rng = np.random.default_rng(0)
    small = unc.quantile_se(np.sort(rng.normal(size=1_000)), 0.9)
    large = unc.quantile_se(np.sort(rng.normal(size=100_000)), 0.9)
    assert large < small / 5
    # the normal's P90 has asymptotic se sqrt(q(1−q)/n)/φ(z): about 0.0017 at n = 100,000
    assert large == pytest.approx(np.sqrt(0.09 / 100_000) / stats.norm.pdf(stats.norm.ppf(0.9)), rel=0.25)


def test_cli_simulate_with_distributions_in_a_file_and_on_the_command_line(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("mfu: {dist: triangular, low: 0.3, mode: 0.4, high: 0.5}\nbandwidth_mbps: 1000\n")
    args = [
        "simulate",
        str(f),
        "--set",
        "latency_ms=lognormal:100:0.3",
        "--uncertainty",
        "1000",
        "--seed",
        "1",
    ]
    out = _json([*args, "--prob", "wall_clock_days<=150", "--prob", "mode==flat-diloco", "--json"])
    mc = out["monte_carlo"]
    assert mc["samples"] == 1024 and mc["requested"] == 1000 and mc["seed"] == 1
    assert set(mc["inputs"]) == {"mfu", "latency_ms"}
    assert out["uncertainty"]["global_mfu"]["p10"] < out["uncertainty"]["global_mfu"]["p90"]
    assert [p["expr"] for p in out["probabilities"]] == ["wall_clock_days<=150", "mode==flat-diloco"]
    assert "NaN" not in json.dumps(out)
    again = _json([*args, "--json"])
    assert again["uncertainty"] == out["uncertainty"]
    # the point report takes each distribution's median, and says so without --uncertainty
    text = runner.invoke(app, ["simulate", str(f)], terminal_width=200).stdout
    assert "ran at their medians" in text and "--uncertainty N" in text
    rich = runner.invoke(app, ["simulate", str(f), "--uncertainty", "512", "--seed", "2"], terminal_width=200)
    assert "Uncertainty: 512 draws, seed 2" in rich.stdout and "P90" in rich.stdout


@pytest.mark.parametrize(
    ("args", "field", "needle"),
    [
        (["--set", "mfu=normal:0.4:0.3", "--uncertainty", "64"], "mfu", "truncate it with low/high"),
        (["--set", "mfu=0.5..0.3", "--uncertainty", "8"], "mfu.high", "above low"),
        (["--set", "assumptions.pue=1.1..1.3", "--uncertainty", "8"], "assumptions.pue", "point values"),
        (["--set", "mfu=0.3..0.5", "--uncertainty", "0"], "--uncertainty", "≥ 1"),
        (["--set", "mfu=0.3..0.5", "--prob", "wall_clock_days<3"], "--prob", "needs --uncertainty"),
        (["--set", "mfu=0.3..0.5", "--uncertainty", "8", "--prob", "nonsense<3"], "--prob", "unknown output"),
        (["--set", "mfu=0.3..0.5", "--uncertainty", "8", "--prob", "mode<3"], "--prob", "use == or !="),
        (["--set", "mfu=0.3..0.5", "--uncertainty", "8", "--levels", "0,50"], "--levels", "above 0"),
        (["--set", "mfu=triangular:0.3:0.4", "--uncertainty", "8"], "mfu", "triangular:low:mode:high"),
        (["--set", "mfu=0.3..0.5", "--uncertainty", "8", "--seed", "-1"], "--seed", "≥ 0"),
        (["--set", "mfu=0.3..0.5", "--seed", "3"], "--seed", "needs --uncertainty"),
        (
            ["--set", "mfu=0.3..0.5", "--uncertainty", "8", "--prob", "wall_clock_days<=nan"],
            "--prob",
            "finite",
        ),
        (["--set", "mfu=0.3..0.5", "--uncertainty", "8", "--prob", "mode==flat-dilocoo"], "--prob", "known:"),
        (
            ["--set", "mfu=0.3..0.5", "--uncertainty", "8", "--prob", "feasible==0.5"],
            "--prob",
            "feasible==true",
        ),
        (["--set", "gpu=choice:h100-sxm,nope"], "gpu", "does not take"),
        (
            ["--preset", "intellect-1", "--set", "bandwidth_mbps=normal:100:100", "--uncertainty", "64"],
            "bandwidth_mbps",
            "truncate it",
        ),
    ],
)
def test_cli_bad_uncertainty_input_names_the_field(args, field, needle):
    result = runner.invoke(app, ["simulate", *args], terminal_width=300)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert field in text and needle in text
    assert "Traceback" not in result.output


def test_field_order_does_not_change_the_draws_and_integer_points_are_whole():
    a = _json(
        [
            "simulate",
            "--set",
            "mfu=0.3..0.5",
            "--set",
            "latency_ms=10..200",
            "--uncertainty",
            "64",
            "--seed",
            "4",
            "--json",
        ]
    )
    b = _json(
        [
            "simulate",
            "--set",
            "latency_ms=10..200",
            "--set",
            "mfu=0.3..0.5",
            "--uncertainty",
            "64",
            "--seed",
            "4",
            "--json",
        ]
    )
    assert a["uncertainty"] == b["uncertainty"]
    point = _json(["simulate", "--preset", "colocated", "--set", "num_nodes=8..17", "--json"])
    assert point["distributions_at_point"] == {"num_nodes": "uniform(low=8, high=17)"}


def test_probabilities_are_over_the_draws_where_the_output_is_defined():
    cols = {
        "wall_clock_days": np.array([1.0, 2.0, np.nan, 4.0]),
        "feasible": np.array([True, False, True, True]),
    }
    below = unc.probability("wall_clock_days<=2", cols)
    above = unc.probability("wall_clock_days>2", cols)
    assert below["p"] + above["p"] == pytest.approx(1.0) and below["defined"] == 0.75
    assert unc.probability("feasible==true", cols)["p"] == 0.75
