"""`dtsim plan`: every valid parallel layout of a model on a cluster, ranked by seconds per iteration.

The search is exhaustive over the grid below (so bounded; its size is printed): tensor, pipeline and
context parallelism over the divisors allowed, virtual stages, micro-batch sizes, ZeRO stages,
recomputation, sequence parallelism, schedules and the two placements of the embedding. All
candidates are evaluated at once by the vectorized step model; those that break a divisibility rule
or do not fit in GPU memory are counted by reason.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from dtsim.assumptions import Assumptions
from dtsim.catalog.calibration_file import calibration_in_use
from dtsim.errors import ScenarioError
from dtsim.models.datacenter.model_error import packaged as model_error_packaged
from dtsim.models.datacenter.model_error import summary as model_error_summary
from dtsim.models.datacenter.step import LayoutPerformance, annotated_performance, evaluate, resolve_hardware
from dtsim.models.datacenter.workload import (
    ATTENTION_KERNELS,
    PRECISION_BITS,
    RECOMPUTES,
    SCHEDULES,
    AttentionKernel,
    Cluster,
    attention_kernel_problems,
    dualpipe_problems,
    fp32_grads,
    moe_problems,
    p2p_overlap_applies,
    run_budget_problems,
)
from dtsim.models.limits.search import divisors  # ascending, trial division up to √n
from dtsim.physics.transformer import Architecture, at_sequence, count_params


@dataclass
class PlanOptions:
    gbs: int
    seq_len: int | None = None
    precision: str = "bf16"
    mbs_choices: tuple[int, ...] = (1, 2, 4, 8, 16)
    max_vpp: int = 8
    cp_choices: tuple[int, ...] = (1,)
    dp_multiple: int = 1
    gbs_multiple: int = 1
    zero_choices: tuple[int, ...] = (0, 1, 2, 3)
    recompute_choices: tuple[str, ...] = RECOMPUTES
    schedule_choices: tuple[str, ...] = SCHEDULES
    flash_attention: bool = True
    attention_kernel: AttentionKernel = "flash2"  # Layout.attention_kernel
    overlap_grad_reduce: bool = True
    overlap_tp_comm: bool = False
    overlap_p2p_comm: bool = False  # Layout.overlap_p2p_comm
    # sequence parallelism where tp > 1: None searches with and without, True only with, False never
    sequence_parallel: bool | None = None
    fp32_grad_accumulation: bool | None = None  # None: Megatron-LM's default for the precision
    fp32_params: bool = False  # Layout.fp32_params
    moe_capacity_factor: float | None = None  # Layout.moe_capacity_factor (None: dropless)
    moe_imbalance: float = 1.0  # Layout.moe_imbalance
    hsdp: bool = True  # also search ZeRO-3 sharded over 1, 2 or 4 nodes (Layout.shard_group)
    tokens: float | None = None  # training tokens: each layout reports days, GPU-hours, cost and energy
    usd_per_gpu_hour: float | None = None
    assumptions: dict[str, Any] = field(default_factory=dict)


def enumerate_layouts(
    a: Architecture, cluster: Cluster, opt: PlanOptions
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """All candidate layouts as columns, and the counts of those rejected for divisibility."""
    n = cluster.n_gpus
    seq = opt.seq_len or a.seq_len
    rejected = {
        "tensor parallel does not divide heads": 0,
        "pipeline has more stages than layer slots": 0,
        "batch does not divide": 0,
        "batch-ramp constraint": 0,
        "DualPipe pipeline or micro-batch rule": 0,
    }
    rows: list[tuple] = []

    def zero_shards(group: int, tp: int) -> list[tuple[int, int]]:
        """(ZeRO stage, HSDP shard group) pairs for a dp·cp group: every stage over the whole group
        (shard 0) and, with opt.hsdp, ZeRO-3 sharded over 1, 2 or 4 whole nodes of it and replicated
        across the rest (HSDP; Zhao et al. 2023 §3.2.2), the shard group being dp·cp ranks tp apart."""
        if group == 1:  # one data-parallel rank: every ZeRO stage is the same layout (nothing to shard)
            return [(min(opt.zero_choices), 0)]
        out = [(z, 0) for z in opt.zero_choices]
        if opt.hsdp and 3 in opt.zero_choices:
            per_node = max(1, cluster.gpus_per_node // tp)  # dp·cp ranks of one node (TP innermost)
            for nodes in (1, 2, 4):
                g = per_node * nodes
                if 1 < g < group and group % g == 0:
                    out.append((3, g))
        return out

    sp_choices = (False, True) if opt.sequence_parallel is None else (opt.sequence_parallel,)
    ep_choices = [1] if a.moe is None else [e for e in divisors(a.moe.experts)]
    # With FlashAttention selective recomputation changes nothing (the scores are never stored).
    recompute_choices = [r for r in opt.recompute_choices if not (opt.flash_attention and r == "selective")]
    for tp, cp in itertools.product(divisors(n), opt.cp_choices):
        if n % (tp * cp) or (cp > 1 and seq % (2 * cp)):
            continue
        if a.heads % tp or a.n_kv % tp:
            rejected["tensor parallel does not divide heads"] += 1
            continue
        for pp in divisors(n // (tp * cp)):
            dp = n // (tp * cp * pp)
            shards = zero_shards(dp * cp, tp)
            for balanced in (False, True):
                slots = a.layers + (2 if balanced else 0)
                if balanced and pp == 1:
                    continue
                # a layer count the pipeline does not divide is spread as evenly as possible (step's
                # uneven split: the busiest stage sets the pace); virtual stages need it to divide
                if pp > slots:
                    rejected["pipeline has more stages than layer slots"] += 1
                    continue
                if dp % opt.dp_multiple or opt.gbs % opt.gbs_multiple:
                    rejected["batch-ramp constraint"] += 1
                    continue
                vpps = [v for v in range(2, opt.max_vpp + 1) if pp > 1 and slots % (pp * v) == 0]
                for mbs in opt.mbs_choices:
                    if opt.gbs % (dp * mbs):
                        rejected["batch does not divide"] += 1
                        continue
                    for ep in ep_choices:
                        if ep > dp * cp:
                            continue
                        for sched in opt.schedule_choices:
                            vs = vpps if sched == "interleaved" else [1]
                            if sched in ("interleaved", "zero-bubble", "gpipe") and pp == 1:
                                continue
                            if sched in ("dualpipe", "dualpipev") and dualpipe_problems(
                                sched, pp, opt.gbs, dp * mbs
                            ):
                                rejected["DualPipe pipeline or micro-batch rule"] += 1
                                continue
                            for v in vs:
                                for sp in sp_choices if tp > 1 else (False,):
                                    for zero, shard in shards:
                                        for rc in recompute_choices:
                                            rows.append(
                                                (
                                                    dp,
                                                    tp,
                                                    pp,
                                                    v,
                                                    cp,
                                                    ep,
                                                    sp,
                                                    mbs,
                                                    zero,
                                                    RECOMPUTES.index(rc),
                                                    SCHEDULES.index(sched),
                                                    balanced,
                                                    shard,
                                                )
                                            )
    names = (
        "dp",
        "tp",
        "pp",
        "vpp",
        "cp",
        "ep",
        "sp",
        "mbs",
        "zero",
        "recompute",
        "schedule",
        "balanced",
        "shard",
    )
    cols = np.array(rows, dtype=float).reshape(-1, len(names))
    lay = {k: cols[:, i] for i, k in enumerate(names)}
    for k in ("sp", "balanced"):
        lay[k] = lay[k].astype(bool)
    for k in ("zero", "recompute", "schedule"):
        lay[k] = lay[k].astype(int)
    lay["gbs"] = np.full(len(cols), float(opt.gbs))
    lay["overlap_grad"] = np.full(len(cols), opt.overlap_grad_reduce)
    lay["overlap_tp"] = np.full(len(cols), opt.overlap_tp_comm)
    lay["overlap_p2p"] = np.full(len(cols), opt.overlap_p2p_comm)
    lay["flash"] = np.full(len(cols), opt.flash_attention)
    lay["attn_kernel"] = np.full(len(cols), ATTENTION_KERNELS.index(opt.attention_kernel))
    lay["fp32_grads"] = np.full(len(cols), fp32_grads(opt.fp32_grad_accumulation, opt.precision))
    lay["fp32_params"] = np.full(len(cols), opt.fp32_params)
    lay["moe_cf"] = np.full(len(cols), opt.moe_capacity_factor or 0.0)
    lay["moe_imb"] = np.full(len(cols), opt.moe_imbalance)
    return lay, rejected


@dataclass(frozen=True)
class Plan:
    """The result of `dtsim plan`: how many layouts were searched, why the others were rejected, and
    the fastest that fit, fastest first."""

    model: str
    params_b: float
    n_gpus: int
    gpu: str
    searched: int
    rejected: dict[str, int]
    seconds: float
    ranked: list[LayoutPerformance]
    usable_memory_gb: float = 0.0  # what a layout may fill per GPU (usable_memory_fraction × memory)
    # When no layout fits: the ones that come closest (least memory per GPU first). Never answers.
    nearest: list[LayoutPerformance] = field(default_factory=list)
    # what the layouts' model-error intervals rest on (models/datacenter/model_error.summary)
    model_error: dict[str, Any] = field(default_factory=dict)
    # per (tp, pp) pair searched: its candidates, how many fit, the fastest fitting step time (tp_pp_grid)
    by_tp_pp: list[dict[str, Any]] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        """Whether any layout fits in GPU memory."""
        return bool(self.ranked)

    def advice(self) -> str:
        """What to change when nothing fits ('' when something does)."""
        if self.ranked:
            return ""
        if not self.nearest:
            return (
                "no layout is valid for this model and cluster: every candidate was rejected (see rejected)"
            )
        need = self.nearest[0].memory_per_gpu_gb
        return (
            f"no layout fits: the closest needs {need:,.1f} GB per GPU of the {self.usable_memory_gb:,.1f} GB "
            f"usable ({need / self.usable_memory_gb:,.1f}× too much). Add GPUs (the state shards over more "
            "ranks with ZeRO and more pipeline stages), use a GPU with more memory, or train a shorter "
            "sequence or a smaller model."
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON of `dtsim plan --json` (the ranked layouts under "layouts"; when none fits, the
        closest under "nearest" and what to change under "advice")."""
        skip = ("ranked", "nearest")
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        out["fits"] = self.fits
        out["layouts"] = [r.model_dump() for r in self.ranked]
        out["nearest"] = [r.model_dump() for r in self.nearest]
        out["advice"] = self.advice()
        return out


def plan(
    a: Architecture,
    cluster: Cluster,
    opt: PlanOptions,
    top: int = 10,
    calibration: str | Path | dict[str, Any] | None = None,
) -> Plan:
    """Rank every valid layout of `a` on `cluster` by step time (`dtsim plan`); `calibration` (a file
    written by `dtsim calibrate --out`, or its document) replaces catalog/calibration.yaml."""
    problems = run_budget_problems(opt.tokens, opt.usd_per_gpu_hour)
    problems += attention_kernel_problems(opt.attention_kernel, opt.flash_attention)
    problems += moe_problems(a, opt.moe_capacity_factor, opt.moe_imbalance)
    if problems:
        raise ScenarioError(problems)
    with calibration_in_use(calibration):
        return _plan(a, cluster, opt, top)


def _plan(a: Architecture, cluster: Cluster, opt: PlanOptions, top: int) -> Plan:
    t0 = time.perf_counter()
    lay, rejected = enumerate_layouts(a, cluster, opt)
    n_candidates = len(lay["dp"])
    seq = opt.seq_len or a.seq_len
    a = at_sequence(a, seq)
    bits = PRECISION_BITS[opt.precision]
    asm = Assumptions(opt.assumptions)
    hw = resolve_hardware(cluster, opt.precision, asm=asm)
    ranked: list[LayoutPerformance] = []
    nearest: list[LayoutPerformance] = []
    grid: list[dict[str, Any]] = []
    if n_candidates:
        out = evaluate(a, hw, lay, asm, seq, bits)
        grid = tp_pp_grid(lay, out)
        fits = np.asarray(out["fits"])
        rejected["does not fit in GPU memory"] = int((~fits).sum())
        order = np.argsort(np.where(fits, out["step_time_s"], np.inf), kind="stable")
        notes = cluster.ignored_fields(asm.leaf_switch_nodes)  # the cluster's, the same for every row
        ranked = [
            _performance(lay, out, i, opt, cluster, asm, notes) for i in order[: min(top, int(fits.sum()))]
        ]
        if not ranked:
            seen: set[tuple[float, float]] = set()  # layouts that differ only where it changes nothing
            for i in np.argsort(np.asarray(out["memory_per_gpu_gb"]), kind="stable"):
                key = (float(out["memory_per_gpu_gb"][i]), float(out["step_time_s"][i]))
                if key not in seen:
                    seen.add(key)
                    nearest.append(_performance(lay, out, i, opt, cluster, asm, notes))
                if len(nearest) == min(top, 3):
                    break
    searched = n_candidates + sum(v for k, v in rejected.items() if k != "does not fit in GPU memory")
    return Plan(
        model=a.name,
        params_b=count_params(a).total / 1e9,
        n_gpus=cluster.n_gpus,
        gpu=cluster.gpu,
        searched=searched,
        rejected=rejected,
        seconds=time.perf_counter() - t0,
        ranked=ranked,
        usable_memory_gb=asm.usable_memory_fraction * hw.memory_bytes / 1e9,
        nearest=nearest,
        model_error=model_error_summary(model_error_packaged()),
        by_tp_pp=grid,
    )


def tp_pp_grid(lay: dict[str, np.ndarray], out: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """The evaluated candidates grouped by (tp, pp), in increasing tp then pp: how many there are
    (`layouts`), how many fit in GPU memory (`fitting`), the fastest fitting one's step time
    (`best_step_time_s`, None when none fits) and the least memory per GPU of any (`min_memory_per_gpu_gb`:
    how far the pair is from fitting). The /plan view's heat map; every number is `evaluate`'s."""
    pairs = np.stack([np.asarray(lay["tp"], dtype=np.int64), np.asarray(lay["pp"], dtype=np.int64)], axis=1)
    keys, group = np.unique(pairs, axis=0, return_inverse=True)
    group = group.reshape(-1)
    fits = np.asarray(out["fits"]).reshape(-1).astype(bool)
    step = np.asarray(out["step_time_s"], dtype=float).reshape(-1)
    memory = np.asarray(out["memory_per_gpu_gb"], dtype=float).reshape(-1)
    best = np.full(len(keys), np.inf)
    np.minimum.at(best, group[fits], step[fits])
    least = np.full(len(keys), np.inf)
    np.minimum.at(least, group, memory)
    counts = np.bincount(group, minlength=len(keys))
    fitting = np.bincount(group[fits], minlength=len(keys))
    return [
        {
            "tp": int(tp),
            "pp": int(pp),
            "layouts": int(counts[k]),
            "fitting": int(fitting[k]),
            "best_step_time_s": float(best[k]) if fitting[k] else None,
            "min_memory_per_gpu_gb": float(least[k]),
        }
        for k, (tp, pp) in enumerate(keys)
    ]


def _performance(
    lay, out, i: int, opt: PlanOptions, cluster: Cluster, asm: Assumptions, notes: list[str]
) -> LayoutPerformance:
    """Layout i of the candidates as a LayoutPerformance (with its MFU plausibility warning and, when
    tokens are given, the run's totals)."""
    row = {k: (bool(v[i]) if v.dtype == bool else float(v[i])) for k, v in lay.items()}
    layout = {
        "dp": int(row["dp"]),
        "tp": int(row["tp"]),
        "pp": int(row["pp"]),
        "vpp": int(row["vpp"]),
        "cp": int(row["cp"]),
        "ep": int(row["ep"]),
        "sequence_parallel": row["sp"],
        "mbs": int(row["mbs"]),
        "gbs": opt.gbs,
        "zero": int(row["zero"]),
        "recompute": RECOMPUTES[int(row["recompute"])],
        "schedule": SCHEDULES[int(row["schedule"])],
        "embedding_stages": "balanced" if row["balanced"] else "first-last",
        "flash_attention": opt.flash_attention,
        "attention_kernel": opt.attention_kernel,
    }
    if row["shard"]:
        layout["shard_group"] = int(row["shard"])
    if opt.fp32_params:
        layout["fp32_params"] = True
    if opt.overlap_p2p_comm and p2p_overlap_applies(layout["schedule"], layout["vpp"]):
        layout["overlap_p2p_comm"] = True  # only where it acts
    if opt.moe_capacity_factor is not None or opt.moe_imbalance != 1.0:
        layout |= {"moe_capacity_factor": opt.moe_capacity_factor, "moe_imbalance": opt.moe_imbalance}
    perf = annotated_performance(
        out, i, layout, cluster, asm, opt.tokens, opt.usd_per_gpu_hour, model_error_packaged()
    )
    perf["warnings"] += notes  # the cluster's fields with nothing to act on (Cluster.ignored_fields)
    return LayoutPerformance(layout=layout, **perf)


def shapes_near(
    target_params: float,
    vocab: int,
    seq_len: int,
    tolerance: float = 0.1,
    head_dim: int = 128,
    heads_multiple: int = 8,
    aspect_range: tuple[float, float] = (32.0, 256.0),
):
    """GPT shapes near a parameter count: hidden = heads × head_dim with heads a multiple of
    `heads_multiple` (so tensor parallelism up to 8 divides them), layers a multiple of 4, parameters
    within ±tolerance of the target, and aspect ratio hidden/layers inside `aspect_range` — Kaplan et al.
    2020 (§3.1, Fig. 5) find loss depends only weakly on shape within roughly this band, so shapes in it
    are interchangeable for quality and the planner can rank them by speed."""
    out = []
    step = head_dim * heads_multiple
    for layers in range(4, 257, 4):
        # l·12h² ≈ P − V·h: solve for h, then scan multiples of the step around it
        h_guess = (target_params / (12.0 * layers)) ** 0.5
        base = max(step, round(h_guess / step) * step)
        for hidden in range(max(step, base - 3 * step), base + 4 * step, step):
            if not aspect_range[0] <= hidden / layers <= aspect_range[1]:
                continue
            arch = Architecture(
                name=f"h{hidden}-l{layers}",
                hidden=hidden,
                layers=layers,
                heads=hidden // head_dim,
                vocab=vocab,
                seq_len=seq_len,
            )
            p = count_params(arch).total
            if abs(p / target_params - 1.0) <= tolerance:
                out.append(arch)
    return out


def plan_by_size(
    target_params: float,
    cluster: Cluster,
    opt: PlanOptions,
    vocab: int,
    seq_len: int,
    calibration: str | Path | dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """The reverse question (`dtsim plan --target-params-b`): every shape near `target_params`
    (shapes_near) planned on `cluster`, the fastest layout of each that fits, fastest per token first.
    Returns (rows, shapes searched); a row is the shape (hidden, layers, heads, params_b,
    seconds_per_token) and its best LayoutPerformance's fields."""
    problems = run_budget_problems(opt.tokens, opt.usd_per_gpu_hour)
    if problems:
        raise ScenarioError(problems)
    shapes = shapes_near(target_params, vocab, seq_len)
    rows = []
    with calibration_in_use(calibration):  # once for the whole search, not once per shape
        for arch in shapes:
            p = _plan(arch, cluster, opt, 1)
            if p.ranked:
                best = p.ranked[0]
                rows.append(
                    {
                        "hidden": arch.hidden,
                        "layers": arch.layers,
                        "heads": arch.heads,
                        "params_b": p.params_b,
                        "seconds_per_token": best.step_time_s / (opt.gbs * arch.seq_len),
                        **best.model_dump(),
                    }
                )
    rows.sort(key=lambda r: r["seconds_per_token"])
    return rows, len(shapes)
