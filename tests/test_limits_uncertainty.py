"""`limits closed-form --uncertainty N` (issue 14, item 2): the closed-form limits of Epoch AI's data-movement
paper with their inputs given as distributions, drawn through the vectorized formulas."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dtsim.analysis.limits_uncertainty import closed_form_monte_carlo, closed_form_outputs, read_input
from dtsim.interfaces.cli.main import app
from dtsim.models.limits import closed_form as cf

runner = CliRunner()
POINT = {"batch_tokens": 4e6, "layers": 100.0, "months": 3.0, "latency_us": 9.0, "sparsity": 1.0}


def _json(args):
    res = runner.invoke(app, ["limits", "closed-form", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def test_vectorized_outputs_equal_the_scalar_closed_forms():
    """The formulas fed arrays give, draw by draw, what they give one value at a time."""
    rng = np.random.default_rng(1)
    x = {k: v * rng.uniform(0.5, 2.0, 5) for k, v in POINT.items()}
    out = closed_form_outputs(x, (0.2, 0.1))
    for i in range(5):
        one = {k: float(v[i]) for k, v in x.items()}
        assert out["t_limit_flop"][i] == pytest.approx(
            cf.t_limit(
                one["latency_us"] * 1e-6, one["batch_tokens"], one["layers"], one["months"], one["sparsity"]
            )
        )
        h100 = next(r for r in cf.table2() if r.name == "DGX H100")
        assert out["t_critical_flop_dgx_h100"][i] == pytest.approx(
            cf.t_critical(
                h100.mac_per_s,
                h100.d_prime,
                h100.b_prime,
                one["batch_tokens"],
                one["layers"],
                one["months"],
                one["sparsity"],
            )
        )
        assert out["generalized_t_limit_flop"][i] == pytest.approx(
            cf.generalized(
                "limit",
                0.2,
                0.1,
                one["batch_tokens"],
                one["layers"],
                months=one["months"],
                sparsity=one["sparsity"],
                t_latency=one["latency_us"] * 1e-6,
            )
        )


def test_nothing_uncertain_gives_the_point():
    out = _json(["--uncertainty", "16", "--seed", "1"])
    for k in ("t_limit_flop", "t_critical_latency_flop", "t_critical_flop_dgx_h100"):
        u = out["uncertainty"][k]
        assert u["p10"] == u["p50"] == u["p90"]
    assert out["uncertainty"]["t_limit_flop"]["p50"] == pytest.approx(out["t_limit_flop"])


def test_a_quadratic_limit_follows_its_input_and_names_its_driver():
    """T_limit ∝ (b/t_L)²: with only b drawn (lognormal σ), its quantiles are the formula at b's
    quantiles (a monotone map), so P90/P10 = exp(2·σ·2·1.2816)."""
    mc = closed_form_monte_carlo(
        {**POINT, "batch_tokens": read_input("batch-tokens", "lognormal:4e6:0.5")}, 4096, 3
    )
    t = mc.outputs["t_limit_flop"]
    assert t["p50"] == pytest.approx(cf.t_limit(9e-6, 4e6, 100, 3.0, 1.0), rel=0.01)
    assert t["p90"] / t["p10"] == pytest.approx(np.exp(2 * 0.5 * 2 * 1.2815516), rel=0.02)
    assert mc.drivers["t_limit_flop"][0]["input"] == "batch_tokens"


def test_cli_json_probabilities_and_medians_without_uncertainty():
    out = _json(
        ["--latency-us", "5..15", "--uncertainty", "256", "--seed", "2", "--prob", "t_limit_flop>=1e31"]
    )
    assert 0 < out["probabilities"][0]["p"] < 1 and out["monte_carlo"]["inputs"]["latency_us"].startswith(
        "uniform"
    )
    at_point = _json(["--latency-us", "5..15"])
    assert at_point["inputs"]["latency_s"] == pytest.approx(10e-6)
    assert at_point["distributions_at_point"] == {"--latency-us": "5..15"}


@pytest.mark.parametrize(
    "args,field,needle",
    [
        (["--layers", "abc"], "layers", "a distribution"),
        (["--months", "0"], "months", "> 0"),
        (["--months", "1000..2000", "--uncertainty", "8"], "months", "≤ 1200"),
        (["--batch-tokens", "normal:4e6:4e6", "--uncertainty", "64"], "batch-tokens", "not > 0"),
        (["--seed", "3"], "--seed", "needs --uncertainty"),
        (["--uncertainty", "8", "--prob", "nope>1"], "--prob", "unknown output"),
    ],
)
def test_bad_input_names_the_field(args, field, needle):
    res = runner.invoke(app, ["limits", "closed-form", *args])
    assert res.exit_code == 2, res.output
    assert field in res.output and needle in res.output and "Traceback" not in res.output


# --- limits search --uncertainty -----------------------------------------------------------------------------


def _search_json(args):
    res = runner.invoke(app, ["limits", "search", "--compute", "1e28", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def test_search_draws_equal_searches_with_the_drawn_values():
    """Each draw is the search run with its own time limit and law (a block against direct calls)."""
    from dtsim.analysis.limits_uncertainty import read_scaling, search_block
    from dtsim.analysis.uncertainty import draws
    from dtsim.models.limits.curve import limits_point, shape_for_compute
    from dtsim.models.limits.hardware import get
    from dtsim.models.limits.search import cluster_size

    values = {"months": read_input("months", "2..4"), "scaling": read_scaling("choice:default,deepseek")}
    values |= {"peak_tflops": None, "hbm_tb_s": None, "memory_gb": None}
    dists = {k: v for k, v in values.items() if hasattr(v, "ppf")}
    block = search_block(0, 6, 1e28, "h100-sxm", False, "per-gpu", values, dists, 3)
    drawn = draws(dists, 6, 3)
    for i in range(6):
        shape = shape_for_compute(1e28, False, str(drawn["scaling"][i]))
        best = cluster_size(shape, get("h100-sxm"), float(drawn["months"][i]), "per-gpu")
        p = limits_point(shape, best, get("h100-sxm"))
        assert (
            block["outputs"]["n_gpus"][i] == p.n_gpus and block["outputs"]["utilization"][i] == p.utilization
        )


def test_search_with_nothing_uncertain_gives_the_point_and_says_so():
    out = _search_json(["--uncertainty", "8", "--seed", "1"])
    u = out["uncertainty"]["n_gpus"]
    assert u["p10"] == u["p50"] == u["p90"] == out["n_gpus"]
    assert any("nothing varies" in w for w in out["monte_carlo"]["warnings"])


def test_search_ranges_the_cluster_over_time_limit_and_law():
    draw = ["--months", "2..4", "--scaling", "choice:default,deepseek", "--uncertainty", "64", "--seed", "2"]
    out = _search_json([*draw, "--prob", "found==true", "--prob", "n_gpus<=3e6"])
    u = out["uncertainty"]
    assert u["n_gpus"]["p10"] < u["n_gpus"]["p90"] and u["months"]["p90"] <= 4.0
    assert out["probabilities"][0]["p"] == 1.0 and 0 < out["probabilities"][1]["p"] < 1
    assert set(out["monte_carlo"]["inputs"]) == {"months", "scaling"}
    at_point = _search_json(["--months", "2..4"])
    assert at_point["distributions_at_point"] == {"months": "uniform(low=2, high=4)"}


@pytest.mark.parametrize(
    "args,field",
    [
        (["--months", "normal:3:5", "--uncertainty", "8"], "months"),
        (["--scaling", "choice:default,bogus"], "scaling"),
        (["--scaling", "bogus"], "scaling"),
        (["--uncertainty", "100000"], "--uncertainty"),
        (["--peak-tflops", "abc"], "peak-tflops"),
        (["--seed", "1"], "--seed"),
    ],
)
def test_search_bad_input_names_the_field(args, field):
    res = runner.invoke(app, ["limits", "search", "--compute", "1e28", *args])
    assert res.exit_code == 2, res.output
    assert field in res.output and "Traceback" not in res.output
