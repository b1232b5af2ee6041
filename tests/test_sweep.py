"""`dtsim sweep` (issue 8): N-dimensional grids over the batch path, tidy tables, plots, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import dtsim
from dtsim.analysis.grid import parse_vary, run_grid
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app
from dtsim.models.decentralized.engine import simulate_batch

runner = CliRunner()


def test_parse_numeric_ranges():
    a = parse_vary("bandwidth_mbps=10:1000:3:log")
    assert np.allclose(a.values, [10, 100, 1000]) and a.log
    a = parse_vary("mfu=0.2:0.4:3")
    assert np.allclose(a.values, [0.2, 0.3, 0.4]) and not a.log
    # integer fields are rounded and de-duplicated, in order
    a = parse_vary("num_nodes=1:4:10")
    assert a.values.tolist() == [1, 2, 3, 4]
    a = parse_vary("compression=1,16,150")
    assert a.values.tolist() == [1, 16, 150]


def test_parse_lists_of_names():
    a = parse_vary("node=16x-h100-sxm,50x-a100-80gb")
    assert not a.numeric and a.values.tolist() == ["16x-h100-sxm", "50x-a100-80gb"]
    a = parse_vary("inner_steps=auto,32")
    assert a.values.tolist() == ["auto", "32"]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("name=a,b", "cannot vary"),
        ("assumptions=1:2:2", "cannot vary"),
        ("num_nodes=", "empty range"),
        ("num_nodes=8:64:0", "empty range"),
        ("num_nodes=8:8:5", "empty range"),
        ("bandwidth_mbps=0:100:5:log", "log range"),
        ("precision=1:2:3", "not numeric"),
        ("num_nodes=8:64", "start:stop:num"),
        ("num_nodes=a:b:3", "not a number"),
        ("num_nodes", "field=start:stop:num"),
        ("compression=1,,4", "empty value"),
    ],
)
def test_bad_vary_specs(spec, needle):
    with pytest.raises(ScenarioError) as exc:
        parse_vary(spec)
    assert needle in str(exc.value)


def test_grid_rows_equal_scalar_simulations():
    base = dtsim.Scenario(parameters_b=70)
    axes = [
        parse_vary("num_nodes=4:512:5:log"),
        parse_vary("bandwidth_mbps=10:1000:3:log"),
        parse_vary("precision=fp16,fp8"),
    ]
    g = run_grid(base, axes)
    assert g.n == 5 * 3 * 2
    # row order: the last axis varies fastest
    assert g.columns["precision"][:2].tolist() == ["fp16", "fp8"]
    rng = np.random.default_rng(7)
    for i in rng.choice(g.n, 6, replace=False):
        fields = {a.field: g.columns[a.field][i] for a in axes}
        fields["num_nodes"] = int(fields["num_nodes"])
        r = dtsim.simulate(base.replace(**fields))
        for key in ("wall_clock_days", "quality_adjusted_flop", "cost_usd", "efficiency"):
            assert g.columns[key][i] == pytest.approx(getattr(r, key), rel=1e-12)
        assert g.columns["mode"][i] == r.mode
    # every input is a column (constants too) beside every output
    for field in ("parameters_b", "tokens_t", "latency_ms", "mfu", "num_nodes", "bandwidth_mbps"):
        assert field in g.columns
    # bandwidth_mbps varies and sets both directions: each row holds the value it set, not the base's
    assert list(g.columns["bandwidth_up_mbps"]) == list(g.columns["bandwidth_mbps"])


def test_node_as_a_batch_field_matches_presets():
    ids = list(dtsim.catalog.nodes())
    b = simulate_batch(dtsim.Scenario(parameters_b=70), node=np.array(ids))
    for i, nid in enumerate(ids):
        r = dtsim.simulate(dtsim.Scenario(parameters_b=70, node=nid))
        assert b["cost_usd"][i] == r.cost_usd
        assert b["wall_clock_days"][i] == pytest.approx(r.wall_clock_days, rel=1e-12, nan_ok=True)
    # A node and its peak varied together: the given peak wins, as `--set node=… --set pflops_per_node=…`.
    b = simulate_batch(dtsim.Scenario(), node=np.array(ids[:2]), pflops_per_node=np.array([1.0, 2.0]))
    for i, (nid, peak) in enumerate(zip(ids[:2], (1.0, 2.0), strict=True)):
        r = dtsim.simulate(dtsim.load_scenario(overrides={"node": nid, "pflops_per_node": peak}))
        assert r.wall_clock_days == b["wall_clock_days"][i]
        assert b["node_sustained_flop_s"][i] == peak * 1e15 * r.scenario["mfu"]


@pytest.mark.parametrize("gpu", ["h100-sxm", "v100", "a100-80gb"])
def test_sweep_over_gpu_matches_simulate_with_that_gpu(gpu):
    """Issue 12's reproducer: `sweep --preset default --vary gpu=…` changed only price and power."""
    r = runner.invoke(
        app, ["sweep", "--preset", "default", "--vary", "gpu=h100-sxm,v100,a100-80gb", "--json"]
    )
    assert r.exit_code == 0, r.output
    row = next(x for x in json.loads(r.output) if x["gpu"] == gpu)
    s = runner.invoke(app, ["simulate", "--preset", "default", "--set", f"gpu={gpu}", "--json"])
    assert s.exit_code == 0, s.output
    assert row["wall_clock_days"] == json.loads(s.output)["wall_clock_days"]


def test_cli_writes_csv_parquet_and_plots(tmp_path):
    csv_path, pq_path = tmp_path / "g.csv", tmp_path / "g.parquet"
    r = runner.invoke(
        app,
        [
            "sweep",
            "--vary",
            "num_nodes=8:64:4",
            "--vary",
            "bandwidth_mbps=10,100",
            "--out",
            str(csv_path),
            "--plot",
            str(tmp_path / "heat.png"),
            "--metric",
            "global_mfu",
        ],
    )
    assert r.exit_code == 0, r.output
    lines = csv_path.read_text().splitlines()
    assert len(lines) == 1 + 8  # header + 4 × 2 points
    header = [h.strip('"') for h in lines[0].split(",")]
    assert {"num_nodes", "bandwidth_mbps", "global_mfu", "mode", "parameters_b"} <= set(header)
    assert (tmp_path / "heat.png").stat().st_size > 5000
    pytest.importorskip("pyarrow", reason="Parquet needs the table extra (pyarrow)")
    r = runner.invoke(
        app, ["sweep", "--vary", "mfu=0.2:0.5:4", "--out", str(pq_path), "--plot", str(tmp_path / "line.png")]
    )
    assert r.exit_code == 0, r.output
    import pyarrow.parquet as pq

    t = pq.read_table(pq_path)
    assert t.num_rows == 4 and "wall_clock_days" in t.column_names
    assert (tmp_path / "line.png").stat().st_size > 5000


def test_cli_json_records():
    r = runner.invoke(app, ["sweep", "--vary", "num_nodes=8,16", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [row["num_nodes"] for row in rows] == [8, 16]
    assert rows[0]["wall_clock_days"] > rows[1]["wall_clock_days"]


def test_cli_json_counts_and_undefined_values_are_what_simulate_writes():
    """The result's counts are integers and its not-applicable values null in a sweep's JSON as in
    simulate's: regional_steps_used without a regional tier, limiting_group without node groups."""
    for preset, nodes in (("colocated", 2), ("intellect-1", 14), ("default", 8)):
        r = runner.invoke(app, ["sweep", "--preset", preset, "--vary", f"num_nodes={nodes}", "--json", "-q"])
        assert r.exit_code == 0, r.output
        row = json.loads(r.output)[0]
        sim = runner.invoke(app, ["simulate", "--preset", preset, "--set", f"num_nodes={nodes}", "--json"])
        one = json.loads(sim.output)
        for key in (
            "regional_steps_used",
            "inner_steps_used",
            "auto_inner_steps",
            "limiting_group",
            "gpu_count",
        ):
            assert row[key] == one[key] and type(row[key]) is type(one[key]), (
                preset,
                key,
                row[key],
                one[key],
            )


def test_a_grid_point_that_breaks_a_rule_is_named_by_its_values():
    """The batch's row index (nodes_per_group[0]) told a user nothing about which point of the grid."""
    r = runner.invoke(
        app,
        [
            "sweep",
            "--preset",
            "intercontinental",
            "--vary",
            "num_nodes=1,2",
            "--vary",
            "hierarchical=true,false",
        ],
    )
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "nodes_per_group = 8.0" in text and "[0]" not in text
    assert "at the grid point num_nodes=1, hierarchical=true" in text


def test_each_row_says_the_inputs_a_varied_field_sets():
    """Varying a node preset left gpu, gpus_per_node, pflops_per_node, vram_per_node_gb and precision
    null, and varying bandwidth_mbps both directions: each row now holds what simulate ran with."""
    from dtsim.schema.scenario import load_scenario

    rows = json.loads(
        runner.invoke(
            app,
            ["sweep", "--preset", "governance", "--vary", "node=16x-h100-sxm,50x-a100-80gb", "--json", "-q"],
        ).output
    )
    for row in rows:
        s = load_scenario(preset="governance", overrides={"node": row["node"]})
        for k in ("gpu", "gpus_per_node", "pflops_per_node", "vram_per_node_gb"):
            assert row[k] == getattr(s, k), (k, row[k], getattr(s, k))
        assert row["precision"] == s.precision.value
    rows = json.loads(
        runner.invoke(app, ["sweep", "--vary", "gpu=h100-sxm,a100-80gb", "--json", "-q"]).output
    )
    for row in rows:
        s = load_scenario(overrides={"gpu": row["gpu"]})
        assert (row["pflops_per_node"], row["vram_per_node_gb"]) == pytest.approx(
            (s.pflops_per_node, s.vram_per_node_gb)
        )
    rows = json.loads(runner.invoke(app, ["sweep", "--vary", "bandwidth_mbps=10,100", "--json", "-q"]).output)
    assert [(r["bandwidth_up_mbps"], r["bandwidth_down_mbps"]) for r in rows] == [(10, 10), (100, 100)]
    # with the count, peak or precision varied beside them, each row still holds what ran there
    for vary in (
        ["gpu=h100-sxm,b200", "gpus_per_node=8,16"],
        ["gpu=h100-sxm,b200", "pflops_per_node=1,100"],
        ["node=dgx-h100,16x-h100-fp8", "precision=fp16,fp8"],
    ):
        args = [x for v in vary for x in ("--vary", v)]
        for row in json.loads(runner.invoke(app, ["sweep", *args, "--json", "-q"]).output):
            point = {v.split("=")[0]: row[v.split("=")[0]] for v in vary}
            s = load_scenario(overrides=point)
            for k in ("gpu", "gpus_per_node", "pflops_per_node", "vram_per_node_gb"):
                assert (
                    row[k] == pytest.approx(getattr(s, k))
                    if isinstance(row[k], float)
                    else row[k] == getattr(s, k)
                )
            assert row["precision"] == s.precision.value
    # a field a varied node or GPU sets, given beside it, is refused as the varied field itself is
    r = runner.invoke(app, ["sweep", "--set", "pflops_per_node=5", "--vary", "gpu=h100-sxm,b200"])
    assert r.exit_code == 2 and "is set by the varied gpu" in " ".join(r.output.split())


def test_each_point_carries_its_warnings_and_a_point_that_is_not_a_run_is_no_extreme():
    """A point whose replicas never synchronize (LESS_THAN_ONE_OUTER_STEP) was the grid's 'lowest' time
    with no word; the JSON lists each point's warning codes, the ones simulate gives that point."""
    args = ["sweep", "--preset", "intercontinental", "--vary", "num_nodes=1,1000000"]
    args += ["--vary", "bandwidth_mbps=0.001,1e6"]
    rows = json.loads(runner.invoke(app, [*args, "--json", "-q"]).output)
    for row in rows:
        point = [f"num_nodes={row['num_nodes']}", "--set", f"bandwidth_mbps={row['bandwidth_mbps']}"]
        sim = runner.invoke(app, ["simulate", "--preset", "intercontinental", "--set", *point, "--json"])
        assert row["warnings"] == [w["code"] for w in json.loads(sim.output)["warnings"]]
    no_run = [r for r in rows if "LESS_THAN_ONE_OUTER_STEP" in r["warnings"]]
    assert no_run and min(r["wall_clock_days"] for r in no_run) < min(
        r["wall_clock_days"] for r in rows if r not in no_run
    )
    text = " ".join(runner.invoke(app, [*args, "-q"]).output.split())
    assert (
        "2 that are not a run" in text and "(not a run)" in text and "LESS_THAN_ONE_OUTER_STEP at 2" in text
    )
    lowest = text.split("│ lowest │")[1].split("│ highest")[0]
    assert "0.009375" not in lowest


@pytest.mark.parametrize(
    ("sets", "vary", "needle"),
    [
        (
            "num_nodes=3",
            "num_nodes=8,16",
            "num_nodes is varied, so this value would be replaced",
        ),
        ("bandwidth_up_mbps=5", "bandwidth_mbps=10,100", "would both set a link direction"),
        ("bandwidth_mbps=5", "bandwidth_up_mbps=10,100", "would both set a link direction"),
    ],
)
def test_a_set_field_the_grid_varies_is_refused_not_dropped(sets, vary, needle):
    """simulate refuses bandwidth_mbps beside a direction; a sweep dropped the --set (or applied it to the
    other direction only) without a word. A field set in a file stays the base the grid varies."""
    r = runner.invoke(app, ["sweep", "--set", sets, "--vary", vary, "-q"])
    assert r.exit_code == 2 and needle in " ".join(r.output.split()), r.output
    ok = runner.invoke(app, ["sweep", "--set", "mfu=0.3", "--vary", vary, "--json"])
    assert ok.exit_code == 0 and all(row["mfu"] == 0.3 for row in json.loads(ok.output))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sweep"], "give at least one"),
        (["sweep", "--vary", "num_nodes=8:64:0"], "empty range"),
        (["sweep", "--vary", "name=a,b"], "cannot vary"),
        (["sweep", "--vary", "num_nodes=0,8"], "num_nodes"),
        (["sweep", "--vary", "num_nodes=8,16", "--metric", "nonsense"], "not an output"),
        (["sweep", "--vary", "num_nodes=8,16", "--out", "x.xlsx"], ".csv or .parquet"),
        (["sweep", "--vary", "num_nodes=8,16", "--plot", "x.txt"], ".png, .svg or .pdf"),
        (
            [
                "sweep",
                "--vary",
                "num_nodes=8,16",
                "--vary",
                "mfu=0.3,0.4",
                "--vary",
                "compression=1,2",
                "--plot",
                "x.png",
            ],
            "one or two",
        ),
        (["sweep", "--vary", "num_nodes=8,16", "--vary", "num_nodes=1,2"], "varied twice"),
        (["sweep", "--vary", "num_nodes=1:1000000:1000000", "--vary", "mfu=0.1:0.5:10"], "at most"),
    ],
)
def test_cli_bad_input_exits_2(args, needle):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


def test_public_sweep_matches_simulate_row_by_row():
    """`dtsim.sweep` (the function behind `dtsim sweep`) agrees with `dtsim.simulate` at each point."""
    res = dtsim.sweep(dtsim.Scenario(), [parse_vary("num_nodes=72,144")])
    assert res.n == 2
    for i, n in enumerate((72, 144)):
        one = dtsim.simulate(dtsim.Scenario(num_nodes=n))
        assert float(res.columns["wall_clock_days"][i]) == pytest.approx(one.wall_clock_days, rel=1e-12)
    assert {dtsim.target.__name__, dtsim.governance.__name__, dtsim.emulate.__name__} == {
        "search",
        "analyse",
        "run",
    }


def test_a_whole_number_range_says_when_rounding_merged_its_points():
    """num_nodes=8:20:30 ran 13 points and said nothing of the other 17 (CLI and API alike)."""
    from fastapi.testclient import TestClient

    from dtsim.interfaces.api.app import create_app

    r = runner.invoke(app, ["sweep", "--vary", "num_nodes=8:20:30"])
    text = " ".join(r.output.split())
    assert r.exit_code == 0 and "num_nodes: 30 points asked, 13 distinct whole numbers" in text, r.output
    r = runner.invoke(app, ["sweep", "--vary", "num_nodes=8:20:30", "--json"])
    assert r.exit_code == 0 and "30 points asked" in r.stderr and len(json.loads(r.stdout)) == 13
    c = TestClient(create_app(ui=False))
    got = c.post(
        "/api/sweep", json={"vary": [{"field": "num_nodes", "start": 8, "stop": 20, "num": 30}]}
    ).json()
    assert got["points"] == 13 and got["notes"] and "30 points asked" in got["notes"][0]
    got = c.post(
        "/api/sweep", json={"vary": [{"field": "num_nodes", "start": 8, "stop": 20, "num": 13}]}
    ).json()
    assert got["notes"] == []


def test_every_number_simulate_gives_is_a_batch_column_of_that_name():
    """A trial user's case: simulate --json says pp_stages and compute_step_s, which sweep --metric and
    --prob refused (the batch called them stages and step_s). Every numeric result field of simulate
    is now a column of the batch path, with the same value."""
    from dtsim.models.decentralized.engine import simulate, simulate_batch
    from dtsim.schema.scenario import load_scenario

    for fields in ({}, {"parameters_b": 1000}):
        scenario = load_scenario(overrides=fields)
        result = simulate(scenario).model_dump()
        columns = simulate_batch(scenario).columns
        numbers = {k: v for k, v in result.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        assert {"pp_stages", "compute_step_s"} <= set(numbers)
        for name, value in numbers.items():
            assert name in columns, name
            assert float(np.asarray(columns[name]).reshape(-1)[0]) == pytest.approx(
                value, rel=1e-12, nan_ok=True
            ), name
    res = runner.invoke(app, ["sweep", "--vary", "parameters_b=100,1000", "-q", "--metric", "pp_stages"])
    assert res.exit_code == 0, res.output


def test_a_varied_gpu_count_gives_each_row_its_own_peak_and_memory():
    """A review's case: varying gpus_per_node wrote the base's 32 PFLOPS and 2,304 GB on every row, where
    the 8-GPU row ran at 16 and 1,152 (a count scales the node's peak and memory, as simulate does)."""
    res = runner.invoke(app, ["sweep", "--vary", "gpus_per_node=8,16", "-q", "--json"])
    assert res.exit_code == 0, res.output
    for row in json.loads(res.stdout):
        s = dtsim.simulate({"gpus_per_node": row["gpus_per_node"]}).scenario
        assert (row["pflops_per_node"], row["vram_per_node_gb"]) == (
            s["pflops_per_node"],
            s["vram_per_node_gb"],
        )
    assert [r["pflops_per_node"] for r in json.loads(res.stdout)] == [16.0, 32.0]
