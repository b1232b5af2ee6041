"""POST /api/step, /api/plan, /api/collective, /api/fabric: the datacenter commands `dtsim step`,
`dtsim plan`, `dtsim collective` and `dtsim fabric` as operations, answering with the JSON of their
`--json` output (built by the same code: the library's results and interfaces/operations.py's shared functions).

A body is flat, as the command line is: the model (a catalog id, an architecture's fields, or the
shape fields), the cluster and its network (Cluster's fields), the layout (Layout's fields: the
switches are positive, `flash_attention: false` where the CLI says `--no-flash-attention`) and the run
(precision, tokens, usd_per_gpu_hour). Bounds are the library models' own (taken from their fields,
so they cannot drift apart); a problem is 422 naming the body's field (`tp`, `nic_gbps`,
`layouts[2].pp`), never a CLI flag or the library's `layout.` prefix. Requests are strict (true is not
1, "2" is not 2) and unknown fields are refused; rows of a `layouts` batch are read as the rows of a
`--layouts` file are. Not here: `--calibration` (the server's packaged calibration applies), files
(`--model FILE`, `--layouts FILE`: send their contents) and `--uncertainty` (long work, for the jobs
system). app.py adds these operations to its /api router with its error responses (`register`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, field_validator
from starlette.concurrency import run_in_threadpool

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces import operations as ops
from dtsim.interfaces.api.base import ApiRequest
from dtsim.models.datacenter.step import StepResult
from dtsim.models.datacenter.workload import Cluster, Layout
from dtsim.models.network import ALLREDUCE_ALGORITHMS, OPS
from dtsim.physics.transformer import Architecture, architectures

if TYPE_CHECKING:
    from dtsim.models.datacenter.plan import PlanOptions

MODEL_IDS = tuple(architectures())
ModelId = Literal[MODEL_IDS]  # type: ignore[valid-type]
GpuId = Literal[tuple(k for k, g in catalog.gpus().items() if g.micro is not None)]  # type: ignore[valid-type]
ClusterFabricId = Literal[tuple(catalog.cluster_fabrics())]  # type: ignore[valid-type]
LinkId = Literal[tuple(catalog.fabrics())]  # type: ignore[valid-type]
SoftwareId = Literal[tuple(catalog.software())]  # type: ignore[valid-type]
Precision = Literal["bf16", "fp16", "fp8"]
STRICT = ConfigDict(extra="forbid", strict=True)
# rows of one step batch: /api/simulate's batch size (app.MAX_BATCH), about 0.35 s and 2.5 MB of answer
# (a --layouts file may hold 10,000)
MAX_LAYOUTS = 1000
SHAPE_FIELDS = ops.SHAPE_FLAGS  # hidden, layers, heads, kv_heads, ffn, ffn_type, vocab, seq_len
CLUSTER_FIELDS = ops.CLUSTER_FLAGS  # gpu, nodes, gpus_per_node, fabric, nics_per_node, ...

OPERATIONS: list[tuple[str, Callable[..., Any], Any, str, str, bool]] = []  # ..., tag, may answer with a job


def _operation(path: str, response_model: Any, summary: str, tag: str = "datacenter", jobs: bool = False):
    def add(endpoint: Callable[..., Any]) -> Callable[..., Any]:
        OPERATIONS.append((path, endpoint, response_model, summary, tag, jobs))
        return endpoint

    return add


def register(router: APIRouter, responses: dict[int | str, dict[str, Any]]) -> None:
    """Add every operation to `router` as a POST route (one that may answer with a job documents 202
    and 429 too)."""
    from dtsim.interfaces.api import jobs as job_api
    from dtsim.interfaces.api.app import ErrorBody  # defined before app.py registers these

    for path, endpoint, model, summary, tag, jobs in OPERATIONS:
        answers = {**responses, **job_api.job_responses(ErrorBody)} if jobs else responses
        router.post(path, response_model=model, responses=answers, summary=summary, tags=[tag])(endpoint)


def _like(cls: type[BaseModel], name: str, description: str | None = None, optional: bool = False) -> Any:
    """The type of `cls`'s field `name` with its bounds (its pydantic metadata), as a request field:
    one home for every bound, the library model's."""
    info = cls.model_fields[name]
    kind = info.annotation | None if optional else info.annotation
    return Annotated[(kind, *info.metadata, Field(description=description or info.description))]


class WorkloadFields(ApiRequest):
    """What step and plan both take: the model (a catalog id, an architecture's fields, or the shape
    fields alone, which also override a catalog model's as the CLI's shape flags do), the cluster with
    its network, and the run."""

    model_config = STRICT
    model: ModelId | dict[str, Any] | None = Field(
        None,
        description="Catalog model id (catalog/architectures.yaml), or an architecture's fields as in an "
        "architecture file (hidden, layers, heads, vocab, seq_len, ...).",
    )
    hidden: _like(Architecture, "hidden", optional=True) = None
    layers: _like(Architecture, "layers", optional=True) = None
    heads: _like(Architecture, "heads", optional=True) = None
    kv_heads: _like(Architecture, "kv_heads") = None
    ffn: _like(Architecture, "ffn") = None
    ffn_type: _like(Architecture, "ffn_type", optional=True) = None
    vocab: _like(Architecture, "vocab", optional=True) = None
    seq_len: _like(Architecture, "seq_len", "Sequence length (default: the model's).", optional=True) = None
    # the cluster and its network (Cluster's fields; None: the fabric's, else the GPU's own)
    gpu: GpuId | None = Field(None, description=Cluster.model_fields["gpu"].description)
    nodes: _like(Cluster, "nodes", "Nodes.") = 1
    gpus_per_node: _like(Cluster, "gpus_per_node", optional=True) = None
    fabric: ClusterFabricId | None = Field(
        None,
        description="Cluster fabric (catalog/cluster_fabrics.yaml): GPUs per node, NVLink domain, NICs and "
        "link types at once.",
    )
    nics_per_node: _like(Cluster, "nics_per_node") = None
    nic_gbps: _like(Cluster, "nic_gbps") = None
    nvlink_gbps: _like(Cluster, "nvlink_gbps") = None
    nvlink_domain: _like(Cluster, "nvlink_domain") = None
    torus: _like(Cluster, "torus") = None
    oversubscription: _like(Cluster, "oversubscription") = None
    nvls: _like(Cluster, "nvls", optional=True) = None
    # the run
    precision: Precision = Field("bf16", description="Training precision.")
    fp32_grad_accumulation: _like(Layout, "fp32_grad_accumulation") = None
    fp32_params: _like(Layout, "fp32_params") = False
    attention_kernel: _like(Layout, "attention_kernel") = "flash2"
    moe_capacity_factor: _like(Layout, "moe_capacity_factor") = None
    moe_imbalance: _like(Layout, "moe_imbalance") = 1.0
    tokens: float | None = Field(
        None, gt=0, le=1e18, description="Training tokens (e.g. 15e12): report days, GPU-hours, cost, energy."
    )
    usd_per_gpu_hour: float | None = Field(
        None, gt=0, le=1e4, description="Rental price per GPU-hour, for the run's rental cost (with tokens)."
    )
    software: SoftwareId | None = Field(
        None,
        description="Software profile (catalog/software.yaml, `dtsim step --software list`): the training "
        "stack's settings become the layout's defaults; a layout field the body gives wins. The answer "
        "names it (`software`).",
    )

    def given(self) -> set[str]:
        """The body's fields given explicitly (a software profile's fields yield to them)."""
        return set(self.model_fields_set)

    @field_validator("model", mode="before")
    @classmethod
    def _one_model(cls, value: Any) -> Any:
        """One problem named `model` for a value that is neither kind (not one per member of the union)."""
        if value is None or isinstance(value, dict) or (isinstance(value, str) and value in MODEL_IDS):
            return value
        raise ValueError(  # every id, as the CLI lists them (the API's list ended "...")
            f"must be a catalog model id ({', '.join(MODEL_IDS)}) or an object of architecture fields"
        )

    def architecture(self) -> Architecture:
        return ops.model_architecture(
            self.model, {k: getattr(self, k) for k in SHAPE_FIELDS}, name=lambda field: field
        )

    def cluster(self) -> Cluster:
        from dtsim.models.datacenter.workload import build

        given = {k: getattr(self, k) for k in CLUSTER_FIELDS if getattr(self, k) is not None}
        return build(Cluster, given, "cluster.")


STEP_EXAMPLE = {"model": "gpt3-175b", "nodes": 48, "tp": 8, "pp": 12, "gbs": 1536, "fabric": "dgx-a100-hdr"}


class LayoutRequest(WorkloadFields):
    """A model on a cluster with one parallel layout (Layout's fields; the CLI's defaults)."""

    dp: _like(Layout, "dp") = None
    tp: _like(Layout, "tp", "Tensor parallel.") = 1
    pp: _like(Layout, "pp", "Pipeline parallel.") = 1
    vpp: _like(Layout, "vpp") = 1
    cp: _like(Layout, "cp") = 1
    ep: _like(Layout, "ep") = 1
    mbs: _like(Layout, "mbs") = 1
    gbs: _like(Layout, "gbs") = 512
    recompute: _like(Layout, "recompute", "none | selective | full.") = "selective"
    zero: _like(Layout, "zero") = 1
    pp_layers: list[Annotated[int, Field(ge=1, le=100_000)]] | None = Field(
        None,
        min_length=1,
        max_length=100_000,
        description=Layout.model_fields["pp_layers"].description,
    )
    shard_group: _like(Layout, "shard_group") = None
    sequence_parallel: _like(Layout, "sequence_parallel", "Sequence parallelism.") = False
    schedule: _like(Layout, "schedule", "Pipeline schedule.") = "1f1b"
    embedding_stages: _like(Layout, "embedding_stages") = "first-last"
    flash_attention: _like(Layout, "flash_attention", "FlashAttention (false: materialised attention).") = (
        True
    )
    overlap_grad_reduce: _like(Layout, "overlap_grad_reduce") = True
    overlap_tp_comm: _like(Layout, "overlap_tp_comm") = False
    overlap_p2p_comm: _like(Layout, "overlap_p2p_comm") = False

    def layout_fields(self) -> dict[str, Any]:
        """The body's layout as Layout's fields (the base a `layouts` row fills in)."""
        fields = {k: getattr(self, k) for k in LAYOUT_FIELDS}
        fields["pp_layers"] = None if self.pp_layers is None else tuple(self.pp_layers)
        return fields

    def run_fields(self) -> dict[str, Any]:
        """The Workload's fields but the layout: model, cluster, precision and the run's budget."""
        run = {"model": self.architecture(), "cluster": self.cluster(), "precision": self.precision}
        return run | {"tokens": self.tokens, "usd_per_gpu_hour": self.usd_per_gpu_hour}

    def workload(self):
        """The Workload of the body's one layout (what `dtsim step` builds from its flags), a software
        profile's fields under those the body gives."""
        from dtsim.models.datacenter.software import apply_software
        from dtsim.models.datacenter.workload import Workload, build

        fields = self.layout_fields()
        if self.software is not None:
            fields = apply_software(self.software, fields, self.given())
        return build(Workload, {**self.run_fields(), "layout": build(Layout, fields, "layout.")})


class StepRequest(LayoutRequest):
    """`dtsim step`: one layout, or a batch of them under `layouts`."""

    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [
                STEP_EXAMPLE,
                {
                    "model": "llama3.1-8b",
                    "gpu": "h100-sxm",
                    "nodes": 2,
                    "gbs": 256,
                    "tokens": 1e12,
                    "layouts": [{"tp": 1, "zero": 3}, {"tp": 2, "pp": 2}, {"tp": 8}],
                },
            ]
        },
    )
    layouts: list[dict[str, Any]] | None = Field(
        None,
        min_length=1,
        max_length=MAX_LAYOUTS,
        description="A batch (`dtsim step --layouts`): rows of layout fields (tp, pp, dp, mbs, gbs, zero, ...), "
        "each evaluated, the body's layout fields giving what a row leaves out; a row's `name` (text, at most "
        "80 characters) labels its result and `software` gives its own profile. The answer is "
        '{"layouts": [...]}, one result per row, each what the row alone gives.',
    )


class TraceRequest(LayoutRequest):
    """`dtsim step --trace`: one layout (no batch)."""

    model_config = ConfigDict(**STRICT, json_schema_extra={"examples": [STEP_EXAMPLE]})


LAYOUT_FIELDS = tuple(k for k in Layout.model_fields if k in LayoutRequest.model_fields)


class StepBatchRow(StepResult):
    software: str | None = Field(None, description="The software profile the row took its defaults from.")
    name: str | None = Field(None, description="The row's own `name`, when it gave one.")


class StepBatch(BaseModel):
    layouts: list[StepBatchRow]


class PlanRequest(WorkloadFields):
    """`dtsim plan`: every valid layout ranked, or (with target_params_b) model shapes near a size."""

    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [
                {"model": "gpt3-175b", "nodes": 48, "gpu": "a100-80gb", "gbs": 1536, "top": 5},
                {"target_params_b": 7, "nodes": 4, "gbs": 512, "top": 3},
            ]
        },
    )
    gbs: _like(Layout, "gbs") = 512
    top: int = Field(10, ge=1, le=1000, description="How many layouts to list.")
    dp_multiple: int = Field(1, ge=1, le=1_000_000, description="Require dp % N == 0 (batch ramp).")
    gbs_multiple: int = Field(1, ge=1, le=1_000_000, description="Require gbs % N == 0.")
    flash_attention: _like(Layout, "flash_attention", "FlashAttention (false: materialised attention).") = (
        True
    )
    overlap_tp_comm: _like(Layout, "overlap_tp_comm") = False
    overlap_p2p_comm: _like(Layout, "overlap_p2p_comm") = False
    target_params_b: float | None = Field(
        None,
        ge=0.001,
        le=100_000,
        description="Reverse question: model shapes near this size (billions) that run fastest; the answer is "
        '{"target_params_b", "shapes_searched", "shapes": [...]}.',
    )

    def options(self) -> PlanOptions:
        """The plan's options: the body's, a software profile's settings under those it gives."""
        from dtsim.models.datacenter.plan import PlanOptions
        from dtsim.models.datacenter.software import plan_settings

        options = {k: getattr(self, k) for k in PLAN_OPTIONS}
        if self.software is not None:
            options |= plan_settings(self.software, self.given())
        return PlanOptions(**options)


class CollectiveRequest(ApiRequest):
    """`dtsim collective`."""

    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [{"op": "allreduce", "ranks": 8, "size_mb": 1000, "fabric": "nvlink3"}]
        },
    )
    op: Literal[OPS] = Field("allreduce", description="The collective.")  # type: ignore[valid-type]
    algorithm: Literal[ALLREDUCE_ALGORITHMS] = Field(  # type: ignore[valid-type]
        "ring",
        description="All-reduce only: nvls reduces in the NVLink switch (fabric nvlink4 or nvlink5); wan-ring "
        "is Camilli 2025 eq. 3.19, (N−1)·(T_prop + S/(N·BW)), with hop_km of fibre per ring step.",
    )
    ranks: int = Field(8, ge=1, le=10**9, description="Participating ranks.")
    size_mb: FiniteFloat = Field(
        1000.0, gt=0, le=1e9, description="Message size in MB (10^6 bytes), at most a petabyte."
    )
    fabric: LinkId | None = Field(
        None, description="Link type (catalog/fabrics.yaml); default nvlink3's rates."
    )
    bandwidth_gbs: FiniteFloat | None = Field(
        None, gt=1e-9, le=1e9, description="Bus bandwidth in GB/s, instead of fabric."
    )
    latency_us: FiniteFloat | None = Field(
        None, ge=0, le=1e9, description="Per-step latency in µs, instead of fabric."
    )
    hop_km: float = Field(0.0, ge=0, le=40_075, description="wan-ring: fibre between neighbouring ranks, km.")
    torus: str | None = Field(
        None, max_length=40, description="With an ICI fabric: the TPU slice the ranks fill, e.g. 4x4x4."
    )


class FabricRequest(ApiRequest):
    """`dtsim fabric`, at its units; the defaults are Camilli 2025's 10 GW, 23-datacenter scenario. The
    upper bounds are dtsim.fabric's (in SI units) at these units."""

    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={"examples": [{"cluster_power_gw": 5, "datacenters": 10, "sync_budget_ms": 500}]},
    )
    cluster_power_gw: float = Field(10.0, gt=0, le=1e6, description="Cluster power, GW.")
    datacenters: int = Field(
        23, ge=2, le=1_000_000, description="Datacenters (at least 2: the WAN joins them)."
    )
    pod_power_kw: float = Field(200.0, gt=0, le=1e9, description="Power of one pod (NVL72 rack), kW.")
    pod_pflops: float = Field(360.0, gt=0, le=1e9, description="Peak of one pod, PFLOP/s.")
    params_t: float = Field(72.0, gt=0, le=1e6, description="Model parameters in trillions.")
    tokens_t: float = Field(2000.0, gt=0, le=1e8, description="Training tokens in trillions.")
    bits: float = Field(16.0, gt=0, le=64, description="Bits per gradient value.")
    train_days: float = Field(100.0, gt=0, le=36525, description="Training days.")
    network_fraction: float = Field(
        0.05, gt=0, lt=1, description="Share of a step for synchronization (below 1: the rest computes)."
    )
    sync_budget_ms: float | None = Field(
        None,
        gt=0,
        le=1e12,
        description="Sync budget, ms (null: network_fraction × the batch time; at the thesis's own batch and "
        "fraction, its rounded 250 ms).",
    )
    ring_km: float = Field(4800.0, ge=0, le=1e6, description="Fibre around the ring, km.")
    hop_us: float = Field(28.0, ge=0, le=1e6, description="Latency per switching hop, µs.")
    critical_batch_k: float = Field(25.27, gt=0, le=1e6, description="B_crit = k·√tokens.")


def _answer(payload: dict[str, Any]) -> JSONResponse:
    """The payload as the response, a number that is not finite as null (JSON has no NaN or infinity;
    the CLI's print_json writes null too). Returned as a response, so FastAPI documents the operation's
    response model without validating the payload against it a second time."""
    from dtsim.interfaces.api.app import _finite  # lazy: app.py imports this module

    return JSONResponse(_finite(payload))


@contextmanager
def _named_as_in(req: WorkloadFields) -> Iterator[None]:
    """A ScenarioError raised inside names the body's fields, not the library's: `layout.tp` → `tp`,
    `cluster.nic_gbps` → `nic_gbps`, `model.hidden` → `hidden` when the body gave hidden as a shape
    field (else it stays `model.hidden`, a field of the architecture given as `model`)."""
    try:
        yield
    except ScenarioError as exc:
        problems = []
        for f, v, m in exc.problems:
            for prefix in ("layout.", "cluster."):
                f = f.removeprefix(prefix)
            if f.startswith("model.") and getattr(req, f[6:], None) is not None:
                f = f[6:]
            problems.append((f, v, m))
        raise ScenarioError(problems) from None


def _step(req: StepRequest) -> JSONResponse:
    from dtsim.models.datacenter.step import step as run_step

    with _named_as_in(req):
        if req.layouts is None:
            return _answer(ops.step_payload(run_step(req.workload()), req.software))
        rows = [dict(row) for row in req.layouts]
        for row in rows:  # a list in JSON, as a --layouts file's "5,6,6,5" is read
            if isinstance(row.get("pp_layers"), list):
                row["pp_layers"] = tuple(row["pp_layers"])
        results = ops.step_layouts(
            rows, req.layout_fields(), req.run_fields(), None, req.software, req.given()
        )
        return _answer({"layouts": [ops.step_payload(r, sw, name) for r, sw, name in results]})


@_operation("/step", StepResult | StepBatch, "Step time, MFU and memory of a parallel layout (or a batch)")
def api_step(req: StepRequest) -> Any:
    """The JSON of `dtsim step --json`: step time with its 80 % model-error interval (`*_p10`/`*_p90`,
    `model_error` says what it rests on), TFLOP/s and MFU/HFU per GPU, memory per GPU and whether it
    fits (`fits`, `fit_note`: why not and what to change), the network used, a breakdown of the step
    and plausibility `warnings`; with `tokens`, the run's days, GPU-hours, cost and energy (`run`).
    With `layouts`: `{"layouts": [...]}`, what `dtsim step --layouts FILE --json` gives."""
    return _step(req)


def plan_work(progress: Any, **fields: Any) -> dict[str, Any]:
    """POST /api/plan's work, inline or in a job's process (api/jobs.py): the JSON of `dtsim plan
    --json` for the body's fields (`progress` is not called: the search is one vectorized pass)."""
    from dtsim.interfaces.api.app import _finite  # lazy: app.py imports this module
    from dtsim.models.datacenter.plan import plan as run_plan

    req = PlanRequest.model_validate(fields)
    with _named_as_in(req):
        cluster = req.cluster()
        opt = req.options()
        if req.target_params_b is not None:
            ops.target_shape_conflicts({f: getattr(req, f) for f in req.model_fields_set if hasattr(req, f)})
            payload = ops.target_size_payload(
                req.target_params_b, cluster, opt, req.vocab, req.seq_len, req.top, None
            )
        else:
            payload = run_plan(req.architecture(), cluster, opt, top=req.top).as_dict()
    return _finite(ops.with_software(payload, req.software, cluster.gpu))


# Seconds per candidate layout of a plan (enumerated and evaluated), measured on the development machine
# (2 shared cores; plan --json's "seconds" over its candidates): dense models 3–7 µs (gpt3-175b on 4,096
# nodes: 57k in 0.16 s; mcore-177b on 48 × 8 A100s: 100k in 0.44 s; llama3.1-405b on 256 nodes: 28k in
# 0.18 s), MoE models 8–14 µs (mixtral-8x7b on 16 nodes: 66k in 0.59 s; deepseek-v3 on 64 nodes: 151k
# in 2.2 s), up to 30 µs for the largest searches (deepseek-v3 on 720 nodes: 669k in 20 s). An
# engineering estimate that decides whether a plan runs inline or as a background job, not a model
# assumption.
PLAN_S_PER_CANDIDATE = {"dense": 7e-6, "moe": 15e-6}


def plan_candidates_s(arch: Architecture, cluster: Cluster, opt: PlanOptions) -> float:
    """What a plan of one architecture should take: its candidate layouts (enumerated, not evaluated)
    × PLAN_S_PER_CANDIDATE. POST /api/plan and the plan page (web/views/plan.py) decide with it whether
    the plan runs inline or as a job."""
    from dtsim.models.datacenter.plan import enumerate_layouts

    candidates = len(enumerate_layouts(arch, cluster, opt)[0]["dp"])
    return candidates * PLAN_S_PER_CANDIDATE["moe" if arch.moe else "dense"]


def plan_estimate_s(req: PlanRequest) -> float:
    """What the plan should take: its candidate layouts (enumerated, not evaluated) × the seconds per
    candidate; with target_params_b, the first shape's count for every shape near the target."""
    from dtsim.models.datacenter.plan import shapes_near

    with _named_as_in(req):
        cluster = req.cluster()
        opt = req.options()
        if req.target_params_b is None:
            shapes = [req.architecture()]
        else:
            vocab, seq = req.vocab or ops.TARGET_VOCAB, req.seq_len or ops.TARGET_SEQ_LEN
            shapes = shapes_near(req.target_params_b * 1e9, vocab, seq)
        if not shapes:
            return 0.0
        return len(shapes) * plan_candidates_s(shapes[0], cluster, opt)


PLAN_OPTIONS = (
    "gbs",
    "seq_len",
    "precision",
    "dp_multiple",
    "gbs_multiple",
    "flash_attention",
    "overlap_tp_comm",
    "overlap_p2p_comm",
    "fp32_grad_accumulation",
    "fp32_params",
    "attention_kernel",
    "moe_capacity_factor",
    "moe_imbalance",
    "tokens",
    "usd_per_gpu_hour",
)


# What one trace may draw over HTTP: pipeline stages × micro-batches × virtual stages (each pass makes
# some ten events, ~1.3 KB of JSON): 20,000 passes are ~26 MB; the CLI writes up to trace.MAX_PASSES.
TRACE_MAX_PASSES = 20_000


def _step_trace(req: TraceRequest) -> JSONResponse:
    from dtsim.models.datacenter.step import step as run_step
    from dtsim.models.datacenter.trace import chrome_trace

    with _named_as_in(req):
        workload = req.workload()
        result = run_step(workload)
    lay = result.layout
    passes = lay["pp"] * round(result.micro_batches) * (lay["vpp"] if lay["schedule"] == "interleaved" else 1)
    if passes > TRACE_MAX_PASSES:
        raise ScenarioError(
            [
                (
                    "gbs",
                    req.gbs,
                    f"a trace draws pp × micro-batches × vpp = {passes:,} passes; at most {TRACE_MAX_PASSES:,} "
                    "over HTTP (fewer micro-batches: a larger mbs or a smaller gbs; `dtsim step --trace FILE` "
                    "draws more)",
                )
            ]
        )
    return _answer(chrome_trace(workload, result))


@_operation("/step/trace", dict[str, Any], "One iteration of a layout as a Chrome/Perfetto trace")
def api_step_trace(req: TraceRequest) -> Any:
    """The document `dtsim step --trace FILE` writes (Trace Event Format, models/datacenter/trace.py):
    one track per pipeline stage and one for the overlapped data-parallel communication, a complete
    event per piece of work (compute, exposed TP/CP/EP and ZeRO-3 communication, hand-offs, bubbles,
    the data-parallel reduction, the optimizer) with its micro-batch and category; the last event ends
    at the step time. Save it and open it in ui.perfetto.dev or chrome://tracing. The body is /api/step's
    for one layout (no `layouts`); at most 20,000 passes (pp × micro-batches × vpp)."""
    return _step_trace(req)


@_operation(
    "/plan", dict[str, Any], "Every valid layout of a model on a cluster, ranked by step time", jobs=True
)
async def api_plan(request: Request, req: PlanRequest) -> Any:
    """The JSON of `dtsim plan --json`: `layouts` (the `top` fastest that fit, each with its fit,
    model-error interval and warnings), `searched`, `rejected` (counts by reason), `by_tp_pp` and
    `model_error`. When no layout fits the answer is still 200 (the question was answered: nothing
    fits), with `fits: false`, `layouts: []`, the closest layouts under `nearest` (not answers) and what
    to change under `advice` — where the CLI exits with status 1 after printing the same JSON. With
    `target_params_b`: `{"target_params_b", "shapes_searched", "shapes": [...]}` (empty when no shape
    near the target fits). A plan estimated over a second (its candidate layouts × the measured seconds
    per candidate: large MoE searches), or asked for with `Prefer: respond-async`, runs as a job: 202
    and `GET /api/jobs/{id}`, whose result is this same body."""
    from dtsim.interfaces.api import jobs

    estimate = await run_in_threadpool(plan_estimate_s, req)
    return await jobs.run(request, "plan", plan_work, req.model_dump(), estimate_s=estimate)


@_operation("/collective", dict[str, Any], "α-β time of one collective", tag="network")
def api_collective(req: CollectiveRequest) -> Any:
    """The JSON of `dtsim collective --json` (Data Parallelism from Associativity; Camilli 2025 §3.5)."""
    return _answer(ops.collective_result(**req.model_dump()).as_dict())


@_operation("/fabric", dict[str, Any], "Scale-across fabric dimensioning (Camilli 2025 ch. 3)", tag="network")
def api_fabric(req: FabricRequest) -> Any:
    """The JSON of `dtsim fabric --json`: pods, batch, sync budget, the minimum WAN bandwidth per
    datacenter (null when the budget is spent on latency alone: no bandwidth suffices) and the MFU the
    schedule needs."""
    return _answer(ops.fabric_json(ops.fabric_plan(req.model_dump())))
