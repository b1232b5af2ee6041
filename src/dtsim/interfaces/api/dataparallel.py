"""POST /api/dataparallel/…: the operations of `dtsim dataparallel` (dtsim.models.dataparallel) — the
closed forms of Data Parallelism from Associativity and the thesis's synchronization formulas (Camilli
2025). Strictly typed requests (true is not 1, "2" is not 2, unknown fields refused); a value the
model refuses is 422 naming the field, through the app's ScenarioError handler. app.py adds them to
its /api router with its error responses (`register`), so its body guard and 405 answers cover them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import ConfigDict, Field

from dtsim import catalog
from dtsim.interfaces.api.base import ApiRequest
from dtsim.models import dataparallel as dpm

GpuId = Literal[tuple(catalog.gpus())]  # type: ignore[valid-type]
FabricId = Literal[tuple(catalog.fabrics())]  # type: ignore[valid-type]
Precision = Literal[dpm.PRECISIONS]  # type: ignore[valid-type]
STRICT = ConfigDict(extra="forbid", strict=True)

OPERATIONS: list[tuple[str, Callable[..., Any], type, str]] = []  # (path, endpoint, response model, summary)


def _operation(
    path: str, response_model: type, summary: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def add(endpoint: Callable[..., Any]) -> Callable[..., Any]:
        OPERATIONS.append((f"/dataparallel{path}", endpoint, response_model, summary))
        return endpoint

    return add


def register(router: APIRouter, responses: dict[int | str, dict[str, Any]]) -> None:
    """Add every operation to `router` as a POST route."""
    for path, endpoint, model, summary in OPERATIONS:
        router.post(path, response_model=model, responses=responses, summary=summary, tags=["dataparallel"])(
            endpoint
        )


class RankSetup(ApiRequest):
    """One data-parallel rank and its all-reduce (defaults: Data Parallelism from Associativity's H100
    on a 900 GB/s link, α = 0)."""

    model_config = STRICT
    gpu: GpuId | None = Field(
        None,
        description="Catalog GPU: F is its dense peak at the precision (default h100-sxm unless tflops).",
    )
    tflops: float | None = Field(None, gt=0, le=1e9, description="F: one rank's TFLOP/s, instead of gpu.")
    mfu: float = Field(1.0, gt=0, le=1, description="Fraction of F achieved.")
    fabric: FabricId | None = Field(
        None, description="Catalog link: its bus bandwidth and latency, instead of bandwidth_gbs/latency_us."
    )
    bandwidth_gbs: float | None = Field(
        None, gt=0, le=1e9, description="β: bus bandwidth per rank, GB/s (default 900)."
    )
    latency_us: float | None = Field(
        None, ge=0, le=1e9, description="α: latency per ring step, µs (default 0)."
    )
    params_b: float = Field(7.0, gt=0, le=1e6, description="Ψ: parameters in billions.")
    precision: Precision = Field("bf16", description="Gradient precision (bytes per value).")

    def setup(self) -> dpm.DPSetup:
        return dpm.setup(
            self.gpu,
            self.tflops,
            self.mfu,
            self.fabric,
            self.bandwidth_gbs,
            self.latency_us,
            self.params_b,
            self.precision,
        )


class CriticalBatchRequest(RankSetup):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [{"tflops": 989, "bandwidth_gbs": 900, "params_b": 7, "ranks": 8, "ratio": 2}]
        },
    )
    ranks: int = Field(8, ge=1, le=10**9, description="P: data-parallel ranks.")
    ratio: float = Field(1.0, gt=0, le=1e9, description="Target compute/communication ratio R.")
    batch_tokens: float | None = Field(
        None, ge=1e-3, le=1e15, description="A local batch (tokens) to time; default the batch of ratio."
    )


class ScalingRequest(RankSetup):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [{"fabric": "ib-ndr", "params_b": 7, "ranks": [1, 8, 64], "batch_tokens": 65536}]
        },
    )
    ranks: list[Annotated[int, Field(ge=1, le=10**9)]] = Field(
        [1, 8, 64, 512, 4096],
        min_length=1,
        max_length=dpm.MAX_RANK_LIST,
        description="Rank counts P to evaluate.",
    )
    batch_tokens: float = Field(4096.0, ge=1e-3, le=1e15, description="Weak scaling's local batch, tokens.")
    global_batch_tokens: float | None = Field(
        None, ge=1e-3, le=1e15, description="Strong scaling's global batch, tokens (default batch_tokens)."
    )
    target_efficiency: float = Field(0.9, ge=1e-6, lt=1, description="Efficiency the rank limits keep.")


class AccumulationRequest(RankSetup):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={"examples": [{"micro_batches": 4, "compute_ms": 100, "comm_ms": 40}]},
    )
    ranks: int = Field(8, ge=1, le=10**9, description="P: data-parallel ranks.")
    batch_tokens: float = Field(4096.0, ge=1e-3, le=1e15, description="Tokens of one micro-batch per rank.")
    micro_batches: int = Field(4, ge=1, le=10**9, description="A: micro-batches per all-reduce.")
    compute_ms: float | None = Field(None, gt=0, le=dpm.BIG, description="T_c of one micro-batch, ms.")
    comm_ms: float | None = Field(None, ge=0, le=dpm.BIG, description="T_r of one all-reduce, ms.")


class OverlapRequest(RankSetup):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={"examples": [{"buckets": 100, "backward_ms": 80, "comm_ms": 100}]},
    )
    ranks: int = Field(8, ge=1, le=10**9, description="P: data-parallel ranks.")
    batch_tokens: float = Field(4096.0, ge=1e-3, le=1e15, description="Local batch, tokens.")
    buckets: int | None = Field(None, ge=1, le=10**9, description="k: gradient buckets.")
    bucket_mb: float | None = Field(None, gt=0, le=1e9, description="DDP bucket size, MB (default 25).")
    forward_ms: float | None = Field(None, ge=0, le=dpm.BIG, description="Forward time, ms.")
    backward_ms: float | None = Field(None, ge=0, le=dpm.BIG, description="Backward time, ms.")
    comm_ms: float | None = Field(None, ge=0, le=dpm.BIG, description="All-reduce time, ms.")


class SyncBandwidthRequest(ApiRequest):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={"examples": [{"params_b": 72000, "precision": "bf16", "sync_budget_ms": 250}]},
    )
    params_b: float = Field(72_000.0, gt=0, le=1e9, description="Parameters in billions.")
    precision: Precision = Field("bf16", description="Gradient precision (bits per value).")
    step_s: float | None = Field(4.9, gt=0, le=dpm.BIG, description="T_batch: one step's time, s.")
    network_fraction: float = Field(
        0.05, gt=0, lt=1, description="α_net: the step's share for sync (below 1)."
    )
    sync_budget_ms: float | None = Field(None, gt=0, le=dpm.BIG, description="T_synch budget, ms.")
    ring_km: float = Field(4800.0, ge=0, le=1e6, description="L_max: fibre, km (5 µs/km).")
    hops: int = Field(23, ge=0, le=10**9, description="N_hops: switching hops.")
    hop_us: float = Field(28.0, ge=0, le=1e9, description="τ_hop: latency per hop, µs.")
    bandwidth_gbps: float | None = Field(None, gt=0, le=dpm.BIG, description="A link's bandwidth, Gbit/s.")


class TrafficRequest(ApiRequest):
    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [{"params_b": 0.082, "ranks": 4, "batch_samples": 8, "event_s": 19.519}]
        },
    )
    params_b: float = Field(0.082, gt=0, le=1e9, description="Parameters in billions (DistilGPT2: 0.082).")
    precision: Precision = Field("fp32", description="Gradient precision.")
    ranks: int = Field(2, ge=1, le=10**9, description="N: world size.")
    batch_samples: int = Field(8, ge=1, le=10**12, description="bs_local: samples per rank per step.")
    dataset_samples: int = Field(400, ge=1, le=10**18, description="Samples in the epoch.")
    event_s: float | None = Field(
        None, ge=1e-9, le=dpm.BIG, description="One all-reduce burst's duration, s."
    )


@_operation(
    "/critical-batch",
    dpm.CriticalBatch,
    "Critical local batch and compute/communication ratio (Data Parallelism from Associativity)",
)
def api_critical_batch(req: CriticalBatchRequest) -> Any:
    """The JSON of `dtsim dataparallel critical-batch --json`: b > F·sizeof/(3β) is compute-bound."""
    return dpm.critical_batch(req.setup(), req.ranks, req.ratio, req.batch_tokens)


@_operation(
    "/scaling",
    dpm.Scaling,
    "Weak and strong scaling efficiency, rank limits (Data Parallelism from Associativity)",
)
def api_scaling(req: ScalingRequest) -> Any:
    """The JSON of `dtsim dataparallel scaling --json`."""
    return dpm.scaling(
        req.setup(), req.ranks, req.batch_tokens, req.global_batch_tokens, req.target_efficiency
    )


@_operation(
    "/accumulation", dpm.Accumulation, "Gradient accumulation speed-up (Data Parallelism from Associativity)"
)
def api_accumulation(req: AccumulationRequest) -> Any:
    """The JSON of `dtsim dataparallel accumulation --json`."""
    return dpm.accumulation(
        req.setup(), req.micro_batches, req.ranks, req.batch_tokens, req.compute_ms, req.comm_ms
    )


@_operation(
    "/overlap",
    dpm.Overlap,
    "Exposed all-reduce with DDP's bucketed overlap (Data Parallelism from Associativity)",
)
def api_overlap(req: OverlapRequest) -> Any:
    """The JSON of `dtsim dataparallel overlap --json`."""
    return dpm.overlap(
        req.setup(),
        req.ranks,
        req.batch_tokens,
        req.buckets,
        req.bucket_mb,
        req.forward_ms,
        req.backward_ms,
        req.comm_ms,
    )


@_operation(
    "/sync-bandwidth",
    dpm.SyncBandwidth,
    "Minimum WAN bandwidth for a step's synchronization budget (Camilli 2025 eq. 3.6–3.13)",
)
def api_sync_bandwidth(req: SyncBandwidthRequest) -> Any:
    """The JSON of `dtsim dataparallel sync-bandwidth --json`."""
    return dpm.sync_bandwidth(**req.model_dump())


@_operation(
    "/traffic",
    dpm.Traffic,
    "An epoch's ring all-reduce traffic and peak throughput (Camilli 2025 eq. 3.18, 4.1, 5.1–5.4)",
)
def api_traffic(req: TrafficRequest) -> Any:
    """The JSON of `dtsim dataparallel traffic --json`."""
    return dpm.traffic(**req.model_dump())
