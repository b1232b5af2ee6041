"""The emulator against dtsim's predictions (issue 7, items 1 and 2). Needs root and torch.

    python benchmarks/emulator.py [--model medium] [--steps 2]

1. 4 workers, DDP, the 23M-parameter `medium` GPT, every link capped at 50 and then 200 Mbit/s:
   bytes sent per rank per all-reduce (payload; headers and ACKs reported apart) against
   2(N−1)/N × gradient bytes, and the measured all-reduce time against the prediction.
2. DiLoCo (H = 32, int8 pseudo-gradients) against DDP at 50 Mbit/s: the measured tokens-per-second
   ratio against the predicted ratio.
"""

from __future__ import annotations

import argparse
import platform
import time

from dtsim.emulator.launcher import EmulateOptions, run
from dtsim.emulator.summary import EmulationSummary


def show(name: str, s: EmulationSummary) -> None:
    print(
        f"{name}: payload/rank/sync {s.payload_bytes_per_rank_per_sync / 1e6:.2f} MB vs expected "
        f"{s.expected_bytes_per_rank_per_sync / 1e6:.2f} MB ({s.bytes_error:+.2%}; overhead "
        f"{s.protocol_overhead_bytes_per_rank_per_sync / 1e6:.2f} MB); sync {s.measured_sync_s:.2f} s vs "
        f"predicted {s.predicted_sync_s:.2f} s ({s.sync_error:+.1%}); step {s.measured_step_s:.2f} s vs "
        f"{s.predicted_step_s:.2f} s ({s.step_error:+.1%}); {s.tokens_per_s:.0f} tokens/s "
        f"(predicted {s.predicted_tokens_per_s:.0f}); wall {s.run.wall_s:.0f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="medium")
    ap.add_argument("--steps", type=int, default=2)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.platform()}")
    t0 = time.time()
    common = {"workers": 4, "model": args.model, "batch": 2, "seq_len": 64, "timeout_s": 1200}
    ok = True
    results = {}
    for mbps in (50.0, 200.0):
        s = run(EmulateOptions(bandwidth_mbps=mbps, steps=args.steps, **common))
        results[mbps] = s
        show(f"DDP {mbps:g} Mbit/s", s)
        ok &= abs(s.bytes_error) <= 0.03 and abs(s.sync_error) <= 0.20
    d = run(
        EmulateOptions(
            bandwidth_mbps=50.0,
            algorithm="diloco",
            inner_steps=32,
            compression="int8",
            steps=args.steps,
            **common,
        )
    )
    show("DiLoCo H=32 int8 50 Mbit/s", d)
    ddp = results[50.0]
    measured = d.tokens_per_s / ddp.tokens_per_s
    predicted = d.predicted_tokens_per_s / ddp.predicted_tokens_per_s
    err = measured / predicted - 1
    print(
        f"DiLoCo/DDP tokens-per-second ratio: measured {measured:.2f}, predicted {predicted:.2f} ({err:+.1%})"
    )
    ok &= abs(err) <= 0.20
    print(
        f"all checks {'met' if ok else 'NOT met'} (bytes ≤ 3%, all-reduce time ≤ 20%, ratio ≤ 20%); {time.time() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()
