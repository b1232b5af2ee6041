"""Data-parallel questions answered in closed form: the critical local batch, scaling efficiency and
its limits, gradient accumulation, bucketed overlap (Data Parallelism from Associativity), and the
thesis's synchronization bandwidth and epoch traffic (Camilli 2025 eq. 3.8–3.13, 3.18, 4.1, 5.1–5.5).

Each function checks its inputs (ScenarioError naming the field, its value and what is allowed) and
returns a typed result with SI units in its field names; `dtsim dataparallel …` and
POST /api/dataparallel/… only format these. The formulas are in dtsim.physics.dataparallel,
dtsim.physics.collectives and dtsim.physics.fabric.

One rank's setup (`DPSetup`): its FLOP/s F (a catalog GPU's dense peak, or TFLOP/s given, times an
MFU), the all-reduce's bus bandwidth β and per-step latency α (a catalog fabric's, or given), the
model's Ψ parameters and the bytes per gradient value. The documents' own examples set α = 0 (their
"bandwidth-dominated" form); a fabric brings its measured α.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.physics import collectives as coll
from dtsim.physics import dataparallel as dp
from dtsim.physics import fabric as fab

# Gradient precisions and the bytes of one value: FP32 is IEEE 754 binary32 (4 bytes, a definition);
# the others are the assumptions table's bytes_per_value_* entries.
PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "fp4")
MAX_RANK_LIST = 64
BIG = 1e12  # upper bound of counts and times: far past any run, small enough that every result is finite


def bytes_per_value(precision: str, asm: Assumptions) -> float:
    """Bytes of one communicated gradient value at `precision`."""
    return {
        "fp32": 4.0,
        "fp16": asm.bytes_per_value_fp16,
        "bf16": asm.bytes_per_value_fp16,
        "fp8": asm.bytes_per_value_fp8,
        "fp4": asm.bytes_per_value_fp4,
    }[precision]


# --- input checks ------------------------------------------------------------------------------------


def _number(
    problems: list, name: str, value: Any, lo: float, hi: float, lo_open: bool = True, hi_open: bool = False
) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
    if not ok:
        low = f"> {lo:g}" if lo_open else f"≥ {lo:g}"
        high = f"< {hi:g}" if hi_open else f"≤ {hi:g}"
        problems.append((name, value, f"must be a finite number {low} and {high}"))


def _integer(problems: list, name: str, value: Any, lo: int, hi: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        problems.append((name, value, f"must be an integer from {lo:,} to {hi:,.0f}"))


def _raise(problems: list) -> None:
    if problems:
        raise ScenarioError(problems)


@dataclass(frozen=True)
class DPSetup:
    """One data-parallel rank and its all-reduce, in SI units."""

    flop_s: float  # F: achieved FLOP/s of one rank (peak × MFU)
    bandwidth_bytes_s: float  # β: the all-reduce's bus bandwidth per rank
    latency_s: float  # α: per ring step
    params: float  # Ψ
    bytes_per_value: float  # sizeof(dtype) of a gradient value
    flops_per_param_token: float  # 6 (assumptions table)
    forward_flops_per_param_token: float  # 2 (assumptions table)
    compute_source: str  # where F came from, in words
    comm_source: str  # where β came from

    @property
    def source(self) -> str:
        """Where F and β came from, in words."""
        return f"{self.compute_source}; {self.comm_source}"

    def source_given(self, compute_given: bool, comm_given: bool) -> str:
        """Where a result's times came from: the times given, else what the setup derived them from (a
        given --comm-ms with --fabric had been titled "β = ib-ndr bus bandwidth", which it did not use)."""
        parts = [
            "T_c given" if compute_given else self.compute_source,
            "T_r given" if comm_given else self.comm_source,
        ]
        return "times given" if compute_given and comm_given else "; ".join(parts)

    @property
    def gradient_bytes(self) -> float:
        return self.params * self.bytes_per_value

    def compute_time(self, batch_tokens: Any) -> Any:
        return dp.dp_compute_time(self.params, batch_tokens, self.flop_s, self.flops_per_param_token)

    def comm_time(self, ranks: Any) -> Any:
        """T_r(P) = 2(P−1)·α + 2(P−1)/P·Ψ·sizeof/β (Data Parallelism from Associativity "Communication Time")."""
        return coll.ring_allreduce_time(ranks, self.gradient_bytes, self.bandwidth_bytes_s, self.latency_s)


def setup(
    gpu: str | None = None,
    tflops: float | None = None,
    mfu: float = 1.0,
    fabric: str | None = None,
    bandwidth_gbs: float | None = None,
    latency_us: float | None = None,
    params_b: float = 7.0,
    precision: str = "bf16",
) -> DPSetup:
    """A DPSetup from what a user knows. F: `tflops` (TFLOP/s) or the catalog `gpu`'s dense peak at the
    precision (FP16/BF16 rate for fp32 gradients: mixed-precision training all-reduces FP32 gradients of
    BF16 matmuls; FP8 rate for fp8 and fp4: FP4 gradients of FP8 matmuls where the GPU has no FP4
    datapath), times `mfu`. β and α: `bandwidth_gbs` (GB/s) and
    `latency_us` (µs; default 0, the documents' bandwidth-dominated form), or a catalog `fabric`'s bus
    bandwidth (wire rate × NCCL efficiency) and latency. Defaults: an H100 SXM on a 900 GB/s link, as in
    Data Parallelism from Associativity's examples."""
    problems: list = []
    if precision not in PRECISIONS:
        problems.append(("precision", precision, f"must be one of {', '.join(PRECISIONS)}"))
    if gpu is not None and tflops is not None:
        problems.append(("gpu/tflops", (gpu, tflops), "give one or the other"))
    gpus = catalog.gpus()
    if gpu is not None and gpu not in gpus:
        problems.append(("gpu", gpu, f"unknown GPU; known: {', '.join(gpus)}"))
    if tflops is not None:
        _number(problems, "tflops", tflops, 1e-6, 1e9)
    _number(problems, "mfu", mfu, 1e-6, 1.0)
    fabrics = catalog.fabrics()
    if fabric is not None and (bandwidth_gbs is not None or latency_us is not None):
        problems.append(
            (
                "fabric",
                fabric,
                "gives the bandwidth and latency itself; give a fabric or a bandwidth and latency, not both",
            )
        )
    elif fabric is not None and fabric not in fabrics:
        problems.append(("fabric", fabric, f"unknown fabric; known: {', '.join(fabrics)}"))
    if bandwidth_gbs is not None:
        _number(problems, "bandwidth_gbs", bandwidth_gbs, 1e-9, 1e9)
    if latency_us is not None:
        _number(problems, "latency_us", latency_us, 0.0, 1e9, lo_open=False)
    _number(problems, "params_b", params_b, 1e-9, 1e6)
    _raise(problems)
    asm = Assumptions({})
    if tflops is not None:
        peak, where = tflops * 1e12, f"{tflops:g} TFLOP/s"
    else:
        g = gpus[gpu or "h100-sxm"]
        # the matmuls' precision: BF16 under FP32 gradients; FP4 gradients of FP8 matmuls where the GPU
        # has no FP4 datapath (the gradient precision is what the all-reduce sends)
        compute = {"fp32": "bf16", "fp4": "fp4" if g.fp4_tflops else "fp8"}.get(precision, precision)
        rate = g.peak_tflops(compute)
        if rate is None:
            raise ScenarioError(
                [
                    (
                        "precision",
                        precision,
                        f"{g.id} has no {compute.upper()} datapath; give --tflops or another --gpu",
                    )
                ]
            )
        peak, where = rate * 1e12, f"{g.id} dense {compute} peak"
    if fabric is not None:
        f = fabrics[fabric]
        bw, alpha, net = f.bus_bytes_per_s, f.latency_s, f"{fabric} bus bandwidth"
    else:
        bw = (900.0 if bandwidth_gbs is None else bandwidth_gbs) * 1e9
        alpha = 0.0 if latency_us is None else latency_us * 1e-6
        net = f"{bw / 1e9:g} GB/s"
    return DPSetup(
        flop_s=peak * mfu,
        bandwidth_bytes_s=bw,
        latency_s=alpha,
        params=params_b * 1e9,
        bytes_per_value=bytes_per_value(precision, asm),
        flops_per_param_token=float(asm.flops_per_param_token),
        forward_flops_per_param_token=float(asm.forward_flops_per_param_token),
        compute_source=f"F = {where}" + (f" × MFU {mfu:g}" if mfu != 1.0 else ""),
        comm_source=f"β = {net}",
    )


def _check_ranks(ranks: Any, name: str = "ranks") -> int:
    problems: list = []
    _integer(problems, name, ranks, 1, 1e9)
    _raise(problems)
    return int(ranks)


# --- critical batch ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CriticalBatch:
    flop_s: float
    bandwidth_bytes_s: float
    latency_s: float
    bytes_per_value: float
    params: float
    ranks: int
    critical_batch_tokens: float  # b at R = 1: above it, compute-bound
    target_ratio: float
    batch_for_ratio_tokens: float  # b at the target R
    batch_tokens: float  # the batch the times below are for (given, else batch_for_ratio_tokens)
    compute_time_s: float  # 6·Ψ·b / F
    comm_time_s: float  # ring all-reduce over `ranks`, with (P−1)/P and α
    ratio: float  # the document's R = 3·b·β / (F·sizeof), the large-P form
    ratio_at_ranks: float | None  # T_compute / T_comm at `ranks` (None: one rank, no communication)
    bound: str  # "compute" or "communication" at `ranks`
    source: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def critical_batch(
    dp_setup: DPSetup, ranks: int = 8, ratio: float = 1.0, batch_tokens: float | None = None
) -> CriticalBatch:
    """The local batch (tokens) above which DP is compute-bound, b > F·sizeof/(3β), and the batch of a
    target compute/communication ratio R, b = R·F·sizeof/(3β) (Data Parallelism from Associativity
    "Compute-Communication Ratio"; its Exercise 2: R = 2 on an H100 at 900 GB/s is 1,465); the compute
    and all-reduce times at that batch over `ranks`, and the ratio with the ring's (P−1)/P and α."""
    problems: list = []
    _integer(problems, "ranks", ranks, 1, 1e9)
    _number(problems, "ratio", ratio, 1e-9, 1e9)
    if batch_tokens is not None:
        _number(problems, "batch_tokens", batch_tokens, 1e-3, 1e15, lo_open=False)
    _raise(problems)
    s = dp_setup
    crit = float(dp.critical_local_batch(s.flop_s, s.bandwidth_bytes_s, s.bytes_per_value))
    for_ratio = float(dp.critical_local_batch(s.flop_s, s.bandwidth_bytes_s, s.bytes_per_value, ratio))
    b = for_ratio if batch_tokens is None else float(batch_tokens)
    t_c, t_r = float(s.compute_time(b)), float(s.comm_time(ranks))
    at_ranks = t_c / t_r if t_r > 0 else None
    return CriticalBatch(
        flop_s=s.flop_s,
        bandwidth_bytes_s=s.bandwidth_bytes_s,
        latency_s=s.latency_s,
        bytes_per_value=s.bytes_per_value,
        params=s.params,
        ranks=int(ranks),
        critical_batch_tokens=crit,
        target_ratio=float(ratio),
        batch_for_ratio_tokens=for_ratio,
        batch_tokens=b,
        compute_time_s=t_c,
        comm_time_s=t_r,
        ratio=float(dp.compute_comm_ratio(b, s.flop_s, s.bandwidth_bytes_s, s.bytes_per_value)),
        ratio_at_ranks=at_ranks,
        bound="compute" if t_c >= t_r else "communication",
        source=s.source,
    )


# --- scaling -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalingRow:
    ranks: int
    comm_time_s: float  # T_r(P)
    weak_efficiency: float  # T_c / (T_c + T_r(P)), local batch held
    strong_batch_tokens: float  # B / P
    # T_c(1) / (P·(T_c(1)/P + T_r(P))), global batch held; None where B / P < 1: a rank holds less than
    # one token, which is no step at all
    strong_efficiency: float | None


@dataclass(frozen=True)
class Scaling:
    batch_tokens: float  # weak scaling's local batch
    global_batch_tokens: float  # strong scaling's global batch
    compute_time_s: float  # T_c at the local batch
    compute_time_one_s: float  # T_c(1): the global batch on one rank
    target_efficiency: float
    weak_max_ranks: int | None  # the most ranks with E_weak ≥ target (None: no limit)
    strong_max_ranks: int | None
    weak_limit: float  # E_weak as P → ∞
    strong_limit: float  # E_strong as P → ∞ (0)
    rows: list[ScalingRow]
    source: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _max_ranks(root: float, efficiency_at, target: float) -> int | None:
    """The floor of a closed-form root, nudged by one where rounding put it on the wrong side."""
    if not math.isfinite(root) or root >= 1e15:
        return None
    p = max(1, math.floor(root))
    if efficiency_at(p + 1) >= target:
        p += 1
    elif p > 1 and efficiency_at(p) < target:
        p -= 1
    return p


def scaling(
    dp_setup: DPSetup,
    ranks: list[int] | tuple[int, ...] = (1, 8, 64, 512, 4096),
    batch_tokens: float = 4096.0,
    global_batch_tokens: float | None = None,
    target_efficiency: float = 0.9,
) -> Scaling:
    """Weak and strong scaling efficiency over rank counts (Data Parallelism from Associativity "Weak
    Scaling", "Strong Scaling"; no overlap of compute and communication), the most ranks that keep a
    target efficiency (its "Practical Limits" table uses 90 %) and the limits as P → ∞. Weak scaling
    holds the local batch `batch_tokens`; strong scaling the global batch `global_batch_tokens`
    (default: `batch_tokens`, so both start from the same one-rank step)."""
    problems: list = []
    if not isinstance(ranks, list | tuple) or not 1 <= len(ranks) <= MAX_RANK_LIST:
        problems.append(("ranks", ranks, f"must be a list of 1 to {MAX_RANK_LIST} rank counts"))
    else:
        for i, r in enumerate(ranks):
            _integer(problems, f"ranks[{i}]" if len(ranks) > 1 else "ranks", r, 1, 1e9)
    _number(problems, "batch_tokens", batch_tokens, 1e-3, 1e15, lo_open=False)
    if global_batch_tokens is not None:
        _number(problems, "global_batch_tokens", global_batch_tokens, 1e-3, 1e15, lo_open=False)
    _number(problems, "target_efficiency", target_efficiency, 1e-6, 1.0, lo_open=False)
    if not problems and target_efficiency >= 1.0:
        problems.append(("target_efficiency", target_efficiency, "must be below 1 (only one rank reaches 1)"))
    _raise(problems)
    s = dp_setup
    big_b = float(batch_tokens if global_batch_tokens is None else global_batch_tokens)
    t_c, t_one = float(s.compute_time(batch_tokens)), float(s.compute_time(big_b))
    p = np.asarray(ranks, dtype=float)
    t_r = s.comm_time(p)
    weak = dp.weak_scaling_efficiency(t_c, t_r)
    strong = dp.strong_scaling_efficiency(t_one, p, t_r)
    size = s.gradient_bytes
    bw, alpha = s.bandwidth_bytes_s, s.latency_s

    def weak_at(n: int) -> float:
        return float(dp.weak_scaling_efficiency(t_c, s.comm_time(n)))

    def strong_at(n: int) -> float:
        return float(dp.strong_scaling_efficiency(t_one, n, s.comm_time(n)))

    e = float(target_efficiency)
    rows = [
        ScalingRow(
            ranks=int(r),
            comm_time_s=float(tr),
            weak_efficiency=float(w),
            strong_batch_tokens=big_b / float(r),
            strong_efficiency=float(st) if big_b / float(r) >= 1.0 else None,
        )
        for r, tr, w, st in zip(
            ranks, np.atleast_1d(t_r), np.atleast_1d(weak), np.atleast_1d(strong), strict=True
        )
    ]
    return Scaling(
        batch_tokens=float(batch_tokens),
        global_batch_tokens=big_b,
        compute_time_s=t_c,
        compute_time_one_s=t_one,
        target_efficiency=e,
        weak_max_ranks=_max_ranks(float(dp.weak_scaling_max_ranks(t_c, size, bw, alpha, e)), weak_at, e),
        # and never more ranks than the global batch has tokens (past that a rank holds no token: no step)
        strong_max_ranks=min(
            x
            for x in (
                _max_ranks(float(dp.strong_scaling_max_ranks(t_one, size, bw, alpha, e)), strong_at, e),
                max(1, math.floor(big_b)),
            )
            if x is not None
        ),
        weak_limit=float(dp.weak_scaling_limit(t_c, size, bw, alpha)),
        strong_limit=0.0,
        rows=rows,
        source=s.source,
    )


# --- times given or derived --------------------------------------------------------------------------


def _time(problems: list, name: str, ms: float | None, positive: bool) -> float | None:
    if ms is None:
        return None
    _number(problems, name, ms, 1e-9 if positive else 0.0, BIG, lo_open=False)
    return None if problems and problems[-1][0] == name else ms * 1e-3


# --- gradient accumulation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Accumulation:
    micro_batches: int
    compute_time_s: float  # T_c of one micro-batch
    comm_time_s: float  # T_r of one all-reduce
    step_no_accumulation_s: float  # A·(T_c + T_r)
    step_accumulation_s: float  # A·T_c + T_r
    speedup: float
    speedup_limit: float  # as A → ∞: (T_c + T_r) / T_c
    source: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def accumulation(
    dp_setup: DPSetup,
    micro_batches: int = 4,
    ranks: int = 8,
    batch_tokens: float = 4096.0,
    compute_ms: float | None = None,
    comm_ms: float | None = None,
) -> Accumulation:
    """All-reducing once per A micro-batches instead of after each (Data Parallelism from Associativity
    "Gradient Accumulation"; its Exercise 5: 100 ms compute and 40 ms all-reduce a micro-batch, A = 4,
    is 440 ms a step). T_c per micro-batch of `batch_tokens` and T_r over `ranks` come from the setup,
    or are given (`compute_ms`, `comm_ms`)."""
    problems: list = []
    _integer(problems, "micro_batches", micro_batches, 1, 1e9)
    _integer(problems, "ranks", ranks, 1, 1e9)
    _number(problems, "batch_tokens", batch_tokens, 1e-3, 1e15, lo_open=False)
    t_c = _time(problems, "compute_ms", compute_ms, positive=True)
    t_r = _time(problems, "comm_ms", comm_ms, positive=False)
    _raise(problems)
    s = dp_setup
    t_c = float(s.compute_time(batch_tokens)) if t_c is None else t_c
    t_r = float(s.comm_time(ranks)) if t_r is None else t_r
    no_acc, acc = (float(x) for x in dp.accumulated_step_times(micro_batches, t_c, t_r))
    return Accumulation(
        micro_batches=int(micro_batches),
        compute_time_s=t_c,
        comm_time_s=t_r,
        step_no_accumulation_s=no_acc,
        step_accumulation_s=acc,
        speedup=float(dp.accumulation_speedup(micro_batches, t_c, t_r)),
        speedup_limit=(t_c + t_r) / t_c,
        source=s.source_given(compute_ms is not None, comm_ms is not None),
    )


# --- bucketed overlap --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Overlap:
    buckets: int
    forward_time_s: float
    backward_time_s: float
    comm_time_s: float
    exposed_comm_s: float  # the all-reduce time the backward pass does not hide
    overlapped_comm_s: float
    overlap_fraction: float  # of the all-reduce
    step_s: float  # forward + backward + exposed
    step_no_overlap_s: float  # forward + backward + all-reduce
    source: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def overlap(
    dp_setup: DPSetup,
    ranks: int = 8,
    batch_tokens: float = 4096.0,
    buckets: int | None = None,
    bucket_mb: float | None = None,
    forward_ms: float | None = None,
    backward_ms: float | None = None,
    comm_ms: float | None = None,
) -> Overlap:
    """DDP's bucketed all-reduce during the backward pass (Data Parallelism from Associativity
    "Bucket-Based Overlap"; its Exercise 3: 100 equal layers, 100 ms of all-reduce, 80 ms of backward,
    79.2 % overlapped, 100.8 ms). Buckets: `buckets`, else the gradient over `bucket_mb` (default the
    assumptions table's ddp_bucket_mb, PyTorch's 25 MB), rounded up. Forward and backward split the
    6·Ψ·b FLOPs as 2 : 4 (assumptions forward_flops_per_param_token); each time may be given instead."""
    problems: list = []
    _integer(problems, "ranks", ranks, 1, 1e9)
    _number(problems, "batch_tokens", batch_tokens, 1e-3, 1e15, lo_open=False)
    if buckets is not None and bucket_mb is not None:
        problems.append(("buckets/bucket_mb", (buckets, bucket_mb), "give one or the other"))
    if buckets is not None:
        _integer(problems, "buckets", buckets, 1, 1e9)
    if bucket_mb is not None:
        _number(problems, "bucket_mb", bucket_mb, 1e-6, 1e9)
    t_f = _time(problems, "forward_ms", forward_ms, positive=False)
    t_b = _time(problems, "backward_ms", backward_ms, positive=False)
    t_r = _time(problems, "comm_ms", comm_ms, positive=False)
    _raise(problems)
    s = dp_setup
    t_c = float(s.compute_time(batch_tokens))
    fwd_share = s.forward_flops_per_param_token / s.flops_per_param_token
    if t_f is None:
        t_f = 0.0 if backward_ms is not None else t_c * fwd_share
    t_b = t_c * (1.0 - fwd_share) if t_b is None else t_b
    t_r = float(s.comm_time(ranks)) if t_r is None else t_r
    if buckets is None:
        cap = (Assumptions({}).ddp_bucket_mb if bucket_mb is None else bucket_mb) * 1e6
        buckets = int(min(max(math.ceil(s.gradient_bytes / cap), 1), 1e9))
    exposed = float(dp.exposed_bucketed_allreduce(t_r, t_b, buckets))
    return Overlap(
        buckets=int(buckets),
        forward_time_s=t_f,
        backward_time_s=t_b,
        comm_time_s=t_r,
        exposed_comm_s=exposed,
        overlapped_comm_s=t_r - exposed,
        overlap_fraction=(t_r - exposed) / t_r if t_r > 0 else 1.0,
        step_s=t_f + t_b + exposed,
        step_no_overlap_s=t_f + t_b + t_r,
        source=s.source_given(backward_ms is not None, comm_ms is not None),
    )


# --- the thesis: synchronization bandwidth and epoch traffic -------------------------------------------


@dataclass(frozen=True)
class SyncBandwidth:
    gradient_bits: float  # S_grad = N_param · bits (eq. 3.12)
    sync_budget_s: float  # T_synch ≤ α_net · T_batch (eq. 3.6), or given
    propagation_s: float  # L · 5 µs/km (eq. 3.9)
    hop_s: float  # N_hops · τ_hop (eq. 3.10)
    min_bandwidth_bits_s: float | None  # eq. 3.13 (None: latency alone spends the budget)
    bandwidth_bits_s: float | None  # the link given
    serialization_s: float | None  # S_grad / BW (eq. 3.11) on the link given
    sync_time_s: float | None  # T_prop + T_hop + T_ser (eq. 3.8) on the link given
    sync_fraction: float | None  # T_synch / T_batch on the link given (when the step time is known)
    fits_budget: bool | None
    # why min_bandwidth_bits_s is null (the JSON would read as "no requirement" without it)
    no_bandwidth_suffices: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def latency_spends_budget(budget_s: float, propagation_s: float, hop_s: float) -> str:
    """Why no bandwidth meets a sync budget (Camilli 2025 eq. 3.13's denominator is ≤ 0), in words."""
    return (
        f"latency alone (propagation {propagation_s * 1e3:,.4g} ms + hops {hop_s * 1e3:,.4g} ms) spends the "
        f"sync budget of {budget_s * 1e3:,.4g} ms: no bandwidth suffices"
    )


def sync_bandwidth(
    params_b: float = 72_000.0,
    precision: str = "bf16",
    step_s: float | None = 4.9,
    network_fraction: float = 0.05,
    sync_budget_ms: float | None = None,
    ring_km: float = 4800.0,
    hops: int = 23,
    hop_us: float = 28.0,
    bandwidth_gbps: float | None = None,
) -> SyncBandwidth:
    """The WAN bandwidth a data-parallel step needs to synchronize within its budget (Camilli 2025
    eq. 3.6–3.13): BW_min = S_grad / (α_net·T_batch − T_prop − T_hop), and on a given link the
    synchronization time T_prop + T_hop + S_grad/BW. Defaults: the thesis's 72T-parameter, 16-bit,
    23-datacenter ring of 4,800 km and 28 µs hops with T_batch 4.9 s and α_net 5 %; its eq. 3.14 uses a
    250 ms budget (`sync_budget_ms`), 5.1 Pbit/s."""
    problems: list = []
    _number(problems, "params_b", params_b, 1e-9, 1e9)
    if precision not in PRECISIONS:
        problems.append(("precision", precision, f"must be one of {', '.join(PRECISIONS)}"))
    if step_s is not None:
        _number(problems, "step_s", step_s, 0.0, BIG)
    _number(problems, "network_fraction", network_fraction, 0.0, 1.0, hi_open=True)  # the rest computes
    if sync_budget_ms is not None:
        _number(problems, "sync_budget_ms", sync_budget_ms, 0.0, BIG)
    if step_s is None and sync_budget_ms is None:
        problems.append(("step_s", None, "give the step time or sync_budget_ms"))
    _number(problems, "ring_km", ring_km, 0.0, 1e6, lo_open=False)
    _integer(problems, "hops", hops, 0, 1e9)
    _number(problems, "hop_us", hop_us, 0.0, 1e9, lo_open=False)
    if bandwidth_gbps is not None:
        _number(problems, "bandwidth_gbps", bandwidth_gbps, 1e-9, BIG)
    _raise(problems)
    bits = params_b * 1e9 * 8.0 * bytes_per_value(precision, Assumptions({}))
    budget = sync_budget_ms * 1e-3 if sync_budget_ms is not None else network_fraction * step_s
    prop = float(coll.propagation_delay(ring_km))
    hop = hops * hop_us * 1e-6
    bw_min = float(fab.min_sync_bandwidth(bits, budget, prop, hop))
    t_ser = t_sync = frac = fits = None
    bw = None if bandwidth_gbps is None else bandwidth_gbps * 1e9
    if bw is not None:
        t_ser = bits / bw
        t_sync = float(fab.sync_time(bits, bw, prop, hop))
        frac = t_sync / step_s if step_s is not None else None
        fits = t_sync <= budget
    return SyncBandwidth(
        gradient_bits=bits,
        sync_budget_s=budget,
        propagation_s=prop,
        hop_s=hop,
        min_bandwidth_bits_s=bw_min if math.isfinite(bw_min) else None,
        bandwidth_bits_s=bw,
        serialization_s=t_ser,
        sync_time_s=t_sync,
        sync_fraction=frac,
        fits_budget=fits,
        no_bandwidth_suffices=None if math.isfinite(bw_min) else latency_spends_budget(budget, prop, hop),
    )


@dataclass(frozen=True)
class Traffic:
    gradient_bytes: float  # S_grad
    ranks: int
    steps: int  # ⌊samples / (bs · ws)⌋ (eq. 5.2)
    bytes_per_rank_per_event: float  # 2(N−1)/N · S_grad
    bytes_per_rank: float  # over the epoch (eq. 5.1, 5.4)
    bytes_per_event: float  # all ranks together, 2(N−1)·S_grad (eq. 3.18)
    bytes_total: float  # all ranks over the epoch
    event_s: float | None
    peak_throughput_bits_s: float | None  # eq. 4.1 on one rank's event bytes

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def traffic(
    params_b: float = 0.082,
    precision: str = "fp32",
    ranks: int = 2,
    batch_samples: int = 8,
    dataset_samples: int = 400,
    event_s: float | None = None,
) -> Traffic:
    """An epoch's all-reduce traffic (Camilli 2025 eq. 3.18, 5.1–5.4): ⌊samples/(bs·ws)⌋ steps, each
    rank sending 2(N−1)/N·S_grad a step; and a burst's peak rate, bytes·8 / duration (eq. 4.1).
    Defaults: the thesis's DistilGPT2 runs (S_grad ≈ 328 MB in FP32, 400 samples, bs 8, ws 2: 25 steps,
    8.2 GB a rank)."""
    problems: list = []
    _number(problems, "params_b", params_b, 1e-9, 1e9)
    if precision not in PRECISIONS:
        problems.append(("precision", precision, f"must be one of {', '.join(PRECISIONS)}"))
    _integer(problems, "ranks", ranks, 1, 1e9)
    _integer(problems, "batch_samples", batch_samples, 1, BIG)
    _integer(problems, "dataset_samples", dataset_samples, 1, 1e18)
    if event_s is not None:
        _number(problems, "event_s", event_s, 1e-9, BIG, lo_open=False)
    _raise(problems)
    if batch_samples * ranks > dataset_samples:
        _raise(
            [
                (
                    "batch_samples",
                    batch_samples,
                    f"× {ranks} ranks = {batch_samples * ranks:,} samples a step, more than the epoch's "
                    f"{dataset_samples:,} (dataset_samples): the epoch has no full step",
                )
            ]
        )
    size = params_b * 1e9 * bytes_per_value(precision, Assumptions({}))
    steps = int(fab.epoch_steps(dataset_samples, batch_samples, ranks))
    per_event = float(coll.allreduce_bytes_per_rank(ranks, size))
    event = float(coll.ring_event_bytes(ranks, size))
    return Traffic(
        gradient_bytes=size,
        ranks=int(ranks),
        steps=steps,
        bytes_per_rank_per_event=per_event,
        bytes_per_rank=per_event * steps,
        bytes_per_event=event,
        bytes_total=event * steps,
        event_s=event_s,
        peak_throughput_bits_s=None
        if event_s is None
        else float(fab.peak_throughput_bits_s(per_event, event_s)),
    )
