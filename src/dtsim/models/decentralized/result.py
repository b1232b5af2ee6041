"""The result of one simulation: the fields of `dtsim simulate --json`, as a pydantic model."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from dtsim import catalog
from dtsim.models.decentralized import decision
from dtsim.models.decentralized.engine import FAILURE_DETAILS, FRAME_OUTPUTS, TEXT_OUTPUTS
from dtsim.models.decentralized.frame import Frame
from dtsim.models.decentralized.strategies import has_trait
from dtsim.models.decentralized.strategies.base import BREAKDOWN_KEYS
from dtsim.models.decentralized.warning_rules import decode

REASON_TEXT = {
    "fits": "model state {mem} fits one node's {vram} → flat DiLoCo",
    "ep-fits": "expert parallelism ({ep}, degree {deg}) cut per-node model state from {full} to {mem} ≤ {vram} → DiLoCo",
    "fits-hierarchical": "model state {mem} fits one node's {vram}; hierarchy on with {groups} groups → hierarchical DiLoCo",
    "ep-fits-hierarchical": "expert parallelism ({ep}, degree {deg}) cut model state to {mem} ≤ {vram}; "
    "{groups} groups → hierarchical DiLoCo",
    "hierarchy-fallback": "model fits, but {nodes} nodes make fewer than 2 whole groups of {group} → flat DiLoCo",
    "pp-groups": "model state {mem} exceeds {vram}: {stages} stages; ⌊{neff}/{stages}⌋ = {pipes} ≥ 2 pipelines "
    "→ PP-group DiLoCo",
    "pp-single-pipeline": "model state {mem} exceeds {vram}: {stages} stages; only one whole pipeline fits in "
    "{neff} nodes → pure pipeline parallelism over the WAN",
    "too-few-nodes": "model state {mem} needs {stages} nodes of {vram} but only {neff} are available → infeasible",
    "pipeline-too-deep": "model state {mem} over {vram} nodes needs {stages} pipeline stages, more than the "
    "deepest pipeline considered (max_pipeline_stages) → infeasible",
}


class Warning_(BaseModel):
    code: str
    message: str


class Result(BaseModel):
    """Everything one simulation produces. Times are null when the mode is 'infeasible'."""

    mode: str = Field(
        description="flat-diloco | hierarchical-diloco | pp-group-diloco | pp-over-wan | infeasible"
    )
    mode_label: str
    mode_reason: str = Field(
        description="The branch of the MIRI simulator docs Appendix A decision tree, with its numbers."
    )
    mode_reason_code: str
    wall_clock_days: float | None = Field(description="Wall-clock time to process the D tokens.")
    effective_days: float | None = Field(description="η-adjusted time to equivalent quality: wall-clock / η.")
    goodput: float | None = Field(
        1.0,
        description="Kept progress over wall-clock time with node failures (node_mtbf_hours): DiLoCo replicas "
        "drop out and rejoin, or every node checkpoints and the job restarts from the last checkpoint, whichever "
        "keeps more (`recovery`); a synchronous pipeline restarts; 1 without failures. wall_clock_days includes it.",
    )
    recovery: str = Field(
        "none",
        description="How the run survives node failures: rejoin (a failed DiLoCo replica loses its inner steps "
        "since its tier's last sync and rejoins at the next), restart (the job restarts from its last checkpoint, "
        "taken at Daly's interval), or none (no node_mtbf_hours, or no layout runs).",
    )
    failure_free_days: float | None = Field(
        None, description="Wall-clock days without failures (wall_clock_days × goodput)."
    )
    hierarchy_by_region: bool = Field(
        False,
        description="The node groups' regions became the regional groups of a hierarchy: hierarchical: true, or "
        "hierarchical not given and the hierarchy's wall-clock time shorter than the run without it (which "
        "hierarchical: false gives). nodes_per_group groups nodes by index instead.",
    )
    limiting_group: int | None = Field(
        None,
        description="With node_groups: the 0-based index of the group that sets the pace (slowest compute when "
        "compute is the bottleneck, farthest RTT when latency is, slowest links otherwise); null without groups.",
    )
    compute_step_s: float = Field(
        description="T_comp: one step of the whole model on one node (MIRI simulator docs §1.2)."
    )
    inner_step_s: float | None = Field(
        description="Wall time of one inner step (a pipeline step in PP modes)."
    )
    sync_s: float | None = Field(description="One global (WAN) synchronization, straggler included.")
    regional_sync_s: float | None = Field(description="One regional synchronization (hierarchical).")
    outer_step_s: float | None = Field(
        description="One outer step (global cycle; one pipeline step in mode B)."
    )
    inner_steps_used: int | None
    regional_steps_used: int | None
    auto_inner_steps: int | None = Field(description="Smallest H that would hide the sync in this mode.")
    efficiency: float | None = Field(description="η = η_H · η_compression · η_activation.")
    efficiency_h: float | None
    efficiency_compression: float
    efficiency_activation: float
    efficiency_staleness: float = Field(
        1.0, description="η factor for outer updates applied outer_overlap_steps late (1 when τ = 0)."
    )
    replica_loss_multiplier: float | None
    global_mfu: float | None = Field(
        description="η-adjusted MFU, the MIRI simulator docs' Global MFU (§6.1): 6·P·D over N · peak · the "
        "η-adjusted time — lower than the wall-clock MFU by the factor η."
    )
    global_hfu: float | None = Field(description="global_mfu / the HFU-to-MFU ratio (η-adjusted as well).")
    wall_clock_mfu: float | None = Field(
        None,
        description="MFU over the time the run takes: 6·P·D over N · peak · wall-clock time (= global_mfu / η).",
    )
    chi: float | None
    model_flop: float = Field(description="6 · P_active · D.")
    hardware_flop: float = Field(
        description="Model FLOPs plus what the hardware also computes (recomputation; with mfu: auto, the planned "
        "layout's recomputation and attention): model_flop / (MFU/HFU ratio: hfu_mfu_ratio, or the layout's)."
    )
    peak_flop_capacity: float | None = Field(description="N · peak FLOP/s · η-adjusted time.")
    quality_adjusted_flop: float | None = Field(description="6 · P_active · D · η · χ.")
    bottleneck: str = Field(
        description="The largest part of one outer step (a breakdown_s key), memory where no layout holds the "
        "model, or failures where the expected time lost to node failures, outer_step_s · (1/goodput − 1), is "
        "larger than every part."
    )
    bottleneck_share: float | None = Field(
        description="The bottleneck's share of an outer step's expected wall time, outer_step_s / goodput."
    )
    breakdown_s: dict[str, float | None] = Field(
        description="Parts of one outer step; they sum to outer_step_s."
    )
    hidden_sync_s: float | None = Field(
        description="Sync time overlapped with compute per outer step, summed over the tiers: a hierarchy's "
        "regional and global syncs run at the same time on different links, so there it can exceed the outer step."
    )
    hidden_regional_sync_s: float | None = Field(
        None,
        description="The regional tier's part of hidden_sync_s (hierarchical DiLoCo; 0 elsewhere); each tier's "
        "hidden time fits in the outer step.",
    )
    pp_stages: int
    pp_groups: int
    idle_nodes: int
    memory_per_node_gb: float
    model_state_memory_gb: float
    max_parameters_b: dict[str, float]
    max_days: float
    feasible: bool
    gpu_count: int | None
    gpu_hours: float | None
    cost_usd: float | None
    energy_kwh: float | None
    cost_sources: dict[str, str]
    warnings: list[Warning_]
    details: dict[str, Any] = Field(description="Intermediate values, for --explain and the oracle tests.")
    assumptions_overridden: dict[str, Any]
    scenario: dict[str, Any] | None
    mfu_source: str | None = Field(
        None, description="Where `mfu: auto` took the MFU from (null when it was given as a number)."
    )

    def to_json(self, **kw: Any) -> str:
        return self.model_dump_json(**kw)


# Outputs that do not apply to some runs, and where (a mask over a row or a batch's columns, by the
# frame's names): simulate's result gives them as null there, and so does a grid's JSON
NOT_APPLICABLE = {
    "limiting_group": lambda c: np.asarray(c["limiting_group"]) < 0,  # no node groups
    "regional_steps_used": lambda c: ~has_trait(np.asarray(c["mode_code"]), "regional_tier"),
}


def _f(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _i(x: Any) -> int | None:
    x = float(x)
    return round(x) if math.isfinite(x) else None


def _gb(x: float) -> str:
    return f"{x:,.0f} GB"


def row_values(out: dict, i: int, frame) -> dict[str, Any]:
    """Every frame column and output of row i as Python scalars (for messages and explain)."""
    v: dict[str, Any] = {}
    for key, col in frame.items():
        if key == "asm":
            v[key] = col
            continue
        arr = np.asarray(col)
        v[key] = arr.item() if arr.ndim == 0 else arr[i].item()
    for key, col in out.items():
        arr = np.asarray(col)
        v[key] = arr.item() if arr.ndim == 0 else arr[i].item()
    for name, (code, labels) in TEXT_OUTPUTS.items():
        if name != "mode":  # the mode's code is read as is (decision.MODE_IDS, is_mode)
            v[name] = labels[v[code]]
    v["largest_part"] = BREAKDOWN_KEYS[v["part_code"]]  # the step's, failures aside
    v["max_parameters_b_here"] = v["vram_bytes"] / v["bytes_per_param"] / 1e9
    return v


def _hier_groups(v: dict[str, Any]) -> float:
    """A hierarchy's group count, as the strategy forms them (one per region when the node groups'
    regions are the groups)."""
    from dtsim.models.decentralized.strategies.hierarchical_diloco import group_layout

    return float(group_layout(Frame(v))[0])


def reason_text(v: dict[str, Any]) -> str:
    code = decision.REASONS[v["reason_code"]]
    return REASON_TEXT[code].format(
        mem=_gb(v["memory_bytes"] / 1e9),
        vram=_gb(v["vram_bytes"] / 1e9),
        full=_gb(v["full_memory_bytes"] / 1e9),
        ep=("none", "regional", "global")[v["ep_mode"]],
        deg=f"{v['ep_degree']:,.0f}",
        groups=f"{_hier_groups(v):,.0f}",
        nodes=f"{v['num_nodes']:,.0f}",
        group=f"{v['nodes_per_group']:,.0f}",
        stages=f"{v['stages']:,.0f}",
        neff=f"{v['n_eff']:,.4g}",
        pipes=f"{math.floor(v['n_eff'] / v['stages']):,}",
    )


DETAIL_KEYS = (
    *FRAME_OUTPUTS,
    "node_sustained_flop_s",
    "h_eff",
    "alpha",
    "strategy_penalty",
    "replicas",
    "compute_block_s",
    "pipeline_comm_s",
    "pipeline_latency_s",
    "computed_max_days",
    "ep_saved_memory",
    "total_s",
    "rejoin_goodput",
    "restart_goodput",
    "failure_lost_s",
    *FAILURE_DETAILS,
)


def build_result(out: dict, i: int, scenario, asm, frame) -> Result:
    v = row_values(out, i, frame)
    mode = decision.MODE_IDS[v["mode_code"]]
    if scenario is not None and scenario._groups is not None:  # every group's GPU, in group order
        gpu_ids = list(dict.fromkeys(g.gpu for g in scenario._groups if g.gpu))
    else:
        gpu_ids = [scenario.gpu] if scenario is not None and scenario.gpu else []
    sources = {"pue": f"{asm.pue:g} — Uptime Institute Global Data Center Survey 2024"}
    gpus = [catalog.gpus()[g] for g in gpu_ids if g in catalog.gpus()]
    if gpus:
        sources["price_usd"] = "; ".join(
            f"{gpu.price_usd:,.0f} USD per {gpu.id} — {gpu.sources.get('price_usd', '')}" for gpu in gpus
        )
        sources["board_power_w"] = "; ".join(
            f"{gpu.board_power_w:g} W per {gpu.id} — {gpu.sources.get('board_power_w', '')}" for gpu in gpus
        )
    details = {}
    for key in DETAIL_KEYS:
        val = v[key]
        details[key] = val if isinstance(val, bool) else _f(val)
    warnings = decode(int(v["warning_bits"]), v)
    reason = reason_text(v)
    if v["hierarchy_by_region"] and v.get("region_given"):  # hierarchical given (a frame column), not chosen
        reason += f"; hierarchical: true, so the node groups' {v['region_count']:.0f} regions are the regional groups"
    elif v["hierarchy_by_region"]:
        reason += (
            f"; the node groups' {v['region_count']:.0f} regions are the regional groups (a shorter wall-clock "
            "than the run without them, which hierarchical: false gives; the choice is on wall-clock time, "
            "not the η-adjusted time)"
        )
    weighed = v.get("region_tier_days", math.nan)
    if not v["hierarchy_by_region"] and math.isfinite(weighed):
        flat = (
            f"{v['wall_clock_days']:,.4g} days"
            if math.isfinite(v["wall_clock_days"])
            else "a run that never ends"
        )
        reason += (
            f"; the node groups' {v['region_count']:.0f} regions were weighed as the regional groups of a "
            f"hierarchy: {weighed:,.4g} days against {flat} without, so none (hierarchical: true forces it)"
        )
    if any(w["code"] == "STREAMING_MEMORY" for w in warnings):
        # one story: the mode's memory verdict and the streaming warning name the same two figures
        streamed = v["memory_bytes"] * (1 + v["asm"].streaming_memory_overhead)
        reason += (
            f"; with streaming's outer state it is {_gb(streamed / 1e9)}, over the node's "
            f"{_gb(v['vram_bytes'] / 1e9)} unless offloaded (STREAMING_MEMORY)"
        )
    return Result(
        mode=mode,
        mode_label=decision.MODE_LABELS[v["mode_code"]],
        mode_reason=reason,
        mode_reason_code=decision.REASONS[v["reason_code"]],
        wall_clock_days=_f(v["wall_clock_days"]),
        effective_days=_f(v["effective_days"]),
        goodput=_f(v["goodput"]),
        recovery=v["recovery"],
        failure_free_days=_f(v["failure_free_days"]),
        limiting_group=None if NOT_APPLICABLE["limiting_group"](v) else int(v["limiting_group"]),
        hierarchy_by_region=bool(v["hierarchy_by_region"]),
        compute_step_s=v["step_s"],
        inner_step_s=_f(v["inner_step_s"]),
        sync_s=_f(v["sync_s"]),
        regional_sync_s=_f(v["regional_sync_s"]),
        outer_step_s=_f(v["outer_step_s"]),
        inner_steps_used=_i(v["inner_steps_used"]),
        regional_steps_used=None
        if NOT_APPLICABLE["regional_steps_used"](v)
        else _i(v["regional_steps_used"]),
        auto_inner_steps=_i(v["auto_inner_steps"]),
        efficiency=_f(v["efficiency"]),
        efficiency_h=_f(v["efficiency_h"]),
        efficiency_compression=v["efficiency_compression"],
        efficiency_activation=v["efficiency_activation"],
        efficiency_staleness=v["efficiency_staleness"],
        replica_loss_multiplier=_f(v["replica_loss_multiplier"]),
        global_mfu=_f(v["global_mfu"]),
        wall_clock_mfu=_f(v["wall_clock_mfu"]),
        global_hfu=_f(v["global_hfu"]),
        chi=_f(v["chi"]),
        model_flop=v["model_flop"],
        hardware_flop=v["hardware_flop"],
        peak_flop_capacity=_f(v["peak_flop_capacity"]),
        quality_adjusted_flop=_f(v["quality_adjusted_flop"]),
        bottleneck=v["bottleneck"],
        bottleneck_share=_f(v["bottleneck_share"]),
        breakdown_s={k: _f(v[k]) for k in BREAKDOWN_KEYS},
        hidden_sync_s=_f(v["hidden_sync_s"]),
        hidden_regional_sync_s=_f(v["hidden_regional_sync_s"]),
        pp_stages=int(v["stages"]),
        pp_groups=int(v["pp_groups"]),
        idle_nodes=int(v["idle_nodes"]),
        memory_per_node_gb=v["memory_per_node_gb"],
        model_state_memory_gb=v["model_state_memory_gb"],
        max_parameters_b={p: v[f"max_parameters_b_{p}"] for p in ("fp16", "fp8", "fp4")},
        max_days=v["max_days"],
        # false where no layout runs (mode infeasible: no days to compare), as the batch column says
        feasible=bool(v["feasible"]),
        gpu_count=_i(v["gpu_count"]),
        gpu_hours=_f(v["gpu_hours"]),
        cost_usd=_f(v["cost_usd"]),
        energy_kwh=_f(v["energy_kwh"]),
        cost_sources=sources,
        warnings=[Warning_(**w) for w in warnings],
        details=details,
        assumptions_overridden=dict(asm.overridden),
        scenario=scenario.to_fields() if scenario is not None else None,
        mfu_source=scenario.mfu_source if scenario is not None else None,
    )
