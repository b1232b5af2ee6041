"""`dtsim target` (issue 8): the closed forms behind the search, the search against brute force,
the inverse queries, monotonicity, and bad input."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from typer.testing import CliRunner

import dtsim
from dtsim.analysis.search import (
    NodeSpec,
    Space,
    node_count_grid,
    search,
)
from dtsim.analysis.targets import Target, metric_at, tokens_needed
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app
from dtsim.models.decentralized.engine import simulate_batch
from dtsim.schema.scenario import load_scenario

runner = CliRunner()
ASM = Assumptions()
BASE = load_scenario(preset="governance")


@pytest.mark.parametrize(
    ("params", "hier", "nodes"),
    [(70, False, 2), (70, False, 100), (70, True, 100), (300, False, 100), (300, True, 64), (300, False, 5)],
)
def test_wall_clock_is_linear_in_tokens(params, hier, nodes):
    """The search's premise: one simulation at a probe token count gives the token rate."""
    b = simulate_batch(
        BASE.replace(node="16x-h100-sxm", parameters_b=params, hierarchical=hier, num_nodes=nodes),
        tokens_t=np.array([0.37, 1.0, 9.1, 211.0]),
    )
    w = np.asarray(b["wall_clock_days"])
    assert np.allclose(w / np.array([0.37, 1.0, 9.1, 211.0]), w[1], rtol=1e-12)
    assert b["mode"][0] != "infeasible"


@pytest.mark.parametrize("kind", ["local", "quality"])
def test_tokens_needed_reaches_the_target_exactly(kind):
    """Simulating at the closed-form token count gives exactly the target (quality: χ included)."""
    rng = np.random.default_rng(3)
    for _ in range(12):
        n = int(rng.integers(2, 3000))
        p = float(rng.uniform(5, 300))
        s = BASE.replace(
            node="16x-h100-sxm", parameters_b=p, num_nodes=n, compression=float(rng.choice([16, 150]))
        )
        probe = dtsim.simulate(s.replace(tokens_t=1.0))
        if probe.mode == "infeasible":
            continue
        x = float(10 ** rng.uniform(22, 26))
        fpt = probe.model_flop / 1e12
        d = float(
            tokens_needed(Target(kind, x), p * 1e9, fpt, probe.efficiency, probe.replica_loss_multiplier, ASM)
        )
        if not np.isfinite(d):
            continue
        r = dtsim.simulate(s.replace(tokens_t=d / 1e12))
        got = r.model_flop * r.efficiency if kind == "local" else r.quality_adjusted_flop
        assert got == pytest.approx(x, rel=1e-9)
        assert float(
            metric_at(kind, p * 1e9, d, fpt, probe.efficiency, probe.replica_loss_multiplier, ASM)
        ) == pytest.approx(x, rel=1e-9)


def test_quality_target_beyond_the_loss_floor_is_unreachable():
    # a tiny model can never match the loss of a compute-optimal 1e30 FLOP run
    d = tokens_needed(Target("quality", 1e30), 1e9, 6e9, 0.9, 1.0, ASM)
    assert np.isinf(d)


def _brute_force(space, target, days):
    """Cheapest configuration by scalar simulation of every row at the tokens filling `days`."""
    best = None
    cfg = space.configs(ASM)
    for c in range(len(cfg["node"])):
        node = space.nodes[cfg["node"][c]]
        for n in space.node_counts:
            g = int(cfg["group"][c])
            if g and n < 2 * g:
                continue
            fields = dict(
                gpu=node.gpu,
                gpus_per_node=node.count,
                pflops_per_node=node.pflops,
                vram_per_node_gb=node.vram_gb,
                precision=node.precision,
                num_nodes=int(n),
                parameters_b=float(cfg["params_b"][c]),
                inner_steps="auto" if cfg["h"][c] == "auto" else int(cfg["h"][c]),
                compression=float(cfg["comp"][c]),
                hierarchical=g > 0,
                nodes_per_group=g or 8,
                activation_compression=float(cfg["act"][c]),
                regional_steps="auto",
                node=None,
            )
            probe = dtsim.simulate(BASE.replace(**fields, tokens_t=1.0))
            if probe.mode == "infeasible":
                continue
            r = dtsim.simulate(BASE.replace(**fields, tokens_t=days / probe.wall_clock_days))
            q = r.quality_adjusted_flop if target.kind == "quality" else r.model_flop * r.efficiency
            if q >= target.flop * (1 - 1e-12) and (best is None or r.cost_usd < best[0]):
                best = (r.cost_usd, int(n))
    return best


@pytest.mark.parametrize("kind", ["local", "quality"])
def test_search_matches_brute_force(kind):
    space = Space(
        nodes=[NodeSpec.from_preset("16x-h100-sxm"), NodeSpec.from_preset("50x-a100-80gb")],
        node_counts=np.arange(1, 25, dtype=float),
        fractions=(1.0, 0.5),
        pipeline_multiples=(2,),
        inner_steps=("auto", 16),
        compressions=(16, 150),
        group_sizes=(0, 4),
        activation_compressions=(4,),
    )
    target = Target(kind, 2e24)
    res = search(BASE, space, target, days_limit=300)
    brute = _brute_force(space, target, 300)
    assert res.winner is not None and brute is not None
    assert res.winner.cost_usd == pytest.approx(brute[0], rel=1e-12)
    assert res.rows == space.size(ASM)[1]


def test_refinement_finds_the_smallest_integer_node_count():
    node = NodeSpec.from_preset("16x-h100-sxm")
    kw = dict(
        nodes=[node],
        fractions=(1.0,),
        pipeline_multiples=(),
        inner_steps=("auto",),
        compressions=(150,),
        group_sizes=(0,),
        activation_compressions=(1,),
    )
    coarse = Space(node_counts=node_count_grid(5000, dense_to=4, step=1.5), **kw)
    fine = Space(node_counts=np.arange(1, 400, dtype=float), **kw)
    t = Target("local", 3e25)
    a, b = search(BASE, coarse, t), search(BASE, fine, t)
    assert a.refined_rows > 0
    assert a.winner.num_nodes == b.winner.num_nodes
    assert a.winner.cost_usd == b.winner.cost_usd


def test_e14_the_original_optimal_configuration():
    """find_optimal_config_for_target(16x H100 SXM, 1e24) = 6 nodes, 80B, H 19 (vectors E14)."""
    r = runner.invoke(
        app,
        [
            "target",
            "--quality-flop",
            "1e24",
            "--node",
            "16x-h100-sxm",
            "--compression",
            "150",
            "--min-nodes",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["min_nodes"] == 6
    w = out["winner"]
    assert w["parameters_b"] == 80 and w["inner_steps_used"] == 19 and w["cost_usd"] == 2_400_000
    assert w["reach_within_limit"] == pytest.approx(1.0452773741002098e24, rel=1e-9)
    assert out["search"]["rows_evaluated"] > 0


def test_higher_budget_never_lowers_reachable_compute():
    space = Space(
        nodes=[NodeSpec.from_preset(n) for n in ("16x-h100-sxm", "50x-a100-80gb", "80x-tpu-v5e")],
        node_counts=node_count_grid(2000),
        inner_steps=("auto",),
        compressions=(16, 150),
        group_sizes=(0, 8),
        activation_compressions=(4,),
    )
    reached = []
    for budget in (1e6, 3e6, 1e7, 3e7, 1e8, 3e8):
        res = search(BASE, space, None, objective="reach", budget=budget, reach_metric="quality")
        assert res.winner.cost_usd <= budget
        reached.append(res.winner.reach)
    assert all(b >= a for a, b in itertools.pairwise(reached))
    assert reached[-1] > reached[0]


def test_fastest_objective_and_budget_constraint():
    space = Space(
        nodes=[NodeSpec.from_preset("16x-h100-sxm")],
        node_counts=node_count_grid(3000),
        inner_steps=("auto",),
        compressions=(150,),
        group_sizes=(0,),
        fractions=(1.0, 0.5),
        pipeline_multiples=(2,),
        activation_compressions=(4,),
    )
    t = Target("local", 1e25)
    cheap = search(BASE, space, t, objective="cost")
    fast = search(BASE, space, t, objective="time", budget=4 * cheap.winner.cost_usd)
    assert fast.winner.days <= cheap.winner.days
    assert fast.winner.cost_usd <= 4 * cheap.winner.cost_usd


def test_model_target_trains_exactly_that_model():
    r = runner.invoke(
        app,
        [
            "target",
            "--params-b",
            "70",
            "--tokens-t",
            "2",
            "--node",
            "16x-h100-sxm",
            "--compression",
            "150",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    w = json.loads(r.output)["winner"]
    assert w["parameters_b"] == 70 and w["tokens_t"] == pytest.approx(2.0)
    assert w["days"] <= 547.875


def test_cli_human_report_names_each_mode():
    r = runner.invoke(
        app,
        [
            "target",
            "--local-flop",
            "1e24",
            "--node",
            "16x-h100-sxm",
            "--compression",
            "150",
            "--max-nodes",
            "500",
        ],
        env={"COLUMNS": "240"},
    )
    assert r.exit_code == 0, r.output
    for word in ("search space", "winner", "flat DiLoCo", "hierarchical", "PP-group", "over WAN"):
        assert word in r.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["target", "--quality-flop", "1e40", "--node", "16x-h100-sxm", "--max-nodes", "200"],
            "no configuration",
        ),
        (["target"], "give exactly one"),
        (["target", "--local-flop", "1e24", "--quality-flop", "1e24"], "give exactly one"),
        (["target", "--local-flop", "-1"], "positive"),
        (["target", "--params-b", "70"], "positive size"),
        (["target", "--reach", "quality"], "needs a budget"),
        (["target", "--reach", "speed", "--budget", "1e6"], "local or quality"),
        (["target", "--local-flop", "1e24", "--objective", "cheapest"], "cost or time"),
        (["target", "--local-flop", "1e24", "--min-nodes"], "exactly one node"),
        (["target", "--local-flop", "1e24", "--node", "nope"], "unknown node preset"),
        (["target", "--local-flop", "1e24", "--compression", ""], "empty value"),
        (["target", "--local-flop", "1e24", "--inner-steps", "0"], "integers"),
        (["target", "--local-flop", "1e24", "--days", "0"], "number of days from 0.01 to 100000"),
        (["target", "--local-flop", "1e24", "--days", "1e9"], "number of days from 0.01 to 100000"),
        (["governance", "--days", "0.001"], "number of days from 0.01 to 100000"),
        (["target", "--quality-flop", "1e24", "--max-nodes", "100000000"], "--max-nodes = 100000000"),
        (["target", "--local-flop", "1e24", "--quality-flop", "1e24"], "'--local-flop and --quality-flop'"),
        (
            ["target", "--reach", "quality", "--budget", "1e7", "--objective", "time"],
            "does not apply to --reach",
        ),
        (
            [
                "target",
                "--min-nodes",
                "--node",
                "16x-h100-sxm",
                "--quality-flop",
                "1e24",
                "--objective",
                "time",
            ],
            "--min-nodes",
        ),
        (["governance", "--base-compute-cap", "-3"], "--base-compute-cap = -3.0"),
        (["governance", "--compute-cap", "-3"], "--compute-cap = '-3'"),
        (["target", "--local-flop", "1e24", "--set", "moe=true", "--set", "active_parameters_b=10"], "dense"),
    ],
)
def test_bad_input_exits_2(args, needle):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_space_errors():
    with pytest.raises(ScenarioError):
        Space(nodes=[])
    with pytest.raises(ScenarioError):
        Space(nodes=[NodeSpec.from_preset("16x-h100-sxm")], compressions=(0,))
    with pytest.raises(ScenarioError):
        node_count_grid(0)


@pytest.mark.parametrize(
    ("args", "unit"),
    [
        (["--params-b", "70", "--tokens-t", "2"], "tokens"),
        (["--quality-flop", "1e24"], "quality-adjusted FLOP"),
        (["--reach", "local", "--budget", "1e7"], "local-equivalent FLOP"),
    ],
)
def test_target_json_says_what_reach_within_limit_counts(args, unit):
    r = runner.invoke(app, ["target", *args, "--node", "16x-h100-sxm", "--json"])
    d = json.loads(r.stdout)
    assert d["reach_unit"] == unit and d["winner"]["reach_within_limit"] > 0


def test_a_target_reached_in_less_than_one_outer_step_is_not_an_answer():
    """A tiny target: the fastest configurations reach it before their replicas first synchronize (or
    on fewer tokens than a run may train). Those are not runs: the answer is the fastest configuration
    that trains at least one outer step, and simulate of it says nothing of the kind. Until 2026-11-26
    the search returned a 3.6e-9 T-token "run" and then failed on its tokens_t."""
    space = Space(
        nodes=[NodeSpec.from_preset("16x-h100-sxm")],
        node_counts=node_count_grid(3000),
        inner_steps=(16, 500),
        compressions=(150,),
        group_sizes=(0,),
        fractions=(1.0, 0.5),
        pipeline_multiples=(2,),
        activation_compressions=(4,),
    )
    res = search(BASE, space, Target("local", 1e20), objective="time")
    w = res.winner
    assert w is not None and res.not_a_run > 0
    from dtsim.analysis.uncertainty import answer_warnings

    codes = [x["code"] for x in answer_warnings(BASE, w.scenario_fields(), w.tokens_t)]
    assert "LESS_THAN_ONE_OUTER_STEP" not in codes and w.tokens_t >= 1e-6
    # with every configuration too soon there is no answer, and the CLI says why (exit 2, not a traceback
    # or an error about a tokens_t the user never gave)
    args = [
        "target",
        "--local-flop",
        "1e12",
        "--node",
        "16x-h100-sxm",
        "--max-nodes",
        "64",
        "--compression",
        "150",
    ]
    r = runner.invoke(app, args)
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "not a training run" in text and "tokens_t" not in text, r.output
    assert "not a run" in text  # each mode's verdict
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 2
    out = json.loads(r.stdout)
    assert out["winner"] is None and out["search"]["not_a_run_rows"] > 0


def test_solve_days_on_a_run_shorter_than_one_outer_step_says_so():
    """--solve days where every configuration trains the tokens before its first sync: the answer is that
    no run exists and why, not "does not fit" beside a model state that fits (until 2026-11-26)."""
    args = [
        "target",
        "--solve",
        "days",
        "--params-b",
        "0.01",
        "--tokens-t",
        "0.000001",
        "--node",
        "16x-h100-sxm",
    ]
    r = runner.invoke(app, args)
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "not a training run" in text and "does not fit" not in text, r.output


def test_the_printed_search_size_says_what_it_leaves_out():
    """A trial user's case: "2,880 configurations × 215 node counts … = 552,384 rows" (the product is
    619,200): the rows leave out hierarchies without two whole groups, and the line says so."""
    import re

    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    r = CliRunner().invoke(
        app,
        ["target", "--min-nodes", "--node", "16x-h100-sxm", "--quality-flop", "1e24"],
        env={"COLUMNS": "300"},
    )
    said = " ".join(r.output.split())
    m = re.search(r"([\d,]+) configurations × (\d+) node counts .*?: ([\d,]+) rows evaluated", said)
    assert m and "less the hierarchies without two whole groups" in said, said
    configs, counts, rows = (int(x.replace(",", "")) for x in m.groups())
    assert rows < configs * counts
