"""One int8 ring hand-off between two ranks, timed apart from the emulator (issue 16 item 8): why the
emulator's int8 ring posts each hand-off in pieces, as PRIME's ring does.

    sudo python benchmarks/gloo_exchange.py [--mbps 1000] [--bytes 2100000] [--rounds 12]

Two `torch.distributed` (gloo) ranks in two network namespaces shaped as the emulator shapes them
(`emulator.netns.Topology`: tbf in both directions, 10 ms queue). Each round, after a barrier and
0.3 s idle (DiLoCo's link idles between syncs), both ranks exchange `--bytes` of int8 twice, as the
ring's two hand-offs at world size 2, in four ways:

- `one way`: rank 0 sends, rank 1 receives (no traffic the other way);
- `both ways, 1 message`: each rank sends one message and receives one (the ring's exchange);
- `both ways, 2 pieces` / `8 pieces`: the same bytes as 2 or 8 messages posted together.

Prints the median and range of one hand-off and the α-β time of its bytes at the line rate (TCP/IP
headers included). Needs root and the `emulator` extra (PyTorch).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = {"one way": 0, "both ways, 1 message": 1, "both ways, 2 pieces": 2, "both ways, 8 pieces": 8}


def worker(rank: int, pieces: int, size: int, rounds: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=2)
    send = torch.ones(size, dtype=torch.int8)
    recv = torch.empty(size, dtype=torch.int8)
    hops = []
    for _ in range(rounds):
        dist.barrier()
        time.sleep(0.3)
        dist.barrier()
        for _hop in range(2):
            t0 = time.perf_counter()
            if pieces == 0:
                (dist.isend(send, 1) if rank == 0 else dist.irecv(recv, 0)).wait()
            else:
                reqs = []
                for tag, (s, r) in enumerate(zip(send.chunk(pieces), recv.chunk(pieces), strict=True)):
                    reqs += [dist.isend(s, 1 - rank, tag=tag), dist.irecv(r, 1 - rank, tag=tag)]
                for q in reqs:
                    q.wait()
            hops.append(time.perf_counter() - t0)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 1:  # the receiving side in `one way`; either side otherwise
        Path(out).write_text(json.dumps(hops[4:]))  # the first two rounds warm the connection up


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mbps", type=float, default=1000.0)
    ap.add_argument("--bytes", type=int, default=2_100_000)
    ap.add_argument("--rounds", type=int, default=12)
    a = ap.parse_args()
    from dtsim.emulator.launcher import payload_rate_bytes_s
    from dtsim.emulator.netns import Topology

    topo = Topology(workers=2, bandwidth_mbps=a.mbps, run_id=f"gx{os.getpid() % 10000:04d}")
    ideal = a.bytes / payload_rate_bytes_s(a.mbps)
    rows = {}
    topo.create()
    try:
        for name, pieces in MODES.items():
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                env = {**os.environ, "MASTER_ADDR": topo.address(0), "MASTER_PORT": "29577"}
                env["GLOO_SOCKET_IFNAME"] = "eth0"
                procs = [
                    subprocess.Popen(
                        [
                            *topo.exec_prefix(r),
                            sys.executable,
                            __file__,
                            "--worker",
                            str(r),
                            str(pieces),
                            str(a.bytes),
                            str(a.rounds),
                            f.name,
                        ],
                        env=env,
                        stderr=subprocess.DEVNULL,
                    )
                    for r in range(2)
                ]
                for p in procs:
                    p.wait()
                hops = json.loads(Path(f.name).read_text())
            rows[name] = hops
    finally:
        for ns in topo.namespaces():
            subprocess.run(["ip", "netns", "del", ns], check=False)
    print(f"{a.bytes:,} bytes per hand-off at {a.mbps:g} Mbit/s: α-β time {ideal * 1e3:.1f} ms")
    for name, hops in rows.items():
        ms = sorted(h * 1e3 for h in hops)
        print(
            f"  {name:22s} median {statistics.median(ms):6.1f} ms  range {ms[0]:6.1f}–{ms[-1]:6.1f} ms  "
            f"({statistics.median(ms) / (ideal * 1e3) - 1:+.0%})"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        r, pieces, size, rounds, out = sys.argv[2:7]
        worker(int(r), int(pieces), int(size), int(rounds), out)
    else:
        main()
