"""Throughput of the emulator's pseudo-gradient codecs on this CPU (issue 16 item 8): the numbers
behind `codec_int8_bytes_per_s_cpu` and `codec_topk_bytes_per_s_cpu` in the assumptions table.

    python benchmarks/codec_throughput.py [--values 4000000] [--repeats 5] [--ratio 100]

Times, with one torch thread (as each emulator worker runs), the codec code the emulator uses
(`dtsim.emulator.averager`): int8 — one per-chunk absmax quantization and one dequantization of
`--values` fp32 values; top-k — one magnitude top-k selection of 1/`--ratio` of them plus the
error-feedback residual update. Reports fp32 input bytes per second (the median of the repeats).
Needs the `emulator` extra (PyTorch).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time


def main() -> None:
    import torch

    from dtsim.emulator.averager import _quantize

    ap = argparse.ArgumentParser()
    ap.add_argument("--values", type=int, default=4_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ratio", type=float, default=100.0)
    a = ap.parse_args()
    torch.set_num_threads(1)
    x = torch.randn(a.values, generator=torch.Generator().manual_seed(0))
    chunks = x.view(2, -1) if a.values % 2 == 0 else x.view(1, -1)
    quant, dequant, topk = [], [], []
    k = max(1, math.ceil(a.values / a.ratio))
    residual = torch.zeros(a.values)
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        q, s = _quantize(chunks)
        t1 = time.perf_counter()
        (q.float() * s[:, None]).reshape(-1)
        t2 = time.perf_counter()
        v = x + residual
        idx = torch.topk(v.abs(), k, sorted=False).indices
        residual = v
        residual[idx] = 0.0
        t3 = time.perf_counter()
        quant.append(t1 - t0)
        dequant.append(t2 - t1)
        topk.append(t3 - t2)
    nbytes = 4 * a.values
    out = {
        "values": a.values,
        "topk_ratio": a.ratio,
        "int8_quantize_bytes_per_s": nbytes / statistics.median(quant),
        "int8_dequantize_bytes_per_s": nbytes / statistics.median(dequant),
        "int8_roundtrip_bytes_per_s": nbytes
        / statistics.median([a + b for a, b in zip(quant, dequant, strict=True)]),
        "topk_bytes_per_s": nbytes / statistics.median(topk),
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
