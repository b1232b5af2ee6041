"""POST /api/step, /api/plan, /api/collective, /api/fabric (interfaces/api/datacenter.py): each answers
with what the CLI's `--json` prints for the same inputs, a batch equals its rows stepped one by one, bad
input is 422 naming the body's field (not a CLI flag, not the library's `layout.` prefix), unknown
fields are refused, and the OpenAPI document lists each operation with an example."""

from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dtsim.interfaces.api import app as api
from dtsim.interfaces.cli.main import app as cli_app

runner = CliRunner()
# body switches whose CLI flag is the negation (the body says what is on, as Layout does)
NEGATED = {"flash_attention": "--no-flash-attention", "overlap_grad_reduce": "--no-overlap-grad-reduce"}


@pytest.fixture(scope="module")
def client():
    return TestClient(api.create_app(ui=False))


def cli_args(body: dict, tmp_path) -> list[str]:
    """The command-line flags of a request body."""
    args = []
    for key, value in body.items():
        flag = "--" + key.replace("_", "-")
        if key in NEGATED:
            args += [] if value else [NEGATED[key]]
        elif key == "layouts":
            path = tmp_path / "layouts.json"
            path.write_text(json.dumps(value), "utf-8")
            args += ["--layouts", str(path)]
        elif isinstance(value, bool):
            args.append(flag if value else f"--no-{key.replace('_', '-')}")
        elif isinstance(value, list):
            args += [flag, ",".join(map(str, value))]
        else:
            args += [flag, str(value)]
    return args


def cli_json(command: str, body: dict, tmp_path, exit_code: int = 0) -> dict:
    res = runner.invoke(cli_app, [command, *cli_args(body, tmp_path), "--json"])
    assert res.exit_code == exit_code, res.output
    return json.loads(res.stdout)


STEP_BODIES = [
    {"model": "gpt3-175b", "nodes": 48, "tp": 8, "pp": 12, "gbs": 1536, "fabric": "dgx-a100-hdr"},
    {  # the network given field by field, the software switches off their defaults, a run's totals
        "model": "llama3.1-8b",
        "gpu": "h100-sxm",
        "nodes": 4,
        "nics_per_node": 4,
        "nic_gbps": 200,
        "nvlink_gbps": 2400,
        "nvlink_domain": 8,
        "oversubscription": 2,
        "nvls": False,
        "tp": 2,
        "pp": 2,
        "pp_layers": [15, 17],
        "gbs": 256,
        "mbs": 2,
        "zero": 3,
        "recompute": "full",
        "sequence_parallel": True,
        "flash_attention": False,
        "overlap_grad_reduce": False,
        "overlap_tp_comm": True,
        "fp32_grad_accumulation": False,
        "precision": "fp16",
        "tokens": 1e12,
        "usd_per_gpu_hour": 2.5,
    },
    {"hidden": 2048, "layers": 24, "heads": 16, "vocab": 50257, "seq_len": 2048, "gbs": 64, "tp": 2},
    {"model": "mixtral-8x7b", "nodes": 4, "ep": 8, "tp": 2, "gbs": 256, "moe_capacity_factor": 1.25},
]


@pytest.mark.parametrize("body", STEP_BODIES)
def test_step_is_the_cli_json(client, body, tmp_path):
    resp = client.post("/api/step", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json() == cli_json("step", body, tmp_path)
    assert {"step_time_s_p10", "step_time_s_p90", "fits", "fit_note", "warnings", "model_error"} <= set(
        resp.json()
    )


def test_step_batch_is_the_cli_layouts_json_and_each_row_alone(client, tmp_path):
    base = {"model": "llama3.1-8b", "gpu": "h100-sxm", "nodes": 2, "gbs": 256, "tokens": 1e12}
    rows = [
        {"tp": 1, "zero": 3, "name": "fsdp"},
        {"tp": 2, "pp": 2, "pp_layers": [15, 17]},
        {"tp": 8, "mbs": 2},
    ]
    resp = client.post("/api/step", json={**base, "layouts": rows})
    assert resp.status_code == 200, resp.text
    batch = resp.json()["layouts"]
    assert resp.json() == cli_json("step", {**base, "layouts": rows}, tmp_path)
    # a row's name labels its result and is not a layout field
    assert batch[0]["name"] == "fsdp" and "name" not in batch[1] and "name" not in batch[0]["layout"]
    rows[0].pop("name")
    singles = [client.post("/api/step", json={**base, **row}).json() for row in rows]
    assert [b["layout"] for b in batch] == [s["layout"] for s in singles]
    for b, s in zip(batch, singles, strict=True):
        assert b["step_time_s"] == pytest.approx(s["step_time_s"], rel=1e-12)
        assert b["memory_per_gpu_gb"] == pytest.approx(s["memory_per_gpu_gb"], rel=1e-12)
        assert b["run"]["days"] == pytest.approx(s["run"]["days"], rel=1e-12)


def test_step_trace_is_the_document_step_trace_writes(client, tmp_path):
    body = {"model": "gpt3-175b", "nodes": 48, "tp": 8, "pp": 12, "gbs": 1536, "fabric": "dgx-a100-hdr"}
    resp = client.post("/api/step/trace", json=body)
    assert resp.status_code == 200, resp.text
    path = tmp_path / "trace.json"
    res = runner.invoke(cli_app, ["step", *cli_args(body, tmp_path), "--trace", str(path)])
    assert res.exit_code == 0, res.output
    assert resp.json() == json.loads(path.read_text("utf-8"))
    step = client.post("/api/step", json=body).json()
    assert resp.json()["otherData"]["step_time_s"] == step["step_time_s"]
    stages = {e["tid"] for e in resp.json()["traceEvents"] if e["ph"] == "X"}
    assert stages == set(range(12 + 1))  # every pipeline stage and the data-parallel network


def test_step_trace_bounds(client):
    big = {"model": "gpt3-175b", "nodes": 48, "tp": 8, "pp": 12, "gbs": 65536}  # 196,608 passes
    resp = client.post("/api/step/trace", json=big)
    assert resp.status_code == 422
    assert (
        resp.json()["detail"][0]["field"] == "gbs" and "at most 20,000" in resp.json()["detail"][0]["message"]
    )
    resp = client.post("/api/step/trace", json={"model": "gpt2", "layouts": [{}]})
    assert resp.status_code == 422 and resp.json()["detail"][0]["field"] == "layouts"
    resp = client.post("/api/step/trace", json={"model": "gpt2", "gpus_per_node": 5, "tp": 5})
    assert resp.status_code == 422 and resp.json()["detail"][0]["field"] == "tp"


def _without_timing(plan: dict) -> dict:
    return {k: v for k, v in plan.items() if k != "seconds"}  # the search's own wall-clock time


def test_plan_is_the_cli_json(client, tmp_path):
    body = {"model": "mcore-7.1b", "nodes": 4, "gpu": "h100-sxm", "gbs": 256, "top": 4, "tokens": 1e12}
    resp = client.post("/api/plan", json=body)
    assert resp.status_code == 200, resp.text
    data = resp.json()
    assert data["fits"] and len(data["layouts"]) == 4 and data["advice"] == ""
    assert _without_timing(data) == _without_timing(cli_json("plan", body, tmp_path))
    times = [r["step_time_s"] for r in data["layouts"]]
    assert times == sorted(times)


def test_a_plan_estimated_over_a_second_is_a_job_whose_result_is_the_inline_body(
    client, tmp_path, monkeypatch
):
    """The estimate: candidates × the measured seconds per candidate (a typical dense plan stays inline,
    a large MoE search goes to a job); a job's result is the body the plan gives inline."""
    from dtsim.interfaces.api import jobs
    from dtsim.interfaces.api.datacenter import PlanRequest, plan_estimate_s

    assert plan_estimate_s(PlanRequest(model="mcore-177b", nodes=48, gpu="a100-80gb", gbs=1536)) < 1.0
    assert plan_estimate_s(PlanRequest(model="deepseek-v3", nodes=720, gbs=40320)) > 5.0
    monkeypatch.setenv(jobs.STORE_ENV, str(tmp_path / "jobs"))
    body = {"model": "mcore-7.1b", "nodes": 2, "gpu": "h100-sxm", "gbs": 128, "top": 3}
    inline = client.post("/api/plan", json=body)
    assert inline.status_code == 200
    resp = client.post("/api/plan", json=body, headers={"Prefer": "respond-async"})
    assert resp.status_code == 202, resp.text
    for _ in range(300):
        job = client.get(resp.json()["href"]).json()
        if job["state"] in jobs.FINAL:
            break
        time.sleep(0.1)
    assert job["state"] == "done", job
    assert _without_timing(job["result"]) == _without_timing(inline.json())
    bad = client.post("/api/plan", json={**body, "gpus_per_node": 6, "nvlink_domain": 8})
    assert bad.status_code == 422 and bad.json()["detail"][0]["field"] == "nvlink_domain"


def test_plan_where_nothing_fits_is_200_with_the_nearest_and_advice(client, tmp_path):
    body = {"model": "llama3.1-405b", "nodes": 1, "gbs": 64}
    resp = client.post("/api/plan", json=body)
    assert resp.status_code == 200
    data = resp.json()
    assert data["fits"] is False and data["layouts"] == [] and data["nearest"]
    assert "Add GPUs" in data["advice"]
    assert _without_timing(data) == _without_timing(cli_json("plan", body, tmp_path, exit_code=1))


def test_plan_by_target_size_is_the_cli_json(client, tmp_path):
    body = {"target_params_b": 7, "nodes": 4, "gbs": 512, "top": 3}
    resp = client.post("/api/plan", json=body)
    assert resp.status_code == 200
    assert resp.json() == cli_json("plan", body, tmp_path)
    assert len(resp.json()["shapes"]) == 3
    # a model or a shape field the search would not use is refused, not ignored (vocab and seq_len act)
    resp = client.post("/api/plan", json=body | {"model": "llama3.1-405b", "hidden": 1024})
    assert resp.status_code == 422
    fields = {p["field"] for p in resp.json()["detail"]}
    assert fields == {"model", "hidden"}, resp.json()
    assert client.post("/api/plan", json=body | {"seq_len": 4096}).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"op": "allreduce", "ranks": 8, "size_mb": 1000, "fabric": "nvlink3"},
        {"algorithm": "tree", "bandwidth_gbs": 10, "latency_us": 5},
        {"algorithm": "wan-ring", "ranks": 4, "bandwidth_gbs": 12.5, "hop_km": 1200},
        {"op": "all-gather", "ranks": 64, "fabric": "ici-v4", "torus": "4x4x4"},
        # the largest message at the slowest bandwidth allowed (1e-300 GB/s, whose time overflowed, is
        # refused now): a finite time, never Infinity in the JSON
        {"size_mb": 1e9, "bandwidth_gbs": 1.1e-9},
    ],
)
def test_collective_is_the_cli_json(client, body, tmp_path):
    resp = client.post("/api/collective", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json() == cli_json("collective", body, tmp_path)
    assert "Infinity" not in resp.text and "NaN" not in resp.text


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"cluster_power_gw": 5, "datacenters": 10, "sync_budget_ms": 500},
        {"sync_budget_ms": 10},
        # off the thesis's batch the default budget is 0.05 × the batch time in both (the API kept 250 ms)
        {"train_days": 50},
    ],
)
def test_fabric_is_the_cli_json(client, body, tmp_path):
    resp = client.post("/api/fabric", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json() == cli_json("fabric", body, tmp_path)


FABRIC_TOPS = {
    "cluster_power_gw": 1e6,
    "datacenters": 1_000_000,
    "pod_power_kw": 1e9,
    "pod_pflops": 1e9,
    "params_t": 1e6,
    "tokens_t": 1e8,
    "bits": 64,
    "train_days": 36525,
    "critical_batch_k": 1e6,
    "ring_km": 1e6,
    "hop_us": 1e6,
}


@pytest.mark.parametrize(("field", "top"), FABRIC_TOPS.items())
def test_fabric_bounds_are_the_libraries(client, field, top, tmp_path):
    """The body's upper bounds are dtsim.fabric's, at the body's units: the bound itself is accepted by
    both the API and the CLI, a little over it refused by both, naming the field."""
    over = top * 2 if isinstance(top, int) else top * 1.001
    # every datacenter needs a pod: many datacenters need small pods, a large pod a large cluster
    room = {"datacenters": {"pod_power_kw": 1}, "pod_power_kw": {"cluster_power_gw": 1e6}}.get(field, {})
    assert client.post("/api/fabric", json={field: top, **room}).status_code == 200
    cli_json("fabric", {field: top, **room}, tmp_path)
    resp = client.post("/api/fabric", json={field: over, **room})
    assert resp.status_code == 422 and resp.json()["detail"][0]["field"] == field
    res = runner.invoke(cli_app, ["fabric", *cli_args({field: over, **room}, tmp_path)])
    assert res.exit_code == 2 and field.replace("_", "-") in res.output


@pytest.mark.parametrize(
    ("path", "body", "field", "words"),
    [
        ("/api/step", {"model": "gpt2", "tp": 0}, "tp", "greater than or equal to 1"),
        ("/api/step", {"model": "gpt2", "tp": "2"}, "tp", "valid integer"),
        ("/api/step", {"model": "gpt2", "sequence_parallel": 1}, "sequence_parallel", "valid boolean"),
        ("/api/step", {"model": "gpt2", "heads": 7}, "heads", "must divide hidden"),
        ("/api/step", {"model": "gpt3-175b", "nodes": 64, "gbs": 100}, "gbs", "multiple of dp·mbs"),
        ("/api/step", {"model": "gpt2", "nic_gbps": 0}, "nic_gbps", "greater than or equal to 0.01"),
        (
            "/api/step",
            {"model": "gpt2", "oversubscription": 65},
            "oversubscription",
            "less than or equal to 64",
        ),
        ("/api/step", {"model": "gpt2", "nvlink_domain": 12}, "nvlink_domain", "multiple of gpus_per_node"),
        ("/api/step", {"model": "gpt2", "torus": "4x4"}, "torus", "needs a TPU"),
        ("/api/step", {"model": "gpt2", "fabric": "dgx-h100-ndr", "gpu": "a100-80gb"}, "gpu", "built for"),
        ("/api/step", {"model": "gpt2", "usd_per_gpu_hour": 2}, "usd_per_gpu_hour", "needs tokens"),
        ("/api/step", {"model": "gpt2", "tokens": -1}, "tokens", "greater than 0"),
        (
            "/api/step",
            {"model": "gpt2", "flash_attention": False, "attention_kernel": "triton"},
            "attention_kernel",
            "needs flash_attention",
        ),
        ("/api/step", {"model": "gpt2", "moe_imbalance": 2}, "moe_imbalance", "needs an MoE model"),
        ("/api/step", {"model": "/etc/passwd"}, "model", "must be a catalog model id"),
        ("/api/step", {"hidden": 1024}, "model", "missing: layers, heads, vocab, seq_len"),
        (
            "/api/step",
            {"model": {"hidden": 64, "layers": 2, "heads": 3, "vocab": 100, "seq_len": 128}},
            "model.heads",
            "must divide hidden",
        ),
        ("/api/step", {"model": "gpt2", "layouts": [{}, {"tp": 5}]}, "layouts[1].tp", "must divide heads"),
        ("/api/step", {"model": "gpt2", "layouts": [{"pp": "x"}]}, "layouts[0].pp", "valid integer"),
        (
            "/api/step",
            {"model": "gpt2", "layouts": [{}, {"name": {"a": 1}}]},
            "layouts[1].name",
            "must be text",
        ),
        ("/api/step", {"model": "gpt2", "layouts": [{"name": "x" * 81}]}, "layouts[0].name", "at most 80"),
        ("/api/step", {"model": "gpt2", "layouts": []}, "layouts", "at least 1 item"),
        ("/api/step", {"model": "gpt2", "layouts": [{}] * 1001}, "layouts", "at most 1000 items"),
        ("/api/step", {"model": "gpt2", "colour": "blue"}, "colour", "not a field of this request"),
        ("/api/plan", {"model": "gpt2", "gbs": 0}, "gbs", "greater than or equal to 1"),
        ("/api/plan", {"model": "gpt2", "top": 0}, "top", "greater than or equal to 1"),
        ("/api/plan", {"target_params_b": -1}, "target_params_b", "greater than or equal to 0.001"),
        ("/api/plan", {"model": "gpt2", "moe_capacity_factor": 2}, "moe_capacity_factor", "needs an MoE"),
        ("/api/plan", {"model": "gpt2", "tp": 2}, "tp", "not a field of this request"),
        ("/api/collective", {"op": "gossip"}, "op", "unknown op; known: "),
        ("/api/collective", {"size_mb": -5}, "size_mb", "greater than 0"),
        ("/api/collective", {"bandwidth_gbs": 0}, "bandwidth_gbs", "greater than 0"),
        (
            "/api/collective",
            {"fabric": "nvlink3", "bandwidth_gbs": 10},
            "bandwidth_gbs/latency_us",
            "give one or the other",
        ),
        ("/api/collective", {"torus": "4x4"}, "torus", "needs an ICI"),
        (
            "/api/collective",
            {"ranks": 9, "fabric": "ici-v4", "torus": "2x2x2"},
            "ranks",
            "at most the 8 chips",
        ),
        ("/api/fabric", {"datacenters": 0}, "datacenters", "greater than or equal to 2"),
        ("/api/fabric", {"network_fraction": 1.5}, "network_fraction", "less than 1"),
        ("/api/fabric", {"hop_us": -1}, "hop_us", "greater than or equal to 0"),
        ("/api/fabric", {"bits": "16"}, "bits", "valid number"),
    ],
)
def test_bad_input_is_422_naming_the_body_field(client, path, body, field, words):
    resp = client.post(path, json=body)
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"]
    assert any(d["field"] == field and words in d["message"] for d in detail), detail
    assert not any(d["field"].startswith(("layout.", "cluster.", "--")) for d in detail), detail


def test_openapi_lists_each_operation_with_an_example(client):
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for path in ("/api/step", "/api/step/trace", "/api/plan", "/api/collective", "/api/fabric"):
        op = spec["paths"][path]["post"]
        ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        body = schemas[ref.rsplit("/", 1)[1]]
        assert body["additionalProperties"] is False and body["examples"], path
        for example in body["examples"]:  # every example is a body the operation answers
            assert client.post(path, json=example).status_code == 200, (path, example)
        assert {"422", "413", "415"} <= set(op["responses"]), path
    step = spec["paths"]["/api/step"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"$ref": "#/components/schemas/StepResult"} in step["anyOf"]
    tp = schemas["StepRequest"]["properties"]["tp"]
    assert (tp["minimum"], tp["maximum"]) == (1, 4096)  # Layout.tp's own bounds


def test_an_unknown_model_lists_every_id_without_pydantics_prefix():
    """A trial user's case: POST /api/step with an unknown model listed three ids and "..." (the CLI lists
    every one), behind pydantic's "Value error, " prefix."""
    from fastapi.testclient import TestClient

    from dtsim.interfaces.api.app import create_app
    from dtsim.physics.transformer import architectures

    r = TestClient(create_app(ui=False)).post("/api/step", json={"model": "nope"})
    (problem,) = [p for p in r.json()["detail"] if p["field"] == "model"]
    assert r.status_code == 422 and problem["message"].startswith("must be a catalog model id (")
    assert all(m in problem["message"] for m in architectures()) and "..." not in problem["message"]


def test_a_whole_number_float_is_the_integer_json_schema_allows(client):
    """A Python client's 48.0 for `nodes` was refused ("Input should be a valid integer") where JSON
    Schema's integer takes it and /api/simulate did: taken now; 48.5 and true are still refused."""
    base = {"model": "gpt3-175b", "tp": 8, "pp": 12, "gbs": 1536}
    assert (
        client.post("/api/step", json={**base, "nodes": 48.0}).json()
        == client.post("/api/step", json={**base, "nodes": 48}).json()
    )
    for bad in (48.5, True, "48"):
        r = client.post("/api/step", json={**base, "nodes": bad})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "nodes", bad
    assert client.post("/api/collective", json={"ranks": 8.0}).status_code == 200
