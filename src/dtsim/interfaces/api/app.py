"""The HTTP API (FastAPI): the same scenario and result schemas as the CLI, under /api.

Bounded by design (docs: README "Web app and HTTP API"):
- a request body over MAX_BODY_BYTES gets 413 before it is read, a query string over MAX_QUERY_BYTES
  414 (the page's share links too);
- a POST body must be `application/json` (415 otherwise: a cross-site form or `text/plain` "simple
  request" never reaches a model) and is read as any user input is (schema/inputs.py: UTF-8, valid
  Unicode, at most 32 deep and 200,000 values, integers of at most 4,300 digits, no NaN);
- invalid input is 422 with one {field, value, message} per problem, each value quoted in at most
  80 characters (errors.quote); a batch over MAX_BATCH scenarios is 422 (the schema's maxItems);
- an unknown path under /api is 404 and a method an operation does not take 405, both JSON;
- work that outlives TIME_BUDGET_S stops with 503 instead of holding a worker;
- work estimated over a second (or asked for with `Prefer: respond-async`) is a background job in a
  separate process (api/jobs.py): 202 with {id, state, href} and a Location header, then
  GET /api/jobs/{id} (state, progress, eta_s, result), its /events stream and DELETE to cancel;
- too much at once is 429 with Retry-After and the limit named: jobs queued or running on the server,
  jobs per client, inline requests per client (api/jobs.py's limits);
- an unexpected exception is a short generic 500 (JSON under /api, a one-line page elsewhere): the
  traceback goes to the server's log (logger "dtsim.api"), never to the client.
"""

from __future__ import annotations

import collections
import html
import logging
import math
import re
import time
from enum import Enum
from typing import Annotated, Any, Literal

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, RootModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from dtsim import __version__, catalog
from dtsim.analysis.grid import MAX_GRID, VARYABLE
from dtsim.analysis.sweep import MAX_POINTS, SWEEP_OUTPUTS, SWEEPABLE, default_range, sweep
from dtsim.assumptions import table as assumptions_table
from dtsim.errors import MissingExtra, ScenarioError, choices_text, problems_body
from dtsim.interfaces.api import jobs
from dtsim.interfaces.api.analysis import MAX_GRID_POINTS
from dtsim.interfaces.api.base import ApiRequest, distributions_refused, preset_conflict
from dtsim.interfaces.api.jobs import INTERNAL_ERROR
from dtsim.models.decentralized.engine import simulate
from dtsim.models.decentralized.result import Result
from dtsim.schema.inputs import decode_text, parse_json
from dtsim.schema.scenario import Scenario, load_scenario, scenario_json_schema

PresetName = Enum("PresetName", {k: k for k in catalog.scenario_presets()}, type=str)
SweepField = Literal[SWEEPABLE]  # type: ignore[valid-type]
GridField = Literal[VARYABLE]  # type: ignore[valid-type]
MAX_BODY_BYTES = 1_000_000
MAX_QUERY_BYTES = 8_192  # a share link of every field and assumption is ~3 KB
MAX_BATCH = 1000
MAX_SENSITIVITY_BASE = 1024
TIME_BUDGET_S = 20.0
JSON_TYPE = "application/json"
log = logging.getLogger("dtsim.api")


class Problem(BaseModel):
    field: str = Field(description="The field (with a [row] index in a batch).")
    value: Any = Field(None, description="The value given.")
    message: str = Field(description="What is allowed.")


class ErrorBody(BaseModel):
    detail: list[Problem]


class SimulateBatch(BaseModel):
    """A batch: a list of scenarios, each simulated on its own."""

    model_config = ConfigDict(extra="forbid")
    scenarios: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_BATCH)


class SimulateBatchResult(BaseModel):
    results: list[Result]


class SimulateResponse(RootModel[Result | SimulateBatchResult]):
    pass


class VaryAxis(ApiRequest):
    """One axis of a grid sweep (`dtsim sweep --vary`): its values, or start, stop and num."""

    model_config = ConfigDict(extra="forbid", strict=True)
    field: GridField = Field(description="The field to vary.")
    values: list[FiniteFloat | bool | Annotated[str, Field(max_length=200)]] | None = Field(
        None,
        min_length=1,
        max_length=MAX_GRID,
        description="The values (numbers, or names for a text field).",
    )
    start: FiniteFloat | None = Field(None, description="First value of a range.")
    stop: FiniteFloat | None = Field(None, description="Last value of a range.")
    num: int | None = Field(None, ge=1, le=MAX_GRID, description="Values in the range.")
    log: bool = Field(False, description="Log-spaced range (start and stop > 0).")


class SweepRequest(ApiRequest):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # true is not 1, "2" is not 2
        json_schema_extra={
            "examples": [
                {"scenario": {"num_nodes": 100}, "field": "bandwidth_mbps", "points": 5},
                {
                    "vary": [
                        {"field": "num_nodes", "start": 8, "stop": 4096, "num": 10, "log": True},
                        {"field": "bandwidth_mbps", "values": [100, 1000, 10000]},
                    ]
                },
            ]
        },
    )
    scenario: dict[str, Any] = Field(
        default_factory=dict, description="Scenario fields (defaults: MIRI simulator docs §9)."
    )
    field: SweepField | None = Field(None, description="The one field to vary (or give vary).")
    values: list[FiniteFloat] | None = Field(
        None, max_length=MAX_POINTS, description="Values; default: around the current one."
    )
    points: int | None = Field(
        None, ge=2, le=MAX_POINTS, description="Number of points when values are not given (default 41)."
    )
    vary: list[VaryAxis] | None = Field(
        None,
        min_length=1,
        max_length=8,
        description="A grid instead of field: the product of these axes, at most "
        f"{MAX_GRID_POINTS:,} points; the response is one column per varied field and output.",
    )


class SensitivityRequest(ApiRequest):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # 0 is not false, "2" is not 2
        json_schema_extra={
            "examples": [
                {
                    "scenario": {"mfu": {"dist": "uniform", "low": 0.3, "high": 0.5}, "num_nodes": 64},
                    "output": "wall_clock_days",
                    "base": 64,
                    "seed": 1,
                    "fixed_assumptions": True,
                }
            ]
        },
    )
    scenario: dict[str, Any] = Field(
        default_factory=dict,
        description="Scenario fields (defaults: MIRI simulator docs §9); any numeric field may be a distribution, e.g. "
        '{"mfu": {"dist": "triangular", "low": 0.3, "mode": 0.4, "high": 0.5}}.',
        examples=[{"mfu": {"dist": "uniform", "low": 0.3, "high": 0.5}}],
    )
    output: str = Field("wall_clock_days", description="The simulate output to explain (any numeric output).")
    base: int = Field(
        256,
        ge=2,
        le=MAX_SENSITIVITY_BASE,
        description="Saltelli base samples N (rounded up to a power of two); N·(d+2) runs.",
    )
    seed: int | None = Field(None, ge=0, le=2**63 - 1, description="Seed of the sampling and the bootstrap.")
    fixed_assumptions: bool = Field(
        False,
        description="Hold the assumptions table at its point values: only the scenario's distributions vary.",
    )


class SweepResponse(BaseModel):
    field: str
    values: list[float]
    mode: list[str]
    columns: dict[str, list[float | None]]
    bottleneck: list[str] = Field(
        default_factory=list,
        description="Each point's bottleneck (failures where they cost most), as simulate's.",
    )
    recovery: list[str] = Field(
        default_factory=list, description="Each point's recovery from node failures (none, rejoin, restart)."
    )
    feasible: list[bool] = Field(description="Each point's feasible, as simulate's.")
    warnings: list[list[str]] = Field(description="Each point's warning codes, as simulate names them.")
    notes: list[str] = Field(
        default_factory=list, description="A default range whose rounding to whole numbers merged points."
    )


class GridSweepResponse(BaseModel):
    fields: list[str] = Field(
        description="The varied fields, in the order of vary (the last varies fastest)."
    )
    points: int
    constants: dict[str, Any] = Field(description="The base scenario's fields that are not varied.")
    columns: dict[str, list[Any]] = Field(
        description="One list per varied field and output, a value per point."
    )
    numeric_outputs: list[str]
    notes: list[str] = Field(
        default_factory=list,
        description="What the grid did that was not asked in so many words: a whole-number range whose "
        "rounding merged points.",
    )


class ApiError(Exception):
    def __init__(
        self, status: int, problems: list[tuple[str, Any, str]], headers: dict[str, str] | None = None
    ):
        self.status = status
        self.problems = problems
        self.headers = headers


def _error(
    status: int, problems: list[tuple[str, Any, str]], headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(status_code=status, content=problems_body(problems), headers=headers)


def _is_api(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


def _refusal(api: bool, status: int, problems: list[tuple[str, Any, str]], headers=None) -> Response:
    """A 4xx/5xx answer: JSON under /api, a short page elsewhere (the web UI's paths)."""
    if api:
        return _error(status, problems, headers)
    text = "; ".join(f"{f}: {m}" for f, _v, m in problems)
    page = f"<!doctype html><title>dtsim: {status}</title><p>{html.escape(text.encode('utf-8', 'backslashreplace').decode('utf-8'))}</p>"
    return HTMLResponse(page, status_code=status, headers=headers)


class _TooLarge(Exception):
    pass


class _ClientGone(Exception):
    pass


# the loc parts pydantic adds for a union's members: type names, never a field of these bodies
_TYPE_TAG = re.compile(r"^(?:bool|int|float|str|list|dict|none|[a-z]+(?:-[a-z]+)+|[a-z-]+\[.*\])$")


def _head_as_get(scope, send):
    """HEAD answered as GET without the body (RFC 9110 §9.3.2): the routes are GET-only, and a 405 to
    `curl -I` broke health checks that use HEAD."""

    async def headless(message):
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return {**scope, "method": "GET"}, headless


class RequestGuard:
    """ASGI middleware in front of the API and the page: size caps (413 body, 414 query string), the
    JSON-only rule for POST bodies (415), the body read once as any user input is (422 when it is not
    plain JSON data), and the one place where an unexpected exception becomes a short generic 500 with
    its traceback in the server's log only."""

    def __init__(
        self,
        app,
        json_paths: frozenset[str] = frozenset(),
        limit: int = MAX_BODY_BYTES,
        query_params: tuple[tuple[Any, frozenset[str]], ...] = (),
    ):
        self.app = app
        self.json_paths = json_paths
        self.limit = limit
        self.query_params = query_params  # (API route, the query parameters it declares)
        self.in_progress: collections.Counter[str] = collections.Counter()  # API requests per client

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["method"] == "HEAD":  # a GET's status and headers without its body (health checks)
            scope, send = _head_as_get(scope, send)
        if not _is_api(scope["path"]):
            return await self._guarded(scope, receive, send, False)
        # one client (its address) has at most MAX_REQUESTS_PER_CLIENT API requests in progress here, so
        # it cannot hold every worker thread or stream; the counter is the event loop's alone (no lock)
        client = (scope.get("client") or ("?", 0))[0]
        if self.in_progress[client] >= jobs.MAX_REQUESTS_PER_CLIENT:
            busy = f"has {jobs.MAX_REQUESTS_PER_CLIENT} requests in progress, the most one client may; retry when one has answered"
            response = _error(429, [("client", client, busy)], {"Retry-After": str(jobs.RETRY_AFTER_BUSY_S)})
            return await response(scope, receive, send)
        self.in_progress[client] += 1
        try:
            return await self._guarded(scope, receive, send, True)
        finally:
            self.in_progress[client] -= 1
            if self.in_progress[client] <= 0:
                del self.in_progress[client]

    async def _guarded(self, scope, receive, send, api: bool):
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            refusal = self._check_head(scope) or (self._check_query(scope) if api else None)
            if refusal is None and scope["method"] == "POST" and scope["path"] in self.json_paths:
                refusal, receive = await self._read_json(scope, receive)
            elif refusal is None:
                receive = self._limited(receive)
            if refusal is not None:
                return await _refusal(api, *refusal)(scope, receive, send)
            await self.app(scope, receive, tracked)
        except _ClientGone:
            return None
        except _TooLarge:
            if started:
                raise
            await _refusal(api, *self._too_large("body"))(scope, receive, send)
        except Exception:
            if started:  # too late for a clean answer: the server closes the connection
                raise
            log.exception("%s %s failed", scope.get("method"), scope.get("path"))
            await _refusal(api, 500, [("server", None, INTERNAL_ERROR)])(scope, receive, send)

    def _too_large(self, shown: str) -> tuple[int, list]:
        return 413, [("body", shown, f"a request body holds at most {self.limit:,} bytes")]

    def _check_query(self, scope) -> tuple[int, list] | None:
        """422 for a query parameter the endpoint does not declare (`?bogus=1` was answered 200 as if it
        were not there) or one given twice (`?preset=a&preset=b` took the last)."""
        from urllib.parse import parse_qsl

        from starlette.routing import Match

        for route, allowed in self.query_params:
            if route.matches(scope)[0] != Match.FULL:
                continue
            text = (scope.get("query_string") or b"").decode("latin-1")
            pairs = parse_qsl(text, keep_blank_values=True)
            keys = [k for k, _ in pairs]
            takes = (
                f"this endpoint takes {', '.join(sorted(allowed))}" if allowed else "this endpoint takes none"
            )
            problems = [
                (f"query.{k}", v, f"unknown query parameter; {takes}") for k, v in pairs if k not in allowed
            ]
            problems += [
                (
                    f"query.{k}",
                    ", ".join(v for key, v in pairs if key == k),
                    "given more than once; give it once",
                )
                for k in sorted(set(keys))
                if keys.count(k) > 1
            ]
            return (422, problems) if problems else None
        return None

    def _check_head(self, scope) -> tuple[int, list] | None:
        query = scope.get("query_string") or b""
        if len(query) > MAX_QUERY_BYTES:
            return 414, [
                ("query", f"{len(query):,} bytes", f"a query string holds at most {MAX_QUERY_BYTES:,} bytes")
            ]
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return self._too_large(f"{int(declared):,} bytes")
        if scope["method"] == "POST" and scope["path"] in self.json_paths:
            ctype = _header(scope, b"content-type")
            media, *params = (ctype or b"").decode("latin-1").lower().split(";")
            charsets = [
                p.split("=", 1)[1].strip().strip('"') for p in params if p.strip().startswith("charset=")
            ]
            if media.strip() != JSON_TYPE or any(c not in ("utf-8", "utf8") for c in charsets):
                return 415, [
                    (
                        "content-type",
                        ctype.decode("latin-1") if ctype else None,
                        f"a POST body must be {JSON_TYPE} (UTF-8)",
                    )
                ]
        return None

    async def _read_json(self, scope, receive):
        """The whole body (at most `limit` bytes) parsed as JSON into scope["dtsim.json"]; the endpoint
        then reads the same bytes again from a replay."""
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nobody to answer
                raise _ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return self._too_large(f"over {self.limit:,} bytes"), receive
            chunks.append(chunk)
            more = message.get("more_body", False)
        raw = b"".join(chunks)
        if not raw.strip():
            return (422, [("body", None, "is empty; send a JSON object")]), receive
        try:
            scope["dtsim.json"] = parse_json(decode_text(raw, "the request body", "body"), "body")
        except ScenarioError as exc:
            return (422, exc.problems), receive
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        return None, replay

    def _limited(self, receive):
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        return limited


def _header(scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value
    return None


class ApiFallback:
    """The last route under /api: an unknown path is 404, a method the path does not take 405 (with
    Allow), both as JSON — also when the web UI is mounted, whose catch-all would answer with a page."""

    def __init__(self, routes: list[Any]):
        self.routes = routes

    async def __call__(self, scope, receive, send):
        path = scope["path"]
        allowed = sorted(
            {
                m
                for r in self.routes
                if isinstance(r, APIRoute) and r.path_regex.match(path)
                for m in r.methods
            }
        )
        if allowed:
            methods = ", ".join(allowed)
            response = _error(
                405, [("method", scope["method"], f"{path} takes {methods}")], {"Allow": methods}
            )
        else:
            response = _error(404, [("path", path, "no such API operation; see /openapi.json or /docs")])
        await response(scope, receive, send)


def _scenario_problems(exc: ScenarioError, prefix: str = "") -> list[tuple[str, Any, str]]:
    return [(f"{prefix}{f}", v, m) for f, v, m in exc.problems]


def _json_body(request: Request) -> Any:
    """The body RequestGuard parsed (every POST operation's path is in its json_paths)."""
    return request.scope["dtsim.json"]


def _load(fields: Any, preset: Any, prefix: str = "", operation: str = "/api/simulate") -> Scenario:
    preset = getattr(preset, "value", preset)
    if not isinstance(fields, dict):
        raise ApiError(
            422,
            [(prefix.rstrip(".") or "body", fields, "must be a JSON object of scenario fields")],
        )
    problems = distributions_refused(fields, operation, prefix) + preset_conflict(fields, preset, prefix)
    if problems:  # the number check below would say "must be a number", pointing the wrong way
        raise ApiError(422, problems)
    try:
        # a body's `preset` is its base, as a scenario file's `preset:` line is (the CLI took such a file)
        return load_scenario(preset=preset, file_fields=fields)
    except ScenarioError as exc:
        raise ApiError(422, _scenario_problems(exc, prefix)) from None


router = APIRouter(prefix="/api")
PRESET_ROUTES = ("/api/simulate", "/api/sweep", "/api/sensitivity")  # the operations with ?preset=
# Every operation: a query string over MAX_QUERY_BYTES (414) and the generic internal error (500).
COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    414: {"model": ErrorBody, "description": f"Query string over {MAX_QUERY_BYTES:,} bytes."},
    500: {
        "model": ErrorBody,
        "description": "Internal error: a generic message; the details are in the server's log only.",
    },
}
ERRORS: dict[int | str, dict[str, Any]] = {
    **COMMON_ERRORS,
    413: {"model": ErrorBody, "description": f"Request body over {MAX_BODY_BYTES:,} bytes."},
    415: {"model": ErrorBody, "description": "The body is not application/json (UTF-8)."},
    422: {
        "model": ErrorBody,
        "description": "Invalid input: one entry per problem with field, value (at most 80 characters of "
        "it) and what is allowed.",
    },
    503: {"model": ErrorBody, "description": "The work exceeded the time budget."},
}


@router.post(
    "/simulate", response_model=SimulateResponse, responses=ERRORS, summary="Simulate a scenario or a batch"
)
async def api_simulate(
    request: Request,
    preset: Annotated[
        PresetName | None, Query(description="Start from this preset; body fields override it.")
    ] = None,
) -> Any:
    """Body: one scenario (the fields of `dtsim schema`, and optionally `preset`: its base, as a scenario
    file's `preset:` line), or `{"scenarios": [...]}` for a batch of up to 1,000. Response: the result (the JSON of `dtsim simulate --json`), or `{"results": [...]}`."""
    body = _json_body(request)
    if isinstance(body, dict) and "scenarios" in body:
        items = body["scenarios"]
        if set(body) != {"scenarios"}:
            extra = sorted(set(body) - {"scenarios"})
            raise ApiError(422, [(extra[0], body[extra[0]], "a batch body holds only 'scenarios'")])
        if not isinstance(items, list) or not items:
            raise ApiError(422, [("scenarios", items, "must be a non-empty list of scenarios")])
        if len(items) > MAX_BATCH:
            raise ApiError(
                422, [("scenarios", f"{len(items)} scenarios", f"a batch holds at most {MAX_BATCH:,}")]
            )
        scenarios = [_load(item, preset, f"scenarios[{i}].") for i, item in enumerate(items)]
        return SimulateBatchResult(results=await run_in_threadpool(_simulate_all, scenarios))
    return await run_in_threadpool(simulate, _load(body, preset))


def _simulate_all(scenarios: list[Scenario]) -> list[Result]:
    """Simulate a batch in a worker thread, giving up with 503 once the time budget is spent."""
    start = time.monotonic()
    results = []
    for i, s in enumerate(scenarios):
        if time.monotonic() - start > TIME_BUDGET_S:
            budget = f"time budget of {TIME_BUDGET_S:g} s exceeded"
            raise ApiError(503, [("scenarios", f"{i} of {len(scenarios)} done", budget)])
        results.append(simulate(s))
    return results


@router.post(
    "/sweep",
    response_model=SweepResponse | GridSweepResponse,
    responses=ERRORS,
    summary="Vary one field across a range, or a grid over several",
)
def api_sweep(
    req: SweepRequest,
    preset: Annotated[PresetName | None, Query(description="Start from this preset.")] = None,
) -> Any:
    """`field` (with `values` or `points`): one field, as columns of the headline outputs. `vary`: the
    grid of `dtsim sweep` (one row per point, every output), at most 4,096 points (MAX_GRID_POINTS)."""
    if req.vary is not None:
        from dtsim.interfaces.api.analysis import grid_sweep_work

        if req.field is not None or req.values is not None or req.points is not None:
            given = "field" if req.field is not None else "values" if req.values is not None else "points"
            raise ApiError(
                422, [(given, getattr(req, given), "give field (one axis) or vary (a grid), not both")]
            )
        axes = [a.model_dump() for a in req.vary]
        return grid_sweep_work(scenario=req.scenario, preset=getattr(preset, "value", preset), vary=axes)
    if req.field is None:
        raise ApiError(422, [("field", None, "give the field to vary, or vary: a list of axes")])
    scenario = _load(req.scenario, preset, "scenario.", "/api/sweep")
    try:
        asked = 41 if req.points is None else req.points
        values = req.values if req.values is not None else default_range(scenario, req.field, asked).tolist()
        batch = sweep(scenario, req.field, values)
    except ScenarioError as exc:
        raise ApiError(422, _scenario_problems(exc)) from None
    columns = {}
    for key in SWEEP_OUTPUTS:
        col = batch[key]
        columns[key] = [None if v != v else float(v) for v in col.tolist()]
    import numpy as np

    from dtsim.analysis.grid import merged_note
    from dtsim.models.decentralized.warning_rules import codes_of

    n = len(columns[SWEEP_OUTPUTS[0]])
    bits = np.broadcast_to(
        np.asarray(batch["warning_bits"], dtype=np.int64), (n,)
    )  # a shared condition is one
    note = None if req.values is not None else merged_note(req.field, asked, len(values))
    return SweepResponse(
        field=req.field,
        values=[float(v) for v in values],
        mode=batch["mode"].tolist(),
        columns=columns,
        bottleneck=np.broadcast_to(batch["bottleneck"], (n,)).tolist(),
        recovery=np.broadcast_to(batch["recovery"], (n,)).tolist(),
        # what the grid form (vary) and simulate say of each point: it was left out here
        feasible=[bool(x) for x in np.broadcast_to(np.asarray(batch["feasible"]), (n,)).tolist()],
        warnings=codes_of(bits.tolist()),
        notes=[note] if note else [],
    )


@router.post(
    "/sensitivity",
    responses={
        **ERRORS,
        **jobs.job_responses(ErrorBody),
        501: {
            "model": ErrorBody,
            "description": "This server lacks SALib (the `sensitivity` extra): no change to the request helps.",
        },
    },
    summary="Sobol indices and a tornado: which uncertain inputs drive an output",
)
async def api_sensitivity(
    request: Request,
    req: SensitivityRequest,
    preset: Annotated[PresetName | None, Query(description="Start from this preset.")] = None,
) -> Any:
    """The JSON of `dtsim sensitivity --json`: `{"output", "indices": [{"input", "S1", "ST", "low",
    "high", ...}], ...}` ranked by ST, over the scenario's distributions and, unless
    `fixed_assumptions`, the assumptions table's. Work estimated over a second (N·(d + 2) runs at
    this server's measured cost per run, plus a measured fixed cost), or asked for with `Prefer: respond-async`, runs as a job:
    202 and `GET /api/jobs/{id}`, whose result is this same body."""
    kwargs = {
        "scenario": req.scenario,
        "preset": getattr(preset, "value", preset),
        "output": req.output,
        "base": req.base,
        "seed": req.seed,
        "fixed_assumptions": req.fixed_assumptions,
    }
    try:
        scenario, dists = await run_in_threadpool(_sensitivity_inputs, kwargs)
        estimate = await run_in_threadpool(_sensitivity_estimate_s, scenario, dists, req.output, req.base)
    except MissingExtra as exc:  # the server's installation, not the request: 501
        raise ApiError(501, [("server", v, m) for _, v, m in exc.problems]) from None
    except ScenarioError as exc:
        raise ApiError(422, _sensitivity_problems(exc)) from None
    return await jobs.run(request, "sensitivity", sensitivity_work, kwargs, estimate_s=estimate)


def _sensitivity_inputs(kw: dict[str, Any]):
    from dtsim.analysis.uncertainty import load_uncertain_scenario

    return load_uncertain_scenario(
        None, kw["preset"], fixed_assumptions=kw["fixed_assumptions"], fields=kw["scenario"]
    )


def _sensitivity_problems(exc: ScenarioError) -> list[tuple[str, Any, str]]:
    """The CLI's names as the body's: --base is base, a scenario field is scenario.FIELD."""
    return [
        (f[2:] if f.startswith("--") else "scenario" if f == "inputs" else f"scenario.{f}", v, m)
        for f, v, m in exc.problems
    ]


def _sensitivity_estimate_s(scenario: Scenario, dists: Any, output: str, base: int) -> float:
    """Seconds a sensitivity analysis of `base` Saltelli samples is expected to take on this server: the
    base-2 analysis of the request's own inputs is run (so a problem with them, an unknown output or
    nothing that varies, is 422 before any job is made) and timed, and its seconds per run are scaled
    to the runs of `base` samples over the inputs it drew (those the run reads: N·(d + 2) + 2d + 1). Its fixed cost is counted in every run, so the estimate is high: an analysis becomes a
    job early rather than late. The server's first probe pays for imports and caches, so the estimate
    uses the fastest probe this process has timed (the first is run twice)."""
    from dtsim.analysis.sensitivity import base_count
    from dtsim.analysis.sensitivity import sensitivity as run_sensitivity

    for _ in range(2 if math.isinf(_FASTEST_PROBE["s_per_run"]) else 1):
        start = time.perf_counter()
        probe = run_sensitivity(scenario, dists, output, 2, 0)
        per_run = (time.perf_counter() - start) / max(probe.runs, 1)
        _FASTEST_PROBE["s_per_run"] = min(_FASTEST_PROBE["s_per_run"], per_run)
    d = len(probe.indices)
    return _FASTEST_PROBE["s_per_run"] * (base_count(base, d) * (d + 2) + 2 * d + 1)


_FASTEST_PROBE = {"s_per_run": math.inf}  # the fastest base-2 probe's seconds per run in this process


def sensitivity_work(
    progress: Any,
    *,
    scenario: dict[str, Any],
    preset: str | None,
    output: str,
    base: int,
    seed: int | None,
    fixed_assumptions: bool,
) -> dict[str, Any]:
    """POST /api/sensitivity's work, inline or in a job's process: `dtsim sensitivity --json`'s body."""
    from dtsim.analysis.sensitivity import sensitivity as run_sensitivity

    kw = {"scenario": scenario, "preset": preset, "fixed_assumptions": fixed_assumptions}
    try:
        loaded, dists = _sensitivity_inputs(kw)
        res = run_sensitivity(loaded, dists, output, base, seed, progress=jobs.counted(progress))
    except ScenarioError as exc:
        raise ScenarioError(_sensitivity_problems(exc)) from None
    return _finite(res.as_dict())


def _finite(x: Any) -> Any:
    """JSON has no NaN or infinity: a non-finite number becomes null (operations.json_ready)."""
    from dtsim.interfaces.operations import json_ready

    return json_ready(x)


@router.get(
    "/presets", responses=COMMON_ERRORS, summary="Scenario presets, node presets, accelerators and regions"
)
def api_presets() -> dict[str, Any]:
    return catalog.catalog_payload()


@router.get("/schema", responses=COMMON_ERRORS, summary="JSON Schema of a scenario")
def api_schema() -> dict[str, Any]:
    return scenario_json_schema()


@router.get("/assumptions", responses=COMMON_ERRORS, summary="The assumptions table")
def api_assumptions() -> list[dict[str, Any]]:
    return [
        {
            "name": r.name,
            "value": r.value,
            "unit": r.unit,
            "range": list(r.range) if r.range else None,
            "description": r.description,
            "source": r.source,
            "seed": r.seed,
            "uncertainty": r.uncertainty,
        }
        for r in assumptions_table()
    ]


# POST /api/dataparallel/…: `dtsim dataparallel` as operations (its own module; the same error responses)
from dtsim.interfaces.api.dataparallel import register as _register_dataparallel  # noqa: E402

_register_dataparallel(router, ERRORS)
# GET/DELETE /api/jobs/{id}, GET /api/jobs/{id}/events: background jobs (api/jobs.py)
jobs.register(router, COMMON_ERRORS, ErrorBody)
# POST /api/limits/…, /api/validate, /api/target, /api/governance: the analysis commands (api/analysis.py)
from dtsim.interfaces.api.analysis import register as _register_analysis  # noqa: E402

_register_analysis(router, ERRORS)
from dtsim.interfaces.api.datacenter import register as _register_datacenter  # noqa: E402

_register_datacenter(router, ERRORS)


def _mount_docs(app: FastAPI) -> None:
    """Swagger UI at /docs from the fastapi-offline package's copy of its files, so the docs work
    without internet access (FastAPI's default page loads its scripts from a CDN)."""
    from pathlib import Path

    import fastapi_offline
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    assets = Path(fastapi_offline.__file__).parent / "static"
    app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> Any:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="dtsim API",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/docs-assets/favicon.png",
        )


def settle_heap() -> None:
    """Move everything built so far (the app, its schemas, the catalog) out of the garbage collector's
    reach (gc.freeze, Python docs "gc"): a full collection then walks only what requests create, so it
    no longer pauses a request for the whole heap. `serve` calls it once the app is built."""
    import gc

    gc.collect()
    gc.freeze()


def create_app(ui: bool = True) -> FastAPI:
    """The API, and the web UI at / unless ui is False."""
    app = FastAPI(
        title="dtsim", version=__version__, openapi_url="/openapi.json", docs_url=None, redoc_url=None
    )
    app.include_router(router)
    _mount_docs(app)

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.problems, exc.headers)

    @app.exception_handler(ScenarioError)
    async def _scenario_error(_request: Request, exc: ScenarioError) -> JSONResponse:
        # a scenario that loads but cannot be computed as asked (e.g. `mfu: auto` with no layout that
        # fits a node): the same 422 as a field the schema refuses; a missing optional dependency is the
        # server's (501)
        if isinstance(exc, MissingExtra):
            return _error(501, [("server", v, m) for _, v, m in exc.problems])
        return _error(422, _scenario_problems(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI answers an unparseable JSON body with 400; the API's contract is 422 with a field.
        if exc.status_code == 400:
            return _error(422, [("body", None, f"malformed JSON: {exc.detail}")])
        return _error(exc.status_code, [("path", _request.url.path, str(exc.detail))], exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        merged: dict[str, tuple[Any, list[str]]] = {}
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ())]
            if loc and loc[0] in ("body", "query", "path"):
                loc = loc[1:]
            # pydantic names each member of a union it tried (`compute_cap.list[float]`,
            # `compute_cap.constrained-str`): the field is the name, and its members' complaints are one
            loc = [p for p in loc if not _TYPE_TAG.match(p)]
            msg = err.get("msg", "invalid")
            # a validator's own message, without pydantic's "Value error, " prefix (as the CLI shows it);
            # a list's item as the other paths name it (vary[0].field, as scenarios[1].num_nodes)
            field = "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in loc).lstrip(".") or "body"
            if err.get("input", ...) is None and err.get("type", "").endswith("_type"):
                # null where a value goes: pydantic listed every member of the union it tried
                msg = "is null, which it does not take: give a value"
            elif err.get("type") in ("literal_error", "enum") and (err.get("ctx") or {}).get("expected"):
                # pydantic: "Input should be 'a', 'b' or 'c'": in the CLI's words
                name = next((p for p in reversed(loc) if not p.isdigit()), "value")  # not "unknown 1"
                msg = f"unknown {name}; known: {choices_text(err['ctx']['expected'])}"
            elif err.get("type") == "extra_forbidden":  # pydantic: "Extra inputs are not permitted"
                msg = (
                    "not a field of this request: give the base preset as ?preset=NAME in the query (or as "
                    "the scenario's own `preset`)"
                    if field == "preset" and _request.url.path in PRESET_ROUTES
                    else "not a field of this request (its schema: /openapi.json or /docs)"
                )
            messages = merged.setdefault(field, (err.get("input"), []))[1]
            if msg.removeprefix("Value error, ") not in messages:
                messages.append(msg.removeprefix("Value error, "))
        problems = [(f, v, "; or: ".join(m)) for f, (v, m) in merged.items()]
        return _error(422, problems)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            routes=app.routes,
            description="dtsim HTTP API: the scenario and result schemas of the CLI.",
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        scen = Scenario.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, sub in scen.pop("$defs", {}).items():
            components.setdefault(name, sub)
        components["Scenario"] = scen
        components["SimulateBatch"] = {
            "type": "object",
            "properties": {
                "scenarios": {
                    "type": "array",
                    "items": {"$ref": "#/components/schemas/Scenario"},
                    "minItems": 1,
                    "maxItems": MAX_BATCH,
                }
            },
            "required": ["scenarios"],
            "additionalProperties": False,
        }
        op = schema["paths"]["/api/simulate"]["post"]
        op["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "anyOf": [
                            {"$ref": "#/components/schemas/Scenario"},
                            {"$ref": "#/components/schemas/SimulateBatch"},
                        ]
                    },
                    "examples": {
                        "scenario": {
                            "summary": "One scenario (unset fields: MIRI simulator docs §9 defaults)",
                            "value": {"num_nodes": 72, "bandwidth_mbps": 1000, "parameters_b": 70},
                        },
                        "batch": {
                            "summary": "A batch: each scenario simulated on its own",
                            "value": {"scenarios": [{"num_nodes": 8}, {"num_nodes": 72, "latency_ms": 150}]},
                        },
                    },
                }
            },
        }
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    # after every API route and before the UI's catch-all: JSON 404/405 for any path under /api
    fallback = ApiFallback(router.routes)
    app.router.add_route("/api", fallback, include_in_schema=False)
    app.router.add_route("/api/{rest:path}", fallback, include_in_schema=False)
    json_paths = frozenset(r.path for r in router.routes if isinstance(r, APIRoute) and "POST" in r.methods)
    query_params = tuple(
        (r, frozenset(q.alias or q.name for q in r.dependant.query_params))
        for r in router.routes
        if isinstance(r, APIRoute)
    )
    app.add_middleware(RequestGuard, json_paths=json_paths, query_params=query_params)
    if ui:
        from dtsim.interfaces.web.page import mount

        mount(app)
    return app


NO_UI_PAGE = (
    "<!doctype html><title>dtsim API</title><p>dtsim serves its HTTP API here (<a href='/docs'>/docs</a>, "
    "<a href='/openapi.json'>/openapi.json</a>). The web UI is served by <code>dtsim serve --workers 1</code> "
    "only: its live connection must reach the process that built the page, and several workers do not ensure "
    "that.</p>"
)


def create_api_app() -> FastAPI:
    """The API without the web UI, for `dtsim serve --workers N` with N > 1 (uvicorn imports it by name
    in each worker process). The UI is left out there: NiceGUI keeps a page's state in the process that
    served it and its socket.io connection must reach that process, which uvicorn's workers (one shared
    socket, no sticky sessions) do not ensure. / says so."""
    app = create_app(ui=False)

    @app.get("/", include_in_schema=False)
    def no_ui() -> HTMLResponse:
        return HTMLResponse(NO_UI_PAGE)

    settle_heap()
    return app
