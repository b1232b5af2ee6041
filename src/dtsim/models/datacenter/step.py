"""The datacenter model: step time, throughput, MFU/HFU and memory of a parallel layout.

Given a transformer architecture, a cluster (GPU, nodes × GPUs per node, fabrics) and a layout
(DP, TP, PP, virtual stages, CP, SP, EP, micro-batch, global batch, ZeRO stage, recomputation,
pipeline schedule), predict — from the GEMM model of Erdil & Schneider-Joseph 2024 §8.1.1, a memory-bandwidth roofline for
everything else, α-β collectives and the pipeline schedules — the time of one iteration and where it
goes. `evaluate` is vectorized over layouts (the planner evaluates thousands at once); `step` runs one.

Placement follows Megatron-LM's rank order (tensor innermost, then context, data, pipeline): tensor
groups stay inside a node when they fit; data-parallel groups span nodes hierarchically; pipeline
neighbours sit tp·cp·dp ranks apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.catalog.calibration_file import calibration_in_use
from dtsim.errors import ScenarioError
from dtsim.models.datacenter.model_error import packaged as model_error_packaged
from dtsim.models.datacenter.model_error import step_time_factors
from dtsim.models.datacenter.model_error import summary as model_error_summary
from dtsim.models.datacenter.plausibility import HFU_DOUBT, MFU_DOUBT, LayoutWarning, mfu_warning, warn

# The inputs live in workload.py; they are re-exported here so that `from dtsim.models.datacenter.step
# import Cluster, Layout, Workload, step` reads the whole model from one place.
from dtsim.models.datacenter.workload import (
    ATTENTION_KERNELS,
    PRECISION_BITS,
    RECOMPUTES,
    SCHEDULES,
    Cluster,
    Layout,
    Workload,
    check_layout,
    layout_arrays,
    moe_dropped_fraction,
    p2p_overlap_applies,
)
from dtsim.models.datacenter.workload import moe_load as load_of_moe  # `moe_load` names the array below
from dtsim.models.network import ClusterNetwork, cluster_network
from dtsim.physics import collectives as coll
from dtsim.physics import cost
from dtsim.physics.dataparallel import exposed_bucketed_allreduce
from dtsim.physics.gemm import gemm_time, memory_bound_time
from dtsim.physics.transformer import (
    Architecture,
    activation_bytes_per_layer,
    at_sequence,
    attention_params,
    count_params,
    ffn_params,
    hardware_flops_per_token,
    megatron2021_flops_per_iteration,
    model_flops_per_token,
)

__all__ = [
    "BREAKDOWN",
    "PRECISION_BITS",
    "RECOMPUTES",
    "SCHEDULES",
    "Cluster",
    "Hardware",
    "Layout",
    "RunTotals",
    "StepResult",
    "Workload",
    "calibrated_derate",
    "check_layout",
    "evaluate",
    "layout_arrays",
    "resolve_hardware",
    "run_totals",
    "step",
]

# evaluate's memory_per_gpu_gb by part (StepResult.memory_breakdown_gb drops the memory_ and _gb)
MEMORY_PARTS = tuple(
    f"memory_{k}_gb"
    for k in (
        "weights",
        "gradients",
        "optimizer",
        "zero3_unit_buffers",
        "activations",
        "logits",
        "framework_overhead",
    )
)
BREAKDOWN = (
    "forward",
    "backward",
    "recompute",
    "bubble",
    "tp_comm",
    "pp_comm",
    "dp_comm_exposed",
    "overlap_interference",
    "optimizer",
)


@dataclass(frozen=True)
class Hardware:
    micro: Any
    clock_derate: float  # sustained-clock derate in use (calibrated for the generation, else catalog)
    peak_flop_s: float  # datasheet dense peak at the precision (MFU denominator)
    memory_bytes: float
    network: ClusterNetwork  # every collective's bandwidth and latency (models/network.py)
    n_gpus: int


def calibrated_derate(generation: str) -> float | None:
    """The sustained-clock derate fitted for a GPU generation (catalog/calibration.yaml), if any."""
    entry = catalog.calibration().get(generation)
    return None if entry is None else float(entry["clock_derate"])


def has_datapath(gpu: catalog.GPU, precision: str) -> bool:
    """Whether the datasheet gives the chip a rate at `precision` and its micro constants time GEMMs at
    that width (A100 and V100 have no FP8; TPUs none modelled: v6e's 1,836 figure is an INT8 rate)."""
    m, bits = gpu.micro, PRECISION_BITS[precision]
    rates = m.peak_tflops if m.systolic else m.flop_per_clock_per_thread
    return gpu.peak_tflops(precision) is not None and bits in rates


def resolve_hardware(
    cluster: Cluster, precision: str, calibrated: bool = True, asm: Assumptions | None = None
) -> Hardware:
    gpu = catalog.gpus()[cluster.gpu]
    m = gpu.micro
    fabrics = catalog.fabrics()
    net = cluster.network_fields()
    peak = gpu.peak_tflops(precision) or gpu.fp16_tflops
    allowed = [p for p in PRECISION_BITS if has_datapath(gpu, p)]
    if precision not in allowed:
        raise ScenarioError(
            [
                (
                    "precision",
                    precision,
                    f"{cluster.gpu} has no {precision} datapath; allowed: {', '.join(allowed)}",
                )
            ]
        )
    derate = calibrated_derate(m.generation) if calibrated else None
    network = cluster_network(
        cluster.gpus_per_node,
        fabrics[net["nvlink"]],
        fabrics[net["nic"]],
        net["nics_per_node"],
        nvlink_gbps=net["nvlink_gbps"],
        nic_gbps=net["nic_gbps"],
        nvlink_domain=net["nvlink_domain"],
        oversubscription=net["oversubscription"],
        leaf_nodes=(asm or Assumptions({})).leaf_switch_nodes,
        n_gpus=cluster.n_gpus,
        nvls=net["nvls"],
        tree_factor=(asm or Assumptions({})).nccl_tree_bandwidth_factor,
        torus=net["torus"],
    )
    return Hardware(
        micro=m,
        clock_derate=m.clock_derate if derate is None else derate,
        peak_flop_s=peak * 1e12,
        memory_bytes=gpu.memory_bytes,
        network=network,
        n_gpus=cluster.n_gpus,
    )


def _layer_gemms(a: Architecture, tp, tokens, moe_layer: bool, ep, load=1.0):
    """[(d1, d2, b, count)] for the weight GEMMs of one layer on one GPU, forward pass. `load`: routed
    tokens on this (the busiest) expert-parallel rank over the mean (moe_load)."""
    h = a.hidden
    out = []
    if a.attention == "mla" and a.mla is not None:
        m = a.mla
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        out += [
            (m.q_lora_rank, h, tokens, 1.0),
            (a.heads * qk / tp, m.q_lora_rank, tokens, 1.0),
            (m.kv_lora_rank + m.qk_rope_head_dim, h, tokens, 1.0),
            (a.heads * (m.qk_nope_head_dim + m.v_head_dim) / tp, m.kv_lora_rank, tokens, 1.0),
            (h, a.heads * m.v_head_dim / tp, tokens, 1.0),
        ]
    else:
        out += [
            ((a.heads + 2 * a.n_kv) * a.d_head / tp, h, tokens, 1.0),
            (h, a.heads * a.d_head / tp, tokens, 1.0),
        ]
    up = a.ffn_matrices - 1  # 1 (GeLU) or 2 (SwiGLU gate and up) input projections
    if moe_layer and a.moe is not None:
        e_ffn = a.moe.expert_ffn or a.ffn_size
        local_experts = a.moe.experts / ep
        # tokens each local expert receives: the mean, times the busiest rank's load
        routed_tokens = tokens * ep * a.moe.top_k / a.moe.experts * load
        out += [
            (a.moe.experts, h, tokens, 1.0),  # router
            (up * e_ffn / tp, h, routed_tokens, local_experts),
            (h, e_ffn / tp, routed_tokens, local_experts),
        ]
        if a.moe.shared_experts:
            s_ffn = e_ffn * a.moe.shared_experts
            out += [(up * s_ffn / tp, h, tokens, 1.0), (h, s_ffn / tp, tokens, 1.0)]
    else:
        out += [(up * a.ffn_size / tp, h, tokens, 1.0), (h, a.ffn_size / tp, tokens, 1.0)]
    return out


def _gemm_set_time(gemms, micro, bits, derate):
    # Every GEMM of the set, forward and weight-gradient, in one vectorized call: shapes are stacked on
    # a leading GEMM axis and the weight-gradient flag on a second one (element-wise, so each time is
    # what its own call would give). The derate is one number for the whole set: an array of derates
    # would broadcast against the stacked axes, not the layouts.
    if np.ndim(derate) != 0:
        raise ValueError(f"clock_derate must be one number, got an array of shape {np.shape(derate)}")
    shapes = np.broadcast_arrays(*(np.asarray(x, dtype=float) for g in gemms for x in g[:3]))
    d1, d2, b = (np.stack(shapes[k::3]) for k in range(3))
    grads = np.array([False, True]).reshape((2,) + (1,) * d1.ndim)
    t = gemm_time(d1, d2, b, micro, bits, grads, derate)
    fwd = bwd = 0.0
    for j, (*_, count) in enumerate(gemms):
        f, w = t[0, j], t[1, j]
        fwd = fwd + count * f
        bwd = bwd + count * (f + w)  # input gradient (same shape) + weight gradient
    return fwd, bwd


def _fp8_cast_time(gemms, micro, asm: Assumptions):
    """Time of the casts an FP8 GEMM set needs on one GPU (memory-bound), per micro-batch: (forward
    activations, weights, backward output gradients).

    Transformer Engine quantizes each FP8 GEMM's 16-bit operands first: forward, the input
    activations (d2·b elements) and the weights (d1·d2, on every micro-batch unless the caller caches
    them with is_first_microbatch); backward, the output gradients (d1·b). Each cast reads the 16-bit tensor and writes an FP8
    copy plus a transposed FP8 copy (fused cast-transpose), because Hopper's FP8 tensor cores take
    only the TN layout and the weight-gradient GEMM needs the other orientation (NVIDIA Transformer
    Engine documentation, "Using FP8 with Transformer Engine"; cuBLASLt FP8 layout requirements)."""
    per = asm.fp8_cast_bytes_per_element
    act_bytes = weight_bytes = grad_bytes = 0.0
    for d1, d2, b, count in gemms:
        act_bytes = act_bytes + count * per * d2 * b
        weight_bytes = weight_bytes + count * per * d1 * d2
        grad_bytes = grad_bytes + count * per * d1 * b
    eff = asm.hbm_efficiency
    return tuple(memory_bound_time(x, micro, eff) for x in (act_bytes, weight_bytes, grad_bytes))


def _flash_kernel_head_dim(d, asm: Assumptions):
    """The head dimension of the FlashAttention kernel that runs head dimension d."""
    k = asm.flash_head_dim_multiple
    return np.where(
        d <= asm.flash_head_dim_round_limit, np.ceil(d / k) * k, np.maximum(asm.flash_head_dim_max, d)
    )


_FLASH_TABLES: dict[str, np.ndarray] = {}


def _flash_table(micro) -> np.ndarray:
    """The measured shares of `micro`'s FlashAttention set as one array [kernel, head dim 64/128,
    sequence length], kernels in ATTENTION_KERNELS order (one without a figure gets FlashAttention-2's);
    built once per set."""
    table = _FLASH_TABLES.get(micro.flash_attention)
    if table is None:
        curves = micro.flash_attention_efficiency
        rows = [curves.get(name, curves["flash2"]) for name in ATTENTION_KERNELS]
        table = _FLASH_TABLES[micro.flash_attention] = np.asarray([[c[64], c[128]] for c in rows])
    return table


def _flash_share(micro, kernel, seq, head_dim):
    """The share of the 16-bit tensor peak FlashAttention reaches forward + backward (causal) on this
    generation, for `kernel` (an index into ATTENTION_KERNELS) at query length `seq` and the kernel's
    head dimension: the measured curve (attention_kernels.yaml) interpolated in log(sequence length),
    linearly between head dimensions 64 and 128, flat outside the measured range. Short sequences run
    well below the long-sequence rate (per-row softmax rescaling and the masked diagonal blocks weigh
    more), so a kernel's headline best never stands for every shape."""
    table = _flash_table(micro)
    xs = np.log2(micro.flash_attention_seq)
    # one interpolation gives the fractional position among the measured lengths; the table is read there
    pos = np.interp(np.log2(np.maximum(seq, 1.0)), xs, np.arange(len(xs), dtype=float))
    j = np.minimum(np.floor(pos).astype(int), len(xs) - 2)
    t = pos - j
    at = table[kernel, :, j] * (1.0 - t)[..., None] + table[kernel, :, j + 1] * t[..., None]
    w = np.clip((head_dim - 64.0) / 64.0, 0.0, 1.0)
    return (1.0 - w) * at[..., 0] + w * at[..., 1]


def _flash_times(micro, kernel, count, sq, s, dqk, dv, causal, asm: Assumptions):
    """FlashAttention's fused kernel at the share of the 16-bit tensor peak measured for it on this
    generation (attention_kernels.yaml), in place of the GEMM model, which times each head's matmuls
    as separate GEMMs: 4·sq·s·d FLOPs per head forward (FlashAttention-2 §4.1), flash_backward_factor ×
    that backward, both skipping masked blocks. (forward, backward) seconds."""
    flop = count * 2.0 * sq * s * (dqk + dv) * causal
    rate = _flash_share(micro, kernel, sq, np.maximum(dqk, dv)) * micro.peak_flop_s(16)
    return flop / rate, asm.flash_backward_factor * flop / rate


def _attention_core(a: Architecture, tp, cp, mbs, s, flash, kernel, micro, bits, derate, asm):
    """Forward and backward time of the score and context matmuls (plus softmax traffic when not
    using FlashAttention) for one layer and one micro-batch on one GPU."""
    heads = a.heads / tp
    if a.attention == "mla" and a.mla is not None:
        dqk = a.mla.qk_nope_head_dim + a.mla.qk_rope_head_dim
        dv = a.mla.v_head_dim
    else:
        dqk = dv = a.d_head
    sq = s / cp
    count = mbs * heads
    # FlashAttention runs a head dimension on the kernel compiled for the next multiple of 32 (≤ 192;
    # above, the 256 kernel): a head dimension of 108 costs what 128 costs (FlashAttention-2 flash_api.cpp).
    dqk = np.where(flash, _flash_kernel_head_dim(dqk, asm), dqk)
    dv = np.where(flash, _flash_kernel_head_dim(dv, asm), dv)
    # Attention runs in 16-bit even in FP8 training: FlashAttention-2 has no FP8 path and Transformer
    # Engine keeps dot-product attention in BF16 unless fp8_dpa is set (its FP8 recipe's default).
    bits = np.maximum(bits, 16)
    # a causal mask lets FlashAttention skip the masked blocks; a non-causal kernel does all of them
    causal = np.where(flash, asm.causal_skip_fraction if a.causal else 1.0, 1.0)
    if micro.flash_attention_efficiency and np.all(flash):
        # every layout runs the measured kernel: the GEMM model's times below would all be discarded
        return _flash_times(micro, kernel, count, sq, s, dqk, dv, causal, asm)
    score = gemm_time(sq, dqk, s, micro, bits, False, derate)
    context = gemm_time(sq, s, dv, micro, bits, False, derate)
    lat = micro.matmul_latency_s
    core = count * (score - lat + context - lat) + 2 * lat  # one batched kernel per matmul
    fwd = core * causal
    bwd_flash = asm.flash_backward_factor * core * causal
    if micro.flash_attention_efficiency:
        flash_fwd, bwd_flash = _flash_times(micro, kernel, count, sq, s, dqk, dv, causal, asm)
        fwd = np.where(flash, flash_fwd, fwd)
    softmax = np.where(
        flash, 0.0, memory_bound_time(count * sq * s * asm.softmax_bytes_per_score, micro, asm.hbm_efficiency)
    )
    fwd = fwd + softmax
    bwd = np.where(flash, bwd_flash, 2.0 * core + 2.0 * softmax)
    return fwd, bwd


def evaluate(
    a: Architecture,
    hw: Hardware,
    lay: dict[str, Any],
    asm: Assumptions,
    seq_len: int,
    bits: int = 16,
    clock_derate=None,
) -> dict[str, np.ndarray]:
    """Step time, throughput and memory for layouts given as arrays (or scalars) in `lay`:
    dp, tp, pp, vpp, cp, ep, sp, mbs, gbs, zero (0–3), shard (HSDP shard group; 0: all of dp·cp),
    recompute (0 none, 1 selective, 2 full), schedule (index into SCHEDULES), overlap_grad, overlap_tp,
    overlap_p2p (optional: pipeline hand-offs overlapped with compute, interleaved schedule only),
    flash, attn_kernel (optional: index into ATTENTION_KERNELS, default FlashAttention-2), balanced (embedding stages), fp32_grads (gradients accumulated and reduced in FP32, else in
    the weights' width), fp32_params (optional: no sharded 16-bit weight copy under ZeRO-3), moe_cf and moe_imb (optional: expert capacity factor, 0 for dropless, and the
    dropless imbalance; workload.moe_load turns them into the busiest rank's load; default 1); optionally
    first_layers, mid_layers, last_layers (an explicit
    pipeline split, layout_arrays of a Layout with pp_layers)."""
    f = {k: np.asarray(v) for k, v in lay.items()}
    dp, tp, pp, vpp, cp, ep = (f[k].astype(float) for k in ("dp", "tp", "pp", "vpp", "cp", "ep"))
    sp = f["sp"].astype(bool)
    # no FlashAttention kernel runs on some generations (Volta): attention is materialized there
    flash = f["flash"].astype(bool) & hw.micro.flash_attention_runs
    balanced = f["balanced"].astype(bool) & (pp > 1)  # one stage holds the embedding and output either way
    kernel = f["attn_kernel"].astype(int) if "attn_kernel" in f else np.zeros(np.shape(flash), dtype=int)
    mbs, gbs = f["mbs"].astype(float), f["gbs"].astype(float)
    moe_load = load_of_moe(f["moe_cf"], f["moe_imb"], f["ep"]) if "moe_cf" in f else 1.0
    zero, recompute, schedule = f["zero"], f["recompute"], f["schedule"]
    micro = hw.micro
    if clock_derate is None:
        clock_derate = hw.clock_derate
    s = seq_len
    h = a.hidden
    tokens = mbs * s / cp
    m = gbs / (dp * mbs)  # micro-batches per pipeline per step
    vpp = np.where(schedule == 2, vpp, 1.0)

    # --- one micro-batch through one layer on one GPU --------------------------------------------------
    def layer_times(moe_layer: bool):
        gemms = _layer_gemms(a, tp, tokens, moe_layer, ep, moe_load)
        fwd, bwd = _gemm_set_time(gemms, micro, bits, clock_derate)
        if bits == 8:
            # weights are cast anew on every micro-batch only when ZeRO-3 gathers them anew; otherwise
            # once a step (Megatron-Core passes Transformer Engine is_first_microbatch)
            ca, cw, cb = _fp8_cast_time(gemms, micro, asm)
            fwd, bwd = fwd + ca + cw * np.where(zero == 3, 1.0, 1.0 / m), bwd + cb
        af, ab = _attention_core(a, tp, cp, mbs, s, flash, kernel, micro, bits, clock_derate, asm)
        ffn = (
            (a.moe.expert_ffn or a.ffn_size) * a.moe.top_k * moe_load if (moe_layer and a.moe) else a.ffn_size
        )
        replicated = 11.0 * h * np.where(sp, 1.0 / tp, 1.0)  # norms and bias-dropout-residual adds
        sharded = (a.ffn_matrices + 1.0) * ffn / tp  # activation function read/write
        elem_fwd = memory_bound_time(2.0 * tokens * (replicated + sharded), micro, asm.hbm_efficiency)
        return fwd + af + elem_fwd, bwd + ab + 2.0 * elem_fwd, af, ab

    moe_layers = a.moe_layers
    dense_layers = a.layers - moe_layers
    d_f, d_b, d_attn, d_attn_b = layer_times(False)
    if moe_layers:
        m_f, m_b, m_attn, m_attn_b = layer_times(True)
    else:
        m_f = m_b = m_attn = m_attn_b = 0.0
    mean_f = (dense_layers * d_f + moe_layers * m_f) / a.layers
    mean_b = (dense_layers * d_b + moe_layers * m_b) / a.layers
    mean_attn = (dense_layers * d_attn + moe_layers * m_attn) / a.layers

    # tensor-parallel collectives: 2 per layer forward, 2 backward (all-reduce, or reduce-scatter +
    # all-gather with sequence parallelism: the same bytes on a ring); 2 more forward when fully
    # recomputing. The all-reduce runs on the algorithm NCCL picks (NVLS inside an NVLink 4/5 domain:
    # ClusterNetwork.allreduce); reduce-scatter and all-gather move the same bytes by any algorithm.
    net = hw.network
    tp_span = net.ring_span(tp)  # cross-node TP runs on the NICs of the GPUs it holds per node
    tp_bw, tp_alpha = tp_span[:2]
    tp_size = tokens * h * 2.0
    tp_one = np.where(
        sp, coll.ring_allreduce_time(tp, tp_size, tp_bw, tp_alpha), net.allreduce(tp, tp_size, span=tp_span)
    )
    tp_f, tp_b = 2.0 * tp_one, 2.0 * tp_one
    # DualPipe runs a forward chunk of one direction beside a backward chunk of the other, each one's
    # expert-parallel all-to-all under the other's compute (deepseek-ai/DualPipe: "full overlap of
    # forward and backward computation-communication phases"): only what exceeds the pair's compute
    # is exposed, split evenly between the two (and counted as hidden communication otherwise).
    dual = schedule >= 4
    ep_exposed = dual_hidden = 0.0
    if moe_layers:
        ep_bw, ep_alpha = net.per_rank(ep, tp)
        # the busiest rank receives moe_load × the mean (padded to capacity, or its imbalance)
        a2a = coll.all_to_all_time(ep, tokens * h * 2.0 * a.moe.top_k * moe_load, ep_bw, ep_alpha)
        ep_one = 2.0 * a2a * moe_layers / a.layers  # dispatch and combine, forward (and again backward)
        tp_f = tp_f + np.where(dual, 0.0, ep_one)
        tp_b = tp_b + np.where(dual, 0.0, ep_one)
        ep_exposed = np.where(dual, np.maximum(0.0, 2.0 * ep_one - (mean_f + mean_b)), 0.0)
        dual_hidden = np.where(dual, 2.0 * ep_one, 0.0) - ep_exposed
    overlap_tp = f["overlap_tp"].astype(bool)
    exp_tp_f = np.where(overlap_tp, np.maximum(0.0, tp_f - 0.5 * mean_f), tp_f)
    exp_tp_b = np.where(overlap_tp, np.maximum(0.0, tp_b - 0.5 * mean_b), tp_b)
    # Context parallelism exchanges keys and values around the CP ring as ring attention does
    # (Liu et al. 2023, "Ring Attention with Blockwise Transformers"; Megatron-Core's context
    # parallelism): cp − 1 steps per layer, each passing one rank's K and V block (2 · tokens/cp ·
    # kv_heads · head_dim / tp values) to the next rank while the attention of the block in hand is
    # computed; backward passes K and V again and their gradients (twice the bytes). A step costs the
    # larger of its transfer and its share (1/cp) of the attention core; only the excess is exposed.
    # Every rank of the ring sends at once, so each gets its own NIC share once the ring leaves the
    # NVLink domain (ranks tp apart, Megatron's order).
    if a.attention == "mla" and a.mla is not None:
        kv_width = a.heads * (a.mla.qk_nope_head_dim + a.mla.qk_rope_head_dim + a.mla.v_head_dim) / 2.0
    else:
        kv_width = a.n_kv * a.d_head
    cp_bw, cp_alpha = net.per_rank(cp, tp)
    kv_block = 2.0 * tokens * kv_width / tp * 2.0  # K and V, 16-bit
    cp_steps = cp - 1.0  # none without CP
    step_f = coll.p2p_time(kv_block, cp_bw, cp_alpha)
    step_b = coll.p2p_time(2.0 * kv_block, cp_bw, cp_alpha)
    mean_attn_b = (dense_layers * d_attn_b + moe_layers * m_attn_b) / a.layers
    cp_exp_f = cp_steps * np.maximum(0.0, step_f - mean_attn / cp)
    cp_exp_b = cp_steps * np.maximum(0.0, step_b - mean_attn_b / cp)
    # communication hidden under a layer's compute (charged as interference below): TP's overlapped
    # share and the CP steps' hidden part
    hidden_layer = (
        np.where(overlap_tp, (tp_f - exp_tp_f) + (tp_b - exp_tp_b), 0.0)
        + cp_steps * (step_f + step_b)
        - (cp_exp_f + cp_exp_b)
    )
    exp_tp_f = exp_tp_f + cp_exp_f + 0.5 * ep_exposed
    exp_tp_b = exp_tp_b + cp_exp_b + 0.5 * ep_exposed
    hidden_layer = hidden_layer + dual_hidden

    rc_compute = np.where(
        recompute == 2, mean_f, np.where(recompute == 1, np.where(flash, 0.0, mean_attn), 0.0)
    )
    rc_tp = np.where(recompute == 2, exp_tp_f, 0.0)

    # --- stages: layers per stage, embedding and output layer on the first/last -------------------------
    # A layer count the pipeline does not divide is spread as evenly as possible (q = ⌊slots/pp⌋,
    # r left over): the last stage, which also computes the logits, keeps q; the first keeps q unless
    # every other stage already has q + 1; r middle stages take q + 1, and the busiest middle stage
    # sets the pace. `--pp-layers` gives the split explicitly (columns first/mid/last_layers).
    slots = np.where(balanced, a.layers + 2.0, float(a.layers))
    if "mid_layers" in f:
        first_slots, per_stage, last_slots = (
            f[k].astype(float) for k in ("first_layers", "mid_layers", "last_layers")
        )
    else:
        q = np.floor(slots / pp)
        r = slots - q * pp
        per_stage = np.where(r > 0, q + 1.0, q)
        last_slots = q
        first_slots = np.where((r > 0) & (r > pp - 2.0), q + 1.0, q)
    layers_last = np.where(balanced, last_slots - 1.0, last_slots)
    first_layers = np.where(balanced, first_slots - 1.0, first_slots)
    # The output layer stays 16-bit in FP8 training (Micikevicius et al. 2022, "FP8 Formats for Deep
    # Learning", keep the embedding and LM head in higher precision; Transformer Engine's recipes too).
    logits_f, logits_b = _gemm_set_time([(a.vocab / tp, h, tokens, 1.0)], micro, max(bits, 16), clock_derate)
    ce = memory_bound_time(
        tokens * a.vocab / tp * 4.0 * 3.0, micro, asm.hbm_efficiency
    )  # fp32 softmax + loss
    last_f = layers_last * (mean_f + exp_tp_f) + logits_f + ce
    last_b = layers_last * (mean_b + exp_tp_b) + logits_b + 2.0 * ce
    mid_f = per_stage * (mean_f + exp_tp_f)
    mid_b = per_stage * (mean_b + exp_tp_b)
    t_f = np.maximum(last_f, np.where(pp > 1, mid_f, 0.0))
    t_b = np.maximum(last_b, np.where(pp > 1, mid_b, 0.0))
    t_rc = np.where(last_f >= mid_f, layers_last, per_stage) * (rc_compute + rc_tp)
    compute_f = np.where(last_f >= mid_f, layers_last * mean_f + logits_f + ce, per_stage * mean_f)
    compute_b = np.where(last_f >= mid_f, layers_last * mean_b + logits_b + 2.0 * ce, per_stage * mean_b)
    tp_total = t_f - compute_f + t_b - compute_b

    # --- pipeline: p2p hand-offs and the schedule's bubble ------------------------------------------------
    # a pipeline runs at its slowest hand-off: NIC speed once any pair of neighbours is in two domains
    pp_bw, pp_alpha = net.per_rank(pp, tp * cp * dp)
    handoff = tokens * h * 2.0 / np.where(sp, tp, 1.0)
    p2p = np.where(
        pp > 1, 2.0 * coll.p2p_time(handoff, pp_bw, pp_alpha), 0.0
    )  # activation out, gradient back
    work = t_f + t_b + t_rc
    zb_ok = m >= 2.0 * pp - 1.0
    # DualPipe (deepseek-ai/DualPipe README, "Pipeline Bubbles and Memory Usage"): a bubble of
    # (PP/2 − 1)(F&B + B − 3W) for PP stages, F&B a forward and a backward chunk run together (their
    # compute adds; their communication overlaps), B a full backward chunk (with any recomputation), W
    # its weight-gradient part (weight_grad_share of the chunk's backward time, attention and exposed
    # communication included). DualPipe: PP = pp stages of a device's layers; DualPipeV: PP = 2·pp
    # chunks of half a device's layers. The p2p hand-offs of the steady state overlap with the paired
    # chunk (up to its compute); the fill and drain's pp − 1 do not.
    big_b = t_b + t_rc
    w_part = asm.weight_grad_share * t_b
    dual_bubble = np.maximum(0.0, t_f + 2.0 * big_b - 3.0 * w_part) * np.maximum(
        np.where(schedule == 5, (pp - 1.0) / 2.0, pp / 2.0 - 1.0), 0.0
    )
    bubble_slots = np.where(
        dual,
        dual_bubble / np.maximum(work, 1e-30),
        np.where((schedule == 3) & zb_ok, 0.0, (pp - 1.0) / vpp),
    )
    passes = np.where(dual, pp - 1.0, m * vpp + np.where((schedule == 3) & zb_ok, 0.0, pp - 1.0))
    # DualPipe's m steady-state hand-offs hide under the paired chunks' compute (a micro-batch's work on
    # the stage); only what exceeds it is exposed
    dual_excess = np.where(dual, m * np.maximum(0.0, p2p - work), 0.0)
    # Megatron's overlap_p2p_comm (interleaved schedule only; schedules.py posts each chunk's send and
    # receive before the next chunk computes and waits after it): a steady-state hand-off hides under one
    # model chunk's work (work / vpp) and only what exceeds it is exposed; the fill and drain's pp − 1
    # hand-offs stay exposed, as DualPipe's
    overlap_p2p = f["overlap_p2p"].astype(bool) if "overlap_p2p" in f else np.zeros(np.shape(pp), dtype=bool)
    hidden_p2p = overlap_p2p & (schedule == 2) & (vpp > 1)  # workload.p2p_overlap_applies, on codes
    steady = m * vpp
    exposed_p2p = np.where(
        hidden_p2p,
        (pp - 1.0) * p2p + steady * np.maximum(0.0, p2p - work / vpp),
        passes * p2p + dual_excess,
    )
    pipeline = (m + bubble_slots) * work + exposed_p2p
    pp_comm = exposed_p2p
    # the hand-offs that hide (charged as interference below): overlap_p2p_comm's steady state, and
    # DualPipe's, whose m hand-offs overlap the paired chunk
    hidden_pp = np.where(
        hidden_p2p, steady * np.minimum(p2p, work / vpp), np.where(dual, m * np.minimum(p2p, work), 0.0)
    )
    bubble = bubble_slots * work

    # --- parameters per GPU, data-parallel reduction, optimizer ----------------------------------------------
    pc = count_params(a)
    attn_all, _ = attention_params(a)
    if a.moe is not None:
        e_all, _ = ffn_params(a, a.moe.expert_ffn or a.ffn_size)
        moe_ffn_gpu = (a.moe.experts / ep * e_all + a.moe.shared_experts * e_all) / tp + pc.router_per_layer
    else:
        moe_ffn_gpu = 0.0
    dense_ffn_gpu = pc.dense_ffn_per_layer / tp
    layer_params_gpu = (attn_all / tp + pc.norms_per_layer) * 1.0
    mean_layer_gpu = layer_params_gpu + (dense_layers * dense_ffn_gpu + moe_layers * moe_ffn_gpu) / a.layers
    emb_gpu = (pc.embedding + pc.positions) / tp
    out_gpu = (a.vocab * h) / tp + pc.final_norm
    first_params = first_layers * mean_layer_gpu + emb_gpu
    last_params = layers_last * mean_layer_gpu + out_gpu
    mid_params = per_stage * mean_layer_gpu
    stage_params = np.maximum(np.maximum(first_params, last_params), np.where(pp > 2, mid_params, 0.0))
    # One stage holds everything; tied input and output embeddings are then one matrix.
    single = (
        mean_layer_gpu * a.layers + emb_gpu + (0.0 if a.tied_embeddings else a.vocab * h / tp) + pc.final_norm
    )
    stage_params = np.where(pp == 1, single, stage_params)
    # DualPipe keeps two stages per rank for its two directions, stage i and stage PP − 1 − i (2× the
    # parameters, their gradients and optimizer state; rank 0 both the embedding and the output layer);
    # DualPipeV's V gives each rank two half-size chunks, rank 0 the first and the last. A micro-batch's
    # chunk touches one of DualPipe's two stages (`chunk`: the share its ZeRO-2/3 traffic moves).
    stage_params = np.where(
        schedule == 4,
        np.maximum(first_params + last_params, 2.0 * mid_params),
        np.where(
            schedule == 5,
            np.maximum(0.5 * (first_params + last_params + emb_gpu + out_gpu), mid_params),
            stage_params,
        ),
    )
    chunk = np.where(schedule == 4, 0.5, 1.0)

    # Data-parallel reduction of the stage's gradients (ZeRO: Rajbhandari et al. 2020 §5, §7).
    #   stage 0: all-reduce the accumulated gradients once per step;
    #   stage 1 (Megatron's distributed optimizer): reduce-scatter them once per step, then all-gather
    #     the updated weights — half the all-reduce traffic each way;
    #   stage 2: gradients are sharded, so they cannot accumulate locally: every micro-batch's
    #     gradients are reduce-scattered during its backward pass;
    #   stage 3: additionally all-gather the stage's parameters before every micro-batch's forward and
    #     backward pass.
    # Once-per-step reductions overlap the last backward pass bucket by bucket (Data Parallelism from Associativity
    # "Bucket-Based Overlap"); the weight all-gather overlaps the next step's first forward pass.
    # ZeRO-2's per-micro-batch reduce-scatter hides under all micro-batches' compute except its last
    # bucket. The DP group is one NCCL ring over the cluster network (ClusterNetwork.ring); buckets
    # follow each other through the same channels, so the ring's latency (its pipeline fill) is paid
    # once per pass, not once per bucket. ZeRO-3 is modelled unit by unit below.
    grad_bytes = np.where(f["fp32_grads"].astype(bool), asm.grad_bytes, asm.weight_bytes)
    grad_size = stage_params * grad_bytes
    weight_size = stage_params * asm.weight_bytes
    dp_group = dp * cp
    dp_span = net.ring_span(dp_group, tp)  # the DP×CP ranks of one TP rank: tp apart
    busbw, alpha = dp_span[:2]
    buckets = np.maximum(np.ceil(grad_size / (asm.ddp_bucket_mb * 1e6)), 1.0)
    stage_layers = np.maximum(np.where(last_f >= mid_f, layers_last, per_stage), 1.0)
    allreduce = net.allreduce(dp_group, grad_size, tp, span=dp_span)  # ring, tree or NVLS, as NCCL picks
    reduce_scatter = coll.nccl_ring_time(dp_group, grad_size, busbw, alpha, 1.0)
    gather = coll.nccl_ring_time(dp_group, weight_size, busbw, alpha, 1.0)
    multi = dp_group > 1
    overlap = f["overlap_grad"].astype(bool)
    z3 = zero >= 3
    once = np.where(multi & (zero <= 1), np.where(zero == 1, reduce_scatter, allreduce), 0.0)
    once_gather = np.where(multi & (zero >= 1) & (zero <= 2), gather, 0.0)
    per_mb = np.where(
        multi & (zero == 2), coll.nccl_ring_time(dp_group, grad_size * chunk, busbw, alpha, 1.0), 0.0
    )
    # ZeRO-3 / FSDP (Rajbhandari et al. 2020 §5.3; Zhao et al. 2023, "PyTorch FSDP", §3–4): each of
    # the stage's L units (a transformer layer, with its share of the embedding and output weights) is
    # all-gathered over the shard group before its forward pass and again before its backward pass,
    # and its gradients are reduce-scattered after it — every micro-batch, each collective paying its
    # own ring latency. With prefetching, unit i's compute overlaps the next unit's gather (forward)
    # or the next gather and the previous reduce-scatter on the same links (backward), so a unit costs
    # the larger of its compute and that communication; the first gather of each pass and the last
    # reduce-scatter wait. Per micro-batch the exposed time is
    #   forward:  AG + (L−1)·max(0, AG − f)
    #   backward: AG + max(0, AG − b) + (L−2)·max(0, AG + RS − b) + max(0, RS − b) + RS   (L ≥ 2)
    # (AG + RS for one unit); without overlap L·(2·AG + RS). It lengthens every stage slot of the
    # pipeline, the bubble's included. HSDP (`shard`) shards over groups of `shard` ranks and
    # all-reduces the shard's gradients across the replica groups once per step, overlapped with the
    # backward pass like DDP buckets.
    shard = np.where(f["shard"] > 0, f["shard"], dp_group)
    replicas = dp_group / shard
    s_bw, s_alpha = net.ring(shard, tp)
    units = stage_layers
    ag = coll.nccl_ring_time(shard, weight_size * chunk / units, s_bw, s_alpha, 1.0)
    rs = coll.nccl_ring_time(shard, grad_size * chunk / units, s_bw, s_alpha, 1.0)
    f_unit = t_f / units
    b_unit = (t_b + t_rc) / units
    z3_comm = units * (2.0 * ag + rs)  # per micro-batch
    z3_forward = ag + np.maximum(units - 1.0, 0.0) * np.maximum(ag - f_unit, 0.0)
    z3_backward = np.where(
        units >= 2.0,
        ag
        + np.maximum(ag - b_unit, 0.0)
        + np.maximum(units - 2.0, 0.0) * np.maximum(ag + rs - b_unit, 0.0)
        + np.maximum(rs - b_unit, 0.0)
        + rs,
        ag + rs,
    )
    z3_on = z3 & (shard > 1)
    z3_mb = np.where(z3_on, np.where(overlap, z3_forward + z3_backward, z3_comm), 0.0)
    z3_exposed = m * z3_mb
    z3_hidden = np.where(z3_on, m * z3_comm, 0.0) - z3_exposed
    z3_bubble = bubble_slots * z3_mb
    pipeline = pipeline + z3_bubble
    bubble = bubble + z3_bubble
    hsdp_allreduce = np.where(
        z3 & (replicas > 1), net.allreduce(replicas, grad_size / shard, tp * shard), 0.0
    )
    once = once + hsdp_allreduce
    # The once-per-step reductions (and ZeRO-2's per-micro-batch ones) compete for one compute budget,
    # the step's m·work: what cannot hide is the larger of the pieces that never can (the last bucket
    # of each, and what outlasts the one pass it overlaps) and the excess of the total over the
    # budget left after ZeRO-3's own overlap. A faster link never makes this larger.
    overlappable = once + once_gather + m * per_mb
    tails = (
        exposed_bucketed_allreduce(once, t_b, buckets)
        + exposed_bucketed_allreduce(once_gather, t_f, buckets)
        + per_mb / buckets
    )
    budget = np.maximum(m * work - z3_hidden, 0.0)
    reduce_exposed = np.where(overlap, np.maximum(tails, overlappable - budget), overlappable)
    dp_exposed = reduce_exposed + z3_exposed
    # Compute slows while a collective overlaps it (communication kernels hold SMs and HBM bandwidth):
    # charge `overlap_compute_slowdown` of every second of hidden communication (arXiv 2507.03114).
    hidden = np.where(overlap, np.maximum(overlappable - reduce_exposed + z3_hidden, 0.0), 0.0)
    hidden_tp = m * per_stage * hidden_layer
    interference = asm.overlap_compute_slowdown * (hidden + hidden_tp + hidden_pp)
    # What each rank keeps of the stage's weights, gradients and optimizer state: 1/divisor.
    w_div = np.where(z3, shard, 1.0)
    g_div = np.where(z3, shard, np.where(zero >= 2, dp_group, 1.0))
    o_div = np.where(z3, shard, np.where(zero >= 1, dp_group, 1.0))
    opt_params = stage_params / o_div
    optimizer = memory_bound_time(opt_params * asm.optimizer_traffic_bytes, micro, asm.hbm_efficiency)

    step = pipeline + dp_exposed + interference + optimizer

    # --- memory per GPU (the peak stage) ---------------------------------------------------------------------------
    # ZeRO-3 shards over the shard group (HSDP) and holds two gathered units (the one computing and the
    # prefetched one) and one unit's unsharded gradients (Zhao et al. 2023 §3.3).
    # FP32-only parameters (PyTorch FSDP MixedPrecision, JAX) keep no sharded 16-bit copy under ZeRO-3:
    # the FP32 master in optimizer_bytes is the parameter, and the 16-bit weights exist only in the
    # gathered unit buffers. Without per-unit gathering (ZeRO 0–2, or a shard group of one: FSDP's
    # SHARD_GRAD_OP and NO_SHARD, autocast's cached casts) the whole 16-bit copy is held from forward
    # to backward, so it counts as before.
    weight_bytes = asm.weight_bytes
    if "fp32_params" in f:
        weight_bytes = np.where(f["fp32_params"].astype(bool) & z3 & (shard > 1), 0.0, asm.weight_bytes)
    unit_buffers = np.where(
        z3 & (shard > 1), stage_params * chunk / units * (2.0 * asm.weight_bytes + grad_bytes), 0.0
    )
    # FlashAttention never stores the s×s scores, so its layers keep what selective recomputation keeps;
    # under full recomputation a layer keeps its input, and the layer being recomputed holds its full
    # activations (without the scores under FlashAttention).
    act = {
        r: activation_bytes_per_layer(a, mbs, tp, sp, r, s, fp8=bits == 8, flash=flash) / cp
        for r in RECOMPUTES
    }
    if moe_layers:
        # An MoE layer's FFN keeps, per token and 16-bit: its k routed copies (the permuted input, also
        # the all-to-all receive buffer) and their expert outputs (kept for the weighted combine), 2·k·h
        # each, and each copy's expert intermediates ((up + 1)·e_ffn/t: the up projection(s) and the
        # activation output), all at the busiest rank's load; shared experts add their intermediates.
        # This replaces the dense 4h FFN's 16·h/t of Korthikanti et al. 2022 (their 19·s·b·h MLP term
        # less the input and dropout mask, which an MoE layer keeps as well). Megatron-Core's MoE
        # token dispatcher permutes and unpermutes these buffers (megatron/core/transformer/moe).
        e_ffn = a.moe.expert_ffn or a.ffn_size
        up = a.ffn_matrices - 1
        k = a.moe.top_k * moe_load
        routed = (
            2.0 * k * (2.0 * h + (up + 1.0) * e_ffn / tp)
            + 2.0 * a.moe.shared_experts * (up + 1.0) * e_ffn / tp
        )
        # Under FP8 the dense FFN in `act` keeps 12·h/t (its second input in FP8) and its first input in
        # FP8; an MoE layer's buffers above stay 16-bit and its pre-FFN norm output, read by the router
        # and the token dispatcher, too: replace the 12·h/t and give the first input's byte back.
        dense_ffn = np.where(bits == 8, 12.0, 16.0) * h / tp
        norm_back = np.where(bits == 8, h * np.where(sp, 1.0 / tp, 1.0), 0.0)
        extra = tokens * (routed - dense_ffn + norm_back) * moe_layers / a.layers
        act = {r: act[r] + np.where(r == "full", 0.0, extra) for r in RECOMPUTES}
    full_layer = np.where(flash, act["selective"], act["none"])
    act_layer = np.where(recompute == 2, act["full"], np.where(recompute == 1, act["selective"], full_layer))
    # DualPipe holds PP + 1 chunks' activations: pp + 1 stages' worth, DualPipeV's 2·pp + 1 half-size
    # chunks pp + ½ (deepseek-ai/DualPipe README)
    # without a pipeline (pp 1) micro-batches run one at a time whatever the schedule (Megatron's
    # forward_backward_no_pipelining): one micro-batch's activations
    in_flight = np.where(
        pp == 1,
        1.0,
        np.where(
            schedule == 0,
            m,
            np.where(
                schedule == 3,
                np.minimum(m, 2.0 * pp),
                np.where(
                    schedule == 4,
                    pp + 1.0,
                    np.where(
                        schedule == 5,
                        pp + 0.5,
                        np.minimum(m, pp) * (1.0 + (pp - 1.0) / (pp * vpp) * (vpp > 1)),
                    ),
                ),
            ),
        ),
    )
    # 1F1B's stage k holds min(m, pp − k) micro-batches (Megatron-LM schedules.py: pp − rank − 1 warm-up
    # forwards, then one in flight), the interleaved schedule's rank k pp + (pp − 1 − 2k)/vpp chunks'
    # worth: a middle stage, at best rank 1, holds fewer than the first. The busiest middle stage is
    # charged as rank 1 (exact when it is rank 1, an upper bound otherwise); the other schedules are
    # charged the first stage's count on every stage.
    in_flight_mid = np.where(
        schedule == 1,
        np.minimum(m, pp - 1.0),
        np.where(schedule == 2, np.maximum(in_flight - 2.0 / vpp, 1.0), in_flight),
    )
    recomputing = np.where(recompute == 2, full_layer, 0.0)
    # the fp32 logits live on the output layer's rank: the only one, or DualPipe's rank 0, which also
    # holds the first stage's activations
    logits = tokens * a.vocab / tp * 4.0
    overhead = asm.framework_overhead_gb * 1e9

    def parts(params, activations, logits_share):
        return {
            "weights": params * weight_bytes / w_div,
            "gradients": params * grad_bytes / g_div,
            "optimizer": params * asm.optimizer_bytes / o_div,
            "zero3_unit_buffers": unit_buffers,
            "activations": activations,
            "logits": logits_share * logits,
            "framework_overhead": overhead,
        }

    # Each stage's own parameters with its own activations (the first stage, the busiest middle one and
    # the last; they were once mixed: the busiest stage's parameters with the most layers' activations
    # at the first stage's count, so an uneven split that fits was called out of memory). One rank
    # holding every layer (pp 1) or two stages (DualPipe) is one candidate.
    combined = (pp == 1) | dual
    first_parts = parts(
        np.where(combined, stage_params, first_params),
        np.where(combined, np.maximum(first_layers, per_stage), first_layers) * in_flight * act_layer
        + recomputing,
        np.where(combined, 1.0, 0.0),
    )
    mid_parts = parts(mid_params, per_stage * in_flight_mid * act_layer + recomputing, 0.0)
    last_parts = parts(last_params, layers_last * act_layer, 1.0)
    first_total = sum(first_parts.values())
    mid_total = np.where((pp > 2) & ~combined, sum(mid_parts.values()), 0.0)
    last_total = np.where(combined, 0.0, sum(last_parts.values()))
    # the peak stage (the first on a tie), whose parts are StepResult.memory_breakdown_gb
    use_mid = mid_total > first_total
    front = np.maximum(first_total, mid_total)
    use_last = last_total > front
    memory_parts = {
        k: np.where(use_last, last_parts[k], np.where(use_mid, mid_parts[k], first_parts[k]))
        for k in first_parts
    }
    memory = np.maximum(front, last_total)

    # --- throughput --------------------------------------------------------------------------------------------------
    n = dp * tp * pp * cp
    tokens_step = gbs * s
    model_flop = model_flops_per_token(a, s) * tokens_step
    rc_name = np.asarray(RECOMPUTES)[recompute]
    hw_per_token = np.select(
        [rc_name == r for r in RECOMPUTES], [hardware_flops_per_token(a, r, s) for r in RECOMPUTES]
    )
    hardware_flop = hw_per_token * tokens_step
    out = {
        "step_time_s": step,
        "model_flop": model_flop * np.ones_like(step),
        "hardware_flop": hardware_flop * np.ones_like(step),
        "megatron2021_flop": megatron2021_flops_per_iteration(a, gbs, s) * np.ones_like(step),
        "model_tflops_per_gpu": model_flop / (step * n) / 1e12,
        "hardware_tflops_per_gpu": hardware_flop / (step * n) / 1e12,
        "mfu": model_flop / (step * n * hw.peak_flop_s),
        "hfu": hardware_flop / (step * n * hw.peak_flop_s),
        "memory_per_gpu_gb": memory / 1e9,
        "fits": memory <= asm.usable_memory_fraction * hw.memory_bytes,
        **{f"memory_{k}_gb": v / 1e9 for k, v in memory_parts.items()},
        "micro_batches": m * np.ones_like(step),
        "tokens_per_s": tokens_step / step,
        "forward": m * compute_f,
        "backward": m * compute_b,
        "recompute": m * np.where(last_f >= mid_f, layers_last, per_stage) * rc_compute,
        "bubble": bubble,
        "bubble_fraction": bubble_slots / (m + bubble_slots),
        "tp_comm": m * (tp_total + np.where(last_f >= mid_f, layers_last, per_stage) * rc_tp),
        "pp_comm": pp_comm,
        "dp_comm_exposed": dp_exposed,
        "overlap_interference": interference,
        "optimizer": optimizer,
        # not in the breakdown: how its aggregates split, for the timeline (models/datacenter/trace.py)
        "tp_comm_forward": m * (t_f - compute_f),  # the forward passes' share of tp_comm
        "zero3_forward": m * np.where(z3_on, np.where(overlap, z3_forward, units * ag), 0.0),
        "zero3_backward": m * np.where(z3_on, np.where(overlap, z3_backward, units * (ag + rs)), 0.0),
        "dp_overlappable": overlappable,  # once-per-step reductions (and ZeRO-2's), hidden or not
        "dp_gather_overlappable": once_gather,  # of which the ZeRO-1/2 weight all-gather
    }
    shape = np.shape(step)
    return {k: v if np.shape(v) == shape else np.broadcast_to(v, shape) for k, v in out.items()}


class RunTotals(BaseModel):
    """What training `tokens` with one layout takes: wall-clock days at the predicted throughput (no
    failures, restarts or evaluation pauses), GPU-hours, the GPUs' purchase cost, facility energy, and
    the rental cost when a price per GPU-hour is given (physics/cost.py, as `simulate` counts them)."""

    tokens: float
    days: float
    gpu_hours: float
    capital_cost_usd: float = Field(description="GPUs × catalog price (purchase), as `simulate`'s cost_usd.")
    energy_kwh: float = Field(description="GPUs × board power × time × PUE.")
    rental_cost_usd: float | None = Field(None, description="GPU-hours × usd_per_gpu_hour, when given.")
    days_p10: float | None = Field(
        None, description="Low end (P10) of the days' 80 % model-error interval (catalog/model_error.yaml)."
    )
    days_p90: float | None = Field(None, description="High end (P90) of the days' 80 % model-error interval.")


def run_totals(
    tokens: float,
    tokens_per_s: float,
    n_gpus: int,
    gpu: str,
    asm: Assumptions,
    usd_per_gpu_hour=None,
    factors: tuple[float, float] | None = None,
) -> RunTotals:
    """`factors`: the step time's model-error factors (model_error.step_time_factors), for days_p10/p90."""
    g = catalog.gpus()[gpu]
    seconds = tokens / tokens_per_s
    hours = float(cost.gpu_hours(n_gpus, seconds))
    return RunTotals(
        days_p10=None if factors is None else seconds * factors[0] / 86400.0,
        days_p90=None if factors is None else seconds * factors[1] / 86400.0,
        tokens=tokens,
        days=seconds / 86400.0,
        gpu_hours=hours,
        capital_cost_usd=float(cost.capital_cost(n_gpus, g.price_usd)),
        energy_kwh=float(cost.energy_kwh(n_gpus, g.board_power_w, seconds, asm.pue)),
        rental_cost_usd=None if usd_per_gpu_hour is None else hours * usd_per_gpu_hour,
    )


class LayoutPerformance(BaseModel):
    """What one layout achieves: the fields a ranking needs. `plan` returns these for the layouts it
    ranks; `step` returns a `StepResult`, which adds the model, the cluster and the FLOP counts."""

    layout: dict[str, Any]  # dp, tp, pp, vpp, cp, ep, sequence_parallel, mbs, gbs, zero, recompute, ...
    step_time_s: float
    step_time_s_p10: float | None = Field(
        None,
        description="Low end (P10) of the step time's 80 % model-error interval: the prediction × the "
        "split-conformal bound of measured / predicted step time over the measured runs "
        "(catalog/model_error.yaml; docs/validation.md).",
    )
    step_time_s_p90: float | None = Field(
        None, description="High end (P90) of the step time's 80 % interval."
    )
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    mfu_p10: float | None = Field(None, description="P10 of the MFU: the MFU at the step time's P90.")
    mfu_p90: float | None = Field(None, description="P90 of the MFU: the MFU at the step time's P10.")
    hfu: float
    memory_per_gpu_gb: float
    fits: bool
    tokens_per_s: float
    bubble_fraction: float = Field(description="Idle share of the pipeline schedule: slots / (m + slots).")
    breakdown_s: dict[str, float]
    run: RunTotals | None = Field(
        None, description="Days, GPU-hours, cost and energy of `tokens`, when given."
    )
    warnings: list[LayoutWarning] = Field(
        default_factory=list,
        description="Why this prediction may not hold (an MFU above the best measured for the GPU "
        "generation and parallelism class, citing the record: MFU_ABOVE_MEASURED), or what an option given "
        "did not do (…_IGNORED), each {code, message} as simulate's warnings.",
    )


def performance_at(out: dict[str, np.ndarray], i: int) -> dict[str, Any]:
    """The `LayoutPerformance` fields (all but the layout) of layout i of `evaluate`'s output."""
    row = {
        name: np.asarray(out[name]).reshape(-1)[i].item()
        for name in LayoutPerformance.model_fields
        if name not in ("layout", "breakdown_s", "warnings", "run") and not name.endswith(("_p10", "_p90"))
    }
    row["breakdown_s"] = {k: np.asarray(out[k]).reshape(-1)[i].item() for k in BREAKDOWN}
    return row


def annotated_performance(
    out: dict[str, np.ndarray],
    i: int,
    layout: dict[str, Any],
    cluster: Cluster,
    asm: Assumptions,
    tokens: float | None = None,
    usd_per_gpu_hour: float | None = None,
    intervals: bool = True,
) -> dict[str, Any]:
    """performance_at plus what step and plan add to every layout they report: the model-error
    interval (unless `intervals` is False: the model is not the packaged one, model_error.packaged), the MFU plausibility
    warning and, when tokens are given, the run's totals."""
    perf = performance_at(out, i)
    factors = step_time_factors() if intervals else None
    if factors is not None:
        perf["step_time_s_p10"] = perf["step_time_s"] * factors[0]
        perf["step_time_s_p90"] = perf["step_time_s"] * factors[1]
        perf["mfu_p10"] = perf["mfu"] / factors[1]
        perf["mfu_p90"] = perf["mfu"] / factors[0]
    warning = mfu_warning(cluster.gpu, layout, perf["mfu"])
    perf["warnings"] = [warning] if warning else []  # warn(code, message) dicts: LayoutWarning's fields
    if "nvls" in cluster.model_fields_set and cluster.nvls and not cluster.network_fields()["nvls"]:
        nvlink = cluster.network_fields()["nvlink"]
        perf["warnings"].append(
            warn(
                "NVLS_IGNORED",
                "nvls: one GPU per node has no NVLink switch to reduce in: ignored"
                if cluster.gpus_per_node == 1
                else f"nvls: {nvlink} has no NVLink SHARP (NVLink 4 and 5 have it): ignored, the all-reduce is "
                "NCCL's ring or tree",
            )
        )
    cf, imbalance = layout.get("moe_capacity_factor"), layout.get("moe_imbalance", 1.0)
    dropped = moe_dropped_fraction(cf, imbalance, layout.get("ep", 1))
    if dropped > 0:
        perf["warnings"].append(
            warn(
                "MOE_TOKENS_DROPPED",
                f"an expert capacity of {cf:g}× the mean load drops at least {dropped:.0%} of the routed tokens "
                f"on the busiest expert-parallel rank (load {imbalance:g}× the mean): faster than a dropless run, "
                "but those tokens skip their experts",
            )
        )
    if layout.get("ep", 1) <= 1 and imbalance != 1.0 and cf is None:
        perf["warnings"].append(
            warn(
                "MOE_IMBALANCE_IGNORED",
                f"moe_imbalance {imbalance:g}: without expert parallelism (ep 1) every rank holds every expert and "
                "gets the mean load, so there is no busiest rank to wait for: ignored",
            )
        )
    if layout.get("pp", 1) == 1 and (layout.get("schedule", "1f1b") != "1f1b" or layout.get("vpp", 1) > 1):
        perf["warnings"].append(
            warn(
                "SCHEDULE_WITHOUT_PIPELINE",
                f"pp 1 has no pipeline: the {layout.get('schedule', '1f1b')} schedule"
                + (f" and vpp {layout.get('vpp')} change" if layout.get("vpp", 1) > 1 else " changes")
                + " nothing (micro-batches run one at a time, one micro-batch's activations in memory)",
            )
        )
    if layout.get("pp", 1) > 1 and layout.get("schedule") == "interleaved" and layout.get("vpp", 1) == 1:
        perf["warnings"].append(
            warn(
                "INTERLEAVED_VPP_1",
                "the interleaved schedule with vpp 1 (one model chunk per stage) is 1F1B: set --vpp 2 or more "
                "to interleave",
            )
        )
    if layout.get("overlap_p2p_comm") and not p2p_overlap_applies(
        layout.get("schedule", "1f1b"), layout.get("vpp", 1)
    ):
        perf["warnings"].append(
            warn(
                "P2P_OVERLAP_IGNORED",
                "overlap_p2p_comm applies to the interleaved schedule with vpp > 1 only (Megatron turns it off "
                "for the others): ignored for this layout",
            )
        )
    micro = catalog.gpus()[cluster.gpu].micro
    if layout.get("flash_attention", True) and not micro.flash_attention_runs:
        perf["warnings"].append(
            warn(
                "NO_FLASH_ATTENTION",
                f"no FlashAttention kernel runs on {micro.generation.title()} ({cluster.gpu}): attention is "
                "timed and sized materialized (the scores written to memory and a separate softmax), as it "
                "would run",
            )
        )
    kernel = layout.get("attention_kernel", "flash2")
    if (  # (a GPU on which no FlashAttention runs is told so above)
        kernel != "flash2"
        and layout.get("flash_attention", True)
        and micro.flash_attention_runs
        and not micro.flash_attention_efficiency
    ):
        # a TPU (or a GPU without a measured kernel table): attention runs on the GEMM model, whatever
        # kernel is named
        perf["warnings"].append(
            warn(
                "ATTENTION_KERNEL_IGNORED",
                f"attention_kernel {kernel}: no measured speed of FlashAttention kernels on {cluster.gpu}; "
                f"attention is timed on the {'MXU' if micro.systolic else 'GEMM'} model whatever the kernel: "
                "ignored",
            )
        )
    if perf["mfu"] > 1.0:
        # model FLOPs count the full s×s scores (attention_flops_per_token: Megatron's and PaLM's
        # convention), of which a causal kernel computes half: at long sequences the count outgrows the
        # work done, and MFU passes 100 % with the time still within the hardware's rate
        perf["warnings"].append(
            warn(
                "MFU_COUNT_ABOVE_PEAK",
                f"{MFU_DOUBT} {perf['mfu']:.1%} is above 100 % only in its count: model FLOPs (the PaLM convention) "
                "count the full s×s attention scores, a large share of them at this sequence length, of which the "
                "causal kernel computes half; compare tokens per second, not MFU",
            )
        )
    if perf["hfu"] > 1.0 and micro.flash_attention_efficiency:
        perf["warnings"].append(
            warn(
                "HFU_COUNT_ABOVE_PEAK",
                f"{HFU_DOUBT} {perf['hfu']:.1%} is above the peak only in its count: hardware FLOPs include the masked "
                "half of the attention scores, which the causal FlashAttention kernel skips (timed at its "
                "measured speed); " + ("compare MFU" if perf["mfu"] <= 1.0 else "MFU too (above)"),
            )
        )
    elif perf["hfu"] > 1.0:
        perf["warnings"].append(
            warn(
                "HFU_ABOVE_PEAK",
                f"{HFU_DOUBT} {perf['hfu']:.1%} is above the peak: the FLOP counts include the masked half of the "
                "attention scores that causal attention kernels skip, and this accelerator has no published "
                "attention-kernel ceiling to bound them; not an answer to plan on",
            )
        )
    if perf.get("mfu_p90") is not None and perf["mfu_p90"] > 1.0 >= perf["mfu"]:
        # the interval is the model's error on measured runs, applied as a factor: near the peak its fast
        # end passes it (shown as computed, not cut: the cut would be a number no measurement gave)
        perf["warnings"].append(
            warn(
                "INTERVAL_ABOVE_PEAK",
                f"the 80 % interval's fast end (MFU {perf['mfu_p90']:.1%}, step time "
                f"{perf['step_time_s_p10']:.4g} s{', and the days at it' if tokens is not None else ''}) is above "
                "100 % of the peak, which no run reaches: that end is the model's error applied as a factor, "
                "not a reachable speed, and the point value is already near what the chip sustains",
            )
        )
    if tokens is not None:
        perf["run"] = run_totals(
            tokens, perf["tokens_per_s"], cluster.n_gpus, cluster.gpu, asm, usd_per_gpu_hour, factors
        )
    return perf


def ignored_options(layout: dict[str, Any]) -> list[dict[str, str]]:
    """A warning for each option set on a layout where it has nothing to act on, so `step` never
    takes it silently (`plan` sets these only where they act)."""
    notes = []
    tp = layout.get("tp", 1)
    for name, what in (
        ("sequence_parallel", "it splits the tensor-parallel group's norm and dropout activations"),
        ("overlap_tp_comm", "it hides the tensor-parallel collectives"),
    ):
        if layout.get(name) and tp == 1:
            notes.append(warn(f"{name.upper()}_IGNORED", f"{name} needs tp > 1 ({what}): ignored with tp 1"))
    if layout.get("embedding_stages") == "balanced" and layout.get("pp", 1) == 1:
        notes.append(
            warn(
                "EMBEDDING_STAGES_IGNORED",
                "embedding_stages balanced needs pp > 1 (it gives the embedding and output layer pipeline "
                "slots of their own): ignored with pp 1",
            )
        )
    dp_group = layout.get("dp", 1) * layout.get("cp", 1)
    shard = layout.get("shard_group") or dp_group
    if layout.get("fp32_params") and (layout.get("zero", 0) < 3 or shard <= 1):
        notes.append(
            warn(
                "FP32_PARAMS_IGNORED",
                "fp32_params changes memory only under ZeRO-3 sharding over more than one rank (zero 3): "
                f"with zero {layout.get('zero', 0)}"
                + (f" over a shard group of {shard}" if layout.get("zero", 0) >= 3 else "")
                + " the 16-bit weights are held from forward to backward all the same, so it is ignored",
            )
        )
    return notes


class StepResult(LayoutPerformance):
    micro_batches: float
    model: str
    n_gpus: int
    gpu: str
    network: dict[str, Any] = Field(
        description="The cluster network used: fabric, link types, Gbit/s, NVLink domain, NICs, oversubscription."
    )
    usable_memory_gb: float = Field(
        description="What a layout may fill per GPU: usable_memory_fraction × memory."
    )
    fit_note: str = Field(description="Empty when the layout fits; otherwise why not and what to change.")
    memory_breakdown_gb: dict[str, float] = Field(
        default_factory=dict,
        description="memory_per_gpu_gb by part on the stage that needs the most: weights, gradients, "
        "optimizer state, ZeRO-3 unit buffers, activations, fp32 logits, framework overhead (they sum to it).",
    )
    params_b: float
    model_flop_per_step: float
    hardware_flop_per_step: float
    megatron2021_flop_per_step: float
    model_error: dict[str, Any] = Field(
        default_factory=dict,
        description="What the *_p10 / *_p90 interval rests on: level, runs, sources, its leave-one-source-out "
        "coverage on check runs (catalog/model_error.yaml).",
    )


def step(
    workload: Workload,
    clock_derate: float | None = None,
    calibrated: bool = True,
    calibration: str | Path | dict[str, Any] | None = None,
) -> StepResult:
    """Evaluate one layout (`dtsim step`). `clock_derate` overrides the sustained-clock derate;
    `calibrated=False` ignores the calibration and uses the catalog's derate; `calibration` (a file
    written by `dtsim calibrate --out`, or its document) replaces catalog/calibration.yaml."""
    with calibration_in_use(calibration):
        return _steps(workload, [workload.layout], clock_derate, calibrated, "layout.")[0]


def steps(
    workload: Workload,
    layouts: Sequence[Layout],
    clock_derate: float | None = None,
    calibrated: bool = True,
    calibration: str | Path | dict[str, Any] | None = None,
) -> list[StepResult]:
    """`step` of each layout on the workload's model, cluster and run (its own layout is not used),
    evaluated together in one vectorized pass (`dtsim step --layouts`): each result equals what `step`
    gives that layout alone, at a fraction of the cost per layout. Every layout that breaks a rule is
    reported, its fields named `layouts[i].…`."""
    with calibration_in_use(calibration):
        return _steps(workload, layouts, clock_derate, calibrated, "layouts[{i}].")


def _architecture(workload: Workload) -> Architecture:
    from dtsim.physics.transformer import get_architecture

    return workload.model if isinstance(workload.model, Architecture) else get_architecture(workload.model)


def layout_problems(
    workload: Workload, layouts: Sequence[Layout], prefixes: Sequence[str]
) -> list[tuple[str, Any, str]]:
    """The divisibility rules each layout breaks on the workload's model and cluster (check_layout),
    its fields named with the layout's prefix in place of `layout.`."""
    a = _architecture(workload)
    problems = []
    for layout, prefix in zip(layouts, prefixes, strict=True):
        try:
            check_layout(a, layout, workload.cluster, workload.seq_len)
        except ScenarioError as exc:
            problems += [(f.replace("layout.", prefix, 1), v, m) for f, v, m in exc.problems]
    return problems


def _prepared(workload: Workload, layouts: Sequence[Layout], calibrated: bool, prefix: str):
    """What evaluating layouts of a workload needs, after checking every layout's rules (a broken
    rule is named `prefix.format(i=i)` + field): the architecture at the run's sequence length, the
    assumptions, the hardware and the sequence length."""
    a = _architecture(workload)
    problems = layout_problems(workload, layouts, [prefix.format(i=i) for i in range(len(layouts))])
    if problems:
        raise ScenarioError(problems)
    asm = Assumptions(workload.assumptions)
    hw = resolve_hardware(workload.cluster, workload.precision, calibrated, asm)
    seq = workload.seq_len or a.seq_len
    return at_sequence(a, seq), asm, hw, seq


def _steps(
    workload: Workload,
    layouts: Sequence[Layout],
    clock_derate: float | None,
    calibrated: bool,
    prefix: str,
) -> list[StepResult]:
    a, asm, hw, seq = _prepared(workload, layouts, calibrated, prefix)
    cluster, n = workload.cluster, workload.cluster.n_gpus
    usable = asm.usable_memory_fraction * hw.memory_bytes / 1e9
    params_b = count_params(a).total / 1e9
    network = cluster.network_fields()
    cluster_notes = cluster.ignored_fields(asm.leaf_switch_nodes)
    packaged = model_error_packaged(calibrated, clock_derate)
    error_summary = model_error_summary(packaged)
    cols = [layout_arrays(layout, n, workload.precision) for layout in layouts]
    # One pass per set of columns: layouts with an explicit --pp-layers split carry three more
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, col in enumerate(cols):
        groups.setdefault(tuple(col), []).append(i)
    results: list[StepResult | None] = [None] * len(layouts)
    for keys, rows in groups.items():
        stacked = {k: np.asarray([cols[i][k] for i in rows]) for k in keys}
        out = evaluate(a, hw, stacked, asm, seq, PRECISION_BITS[workload.precision], clock_derate)
        flat = {
            k: np.asarray(out[k]).reshape(-1)
            for k in (
                "micro_batches",
                "memory_per_gpu_gb",
                "model_flop",
                "hardware_flop",
                "megatron2021_flop",
                *MEMORY_PARTS,
            )
        }
        for j, i in enumerate(rows):
            layout = layouts[i].model_dump()
            layout["dp"] = cols[i]["dp"]
            layout["fp32_grad_accumulation"] = cols[i]["fp32_grads"]  # as resolved for the precision
            perf = annotated_performance(
                out, j, layout, cluster, asm, workload.tokens, workload.usd_per_gpu_hour, packaged
            )
            perf["warnings"] += ignored_options(layout) + cluster_notes
            results[i] = StepResult(
                **perf,
                layout=layout,
                micro_batches=flat["micro_batches"][j].item(),
                model=a.name,
                n_gpus=n,
                gpu=cluster.gpu,
                network=network,
                usable_memory_gb=usable,
                fit_note=_fit_note(flat["memory_per_gpu_gb"][j].item(), usable, layouts[i], cols[i]["dp"]),
                memory_breakdown_gb={k[7:-3]: flat[k][j].item() for k in MEMORY_PARTS},
                params_b=params_b,
                model_flop_per_step=flat["model_flop"][j].item(),
                hardware_flop_per_step=flat["hardware_flop"][j].item(),
                megatron2021_flop_per_step=flat["megatron2021_flop"][j].item(),
                model_error=error_summary,
            )
    return results


# The assumptions of the table the datacenter step reads (`evaluate`, `resolve_hardware`, run totals): what
# `step --uncertainty` and `plan --uncertainty` may draw from the table (a test keeps it equal to the
# `asm.NAME` reads of this module).
ASSUMPTIONS_READ = (
    "causal_skip_fraction",
    "ddp_bucket_mb",
    "flash_backward_factor",
    "flash_head_dim_max",
    "flash_head_dim_multiple",
    "flash_head_dim_round_limit",
    "fp8_cast_bytes_per_element",
    "framework_overhead_gb",
    "grad_bytes",
    "hbm_efficiency",
    "leaf_switch_nodes",
    "nccl_tree_bandwidth_factor",
    "optimizer_bytes",
    "optimizer_traffic_bytes",
    "overlap_compute_slowdown",
    "pue",
    "softmax_bytes_per_score",
    "usable_memory_fraction",
    "weight_bytes",
    "weight_grad_share",
)
# read once per run by resolve_hardware (the network), so a Monte Carlo cannot vary them per draw
HARDWARE_ASSUMPTIONS = ("leaf_switch_nodes", "nccl_tree_bandwidth_factor")
DRAWN_OUTPUTS = ("step_time_s", "mfu", "tokens_per_s", "memory_per_gpu_gb", "fits")


def step_draws(
    workload: Workload,
    layouts: Sequence[Layout],
    rows: dict[str, np.ndarray],
    calibrated: bool = True,
    calibration: str | Path | dict[str, Any] | None = None,
) -> list[dict[str, np.ndarray]]:
    """Each layout on the workload's model, cluster and run with the assumptions in `rows` (name → one
    value per draw, every formula reading them row-wise): per layout, the DRAWN_OUTPUTS and the PUE as
    arrays of one value per draw. With no rows, one draw at the point values, equal to what `step` gives."""
    with calibration_in_use(calibration):
        a, asm, hw, seq = _prepared(workload, layouts, calibrated, "layouts[{i}].")
        cluster = workload.cluster
        n = len(next(iter(rows.values()))) if rows else 1
        if rows:
            asm = asm.with_rows(rows)
        out = []
        for layout in layouts:
            cols = {
                k: np.full(n, v) for k, v in layout_arrays(layout, cluster.n_gpus, workload.precision).items()
            }
            res = evaluate(a, hw, cols, asm, seq, PRECISION_BITS[workload.precision])
            drawn = {k: np.asarray(res[k]).reshape(-1) for k in DRAWN_OUTPUTS}
            drawn["pue"] = np.broadcast_to(np.asarray(asm.pue, dtype=float), (n,))
            out.append(drawn)
        return out


def _fit_note(need_gb: float, usable_gb: float, layout: Layout, dp: int) -> str:
    """Why a layout does not fit and what would shrink it ('' when it fits)."""
    if need_gb <= usable_gb:
        return ""
    # the layout's fields, as the CLI's flags (--zero), the API's body and the page's inputs all name them
    moves = []
    if layout.zero < 3 and dp * layout.cp > 1:  # ZeRO shards over data-parallel ranks only
        moves.append("zero 3")
    moves.append("more pp or tp")
    if layout.recompute != "full":
        moves.append("recompute full")
    if layout.mbs > 1:
        moves.append("a smaller mbs")
    moves.append("more GPUs")
    return (
        f"does not fit: needs {need_gb:,.1f} GB per GPU of the {usable_gb:,.1f} GB usable; the step time is "
        f"what it would take, not an answer. To shrink it: {', '.join(moves)}."
    )
