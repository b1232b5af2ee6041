"""Model-state memory, expert-parallel sharding and the pipeline-stage trigger (MIRI simulator docs §2)."""

from __future__ import annotations

import numpy as np

from dtsim.physics.numeric import select

# Precision codes used by every vectorized path. BF16 shares FP16's byte counts (MIRI simulator docs §2.1 table).
PRECISIONS = ("fp16", "bf16", "fp8", "fp4")
EP_MODES = ("none", "regional", "global")


def bytes_per_param(precision, asm):
    """β: bytes of model state per parameter, 16 / 14 / 13 for FP16 / FP8 / FP4 (MIRI simulator docs §2.1)."""
    table = np.array(
        [asm.bytes_per_param_fp16, asm.bytes_per_param_fp16, asm.bytes_per_param_fp8, asm.bytes_per_param_fp4]
    )
    return table[precision]


def bytes_per_value(precision, asm):
    """Bytes per communicated value, 2 / 1 / 0.5 for FP16 / FP8 / FP4 (MIRI simulator docs §8.1)."""
    table = np.array(
        [asm.bytes_per_value_fp16, asm.bytes_per_value_fp16, asm.bytes_per_value_fp8, asm.bytes_per_value_fp4]
    )
    return table[precision]


def expert_split(total_params, active_params, moe):
    """(P_shared, P_experts): P_shared = P_active and P_experts = P_total − P_active for MoE; a dense
    model is all shared (MIRI simulator docs §2.3, §2.4)."""
    total_params = np.asarray(total_params, dtype=float)
    shared = select(moe, active_params, total_params)
    return shared, total_params - shared


def ep_degree(ep_mode, moe, num_nodes, nodes_per_group):
    """N_EP: N for global EP, N_group for regional EP, 1 otherwise or for dense models (MIRI simulator docs §2.4)."""
    degree = select(ep_mode == 2, num_nodes, select(ep_mode == 1, nodes_per_group, 1))
    return select(moe, degree, 1).astype(float)


def params_held(shared, experts, degree):
    """Parameters one node must hold: P_shared + P_experts / N_EP (MIRI simulator docs §2.4)."""
    return shared + experts / degree


def pipeline_stages(memory_bytes, vram_bytes):
    """S = ⌈M_req / VRAM⌉ when M_req > VRAM, else 1 (MIRI simulator docs §2.2)."""
    ratio = memory_bytes / vram_bytes
    return select(memory_bytes > vram_bytes, np.ceil(ratio), 1.0)


def max_params_fitting(vram_bytes, bytes_per_parameter):
    """Largest dense model whose states fit one node: VRAM / β (MIRI simulator docs Appendix A)."""
    return vram_bytes / bytes_per_parameter


def ep_buffer_bytes(tokens, hidden, bytes_per_value, asm):
    """Expert parallelism's all-to-all buffers for one micro-batch of `tokens`: each token's hidden vector
    goes to its k experts (dispatch) and comes back (combine), each through a send and a receive buffer
    sized for the capacity factor: 4 · tokens · k · capacity · h · bytes (GShard, Lepikhin et al. 2020
    §2.2 dispatch/combine tensors with expert capacity; capacity factor as in Fedus et al. 2021, Switch
    Transformers §2.2)."""
    return 4.0 * tokens * asm.moe_top_k * asm.moe_capacity_factor * hidden * bytes_per_value
