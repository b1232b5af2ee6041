"""Warnings: stable codes, a vectorized condition each, and a message that names the numbers and the
fix. Batches carry a bit mask per row (`warning_bits`); `decode` turns one row into {code, message}.

Covers every warning of MIRI simulator docs (MFU > 60%, PP-over-WAN, the Appendix A advice) and of the original
app (inefficient run, EP saved memory, PP-group mode, insufficient nodes with the concrete fixes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dtsim.models.decentralized.strategies import has_trait, is_mode
from dtsim.physics.codec import MODEL_CODECS as CODECS
from dtsim.physics.memory import PRECISIONS, bytes_per_value
from dtsim.physics.stragglers import CURVES, STRATEGIES


@dataclass(frozen=True)
class WarningRule:
    code: str
    condition: Callable[[Any, dict], np.ndarray]
    message: Callable[[dict], str]


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _gb(x: float) -> str:
    return f"{x:,.0f} GB"


def _fixes_for_memory(v: dict) -> str:
    """The MIRI simulator docs Appendix A: lower precision, a smaller model, MoE + EP, more nodes."""
    fixes = [
        "lower precision (largest dense model one node holds: "
        f"FP16 {v['max_parameters_b_fp16']:,.0f}B, FP8 {v['max_parameters_b_fp8']:,.0f}B, "
        f"FP4 {v['max_parameters_b_fp4']:,.0f}B)",
        f"a smaller model (≤ {v['max_parameters_b_here']:,.0f}B at this precision fits one node and runs DiLoCo)",
    ]
    if v["moe"] and v["ep_mode"] == 0:
        fixes.append("expert parallelism (expert_parallelism: regional or global) to shard the experts")
    elif not v["moe"]:
        fixes.append("a mixture-of-experts model with expert parallelism to cut per-node memory")
    return "; ".join(fixes)


def _nodes_needed(v: dict) -> str:
    s = int(v["stages"])
    spare = 1 + v["asm"].backup_worker_fraction if v["straggler"] == 2 else 1
    one = int(np.ceil(s * spare))
    two = int(np.ceil(2 * s * spare))
    return f"{one} nodes for one pipeline, {two} for PP-group DiLoCo"


def _int8_ratio(precision, asm) -> np.ndarray:
    """int8's ratio over the training precision's values, one byte against the precision's bytes per
    value (pseudo-gradients travel at those, physics.memory.bytes_per_value): 16-bit 2×, FP8 1×."""
    return bytes_per_value(np.asarray(precision), asm)


def _int8_ratio_text(v: dict) -> str:
    ratio = float(_int8_ratio(v["precision"], v["asm"]))
    return f"compression {ratio:g}× at {PRECISIONS[int(v['precision'])]}"


def _mode(v: dict) -> str:
    from dtsim.models.decentralized.decision import MODE_IDS

    return MODE_IDS[int(v["mode_code"])]


# Fields that act only in some modes: (name, what it acts on). FIELDS_IGNORED names those given (the
# frame's fields_given bits, encode.TRACKED_GIVEN: set to a value other than the default; τ > 0) that the
# row's mode does not read. streaming is left out: it is on by default, and off changes nothing either.
_TIER = "a hierarchy's regional tier (hierarchical: true)"
_DILOCO = "DiLoCo's outer synchronization"
MODE_FIELDS = (
    ("nodes_per_group", _TIER),
    ("regional_bandwidth_mbps", _TIER),
    ("regional_latency_ms", _TIER),
    ("regional_steps", _TIER),
    ("inner_steps", _DILOCO),
    ("outer_overlap_steps", _DILOCO),
)


def ignored_fields(f: Any, mode_code) -> np.ndarray:
    """Per row, bits (MODE_FIELDS order) of the fields given that the row's mode does not read. With
    hierarchical: true the group size decides whether a tier forms (or a pipeline sits inside a group), so
    it is read; a pipeline inside a regional group (pp_regional) uses the regional link; regional EP the
    group size and the regional RTT; infeasible rows none (their memory verdict comes first)."""
    tier = has_trait(mode_code, "regional_tier")
    pp_regional = has_trait(mode_code, "pipelined") & np.asarray(f.pp_regional, dtype=bool)
    regional_ep = np.asarray(f.moe, dtype=bool) & (np.asarray(f.ep_mode) == 1)
    diloco = has_trait(mode_code, "diloco")
    used = (
        tier | np.asarray(f.hierarchical, dtype=bool) | regional_ep,
        tier | pp_regional,
        tier | pp_regional | regional_ep,
        tier,
        diloco,
        diloco,
    )
    given = np.asarray(f.fields_given, dtype=np.int64)
    from dtsim.models.decentralized.encode import TRACKED_GIVEN  # MODE_FIELDS' first names, in order

    asked = [(given >> k) & 1 == 1 for k in range(len(TRACKED_GIVEN))]
    asked.append(np.asarray(f.outer_overlap_steps) > 0)
    bits = np.zeros(np.broadcast(mode_code, given).shape, dtype=np.int64)
    for k, (a, u) in enumerate(zip(asked, used, strict=True)):
        bits |= np.where(a & ~u, 1 << k, 0)
    return np.where(has_trait(mode_code, "diloco") | has_trait(mode_code, "pipelined"), bits, 0)


def _regions_forgone(f: Any, mode_code) -> np.ndarray:
    """nodes_per_group given (at any value) beside node groups in two or more regions, hierarchical not:
    the regions were not weighed as the regional groups, and the run has no tier."""
    return ~np.isnan(np.asarray(f.regions_forgone, dtype=float)) & ~has_trait(mode_code, "regional_tier")


def _ignored_message(v: dict) -> str:
    bits = int(ignored_fields(_Row(v), np.asarray(v["mode_code"])))
    forgone = bool(_regions_forgone(_Row(v), np.asarray(v["mode_code"])))
    if forgone:
        bits &= ~1  # nodes_per_group: it changed the run (below)
    names = [(name, on) for k, (name, on) in enumerate(MODE_FIELDS) if bits >> k & 1]
    sentences = []
    if names:
        parts = []
        for on in dict.fromkeys(on for _, on in names):
            fields = [name for name, o in names if o == on]
            parts.append(f"{', '.join(fields)} {'acts' if len(fields) == 1 else 'act'} on {on}")
        text = (
            f"{'; '.join(parts)}; this {_mode(v)} run has none, so "
            f"{'it changes' if len(names) == 1 else 'they change'} nothing"
        )
        if (
            v["hierarchical"]
            and has_trait(v["mode_code"], "pipelined")
            and any(on == _TIER for _, on in names)
        ):
            text += (
                " (a pipeline takes the regional link only inside one regional group: nodes_per_group "
                f"{v['nodes_per_group']:g} is under its {v['stages']:g} stages)"
            )
        elif v["hierarchical"] and any(on == _TIER for _, on in names):
            text += " (hierarchical is true, but mode_reason says why no regional tier formed)"
        elif any(on == _TIER for _, on in names):
            text += " (set hierarchical: true for regional groups)"
        sentences.append(text)
    if forgone:
        sentences.append(
            f"nodes_per_group ({v['nodes_per_group']:g}) given without hierarchical: true keeps the node groups' "
            f"{v['regions_forgone']:.0f} regions from being weighed as the regional groups, and forms no tier "
            "itself: the run is flat. Leave it out to let the model weigh the regions, or set hierarchical: "
            "true to group nodes by their order"
        )
    return ". ".join(sentences) + "."


def _replaced_message(v: dict) -> str:
    from dtsim.models.decentralized.encode import _REPLACED, REPLACED_ORDER

    names = [f for k, f in enumerate(REPLACED_ORDER) if int(v["replaced_given"]) >> k & 1]
    owners = "; ".join(dict.fromkeys(_REPLACED[name][0] for name in names))
    one = len(names) == 1
    return (
        f"{', '.join(names)} {'is' if one else 'are'} not used in this scenario: every node group sets its own "
        f"{owners}, so {'it changes' if one else 'they change'} nothing. Set the value on the groups, or leave a "
        "group without its own to take the scenario's."
    )


class _Row:
    """A row's values (warning messages' `v`) read as a frame's attributes."""

    def __init__(self, v: dict):
        self._v = v

    def __getattr__(self, name: str):
        return self._v[name]


# the parts of an outer step spent waiting on links (engine.BREAKDOWN_KEYS less compute and bubble)
NETWORK_PARTS = ("latency", "global_sync", "regional_sync", "pipeline_comm", "straggler")


def _hide_advice(v: dict) -> str:
    """What hides the exposed sync: more inner steps for a flat run or a hierarchy's regional tier; for
    a hierarchy's global tier, more regional rounds per global sync. The global sync hides under the
    global cycle's compute, H_regional rounds of it, so H_regional ≥ H_regional · S / (S − exposed) with
    S the global sync's time and `exposed` its part not hidden (a trial user's case: with H = 128 the
    advice was "inner_steps ≥ 24", which H already was, where the global tier was the one exposed)."""
    tiered = has_trait(v["mode_code"], "regional_tier")
    regional_exposed = tiered and v.get("regional_sync", 0.0) > 1e-9 * v["outer_step_s"]
    advice = []
    if not tiered or regional_exposed:
        what = "the regional sync" if tiered else "it"
        advice.append(f"inner_steps ≥ {v['auto_inner_steps']:,.0f} would hide {what}")
    if tiered:
        exposed = _waiting(v) - (v.get("regional_sync", 0.0) if regional_exposed else 0.0)
        capacity = v["sync_s"] - exposed
        rounds = v.get("regional_steps_used", float("nan"))
        if exposed > 1e-9 * v["outer_step_s"] and capacity > 0 and rounds == rounds:
            need = math.ceil(rounds * v["sync_s"] / capacity * (1 - 1e-12))
            advice.append(
                f"regional_steps ≥ {need:,} (now {rounds:,.0f}) would hide the global sync under the regional "
                "rounds between two of them"
            )
    return ("; ".join(advice) or "more inner steps would hide it") + "."


def _waiting(v: dict) -> float:
    return sum(v[k] for k in NETWORK_PARTS if k in v and v[k] == v[k])


def _peak_message(v: dict) -> str:
    ratio = v["peak_flop_s"] / v["catalog_peak_flop_s"]
    dense = v["catalog_peak_flop_s"] / 1e15
    gpus = f"{v['gpus_per_node']:,.0f} GPU" + ("s" if v["gpus_per_node"] != 1 else "")
    text = (
        f"pflops_per_node {v['peak_flop_s'] / 1e15:,.4g} is {ratio:.2f}× the dense datasheet peak of its {gpus} "
        f"at {PRECISIONS[v['precision']]} ({dense:,.4g} PFLOPS). Compute time here is 6·P·tokens / "
        f"(pflops_per_node × MFU), so every compute time is 1/{ratio:.2f} of what the dense peak gives at "
        "the same MFU, and the MFUs reported are against pflops_per_node, not the dense peak"
    )
    if abs(ratio / 2.0 - 1.0) <= v["asm"].peak_mismatch_tolerance:
        text += (
            "; twice the dense peak is the 2:4-sparsity figure (the MIRI simulator docs' default of 32 PFLOPS for "
            f"16 × GH200 is one) — set pflops_per_node {dense:,.4g} for the dense one"
        )
    return text + "."


def _tcp_limited(f) -> np.ndarray:
    """Where TCP's limits (tcp_streams flows, each under window/RTT and the loss ceiling) carry less than
    the WAN link's line rate, in either direction (groups.resolve_links keeps the line rates)."""
    line_up, line_down = f.get("line_up_bps"), f.get("line_down_bps")
    if line_up is None:
        return np.asarray(False)
    slack = 1.0 - 1e-9  # rounding, not a threshold: any limit that binds is said
    return (np.asarray(f.up_bps) < np.asarray(line_up) * slack) | (
        np.asarray(f.down_bps) < np.asarray(line_down) * slack
    )


def plain(x: float) -> str:
    """A figure as the report writes it: 10,000 (not 1e+04), 1,000, 155.5, 4.437, 2.5e-05 (the warnings'
    rates and the Node groups table's links)."""
    return f"{x:,.0f}" if x >= 10_000 or (x >= 100 and x == int(x)) else f"{x:,.4g}"


def _mbps(bps: float) -> str:
    return plain(bps / 1e6)


def _tcp_message(v: dict) -> str:
    where = f" of node_groups[{v['link_group']:.0f}]" if v.get("groups") is not None else ""
    loss = f" and {v['loss_rate']:.2g} loss" if np.isfinite(v.get("loss_rate", np.nan)) else ""
    n = v["tcp_streams"]
    return (
        f"TCP limits the WAN link{where}: {n:g} flow{'s' if n != 1 else ''} (tcp_streams) at its RTT{loss} "
        f"carr{'ies' if n == 1 else 'y'} {_mbps(v['up_bps'])} Mbit/s up and {_mbps(v['down_bps'])} down of the line's "
        f"{_mbps(v['line_up_bps'])} / {_mbps(v['line_down_bps'])} Mbit/s (each flow under its window / "
        "RTT and the loss ceiling of Mathis et al. 1997); the syncs are timed at the limited rate. More flows "
        "(tcp_streams), a shorter RTT or less loss lift it; --explain shows the terms."
    )


def _goodput_message(v: dict) -> str:
    if is_mode(v["mode_code"], "pp-over-wan"):
        how = "a failed node stops the pipeline (the whole job), which restarts from its last checkpoint"
    elif v["recovery"] == "restart":
        rejoin = v["rejoin_goodput"]
        how = (
            "every node checkpoints and a failure stops the job until the failed replica has restarted from "
            "the last checkpoint (rejoining without checkpoints, losing the round since the last sync, would "
            f"keep {rejoin:.2g})"
        )
    elif has_trait(v["mode_code"], "regional_tier"):  # the failed node rejoins its regional group
        how = "a failed node loses its inner steps since the last regional sync and rejoins its group after a restart"
    else:
        how = "a failed replica loses its inner steps since the last outer step and rejoins after a restart"
    if v["goodput"] <= 0 or math.isnan(v["wall_clock_days"]):  # 0, or a time past float
        return (
            f"With node_mtbf_hours {v['node_mtbf_h']:,.4g} the run never finishes: {how}, and a failure comes "
            "before the work between two of them can complete, so the times are null. Give a longer MTBF, fewer "
            "nodes per replica or shorter outer steps."
        )
    share = f"{v['goodput']:.1%}" if v["goodput"] >= 1e-3 else f"{v['goodput']:.2g}"
    return (
        f"Goodput {share}: with node_mtbf_hours {v['node_mtbf_h']:,.4g}, {how}; "
        f"{v['failure_free_days']:,.4g} days without failures become {v['wall_clock_days']:,.4g}."
    )


RULES: tuple[WarningRule, ...] = (
    WarningRule(
        "LESS_THAN_ONE_OUTER_STEP",
        lambda f, o: o["total_s"] < o["outer_step_s"],
        lambda v: (
            f"The {v['tokens'] / 1e12:,.4g}T tokens take {v['total_s'] / v['outer_step_s']:.2g} of an outer step "
            f"({v['outer_step_s']:,.4g} s): the replicas never synchronize, so the times are a fraction of one "
            "step, not a training run. Fewer nodes, a smaller local batch or more tokens give one."
            + _auto_h_beyond_run(v)
        ),
    ),
    WarningRule(
        "GROUP_MEMORY",
        lambda f, o: (
            np.asarray(f.stages) > o["memory_group_stages"]
            if "memory_group_stages" in o
            else np.asarray(False)
        ),
        lambda v: (
            f"Node group node_groups[{v['memory_group']:.0f}] (#{v['memory_group']:.0f} in the Node groups table, "
            f"the group listed {_ordinal(int(v['memory_group']) + 1)}) has "
            f"{_gb(v['vram_bytes'] / 1e9)} per node, less than the "
            f"{_gb(v['memory_bytes'] / 1e9)} of model state a replica needs: every replica is split into "
            f"{v['stages']:.0f} pipeline stages to fit it, where the largest nodes "
            f"({_gb(v['largest_group_vram_bytes'] / 1e9)}) need {v['memory_group_stages']:.0f}. Without that "
            "group (or with its nodes idle) the others may run faster; node_groups applies one layout to all."
        ),
    ),
    WarningRule(
        "LOW_GOODPUT",
        lambda f, o: o["goodput"] < f.asm.goodput_warning_threshold,
        _goodput_message,
    ),
    WarningRule(
        "MFU_ABOVE_60",
        lambda f, o: f.mfu > f.asm.mfu_warning_threshold,
        lambda v: (
            f"Base MFU {v['mfu']:.0%} is above {v['asm'].mfu_warning_threshold:.0%}, which is rarely achieved in "
            "practice (PaLM 46.2%, LLaMA-3.1 38–43%; MIRI simulator docs §1.3)."
        ),
    ),
    WarningRule(
        "INEFFICIENT_RUN",
        lambda f, o: o["global_mfu"] < f.asm.low_global_mfu_threshold,
        lambda v: (
            f"η-adjusted MFU is {v['global_mfu']:.1%} (below {v['asm'].low_global_mfu_threshold:.0%}; the "
            f"wall-clock MFU is {v['wall_clock_mfu']:.1%}): "
            + (
                f"compute is the largest single part of the step; the rest is lost to the base MFU "
                f"({v['mfu']:.0%}), to the step's other parts together and to DiLoCo's algorithmic "
                f"efficiency (η = {v['efficiency']:.2f})."
                if v["bottleneck"] == "compute"
                else f"most of the hardware time goes to {v['bottleneck'].replace('_', ' ')} and algorithmic "
                "inefficiency."
            )
        ),
    ),
    WarningRule(
        "PEAK_NOT_CATALOG",
        lambda f, o: (
            (f.catalog_peak_flop_s > 0)
            & (np.abs(f.peak_flop_s / f.catalog_peak_flop_s - 1.0) > f.asm.peak_mismatch_tolerance)
        ),
        lambda v: _peak_message(v),
    ),
    WarningRule(
        "VRAM_NOT_CATALOG",
        lambda f, o: f.vram_bytes > f.catalog_vram_bytes * (1.0 + f.asm.peak_mismatch_tolerance),
        lambda v: (
            f"vram_per_node_gb is {v['vram_bytes'] / v['catalog_vram_bytes']:.2f}× what "
            + (
                "a node group's GPUs hold (datasheet)"
                if v.get("groups") is not None
                else f"the node's {v['gpus_per_node']:,.0f} GPUs hold ({v['catalog_vram_bytes'] / 1e9:,.4g} GB, datasheet)"
            )
            + ": every memory verdict (what fits a node, the "
            "mode, pipeline stages) is against the larger figure, as for a hypothetical node."
        ),
    ),
    WarningRule(
        "NO_PRECISION_DATAPATH",
        lambda f, o: f.catalog_peak_flop_s < 0,
        lambda v: (
            f"The node's (or a node group's) catalog GPU has no {PRECISIONS[int(v['precision'])].upper()} "
            "tensor-core datapath (FP8: "
            "Hopper and later; FP4: Blackwell B100, B200, GB200): pflops_per_node is taken as given, as for a "
            "hypothetical chip, while its cost and energy stay this GPU's."
        ),
    ),
    WarningRule(
        "EP_SAVED_MEMORY",
        lambda f, o: o["ep_saved_memory"],
        lambda v: (
            f"Expert parallelism ({['none', 'regional', 'global'][v['ep_mode']]}, degree {v['ep_degree']:,.0f}) cut "
            f"per-node memory from {_gb(v['full_memory_bytes'] / 1e9)} to {_gb(v['memory_bytes'] / 1e9)}, under the "
            f"node's {_gb(v['vram_bytes'] / 1e9)}: the model trains in DiLoCo mode without pipeline parallelism."
        ),
    ),
    WarningRule(
        "PP_GROUP_MODE",
        lambda f, o: is_mode(o["mode_code"], "pp-group-diloco"),
        lambda v: (
            f"The model needs {v['stages']:.0f} pipeline stages ({_gb(v['memory_bytes'] / 1e9)} of model state over "
            f"{_gb(v['vram_bytes'] / 1e9)} nodes): running {v['pp_groups']:.0f} PP groups of {v['stages']:.0f} nodes "
            f"with DiLoCo between them; every micro-batch crosses {'regional' if v['pp_regional'] else 'WAN'} links. "
            f"To stay in DiLoCo mode: {_fixes_for_memory(v)}."
        ),
    ),
    WarningRule(
        "PP_OVER_WAN",
        lambda f, o: is_mode(o["mode_code"], "pp-over-wan"),
        lambda v: (
            f"Only one pipeline of {v['stages']:.0f} stages fits in {v['num_nodes']:.0f} nodes: pure pipeline "
            "parallelism over the WAN, extremely slow (every micro-batch pays the link's round trip). "
            f"Needed: {_nodes_needed(v)}. Or: {_fixes_for_memory(v)}."
        ),
    ),
    WarningRule(
        "PIPELINE_TOO_DEEP",
        lambda f, o: o["reason_code"] == 8,
        lambda v: (
            f"The model needs {v['stages']:,.0f} pipeline stages ({_gb(v['memory_bytes'] / 1e9)} of model state over "
            f"{_gb(v['vram_bytes'] / 1e9)} nodes), more than the {v['asm'].max_pipeline_stages:,.0f} any real model "
            f"has layers for. Use nodes with more memory, or: {_fixes_for_memory(v)}."
        ),
    ),
    WarningRule(
        "INSUFFICIENT_NODES",
        lambda f, o: o["reason_code"] == 7,
        lambda v: (
            f"The model needs {v['stages']:.0f} nodes per replica ({_gb(v['memory_bytes'] / 1e9)} of model state at "
            f"{v['bytes_per_param']:g} B/parameter over {_gb(v['vram_bytes'] / 1e9)} nodes) but "
            f"{v['num_nodes']:.0f} nodes"
            + (f" ({v['n_eff']:.1f} after backup workers)" if v["straggler"] == 2 else "")
            + f" are available. Needed: {_nodes_needed(v)}. Or: {_fixes_for_memory(v)}."
        ),
    ),
    WarningRule(
        "HIERARCHY_FALLBACK",
        lambda f, o: o["reason_code"] == 4,
        lambda v: (
            f"Hierarchical DiLoCo needs at least 2 whole groups of {v['nodes_per_group']:.0f} nodes"
            + ("" if v["group_size_given"] else " (nodes_per_group's default)")
            + f"; {v['num_nodes']:.0f} nodes make {np.floor(v['num_nodes'] / v['nodes_per_group']):.0f}"
            + (
                " (the node groups' regions form no regional tier, being one region or leaving a group without "
                "one, so nodes are grouped by their order)"
                if "memory_group" in v and not v["group_size_given"]
                else ""
            )
            + ". Running flat DiLoCo instead."
        ),
    ),
    WarningRule(
        "EXCEEDS_MAX_RUN_LENGTH",
        lambda f, o: o["effective_days"] > o["max_days"],
        lambda v: (
            f"The η-adjusted time ({v['effective_days']:,.0f} days) exceeds the maximum useful run length "
            f"({v['max_days']:,.0f} days, MIRI simulator docs §7): starting later on better hardware and algorithms would "
            "finish sooner."
        ),
    ),
    WarningRule(
        "SYNC_NOT_HIDDEN",
        lambda f, o: (
            (f.streaming | (f.outer_overlap_steps > 0))
            & has_trait(o["mode_code"], "diloco")
            & ((o["global_sync"] + o["regional_sync"]) > 1e-9 * o["outer_step_s"])
        ),
        lambda v: (
            "Streaming cannot hide the synchronization: it takes longer than the compute it overlaps, so "
            f"{_waiting(v) / v['outer_step_s']:.0%} of each outer step waits on the network"
            + (
                " (the largest part: the run is network-bound)"
                if v["largest_part"] in NETWORK_PARTS
                else f" ({v['largest_part'].replace('_', ' ')} is still the largest part, "
                f"{v[v['largest_part']] / v['outer_step_s']:.0%})"
            )
            + ". "
            + _hide_advice(v)
        ),
    ),
    WarningRule(
        "EFFICIENCY_FLOOR",
        lambda f, o: o["efficiency_h"] <= f.asm.efficiency_floor,
        lambda v: (
            f"η_H is at its floor of {v['asm'].efficiency_floor:.0%} (MIRI simulator docs §4.1): H_eff = {v['h_eff']:,.0f} is "
            "beyond where the log-decay formula means anything; treat the quality numbers as a bound."
        ),
    ),
    WarningRule(
        "COMPRESSION_BEYOND_TABLE",
        lambda f, o: f.compression > f.asm.compression_keys[-1],
        lambda v: (
            f"Compression {v['compression']:,.0f}× is beyond the quality table's last entry "
            f"({v['asm'].compression_keys[-1]:,.0f}×): quality is held at that entry's value; there is no evidence "
            "for ratios this high."
        ),
    ),
    WarningRule(
        "ACTIVATION_COMPRESSION_BEYOND_TABLE",
        lambda f, o: (
            (f.activation_compression > f.asm.activation_keys[-1]) & has_trait(o["mode_code"], "pipelined")
        ),
        lambda v: (
            f"Activation compression {v['activation_compression']:,.0f}× is beyond the quality table's last entry "
            f"({v['asm'].activation_keys[-1]:,.0f}×): quality is held at that entry's value (validated only at 8B, "
            "MIRI Compression_Quality.md §6)."
        ),
    ),
    WarningRule(
        "MOE_FIELDS_IGNORED",
        lambda f, o: (
            ~f.moe
            & ((f.ep_mode > 0) | (~np.isnan(f.active_parameters) & (f.active_parameters != f.parameters)))
        ),
        lambda v: (
            "moe is false: active_parameters_b and expert_parallelism are ignored (a dense model is all active)."
        ),
    ),
    WarningRule(
        "REGIONAL_COMPRESSION_IGNORED",
        lambda f, o: ~np.isnan(f.regional_compression) & ~has_trait(o["mode_code"], "regional_tier"),
        lambda v: (
            f"regional_compression ({v['regional_compression']:g}×) acts on the regional tier of a hierarchy; "
            f"this {_mode(v)} run has none, so it is ignored (compression applies)."
        ),
    ),
    WarningRule(
        "FIELDS_IGNORED",
        lambda f, o: (ignored_fields(f, o["mode_code"]) != 0) | _regions_forgone(f, o["mode_code"]),
        _ignored_message,
    ),
    WarningRule(
        "FIELDS_UNUSED_WITH_GROUPS",
        lambda f, o: np.asarray(f.replaced_given) != 0,
        _replaced_message,
    ),
    WarningRule(
        "ACTIVATION_COMPRESSION_IGNORED",
        lambda f, o: (f.activation_compression != 1.0) & ~has_trait(o["mode_code"], "pipelined"),
        lambda v: (
            f"activation_compression ({v['activation_compression']:g}×) acts on the activations pipeline "
            f"stages send over the WAN; this {_mode(v)} run keeps each replica on one node, so it is ignored."
        ),
    ),
    WarningRule(
        "STRAGGLER_CURVE_IGNORED",
        lambda f, o: (
            (np.asarray(f.straggler_curve) == CURVES.index("simulated"))
            & (np.asarray(f.straggler) == STRATEGIES.index("relay"))
        ),
        lambda v: (
            "straggler_curve simulated has no curve for the relay strategy (the Monte Carlo has no rule to "
            "simulate a relay; physics/straggler_mc.py), so relay's closed form applies."
        ),
    ),
    WarningRule(
        "INT8_CODEC_RATIO",
        lambda f, o: (
            (np.asarray(f.codec) == CODECS.index("int8"))
            & (np.abs(f.compression - _int8_ratio(f.precision, f.asm)) > 1e-9 * f.compression)
        ),
        lambda v: (
            f"codec int8 sends 8 bits a value, {_int8_ratio_text(v)}, but compression is "
            f"{v['compression']:g}×: the wire carries the compression's bytes and the codec's compute is "
            "int8's. For int8 set compression to that ratio; higher ratios are top-k's (codec topk)."
        ),
    ),
    WarningRule(
        "TOPK_CODEC_RATIO",
        lambda f, o: (np.asarray(f.codec) == CODECS.index("topk")) & (f.compression <= 1.0),
        lambda v: (
            f"codec topk at compression {v['compression']:g}× keeps every value: no sparsification, yet the "
            "top-k selection's compute is charged on every sync. Set the ratio top-k keeps (100 keeps 1 %), "
            "or codec none."
        ),
    ),
    WarningRule(
        "STALE_OUTER_UPDATES",
        lambda f, o: (f.outer_overlap_steps > 1) & has_trait(o["mode_code"], "diloco"),
        lambda v: (
            f"outer_overlap_steps {v['outer_overlap_steps']:g}: outer updates arriving more than one outer step "
            "late are beyond what the published overlapped-DiLoCo results measure (Streaming DiLoCo; Kale et "
            "al. 2025, eager updates: at most one step late); η's staleness factor "
            f"{v['efficiency_staleness']:.3g} (staleness_efficiency_per_outer_step per step beyond one) is an "
            "extrapolation of an engineering estimate."
        ),
    ),
    WarningRule(
        "SMALL_MODEL_FLOPS",
        lambda f, o: f.parameters < f.asm.small_model_threshold_b * 1e9,
        lambda v: (
            f"Below {v['asm'].small_model_threshold_b:g}B parameters attention FLOPs can exceed 10% of compute, so "
            "C = 6·P·D undercounts them (MIRI simulator docs §1.1)."
        ),
    ),
    WarningRule(
        "STREAMING_MEMORY",
        lambda f, o: (
            (f.streaming | (f.outer_overlap_steps > 0))
            & ~f.outer_state_on_gpu
            & has_trait(o["mode_code"], "diloco")
            & ~has_trait(o["mode_code"], "pipelined")
            & (f.memory_bytes * (1 + f.asm.streaming_memory_overhead) > f.vram_bytes)
        ),
        lambda v: (
            "Streaming DiLoCo keeps the original weights and outer-optimizer state (about "
            f"{v['asm'].streaming_memory_overhead:.0%} more memory, MIRI simulator docs §10 item 2): "
            f"{_gb(v['memory_bytes'] * (1 + v['asm'].streaming_memory_overhead) / 1e9)} exceeds the node's "
            f"{_gb(v['vram_bytes'] / 1e9)} unless that state is offloaded to CPU memory (outer_state_on_gpu: "
            "true counts it, adding pipeline stages where it does not fit)."
        ),
    ),
    WarningRule(
        "HIDDEN_SIZE_ESTIMATED",
        lambda f, o: np.isnan(f.hidden_size) & has_trait(o["mode_code"], "pipelined"),
        lambda v: (
            f"Pipeline activations use the heuristic hidden size h ≈ {v['asm'].hidden_size_coefficient:g}·√P = "
            f"{v['hidden']:,.0f} (±20%, MIRI simulator docs §3.3); set hidden_size for a known architecture."
        ),
    ),
    WarningRule(
        "PP_SPANS_REGIONS",
        lambda f, o: f.hierarchical & (f.stages > f.nodes_per_group) & has_trait(o["mode_code"], "pipelined"),
        lambda v: (
            f"Pipelines of {v['stages']:.0f} stages do not fit in regional groups of {v['nodes_per_group']:.0f} "
            "nodes, so pipeline hand-offs cross the WAN."
        ),
    ),
    WarningRule(
        "INDEX_GROUPS_SPAN_REGIONS",
        lambda f, o: (
            (np.asarray(f.get("index_groups_spanning", 0.0)) > 0)
            & ~np.asarray(f.get("by_region", False))
            & is_mode(o["mode_code"], "hierarchical-diloco")
        ),
        lambda v: (
            f"nodes_per_group = {v['nodes_per_group']:,.0f} groups nodes in node_groups order, so "
            f"{v['index_groups_spanning']:,.0f} of the {math.floor(v['num_nodes'] / v['nodes_per_group']):,} "
            f"regional groups {'holds' if v['index_groups_spanning'] == 1 else 'hold'} nodes of two or more "
            "regions (a group without a region counting as a place of its own), yet every regional sync is "
            f"charged at the regional links ({v['regional_bps'] / 1e6:,.0f} Mbit/s, "
            f"{v['regional_latency_s'] * 1e3:,.4g} ms). Regions become the regional groups where every node "
            "group has one, some region has two nodes or more and nodes_per_group is left out; else order "
            "node_groups and choose nodes_per_group so that no group crosses a region, or set hierarchical: false."
        ),
    ),
    WarningRule(
        "MFU_AUTO_OPTIMISTIC",
        lambda f, o: np.asarray(f.get("mfu_auto_doubted", False), dtype=bool),
        lambda v: (
            f"mfu: auto planned MFU {v['mfu']:.3f} from a layout whose MFU the datacenter model doubts: above "
            "the best measured in dtsim's records for its GPUs and parallelism (mfu_source says which); treat "
            "it as optimistic."
        ),
    ),
    WarningRule(
        "SINGLE_NODE",
        lambda f, o: (f.num_nodes == 1) & is_mode(o["mode_code"], "flat-diloco"),
        lambda v: (
            "One node has no data-parallel peers: its sync and the η_H penalty are those of DiLoCo with a single "
            "worker. Set inner_steps to 1 to model plain synchronous training."
        ),
    ),
    WarningRule(
        "IDLE_NODES",
        lambda f, o: o["idle_nodes"] > 0,
        lambda v: (
            f"{v['idle_nodes']:,.0f} nodes are idle: the nodes do not divide into pipelines of {v['stages']:.0f} "
            "stages."
        ),
    ),
    WarningRule(
        "COST_UNKNOWN",
        lambda f, o: np.isnan(o["cost_usd"]),
        lambda v: "No gpu is set, so GPU count, GPU-hours, cost and energy are not computed.",
    ),
    # last: a new code keeps every earlier code's bit (warning_bits in saved sweep tables)
    WarningRule("TCP_LIMITED", lambda f, o: _tcp_limited(f), _tcp_message),
)
CODES = tuple(rule.code for rule in RULES)


def codes_of(bits) -> list[list[str]]:
    """Each row's warning codes from its bit mask (warning_bits), as simulate names them."""
    return [[c for k, c in enumerate(CODES) if int(b) >> k & 1] for b in bits]


_BIT_VALUES = np.left_shift(np.int64(1), np.arange(len(RULES), dtype=np.int64))


def _auto_h_beyond_run(v) -> str:
    """What the LESS_THAN_ONE_OUTER_STEP warning adds when inner_steps was chosen by the model ('auto',
    'auto-quality'): the H it chose is beyond the run, so no H hides this sync within it."""
    from dtsim.models.decentralized.inner_steps import AUTO, AUTO_QUALITY

    chosen = {AUTO: "auto", AUTO_QUALITY: "auto-quality"}.get(float(np.asarray(v.get("inner_steps_in", 0.0))))
    if chosen is None or not np.isfinite(v.get("inner_steps_used", np.nan)):
        return ""
    return (
        f" inner_steps {chosen} chose H = {v['inner_steps_used']:,.0f}, more inner steps than the run has: "
        "at these links no H within the run pays for its sync; give a number of inner steps (the run then "
        "waits on its syncs) or more bandwidth."
    )


def evaluate_warnings(f, out: dict) -> np.ndarray:
    """One int64 bit mask per row; bit k set when RULES[k] applies. A condition may be shared by
    every row (shape ())."""
    shape = out["mode_code"].shape
    with np.errstate(invalid="ignore"):
        conditions = [rule.condition(f, out) for rule in RULES]
    if out["mode_code"].size <= 64:
        # A few rows (a single run): one table and one product cost less than a NumPy call per rule.
        # The bits are distinct powers of two, so their sum is their bitwise OR.
        table = np.empty((len(RULES), *shape), dtype=bool)
        for k, cond in enumerate(conditions):
            table[k] = cond
        return np.tensordot(_BIT_VALUES, table, axes=(0, 0))
    bits = np.zeros(shape, dtype=np.int64)
    for k, cond in enumerate(conditions):
        bits |= np.where(cond, _BIT_VALUES[k], np.int64(0))
    return bits


def decode(bits: int, values: dict) -> list[dict[str, str]]:
    """The warnings of one row as [{code, message}]."""
    return [
        {"code": rule.code, "message": rule.message(values)} for k, rule in enumerate(RULES) if bits >> k & 1
    ]
