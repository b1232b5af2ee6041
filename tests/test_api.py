"""The HTTP API: every endpoint, bad bodies (422 naming the field), oversized requests (413), the time
budget (503), and the same JSON as the CLI."""

from __future__ import annotations

import itertools
import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dtsim.interfaces.api import app as api
from dtsim.interfaces.cli.main import app as cli_app


@pytest.fixture(scope="module")
def client():
    return TestClient(api.create_app(ui=False))


def test_simulate_one_scenario_is_the_cli_json(client):
    resp = client.post("/api/simulate", json={"num_nodes": 500, "bandwidth_mbps": 1000})
    assert resp.status_code == 200
    cli = CliRunner().invoke(
        cli_app, ["simulate", "--set", "num_nodes=500", "--set", "bandwidth_mbps=1000", "--json"]
    )
    assert resp.json() == json.loads(cli.stdout)


def test_simulate_with_a_preset(client):
    resp = client.post("/api/simulate?preset=intellect-1", json={"num_nodes": 10})
    data = resp.json()
    assert resp.status_code == 200
    assert data["scenario"]["num_nodes"] == 10 and data["scenario"]["parameters_b"] == 10


def test_simulate_a_batch(client):
    resp = client.post(
        "/api/simulate",
        json={"scenarios": [{}, {"parameters_b": 300}, {"parameters_b": 600, "num_nodes": 4}]},
    )
    assert resp.status_code == 200
    modes = [r["mode"] for r in resp.json()["results"]]
    assert modes == ["flat-diloco", "pp-group-diloco", "infeasible"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"num_nodes": -8}, "num_nodes", "must be an integer ≥ 1"),
        ({"mfu": 2}, "mfu", "≤ 1"),
        ({"precision": "fp3"}, "precision", "'fp16', 'bf16', 'fp8' or 'fp4'"),
        ({"colour": "blue"}, "colour", "unknown field"),
        ({"moe": True, "active_parameters_b": 500}, "active_parameters_b", "must be ≤ parameters_b"),
        ({"scenarios": [{}, {"num_nodes": 0}]}, "scenarios[1].num_nodes", "must be an integer ≥ 1"),
        ({"scenarios": []}, "scenarios", "non-empty list"),
        ({"scenarios": [{}], "extra": 1}, "extra", "only 'scenarios'"),
        ([1, 2, 3], "body", "JSON object"),
    ],
)
def test_bad_bodies_get_422_naming_the_field(client, body, field, words):
    resp = client.post("/api/simulate", json=body)
    assert resp.status_code == 422
    detail = resp.json()["detail"]
    assert any(d["field"] == field and words in d["message"] for d in detail), detail


def test_malformed_json_and_empty_body(client):
    resp = client.post("/api/simulate", content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 422 and "malformed JSON" in resp.json()["detail"][0]["message"]
    resp = client.post("/api/simulate", content=b"", headers={"content-type": "application/json"})
    assert resp.status_code == 422


def test_unknown_preset_is_422(client):
    resp = client.post("/api/simulate?preset=nope", json={})
    assert resp.status_code == 422 and resp.json()["detail"][0]["field"] == "preset"


def test_oversized_body_is_413(client):
    big = json.dumps({"name": "x" * (api.MAX_BODY_BYTES + 10)})
    resp = client.post("/api/simulate", content=big, headers={"content-type": "application/json"})
    assert resp.status_code == 413
    assert "at most" in resp.json()["detail"][0]["message"]


def test_oversized_batch_is_422(client):
    resp = client.post("/api/simulate", json={"scenarios": [{}] * (api.MAX_BATCH + 1)})
    assert resp.status_code == 422
    assert resp.json()["detail"][0]["field"] == "scenarios"


def test_time_budget_gives_503(client, monkeypatch):
    monkeypatch.setattr(api, "TIME_BUDGET_S", -1.0)
    resp = client.post("/api/simulate", json={"scenarios": [{}, {}]})
    assert resp.status_code == 503
    assert "time budget" in resp.json()["detail"][0]["message"]


def test_sweep(client):
    resp = client.post(
        "/api/sweep", json={"scenario": {"parameters_b": 70}, "field": "num_nodes", "points": 9}
    )
    assert resp.status_code == 200
    data = resp.json()
    assert data["field"] == "num_nodes" and len(data["values"]) == len(data["columns"]["wall_clock_days"])
    days = data["columns"]["wall_clock_days"]
    assert all(b <= a for a, b in itertools.pairwise(days))
    resp = client.post("/api/sweep", json={"field": "latency_ms", "values": [1, 10, 100]})
    assert resp.status_code == 200 and resp.json()["values"] == [1, 10, 100]
    resp = client.post("/api/sweep", json={"field": "name"})
    assert resp.status_code == 422 and resp.json()["detail"][0]["field"] == "field"
    resp = client.post("/api/sweep", json={"field": "num_nodes", "values": [4, -1]})
    assert resp.status_code == 422 and resp.json()["detail"][0]["field"] == "num_nodes[1]"


def test_presets_schema_assumptions(client):
    presets = client.get("/api/presets").json()
    assert "covenant-72b" in presets["scenarios"] and "h100-sxm" in presets["gpus"]
    schema = client.get("/api/schema").json()
    assert schema["properties"]["num_nodes"]["minimum"] == 1
    rows = client.get("/api/assumptions").json()
    assert {r["name"] for r in rows} >= {"straggler_coefficient", "hfu_mfu_ratio"}


def test_openapi_and_docs(client):
    spec = client.get("/openapi.json").json()
    assert set(spec["paths"]) == {
        "/api/simulate",
        "/api/sweep",
        "/api/sensitivity",
        "/api/presets",
        "/api/schema",
        "/api/assumptions",
    }
    body = spec["paths"]["/api/simulate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"$ref": "#/components/schemas/Scenario"} in body["anyOf"]
    assert "Scenario" in spec["components"]["schemas"] and "Result" in spec["components"]["schemas"]
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "cdn" not in docs.text.lower() and "/docs-assets/swagger-ui-bundle.js" in docs.text
    assert client.get("/docs-assets/swagger-ui-bundle.js").status_code == 200


def test_ui_page_is_served_with_the_api():
    with TestClient(api.create_app(ui=True)) as client:
        resp = client.get("/")
        assert resp.status_code == 200 and "dtsim" in resp.text
        assert client.post("/api/simulate", json={}).status_code == 200
