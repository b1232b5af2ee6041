"""Input uncertainty (issue 14, items 1, 2 and 6 for `simulate`): fields given as distributions, drawn
by scrambled Sobol sampling through the batch path, summarised as quantiles, moments and
probabilities."""

from __future__ import annotations

import json
import math

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
    """Done-when: with --fixed-assumptions and no distributions, P10 = P50 = P90 = the point."""
    point = _json(["simulate", "--json"])
    out = _json(["simulate", "--uncertainty", "256", "--fixed-assumptions", "--json"])
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
    assert "assumptions.straggler_coefficient" in dists  # the table's distributions are drawn too
    mc = unc.run_monte_carlo(scenario, dists, 4096, seed=11, probs=["wall_clock_days<=130"])
    drawn = unc.draws(unc.without(dists, mc.unread), 4096, seed=11)  # the assumptions it reads
    asm = {k.removeprefix("assumptions."): drawn.pop(k) for k in list(drawn) if k.startswith("assumptions.")}
    days = simulate_batch(scenario, assumption_rows=asm, **drawn)["wall_clock_days"]
    assert mc.outputs["wall_clock_days"]["p50"] == pytest.approx(np.quantile(days, 0.5))
    assert mc.outputs["wall_clock_days"]["p90"] == pytest.approx(np.quantile(days, 0.9))
    assert mc.probabilities[0]["p"] == pytest.approx(np.mean(days <= 130))
    assert mc.outputs["wall_clock_days"]["p10"] < mc.outputs["wall_clock_days"]["p90"]
    assert sum(mc.shares["feasible"].values()) == pytest.approx(1.0)


def test_quantiles_of_an_output_that_means_another_thing_in_another_mode_are_flagged():
    """A trial user's case: draws that switch between flat DiLoCo and a hierarchy gave outer_step_s
    quantiles mixing outer steps with global cycles, without a word. One mode: no such warning."""
    groups = [
        {"count": 4, "node": "dgx-h100", "region": "us-east"},
        {"count": 4, "node": "dgx-h100", "region": "eu-west"},
    ]
    scenario, dists = unc.load_uncertain_scenario(
        fields={"parameters_b": 10, "tokens_t": 1, "node_groups": groups},
        set_texts=["bandwidth_mbps=10..1000"],
    )
    mc = unc.run_monte_carlo(scenario, dists, 256, seed=3)
    assert len(mc.shares["mode"]) == 2
    (w,) = [w for w in mc.warnings if "different quantity in different modes" in w]
    assert w.startswith("outer_step_s is") and "ran flat-diloco, hierarchical-diloco" in w
    scenario, dists = unc.load_uncertain_scenario(set_texts=["bandwidth_mbps=lognormal:1000:0.5"])
    one = unc.run_monte_carlo(scenario, dists, 256, seed=3)
    assert len(one.shares["mode"]) == 1
    assert not [w for w in one.warnings if "different modes" in w]
    # infeasible draws (no outer step) and flat / PP-group DiLoCo (an outer step of H inner steps both)
    # mix nothing
    for fields, text in (
        ({"num_nodes": 3, "vram_per_node_gb": 1500}, "parameters_b=200..900"),
        ({"num_nodes": 8}, "parameters_b=100..400"),
    ):
        scenario, dists = unc.load_uncertain_scenario(fields=fields, set_texts=[text], fixed_assumptions=True)
        mc = unc.run_monte_carlo(scenario, dists, 256, seed=3)
        assert len(mc.shares["mode"]) == 2, mc.shares["mode"]
        assert not [w for w in mc.warnings if "different modes" in w]


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
    assert {"mfu", "latency_ms"} <= set(mc["inputs"])
    assert all(k in ("mfu", "latency_ms") or "(assumptions table)" in v for k, v in mc["inputs"].items())
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
        (
            ["--set", "assumptions.days_per_year=choice:365,366", "--uncertainty", "8"],
            "assumptions.days_per_year",
            "only a numeric assumption",
        ),
        (["--set", "assumptions.pue=0.5..1.3", "--uncertainty", "8"], "assumptions.pue", "between 1"),
        (["--fixed-assumptions"], "--fixed-assumptions", "needs --uncertainty"),
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


# --- the assumptions table's distributions ----------------------------------------------------------------------


def test_every_assumption_has_a_distribution_or_says_why_it_is_fixed():
    """Issue 14 item 1: each entry's `uncertainty` is a distribution inside the entry's range that holds
    its point value, with a basis, or `fixed` with the reason."""
    from dtsim.assumptions import distributions, table

    dists = distributions()
    for row in table():
        spec = row.uncertainty
        if "fixed" in spec:
            assert set(spec) == {"fixed"} and len(spec["fixed"]) > 15, row.name
            assert row.name not in dists
            continue
        assert spec.get("basis") and len(spec["basis"]) > 15, row.name
        d = dists[row.name]
        lo, hi = d.ppf(np.asarray([0.0, 1.0 - 1e-12]))
        assert row.range[0] <= lo <= row.value <= hi <= row.range[1], row.name


def test_assumptions_read_by_the_model_are_the_listed_ones(monkeypatch):
    """ASSUMPTIONS_READ (what --uncertainty may draw from the table) is what the engine reads, recorded
    on a batch that reaches every mode and straggler strategy."""
    from dtsim import assumptions as asm_mod
    from dtsim.models.decentralized import engine

    seen = set()
    original = asm_mod.Assumptions.__getattr__

    def record(self, name):
        seen.add(name)
        return original(self, name)

    monkeypatch.setattr(asm_mod.Assumptions, "__getattr__", record)
    engine.simulate_batch(
        {"moe": True, "active_parameters_b": 10, "parameters_b": 100, "expert_parallelism": "global"},
        straggler_strategy=np.array(["none", "threshold", "backup", "relay"] * 2),
        hierarchical=np.array([True, False] * 4),
        num_nodes=np.array([16, 2, 32, 8, 16, 32, 64, 128]),
        precision=np.array(["fp16", "fp8", "fp4", "fp16"] * 2),
        inner_steps=np.array([1, 10, 100, 1000] * 2),
        streaming=np.array([True, False] * 4),
    ).result(2)
    engine.simulate({"inner_steps": "auto-quality"})
    engine.simulate({"parameters_b": 2000, "num_nodes": 16})
    groups = [{"count": 2, "region": "us-east"}, {"count": 3, "region": "uk"}]
    engine.simulate({"node_groups": groups, "tcp_streams": 2, "codec": "int8", "node_mtbf_hours": 100})
    engine.simulate(
        {"codec": "topk", "codec_device": "cpu", "node_mtbf_hours": 100, "num_nodes": 3, "parameters_b": 500}
    )
    read = {n for n in seen if not n.startswith("__") and n != "ndim"}
    assert read == set(engine.ASSUMPTIONS_READ)


@pytest.mark.parametrize(
    "base",
    [
        {},
        {"hierarchical": True, "num_nodes": 64, "nodes_per_group": 8, "regional_steps": 4},
        {"num_nodes": 64, "parameters_b": 400},
        {"parameters_b": 2000, "num_nodes": 16},
        {"inner_steps": "auto-quality"},
    ],
)
def test_assumptions_varied_per_row_equal_single_runs_with_those_values(base):
    """A batch whose rows each hold their own assumption values gives, row by row, exactly what a single
    run with those values as overrides gives (every mode, every straggler strategy)."""
    from dtsim.assumptions import distributions
    from dtsim.models.decentralized.engine import ASSUMPTIONS_READ, simulate

    n = 24
    rng = np.random.default_rng(5)
    rows = {k: d.ppf(rng.random(n)) for k, d in distributions(ASSUMPTIONS_READ).items()}
    strategy = np.array(["none", "threshold", "backup", "relay"])[np.arange(n) % 4]
    kw = {} if "inner_steps" in base else {"inner_steps": (np.arange(n) + 1) * 10}
    batch = simulate_batch(base, assumption_rows=rows, straggler_strategy=strategy, **kw)
    for i in range(0, n, 5):
        one = {
            **base,
            "straggler_strategy": str(strategy[i]),
            "assumptions": {k: float(v[i]) for k, v in rows.items()},
        }
        if kw:
            one["inner_steps"] = int(kw["inner_steps"][i])
        r = simulate(one)
        for k in ("wall_clock_days", "global_mfu", "efficiency", "energy_kwh", "outer_step_s"):
            assert batch[k][i] == getattr(r, k), (k, i)
        assert batch["mode"][i] == r.mode
    assert batch.result(3).wall_clock_days == batch["wall_clock_days"][3]


def test_per_row_assumptions_out_of_range_name_the_assumption():
    with pytest.raises(ScenarioError) as exc:
        simulate_batch({}, assumption_rows={"pue": np.array([1.2, 0.5])}, mfu=np.array([0.3, 0.4]))
    assert exc.value.problems[0][0] == "assumptions.pue[1]"
    with pytest.raises(ScenarioError, match="only numeric assumptions"):
        simulate_batch({}, assumption_rows={"compression_quality": np.array([1.0])})


def test_table_distributions_are_drawn_unless_fixed_or_set_by_the_scenario():
    _, dists = unc.load_uncertain_scenario(set_texts=["assumptions.pue=1.3"])
    assert "assumptions.straggler_coefficient" in dists and "assumptions.pue" not in dists
    _, fixed = unc.load_uncertain_scenario(set_texts=["mfu=0.3..0.5"], fixed_assumptions=True)
    assert set(fixed) == {"mfu"}
    scenario, own = unc.load_uncertain_scenario(
        set_texts=["assumptions.pue=1.2..1.4"], fixed_assumptions=True
    )
    assert set(own) == {"assumptions.pue"} and scenario.assumptions["pue"] == pytest.approx(1.3)
    mc = unc.run_monte_carlo(scenario, own, 1024, seed=0, outputs=("energy_kwh",))
    # energy is proportional to PUE: its quantiles follow the uniform's
    e = mc.outputs["energy_kwh"]
    assert e["p90"] / e["p10"] == pytest.approx(1.38 / 1.22, rel=1e-3)
    assert mc.drivers["energy_kwh"][0]["input"] == "assumptions.pue"
    assert mc.drivers["energy_kwh"][0]["rho"] == pytest.approx(1.0)


def test_drivers_rank_the_input_that_moves_the_output_first():
    """On the default run the WAN is the bottleneck below about 300 Mbit/s: there bandwidth drives
    wall-clock time (more bandwidth, fewer days: ρ < 0) and MFU does not move it (the sync is not
    hidden); above, the run is compute-bound and the roles swap."""
    for texts, first, absent in (
        (["bandwidth_mbps=50..200", "mfu=0.3..0.5"], "bandwidth_mbps", "mfu"),
        (["bandwidth_mbps=500..2000", "mfu=0.3..0.5"], "mfu", "bandwidth_mbps"),
    ):
        scenario, dists = unc.load_uncertain_scenario(set_texts=texts, fixed_assumptions=True)
        mc = unc.run_monte_carlo(scenario, dists, 4096, seed=1)
        top = mc.drivers["wall_clock_days"]
        assert top[0]["input"] == first and top[0]["rho"] < -0.9
        assert all(d["input"] != absent for d in top)


# --- correlated inputs ------------------------------------------------------------------------------------------


def test_correlated_draws_have_the_stated_rank_correlation_and_keep_their_marginals():
    from scipy.stats import spearmanr

    d = unc.Inputs(
        a=unc.make_distribution("a", {"dist": "uniform", "low": 0, "high": 1}),
        b=unc.make_distribution("b", {"dist": "lognormal", "median": 100, "sigma": 0.5}),
        c=unc.make_distribution("c", {"dist": "triangular", "low": 0, "mode": 1, "high": 4}),
    )
    free = unc.draws(d, 1 << 14, seed=4)
    d.correlations = (unc.Correlation("a", "b", 0.6), unc.Correlation("b", "c", -0.3))
    tied = unc.draws(d, 1 << 14, seed=4)
    assert spearmanr(tied["a"], tied["b"])[0] == pytest.approx(0.6, abs=0.02)
    assert spearmanr(tied["b"], tied["c"])[0] == pytest.approx(-0.3, abs=0.02)
    assert abs(spearmanr(free["a"], free["b"])[0]) < 0.02
    for k in "abc":  # each input keeps its own distribution
        for q in (0.1, 0.5, 0.9):
            assert np.quantile(tied[k], q) == pytest.approx(np.quantile(free[k], q), rel=0.02)
    part = unc.draws(d, 1000, seed=4, start=3000)  # blocks stay the stretch of one sequence
    assert np.array_equal(part["a"], tied["a"][3000:4000])


def test_correlations_from_a_file_and_the_command_line(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(
        "mfu: {dist: uniform, low: 0.3, high: 0.5}\nbandwidth_mbps: {dist: uniform, low: 50, high: 200}\n"
        "correlations:\n  - {fields: [mfu, bandwidth_mbps], rho: 0.7}\n"
    )
    _, dists = unc.load_uncertain_scenario(f, fixed_assumptions=True)
    assert dists.correlations == (unc.Correlation("mfu", "bandwidth_mbps", 0.7),)
    _, dists = unc.load_uncertain_scenario(f, fixed_assumptions=True, corr_texts=["bandwidth_mbps,mfu=-0.2"])
    assert dists.correlations == (
        unc.Correlation("bandwidth_mbps", "mfu", -0.2),
    )  # the flag replaces the pair
    out = _json(["simulate", str(f), "--uncertainty", "1024", "--seed", "1", "--fixed-assumptions", "--json"])
    assert out["monte_carlo"]["correlations"] == [{"fields": ["mfu", "bandwidth_mbps"], "rho": 0.7}]


@pytest.mark.parametrize(
    ("args", "field", "needle"),
    [
        (["--corr", "mfu,latency_ms=0.5"], "--corr", "not an uncertain input"),
        (["--corr", "mfu,mfu=0.5"], "--corr", "with itself"),
        (["--corr", "mfu,latency_ms=1"], "--corr", "strictly between"),
        (["--corr", "mfu=0.5"], "--corr", "FIELD,FIELD=RHO"),
        (["--corr", "mfu,latency_ms=x"], "--corr", "a number"),
        (
            [
                "--set",
                "latency_ms=50..150",
                "--set",
                "bandwidth_mbps=50..200",
                "--corr",
                "mfu,latency_ms=0.9",
                "--corr",
                "mfu,bandwidth_mbps=0.9",
                "--corr",
                "latency_ms,bandwidth_mbps=-0.9",
            ],
            "--corr",
            "positive definite",
        ),
    ],
)
def test_bad_correlations_name_the_flag(args, field, needle):
    result = runner.invoke(
        app, ["simulate", "--set", "mfu=0.3..0.5", "--uncertainty", "64", *args], terminal_width=300
    )
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert field in text and needle in text and "Traceback" not in result.output


def test_sensitivity_refuses_correlated_inputs():
    from dtsim.analysis.sensitivity import sensitivity

    scenario, dists = unc.load_uncertain_scenario(
        set_texts=["mfu=0.3..0.5", "latency_ms=50..150"], corr_texts=["mfu,latency_ms=0.5"]
    )
    with pytest.raises(ScenarioError, match="independent inputs"):
        sensitivity(scenario, dists, n=8)


def test_mfu_auto_under_uncertainty_says_its_model_error_is_not_drawn():
    """simulate --uncertainty with mfu: auto drew nothing for the datacenter model's own error and said
    nothing: a trial user's P10 sat on the point. It says so now, and not when mfu is drawn."""
    import json as _json

    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    base = ["simulate", "--set", "parameters_b=8", "--set", "node=dgx-h100", "--set", "num_nodes=16"]
    r = CliRunner().invoke(app, [*base, "--set", "mfu=auto", "--uncertainty", "64", "--seed", "1", "--json"])
    assert r.exit_code == 0, r.output
    assert any("point MFU in every draw" in w for w in _json.loads(r.stdout)["monte_carlo"]["warnings"])
    r = CliRunner().invoke(
        app, [*base, "--set", "mfu=0.4..0.55", "--uncertainty", "64", "--seed", "1", "--json"]
    )
    assert not any("point MFU" in w for w in _json.loads(r.stdout)["monte_carlo"]["warnings"])


def test_a_few_draws_do_not_lend_one_inputs_effect_to_another():
    """A trial user's case: at 64 draws two Sobol inputs correlate (ρ = 0.75 between node_mtbf_hours and
    straggler_coefficient), and the second "drove" wall-clock time at ρ = −0.72, +0.75 with another seed.
    Forward selection names it only for what it adds beyond node_mtbf_hours: the same drivers at 64
    draws, whatever the seed, as at 4,096."""
    scenario, dists = unc.load_uncertain_scenario(
        preset="intellect-1", set_texts=["node_mtbf_hours=lognormal:5:1"]
    )
    drawn = unc.draws(dists, 64, seed=1)
    from scipy.stats import spearmanr

    assert abs(spearmanr(drawn["node_mtbf_hours"], drawn["assumptions.straggler_coefficient"])[0]) > 0.5
    many = unc.run_monte_carlo(scenario, dists, 4096, seed=1).drivers["wall_clock_days"]
    assert [d["input"] for d in many] == ["node_mtbf_hours", "assumptions.restart_s"]
    assert many[0]["rho"] < -0.95 and 0.1 < many[1]["rho"] < 0.25
    for seed in (1, 2, 3, 4):
        # restart_s's ρ ≈ 0.15 is under 64 draws' noise floor (0.26): not named, and nothing else is
        few = unc.run_monte_carlo(scenario, dists, 64, seed=seed).drivers["wall_clock_days"]
        assert [d["input"] for d in few] == ["node_mtbf_hours"]
        assert few[0]["rho"] < -0.95


def test_a_few_draws_name_no_driver_on_noise():
    """A trial of the unread-assumption screen: at 64 draws of intellect-1, straggler_coefficient
    (ρ = 0.054) and codec_int8_bytes_per_s_gpu (0.058), both 0 at 65,536 draws, were named as third
    drivers. A driver must clear twice its ρ's sampling error: 0.26 at 64 draws, 0.064 at 1,024."""
    assert unc.driver_floor(64) == pytest.approx(2 * 1.03 / math.sqrt(61))
    assert unc.driver_floor(1024, 1) == pytest.approx(2 * 1.03 / math.sqrt(1020))
    assert unc.driver_floor(1 << 14) == unc.DRIVER_MIN_RHO == 0.05
    assert unc.driver_floor(3) == 1.0  # too few draws to name any
    rng = np.random.default_rng(3)
    for n in (64, 1024):  # one input of ρ ≈ 0.15 with the output: noise at 64 draws, an effect at 1,024
        ry = stats.rankdata(rng.normal(size=n))
        x = stats.rankdata(0.18 * (ry - ry.mean()) / ry.std() + rng.normal(size=n))
        rho = float(np.corrcoef(x, ry)[0, 1])
        assert unc.DRIVER_MIN_RHO < abs(rho) < unc.driver_floor(64)
        named = unc.forward_drivers([{"input": "x", "rho": rho}], x[None, :], ry, 3)
        assert [d["input"] for d in named] == ([] if n == 64 else ["x"])


def test_the_assumptions_a_run_never_reads_are_held_not_drawn():
    """--uncertainty drew all 22 of the table's assumptions in every mode: the default scenario (flat
    DiLoCo, no failures, no codec, dense) listed restart_s, the codec speeds and moe_capacity_factor
    as inputs, and at 64 draws named moe_capacity_factor a driver of efficiency (ρ = −0.05). Each
    held one changes no output from its low to its high end; each drawn one changes some."""
    scenario, dists = unc.load_uncertain_scenario()
    mc = unc.run_monte_carlo(scenario, dists, 64, seed=1)
    assert {
        "assumptions.restart_s",
        "assumptions.moe_capacity_factor",
        "assumptions.codec_int8_bytes_per_s_gpu",
    } <= set(mc.unread)
    assert "assumptions.straggler_coefficient" in mc.inputs and not set(mc.unread) & set(mc.inputs)
    assert set(mc.unread) | set(mc.inputs) == set(dists)
    assert mc.as_dict()["unread"] == mc.unread
    for name in dists:
        lo, hi = dists[name].ppf(np.asarray(unc.SCREEN_ENDS))
        key = name.removeprefix("assumptions.")
        a = simulate_batch(scenario, assumption_rows={key: np.asarray([lo])}).columns
        b = simulate_batch(scenario, assumption_rows={key: np.asarray([hi])}).columns
        changed = [
            k
            for k in a
            if not np.array_equal(
                np.asarray(a[k]), np.asarray(b[k]), equal_nan=np.asarray(a[k]).dtype.kind == "f"
            )
        ]
        assert bool(changed) == (name in mc.inputs), (name, changed)
    # failures modelled: what they cost is read, so drawn
    failing, fdists = unc.load_uncertain_scenario(set_texts=["node_mtbf_hours=10"])
    held = unc.run_monte_carlo(failing, fdists, 64, seed=1).unread
    assert "assumptions.restart_s" not in held and "assumptions.checkpoint_write_gbps" not in held
    # the user's own distribution of an assumption is drawn, read or not
    own, odists = unc.load_uncertain_scenario(set_texts=["assumptions.restart_s=100..200"])
    mine = unc.run_monte_carlo(own, odists, 64, seed=1)
    assert "assumptions.restart_s" in mine.inputs and "assumptions.restart_s" not in mine.unread


def test_the_report_says_which_assumptions_it_held():
    res = CliRunner().invoke(app, ["simulate", "--uncertainty", "64", "--seed", "1"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "held at their values, as none changes an output of this run: " in res.output
    assert "restart_s" in res.output.split("held at their values")[1]
    out = json.loads(
        CliRunner().invoke(app, ["simulate", "--uncertainty", "64", "--seed", "1", "--json"]).output
    )
    assert "assumptions.restart_s" in out["monte_carlo"]["unread"]
    assert "assumptions.restart_s" not in out["monte_carlo"]["inputs"]


def test_the_screen_visits_every_value_of_a_choice_and_the_ends_of_the_users_distributions(tmp_path):
    """A review's case: straggler_strategy relay at 1 % of the draws reads relay_straggler_coefficient,
    which no Sobol point of 64 drew relay at: it was held and said to change nothing. The screen's base
    points cycle through every value of a choice and add each user distribution's two ends."""
    path = tmp_path / "rare.yaml"
    path.write_text("straggler_strategy: {dist: choice, values: [none, relay], weights: [0.99, 0.01]}\n")
    scenario, dists = unc.load_uncertain_scenario(path)
    points = unc.screen_points(dists)
    assert set(points["straggler_strategy"]) == {"none", "relay"}
    mc = unc.run_monte_carlo(scenario, dists, 64, seed=1)
    assert "assumptions.relay_straggler_coefficient" in mc.inputs
    assert "assumptions.restart_s" in mc.unread  # still held: no draw models failures
    _, ends = unc.load_uncertain_scenario(set_texts=["num_nodes=lognormal:72:0.5"])
    lo, hi = np.round(ends["num_nodes"].ppf(np.asarray(unc.SCREEN_ENDS)))
    pts = unc.screen_points(ends, integer_fields=("num_nodes",))
    assert {lo, hi} <= set(pts["num_nodes"].tolist())
