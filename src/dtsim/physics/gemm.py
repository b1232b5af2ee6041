"""Time of one matrix multiplication on one GPU (Erdil & Schneider-Joseph 2024 §8.1.1), vectorized over shapes.

The product of a d1×d2 weight matrix with a d2×b activation block (or the weight-gradient product
of a d1×b block with a b×d2 block) takes

    t = max(arithmetic, HBM traffic, L2 traffic, shared-memory traffic) + kernel latency

- arithmetic: 2·d1·d2·b FLOP, each dimension padded to the 16-wide tensor-core chunk, at the
  sustained tensor-core rate (SMs × 128 threads × FLOP/clock/thread × boost clock × sustained-clock
  derate), quantized to whole output tiles and whole waves of tiles (below);
- traffic at each memory level: the kernel is tiled by the weight matrix (Erdil & Schneider-Joseph 2024 §8.1.1) so each
  tile fits the level's usable capacity (75% of L2, of the four processing blocks' registers per SM,
  of one block's registers); activations are re-read once per tile row and output partial sums
  re-written once per tile column; weights move only when weights and gradients do not fit at the
  lower level. Hopper's distributed shared memory lets SMs share loads instead of re-reading L2.
  On Blackwell (`micro.tensor_memory_bytes`) one MMA per SM, or per pair of SMs (`mma_cta_pair`),
  accumulates in Tensor Memory: the SM-level tile is then the Tensor Memory's (twice it over half as
  many units for a pair) in place of the four processing blocks' registers, counted in operand bytes
  as the register file is (the reference's convention: a capacity, not a count of FP32 accumulators).
- tile and wave quantization: the output is computed in 128×128 tiles spread over the SMs; a
  partly filled tile costs a whole one and a last partial wave idles the rest of the SMs (NVIDIA,
  "Matrix Multiplication Background User's Guide" §3.1–3.2), so a hidden size that 128·TP does not
  divide costs more per FLOP than its neighbour that it does divide.

On a TPU (`micro.systolic`) the product runs on systolic matrix units instead: `systolic_gemm_time`.

All inputs broadcast; nothing branches in Python on values.
"""

from __future__ import annotations

import numpy as np

TENSOR_CORE_CHUNK = (
    16  # elements: the MMA tile edge the dimensions are padded to (Erdil & Schneider-Joseph 2024 model)
)
USABLE_FRACTION = (
    0.75  # of L2 and of the register file, as the Erdil & Schneider-Joseph 2024 reference assumes
)
OUTPUT_TILE = 128  # CUTLASS/cuBLAS threadblock tile edge used for wave quantization
SMEM_BYTES_PER_CLOCK_PER_SM = 32 * 4  # 32 banks × 4 bytes


def _tiles(rows, cols, tile_bytes, bytewidth):
    """Tile a rows×cols matrix into the fewest tiles of at most tile_bytes, as square as the matrix
    allows; return (number of tile rows, number of tile columns) as real numbers."""
    words = rows * cols
    count = np.ceil(words * bytewidth / tile_bytes)
    per_tile = words / count
    tile_rows = np.maximum(np.minimum(rows, np.sqrt(per_tile)), per_tile / cols)
    tile_cols = per_tile / tile_rows
    return rows / tile_rows, cols / tile_cols


def _level_traffic(d1, d2, b, bytewidth, tile_bytes, concurrent, shared_network, weight_grads):
    """(bytes moved between this level and the one above, bytes moved among the concurrent units of
    this level) for one GEMM, tiled by the d1×d2 weight matrix."""
    weight = d1 * d2 * bytewidth
    left = d1 * b * bytewidth  # output (or output gradient) block
    right = d2 * b * bytewidth  # input (or input gradient) block
    weights_stay = 2.0 * weight <= tile_bytes * concurrent
    if shared_network:
        big_rows, big_cols = _tiles(d1, d2, tile_bytes * concurrent, bytewidth)
        small_rows, small_cols = _tiles(d1, d2, tile_bytes, bytewidth)
    else:
        big_rows, big_cols = _tiles(d1, d2, tile_bytes, bytewidth)
        small_rows = small_cols = 1.0
    weight_io = np.where(weights_stay, 0.0, np.where(weight_grads, 2.0 * weight, weight))
    inter = (
        weight_io + big_rows * right + np.where(weight_grads, big_cols * left, (2.0 * big_cols - 1.0) * left)
    )
    among = 2.0 * ((small_rows - 1.0) * right + (small_cols - 1.0) * left)
    return inter, among


def gemm_time(
    d1,
    d2,
    b,
    micro,
    bits: int = 16,
    weight_grads=False,
    clock_derate=None,
    wave_quantization=True,
    chunk: int = TENSOR_CORE_CHUNK,
    smem_counts_l2_loads: bool = True,
    matmul_latency_s: float | None = None,
):
    """Seconds for one GEMM of a d1×d2 weight with d2×b activations (see the module docstring).

    `clock_derate` overrides the catalog's sustained-clock derate (calibration). The frontier-limits
    model runs it as Erdil & Schneider-Joseph 2024 describes it: `wave_quantization=False`, `chunk=8` (tensor-core inputs
    need each dimension to be a multiple of 8, Erdil & Schneider-Joseph 2024 §5.1.2) and `smem_counts_l2_loads=False`
    (on Hopper the L2 → SM copies arrive by TMA / DSMEM multicast rather than through the shared-memory
    banks the processing blocks read from). `matmul_latency_s` overrides the catalog's kernel floor."""
    if micro.systolic:
        return systolic_gemm_time(d1, d2, b, micro, bits, weight_grads, clock_derate, matmul_latency_s)
    d1 = np.asarray(d1, dtype=float)
    d2 = np.asarray(d2, dtype=float)
    b = np.asarray(b, dtype=float)
    bytewidth = bits / 8.0
    # FP8 keeps a smaller share of its peak than 16-bit does (Micro.sustained_share)
    clock = micro.max_clock_hz * micro.sustained_share(bits, clock_derate)
    block_regs = USABLE_FRACTION * micro.register_bytes_per_block

    hbm_l2, _ = _level_traffic(
        d1, d2, b, bytewidth, USABLE_FRACTION * micro.l2_bytes, 1.0, False, weight_grads
    )
    if micro.tensor_memory_bytes:
        # Blackwell: one MMA per SM (or per SM pair, cta_group::2) accumulates its whole output tile in
        # Tensor Memory and reads both operands from shared memory, so the tile that sets the L2 → SM
        # and the shared memory → tensor core traffic is Tensor Memory's (twice it, over half as many
        # units, for a pair), not the register file's per processing block (see Micro). Its size is
        # counted in operand bytes, as the register file's is above: Tensor Memory is as large as the
        # register file (256 KiB per SM), so the gain is the one tile per SM (pair) where Hopper has four
        # per SM, not a larger capacity.
        pair = 2.0 if micro.mma_cta_pair else 1.0
        tile = USABLE_FRACTION * micro.tensor_memory_bytes * pair
        l2_sm, dsmem = _level_traffic(
            d1, d2, b, bytewidth, tile, micro.num_sms / pair, micro.distributed_shared_memory, weight_grads
        )
        sm_reg, _ = _level_traffic(d1, d2, b, bytewidth, tile, micro.num_sms / pair, False, weight_grads)
    else:
        l2_sm, dsmem = _level_traffic(
            d1,
            d2,
            b,
            bytewidth,
            4.0 * block_regs,
            micro.num_sms,
            micro.distributed_shared_memory,
            weight_grads,
        )
        sm_reg, _ = _level_traffic(d1, d2, b, bytewidth, block_regs, 4.0 * micro.num_sms, False, weight_grads)
    hbm_bytes = hbm_l2
    l2_bytes = hbm_l2 + l2_sm
    smem_bytes = np.where(smem_counts_l2_loads, l2_sm, 0.0) + dsmem + sm_reg

    flop = 2.0 * np.ceil(d1 / chunk) * np.ceil(d2 / chunk) * np.ceil(b / chunk) * chunk**3
    out_cols = np.where(weight_grads, d2, b)
    inner = np.where(weight_grads, b, d2)
    units = np.ceil(d1 / OUTPUT_TILE) * np.ceil(out_cols / OUTPUT_TILE)
    waves = np.ceil(units / micro.num_sms)
    flop_rate = micro.flop_per_clock_per_thread[bits] * 128 * micro.num_sms * clock

    # Tile and wave quantization (NVIDIA, "Matrix Multiplication Background User's Guide" §3): a
    # partly filled output tile costs a whole tile, and a wave of tiles takes as long as its SMs'
    # busiest one, so the kernel runs `waves` rounds of a full tile's arithmetic on every SM.
    def tile(n):  # a dimension narrower than one tile runs on a tile cut to its width
        return np.minimum(OUTPUT_TILE, np.ceil(n / chunk) * chunk)

    quantized = waves * micro.num_sms * 2.0 * tile(d1) * tile(out_cols) * np.ceil(inner / chunk) * chunk
    arithmetic = np.where(wave_quantization, quantized, flop) / flop_rate
    movement = np.maximum(
        np.maximum(hbm_bytes / micro.hbm_bytes_per_s, l2_bytes / micro.l2_bytes_per_s),
        smem_bytes / (SMEM_BYTES_PER_CLOCK_PER_SM * micro.num_sms * clock),
    )
    latency = micro.matmul_latency_s if matmul_latency_s is None else matmul_latency_s
    return np.maximum(arithmetic, movement) + latency


SUBLANES = 8  # rows of the TPU's (8, 128) vector registers: the streamed dimension is fed 8 rows at a time


def systolic_gemm_time(
    d1, d2, b, micro, bits: int = 16, weight_grads=False, clock_derate=None, matmul_latency_s=None
):
    """Seconds for one GEMM of a d1×d2 weight with d2×b activations on a TPU (the same shape for the
    input- and weight-gradient products), as a roofline (Austin et al. 2025, "How to Scale Your Model",
    chapters "All About Rooflines" and "How to Think About TPUs"):

        t = max(2·d1'·d2'·b' / (peak × sustained fraction), bytes / HBM bandwidth) + per-op latency

    The MXU is a mxu_dim × mxu_dim systolic array (128, 256 on v6e) holding a block of the weight while
    the activations stream through it 8 rows at a time, so the weight's dimensions are padded to the MXU
    edge (d1', d2') and the streamed one to 8 (b'): a weight narrower than the array leaves part of it
    idle. XLA pipelines the HBM → VMEM copies under the MXU work, so the traffic is each operand and
    the result moved once. The weight-gradient product (`weight_grads`) has the same operand shapes and
    the same time."""
    d1 = np.asarray(d1, dtype=float)
    d2 = np.asarray(d2, dtype=float)
    b = np.asarray(b, dtype=float)
    m = float(micro.mxu_dim)
    derate = micro.sustained_share(bits, clock_derate)
    flop = 2.0 * (np.ceil(d1 / m) * m) * (np.ceil(d2 / m) * m) * (np.ceil(b / SUBLANES) * SUBLANES)
    arithmetic = flop / (micro.peak_flop_s(bits) * derate)
    movement = (d1 * d2 + d1 * b + d2 * b) * (bits / 8.0) / micro.hbm_bytes_per_s
    latency = micro.matmul_latency_s if matmul_latency_s is None else matmul_latency_s
    return np.maximum(arithmetic, movement) + latency + np.zeros(np.shape(weight_grads))


def memory_bound_time(bytes_moved, micro, efficiency):
    """Element-wise kernels, softmax and optimizer steps: bytes / (HBM bandwidth × efficiency)."""
    return np.asarray(bytes_moved, dtype=float) / (micro.hbm_bytes_per_s * efficiency)
