"""Time of one training step of the toy model on a layout (Erdil & Schneider-Joseph 2024 §3, §8.1), vectorized over
layouts and their splits across the network levels.

A layout is DP × TP_model × TP_ff × PP × EP with an interleaving factor v, a micro-batch count m and
a schedule (1F1B with interleaving, or zero-bubble ZB-H2); a split gives each degree's factor at each
network level (the top level takes the rest). Per step:

- GEMMs (§2, §8.1.1): every GPU runs, per layer it holds, per expert it holds and per micro-batch,
  the forward GEMMs (f/TP_ff × d/TP_model and its mirror, on b′ = B/(DP·m·E) tokens), the activation-
  gradient GEMMs (transposed weights) and the weight-gradient GEMMs — `physics.gemm.gemm_time`, the
  datacenter model's GEMM model run as Erdil & Schneider-Joseph 2024 describes it.
- DP (§3.1.3, §8.1.2): N_p words all-reduced hierarchically; level h moves 2(p_h − 1) words per word
  and per replica of the levels above, over the aggregate bandwidth N·B_h/2 of the cluster; the
  levels' bandwidth phases overlap (the time is the slowest level's), their latencies add: 2·t_h per
  level that has more than one participant.
- TP (§3.1.4): d_ff words across TP_model and d_model words across TP_ff peers, twice per layer per
  token; the same hierarchy; latency 2·(2L)·t_h per level and dimension that is split.
- PP and EP (§8.1.2 eqs. 19–20): point-to-point d_model words per token at each pipeline-stage
  interface — 2·∏_{k>h} N_PP(k)·(N_PP(h) − 1)·v interfaces at a level h below h*, the highest level
  holding stages, and 2(N_PP(h*)·v − 1) at h* — and at the other L − N_PP·v layer boundaries when the
  next expert sits elsewhere; each at the higher of the two levels, weighted by the chance of the
  expert level (uniform routing). (The reference code counts 2(v − 1) of the interfaces at the top
  level even when the pipeline fits inside a node; dtsim follows eq. 19.)
- Bubble (§8.1.3, eq. 22): f_b = (N_PP − 1 + z)/(N_PP − 1 + z + v·m), z = (v − 1)·max(0, N_PP − m);
  zero for ZB-H2 (m ≥ 2·N_PP − 1).
- Step (eq. 21, DP not overlapped, TP/PP/EP overlapped): 1F1B: t = latency + t_DP + max(t_GEMM,
  t_TP + t_PP)/(1 − f_b); ZB-H2: "only data-parallel communication counts toward t_network latency,
  as the rest can be hidden" (§8.1.5), t = t_lat,DP + t_DP + max(t_GEMM, t_TP + t_PP).
- Utilization = 6·(N_p/E)·B / (N·peak) / t; run time = (D/B)·t.
"""

from __future__ import annotations

import numpy as np

from dtsim.models.limits.hardware import LimitsHardware
from dtsim.models.limits.scaling import Shape
from dtsim.physics.collectives import hierarchical_ring_words, products_above, products_below
from dtsim.physics.gemm import gemm_time
from dtsim.physics.pipeline import bubble_fraction_seed002 as bubble_fraction

__all__ = ["bubble_fraction", "communication", "gemm_time_per_step", "step_time", "utilization"]

LIMITS_CHUNK = 8  # Erdil & Schneider-Joseph 2024 §5.1.2: tensor-core inputs in multiples of 8


def _gemm(d1, d2, b, hw: LimitsHardware, weight_grads=False):
    return gemm_time(
        d1,
        d2,
        b,
        hw.micro,
        hw.bits,
        weight_grads,
        None,
        wave_quantization=False,
        chunk=LIMITS_CHUNK,
        smem_counts_l2_loads=False,
        matmul_latency_s=hw.matmul_latency_s,
    )


def gemm_time_per_step(shape: Shape, hw: LimitsHardware, tp_model, tp_ff, dp, pp, ep, m):
    """Seconds of GEMMs per step on one GPU, and the per-GPU GEMM shape (f′, d′, b′)."""
    f1 = shape.d_ff // np.asarray(tp_ff)
    d1 = shape.d_model // np.asarray(tp_model)
    b1 = shape.batch_tokens // (np.asarray(dp) * np.asarray(m) * shape.sparsity)
    # One call for the four distinct GEMMs: the forward pair (f′×d′ and d′×f′ weights on b′ tokens) and
    # the weight-gradient pair. The activation-gradient GEMMs multiply by the transposed weights, the
    # forward pair's shapes in the other order, so they take the forward pair's time.
    f1, d1, b1 = np.broadcast_arrays(f1, d1, b1)
    weight_grads = np.array([False, False, True, True]).reshape(4, *(1,) * f1.ndim)
    t = _gemm(np.stack([f1, d1, f1, d1]), np.stack([d1, f1, d1, f1]), b1, hw, weight_grads)
    fwd = t[0] + t[1]
    wgt = t[2] + t[3]
    per = (shape.layers // np.asarray(pp)) * (shape.sparsity // np.asarray(ep)) * np.asarray(m)
    return per * (fwd + fwd + wgt), (f1, d1, b1)


def _over_levels(ufunc, x):
    """`ufunc` reduced over the last (level) axis, one level at a time: the same numbers as
    `ufunc.reduce(x, axis=-1)` (in the same order) without numpy's slow path for a short last axis."""
    out = x[..., 0]
    for h in range(1, x.shape[-1]):
        out = ufunc(out, x[..., h])
    return out


def communication(shape: Shape, hw: LimitsHardware, n_gpus, levels: dict[str, np.ndarray], v):
    """Bandwidth and latency seconds per step for DP, TP and PP/EP. `levels[k]` has shape (..., H)
    for k in dp, tp_model, tp_ff, pp, ep."""
    H = hw.levels
    bw = np.asarray(hw.bandwidth, dtype=float)
    lat = np.asarray(hw.latency, dtype=float)
    by = hw.bytewidth
    n = np.asarray(n_gpus, dtype=float)[..., None]
    agg = n * bw / 2.0  # the cluster's aggregate unidirectional bandwidth at each level
    B = float(shape.batch_tokens)
    L = float(shape.layers)
    dpl, tpm, tpf, ppl, epl = (levels[k].astype(float) for k in ("dp", "tp_model", "tp_ff", "pp", "ep"))

    dp_bw = hierarchical_ring_words(dpl) * shape.params * by / agg
    dp_comm = _over_levels(np.maximum, dp_bw)
    dp_lat = _over_levels(np.add, 2.0 * lat * (dpl > 1))

    tp_bw = (
        (hierarchical_ring_words(tpm) * shape.d_ff + hierarchical_ring_words(tpf) * shape.d_model)
        * 2.0
        * L
        * B
        * by
        / agg
    )
    tp_comm = _over_levels(np.maximum, tp_bw)
    tp_lat = _over_levels(np.add, 2.0 * 2.0 * L * lat * ((tpm > 1).astype(float) + (tpf > 1)))

    n_pp = _over_levels(np.multiply, ppl)
    n_ep = _over_levels(np.multiply, epl)
    v = np.asarray(v, dtype=float)
    pp_suffix = products_above(ppl)
    ep_prefix = products_below(epl)  # ∏_{k<h} N_EP(k) for h = 0…H
    pp_comm = np.zeros(np.broadcast(dp_comm, v).shape)
    pp_lat = np.zeros_like(pp_comm)
    word_bytes = shape.d_model * B * by
    # h*: the highest level that holds pipeline stages (-1 when there is no pipeline)
    idx = np.arange(H)
    hstar = _over_levels(np.maximum, np.where(ppl > 1, idx, -1))
    for ph in range(H):
        lower = 2.0 * pp_suffix[..., ph] * (ppl[..., ph] - 1.0) * v
        top = 2.0 * (ppl[..., ph] * v - 1.0)
        reps = np.where(hstar == ph, top, np.where(ph < hstar, lower, 0.0))
        for eh in range(-1, H):
            prob = 1.0 / n_ep if eh == -1 else (ep_prefix[..., eh + 1] - ep_prefix[..., eh]) / n_ep
            lev = max(ph, eh)
            c = word_bytes * reps / agg[..., lev]
            lt = reps * lat[lev]
            if eh >= 0:
                reps_ep = 2.0 * (L - n_pp * v)
                c = c + word_bytes * reps_ep / agg[..., eh]
                lt = lt + reps_ep * lat[eh]
            pp_comm = pp_comm + prob * c
            pp_lat = pp_lat + prob * lt
    return {
        "dp_comm": dp_comm,
        "dp_lat": dp_lat,
        "tp_comm": tp_comm,
        "tp_lat": tp_lat,
        "pp_comm": pp_comm,
        "pp_lat": pp_lat,
    }


def step_time(gemm_s, comm: dict[str, np.ndarray], fb, zero_bubble):
    """Erdil & Schneider-Joseph 2024 eq. 21 with DP not overlapped and TP/PP/EP overlapped."""
    overlapped = comm["tp_comm"] + comm["pp_comm"]
    one_f_one_b = (
        comm["dp_lat"]
        + comm["tp_lat"]
        + comm["pp_lat"]
        + comm["dp_comm"]
        + np.maximum(gemm_s, overlapped) / (1.0 - fb)
    )
    zb = comm["dp_lat"] + comm["dp_comm"] + np.maximum(gemm_s, overlapped)
    return np.where(zero_bubble, zb, one_f_one_b)


def utilization(shape: Shape, hw: LimitsHardware, n_gpus, step_s):
    arithmetic = 6.0 * shape.active_params * shape.batch_tokens / (hw.peak_flop_s * np.asarray(n_gpus, float))
    return arithmetic / step_s
