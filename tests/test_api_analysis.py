"""The analysis operations of the HTTP API (api/analysis.py): each returns the JSON of its CLI command's
`--json` for the same inputs, the grid form of /api/sweep equals single runs at its points (and the
one-field form keeps its shape), bad input is 422 naming the body field, work reports progress, and
OpenAPI shows an example of every operation."""

from __future__ import annotations

import json
import math
import time

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dtsim.errors import ScenarioError
from dtsim.interfaces.api import analysis, jobs
from dtsim.interfaces.api import app as api
from dtsim.interfaces.cli.main import app as cli_app
from dtsim.models.decentralized.engine import simulate
from dtsim.schema.scenario import load_scenario


@pytest.fixture(scope="module")
def client():
    return TestClient(api.create_app(ui=False))


def _timeless(x):
    """A payload without its wall-clock timings (`seconds`), which differ from run to run."""
    if isinstance(x, dict):
        return {k: _timeless(v) for k, v in x.items() if k != "seconds"}
    if isinstance(x, list):
        return [_timeless(v) for v in x]
    return x


def _cli(*args: str):
    res = CliRunner().invoke(cli_app, [*args, "--json"])
    data = json.loads(res.stdout)
    # exit 1 only where the answer is that nothing does it (limits search: no cluster trains the run)
    assert res.exit_code == 0 or (res.exit_code == 1 and data.get("found") is False), res.output
    return data


CASES = [  # (path, body, the CLI's arguments)
    (
        "/api/limits/curve",
        {"gpu": ["h100-sxm", "b200"], "sparse": True, "months": 4},
        "limits curve --gpu h100-sxm --gpu b200 --sparse --months 4",
    ),
    (
        "/api/limits/curve",
        {"level_bandwidth": [1e11, 1e10], "level_latency_us": [2, 5], "peak_tflops": 1500},
        "limits curve --level-bandwidth 1e11,1e10 --level-latency-us 2,5 --peak-tflops 1500",
    ),
    (
        "/api/limits/search",
        {"compute": 1e27, "scaling": "deepseek", "memory_gb": 141, "hbm_tb_s": 4.8},
        "limits search --compute 1e27 --scaling deepseek --memory-gb 141 --hbm-tb-s 4.8",
    ),
    (
        "/api/limits/search",
        {"compute": 1e31, "months": 0.1},
        "limits search --compute 1e31 --months 0.1",
    ),
    (
        "/api/validate",
        {"subset": ["NCCL", "MEG21"]},
        "validate --subset NCCL,MEG21",
    ),
    (
        "/api/target",
        {
            "local_flop": 1e24,
            "node": ["dgx-h100"],
            "max_nodes": 2000,
            "compression": [1, 16],
            "inner_steps": ["auto", 64],
        },
        "target --local-flop 1e24 --node dgx-h100 --max-nodes 2000 --compression 1,16 --inner-steps auto,64",
    ),
    (
        "/api/target",
        {"reach": "local", "budget": 10000000.0, "node": ["dgx-h100"], "max_nodes": 300, "days": 100},
        "target --reach local --budget 1e7 --node dgx-h100 --max-nodes 300 --days 100",
    ),
    (
        "/api/target",
        {"solve": "num_nodes", "params_b": 10, "days": 30, "max_nodes": 5000, "scenario": {"mfu": 0.35}},
        "target --solve num_nodes --params-b 10 --days 30 --max-nodes 5000 --set mfu=0.35",
    ),
    (
        "/api/governance",
        {
            "compute_cap": [8, 2],
            "memory_cap": [1024],
            "targets": [1e24, 1e25],
            "gpu": ["h100-sxm"],
            "max_nodes": 2000,
            "precisions": ["fp16"],
            "preset": "default",
        },
        "governance --compute-cap 8,2 --memory-cap 1024 --targets 1e24,1e25 --gpu h100-sxm --max-nodes 2000 --precisions fp16 --preset default",
    ),
]


@pytest.mark.parametrize(("path", "body", "args"), CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_each_operation_is_the_cli_json(client, path, body, args, tmp_path, monkeypatch):
    monkeypatch.setenv(jobs.STORE_ENV, str(tmp_path / "jobs"))
    resp = client.post(path, json=body)
    # inline, or (a timed estimate near the one-second line on a slow or busy machine) a job: same answer
    assert resp.status_code in (200, 202), resp.text
    answer = resp.json() if resp.status_code == 200 else _job_result(client, resp)
    assert "NaN" not in resp.text and "Infinity" not in resp.text
    assert _timeless(answer) == _timeless(_cli(*args.split()))


def test_validate_reports_every_part(client):
    data = client.post("/api/validate", json={}).json()
    for key in ("runs", "summary", "datacenter_check", "interval_coverage", "fit_verdicts", "bounds_ok"):
        assert key in data
    worst = [g["worst"] for g in data["summary"].values() if g.get("worst")]
    assert worst  # each group names its worst run


GRID = {
    "scenario": {"parameters_b": 20},
    "vary": [
        {"field": "num_nodes", "start": 8, "stop": 512, "num": 3, "log": True},
        {"field": "bandwidth_mbps", "values": [100, 1000]},
        {"field": "precision", "values": ["fp16", "fp8"]},
    ],
}


def test_grid_sweep_equals_single_runs_at_its_points(client):
    resp = client.post("/api/sweep", json=GRID)
    assert resp.status_code == 200, resp.text
    data = resp.json()
    assert data["fields"] == ["num_nodes", "bandwidth_mbps", "precision"] and data["points"] == 12
    cols = data["columns"]
    assert cols["num_nodes"] == [8, 8, 8, 8, 64, 64, 64, 64, 512, 512, 512, 512]  # the last axis fastest
    assert cols["precision"][:2] == ["fp16", "fp8"]
    for i in range(data["points"]):
        fields = {
            "parameters_b": 20,
            "num_nodes": int(cols["num_nodes"][i]),
            "precision": cols["precision"][i],
        }
        bw = cols["bandwidth_mbps"][i]
        one = simulate(load_scenario(layers=[fields | {"bandwidth_up_mbps": bw, "bandwidth_down_mbps": bw}]))
        assert cols["mode"][i] == one.mode
        for key in ("wall_clock_days", "global_mfu", "cost_usd"):
            assert math.isclose(cols[key][i], getattr(one, key), rel_tol=1e-9), (i, key)


def test_grid_sweep_is_the_cli_sweep_as_columns(client):
    data = client.post("/api/sweep", json=GRID).json()
    records = _cli(
        "sweep", "-q", "--set", "parameters_b=20", "--vary", "num_nodes=8:512:3:log",
        "--vary", "bandwidth_mbps=100,1000", "--vary", "precision=fp16,fp8",
    )  # fmt: skip
    assert len(records) == data["points"]
    for i, row in enumerate(records):
        assert {k: row[k] for k in data["columns"]} == {k: v[i] for k, v in data["columns"].items()}
        assert {k: row[k] for k in data["constants"]} == data["constants"]


def test_grid_sweep_has_no_nan(client):
    body = {"scenario": {"parameters_b": 600}, "vary": [{"field": "num_nodes", "values": [1, 4, 4000]}]}
    resp = client.post("/api/sweep", json=body)
    assert resp.status_code == 200 and "NaN" not in resp.text
    assert "infeasible" in resp.json()["columns"]["mode"]


def test_one_field_sweep_keeps_its_body_and_response(client):
    resp = client.post("/api/sweep", json={"scenario": {"num_nodes": 100}, "field": "num_nodes", "points": 5})
    assert resp.status_code == 200
    data = resp.json()
    assert (
        set(data)
        == {"field", "values", "mode", "columns", "bottleneck", "recovery", "feasible", "warnings", "notes"}
        and data["field"] == "num_nodes"
    )
    assert len(data["values"]) == len(data["mode"]) == len(data["columns"]["wall_clock_days"])
    explicit = client.post("/api/sweep", json={"field": "mfu", "values": [0.2, 0.4]}).json()
    assert explicit["values"] == [0.2, 0.4]


@pytest.mark.parametrize(
    ("path", "body", "field", "words"),
    [
        ("/api/limits/search", {"compute": 1e10}, "compute", "greater than or equal to"),
        ("/api/limits/search", {"compute": 1e25, "gpu": "z80"}, "gpu", "unknown"),
        ("/api/limits/curve", {"months": 0}, "months", "greater than 0"),
        (
            "/api/limits/curve",
            {"scaling": "linear"},
            "scaling",
            "unknown scaling; known: default, deepseek, fixed",
        ),
        ("/api/limits/curve", {"colour": 1}, "colour", "not a field of this request"),
        ("/api/validate", {"subset": ["NOPE"]}, "subset", "not a group or record id"),
        # a subnormal bandwidth (schemathesis found it) overflowed the limits model's costs to NaN: a 500
        (
            "/api/limits/curve",
            {"level_bandwidth": [6.7e16, 2.2e-309]},
            "level_bandwidth[1]",
            "greater than or equal to 1",
        ),
        ("/api/target", {}, "target", "give exactly one"),
        ("/api/target", {"local_flop": 1e24, "inner_steps": [0]}, "inner_steps", "integers 1–100000"),
        ("/api/target", {"local_flop": 1e24, "node": ["8xz80"]}, "node", "unknown node preset"),
        ("/api/target", {"local_flop": 1e24, "scenario": {"num_nodes": -1}}, "scenario.num_nodes", "≥ 1"),
        ("/api/target", {"solve": "days", "params_b": 10, "budget": 5}, "budget", "does not go with solve"),
        ("/api/target", {"local_flop": 1e24, "preset": "nope"}, "preset", "unknown preset; known: default"),
        ("/api/governance", {"precisions": ["fp3"]}, "precisions", "each must be"),
        ("/api/governance", {"targets": "1e25,auto"}, "targets", "'auto' is not a number"),
        ("/api/governance", {"compute_cap": "auto"}, "compute_cap", "'auto' is not a number"),
        ("/api/governance", {"gpu": ["h100-sxm", "h100-sxm"]}, "gpu", "listed twice"),
        ("/api/target", {"local_flop": 1e24, "node": ["dgx-h100"] * 2}, "node", "listed twice"),
        ("/api/governance", {"compute_cap": None, "memory_cap": None}, "compute_cap", "give at least one"),
        ("/api/sweep", {"field": "mfu", "vary": [{"field": "mfu", "values": [0.3]}]}, "field", "not both"),
        ("/api/sweep", {}, "field", "give the field to vary"),
        (
            "/api/sweep",
            {"vary": [{"field": "colour", "values": [1]}]},
            "vary[0].field",
            "unknown field; known: parameters_b",
        ),
        ("/api/sweep", {"vary": [{"field": "mfu", "start": 0.1}]}, "vary[0]", "missing stop, num"),
        ("/api/sweep", {"vary": [{"field": "num_nodes", "values": [0, 8]}]}, "vary[0]", "≥ 1"),
        (
            "/api/sweep",
            {"vary": [{"field": "num_nodes", "values": [8]}], "scenario": {"mfu": 3}},
            "scenario.mfu",
            "≤ 1",
        ),
        (
            "/api/sweep",
            {
                "vary": [
                    {"field": "num_nodes", "start": 1, "stop": 1000, "num": 100},
                    {"field": "mfu", "start": 0.1, "stop": 0.9, "num": 100},
                ]
            },
            "vary",
            f"at most {analysis.MAX_GRID_POINTS:,} points",
        ),
    ],
)
def test_bad_input_is_422_naming_the_field(client, path, body, field, words):
    resp = client.post(path, json=body)
    assert resp.status_code == 422, resp.text
    problems = resp.json()["detail"]
    assert any(p["field"] == field and words in p["message"] for p in problems), problems


def test_work_reports_progress_from_0_to_1():
    seen: list[float] = []
    analysis.governance_work(
        seen.append,
        **analysis.GovernanceRequest(targets=[1e25], gpu=["h100-sxm"], max_nodes=500).model_dump(),
    )
    assert seen and all(0 <= f <= 1 for f in seen) and seen[-1] == 1.0 and seen == sorted(seen)
    seen.clear()
    analysis.grid_sweep_work(seen.append, scenario={}, vary=[{"field": "num_nodes", "values": [8, 16]}])
    assert seen[-1] == 1.0


def test_openapi_shows_an_example_per_operation(client):
    spec = client.get("/openapi.json").json()
    for path in (
        "/api/limits/curve",
        "/api/limits/search",
        "/api/validate",
        "/api/target",
        "/api/governance",
        "/api/sweep",
    ):
        op = spec["paths"][path]["post"]
        ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert spec["components"]["schemas"][ref]["examples"], path
        assert "422" in op["responses"]
    for model in (analysis.LimitsCurveRequest, analysis.LimitsSearchRequest, analysis.ValidateRequest,
                  analysis.TargetRequest, analysis.GovernanceRequest, api.SweepRequest):  # fmt: skip
        for example in model.model_config["json_schema_extra"]["examples"]:
            model.model_validate(example)  # every example is a valid body


def test_a_target_nothing_reaches_is_200_with_no_winner(client):
    """The CLI prints the same JSON and exits 2; over HTTP the answer "no configuration" is a result."""
    body = {"local_flop": 1e30, "node": ["dgx-h100"], "max_nodes": 20}
    resp = client.post("/api/target", json=body)
    assert resp.status_code == 200 and resp.json()["winner"] is None
    cli = CliRunner().invoke(
        cli_app, ["target", "--local-flop", "1e30", "--node", "dgx-h100", "--max-nodes", "20", "--json"]
    )
    assert cli.exit_code == 2
    assert _timeless(resp.json()) == _timeless(json.loads(cli.stdout))


def _job_result(client, accepted) -> dict:
    href = accepted.json()["href"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        view = client.get(href).json()
        if view["state"] in ("done", "failed", "cancelled"):
            assert view["state"] == "done", view
            return view["result"]
        time.sleep(0.1)
    raise AssertionError(f"{href} did not finish")


def test_long_work_runs_as_a_job_with_the_same_answer(client, tmp_path, monkeypatch):
    monkeypatch.setenv(jobs.STORE_ENV, str(tmp_path / "jobs"))
    body = {"compute_cap": [8], "memory_cap": None, "targets": [1e25], "gpu": ["h100-sxm"], "max_nodes": 500}
    inline = client.post("/api/governance", json=body)
    assert inline.status_code == 200
    asked = client.post("/api/governance", json=body, headers={"Prefer": "respond-async"})
    assert asked.status_code == 202, asked.text
    assert _timeless(_job_result(client, asked)) == _timeless(inline.json())
    monkeypatch.setattr(jobs, "JOB_THRESHOLD_S", 0.0)  # every estimate is now "long"
    target = {"local_flop": 1e24, "node": ["dgx-h100"], "max_nodes": 2000}
    job = client.post("/api/target", json=target)
    assert job.status_code == 202, job.text
    cli = _cli(*["target", "--local-flop", "1e24", "--node", "dgx-h100", "--max-nodes", "2000"])
    assert _timeless(_job_result(client, job)) == _timeless(cli)
    solve = client.post("/api/target", json={"solve": "days", "params_b": 10})  # estimated at 0: inline
    assert solve.status_code == 200


def test_a_search_no_larger_than_the_probe_is_answered_by_the_probe():
    """max_nodes within the probe's: the probe searched everything asked, so it is the answer (the search
    ran twice before); a larger one is only estimated."""
    fields = analysis.TargetRequest(local_flop=1e24, node=["dgx-h100"], max_nodes=8).model_dump()
    seconds, answer = analysis.target_estimate(fields)
    assert seconds > 0 and answer is not None
    assert {k: v for k, v in answer.items() if k != "search"} == {
        k: v for k, v in analysis.target_work(**fields).items() if k != "search"
    }
    assert analysis.target_estimate({**fields, "max_nodes": 100_000})[1] is None


def test_an_estimate_probes_a_smaller_search_and_scales_it():
    fields = analysis.TargetRequest(local_flop=1e24, node=["dgx-h100"], max_nodes=100_000).model_dump()
    assert analysis.target_estimate(fields)[0] > 0
    with pytest.raises(ScenarioError) as bad:  # the probe checks the input before any job is made
        analysis.target_estimate({**fields, "inner_steps": [0]})
    assert bad.value.problems[0][0] == "inner_steps"


def test_api_refuses_a_scenario_field_the_search_sets(client):
    resp = client.post("/api/target", json={"quality_flop": 1e24, "scenario": {"parameters_b": 7}})
    assert resp.status_code == 422
    assert resp.json()["detail"][0]["field"] == "scenario.parameters_b"
    resp = client.post("/api/governance", json={"scenario": {"precision": "fp16"}})
    assert resp.status_code == 422 and "use precisions" in resp.json()["detail"][0]["message"]


def test_api_sweep_refuses_a_scenario_field_it_varies(client):
    body = {"vary": [{"field": "num_nodes", "values": [8, 16]}], "scenario": {"num_nodes": 3}}
    resp = client.post("/api/sweep", json=body)
    assert resp.status_code == 422 and resp.json()["detail"][0]["field"] == "scenario.num_nodes"
    # each point's warnings, as the CLI's --json lists them
    grid = client.post("/api/sweep", json={"vary": [{"field": "num_nodes", "values": [8, 16]}]}).json()
    assert all("INEFFICIENT_RUN" in w for w in grid["columns"]["warnings"])
    # an axes problem is named at vary, not as a scenario field
    body = {"vary": [{"field": "num_nodes", "values": [8, 16]}, {"field": "num_nodes", "values": [8, 16]}]}
    resp = client.post("/api/sweep", json=body)
    assert resp.status_code == 422 and resp.json()["detail"][0]["field"] == "vary"


def test_governance_refuses_an_empty_cap_list_and_target_states_its_real_model_bound():
    """Trial users' cases: {"compute_cap": []} ran as no compute cap (the CLI refuses the empty value);
    params_b 1e999 was refused with "≤ 10000000" where the bound is 100,000 B."""
    from fastapi.testclient import TestClient

    from dtsim.interfaces.api.app import create_app

    c = TestClient(create_app(ui=False))
    r = c.post("/api/governance", json={"compute_cap": [], "gpu": ["h100-sxm"]})
    assert r.status_code == 422 and r.json()["detail"][0]["field"] == "compute_cap"
    r = c.post("/api/target", json={"solve": "days", "params_b": 1e6})
    assert r.status_code == 422 and "100000" in r.json()["detail"][0]["message"]


def test_a_searched_answer_says_which_inputs_ran_at_their_medians(client):
    """/api/target with a distribution in its scenario ran it at its median and said nothing (the CLI
    says so on stderr): the answer names it, as simulate's does."""
    body = {
        "solve": "days",
        "params_b": 70,
        "scenario": {"mfu": {"dist": "uniform", "low": 0.2, "high": 0.8}},
    }
    r = client.post("/api/target", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["distributions_at_point"] == {"mfu": "uniform(low=0.2, high=0.8)"}
    r = client.post("/api/target", json={"solve": "days", "params_b": 70})
    assert "distributions_at_point" not in r.json()


def test_the_schema_states_the_bounds_the_searches_enforce():
    """A trial user's case: /openapi.json said days ≤ 1e6 and tokens_t ≤ 1e7, and a request within them
    was refused ("from 0.01 to 100000", "1e-06–10000")."""
    from fastapi.testclient import TestClient

    from dtsim.interfaces.api.app import create_app

    c = TestClient(create_app(ui=False))
    schemas = c.get("/openapi.json").json()["components"]["schemas"]
    for name in ("TargetRequest", "GovernanceRequest"):
        (days,) = [a for a in schemas[name]["properties"]["days"]["anyOf"] if a.get("type") == "number"]
        assert (days["minimum"], days["maximum"]) == (0.01, 100000.0)
    (tokens,) = [
        a for a in schemas["TargetRequest"]["properties"]["tokens_t"]["anyOf"] if a.get("type") == "number"
    ]
    assert (tokens["minimum"], tokens["maximum"]) == (1e-6, 1e4)
    for body in (
        {"solve": "num_nodes", "params_b": 70, "days": 100001},
        {"solve": "days", "params_b": 70, "tokens_t": 10001},
    ):
        assert c.post("/api/target", json=body).status_code == 422
