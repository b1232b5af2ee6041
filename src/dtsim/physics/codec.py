"""Compute time of pseudo-gradient codecs: what an int8 or top-k synchronisation costs besides the
bytes on the wire (issue 16 item 8: "in the emulator an int8 sync takes ~2× the predicted time").

A codec's time is the fp32 bytes it passes over divided by its throughput on the device; the
throughputs are assumptions-table entries (`codec_int8_bytes_per_s_cpu`, `codec_topk_bytes_per_s_cpu`
measured with `python benchmarks/codec_throughput.py`; the GPU ones from published kernel figures).

How many passes each codec makes over the values of one synchronisation, for N participants:

- int8, the quantized ring all-reduce INTELLECT-1 uses and `dtsim.emulator.averager` implements
  (Jaghouar et al. 2024, "INTELLECT-1 Technical Report" §int8 all-reduce; PRIME's `ring_allreduce`,
  src/zeroband/C/csrc/collectives.cpp): over the N − 1 reduce-scatter steps each rank quantizes the
  running sum of one chunk it sends and dequantizes the one it receives ((N − 1)/N of the vector each),
  quantizes its averaged chunk and sets it to the dequantized values (1/N each), and dequantizes the
  N − 1 chunks the all-gather brings ((N − 1)/N): 1 quantize and (2N − 1)/N dequantizes. The
  throughput entry is one quantize plus one dequantize (a round trip), so the sync costs
  (3 − 1/N) / 2 round trips (until 2026-11-26 dtsim counted the all-to-all form, which quantizes
  every chunk before sending: (3 + 1/N) / 2).
- topk:R (Stich et al. 2018, "Sparsified SGD with memory"): one magnitude top-k selection over the
  vector plus its error-feedback residual (1 pass); scattering the N·k received entries is
  O(N·n/R) and left out.
- none, fp16: no codec compute (the fp16 cast is folded into the all-reduce's own copy).
"""

from __future__ import annotations

import numpy as np

CODECS = ("none", "fp16", "int8", "topk")
DEVICES = ("cpu", "gpu")


def codec_passes(codec: str, world):
    """Round trips (int8) or selection passes (top-k) over the full vector per synchronisation of
    `world` participants; 0 for none and fp16. See the module docstring for the count's source."""
    n = np.maximum(np.asarray(world, dtype=float), 1.0)
    if codec == "int8":
        return np.where(n > 1, (1.0 + (2.0 * n - 1.0) / n) / 2.0, 0.0)
    if codec == "topk":
        return np.where(n > 1, 1.0, 0.0)
    if codec in ("none", "fp16"):
        return np.zeros_like(n)
    raise ValueError(f"codec must be one of {', '.join(CODECS)}, not {codec!r}")


def codec_bytes_per_s(codec: str, device: str, asm) -> float:
    """The assumptions table's throughput of `codec` on `device` (fp32 input bytes per second)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    if codec not in ("int8", "topk"):
        raise ValueError(f"only int8 and topk have a codec throughput, not {codec!r}")
    value = getattr(asm, f"codec_{codec}_bytes_per_s_{device}")
    return value if np.ndim(value) else float(value)  # per-row values (Monte Carlo) stay an array


def codec_time(fp32_bytes, codec: str, device: str = "cpu", asm=None, world=2, bytes_per_s=None):
    """Seconds of codec compute in one synchronisation of a vector of `fp32_bytes` (4 per value)
    among `world` participants: passes(codec, N) × bytes ÷ throughput. The throughput is the
    assumptions table's for `device` unless `bytes_per_s` is given (e.g. one measured in the run)."""
    if codec in ("none", "fp16"):
        return np.zeros_like(np.asarray(fp32_bytes, dtype=float))
    if bytes_per_s is None:
        if asm is None:
            from dtsim.assumptions import defaults

            asm = defaults()
        bytes_per_s = codec_bytes_per_s(codec, device, asm)
    return codec_passes(codec, world) * np.asarray(fp32_bytes, dtype=float) / bytes_per_s


# Codes of the `codec` and `codec_device` scenario fields, for the vectorized decentralized model.
MODEL_CODECS = ("none", "int8", "topk")


def codec_time_coded(fp32_bytes, codec_code, device_code, world, devices_per_node, asm):
    """`codec_time` for array inputs: `codec_code` indexes MODEL_CODECS, `device_code` DEVICES. A node
    codes its share of the values on each of its `devices_per_node` GPUs in parallel (one CPU codes
    all of them). 0 for 'none' and for a sync of one participant."""
    code = np.asarray(codec_code)
    passes = np.where(
        code == 1, codec_passes("int8", world), np.where(code == 2, codec_passes("topk", world), 0.0)
    )
    gpu = np.asarray(device_code) == 1

    def rate(codec: str):
        return np.where(gpu, codec_bytes_per_s(codec, "gpu", asm), codec_bytes_per_s(codec, "cpu", asm))

    per_node = np.where(code == 2, rate("topk"), rate("int8")) * np.where(gpu, devices_per_node, 1.0)
    return passes * np.asarray(fp32_bytes, dtype=float) / per_node
