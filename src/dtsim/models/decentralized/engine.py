"""The simulation engine: scenarios → columns → decision tree → strategies → outputs.

There is one code path. `simulate(scenario)` encodes one scenario as a batch of one; `simulate_batch`
encodes arrays of any field. Both run `run_frame`, which derives the shared quantities (memory,
stages, step time, payloads), asks the decision tree for each row's mode, evaluates each strategy on
its own rows only (so a batch of flat-DiLoCo scenarios never pays for the pipeline formulas), and
then computes efficiency, χ, utilization, run length, cost and warnings for every row at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.models.decentralized import decision
from dtsim.models.decentralized.encode import encode_batch, encode_scenario
from dtsim.models.decentralized.frame import Frame, scatter
from dtsim.models.decentralized.groups import groups_of, resolve_links
from dtsim.models.decentralized.inner_steps import AUTO, AUTO_QUALITY, best_quality_steps
from dtsim.models.decentralized.strategies import REGISTRY, has_trait
from dtsim.models.decentralized.strategies.base import BOTTLENECKS, BREAKDOWN_KEYS
from dtsim.physics import (
    codec,
    collectives,
    compute,
    cost,
    efficiency,
    failures,
    memory,
    pipeline,
    quality,
    runlength,
    stragglers,
)
from dtsim.physics.numeric import select
from dtsim.schema.scenario import (
    Scenario,
    check_alpha_domain,
    make_scenario,
)

FRAME_OUTPUTS = (
    "ep_buffer_bytes",
    "up_bps",
    "down_bps",
    "latency_s",
    "codec_s",
    "parameters",
    "compute_parameters",
    "shared_parameters",
    "expert_parameters",
    "ep_degree",
    "parameters_held",
    "memory_bytes",
    "stages",
    "n_eff",
    "step_flop",
    "step_flop_s",
    "ep_latency_s",
    "step_s",
    "payload_bits",
    "hidden",
    "handoff_bits",
    "pp_regional",
    "bytes_per_param",
    "bytes_per_value",
    "growth_oom",
)


# --- the run ------------------------------------------------------------------------------------------


def derive(f: Frame, asm: Assumptions) -> None:
    """Quantities every mode needs, added to the frame in place."""
    f["asm"] = asm
    resolve_links(f)  # node groups and TCP limits → the WAN columns every strategy reads
    moe = f.moe
    active = select(moe, f.active_parameters, f.parameters)
    f["compute_parameters"] = active
    f["bytes_per_param"] = memory.bytes_per_param(f.precision, asm)
    f["bytes_per_value"] = memory.bytes_per_value(f.precision, asm)
    shared, experts = memory.expert_split(f.parameters, active, moe)
    f["shared_parameters"], f["expert_parameters"] = shared, experts
    f["ep_degree"] = memory.ep_degree(f.ep_mode, moe, f.num_nodes, f.nodes_per_group)
    held = memory.params_held(shared, experts, f.ep_degree)
    f["parameters_held"] = held
    f["hidden"] = select(
        np.isnan(f.hidden_size), pipeline.hidden_size(active, asm.hidden_size_coefficient), f.hidden_size
    )
    # expert parallelism's all-to-all buffers for one micro-batch (memory.ep_buffer_bytes)
    f["ep_buffer_bytes"] = select(
        moe & (f.ep_mode > 0),
        memory.ep_buffer_bytes(f.batch_tokens / f.micro_batches, f.hidden, f.bytes_per_value, asm),
        0.0,
    )
    # streaming / overlapped DiLoCo's outer state (original weights, outer momentum: Douillard et al.
    # 2025) counts toward the stages only when the scenario keeps it on the accelerators
    keeps_outer_state = f.outer_state_on_gpu & (f.streaming | (f.outer_overlap_steps > 0))
    outer_state = select(keeps_outer_state, 1.0 + asm.streaming_memory_overhead, 1.0)
    f["memory_bytes"] = held * f.bytes_per_param * outer_state + f.ep_buffer_bytes
    f["full_memory_bytes"] = f.parameters * f.bytes_per_param
    f["stages"] = memory.pipeline_stages(f.memory_bytes, f.vram_bytes)
    f["n_eff"] = stragglers.effective_nodes(f.num_nodes, f.straggler, asm)
    f["step_flop"] = compute.step_flop(active, f.batch_tokens, asm.flops_per_param_token)
    f["step_flop_s"] = compute.step_compute_time(f.step_flop, f.peak_flop_s, f.mfu)
    # Regional EP sits inside a regional group, so it pays the regional RTT whether or not the sync
    # is hierarchical (the original charged nothing without the hierarchy: reference README defect 4).
    ep_rtt = select(f.ep_mode == 2, f.latency_s, f.regional_latency_s)
    f["ep_latency_s"] = select(
        moe & (f.ep_mode > 0), compute.ep_latency(ep_rtt, f.moe_layers, asm.ep_all_to_all_per_layer), 0.0
    )
    f["step_s"] = f.step_flop_s + f.ep_latency_s
    # Each node syncs the parameters it holds: its expert shard with EP (defect 8), its stage with PP.
    f["payload_bits"] = collectives.payload_bits(held / f.stages, f.bytes_per_value, f.compression)
    regional_ratio = select(np.isnan(f.regional_compression), f.compression, f.regional_compression)
    f["regional_payload_bits"] = collectives.payload_bits(held / f.stages, f.bytes_per_value, regional_ratio)
    # the codec's own compute per sync (physics/codec.py), on fp32 pseudo-gradients of the values a node
    # holds; the regional tier codes among a group, the global one among all replicas
    if np.any(f.codec):
        fp32_bytes = 4.0 * held / f.stages
        gpus = np.nan_to_num(np.asarray(f.gpus_per_node, dtype=float), nan=1.0)
        f["codec_s"] = codec.codec_time_coded(fp32_bytes, f.codec, f.codec_device, f.n_eff, gpus, asm)
        f["regional_codec_s"] = codec.codec_time_coded(
            fp32_bytes, f.codec, f.codec_device, f.nodes_per_group, gpus, asm
        )
    else:  # codec 'none' everywhere: no codec compute
        f["codec_s"] = f["regional_codec_s"] = np.asarray(0.0)
    f["handoff_bits"] = pipeline.handoff_bits(
        f.batch_tokens,
        f.micro_batches,
        f.hidden,
        f.bytes_per_value,
        f.activation_compression,
        select(f.pipeline_backward, 2.0, 1.0),
    )
    # Hierarchical pipelines sit inside one region when a group can hold all S stages; otherwise a
    # hand-off crosses the WAN, and the slowest hop sets the pace.
    f["pp_regional"] = f.hierarchical & (f.stages <= f.nodes_per_group)
    f["pp_bps"] = select(f.pp_regional, f.regional_bps, np.minimum(f.up_bps, f.down_bps))
    f["pp_latency_s"] = select(f.pp_regional, f.regional_latency_s, f.latency_s)


def quality_terms(f: Frame, timing: Mapping[str, Any]) -> dict[str, Any]:
    """η, χ and the replica multiplier for a timing (used for outputs and by auto-quality)."""
    asm = f.asm
    alpha = efficiency.alpha(f.parameters, asm)
    penalty = stragglers.strategy_penalty(f.straggler, asm)
    eta_h = efficiency.eta_h(timing["h_eff"], alpha, penalty, asm.efficiency_floor)
    eta_c = efficiency.compression_quality(f.compression, f.error_feedback, f.compression_scenario, asm)
    # a hierarchy whose regional tier compresses harder: the lossier tier sets the quality
    if not np.isnan(f.regional_compression).all():
        regional = efficiency.compression_quality(
            select(np.isnan(f.regional_compression), f.compression, f.regional_compression),
            f.error_feedback,
            f.compression_scenario,
            asm,
        )
        tiered = np.asarray(timing.get("regional_steps_used", 0.0)) > 0
        eta_c = np.where(tiered, np.minimum(eta_c, regional), eta_c)
    eta_a = efficiency.activation_quality(f.activation_compression, f.stages, f.compression_scenario, asm)
    # an outer update applied τ outer steps late (outer_overlap_steps) costs a factor per step of delay
    # (τ = 1 is Streaming DiLoCo's overlap, which the MIRI docs charge nothing: each step beyond it)
    eta_s = np.power(asm.staleness_efficiency_per_outer_step, np.maximum(f.outer_overlap_steps - 1.0, 0.0))
    if "mode_code" in timing:  # a pipeline over the WAN has no outer step to apply late
        eta_s = np.where(has_trait(timing["mode_code"], "diloco"), eta_s, 1.0)
    eta = eta_h * eta_c * eta_a * eta_s
    model_flop = compute.model_flop(f.compute_parameters, f.tokens, asm.flops_per_param_token)
    mult = efficiency.replica_loss_multiplier(
        timing["replicas"], f.parameters, timing["h_eff"], f.replica_penalty, asm
    )
    # χ uses the active parameters on both sides: the loss of an N_active-parameter model trained on
    # D tokens against the 6·N_active·D it costs (the original mixed total and active: defect 5).
    chi = quality.chi(f.compute_parameters, f.tokens, model_flop, mult, asm)
    return {
        "alpha": alpha,
        "strategy_penalty": penalty,
        "efficiency_h": eta_h,
        "efficiency_compression": eta_c,
        "efficiency_activation": eta_a,
        "efficiency_staleness": eta_s,
        "efficiency": eta,
        "model_flop": model_flop,
        "replica_loss_multiplier": mult,
        "chi": chi,
    }


def _quality_objective(f: Frame, timing: Mapping[str, Any], _h: Any, strategy: Any):
    """inner_steps: auto-quality's objective, quality-adjusted compute per wall-clock day: C·η·χ over the
    failure-free time over the goodput (with node_mtbf_hours a longer H loses more per failure)."""
    q = quality_terms(f, timing)
    pipelines, used = strategy.nodes_used(f)
    # rows × candidates: a varied node_mtbf_hours (a column) with a step shared by every row (one row)
    shape = np.broadcast(timing["outer_step_s"], f.node_mtbf_h, used, pipelines).shape
    mode = np.full(shape, strategy.code)
    goodput = _goodput(f, timing, mode, used, pipelines)["goodput"]
    return q["efficiency"] * q["chi"] * goodput / timing["total_s"]


TIE = 1e-9  # relative: two runs this close take the same time


def run_frame_choosing(f: Frame, asm: Assumptions) -> dict[str, np.ndarray]:
    """`run_frame`, where node groups lie in two or more regions. Rows with hierarchical: true take their
    regions as the regional groups; rows that left the hierarchy to the model run flat and with their
    regions as the regional groups, and keep the one whose expected wall-clock, failures included
    (`wall_clock_days`: the failure-free time over the goodput), is shorter by more than a rounding
    error (ties and infeasible rows stay flat). The frame ends up as that final run derived it."""
    regions = np.asarray(f.get("region_count", np.nan))
    if np.isnan(regions).all():
        return run_frame(f, asm)
    given = np.asarray(f.get("region_given", False))
    fixed = ~np.isnan(regions) & given & np.asarray(f.hierarchical, dtype=bool)
    candidates = ~np.isnan(regions) & ~given
    if not candidates.any():
        f["by_region"] = fixed
        return run_frame(f, asm)
    flat_frame = Frame({**f, "by_region": fixed}, n=f.n)
    tiered_frame = Frame({**f, "by_region": candidates | fixed}, n=f.n)
    flat, tiered = run_frame(flat_frame, asm), run_frame(tiered_frame, asm)
    with np.errstate(invalid="ignore"):
        # failure-free times tie to the last bit when the WAN sync is hidden either way, and a hierarchy
        # can lose more to failures: compare what the run is expected to take, with a tie left flat
        tw, fw = np.asarray(tiered["wall_clock_days"]), np.asarray(flat["wall_clock_days"])
        better = ((tw < fw * (1 - TIE)) | (np.isnan(fw) & np.isfinite(tw))) & candidates  # flat never ends
    pick = better | fixed
    # the regions' tier weighed and not kept: what it would take (mode_reason says so), else NaN
    weighed = np.where(candidates & ~better, tw, np.nan)
    # one layout for every row (a single scenario always): that run is the answer, its frame the frame
    for chosen, frame, out in (
        (not better.any(), flat_frame, flat),
        (np.array_equal(*np.broadcast_arrays(better, candidates)), tiered_frame, tiered),
    ):
        if chosen:
            f.update(frame)
            out["region_tier_days"] = weighed
            return out
    f["by_region"] = pick
    out = run_frame(f, asm)
    out["region_tier_days"] = weighed
    return out


def run_frame(f: Frame, asm: Assumptions) -> dict[str, np.ndarray]:
    """All outputs for every row of a frame (columns of length f.n)."""
    n = f.n
    derive(f, asm)
    mode, reason, ep_saved = decision.decide(f)
    mode = np.broadcast_to(mode, (n,))
    out: dict[str, np.ndarray] = {
        "mode_code": mode.astype(np.int8),
        "reason_code": np.broadcast_to(reason, (n,)).astype(np.int8),
        "ep_saved_memory": np.broadcast_to(ep_saved, (n,)).copy(),
    }
    inner = np.broadcast_to(np.asarray(f.inner_steps_in, dtype=float), (n,)).copy()
    auto_h = np.full(n, np.nan)
    pipelines = np.zeros(n)  # infeasible rows: no pipelines and no nodes in use (none idle either)
    used = np.broadcast_to(np.floor(f.n_eff), (n,)).copy()
    for code, strategy in REGISTRY.items():
        idx = np.flatnonzero(mode == code)
        if idx.size == 0:
            continue
        sub = f.take(idx)
        hide = strategy.auto_inner_steps(sub)
        auto_h[idx] = hide
        pipelines[idx], used[idx] = strategy.nodes_used(sub)
        if not strategy.diloco:  # no DiLoCo loop, so no H
            h = np.full(idx.size, np.nan)
        else:
            h = np.where(inner[idx] == AUTO, hide, inner[idx])
            aq = np.flatnonzero(h == AUTO_QUALITY)
            if aq.size:
                h[aq] = best_quality_steps(strategy, sub.take(aq), _quality_objective)
        inner[idx] = h
        h_eval = np.where(np.isnan(h), 1.0, h)
        # A single run evaluates on 0-d values (NumPy scalars downstream: the same arithmetic without
        # array overhead); its outputs broadcast into the one-row columns like shared values.
        timing = strategy.evaluate(sub, h_eval.reshape(()) if n == 1 else h_eval)
        scatter(out, idx, timing, n)
    inner[mode == decision.INFEASIBLE] = np.nan
    out["inner_steps_used"] = inner
    out["auto_inner_steps"] = auto_h
    for key in (
        "outer_step_s",
        "total_s",
        "h_eff",
        "replicas",
        "sync_s",
        "regional_sync_s",
        "inner_step_s",
        "compute_block_s",
        "hidden_sync_s",
        "hidden_regional_sync_s",
        "regional_steps_used",
        *BREAKDOWN_KEYS,
    ):
        if key not in out:
            out[key] = np.full(n, np.nan)
    diloco_only = has_trait(mode, "diloco") & ~has_trait(mode, "pipelined")
    for key in ("pipeline_comm_s", "pipeline_latency_s"):
        if key not in out:
            out[key] = np.asarray(0.0) if diloco_only.all() else np.where(diloco_only, 0.0, np.nan)
        elif diloco_only.any():
            out[key][diloco_only] = 0.0

    q = quality_terms(f, out)
    out.update({k: np.asarray(v) for k, v in q.items()})
    eta = out["efficiency"]
    out["failure_free_days"] = out["total_s"] / 86400.0
    out.update(_goodput(f, out, mode, used, pipelines))
    # expected, with failures, restarts and rejoins; goodput 0: the run never finishes (no times,
    # LOW_GOODPUT says so)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        wall = np.where(out["goodput"] > 0, out["total_s"] / out["goodput"], np.nan)
    # a goodput so small that the time overflows is a run that never finishes too (numpy warned on stderr)
    wall = np.where(np.isinf(wall), np.nan, wall)
    with np.errstate(over="ignore"):  # at goodputs near zero the products overflow: the MFUs are then 0
        effective = wall / eta
        out["wall_clock_days"] = wall / 86400.0
        out["effective_days"] = np.where(np.isinf(effective), np.nan, effective) / 86400.0
        peak_capacity = f.num_nodes * f.peak_flop_s * effective
        out["peak_flop_capacity"] = np.asarray(np.where(np.isinf(peak_capacity), np.nan, peak_capacity))
        # MIRI's "Global MFU" divides by the η-adjusted time (MIRI simulator docs §6); the wall-clock MFU
        # is the model FLOPs over what the hardware could do in the time the run actually takes.
        out["global_mfu"] = out["model_flop"] / peak_capacity
        out["wall_clock_mfu"] = out["model_flop"] / (f.num_nodes * f.peak_flop_s * wall)
    # MFU / HFU: the assumptions table's (selective recomputation), or the planned layout's with mfu: auto
    ratio = np.where(np.isnan(f.planned_hfu_mfu_ratio), asm.hfu_mfu_ratio, f.planned_hfu_mfu_ratio)
    out["global_hfu"] = out["global_mfu"] / ratio
    out["hardware_flop"] = out["model_flop"] / ratio
    out["quality_adjusted_flop"] = out["model_flop"] * eta * out["chi"]

    computed_max = runlength.max_run_days(f.growth_oom, asm.days_per_year)
    out["computed_max_days"] = np.asarray(computed_max)
    out["max_days"] = select(np.isnan(f.max_run_days_in), computed_max, f.max_run_days_in)
    out["feasible"] = out["effective_days"] <= out["max_days"]

    out["pp_groups"] = pipelines
    out["idle_nodes"] = np.maximum(0.0, np.floor(f.n_eff) - used)
    out["memory_per_node_gb"] = np.asarray(f.memory_bytes / f.stages / 1e9)
    # the model's state (and streaming's outer state when kept on the GPUs), without EP's buffers
    out["model_state_memory_gb"] = np.asarray((f.memory_bytes - f.ep_buffer_bytes) / 1e9)
    for prec, col in (
        ("fp16", "max_parameters_b_fp16"),
        ("fp8", "max_parameters_b_fp8"),
        ("fp4", "max_parameters_b_fp4"),
    ):
        bpp = getattr(asm, f"bytes_per_param_{prec}")
        out[col] = np.asarray(memory.max_params_fitting(f.vram_bytes, bpp) / 1e9)

    gpus = f.num_nodes * f.gpus_per_node
    out["gpu_count"] = np.asarray(gpus, dtype=float)
    out["cost_usd"] = np.asarray(cost.capital_cost(gpus, f.gpu_price_usd))
    with np.errstate(over="ignore"):  # a wall time near float's limit (goodput near 0): no total, as above
        for key, total in (
            ("gpu_hours", cost.gpu_hours(gpus, wall)),
            ("energy_kwh", cost.energy_kwh(gpus, f.gpu_power_w, wall, asm.pue)),
        ):
            out[key] = np.asarray(np.where(np.isinf(total), np.nan, total))

    # The bottleneck is the largest part of an outer step (first one wins ties; compute is first).
    largest = out[BREAKDOWN_KEYS[0]]
    code = np.zeros(n, dtype=np.int8)
    for k, key in enumerate(BREAKDOWN_KEYS[1:], start=1):
        part = out[key]
        bigger = part > largest
        code[bigger] = k
        largest = np.where(bigger, part, largest)
    # with failures, an outer step of kept progress takes T_outer / goodput: the parts' shares are of that,
    # and the time lost to failures, T_outer · (1/goodput − 1), is a part too (LOW_GOODPUT says how)
    out["part_code"] = code.copy()  # the largest part itself (limiting_group, the warnings' wording)
    g = out["goodput"]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lost = out["outer_step_s"] * (1.0 / g - 1.0)
    out["failure_lost_s"] = lost  # per outer step of kept progress (details; the report's and page's bar)
    lost_most = lost > largest
    code[lost_most] = BOTTLENECKS.index("failures")
    code[mode == decision.INFEASIBLE] = BOTTLENECKS.index("memory")
    out["bottleneck_code"] = code
    out["bottleneck_share"] = np.where(lost_most, 1.0 - g, largest / out["outer_step_s"] * g)

    t = groups_of(f)
    if t is not None:  # the group with the smallest nodes, and the stages the largest nodes would need
        out["memory_group"] = np.asarray(np.argmin(t.vram_bytes))
        out["largest_group_vram_bytes"] = np.asarray(np.max(t.vram_bytes))
        out["memory_group_stages"] = memory.pipeline_stages(f.memory_bytes, out["largest_group_vram_bytes"])
    out["limiting_group"] = _limiting_group(f, out)
    out["hierarchy_by_region"] = np.asarray(f.by_region)
    for col in FRAME_OUTPUTS:
        out[col] = np.asarray(f[col])
    # the names simulate's result gives two of them (Result.pp_stages, Result.compute_step_s), so that a
    # sweep's columns and --metric, and --prob, take every name `simulate --json` shows
    out["pp_stages"], out["compute_step_s"] = out["stages"], out["step_s"]
    out["node_sustained_flop_s"] = np.asarray(f.peak_flop_s * f.mfu)

    from dtsim.models.decentralized.warning_rules import evaluate_warnings

    out["warning_bits"] = evaluate_warnings(f, out)
    return out


# How a run survives node failures (`recovery`): none without failures (or where no layout runs), a
# failed DiLoCo replica rejoining at the next sync of its tier, or the job restarting from a checkpoint.
RECOVERIES = ("none", "rejoin", "restart")


FAILURE_DETAILS = ("failure_round_s", "rejoin_s", "checkpoint_s", "checkpoint_interval_s", "job_mtbf_s")


def _goodput(f: Frame, out: dict[str, np.ndarray], mode, used_nodes, pipelines) -> dict[str, np.ndarray]:
    """goodput, recovery_code and the two ways' goodputs (rejoin_goodput: NaN outside DiLoCo modes):
    kept progress over wall-clock time with node failures
    (physics/failures.py), 1 without node_mtbf_hours. Two ways to survive a failure:

    - rejoin (DiLoCo modes): the failed replica (a node, or a pipeline of S nodes in mode C) loses its
      inner steps since its tier's last sync, restarts, fetches the model and rejoins at the next sync.
      A flat replica fetches the global model over its download link at the next outer step; a node of a
      hierarchy fetches its regional group's model over the regional link at the next regional sync (a
      round of T_outer / H_regional: the global sync's exposed time spread over the rounds); a
      pipeline's S nodes each fetch their stage's 1/S, at once over their own links.
    - restart: every node writes a checkpoint at Daly's interval and a failure stops the job until it
      has restarted from the last one (a synchronous pipeline, mode B, has no other way; in a DiLoCo mode
      the others wait at the next sync for the failed replica, which restarts from its checkpoint).

    A DiLoCo run takes whichever keeps more: rejoining loses a whole round per failure, so replicas whose
    round is long against their MTBF (deep pipelines) do better with checkpoints. A run of one replica
    has nobody to fetch the model from: it restarts. FAILURE_DETAILS: the round T, the rejoin time R,
    the checkpoint's write time δ, Daly's interval τ and the job's MTBF (NaN without failures)."""
    n = np.shape(mode)
    infeasible = mode == decision.INFEASIBLE
    if np.isnan(f.node_mtbf_h).all():  # no failures anywhere in the batch
        one = np.where(infeasible, np.nan, 1.0)
        return {
            "goodput": one,
            "recovery_code": np.zeros(n, dtype=np.int8),
            "rejoin_goodput": np.where(has_trait(mode, "diloco"), one, np.nan),
            "restart_goodput": one,
            **{key: np.asarray(np.nan) for key in FAILURE_DETAILS},
        }
    asm = f.asm
    hours = f.node_mtbf_h
    node_mtbf_s = np.where(np.isnan(hours), np.inf, hours * 3600.0)
    pipelined = has_trait(mode, "pipelined")
    tiered = has_trait(mode, "regional_tier")
    per_replica = np.where(pipelined, f.stages, 1.0)
    model_bits = 8.0 * f.parameters_held * f.bytes_per_value / per_replica
    with np.errstate(divide="ignore", invalid="ignore"):
        round_s = np.where(tiered, out["outer_step_s"] / out["regional_steps_used"], out["outer_step_s"])
    rejoin = asm.restart_s + model_bits / np.where(tiered, f.regional_bps, f.down_bps)
    elastic = failures.elastic_goodput(round_s, rejoin, node_mtbf_s / per_replica)
    used = np.maximum(1.0, used_nodes)  # the nodes that train: idle ones cannot stop the job
    checkpoint = 8.0 * f.memory_bytes / f.stages / (asm.checkpoint_write_gbps * 1e9)
    job_mtbf = node_mtbf_s / used
    interval = failures.daly_interval_s(checkpoint, job_mtbf)
    restart = failures.restart_goodput(interval, checkpoint, asm.restart_s + checkpoint, job_mtbf)
    replicas = np.where(pipelined, pipelines, used_nodes)
    diloco = has_trait(mode, "diloco") & (replicas >= 2)  # one replica: no one holds the model to fetch
    rejoins = diloco & (elastic >= restart)
    g = np.where(rejoins, elastic, restart)
    code = np.where(np.isnan(hours) | infeasible, 0, np.where(rejoins, 1, 2)).astype(np.int8)
    return {
        "goodput": np.where(infeasible, np.nan, g),
        "recovery_code": np.broadcast_to(code, n).copy(),
        "rejoin_goodput": np.where(diloco, elastic, np.nan),
        "restart_goodput": np.where(infeasible, np.nan, restart),
        "failure_round_s": np.where(diloco, round_s, np.nan),
        "rejoin_s": np.where(diloco, rejoin, np.nan),
        "checkpoint_s": np.where(infeasible, np.nan, checkpoint),
        "checkpoint_interval_s": np.where(infeasible, np.nan, interval),
        "job_mtbf_s": np.where(infeasible, np.nan, job_mtbf),
    }


def _limiting_group(f: Frame, out: dict[str, np.ndarray]) -> np.ndarray:
    """Which node group sets the pace (index into node_groups; -1 without groups): the group with the
    smallest nodes when they add pipeline stages (GROUP_MEMORY), else the group with the least sustained
    FLOP/s per node when compute (or the pipeline's bubble or stragglers) is the largest part of the
    step, the group with the largest round-trip time when latency is, and otherwise the group whose
    links set the sync's bandwidth terms."""
    if "memory_group" not in out:
        return np.asarray(-1)
    code = out["part_code"]  # the step's largest part, whatever failures cost
    compute_like = np.isin(code, [BREAKDOWN_KEYS.index(k) for k in ("compute", "bubble", "straggler")])
    latency = code == BREAKDOWN_KEYS.index("latency")
    by_link = np.where(compute_like, f.compute_group, np.where(latency, f.rtt_group, f.link_group))
    # the smallest nodes split every replica into more stages than the others need: they limit
    forced = np.asarray(f.stages) > out["memory_group_stages"]
    return np.where(forced, out["memory_group"], by_link)


# --- public entry points -------------------------------------------------------------------------------


def simulate(scenario: Scenario | Mapping[str, Any] | None = None, **fields: Any):
    """Simulate one scenario and return a `Result`.

    `simulate(Scenario(...))`, `simulate({"num_nodes": 8})` or `simulate(num_nodes=8)`.
    """
    from dtsim.models.decentralized.result import build_result

    s = resolve_mfu(_as_scenario(scenario, fields))
    asm = Assumptions(s.assumptions)
    frame = Frame({k: np.asarray(v) for k, v in encode_scenario(s).items()}, n=1)
    out = run_frame_choosing(frame, asm)
    return build_result(out, 0, scenario=s, asm=asm, frame=frame)


def _as_scenario(scenario: Any, fields: Mapping[str, Any]) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario.replace(**fields) if fields else scenario
    base = dict(scenario or {})
    base.update(fields)
    return make_scenario(base)


# Text outputs travel through a batch as integer codes: name → (code column, labels).
TEXT_OUTPUTS = {
    "mode": ("mode_code", decision.MODE_IDS),
    "bottleneck": ("bottleneck_code", BOTTLENECKS),
    "recovery": ("recovery_code", RECOVERIES),
}


class BatchResult:
    """Outputs of a batch: `columns[name]` is an array with one value per scenario.

    Time-dependent columns are NaN exactly where `mode` is 'infeasible' (the model cannot be held by
    the available nodes); `result(i)` gives row i as a `Result` with warnings decoded.
    """

    def __init__(self, columns: dict[str, np.ndarray], n: int, asm: Assumptions, frame: Frame):
        # Outputs shared by all rows are stored once and shown as read-only broadcast views.
        self.columns = {k: np.broadcast_to(v, (n,)) for k, v in columns.items()}
        self.n = n
        self._asm = asm
        self._frame = frame  # the encoded inputs

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, name: str) -> np.ndarray:
        if name in TEXT_OUTPUTS:
            code, labels = TEXT_OUTPUTS[name]
            return np.asarray(labels)[self.columns[code]]
        return self.columns[name]

    def result(self, i: int):
        """Row i as a Result (re-run as a batch of one: the same code, with its derived columns)."""
        from dtsim.models.decentralized.result import build_result

        if not 0 <= i < self.n:
            raise IndexError(i)
        frame = self._frame.rows(i, i + 1)
        asm = self._asm.at(i)  # row i's own values where assumptions vary per row
        out = run_frame_choosing(frame, asm)
        return build_result(out, 0, scenario=None, asm=asm, frame=frame)


# Every assumption the decentralized model reads (tests/test_uncertainty.py records the reads and keeps
# this current). Those with a distribution in the table are what `simulate --uncertainty` draws unless
# --fixed-assumptions.
ASSUMPTIONS_READ = (
    "alpha_base",
    "alpha_size_divisor",
    "backup_straggler_residual",
    "backup_worker_fraction",
    "bytes_per_param_fp16",
    "bytes_per_param_fp4",
    "bytes_per_param_fp8",
    "bytes_per_value_fp16",
    "bytes_per_value_fp4",
    "bytes_per_value_fp8",
    "checkpoint_write_gbps",
    "codec_int8_bytes_per_s_cpu",
    "codec_int8_bytes_per_s_gpu",
    "codec_topk_bytes_per_s_cpu",
    "codec_topk_bytes_per_s_gpu",
    "chinchilla_a",
    "chinchilla_alpha",
    "chinchilla_b",
    "chinchilla_beta",
    "chinchilla_e",
    "chinchilla_tokens_per_param",
    "days_per_year",
    "efficiency_floor",
    "ep_all_to_all_per_layer",
    "fiber_group_index",
    "flops_per_param_token",
    "moe_capacity_factor",
    "moe_top_k",
    "goodput_warning_threshold",
    "hfu_mfu_ratio",
    "hidden_size_coefficient",
    "hierarchical_h_exponent",
    "intra_region_rtt_ms",
    "low_global_mfu_threshold",
    "mathis_constant",
    "max_pipeline_stages",
    "mfu_warning_threshold",
    "peak_mismatch_tolerance",
    "pue",
    "relay_straggler_coefficient",
    "replica_beta_coefficient",
    "replica_beta_exponent",
    "replica_h_reference",
    "restart_s",
    "route_inflation",
    "small_model_threshold_b",
    "staleness_efficiency_per_outer_step",
    "straggler_coefficient",
    "streaming_memory_overhead",
    "tcp_mss_bytes",
    "linux_tcp_window_bytes",
    "threshold_efficiency_penalty",
)


def simulate_batch(
    base: Scenario | Mapping[str, Any] | None = None,
    *,
    assumption_rows: Mapping[str, np.ndarray] | None = None,
    **fields: Any,
) -> BatchResult:
    """Simulate many scenarios at once.

    `base` gives the shared fields (a Scenario, a dict, or the defaults); each keyword is a field
    whose value is a scalar or a 1-D array. Arrays must share one length n; the result has n rows,
    computed by the same code as `simulate` (a scalar run is a batch of one). `assumption_rows` gives
    scalar assumptions one value per row (Monte Carlo over the assumptions table), on top of the
    base's own overrides.
    """
    arrays = {k: v for k, v in fields.items() if np.ndim(v) > 0}
    scalars = {k: v for k, v in fields.items() if np.ndim(v) == 0}
    s = _as_scenario(
        base, {k: (v.item() if isinstance(v, np.generic | np.ndarray) else v) for k, v in scalars.items()}
    )
    if s.mfu == "auto":
        if "mfu" in arrays:  # every row gives its own MFU: the base's 'auto' plans nothing
            s = s.with_planned_mfu(float(np.asarray(arrays["mfu"]).flat[0]), None)
        else:
            _check_auto_mfu(arrays)
            s = resolve_mfu(s)
    lengths = {k: len(v) for k, v in arrays.items()}
    lengths.update({f"assumptions.{k}": len(v) for k, v in (assumption_rows or {}).items()})
    if len(set(lengths.values())) > 1:
        raise ScenarioError([("batch", lengths, "all array fields must have the same length")])
    n = next(iter(lengths.values()), 1)
    if n == 0:
        raise ScenarioError([("batch", 0, "arrays must not be empty")])
    frame = encode_batch(s, arrays, n)
    asm = Assumptions(s.assumptions)
    if assumption_rows:
        asm = asm.with_rows(_checked_assumption_rows(assumption_rows))
        if "hfu_mfu_ratio" in assumption_rows:  # a drawn MFU / HFU is the run's, not mfu: auto's layout's
            frame["planned_hfu_mfu_ratio"] = np.asarray(np.nan)
    check_alpha_domain(frame.parameters, asm)
    return BatchResult(run_chunked(frame, asm), n, asm, frame)


def _checked_assumption_rows(rows: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Per-row assumption values: scalar assumptions of the table, finite, within each one's range."""
    from dtsim.catalog import assumption_rows as table

    out, problems = {}, []
    for name, values in rows.items():
        where = f"assumptions.{name}"
        row = table().get(name)
        if row is None or row.get("range") is None:
            problems.append((where, "array", "only numeric assumptions with a range can vary per row"))
            continue
        v = np.asarray(values, dtype=float).reshape(-1)
        lo, hi = row["range"]
        bad = ~np.isfinite(v) | (v < lo) | (v > hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            problems.append((f"{where}[{i}]", float(v[i]), f"must be between {lo} and {hi}"))
            continue
        out[name] = v
    if problems:
        raise ScenarioError(problems)
    return out


# The fields `mfu: auto` is planned from (dtsim.models.datacenter.node_mfu).
AUTO_MFU_INPUTS = (
    "parameters_b",
    "node",
    "gpu",
    "gpus_per_node",
    "pflops_per_node",
    "precision",
    "local_batch_tokens",
    "moe",
    "assumptions",
)


def resolve_mfu(s: Scenario) -> Scenario:
    """The scenario with `mfu: auto` planned by the datacenter model (models/datacenter/node_mfu.py),
    where it came from in `_mfu_source`; a scenario whose MFU is a number is returned as it is."""
    if s.mfu != "auto":
        return s
    from dtsim.models.datacenter.node_mfu import node_mfu
    from dtsim.schema.fields import BOUNDS, bound_text
    from dtsim.schema.group_resolve import node_nvlink_domain

    value, source, warning, ratio = node_mfu(
        s.parameters_b,
        s.gpu,
        s.gpus_per_node,
        s.precision.value,
        s.local_batch_tokens,
        s.pflops_per_node,
        s.moe,
        s.assumptions,
        node_nvlink_domain(s),
    )
    if not BOUNDS["mfu"]["ge"] <= value <= BOUNDS["mfu"]["le"]:
        where = "below what the node's GPUs achieve" if value > 1 else "far above the node's GPUs' peak"
        raise ScenarioError(
            [
                (
                    "mfu",
                    f"auto ({value:.3g})",
                    f"{bound_text('mfu')}: pflops_per_node {s.pflops_per_node:g} is {where}; correct it or give "
                    "the MFU as a number",
                )
            ]
        )
    groups = s._groups or ()
    own = sum(1 for g in groups if g.own_hardware)
    if own:
        # the scenario's hardware is then a default some or none of the nodes run on: say whose MFU this is
        source = (
            f"{source}. This is the scenario's own hardware's; {own} of the {len(groups)} node groups have "
            "hardware of their own, and each of those is planned the same way on its own nodes"
        )
    return s.with_planned_mfu(value, source, warning, ratio)


def _check_auto_mfu(arrays: Mapping[str, Any]) -> None:
    """`mfu: auto` is planned once, for the base scenario: a batch that varies what it is planned from
    would run every row at the base's MFU, so it is refused."""
    varied = [k for k in AUTO_MFU_INPUTS if k in arrays]
    if varied:
        raise ScenarioError(
            [
                (
                    "mfu",
                    "auto",
                    f"is planned once, for one scenario; this computation (a sweep, target or governance "
                    f"search) varies {', '.join(varied)} across its rows: give mfu as a number",
                )
            ]
        )


CHUNK_ROWS = 1 << 17


def run_chunked(frame: Frame, asm: Assumptions, chunk: int = CHUNK_ROWS) -> dict[str, np.ndarray]:
    """run_frame over slices of at most `chunk` rows, written into full-length outputs.

    Same results as one call (every formula is row-wise); the work arrays stay small, which keeps
    them in cache and avoids page-faulting fresh memory for each of the ~200 temporaries.
    """
    n = frame.n
    if n <= chunk:
        return run_frame_choosing(Frame(frame, n=n), asm)
    out: dict[str, np.ndarray] = {}
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        for key, value in run_frame_choosing(frame.rows(start, stop), asm.rows(start, stop)).items():
            value = np.asarray(value)
            kept = out.get(key)
            if value.ndim == 0 and (kept is None or (kept.ndim == 0 and _same_value(kept, value))):
                out[key] = value  # shared by every row so far: kept as one value
                continue
            if kept is None:
                kept = out[key] = np.empty(n, dtype=value.dtype)
            elif kept.ndim == 0:
                # Shared by the earlier chunks but not by this one (a chunk whose rows all fall in one
                # mode can give a mode's output as one value): the earlier rows take the kept value.
                full = np.empty(n, dtype=np.result_type(kept, value))
                full[:start] = kept
                kept = out[key] = full
            elif np.result_type(kept, value) != kept.dtype:
                kept = out[key] = kept.astype(np.result_type(kept, value))
            kept[start:stop] = value  # per-row outputs are written once into their full column
    return out


def _same_value(a: np.ndarray, b: np.ndarray) -> bool:
    """Two 0-d outputs are one value: same dtype and equal, NaN equal to NaN."""
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
