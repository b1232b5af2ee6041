"""Predict a measured-run record with the model that fits it, in the record's own metric and convention.

- datacenter: `dtsim.models.datacenter.step.step` (GEMM model, α-β collectives, layouts); TFLOP/s per GPU, MFU or
  HFU counted the way the record's source counts them (Megatron 2021, PaLM model FLOPs, hardware FLOPs,
  llm-foundry's MPT formula);
- collective: NCCL's ring on the datacenter model's cluster network (`models.network.ClusterNetwork`);
- gemm: the GEMM model's best rate over the benchmark's sizes;
- testbed: the thesis's ring all-reduce with an α-β-γ cost (Thakur, Rabenseifner & Gropp 2005):
  T = 2(N−1)·(α + d) + 2(N−1)/N·S·(1/r_host + 1/r_link), r_host = r_core · host_cores / N the
  host-limited rate of a rank (`physics.hostbound`: the calibrated rate per core times the cores the
  rank has), r_link a `tc` cap on one ring link (a ring runs at its slowest link), d a delay injected on it;
- decentralized: `dtsim.simulate` (the decentralized model, MIRI simulator docs), with each node's link rate
  capped at the calibrated TCP window / RTT where the transport is one TCP stream per peer; a duration
  record compares the run's stated days with the model's wall_clock_days.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.physics import collectives as coll
from dtsim.physics import wan


def _constant(section: str, key: str) -> float | None:
    entry = (catalog.calibration_document().get(section) or {}).get(key)
    if isinstance(entry, dict):
        entry = entry.get("value")
    return None if entry is None else float(entry)


# --- datacenter -----------------------------------------------------------------------------------------


def datacenter_workload(rec):
    from dtsim.models.datacenter.workload import Cluster, Layout, Workload, build, check_layout
    from dtsim.physics.transformer import get_architecture

    arch = get_architecture(rec.model)
    cluster = build(Cluster, dict(rec.cluster), "cluster.")
    layout = build(Layout, dict(rec.layout), "layout.")
    workload = Workload(
        model=arch, seq_len=rec.seq_len, precision=rec.precision, cluster=cluster, layout=layout
    )
    check_layout(arch, layout, cluster, rec.seq_len)
    return workload


def record_gpu(rec) -> str:
    """The GPU id a datacenter record runs on: its cluster's `gpu`, or the one its `fabric` brings."""
    from dtsim.models.datacenter.workload import Cluster, build

    return build(Cluster, dict(rec.cluster), "cluster.").gpu


def _convention_flop_per_step(rec, w, r) -> float:
    """The FLOPs of one step counted the way the record's source counts them."""
    from dtsim.physics.transformer import maxtext_flops_per_token, mpt_flops_per_token

    if rec.convention == "megatron2021":
        return r.megatron2021_flop_per_step
    if rec.convention == "model":
        return r.model_flop_per_step
    if rec.convention == "hardware":
        return r.hardware_flop_per_step
    if rec.convention == "maxtext":
        return maxtext_flops_per_token(w.model, w.seq_len) * _tokens_per_step(w)
    # mpt: llm-foundry counts 3 (MFU) or 4 (HFU, with activation checkpointing) forward passes
    recompute = rec.metric == "hfu" and w.layout.recompute != "none"
    return mpt_flops_per_token(w.model, recompute, w.seq_len) * _tokens_per_step(w)


def _tokens_per_step(w) -> int:
    return w.layout.gbs * (w.seq_len or w.model.seq_len)


def _peak_flop_s(w, precision: str) -> float:
    """The dense peak of the workload's GPU at a precision (the MFU denominator `step` uses)."""
    gpu = catalog.gpus()[w.cluster.gpu]
    return (gpu.peak_tflops(precision) or gpu.fp16_tflops) * 1e12


def predict_datacenter(rec) -> tuple[float, dict[str, Any]]:
    from dtsim.models.datacenter.step import PRECISION_BITS, step

    w = datacenter_workload(rec)
    r = step(w)
    n, t = r.n_gpus, r.step_time_s
    if rec.metric == "tokens_per_s_per_gpu":
        value = r.tokens_per_s / n
    elif rec.metric == "step_time_s":
        value = t
    else:
        per_gpu = _convention_flop_per_step(rec, w, r) / (t * n)
        value = (
            per_gpu / 1e12
            if rec.metric == "tflops_per_gpu"
            else 100.0 * per_gpu / _peak_flop_s(w, rec.peak_precision or rec.precision)
        )
    bits = PRECISION_BITS[w.precision]
    return value, {
        "step_time_s": t,
        "precision_bits": bits,
        "breakdown_s": r.breakdown_s,
        "fits": r.fits,  # every measured run ran, so the right verdict is True
        "memory_per_gpu_gb": r.memory_per_gpu_gb,
        "usable_memory_gb": r.usable_memory_gb,
    }


def measured_model_mfu(rec) -> float:
    """A datacenter record's measurement as model-FLOP utilization (`step`'s MFU: model FLOPs without
    recomputation over the dense peak at the run's precision): the measured rate in the record's own
    FLOP convention, converted by the exact FLOP counts of its workload (nothing predicted)."""
    from dtsim.models.datacenter.step import step

    w = datacenter_workload(rec)
    r = step(w)
    if rec.metric == "tokens_per_s_per_gpu":  # model FLOPs of the measured token rate
        return rec.measured * r.model_flop_per_step / _tokens_per_step(w) / _peak_flop_s(w, w.precision)
    if rec.metric == "step_time_s":  # the step's model FLOPs over the measured time, per GPU
        return r.model_flop_per_step / (rec.measured * r.n_gpus) / _peak_flop_s(w, w.precision)
    if rec.metric == "tflops_per_gpu":
        per_gpu = rec.measured * 1e12
    else:
        per_gpu = rec.measured / 100.0 * _peak_flop_s(w, rec.peak_precision or rec.precision)
    per_gpu_model = per_gpu * r.model_flop_per_step / _convention_flop_per_step(rec, w, r)
    return per_gpu_model / _peak_flop_s(w, w.precision)


# --- collectives and GEMMs ------------------------------------------------------------------------------


def _collective_setup(rec):
    from dtsim.models.network import cluster_network

    fabrics = catalog.fabrics()
    intra = fabrics[rec.intra_fabric] if rec.intra_fabric else None
    inter = fabrics[rec.inter_fabric] if rec.inter_fabric else None
    nodes = math.ceil(rec.ranks / rec.gpus_per_node)
    if nodes > 1 and inter is None:
        raise ScenarioError([("inter_fabric", None, "required when the ranks span nodes")])
    if min(rec.ranks, rec.gpus_per_node) > 1 and intra is None:
        raise ScenarioError([("intra_fabric", None, "required when a node holds several ranks")])
    nics = rec.nics_per_node if rec.nics_per_node is not None else rec.gpus_per_node
    if rec.algorithm == "nvls" and (nodes > 1 or intra is None or intra.nvls_efficiency is None):
        raise ScenarioError(
            [
                (
                    "algorithm",
                    rec.algorithm,
                    "NVLS needs one node whose intra_fabric reduces in the switch (nvlink4, nvlink5)",
                )
            ]
        )
    return cluster_network(rec.gpus_per_node, intra, inter, nics, n_gpus=rec.ranks)


def predict_collective(rec) -> tuple[float, dict[str, Any]]:
    """The record's all-reduce on the algorithm it ran: NCCL's ring (α-β over the ring's bus bandwidth),
    or NVLS (physics.collectives.nvls_allreduce_time at the switch-reduced algorithm bandwidth)."""
    net = _collective_setup(rec)
    if rec.algorithm == "nvls":
        busbw, alpha = net.nvls_bw, net.nvls_alpha
        t = float(coll.nvls_allreduce_time(rec.ranks, rec.size_bytes, busbw, alpha, net.nvlink_alpha))
    else:
        busbw, alpha = (float(x) for x in net.ring(rec.ranks))
        t = float(coll.nccl_ring_time(rec.ranks, rec.size_bytes, busbw, alpha, 2.0))
    if rec.metric == "busbw_gb_s":
        # nccl-tests' bus bandwidth: algbw·2(n−1)/n, the bytes each rank sends per second
        value = float(coll.allreduce_bytes_per_rank(rec.ranks, rec.size_bytes)) / t / 1e9
    elif rec.metric == "time_us":
        value = t * 1e6
    else:
        value = t * 1e3
    return value, {"time_s": t, "busbw_link_gb_s": busbw / 1e9, "alpha_s": alpha}


def predict_gemm(rec) -> tuple[float, dict[str, Any]]:
    from dtsim.models.datacenter.step import PRECISION_BITS, calibrated_derate
    from dtsim.physics.gemm import gemm_time

    micro = catalog.gpus()[rec.gpu].micro
    derate = calibrated_derate(micro.generation)
    d = np.arange(rec.min_size, rec.max_size + 1, rec.size_step, dtype=float)
    rates = 2.0 * d**3 / gemm_time(d, d, d, micro, PRECISION_BITS[rec.precision], False, derate)
    best = int(np.argmax(rates))
    return float(rates[best]) / 1e12, {
        "best_size": int(d[best]),
        "clock_derate": derate or micro.clock_derate,
    }


# --- the thesis testbed ----------------------------------------------------------------------------------


def thesis_gradient_bytes(rec) -> float:
    from dtsim.physics.transformer import count_params, get_architecture

    return count_params(get_architecture(rec.model)).total * rec.bytes_per_param


def testbed_cores_per_rank(rec) -> float:
    """Cores each rank of a testbed record has: the host's cores shared by its ranks (Camilli 2025
    §4.1.1: 4 vCPUs; `physics.hostbound.cores_per_rank`)."""
    from dtsim.physics.hostbound import cores_per_rank

    if rec.host_cores is None:
        raise ScenarioError([("host_cores", None, "required for metric allreduce_s")])
    return float(cores_per_rank(rec.host_cores, rec.ranks))


def ring_allreduce_abg_s(rec, host_rate_per_core_bit_s: float) -> float:
    """T = 2(N−1)·d + 2(N−1)/N·S·(1/r_host + 1/r_link), r_host = r_core · host_cores / N (module docstring;
    Thakur, Rabenseifner & Gropp 2005 for the ring, `physics.hostbound` for r_host), with a delayed link
    held to one TCP window per round trip."""
    from dtsim.assumptions import Assumptions
    from dtsim.physics.hostbound import rank_host_rate

    n, size = rec.ranks, thesis_gradient_bytes(rec)
    host_bit_s = float(rank_host_rate(host_rate_per_core_bit_s, testbed_cores_per_rank(rec)))
    per_byte = 8.0 / host_bit_s + (8.0 / (rec.link_cap_mbps * 1e6) if rec.link_cap_mbps else 0.0)
    window = Assumptions({}).linux_tcp_window_bytes
    rtt = rec.added_delay_ms / 1e3  # netem delays one direction; the ACKs come back undelayed
    if rtt > 0:  # a TCP stream cannot outrun its window over the delayed link
        per_byte = max(per_byte, 8.0 / host_bit_s + 8.0 / float(wan.window_limit_bps(rtt, window)))
    return float(coll.ring_allreduce_time(n, size, 1.0 / per_byte, rec.added_delay_ms / 1e3))


def predict_testbed(rec) -> tuple[float, dict[str, Any]]:
    size = thesis_gradient_bytes(rec)
    n = rec.ranks
    if rec.metric == "bytes_per_event_mb":
        return float(coll.ring_event_bytes(n, size)) / 1e6, {"gradient_bytes": size}
    if rec.metric == "bytes_per_flow_mb":
        return float(coll.allreduce_bytes_per_rank(n, size)) / 1e6, {"gradient_bytes": size}
    per_core = _constant("testbed", "host_rate_per_core_bit_s")
    if per_core is None:
        raise ScenarioError(
            [("calibration.testbed.host_rate_per_core_bit_s", None, "not calibrated: run dtsim calibrate")]
        )
    cores = testbed_cores_per_rank(rec)
    return ring_allreduce_abg_s(rec, per_core), {
        "gradient_bytes": size,
        "host_rate_per_core_bit_s": per_core,
        "cores_per_rank": cores,
        "host_rate_bit_s": per_core * cores,
    }


# --- decentralized runs ----------------------------------------------------------------------------------


def decentralized_inputs(rec, window_bytes: float | None = None) -> dict[str, Any]:
    """The dtsim scenario for a decentralized record, with the link rates and compute it implies."""
    from dtsim.physics.transformer import get_architecture, model_flops_per_token
    from dtsim.schema.scenario import make_scenario

    sc = dict(rec.scenario)
    net = dict(rec.network)
    allowed = {"rtt_ms", "up_mbps", "down_mbps", "window_limited"}
    extra = set(net) - allowed
    if extra:
        raise ScenarioError(
            [(f"network.{sorted(extra)[0]}", None, f"unknown; allowed: {', '.join(sorted(allowed))}")]
        )
    rtt = float(net.get("rtt_ms", 0.0))
    up = net.get("up_mbps")
    down = net.get("down_mbps")
    if net.get("window_limited"):
        if window_bytes is None:
            window_bytes = _constant("wan", "tcp_window_bytes")
        if window_bytes is None:
            raise ScenarioError(
                [("calibration.wan.tcp_window_bytes", None, "not calibrated: run dtsim calibrate")]
            )
        if rtt <= 0:
            raise ScenarioError([("network.rtt_ms", rtt, "must be > 0 for a window-limited link")])
        cap = float(wan.window_limit_bps(rtt / 1e3, window_bytes)) / 1e6  # one stream: a window per RTT
        up = cap if up is None else min(float(up), cap)
        down = cap if down is None else min(float(down), cap)
    if up is None or down is None:
        raise ScenarioError([("network.up_mbps", up, "give up_mbps and down_mbps, or window_limited: true")])
    sc.update(bandwidth_up_mbps=float(up), bandwidth_down_mbps=float(down), latency_ms=rtt)
    comp = dict(rec.compute)
    params = float(sc.get("parameters_b", 0.0)) * 1e9
    if "base_mfu" in comp:
        arch = get_architecture(comp["architecture"])
        ratio = model_flops_per_token(arch) / (6.0 * params)
        sc["mfu"] = float(comp["base_mfu"]) / ratio
    elif "round_s" in comp:
        peak = _node_peak_flop_s(sc)
        try:  # the schema's defaults for what the record leaves out (a user's record may)
            given = make_scenario(sc)
        except ScenarioError as exc:
            raise ScenarioError([(f"scenario.{f}", v, m) for f, v, m in exc.problems]) from None
        if not isinstance(given.inner_steps, int):
            raise ScenarioError(
                [("scenario.inner_steps", given.inner_steps, "a whole number with compute.round_s")]
            )
        per_round = 6.0 * params * float(given.local_batch_tokens) * float(given.inner_steps)
        sc["mfu"] = per_round / (peak * float(comp["round_s"]))
    else:
        raise ScenarioError([("compute", comp, "give {base_mfu, architecture} or {round_s}")])
    try:
        make_scenario(sc)  # field-named errors for the scenario itself
    except ScenarioError as exc:
        raise ScenarioError([(f"scenario.{f}", v, m) for f, v, m in exc.problems]) from None
    return sc


def _node_peak_flop_s(sc: dict[str, Any]) -> float:
    """Dense peak of the scenario's node preset (the same number the decentralized model divides by)."""
    preset = catalog.nodes().get(sc.get("node", ""))
    if preset is None:
        raise ScenarioError(
            [("scenario.node", sc.get("node"), "a node preset is required with compute.round_s")]
        )
    return preset.pflops * 1e15


def predict_decentralized(rec) -> tuple[float, dict[str, Any]]:
    import dtsim

    sc = decentralized_inputs(rec)
    r = dtsim.simulate(sc)
    h = float(r.inner_steps_used)
    compute = r.compute_step_s * h
    util = compute / r.outer_step_s
    details = {
        "mode": r.mode,
        "compute_per_round_s": compute,
        "sync_s": r.sync_s,
        "outer_step_s": r.outer_step_s,
        "bandwidth_up_mbps": sc["bandwidth_up_mbps"],
        "bandwidth_down_mbps": sc["bandwidth_down_mbps"],
    }
    if rec.metric == "wall_clock_days":
        # the whole run: rounds × (H inner steps + the sync), the model's wall-clock time to process the
        # tokens (MIRI simulator docs §3.1 "Total Training Time"); not the η-adjusted effective_days (§4.1)
        details.update(
            rounds=float(r.wall_clock_days * 86400.0 / r.outer_step_s),
            effective_days=float(r.effective_days),
            compute_days=float(r.wall_clock_days * util),
        )
        return float(r.wall_clock_days), details
    if rec.metric == "comm_per_round_s":
        return float(r.outer_step_s - compute), details
    if rec.metric == "compute_utilization":
        return 100.0 * util, details
    base = float(rec.compute["base_mfu"]) if "base_mfu" in rec.compute else sc["mfu"]
    return 100.0 * base * util, details


PREDICTORS = {
    "datacenter": predict_datacenter,
    "collective": predict_collective,
    "gemm": predict_gemm,
    "testbed": predict_testbed,
    "decentralized": predict_decentralized,
}


def predict(rec) -> tuple[float, dict[str, Any]]:
    return PREDICTORS[rec.kind](rec)
