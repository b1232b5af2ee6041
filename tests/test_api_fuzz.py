"""Fuzzing the HTTP API: Schemathesis over every operation of the OpenAPI schema, and raw requests that
no schema describes (bytes, content types, nesting, huge numbers, YAML alias bombs in share links).

Nothing may fail: no 5xx, every response conforms to the schema (status code, content type, headers,
body), every JSON body is strict JSON (no NaN), no body shows a traceback, and no request takes more than
MAX_SECONDS. Seeded, so CI runs the same cases every time; `benchmarks/fuzz_api.py` runs the same tests
with more examples and other seeds (DTSIM_FUZZ_EXAMPLES, DTSIM_FUZZ_SEED, DTSIM_FUZZ_REPORT).

Schemathesis's positive-data-acceptance check is left out on purpose: the schema cannot state the
cross-field rules (active ≤ total parameters, nodes_per_group ≤ num_nodes with the hierarchy, a
positive total growth rate), so some schema-valid bodies are rightly rejected with 422. Invalid data
must still be rejected (negative_data_rejection stays on).
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import time
import urllib.parse

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    missing_required_header,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from dtsim.interfaces.api.app import create_app
from tests.abuse import alias_bomb, drop_pending_pages

SEED = int(os.environ.get("DTSIM_FUZZ_SEED", "20261125"))
EXAMPLES = int(os.environ.get("DTSIM_FUZZ_EXAMPLES", "100"))  # per operation (Schemathesis) / per test (raw)
REPORT = os.environ.get("DTSIM_FUZZ_REPORT")  # a JSON file the case counts are written to
MAX_SECONDS = 10.0
CASES: collections.Counter[str] = collections.Counter()

APP = create_app(ui=False)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP, config=SchemathesisConfig(seed=SEED))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)


def _strict_json(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _short(value: object) -> bool:
    """An error quotes a value as a JSON scalar, text of at most 80 characters."""
    return (
        value is None
        or isinstance(value, bool | int | float)
        or (isinstance(value, str) and len(value) <= 80)
    )


def strict_json_and_no_leak(ctx, response, case) -> bool | None:
    """Every JSON body parses as strict JSON (no NaN or Infinity); no body shows a traceback or an
    exception's name; an error body quotes at most 80 characters of each value; no request is slow."""
    text = response.content.decode("utf-8")
    assert "Traceback" not in text and "Error:" not in text, text[:300]
    if response.headers.get("content-type", [""])[0].startswith("application/json"):
        data = _strict_json(text)
        if response.status_code >= 400:
            assert all(_short(p["value"]) for p in data["detail"]), data
    assert response.elapsed < MAX_SECONDS, f"{case.operation.label} took {response.elapsed:.1f} s"
    return None


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    missing_required_header,
    unsupported_method,
    allow_header_conformance,
    strict_json_and_no_leak,
]


def _report() -> None:
    if REPORT and CASES:
        with open(REPORT, "w") as fh:
            json.dump({"seed": SEED, "examples": EXAMPLES, "cases": dict(CASES)}, fh, indent=1)


atexit.register(_report)


@schema.parametrize()
@SETTINGS
def test_api_conforms_to_its_schema(case):
    CASES[f"schemathesis {case.operation.label}"] += 1
    case.call_and_validate(checks=CHECKS)


def test_every_operation_was_fuzzed():
    """The parametrized test above reached every operation the OpenAPI document lists."""
    seen = {k.removeprefix("schemathesis ") for k in CASES if k.startswith("schemathesis ")}
    if not seen:
        pytest.skip("the Schemathesis test was not selected in this run")
    spec = TestClient(APP).get("/openapi.json").json()
    listed = {f"{method.upper()} {path}" for path, ops in spec["paths"].items() for method in ops}
    assert len(listed) >= 6
    assert listed <= seen, listed - seen


# --- raw requests: what the schema cannot describe -----------------------------------------------------

POSTS = (
    "/api/simulate",
    "/api/sweep",
    "/api/sensitivity",
    *(f"/api/dataparallel/{op}" for op in ("critical-batch", "scaling", "accumulation", "overlap")),
    *(f"/api/dataparallel/{op}" for op in ("sync-bandwidth", "traffic")),
    *(f"/api/{op}" for op in ("step", "step/trace", "plan", "collective", "fabric")),
)
CONTENT_TYPES = (
    "application/json",
    "application/json; charset=utf-8",
    "application/json; charset=latin-1",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "application/yaml",
    "",
)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
field_names = st.sampled_from(
    ["num_nodes", "parameters_b", "mfu", "name", "assumptions", "scenarios", "field", "values", "base", "x"]
)
scenario_like = st.dictionaries(field_names, json_values, max_size=5)
nasty_text = st.sampled_from(
    [
        '{"name": "\\ud800"}',
        '{"scenarios": [{"name": "\\udfff x"}]}',
        "[" * 5000 + "]" * 5000,
        '{"a":' * 990 + "1" + "}" * 990,
        '{"num_nodes": ' + "9" * 5000 + "}",
        '{"num_nodes": 1e400}',
        '{"num_nodes": NaN}',
        '{"mfu": -Infinity}',
        '{"field": "num_nodes", "values": [1e308, 1e308]}',
        "\ufeff{}",
        "{}garbage",
        "",
        "   ",
        "null",
        alias_bomb(9, 9),
    ]
)
bodies = (
    scenario_like.map(lambda d: json.dumps(d).encode())
    | st.builds(lambda f, v: json.dumps({"scenarios": [f, v]}).encode(), scenario_like, scenario_like)
    | nasty_text.map(lambda t: t.encode("utf-8", "surrogatepass"))
    | st.binary(max_size=64)
    | st.sampled_from(["ÿþ{}".encode("latin-1"), b"\xff\xfe{\x00}\x00", b'{"name": "\xc3"}'])
)


@pytest.fixture(scope="module")
def client():
    return TestClient(APP, raise_server_exceptions=False)


def _check_raw(resp, started: float) -> None:
    assert resp.status_code < 500, resp.text[:300]
    assert time.perf_counter() - started < MAX_SECONDS
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    data = _strict_json(resp.text)
    if resp.status_code >= 400:
        assert data["detail"] and all({"field", "value", "message"} <= set(p) for p in data["detail"])
        assert "Traceback" not in resp.text
        assert all(_short(p["value"]) for p in data["detail"]), data


@given(
    path=st.sampled_from(POSTS),
    body=bodies,
    content_type=st.sampled_from(CONTENT_TYPES),
    query=st.sampled_from(["", "?preset=intellect-1", "?preset=nope", "?preset=" + "x" * 9000]),
)
@SETTINGS
@seed(SEED)
def test_raw_posts_never_fail(client, path, body, content_type, query):
    CASES["raw POST"] += 1
    headers = {"content-type": content_type} if content_type else {}
    started = time.perf_counter()
    resp = client.post(path + query, content=body, headers=headers)
    _check_raw(resp, started)
    if content_type.split(";")[0] != "application/json" or "latin-1" in content_type:
        assert resp.status_code in (414, 415), resp.text[:200]


@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]),
    path=st.sampled_from(
        ["/api", "/api/", "/api/simulate", "/api/presets", "/api/nope", "/api/simulate/x", "/api/%ff"]
    ),
)
@SETTINGS
@seed(SEED)
def test_unknown_paths_and_methods_are_json(client, method, path):
    CASES["raw method/path"] += 1
    started = time.perf_counter()
    resp = client.request(method, path, content=b"{}", headers={"content-type": "application/json"})
    if method == "HEAD":
        assert resp.status_code < 500
        return
    _check_raw(resp, started)
    assert resp.status_code in (200, 404, 405, 422), resp.text[:200]


share_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["5", "1.2", "auto", "[1, 2]", "{a: 1}", "&a [1]", "!!python/object:os.system ls"]),
    st.just(alias_bomb(9, 9)),
    st.just("[" * 200 + "]" * 200),
    st.just("9" * 5000),
)
share_keys = st.sampled_from(
    ["num_nodes", "mfu", "name", "assumptions", "assumptions.pue", "precision", "inner_steps", "nope"]
)


@given(query=st.lists(st.tuples(share_keys, share_values), min_size=1, max_size=4))
@settings(SETTINGS, max_examples=max(10, EXAMPLES // 5))
@seed(SEED)
def test_share_links_never_fail(ui_client, query):
    """The page's query string is parsed as `--set` values (YAML scalars): any of them loads the page
    (a notice names what was ignored) or is refused with 414 when over the cap, quickly."""
    CASES["raw share link"] += 1
    started = time.perf_counter()
    resp = ui_client.get("/?" + urllib.parse.urlencode(query))
    assert time.perf_counter() - started < MAX_SECONDS
    drop_pending_pages(ui_client)
    assert resp.status_code in (200, 414), resp.text[:300]
    assert "Traceback" not in resp.text
