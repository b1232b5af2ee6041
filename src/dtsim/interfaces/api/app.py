"""The HTTP API (FastAPI): the same scenario and result schemas as the CLI, under /api.

Bounded by design: a request body over MAX_BODY_BYTES gets 413, a batch over MAX_BATCH scenarios
422 (the schema's maxItems), invalid input 422 with one {field, value, message} per problem, and work that outlives
TIME_BUDGET_S stops with 503 instead of holding a worker.
"""

from __future__ import annotations

import json
import math
import time
from enum import Enum
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, RootModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from dtsim import __version__, catalog
from dtsim.analysis.sweep import MAX_POINTS, SWEEP_OUTPUTS, SWEEPABLE, default_range, sweep
from dtsim.assumptions import table as assumptions_table
from dtsim.errors import ScenarioError
from dtsim.models.decentralized.engine import simulate
from dtsim.models.decentralized.result import Result
from dtsim.schema.scenario import Scenario, load_scenario, scenario_json_schema

PresetName = Enum("PresetName", {k: k for k in catalog.scenario_presets()}, type=str)
MAX_BODY_BYTES = 1_000_000
MAX_BATCH = 1000
TIME_BUDGET_S = 20.0


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


class SweepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scenario: dict[str, Any] = Field(
        default_factory=dict, description="Scenario fields (defaults: MIRI simulator docs §9)."
    )
    field: str = Field(description=f"Field to vary: one of {', '.join(SWEEPABLE)}.")
    values: list[float] | None = Field(
        None, max_length=MAX_POINTS, description="Values; default: around the current one."
    )
    points: int = Field(41, ge=2, le=MAX_POINTS, description="Number of points when values are not given.")


class SensitivityRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # 0 is not false, "2" is not 2
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
        le=1024,
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


class ApiError(Exception):
    def __init__(self, status: int, problems: list[tuple[str, Any, str]]):
        self.status = status
        self.problems = problems


def _error(status: int, problems: list[tuple[str, Any, str]]) -> JSONResponse:
    body = {"detail": [{"field": f, "value": _jsonable(v), "message": m} for f, v, m in problems]}
    return JSONResponse(status_code=status, content=body)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return str(value)


class BodyLimit:
    """ASGI middleware: refuse request bodies over `limit` bytes with 413, before reading them all."""

    def __init__(self, app, limit: int = MAX_BODY_BYTES):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        too_big = _error(
            413,
            [
                (
                    "body",
                    f"{int(declared)} bytes" if declared else "body",
                    f"must be at most {self.limit:,} bytes",
                )
            ],
        )
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await too_big(scope, receive, send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise ApiError(
                        413, [("body", f"over {self.limit:,} bytes", f"must be at most {self.limit:,} bytes")]
                    )
            return message

        try:
            return await self.app(scope, limited, send)
        except ApiError as exc:
            return await _error(exc.status, exc.problems)(scope, receive, send)


def _scenario_problems(exc: ScenarioError, prefix: str = "") -> list[tuple[str, Any, str]]:
    return [(f"{prefix}{f}", v, m) for f, v, m in exc.problems]


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        raise ApiError(422, [("body", None, 'must be a JSON object (a scenario, or {"scenarios": [...]})')])
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(
            422, [("body", raw[:80].decode("utf-8", "replace"), f"malformed JSON: {exc}")]
        ) from None


def _load(fields: Any, preset: Any, prefix: str = "") -> Scenario:
    preset = getattr(preset, "value", preset)
    if not isinstance(fields, dict):
        raise ApiError(
            422,
            [(prefix.rstrip(".") or "body", _jsonable(fields), "must be a JSON object of scenario fields")],
        )
    try:
        return load_scenario(preset=preset, layers=[fields])
    except ScenarioError as exc:
        raise ApiError(422, _scenario_problems(exc, prefix)) from None


router = APIRouter(prefix="/api")
ERRORS = {
    413: {"model": ErrorBody, "description": "Request body too large."},
    422: {
        "model": ErrorBody,
        "description": "Invalid input: one entry per problem with field, value and what is allowed.",
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
    """Body: one scenario (the fields of `dtsim schema`), or `{"scenarios": [...]}` for a batch of up
    to 1,000. Response: the result (the JSON of `dtsim simulate --json`), or `{"results": [...]}`."""
    body = await _json_body(request)
    if isinstance(body, dict) and "scenarios" in body:
        items = body["scenarios"]
        if set(body) != {"scenarios"}:
            extra = sorted(set(body) - {"scenarios"})
            raise ApiError(
                422, [(extra[0], _jsonable(body[extra[0]]), "a batch body holds only 'scenarios'")]
            )
        if not isinstance(items, list) or not items:
            raise ApiError(422, [("scenarios", _jsonable(items), "must be a non-empty list of scenarios")])
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
    "/sweep", response_model=SweepResponse, responses=ERRORS, summary="Vary one field across a range"
)
def api_sweep(
    req: SweepRequest,
    preset: Annotated[PresetName | None, Query(description="Start from this preset.")] = None,
) -> Any:
    scenario = _load(req.scenario, preset, "scenario.")
    try:
        values = (
            req.values if req.values is not None else default_range(scenario, req.field, req.points).tolist()
        )
        batch = sweep(scenario, req.field, values)
    except ScenarioError as exc:
        raise ApiError(422, _scenario_problems(exc)) from None
    columns = {}
    for key in SWEEP_OUTPUTS:
        col = batch[key]
        columns[key] = [None if v != v else float(v) for v in col.tolist()]
    return SweepResponse(
        field=req.field, values=[float(v) for v in values], mode=batch["mode"].tolist(), columns=columns
    )


@router.post(
    "/sensitivity",
    responses=ERRORS,
    summary="Sobol indices and a tornado: which uncertain inputs drive an output",
)
def api_sensitivity(
    req: SensitivityRequest,
    preset: Annotated[PresetName | None, Query(description="Start from this preset.")] = None,
) -> dict[str, Any]:
    """The JSON of `dtsim sensitivity --json`: `{"output", "indices": [{"input", "S1", "ST", "low",
    "high", ...}], ...}` ranked by ST, over the scenario's distributions and, unless
    `fixed_assumptions`, the assumptions table's."""
    from dtsim.analysis.sensitivity import sensitivity as run_sensitivity
    from dtsim.analysis.uncertainty import load_uncertain_scenario

    try:
        scenario, dists = load_uncertain_scenario(
            None,
            getattr(preset, "value", preset),
            fixed_assumptions=req.fixed_assumptions,
            fields=req.scenario,
        )
        res = run_sensitivity(scenario, dists, req.output, req.base, req.seed)
    except ScenarioError as exc:
        problems = [
            (f[2:] if f.startswith("--") else "scenario" if f == "inputs" else f"scenario.{f}", v, m)
            for f, v, m in exc.problems
        ]
        raise ApiError(422, problems) from None
    return _finite(res.as_dict())


def _finite(x: Any) -> Any:
    """JSON has no NaN or infinity: a non-finite number becomes null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


@router.get("/presets", summary="Scenario presets, node presets and accelerators")
def api_presets() -> dict[str, Any]:
    return catalog.catalog_payload()


@router.get("/schema", summary="JSON Schema of a scenario")
def api_schema() -> dict[str, Any]:
    return scenario_json_schema()


@router.get("/assumptions", summary="The assumptions table")
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


def create_app(ui: bool = True) -> FastAPI:
    """The API, and the web UI at / unless ui is False."""
    app = FastAPI(
        title="dtsim", version=__version__, openapi_url="/openapi.json", docs_url=None, redoc_url=None
    )
    app.include_router(router)
    _mount_docs(app)

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.problems)

    @app.exception_handler(ScenarioError)
    async def _scenario_error(_request: Request, exc: ScenarioError) -> JSONResponse:
        # a scenario that loads but cannot be computed as asked (e.g. `mfu: auto` with no layout that
        # fits a node): the same 422 as a field the schema refuses
        return _error(422, _scenario_problems(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI answers an unparseable JSON body with 400; the API's contract is 422 with a field.
        if exc.status_code == 400:
            return _error(422, [("body", None, f"malformed JSON: {exc.detail}")])
        return _error(exc.status_code, [("path", None, str(exc.detail))])

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ())]
            if loc and loc[0] in ("body", "query", "path"):
                loc = loc[1:]
            problems.append((".".join(loc) or "body", _jsonable(err.get("input")), err.get("msg", "invalid")))
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
                    }
                }
            },
        }
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(BodyLimit)
    if ui:
        from dtsim.interfaces.web.page import mount

        mount(app)
    return app
