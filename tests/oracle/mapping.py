"""Translate between the original web simulator's inputs/outputs and dtsim's (test-only code)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.oracle.reference_model import original_mode_id

REFERENCE = (
    Path(__file__).resolve().parents[1] / "data"
)  # vendored copy of ../shared/reference (tests/data/README.md)
MIRI = REFERENCE / "miri"


def load_cases() -> list[tuple[str, dict, dict]]:
    """(name, inputs, outputs) for the 20 named vectors and the 600 random cases."""
    vectors = json.loads((MIRI / "webapp_vectors.json").read_text())["vectors"]
    random = json.loads((MIRI / "webapp_random_cases.json").read_text())["cases"]
    cases = [(v["name"].split()[0], v["inputs"], v["outputs"]) for v in vectors]
    cases += [(f"R{k:03d}", c["inputs"], c["outputs"]) for k, c in enumerate(random)]
    return cases


def to_scenario_fields(i: dict) -> dict:
    """The original's inputs as dtsim scenario fields, with the original's options switched on:
    the fixed (not H-scaled) replica penalty, the 'expected' compression table, backward pipeline
    traffic counted, the web app's HFU/MFU ratio of 0.8 (dtsim's default too)."""
    f = {
        "parameters_b": i["parameters"] / 1e9,
        "tokens_t": i["tokens"] / 1e12,
        "moe": i["isMoE"],
        "moe_layers": i["moeLayers"],
        "expert_parallelism": i["expertParallelism"],
        "num_nodes": i["numNodes"],
        "pflops_per_node": i["pflopsPerNode"],
        "vram_per_node_gb": i["vramPerNode"],
        "bandwidth_up_mbps": i["bandwidthUpMbps"],
        "bandwidth_down_mbps": i["bandwidthDownMbps"],
        "latency_ms": i["latencyMs"],
        "mfu": i["mfu"],
        "hierarchical": i["useHierarchy"],
        "nodes_per_group": i["nodesPerGroup"],
        "regional_bandwidth_mbps": i["regionalBandwidth"],
        "regional_latency_ms": i["regionalLatency"],
        "regional_steps": i["regionalSteps"],
        "inner_steps": i["innerSteps"],
        "compression": i["compression"],
        "error_feedback": i["errorFeedback"],
        "local_batch_tokens": i["localBatch"],
        "activation_compression": i["ppCompression"],
        "micro_batches": i["microBatches"],
        "precision": i["precision"],
        "streaming": i["streamingEnabled"],
        "straggler_strategy": i["stragglerStrategy"],
        "hardware_growth": f"{i['hwGrowth']!r} OOM/yr",
        "software_growth": f"{i['swGrowth']!r} OOM/yr",
        "investment_growth": f"{i['investGrowth']!r} OOM/yr",
        "replica_penalty": "fixed",
        "compression_scenario": "expected",
        "pipeline_backward": True,
    }
    if i["isMoE"]:
        f["active_parameters_b"] = i["activeParams"] / 1e9
    if i["manualMaxDays"]:
        f["max_run_days"] = i["manualMaxDaysValue"]
    return f


def dtsim_outputs(r) -> dict:
    """A dtsim Result as the original's output keys (None → NaN)."""
    nan = float("nan")

    def n(x):
        return nan if x is None else x

    d = r.details
    pp_wan = r.mode == "pp-over-wan"
    eff_days = n(r.effective_days)
    return {
        "bytesPerParam": d["bytes_per_param"],
        "bytesPerValue": d["bytes_per_value"],
        "expertParams": d["expert_parameters"],
        "sharedParams": d["shared_parameters"],
        "epDegree": d["ep_degree"],
        "perNodeParams": d["parameters_held"],
        "memoryBytes": d["memory_bytes"],
        "isSharded": r.pp_stages > 1,
        "ppStages": r.pp_stages,
        "effectiveNodes": d["n_eff"],
        "computeParams": d["compute_parameters"],
        "flopsPerStep": d["step_flop"],
        "nodeComputePower": d["node_sustained_flop_s"],
        "epLatencySec": d["ep_latency_s"],
        "computeTimePerStep": r.compute_step_s,
        "effectiveH": n(d["h_eff"]),
        "baseAlpha": d["alpha"],
        "strategyPenalty": d["strategy_penalty"],
        "etaH": n(r.efficiency_h),
        "etaCompression": r.efficiency_compression,
        "totalTimeSeconds": n(d["total_s"]),
        "mode": r.mode,
        "globalCommSec": n(d["pipeline_comm_s"] if pp_wan else r.sync_s),
        "regionalCommSec": n(r.regional_sync_s),
        "computeBlockSec": n(d["compute_block_s"]),
        "latencyPenaltySec": n(d["pipeline_latency_s"])
        if pp_wan
        else (0.0 if r.mode != "infeasible" else nan),
        "numPPGroupsForReplica": r.pp_groups,
        "replicaCount": n(d["replicas"]),
        "replicaLossMult": n(r.replica_loss_multiplier),
        "algorithmicEfficiency": n(r.efficiency_h) * r.efficiency_compression,
        "etaActivation": r.efficiency_activation,
        "totalEfficiency": n(r.efficiency),
        "totalTimeDays": n(r.wall_clock_days),
        "effectiveDays": eff_days,
        "effectiveSeconds": eff_days * 86400,
        "theoreticalFlops": r.model_flop,
        "hardwareMaxFlops": n(r.peak_flop_capacity),
        "globalMfu": n(r.global_mfu),
        "globalHfu": n(r.global_hfu),
        "chi": n(r.chi),
        "cQuality": n(r.quality_adjusted_flop),
        "combinedGrowth": d["growth_oom"],
        "computedMaxDays": d["computed_max_days"],
        "maxDays": r.max_days,
        "maxParamsFP16": r.max_parameters_b["fp16"] * 1e9,
        "maxParamsFP8": r.max_parameters_b["fp8"] * 1e9,
        "maxParamsFP4": r.max_parameters_b["fp4"] * 1e9,
        "numPPGroups": r.pp_groups,
        "ppGroupMode": r.mode == "pp-group-diloco",
        "epReducedMemory": d["ep_saved_memory"],
    }


def original_outputs(o: dict) -> dict:
    out = dict(o)
    out["mode"] = original_mode_id(o["mode"])
    return out


def same(a, b, rel=1e-9) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or isinstance(b, str):
        return a == b
    a, b = float(a), float(b)
    if a != a or b != b:
        return a != a and b != b
    if a == b:
        return True
    return abs(a - b) <= rel * max(abs(a), abs(b))
