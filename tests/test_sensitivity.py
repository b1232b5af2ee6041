"""Sobol indices and tornado (`dtsim sensitivity`), Dask blocks and Parquet samples (issue 14 items 3, 5, 6)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from dtsim.analysis import uncertainty as unc
from dtsim.analysis.sensitivity import sensitivity, sobol_analysis
from dtsim.distributions import make_distribution
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app

runner = CliRunner()


def _json(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --- Sobol indices against analytic answers ---------------------------------------------------------------------


def test_ishigami_indices_match_the_analytic_values():
    """Done-when: the Ishigami function f = sin x1 + 7 sin² x2 + 0.1 x3⁴ sin x1, xi ~ U(−π, π), has
    S1 = (0.3139, 0.4424, 0) and ST = (0.5576, 0.4424, 0.2437) (Ishigami and Homma 1990; the values
    in Saltelli et al. 2008, "Global Sensitivity Analysis: The Primer", §4.6)."""
    d = {
        f"x{i}": make_distribution(f"x{i}", {"dist": "uniform", "low": -np.pi, "high": np.pi})
        for i in (1, 2, 3)
    }

    def ishigami(x):
        return np.sin(x["x1"]) + 7 * np.sin(x["x2"]) ** 2 + 0.1 * x["x3"] ** 4 * np.sin(x["x1"])

    res = sobol_analysis(d, ishigami, "f", n=1 << 14, seed=3)
    got = {r["input"]: r for r in res.indices}
    for name, s1, st in (("x1", 0.3139, 0.5576), ("x2", 0.4424, 0.4424), ("x3", 0.0, 0.2437)):
        assert got[name]["S1"] == pytest.approx(s1, abs=0.02), name
        assert got[name]["ST"] == pytest.approx(st, abs=0.02), name
    assert [r["input"] for r in res.indices] == ["x1", "x2", "x3"]  # ranked by ST
    assert res.runs == (1 << 14) * 5 + 7


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_same_seed_same_confidence_intervals_seed_zero_included(seed):
    """The bootstrap of the intervals is seeded from the run's seed, 0 too (SALib seeds its bootstrap
    only for a truthy seed, so seed 0 used to give new intervals on every run)."""
    d = {k: make_distribution(k, {"dist": "uniform", "low": 0, "high": 1}) for k in "ab"}

    def run():
        return sobol_analysis(d, lambda x: 3 * x["a"] + x["b"] ** 2, "y", n=256, seed=seed).indices

    assert run() == run()


def test_linear_model_indices_and_tornado():
    """y = 3a + b with a, b ~ U(0, 1): Var = 9/12 + 1/12, so S1 = ST = 0.9 and 0.1; the tornado moves y
    by 3·(P90 − P10) of a = 2.4 and by 0.8 for b, around the point 3·0.5 + 0.5 = 2."""
    d = {k: make_distribution(k, {"dist": "uniform", "low": 0, "high": 1}) for k in "ab"}
    res = sobol_analysis(d, lambda x: 3 * x["a"] + x["b"], "y", n=4096, seed=1)
    a, b = res.indices
    assert (a["input"], b["input"]) == ("a", "b")
    assert a["S1"] == pytest.approx(0.9, abs=0.02) and a["ST"] == pytest.approx(0.9, abs=0.02)
    assert b["S1"] == pytest.approx(0.1, abs=0.02) and b["ST"] == pytest.approx(0.1, abs=0.02)
    assert res.point == pytest.approx(2.0)
    assert (a["low"], a["high"]) == pytest.approx((2.0 - 1.2, 2.0 + 1.2))
    assert (b["low"], b["high"]) == pytest.approx((2.0 - 0.4, 2.0 + 0.4))


def test_sensitivity_of_simulate_ranks_bandwidth_first_on_a_network_bound_run():
    scenario, dists = unc.load_uncertain_scenario(
        set_texts=["bandwidth_mbps=50..200", "mfu=0.3..0.5"], fixed_assumptions=True
    )
    res = sensitivity(scenario, dists, "wall_clock_days", n=512, seed=0)
    first, second = res.indices
    assert first["input"] == "bandwidth_mbps" and first["ST"] > 0.9
    assert first["low"] > first["high"]  # more bandwidth (P90), fewer days
    assert second["input"] == "mfu" and second["ST"] < 0.01  # the sync is not hidden: MFU does not matter
    assert res.point == pytest.approx(unc.run_monte_carlo(scenario, {}, 1).outputs["wall_clock_days"]["p50"])


def test_sensitivity_reports_runs_done_and_total_as_the_other_analyses_do():
    """progress(done, total), as run_monte_carlo, the grid and the searches call theirs: the runs go in
    pieces, `total` is the Saltelli runs N·(d + 2) and the tornado's 2d + 1 throughout and the last call has done == total; the pieces change no
    number."""
    scenario, dists = unc.load_uncertain_scenario(
        set_texts=["bandwidth_mbps=50..200", "mfu=0.3..0.5"], fixed_assumptions=True
    )
    calls = []
    res = sensitivity(
        scenario, dists, "wall_clock_days", n=2048, seed=1, progress=lambda d, t: calls.append((d, t))
    )
    total = 2048 * (len(dists) + 2) + 2 * len(dists) + 1
    assert len(calls) > 2 and {t for _d, t in calls} == {total}, calls
    done = [d for d, _t in calls]
    assert done == sorted(done) and done[0] > 0 and done[-1] == total, done
    assert res.as_dict() == sensitivity(scenario, dists, "wall_clock_days", n=2048, seed=1).as_dict()


def test_sensitivity_cli_json_table_and_plot(tmp_path):
    out = _json(["sensitivity", "--set", "bandwidth_mbps=50..200", "--base", "256", "--seed", "1", "--json"])
    assert out["output"] == "wall_clock_days" and out["base_samples"] == 256
    names = [r["input"] for r in out["indices"]]
    assert names[0] == "bandwidth_mbps" and "assumptions.straggler_coefficient" in names  # the table's, too
    assert [r["ST"] for r in out["indices"]] == sorted((r["ST"] for r in out["indices"]), reverse=True)
    assert set(out["indices"][0]) >= {"input", "S1", "ST", "low", "high"}
    assert "NaN" not in json.dumps(out)
    again = _json(
        ["sensitivity", "--set", "bandwidth_mbps=50..200", "--base", "256", "--seed", "1", "--json"]
    )
    assert again == out
    for suffix in ("png", "svg"):
        path = tmp_path / f"s.{suffix}"
        text = runner.invoke(
            app,
            ["sensitivity", "--set", "bandwidth_mbps=50..200", "--base", "64", "--plot", str(path)],
            terminal_width=200,
        )
        assert text.exit_code == 0, text.output
        assert path.stat().st_size > 1000 and "Sobol indices" in text.stdout and "No effect" in text.stdout


@pytest.mark.parametrize(
    ("args", "field", "needle"),
    [
        (["--fixed-assumptions"], "inputs", "nothing varies"),
        (["--output", "mode"], "--output", "not a numeric output"),
        (["--output", "nonsense"], "--output", "known:"),
        (["--base", "1"], "--base", "≥ 2"),
        (["--base", "4000000"], "--base", "the limit"),
        (["--plot", "x.gif"], "--plot", ".png"),
        (["--seed", "-2"], "--seed", "≥ 0"),
        (["--set", "num_nodes=1..3", "--set", "parameters_b=3000"], "--output", "undefined on"),
    ],
)
def test_sensitivity_bad_input_names_the_field(args, field, needle):
    result = runner.invoke(app, ["sensitivity", "--base", "8", *args], terminal_width=300)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert field in text and needle in text and "Traceback" not in result.output


# --- blocks on Dask, samples to Parquet -------------------------------------------------------------------------


def _mc(**options):
    scenario, dists = unc.load_uncertain_scenario(
        set_texts=["bandwidth_mbps=lognormal:100:0.5", "mfu=0.3..0.5"]
    )
    return unc.run_monte_carlo(scenario, dists, 1 << 17, seed=9, probs=["wall_clock_days<=400"], **options)


def test_blocks_draw_the_stretch_of_one_sequence():
    d = {k: make_distribution(k, {"dist": "uniform", "low": 0, "high": 1}) for k in "abc"}
    whole = unc.draws(d, 4096, seed=2)
    part = unc.draws(d, 1000, seed=2, start=1500)
    for k in d:
        assert np.array_equal(whole[k][1500:2500], part[k])


def test_same_seed_same_numbers_on_a_local_dask_cluster():
    """Done-when: one process and a LocalCluster of 2 worker processes give identical results."""
    pytest.importorskip("distributed")
    one = _mc()
    two = _mc(scheduler="local", workers=2)
    assert one.outputs == two.outputs and one.probabilities == two.probabilities
    assert one.shares == two.shares and one.drivers == two.drivers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_same_seed_same_numbers_on_a_dask_scheduler_and_worker_started_by_hand():
    """Done-when: a cluster started with `dask scheduler` / `dask worker` (--scheduler tcp://…)."""
    pytest.importorskip("distributed")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "dask"]
    sched = subprocess.Popen(
        [*cmd, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = subprocess.Popen(
        [*cmd, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        from distributed import Client

        with Client(address, timeout="30s") as client:
            deadline = time.monotonic() + 60
            while len(client.scheduler_info()["workers"]) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
        one = _mc()
        cluster = _mc(scheduler=address)
        assert one.outputs == cluster.outputs and one.probabilities == cluster.probabilities
        # and through the CLI
        args = ["simulate", "--set", "mfu=0.3..0.5", "--uncertainty", "4096", "--seed", "1", "--json"]
        assert _json([*args, "--scheduler", address])["uncertainty"] == _json(args)["uncertainty"]
    finally:
        for p in (worker, sched):
            p.terminate()
            p.wait(timeout=30)


def test_samples_stream_to_parquet_and_match_the_summary(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "draws.parquet"
    mc = _mc(samples_path=str(path))
    table = pq.read_table(path)
    assert table.num_rows == 1 << 17
    assert {"input.mfu", "input.bandwidth_mbps", "input.assumptions.pue", "wall_clock_days", "mode"} <= set(
        table.column_names
    )
    days = table["wall_clock_days"].to_numpy()
    assert np.quantile(days, 0.9) == mc.outputs["wall_clock_days"]["p90"]
    assert np.mean(days <= 400) == mc.probabilities[0]["p"]
    dists = unc.load_uncertain_scenario(set_texts=["bandwidth_mbps=lognormal:100:0.5", "mfu=0.3..0.5"])[1]
    d = unc.draws(unc.without(dists, mc.unread), 8, seed=9)  # what the run drew: the unread held
    assert np.array_equal(table["input.mfu"].to_numpy()[:8], d["mfu"])


def test_a_failed_run_keeps_the_samples_file_that_was_there(tmp_path):
    path = tmp_path / "draws.parquet"
    path.write_bytes(b"kept")
    scenario, dists = unc.load_uncertain_scenario(set_texts=["mfu=normal:0.4:0.3"])
    with pytest.raises(ScenarioError):
        unc.run_monte_carlo(scenario, dists, 1024, seed=0, samples_path=str(path))
    assert path.read_bytes() == b"kept"
    assert [p.name for p in tmp_path.iterdir()] == ["draws.parquet"]  # no partial file left


@pytest.mark.parametrize(
    ("args", "field", "needle"),
    [
        (["--samples", "x.csv"], "--samples", ".parquet"),
        (["--samples", "/nonexistent/x.parquet"], "--samples", "folder does not exist"),
        (["--scheduler", "http://x"], "--scheduler", "tcp://host:port"),
        (["--workers", "0"], "--workers", "≥ 1"),
        (["--scheduler", "tcp://127.0.0.1:9", "--workers", "2"], "--workers", "local cluster"),
    ],
)
def test_simulate_bad_dask_and_samples_options_name_the_field(args, field, needle):
    result = runner.invoke(
        app, ["simulate", "--set", "mfu=0.3..0.5", "--uncertainty", "64", *args], terminal_width=300
    )
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert field in text and needle in text and "Traceback" not in result.output


def test_options_that_need_uncertainty_say_so():
    for args in (["--samples", "x.parquet"], ["--scheduler", "local"], ["--workers", "2"]):
        result = runner.invoke(app, ["simulate", *args], terminal_width=300)
        assert result.exit_code == 2 and "needs --uncertainty" in result.output


def test_an_unreachable_scheduler_is_a_clear_error():
    pytest.importorskip("distributed")
    port = _free_port()
    result = runner.invoke(
        app,
        [
            "simulate",
            "--set",
            "mfu=0.3..0.5",
            "--uncertainty",
            "64",
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
        ],
        terminal_width=300,
    )
    assert result.exit_code == 2, result.output
    assert "cannot reach a Dask scheduler" in result.output and "Traceback" not in result.output


def test_api_sensitivity_returns_what_the_cli_returns():
    """Issue 14 item 3: the API returns the same as `dtsim sensitivity --json`."""
    from fastapi.testclient import TestClient

    from dtsim.interfaces.api.app import create_app

    client = TestClient(create_app(ui=False))
    body = {
        "scenario": {"mfu": {"dist": "uniform", "low": 0.3, "high": 0.5}, "bandwidth_mbps": 100000},
        "output": "global_mfu",
        "base": 128,
        "seed": 4,
        "fixed_assumptions": True,
    }
    r = client.post("/api/sensitivity", json=body)
    assert r.status_code == 200, r.text
    api = r.json()
    args = ["--set", "mfu=0.3..0.5", "--set", "bandwidth_mbps=100000", "--output", "global_mfu"]
    cli = _json(["sensitivity", *args, "--base", "128", "--seed", "4", "--fixed-assumptions", "--json"])
    assert api == cli
    assert api["indices"][0]["input"] == "mfu" and api["indices"][0]["ST"] > 0.9
    bad = client.post("/api/sensitivity", json={**body, "output": "nope"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["field"] == "output"
    none = client.post("/api/sensitivity", json={"fixed_assumptions": True})
    assert none.status_code == 422 and "nothing varies" in none.text


def test_sensitivity_holds_the_assumptions_the_run_never_reads():
    """Sobol indices over the default scenario ran 22 table assumptions, 16 of which change no output
    (codec speeds, restart costs, MoE capacity on a dense run without failures or a codec): 3.5× the
    runs for rows of zeros. They are held and listed; nothing left to vary is said."""
    scenario, dists = unc.load_uncertain_scenario()
    res = sensitivity(scenario, dists, "wall_clock_days", n=64, seed=0)
    assert "assumptions.restart_s" in res.unread and "assumptions.moe_capacity_factor" in res.unread
    assert {r["input"] for r in res.indices} == set(dists) - set(res.unread)
    assert res.runs == 64 * (len(res.indices) + 2) + 2 * len(res.indices) + 1
    assert res.as_dict()["unread"] == res.unread
    only, held = unc.load_uncertain_scenario(fixed_assumptions=True)
    held = unc.Inputs({"assumptions.restart_s": dists["assumptions.restart_s"]})
    with pytest.raises(ScenarioError, match="nothing this run reads varies"):
        sensitivity(only, held, "wall_clock_days", n=64, seed=0)


def test_a_server_without_salib_answers_501_not_a_bad_request(monkeypatch):
    """A trial user's case: without SALib, POST /api/sensitivity answered 422 on a made-up field
    `scenario.sensitivity`, as if the request were wrong; the server's installation is (501). The CLI
    still exits 2 with the pip command."""
    import builtins

    from fastapi.testclient import TestClient

    from dtsim.interfaces.api import app as api

    real = builtins.__import__

    def no_salib(name, *args, **kwargs):
        if name.startswith("SALib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_salib)
    res = TestClient(api.create_app(ui=False)).post("/api/sensitivity", json={"base": 4})
    assert res.status_code == 501, res.text
    assert res.json()["detail"] == [
        {
            "field": "server",
            "value": "SALib",
            "message": "needs SALib: python3 -m pip install 'dtsim[sensitivity]'",
        }
    ]
    out = runner.invoke(app, ["sensitivity", "--base", "4"])
    assert out.exit_code == 2 and "pip install 'dtsim[sensitivity]'" in " ".join(out.output.split())
