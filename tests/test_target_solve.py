"""Issue 15 items 6 and 7: the χ Newton iteration skips infeasible rows (bit for bit the same answers),
the direct questions of `dtsim target --solve` checked against direct `dtsim simulate` runs of their
answers, and the reproducers that crashed `dtsim target`."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from dtsim.analysis.search import MODE_IDS, NodeSpec, Space, search
from dtsim.analysis.targets import Target
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app
from dtsim.models.decentralized.engine import simulate_batch
from dtsim.physics import quality
from dtsim.schema.scenario import load_scenario

runner = CliRunner()
ASM = Assumptions()
BASE = load_scenario(preset="governance")


# --- item 7: the χ Newton iteration ----------------------------------------------------------------


def every_row_newton(loss, asm):
    """The batch iteration before issue 15 item 7, kept as the reference: every row is stepped until
    all have converged (a NaN row never does, so such a batch ran all 60 steps)."""
    a, b = asm.chinchilla_alpha, asm.chinchilla_beta
    big_a = asm.chinchilla_a
    big_b = asm.chinchilla_b * asm.chinchilla_tokens_per_param ** (-b)
    k = np.asarray(loss, dtype=float) - asm.chinchilla_e
    with np.errstate(all="ignore"):
        x = np.maximum(np.log(big_a / k) / a, np.log(big_b / k) / b)
        done = np.zeros(x.shape, dtype=bool)
        for _ in range(60):
            step = quality._newton_step(x, k, a, b, big_a, big_b)
            x = np.where(done, x, x + step)
            done |= np.abs(step) <= 1e-15 * np.maximum(np.abs(x), 1.0)
            if done.all():
                break
        return np.exp(x)


def _losses(n: int, seed: int) -> np.ndarray:
    """Losses a batch meets: ordinary ones, NaN (infeasible rows), ±inf, the floor E and below it."""
    rng = np.random.default_rng(seed)
    loss = ASM.chinchilla_e + 10 ** rng.uniform(-4, 1, n)
    loss[rng.random(n) < 0.4] = np.nan
    loss[:6] = [np.nan, np.inf, -np.inf, ASM.chinchilla_e, ASM.chinchilla_e - 0.5, 0.0]
    return loss


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [20, 64, 5001])
def test_newton_skipping_nan_rows_is_bit_identical(n, seed):
    loss = _losses(n, seed)
    with np.errstate(all="ignore"):
        got = quality.compute_optimal_params(loss, ASM)
    want = every_row_newton(loss, ASM)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isfinite(got).sum() > 0  # the comparison covers converged rows, not only NaN ones
    # and in a 2-D batch (the shape comes back as it went in)
    with np.errstate(all="ignore"):
        two = quality.compute_optimal_params(loss[: n - n % 2].reshape(2, -1), ASM)
    assert np.array_equal(two.ravel(), want[: n - n % 2], equal_nan=True)


def test_one_row_path_agrees_with_the_batch_on_nan():
    with np.errstate(all="ignore"):
        for v in (np.nan, ASM.chinchilla_e, ASM.chinchilla_e - 1, 2.5):
            one = quality.compute_optimal_params(np.array([v]), ASM)
            assert np.array_equal(one, every_row_newton(np.array([v, v]), ASM)[:1], equal_nan=True)


def test_nan_rows_are_not_iterated(monkeypatch):
    """A batch with infeasible rows stops when its feasible rows converge, not after 60 steps."""
    calls = []
    step = quality._newton_step
    monkeypatch.setattr(quality, "_newton_step", lambda *a: calls.append(a[0].size) or step(*a))
    loss = np.full(1000, np.nan)
    loss[::2] = np.linspace(1.9, 3.5, 500)
    quality.compute_optimal_params(loss, ASM)
    assert 0 < len(calls) <= 12
    assert calls[0] == 500  # the NaN half is never stepped
    calls.clear()
    with np.errstate(all="ignore"):
        quality.compute_optimal_params(np.array([np.nan]), ASM)
    assert calls == []


def test_search_answers_unchanged_by_skipping(monkeypatch):
    """A target search whose batches hold infeasible rows gives the same answer, field by field, with
    the every-row iteration (the answers before the change)."""
    space = Space(
        nodes=[NodeSpec.from_preset("16x-h100-sxm"), NodeSpec.from_preset("dgx-h100")],
        node_counts=np.array([1.0, 2, 3, 5, 8, 13, 40, 200]),
        fractions=(1.0, 0.5),
        pipeline_multiples=(2, 8),
        inner_steps=("auto", 16),
        compressions=(16, 150),
        group_sizes=(0, 4),
        activation_compressions=(4,),
    )
    target = Target("quality", 3e24)
    now = search(BASE, space, target, objective="time")
    seen = []
    original = quality.compute_optimal_params

    def reference(loss, asm):
        seen.append(np.isnan(np.asarray(loss)).sum())
        return every_row_newton(loss, asm) if np.size(loss) > 1 else original(loss, asm)

    monkeypatch.setattr(quality, "compute_optimal_params", reference)
    before = search(BASE, space, target, objective="time")
    assert sum(seen) > 0  # the space has infeasible rows (pipelines deeper than the node count)
    rows = lambda r: repr([r.winner, *r.by_mode.values(), *r.closest.values()])  # noqa: E731
    assert rows(now) == rows(before)


# --- the reproducers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("--inner-steps", "inf", "integers 1–100000 or auto"),
        ("--inner-steps", "nan", "integers 1–100000 or auto"),
        ("--group-sizes", "nan", "0 (flat) or 2–100000"),
        ("--group-sizes", "inf", "0 (flat) or 2–100000"),
        ("--compression", "inf", "positive finite numbers"),
        ("--fractions", "nan", "positive finite numbers"),
    ],
)
def test_non_finite_space_values_exit_2(option, value, allowed):
    r = runner.invoke(app, ["target", "--params-b", "10", "--tokens-t", "1", option, value])
    assert r.exit_code == 2, r.output
    assert option in r.output and value in r.output and allowed in r.output
    assert "Traceback" not in r.output
    assert isinstance(r.exception, SystemExit)  # typer's exit, not an OverflowError or ValueError


# --- item 6: direct questions (target --solve) ---------------------------------------------------------

# one configuration a model size: H auto, 150× compression, flat, 4× activation compression (pipelines)
ONE = ["--inner-steps", "auto", "--compression", "150", "--group-sizes", "0", "--activation-compression", "4"]
H100 = ["--node", "16x-h100-sxm"]


def strict_json(text: str):
    """Parse --json output, refusing NaN and Infinity (RFC 8259 has neither)."""

    def refuse(name):
        raise AssertionError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


def solve_json(*args: str) -> dict:
    r = runner.invoke(app, ["target", *args, "--json"])
    assert r.exit_code == 0, r.output
    return strict_json(r.stdout)


def simulate_cli(fields: dict, **changes) -> dict:
    """`dtsim simulate -p governance --set k=v ... --json` of a configuration (the direct check)."""
    sets = []
    for k, v in {**fields, **changes}.items():
        sets += ["--set", f"{k}={str(v).lower() if isinstance(v, bool) else v!r}".replace("'", "")]
    r = runner.invoke(app, ["simulate", "-p", "governance", *sets, "--json"])
    assert r.exit_code == 0, r.output
    return strict_json(r.stdout)


def compute_optimal_t(params_b: float) -> float:
    return ASM.chinchilla_tokens_per_param * params_b / 1e3


def fastest_over_space(space: Space, node: NodeSpec, n: int, params_b: float, tokens_t: float) -> float:
    """The fastest wall-clock days of a model on n nodes over every configuration of the space, by
    simulate_batch directly (not through the search): the brute force the answer is checked against."""
    sp = Space(**{**space.__dict__, "nodes": [node], "params_b": params_b})
    cfg = sp.configs(ASM)
    keep = (cfg["group"] == 0) | (n >= 2 * cfg["group"])
    best = np.inf
    for h in np.unique(cfg["h"][keep]):
        m = keep & (cfg["h"] == h)
        b = simulate_batch(
            BASE.replace(
                node=None,
                gpu=node.gpu,
                gpus_per_node=node.count,
                pflops_per_node=node.pflops,
                vram_per_node_gb=node.vram_gb,
                precision=node.precision,
                num_nodes=n,
                parameters_b=params_b,
                tokens_t=tokens_t,
                inner_steps=h if h == "auto" else int(h),
                regional_steps="auto",
            ),
            compression=cfg["comp"][m].astype(float),
            hierarchical=cfg["group"][m] > 0,
            nodes_per_group=np.where(cfg["group"][m] > 0, cfg["group"][m], 1).astype(float),
            activation_compression=cfg["act"][m].astype(float),
        )
        days = np.asarray(b["wall_clock_days"], dtype=float) * np.ones(int(m.sum()))
        ok = np.asarray(b.columns["mode_code"]) * np.ones(int(m.sum())) != MODE_IDS.index("infeasible")
        if ok.any():
            best = min(best, float(days[ok].min()))
    return best


@pytest.mark.parametrize(("nodes", "days"), [(20, 60.0), (72, 180.0), (1, 30.0), (300, 400.0)])
def test_largest_model_finishes_and_a_slightly_larger_one_does_not(nodes, days):
    out = solve_json(
        "--solve", "parameters_b", "--days", str(days), "--set", f"num_nodes={nodes}", *H100, *ONE
    )
    p = out["answer"]
    assert out["parameters_b"] == p == out["configuration"]["parameters_b"]
    assert out["tokens_t"] == pytest.approx(compute_optimal_t(p), rel=1e-12)
    r = simulate_cli(out["scenario_fields"])
    assert r["mode"] != "infeasible" and r["wall_clock_days"] <= days
    assert r["wall_clock_days"] == pytest.approx(out["configuration"]["days"], rel=1e-9)
    # the one configuration of this space, 1 % larger (and compute-optimal tokens for it): too slow or too big
    bigger = simulate_cli(out["scenario_fields"], parameters_b=p * 1.01, tokens_t=compute_optimal_t(p * 1.01))
    assert bigger["mode"] == "infeasible" or bigger["wall_clock_days"] > days
    assert out["limiting_factor"] == ("memory" if bigger["mode"] == "infeasible" else out["limit"]["factor"])


def test_largest_model_over_the_whole_space_by_brute_force():
    """Default H, compression and hierarchy: the answer's run is the fastest of its size, and no
    configuration of a 1 % larger model finishes within the limit."""
    node = NodeSpec.from_preset("16x-h100-sxm")
    out = solve_json("--solve", "parameters_b", "--days", "120", "--set", "num_nodes=40", *H100)
    p, space = out["answer"], Space(nodes=[node])
    assert fastest_over_space(space, node, 40, p, compute_optimal_t(p)) == pytest.approx(
        out["configuration"]["days"], rel=1e-9
    )
    assert simulate_cli(out["scenario_fields"])["wall_clock_days"] <= 120
    assert fastest_over_space(space, node, 40, p * 1.01, compute_optimal_t(p * 1.01)) > 120


@pytest.mark.parametrize(("params_b", "days", "tokens"), [(70, 180, None), (700, 180, None), (7, 20, "2")])
def test_fewest_nodes_is_the_fewest(params_b, days, tokens):
    args = ["--solve", "num_nodes", "--params-b", str(params_b), "--days", str(days), *H100, *ONE]
    out = solve_json(*args, *(["--tokens-t", tokens] if tokens else []))
    n = out["answer"]
    assert isinstance(n, int) and n == out["num_nodes"] == out["configuration"]["num_nodes"]
    t = float(tokens) if tokens else compute_optimal_t(params_b)
    assert out["tokens_t"] == pytest.approx(t, rel=1e-12)
    r = simulate_cli(out["scenario_fields"])
    assert r["mode"] != "infeasible" and r["wall_clock_days"] <= days
    if n > 1:
        fewer = simulate_cli(out["scenario_fields"], num_nodes=n - 1)
        assert fewer["mode"] == "infeasible" or fewer["wall_clock_days"] > days
        assert out["beyond"]["num_nodes"] == n - 1 and out["beyond"]["days"] > days


def test_fewest_nodes_over_the_whole_space_by_brute_force():
    node = NodeSpec.from_preset("16x-h100-sxm")
    out = solve_json("--solve", "num_nodes", "--params-b", "30", "--days", "60", *H100)
    n, t = out["answer"], compute_optimal_t(30)
    assert fastest_over_space(Space(nodes=[node]), node, n, 30, t) <= 60
    assert fastest_over_space(Space(nodes=[node]), node, n - 1, 30, t) > 60


@pytest.mark.parametrize(("params_b", "nodes", "tokens"), [(70, 72, None), (700, 500, "3"), (1.5, 2, None)])
def test_how_long_is_the_fastest_simulated_time(params_b, nodes, tokens):
    node = NodeSpec.from_preset("16x-h100-sxm")
    args = ["--solve", "days", "--params-b", str(params_b), "--set", f"num_nodes={nodes}", *H100]
    out = solve_json(*args, *(["--tokens-t", tokens] if tokens else []))
    t = float(tokens) if tokens else compute_optimal_t(params_b)
    r = simulate_cli(out["scenario_fields"])
    assert out["answer"] == pytest.approx(r["wall_clock_days"], rel=1e-9)
    assert out["answer"] == pytest.approx(
        fastest_over_space(Space(nodes=[node]), node, nodes, params_b, t), rel=1e-9
    )
    # the limiting factor is simulate's bottleneck of that run, named
    assert out["limit"]["bottleneck"] == r["bottleneck"]
    assert out["limit"]["bottleneck_share"] == pytest.approx(r["bottleneck_share"], rel=1e-9)
    assert out["days_limit"] is None and out["beyond"] is None


def test_limiting_factors_name_compute_network_and_memory():
    # a small model on few nodes: compute
    out = solve_json("--solve", "num_nodes", "--params-b", "7", "--days", "30", *H100)
    assert out["limiting_factor"] == "compute"
    # a model that spans nodes: pipeline hand-offs over the 100 Mbit/s WAN
    out = solve_json("--solve", "num_nodes", "--params-b", "700", "--days", "180", *H100)
    assert out["limiting_factor"] == "network/pipeline" and out["limit"]["bottleneck"] == "pipeline_comm"
    # a larger model no longer fits one node and must be pipelined: memory
    out = solve_json("--solve", "parameters_b", "--days", "40", "--set", "num_nodes=72", *H100)
    r = simulate_cli(out["scenario_fields"])
    bigger = out["beyond"]["parameters_b"]
    rb = simulate_cli(out["scenario_fields"], parameters_b=bigger, tokens_t=compute_optimal_t(bigger))
    assert out["limiting_factor"] == "memory" and rb["pp_stages"] > r["pp_stages"] == 1
    # one node: nothing larger fits at all
    out = solve_json("--solve", "parameters_b", "--days", "100000", "--set", "num_nodes=1", *H100)
    assert out["limiting_factor"] == "memory" and out["beyond"]["runs"] is False
    assert "does not fit" in out["limit"]["why"]


def test_text_report_names_the_answer_and_the_limit():
    r = runner.invoke(
        app, ["target", "--solve", "num_nodes", "--params-b", "70", "--days", "180"], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0, r.output
    for words in ("fewest nodes:", "limiting factor: compute", "check it: dtsim simulate", "tokens: "):
        assert words in r.output


def test_the_check_command_reproduces_the_answer_from_a_file(tmp_path):
    """A trial user's case: `target FILE --solve days` layers the file on its --preset (governance); the
    printed "check it: dtsim simulate (this base) …" did not say so, and run on the file it layered it on
    simulate's default preset: 286 days where target said 284. It names the file and the preset now."""
    import shlex

    f = tmp_path / "h1.yaml"
    # the file's parameters_b and tokens_t would be --params-b's and --tokens-t's: refused, as --set's are
    f.write_text("parameters_b: 10\ntokens_t: 1\nnode: dgx-h100\nnum_nodes: 12\n")
    r = runner.invoke(app, ["target", str(f), "--solve", "days", "--params-b", "70", "--tokens-t", "1.4"])
    said = " ".join(r.output.split())
    assert r.exit_code == 2 and "file.parameters_b = 10: target's search sets parameters_b itself" in said
    f.write_text("node: dgx-h100\nnum_nodes: 12\n")
    r = runner.invoke(
        app,
        ["target", str(f), "--solve", "days", "--params-b", "70", "--tokens-t", "1.4"],
        env={"COLUMNS": "100000"},
    )
    assert r.exit_code == 0, r.output
    (line,) = [x for x in r.output.splitlines() if x.startswith("check it: ")]
    argv = shlex.split(line.removeprefix("check it: "))
    assert argv[:4] == ["dtsim", "simulate", str(f), "--preset"] and argv[4] == "governance"
    out = runner.invoke(app, [*argv[1:], "--json"])
    days = json.loads(
        runner.invoke(
            app, ["target", str(f), "--solve", "days", "--params-b", "70", "--tokens-t", "1.4", "--json"]
        ).output
    )
    assert json.loads(out.output)["wall_clock_days"] == pytest.approx(days["answer"], rel=1e-9)


def test_solve_library_objective_nodes_and_no_time_limit():
    """search(objective="nodes") is the fewest nodes and days_limit=None the fastest at any length."""
    node = NodeSpec.from_preset("16x-h100-sxm")
    space = Space(nodes=[node], node_counts=np.arange(1, 60, dtype=float), params_b=20)
    t = Target("model", params_b=20, tokens_t=1.0)
    res = search(BASE, space, t, objective="nodes", days_limit=25)
    per_n = [
        search(BASE, Space(**{**space.__dict__, "node_counts": np.array([float(n)])}), t, "time", None)
        for n in (res.winner.num_nodes - 1, res.winner.num_nodes)
    ]
    assert per_n[0].winner.days > 25 >= per_n[1].winner.days
    with pytest.raises(ScenarioError):
        search(BASE, space, t, objective="cost", days_limit=None)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--solve", "size"], ["--solve", "size", "parameters_b, num_nodes or days"]),
        (["--solve", "days"], ["--params-b", "needs the model size", "0.001–100000"]),
        (["--solve", "num_nodes", "--params-b", "nan"], ["--params-b", "nan", "0.001–100000"]),
        (["--solve", "days", "--params-b", "1e6"], ["--params-b", "1000000", "0.001–100000"]),
        (
            ["--solve", "parameters_b", "--params-b", "7"],
            ["--params-b", "7", "unknown of --solve parameters_b"],
        ),
        (["--solve", "days", "--params-b", "7", "--days", "30"], ["--days", "30", "answer of --solve days"]),
        (["--solve", "days", "--params-b", "7", "--max-nodes", "9"], ["--max-nodes", "9", "num_nodes only"]),
        (
            ["--solve", "num_nodes", "--params-b", "7", "--max-nodes", "0"],
            ["--max-nodes", "0", "from 1 to 10,000,000"],
        ),
        (
            ["--solve", "num_nodes", "--params-b", "7", "--tokens-t", "inf"],
            ["--tokens-t", "inf", "1e-06–10000"],
        ),
        (
            ["--solve", "num_nodes", "--params-b", "7", "--days", "-3"],
            ["--days", "-3", "number of days from 0.01 to 100000"],
        ),
        (
            ["--solve", "num_nodes", "--params-b", "7", "--local-flop", "1e24"],
            ["--local-flop", "does not go with"],
        ),
        (["--solve", "num_nodes", "--params-b", "7", "--min-nodes"], ["--min-nodes", "does not go with"]),
        (
            ["--solve", "days", "--params-b", "7", "--objective", "time"],
            ["--objective", "time", "does not go with"],
        ),
        (["--solve", "days", "--params-b", "7", "--budget", "1e6"], ["--budget", "does not go with"]),
        (["--solve", "days", "--params-b", "7", "--fractions", "0.5"], ["--fractions", "does not go with"]),
        (
            ["--solve", "days", "--params-b", "7", "-n", "16x-h100-sxm", "-n", "dgx-h100"],
            ["--node", "one node"],
        ),
        (["--solve", "days", "--params-b", "7", "--node", "nope"], ["--node", "nope", "unknown node preset"]),
        (
            ["--solve", "days", "--params-b", "7", "--inner-steps", "inf"],
            ["--inner-steps", "inf", "1–100000"],
        ),
    ],
)
def test_solve_bad_combinations_exit_2(args, needles):
    r = runner.invoke(app, ["target", *args], env={"COLUMNS": "300"})
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit) and "Traceback" not in r.output
    for needle in needles:
        assert needle in r.output, (needle, r.output)


@pytest.mark.parametrize(
    ("args", "factor"),
    [
        (["--solve", "days", "--params-b", "5000", "--set", "num_nodes=3"], "does not fit"),
        (
            ["--solve", "parameters_b", "--days", "0.01", "--tokens-t", "100", "--set", "num_nodes=1"],
            "even a 0.001B model takes",
        ),
        (
            ["--solve", "num_nodes", "--params-b", "2000", "--days", "30", "--max-nodes", "500"],
            "of each outer step's expected wall time is",
        ),
    ],
)
def test_unanswerable_questions_exit_2_with_the_reason(args, factor):
    for extra in ([], ["--json"]):
        r = runner.invoke(app, ["target", *args, *extra], env={"COLUMNS": "300"})
        assert r.exit_code == 2, r.output
        assert factor in r.output and "Traceback" not in r.output
        # no half answer on stdout: nothing, or under --json the error as one JSON object
        assert (json.loads(r.stdout)["detail"][0]["field"] == "--solve") if extra else r.stdout.strip() == ""


def test_solve_uncertainty_draws_the_answer():
    """--uncertainty draws the answer's configuration: its days at the medians are the answer's, and the
    chance is of finishing within the question's --days."""
    args = ["--solve", "num_nodes", "--params-b", "30", "--days", "60", *H100]
    out = solve_json(*args, "--uncertainty", "64", "--seed", "1", "--set", "mfu=0.3..0.5")
    assert out["probabilities"][0]["expr"] == "wall_clock_days<=60.0"
    band = out["uncertainty"]["wall_clock_days"]
    assert band["p10"] < band["p90"]  # mfu is drawn, so the days move
    point = solve_json(*args, "--set", "mfu=0.4")  # the median of mfu=0.3..0.5
    assert point["answer"] == out["answer"]


def test_pick_is_the_first_row_of_lexsort_order():
    """search._pick narrows to each key's minimum instead of sorting: the same row as np.lexsort,
    with NaN after every number, ±0 equal, infinities and ties to the lowest index."""
    from dtsim.analysis.search import _pick

    rng = np.random.default_rng(7)
    values = np.array([0.0, -0.0, 1.0, 2.0, np.inf, -np.inf, np.nan, 3.5])
    for _ in range(5000):
        n = int(rng.integers(1, 40))
        keys = [
            rng.choice(values, n) if rng.random() < 0.8 else rng.random(n) for _ in range(rng.integers(1, 4))
        ]
        mask = rng.random(n) < 0.6
        idx = np.flatnonzero(mask)
        want = int(idx[np.lexsort(tuple(k[idx] for k in reversed(keys)))[0]]) if idx.size else None
        assert _pick(mask, *keys) == want


def test_a_space_without_a_configuration_for_the_node_count():
    """Hierarchies need two whole groups: a space of only groups says so (exit 2), and the fewest nodes
    can be set by that rule, named as the limit."""
    r = runner.invoke(
        app, ["target", "--solve", "days", "--params-b", "7", "--group-sizes", "4", "--set", "num_nodes=7"]
    )
    assert r.exit_code == 2 and "--group-sizes" in r.output and "2·g nodes" in r.output
    out = solve_json("--solve", "num_nodes", "--params-b", "7", "--days", "100", "--group-sizes", "4")
    assert out["answer"] == 8 and out["limiting_factor"] == "group size"
    assert out["beyond"] == {"parameters_b": 7.0, "num_nodes": 7, "days": None, "runs": False}


def test_a_limit_of_any_size_gives_no_warning():
    """The largest limit the table allows runs without an overflow; beyond it the limit is refused."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an overflow in rate × days would raise
        r = runner.invoke(app, ["target", "--solve", "parameters_b", "--days", "100000", "--json"])
    assert r.exit_code == 0, r.output
    assert strict_json(r.stdout)["answer"] > 0
    r = runner.invoke(app, ["target", "--solve", "parameters_b", "--days", "1e308"])
    assert r.exit_code == 2 and "number of days from 0.01 to 100000" in " ".join(r.output.split())


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--quality-flop", "1e24", "--set", "parameters_b=7"], "use --params-b"),
        (["--quality-flop", "1e24", "--set", "num_nodes=3"], "use --max-nodes or --min-nodes"),
        (["--solve", "days", "--params-b", "70", "--set", "compression=3"], "use --compression"),
        (["--solve", "parameters_b", "--set", "parameters_b=7"], "--solve parameters_b finds it"),
        (["--solve", "days", "--params-b", "10", "--set", "tokens_t=1"], "use --tokens-t"),
        # --solve days takes the model from --params-b: the base's parameters_b was silently ignored
        (["--solve", "days", "--params-b", "70", "--set", "parameters_b=5"], "use --params-b"),
        (["--solve", "num_nodes", "--params-b", "70", "--set", "parameters_b=5"], "use --params-b"),
        (
            ["--solve", "days", "--params-b", "10", "--node", "dgx-h100", "--set", "gpu=a100-80gb"],
            "use --node",
        ),
    ],
)
def test_a_base_field_the_search_sets_is_refused_not_ignored(args, needle):
    """--set of a field the search replaces would change nothing: refused, naming what to give instead;
    --solve keeps the base's node and node count, so those stay settable there."""
    res = runner.invoke(app, ["target", *args])
    assert res.exit_code == 2, res.output
    assert needle in " ".join(res.output.split()) and "Traceback" not in res.output
    kept = runner.invoke(
        app, ["target", "--solve", "days", "--params-b", "7", "--set", "num_nodes=40", "--json"]
    )
    assert kept.exit_code == 0, kept.output
    # the base's precision is used by node presets without their own: kept, and it changes the answer
    runs = [
        runner.invoke(
            app,
            ["target", "--local-flop", "1e25", "--node", "16x-h100-sxm", "--set", f"precision={p}", "--json"],
        )
        for p in ("fp16", "fp8")
    ]
    assert all(r.exit_code == 0 for r in runs)
    assert json.loads(runs[0].stdout)["winner"] != json.loads(runs[1].stdout)["winner"]


def test_the_bases_own_node_is_not_named_like_a_preset():
    """A trial user's case: the answer named "16x-gh200-fp16", which --node refused as an unknown preset,
    and labelled the base's 32 PFLOP/s (not the catalog's 15.8 dense FP16) as FP16 without a word."""
    out = json.loads(runner.invoke(app, ["target", "--solve", "days", "--params-b", "70", "--json"]).output)
    node = out["configuration"]["node"] if "configuration" in out else out["run"]["node"]
    assert node == "the base's 16× gh200 (32 PFLOP/s)", out
    r = runner.invoke(app, ["target", "--solve", "days", "--params-b", "70"], env={"COLUMNS": "300"})
    said = " ".join(r.output.split())
    assert "32 PFLOP/s as the base gives it; the catalog's dense FP16 peak is 15.8" in said, said
    # a node preset keeps its id
    r = runner.invoke(app, ["target", "--solve", "days", "--params-b", "70", "--node", "16x-gh200", "--json"])
    assert '"16x-gh200"' in r.output


@pytest.mark.parametrize(
    "args",
    [
        [
            *("--solve", "num_nodes", "--params-b", "10", "--days", "30", "--node", "dgx-h100"),
            *("--set", "bandwidth_mbps=1000", "--set", "latency_ms=30", "--set", "mfu=0.5"),
        ],
        ["--solve", "days", "--params-b", "70", "--set", "num_nodes=128", "--set", "bandwidth_mbps=1000"],
        # a review's case: an assumption was printed as a Python dict, which a shell split in two
        [
            "--solve",
            "days",
            "--params-b",
            "70",
            "--set",
            "num_nodes=128",
            "--set",
            "assumptions.straggler_coefficient=0.09",
        ],
    ],
)
def test_the_answers_fields_and_check_command_reproduce_it_with_the_users_own_fields(args):
    """A trial user's case: the `check it` command and `scenario_fields` left out the user's --set
    bandwidth, latency and MFU: the command gave 28.08 days, H = 329, η = 0.832 for an answer of 22.46
    days, H = 42, η = 0.892. Both now carry the user's fields under the answer's, and reproduce it."""
    import shlex

    from dtsim.models.decentralized.engine import simulate

    res = runner.invoke(app, ["target", *args, "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    fields = d["scenario_fields"]
    assert fields.get("bandwidth_mbps") == 1000 or fields["assumptions"] == {"straggler_coefficient": 0.09}
    run = simulate(load_scenario(preset="governance", overrides=fields))
    assert run.wall_clock_days == pytest.approx(d["configuration"]["days"], rel=1e-9)
    assert run.efficiency == pytest.approx(d["configuration"]["efficiency"], rel=1e-9)
    text = " ".join(runner.invoke(app, ["target", *args], env={"COLUMNS": "400"}).output.split())
    command = shlex.split(text.split("check it: ", 1)[1].split(" search:", 1)[0])
    assert command[:3] == ["dtsim", "simulate", "--preset"]
    again = runner.invoke(app, [*command[1:], "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["wall_clock_days"] == pytest.approx(d["configuration"]["days"], rel=1e-9)
