"""POST /api/limits/curve, /api/limits/search, /api/validate, /api/target, /api/governance, and the grid
form of /api/sweep: the analysis commands of the CLI as operations. Each takes the inputs of its command
(as JSON fields: a comma list of the CLI is a JSON list) and returns the JSON of its `--json` output,
built by the same code (interfaces/operations.py).

Each operation's work is a module-level function `work(progress, **fields) -> dict` (`WORK`: path →
(work, request model)): `fields` are the request model's, `progress(fraction)` is called with 0..1 as
the work proceeds. Work estimated over about a second (target, governance: a timed probe) or asked for
with `Prefer: respond-async` runs as a background job through that function (api/jobs.py). A value an operation refuses is a ScenarioError naming the body field (a CLI option
`--inner-steps` becomes `inner_steps`, a scenario field `scenario.num_nodes`), which the app answers
with 422. app.py adds the routes to its /api router (`register`), so its body guard covers them.

Not offered here (CLI only): the Monte Carlo options (`--uncertainty`, `--seed`, …; see /api/sensitivity
for the API's uncertainty), Dask (`--scheduler`, `--workers`), files (`--runs`, `--calibration`, `--csv`,
`--plot`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import cache
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, FiniteFloat
from starlette.concurrency import run_in_threadpool

from dtsim import catalog
from dtsim.analysis.governance import MAX_COMPUTE_CAP, MAX_MEMORY_CAP_GB
from dtsim.errors import ScenarioError
from dtsim.interfaces import operations as ops
from dtsim.interfaces.api import jobs
from dtsim.interfaces.api.base import ApiRequest
from dtsim.models.limits.hardware import MAX_LEVEL_BYTES_S, MAX_LEVEL_LATENCY_US
from dtsim.schema.fields import BOUNDS

ProgressFn = Callable[[float], None]
PresetId = Literal[tuple(catalog.scenario_presets())]  # type: ignore[valid-type]
Scaling = Literal[ops.SCALING_LAWS]  # type: ignore[valid-type]
MemoryCheck = Literal[ops.MEMORY_CHECKS]  # type: ignore[valid-type]
Name = Annotated[str, Field(min_length=1, max_length=200)]


def _distinct(values: list[str]) -> list[str]:
    """A list of names that names each once (a name repeated would only repeat the work)."""
    twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if twice is not None:
        raise ValueError(f"{twice!r} is listed twice; name each once")
    return values


Names = Annotated[list[Name], AfterValidator(_distinct)]
# A comma list of the CLI (`--compression 1,16,150`): a JSON list of numbers (and `auto` where the
# option takes it), or the CLI's text.
NumberList = list[FiniteFloat | Literal["auto", "auto-quality"]] | Annotated[str, Field(max_length=2000)]
Numbers = list[FiniteFloat] | Annotated[str, Field(max_length=2000)]  # a list without `auto`
MAX_LIST = 1000  # values in one list field (the CLI has no bound; an API request must have one)
MAX_NODE_COUNT = 10_000_000  # largest max_nodes: the node-count grid grows as its logarithm
# A grid sweep's points in one response: about 90 columns each (the outputs of simulate), so 4,096
# points (a 64 × 64 heat map) are some 500,000 values, a few MB of JSON. Larger grids: `dtsim sweep`.
MAX_GRID_POINTS = 4096
STRICT = ConfigDict(extra="forbid", strict=True)  # true is not 1, "2" is not 2


DEFAULT_MAX_NODES = 100_000  # target's and governance's default largest node count
PROBE_MAX_NODES = 16  # the probe of an estimate searches node counts 1–16 (12% of the default grid's)


def _no_progress(_fraction: float) -> None:
    return None


def _field(name: str) -> str:
    """A CLI option as the body field it is here: `--inner-steps` (or `inner-steps`) → `inner_steps`."""
    return name.removeprefix("--").replace("-", "_")


def _refused(exc: ScenarioError, prefix: str = "") -> ScenarioError:
    return ScenarioError([(prefix + _field(f), v, _body_words(m)) for f, v, m in exc.problems])


_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def _body_words(message: str) -> str:
    """A message the CLI's checks wrote, with each option that is a field of these bodies named as the
    field (`--min-nodes` → `min_nodes`); text in backticks (a command line) is left as it is."""
    fields = _body_fields()
    parts = message.split("`")  # a `quoted` command line (odd parts) is left as it is
    return "`".join(
        p
        if i % 2
        else _FLAG.sub(lambda m: _field(m.group(0)) if _field(m.group(0)) in fields else m.group(0), p)
        for i, p in enumerate(parts)
    )


@cache
def _body_fields() -> frozenset[str]:
    return frozenset(
        name
        for model in (
            TargetRequest,
            GovernanceRequest,
            LimitsCurveRequest,
            LimitsSearchRequest,
            ValidateRequest,
        )
        for name in model.model_fields
    )


def _json(payload: Any) -> Any:
    """The payload as the CLI's `--json` writes it (numpy values as numbers, a non-finite value as
    null), built in one walk (operations.json_ready), not written out as text and read back."""
    return ops.json_ready(payload)


def _text(values: Any) -> str | None:
    """A JSON list of a CLI comma-list option as the CLI's text (a string passes as it is)."""
    if values is None or isinstance(values, str):
        return values
    return ",".join(v if isinstance(v, str) else repr(v) for v in values)


def _base(scenario: dict[str, Any], preset: str | None):
    """The scenario (preset, then the body's fields) with distributions at their medians, and them."""
    from dtsim.analysis.uncertainty import load_uncertain_scenario

    try:
        return load_uncertain_scenario(None, preset, fixed_assumptions=True, fields=scenario)
    except ScenarioError as exc:
        raise ScenarioError(
            [("scenario" if f == "inputs" else f"scenario.{f}", v, m) for f, v, m in exc.problems]
        ) from None


# --- requests -----------------------------------------------------------------------------------------------


class ChipFields(ApiRequest):
    peak_tflops: float | None = Field(
        None,
        gt=0,
        le=1e9,
        description="Custom chip: dense 16-bit TFLOP/s (Erdil & Schneider-Joseph 2024 Table 2).",
    )
    hbm_tb_s: float | None = Field(None, gt=0, le=1e9, description="Custom chip: HBM bandwidth, TB/s.")
    memory_gb: float | None = Field(None, gt=0, le=1e9, description="Custom chip: memory per GPU, GB.")


class LimitsCurveRequest(ChipFields):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={"examples": [{"gpu": ["h100-sxm"], "months": 3, "scaling": "default"}]},
    )
    gpu: Names | None = Field(
        None,
        min_length=1,
        max_length=4,
        description="Limits scenarios (h100-sxm, h100-sxm-low-latency, …) or catalog GPUs; several: one "
        "curve each (the response is then {name: points}). Default h100-sxm.",
    )
    sparse: bool = Field(False, description="Sparse (MoE) models: E from the width.")
    scaling: Scaling = Field("default", description="Critical batch law.")
    months: float = Field(3.0, gt=0, le=ops.MAX_MONTHS, description="Training duration limit, months.")
    memory: MemoryCheck = Field("per-gpu", description="Memory check (aggregate: the paper's).")
    level_bandwidth: list[Annotated[float, Field(ge=1, le=MAX_LEVEL_BYTES_S)]] | None = Field(
        None, min_length=1, max_length=16, description="Override: bidirectional bytes/s per network level."
    )
    level_latency_us: list[Annotated[float, Field(ge=0, le=MAX_LEVEL_LATENCY_US)]] | None = Field(
        None, min_length=1, max_length=16, description="Override: latency per network level, µs."
    )


class LimitsSearchRequest(ChipFields):
    model_config = ConfigDict(
        **STRICT, json_schema_extra={"examples": [{"compute": 1e26, "months": 3, "gpu": "h100-sxm"}]}
    )
    compute: float = Field(
        ge=ops.MIN_COMPUTE_FLOP, le=ops.MAX_COMPUTE_FLOP, description="Training compute, FLOP."
    )
    months: float = Field(
        3.0, ge=1e-3, le=ops.MAX_MONTHS, description="Training duration limit, months (≥ 45 minutes)."
    )
    gpu: Name = Field("h100-sxm", description="Limits scenario or catalog GPU.")
    sparse: bool = Field(False, description="Sparse (MoE) models: E from the width.")
    scaling: Scaling = Field("default", description="Critical batch law.")
    memory: MemoryCheck = Field("per-gpu", description="Memory check.")


class ValidateRequest(ApiRequest):
    model_config = ConfigDict(**STRICT, json_schema_extra={"examples": [{"subset": ["NCCL", "MEG21"]}]})
    subset: Names | None = Field(
        None, min_length=1, max_length=MAX_LIST, description="Group names or record ids (default: all)."
    )


# the bounds the searches enforce (analysis.search.check_days; the scenario field's), as the schema says
_DAYS = tuple(float(x) for x in catalog.assumption_rows()["governance_run_days"]["range"])


class ScenarioBase(ApiRequest):
    scenario: dict[str, Any] = Field(
        default_factory=dict,
        description="Base scenario fields over the preset (network, MFU, stragglers…); a distribution runs "
        "at its median.",
    )
    preset: PresetId = Field("governance", description="Base preset.")
    days: float | None = Field(
        None,
        ge=_DAYS[0],
        le=_DAYS[1],
        description="Time limit in days (default: governance_run_days of the assumptions table; its range).",
    )


class TargetRequest(ScenarioBase):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [
                {"local_flop": 1e24, "node": ["dgx-h100"], "max_nodes": 2000},
                {"solve": "days", "params_b": 10, "scenario": {"num_nodes": 100}},
            ]
        },
    )
    local_flop: float | None = Field(None, gt=0, le=1e40, description="Target: local-equivalent FLOP (C·η).")
    quality_flop: float | None = Field(
        None, gt=0, le=1e40, description="Target: quality-adjusted FLOP (C·η·χ)."
    )
    params_b: float | None = Field(
        None,
        ge=0.001,
        le=100_000,
        description="Target: this model size, B (with solve num_nodes|days: the model); 0.001–100000, as the CLI.",
    )
    tokens_t: float | None = Field(
        None,
        ge=BOUNDS["tokens_t"]["ge"],
        le=BOUNDS["tokens_t"]["le"],
        description="… trained on this many tokens, T (with solve: default compute-optimal).",
    )
    solve: Literal["parameters_b", "num_nodes", "days"] | None = Field(
        None,
        description="A direct question on the base's node kind (or one node), naming the limiting factor.",
    )
    objective: Literal["cost", "time"] | None = Field(None, description="cost (cheapest, default) or time.")
    budget: float | None = Field(None, gt=0, le=1e16, description="Capital budget, USD.")
    reach: Literal["local", "quality"] | None = Field(
        None, description="Inverse query: the most local|quality compute reachable with budget."
    )
    min_nodes: bool = Field(False, description="Inverse query: fewest nodes of one node preset.")
    node: Names | None = Field(
        None, min_length=1, max_length=MAX_LIST, description="Node presets to search (default: all)."
    )
    max_nodes: int | None = Field(
        None, ge=1, le=MAX_NODE_COUNT, description="Largest node count searched (default 100,000)."
    )
    compression: NumberList | None = Field(None, description="Compression ratios, e.g. [1, 16, 150].")
    inner_steps: NumberList | None = Field(None, description='H values, e.g. ["auto", 16, 64].')
    group_sizes: NumberList | None = Field(None, description="0 (flat) and group sizes.")
    fractions: NumberList | None = Field(None, description="Model sizes: fractions of one node.")
    pipeline_multiples: NumberList | None = Field(
        None, description="Model sizes: multiples of one node (pipelines)."
    )
    activation_compression: NumberList | None = Field(None, description="Activation compression ratios.")


class GovernanceRequest(ScenarioBase):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [{"compute_cap": [8, 2], "memory_cap": None, "targets": [1e25], "gpu": ["h100-sxm"]}]
        },
    )
    compute_cap: Numbers | None = Field(
        [16.0, 8.0, 4.0, 2.0, 1.0],
        description=f"Per-node compute caps, H100-equivalents, each > 0 and ≤ {MAX_COMPUTE_CAP:,.0f} (null: none).",
    )
    memory_cap: Numbers | None = Field(
        [2048.0, 1280.0, 1024.0, 512.0, 256.0],  # floats: the list's type (ints warned when dumped)
        description=f"Per-node memory caps, GB, each > 0 and ≤ {MAX_MEMORY_CAP_GB:,.0f}, applied with "
        "base_compute_cap (null: none).",
    )
    base_compute_cap: float = Field(
        16.0, gt=0, le=MAX_COMPUTE_CAP, description="Compute cap beside the memory caps, H100-equivalents."
    )
    targets: Numbers = Field([1e24, 1e25, 1e26], description="Compute targets, FLOP.")
    metric: Literal["quality", "local"] = Field("quality", description="quality (C·η·χ) or local (C·η).")
    gpu: Names | None = Field(
        None, min_length=1, max_length=MAX_LIST, description="Accelerators to consider (default: all)."
    )
    precisions: Names = Field(
        ["fp16", "fp8"], min_length=1, max_length=16, description="Training precisions an actor may use."
    )
    max_nodes: int = Field(100_000, ge=1, le=MAX_NODE_COUNT, description="Largest node count searched.")


# --- work ---------------------------------------------------------------------------------------------------


def limits_curve_work(progress: ProgressFn = _no_progress, **fields: Any) -> Any:
    """`dtsim limits curve --json`."""
    try:
        _hws, series = ops.limits_curve(**fields, progress=jobs.counted(progress))
    except ScenarioError as exc:
        raise _refused(exc) from None
    return _json(ops.curve_payload(series))


def limits_search_work(progress: ProgressFn = _no_progress, **fields: Any) -> dict[str, Any]:
    """`dtsim limits search --json` (without --uncertainty)."""
    try:
        found = ops.limits_search(**fields)
    except ScenarioError as exc:
        raise _refused(exc) from None
    progress(1.0)
    return _json(found.payload)


def validate_work(progress: ProgressFn = _no_progress, subset: list[str] | None = None) -> dict[str, Any]:
    """`dtsim validate --json`: the report (runs, groups' errors and bounds, the pooled datacenter check,
    interval coverage, fit verdicts, each group's worst run, the constants in use)."""
    try:
        _data, report = ops.validation_report(subset, field="subset")
    except ScenarioError as exc:
        raise _refused(exc) from None
    progress(1.0)
    return _json(report.as_dict())


SOLVE_OTHERS = (
    "local_flop",
    "quality_flop",
    "objective",
    "budget",
    "reach",
    "fractions",
    "pipeline_multiples",
)


def target_work(progress: ProgressFn = _no_progress, **fields: Any) -> dict[str, Any]:
    """`dtsim target --json`, and with `solve` its direct questions."""
    scenario = fields.pop("scenario", {})
    base, dists = _base(scenario, fields.pop("preset", "governance"))
    try:
        ops.refuse_searched(
            scenario, "target", fields.get("solve"), where="scenario", node_given=bool(fields.get("node"))
        )
    except ScenarioError as exc:
        raise _refused(exc) from None
    lists = ("compression", "inner_steps", "group_sizes", "fractions", "pipeline_multiples")
    for k in (*lists, "activation_compression"):
        fields[k] = _text(fields.get(k))
    solve = fields.pop("solve", None)
    try:
        if solve is None:
            return _json(ops.target_search(base, dists, **fields, progress=jobs.counted(progress)).payload)
        others = {k: fields.pop(k, None) for k in SOLVE_OTHERS}
        others["min_nodes"] = fields.pop("min_nodes", False) or None
        answer = ops.target_solve(base, dists, solve, **fields, others=others)
    except ScenarioError as exc:
        raise _refused(exc) from None
    progress(1.0)
    return _json(answer.payload)


def governance_work(progress: ProgressFn = _no_progress, **fields: Any) -> dict[str, Any]:
    """`dtsim governance --json`."""
    scenario = fields.pop("scenario", {})
    base, dists = _base(scenario, fields.pop("preset", "governance"))
    try:
        ops.refuse_searched(scenario, "governance", where="scenario")
    except ScenarioError as exc:
        raise _refused(exc) from None
    # null is no cap; an empty list is refused as the CLI refuses an empty value (it ran as "none")
    caps = {
        k: "none" if fields.get(k) is None else _text(fields.get(k)) for k in ("compute_cap", "memory_cap")
    }
    fields |= caps | {"targets": _text(fields["targets"]), "precisions": ",".join(fields["precisions"])}
    try:
        answer = ops.governance_analysis(base, dists, **fields, progress=jobs.counted(progress))
    except ScenarioError as exc:
        raise _refused(exc) from None
    return _json(answer.payload)


def grid_sweep_work(
    progress: ProgressFn = _no_progress,
    scenario: dict[str, Any] | None = None,
    preset: str | None = None,
    vary: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """/api/sweep with `vary`: the grid of `dtsim sweep` (analysis/grid.run_grid), one row per point, as
    columns: {"fields", "points", "constants", "columns": {varied field or output: [value per row]}}."""
    from dtsim.analysis.grid import grid_size, metric_names, parse_vary, run_grid, set_and_varied
    from dtsim.schema.scenario import load_scenario

    if not isinstance(scenario, dict):
        raise ScenarioError([("scenario", scenario, "must be a JSON object of scenario fields")])
    from dtsim.interfaces.api.base import distributions_refused, preset_conflict

    problems = distributions_refused(scenario, "/api/sweep", "scenario.") + preset_conflict(
        scenario, preset, "scenario."
    )
    if problems:
        raise ScenarioError(problems)
    try:  # a `preset` in the scenario is its base, as for /api/simulate and a scenario file
        base = load_scenario(preset=preset, file_fields=scenario)
    except ScenarioError as exc:
        raise _refused(exc, "scenario.") from None
    if not vary:
        raise ScenarioError(
            [("vary", vary, "give at least one axis {field, values} or {field, start, stop, num}")]
        )
    axes = []
    for i, axis in enumerate(vary):
        try:
            axes.append(parse_vary(axis_spec(axis)))
        except ScenarioError as exc:
            raise ScenarioError([(f"vary[{i}]", v, m) for _f, v, m in exc.problems]) from None
    set_and_varied(scenario, axes, where="scenario")
    n = grid_size(axes)
    if n > MAX_GRID_POINTS:
        raise ScenarioError(
            [
                (
                    "vary",
                    f"{n:,} points",
                    f"a grid sweep here holds at most {MAX_GRID_POINTS:,} points; use dtsim sweep",
                )
            ]
        )
    try:
        result = run_grid(base, axes, jobs.counted(progress))
    except ScenarioError as exc:  # a value the batch path refuses: the axis that gave it, else the base
        where = {a.field: f"vary[{i}]" for i, a in enumerate(axes)}
        named = [
            ("vary" if f == "--vary" else where.get(f.split("[")[0], f"scenario.{f}"), v, m)
            for f, v, m in exc.problems
        ]
        raise ScenarioError(named) from None
    names = [a.field for a in axes]
    names += [k for k in result.columns if k not in result.constants and k not in names]
    return _json(
        {
            "fields": [a.field for a in axes],
            "points": result.n,
            "constants": result.constants,
            "columns": ops.grid_columns(result, names),
            "numeric_outputs": [k for k in metric_names(result) if k not in {a.field for a in axes}],
            # a whole-number range whose rounding merged points says so (the points were silently fewer)
            "notes": [n for n in (a.note() for a in axes) if n],
        }
    )


def axis_spec(axis: dict[str, Any]) -> str:
    """A grid axis {field, values} or {field, start, stop, num, log} as `dtsim sweep --vary` text."""
    name = axis["field"]
    if axis.get("values") is not None:
        if any(k in axis and axis[k] is not None for k in ("start", "stop", "num")):
            raise ScenarioError([(name, axis, "give values or start/stop/num, not both")])
        texts = []
        for v in axis["values"]:
            text = ("true" if v else "false") if isinstance(v, bool) else v if isinstance(v, str) else repr(v)
            if "," in text:
                raise ScenarioError([(name, v, "a value holds no comma")])
            texts.append(text)
        return f"{name}={','.join(texts)}"
    missing = [k for k in ("start", "stop", "num") if axis.get(k) is None]
    if missing:
        raise ScenarioError(
            [(name, axis, f"give values, or start, stop and num (missing {', '.join(missing)})")]
        )
    return f"{name}={axis['start']!r}:{axis['stop']!r}:{axis['num']}" + (":log" if axis.get("log") else "")


# --- routes -------------------------------------------------------------------------------------------------

# path → (work, request model, summary); ESTIMATE: path → seconds the work is expected to take (the
# others are bounded to about a second and run inline unless the request prefers respond-async)
WORK: dict[str, tuple[Callable[..., Any], type[BaseModel], str]] = {
    "/limits/curve": (
        limits_curve_work,
        LimitsCurveRequest,
        "Utilization against training compute within a time limit (Erdil & Schneider-Joseph 2024)",
    ),
    "/limits/search": (
        limits_search_work,
        LimitsSearchRequest,
        "Smallest cluster and layout for a training compute (Erdil & Schneider-Joseph 2024)",
    ),
    "/validate": (validate_work, ValidateRequest, "Predict the measured runs: errors, bounds, coverage"),
    "/target": (
        target_work,
        TargetRequest,
        "Cheapest or fastest configuration for a target, or a direct question",
    ),
    "/governance": (
        governance_work,
        GovernanceRequest,
        "Threshold analysis: per-node caps and whom they catch",
    ),
}


Estimate = tuple[float, Any]  # (seconds expected, the answer itself when the estimate computed it)


def target_estimate(fields: dict[str, Any]) -> Estimate:
    """Seconds a target search is expected to take here: the same search over node counts up to
    PROBE_MAX_NODES, timed (a problem with the input is 422 before any job is made), scaled by how many
    more node counts the asked max_nodes searches (the rows grow with them). A `solve` question is a
    few searches on one node kind (well under a second): run inline."""
    if fields.get("solve") is not None:
        return 0.0, None
    return _probe(target_work, fields)


def governance_estimate(fields: dict[str, Any]) -> Estimate:
    """Seconds a governance analysis is expected to take here, probed as target_estimate is."""
    return _probe(governance_work, fields)


def _probe(work: Callable[..., Any], fields: dict[str, Any]) -> Estimate:
    """The probe's scaled time, and its answer when it searched everything asked (max_nodes at most
    PROBE_MAX_NODES): that request is answered by the probe, not run twice."""
    from dtsim.analysis.search import node_count_grid

    full = fields.get("max_nodes") or DEFAULT_MAX_NODES
    small = min(full, PROBE_MAX_NODES)
    start = time.perf_counter()
    answer = work(_no_progress, **{**fields, "max_nodes": small})
    seconds = (time.perf_counter() - start) * len(node_count_grid(full)) / len(node_count_grid(small))
    return seconds, answer if small == full else None


def _endpoint(
    kind: str,
    work: Callable[..., Any],
    estimate: Callable[[dict[str, Any]], Estimate] | None,
    model: type,
    doc: str,
) -> Callable[..., Any]:
    async def endpoint(request: Request, req: BaseModel) -> Any:
        fields = req.model_dump()
        # a client that asked for a job gets its 202 at once: the probe (seconds of real search, in the
        # server) only decides whether to answer inline, and a bad input then fails the job, named
        asked_async = jobs.prefers_async(request)
        probe = estimate is not None and not asked_async
        seconds, answer = await run_in_threadpool(estimate, fields) if probe else (0.0, None)
        if answer is not None:  # only probed when not asked for a job
            return answer  # the estimate's probe was the whole request
        return await jobs.run(request, kind, work, fields, estimate_s=seconds)

    endpoint.__annotations__ = {"request": Request, "req": model, "return": Any}  # FastAPI reads these
    endpoint.__doc__ = doc
    return endpoint


def register(router: APIRouter, responses: dict[int | str, dict[str, Any]]) -> None:
    """Add every operation to `router` as a POST route: work estimated over jobs.JOB_THRESHOLD_S (or
    asked for with `Prefer: respond-async`) answers 202 and runs as a job (api/jobs.py)."""
    answers = {**responses, **jobs.job_responses(responses[422]["model"])}
    for path, (work, model, summary) in WORK.items():
        kind = path.strip("/").replace("/", "-")
        command = path.strip("/").replace("/", " ")
        doc = (
            f"The JSON of `dtsim {command} --json`. Work estimated over {jobs.JOB_THRESHOLD_S:g} s, or asked "
            "for with `Prefer: respond-async`, runs as a job: 202 and `GET /api/jobs/{id}`, whose result is "
            "this same body."
        )
        router.post(path, responses=answers, summary=summary, tags=["analysis"], name=kind.replace("-", "_"))(
            _endpoint(kind, work, ESTIMATE.get(path), model, doc)
        )


ESTIMATE: dict[str, Callable[[dict[str, Any]], float]] = {
    "/target": target_estimate,
    "/governance": governance_estimate,
}
