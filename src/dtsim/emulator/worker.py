"""One training process of the emulator: `python -m dtsim.emulator.worker CONFIG.json`.

Reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT from the environment (as torchrun sets them), so
the same module runs unchanged across real machines:

    torchrun --nnodes 2 --nproc-per-node 1 --node-rank 0 --master-addr HOST0 --master-port 29500 \\
        -m dtsim.emulator.worker run.json

It trains the small GPT on its own synthetic stream with `torch.distributed` over gloo:

- ddp: DistributedDataParallel with its real gradient bucketing (`bucket_mb`); a communication hook
  timestamps every bucket's all-reduce, so the synchronisation time is measured, not inferred;
- diloco: H inner AdamW steps without communication, then the pseudo-gradients (global − local) are
  averaged with the chosen compression and applied by an outer Nesterov SGD step;
- diloco with `overlap`: the averaging of round k runs in a background thread while round k+1's inner
  steps compute, and is applied one outer step late, the worker's own round-k+1 progress kept on top
  of the new global parameters (the one-step-delayed outer update of Douillard et al. 2025,
  "Streaming DiLoCo with overlapping communication", and Kale et al. 2025, "Eager updates for
  overlapped communication and computation in DiLoCo", without their streaming of fragments or the
  eager use of the local pseudo-gradient).

Heterogeneity (the config's per-rank lists): `app_latency_by_rank` delays this rank's collectives by
its own link latency (`--latency-mode app`); `compute_factor_by_rank` F makes this rank a slower
worker: after each measured step's forward pass it sleeps (F − 1) × its own calibrated compute time
per step, as a device F times slower would take.

Before the measured steps it times `calib_steps` steps without any communication (the compute the
prediction needs). Per step it records compute, synchronisation and step time, the bytes and packets
the worker's interface sent and received (from /proc/net/dev, i.e. its network namespace), and the loss;
it writes everything to the results file named in the config.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from dtsim.emulator.averager import Averager
from dtsim.emulator.data import BigramLanguage
from dtsim.emulator.model import GPT, config_for, param_count
from dtsim.physics.collectives import ring_allreduce_steps


def iface_counters(iface: str | None) -> dict[str, int]:
    """tx/rx bytes and packets of `iface` (or of every interface but lo) in this network namespace."""
    out = {"tx_bytes": 0, "rx_bytes": 0, "tx_packets": 0, "rx_packets": 0}
    with open("/proc/net/dev") as fh:
        for line in fh.readlines()[2:]:
            name, data = line.split(":", 1)
            name = name.strip()
            if (iface and name != iface) or (not iface and name == "lo"):
                continue
            f = data.split()
            out["rx_bytes"] += int(f[0])
            out["rx_packets"] += int(f[1])
            out["tx_bytes"] += int(f[8])
            out["tx_packets"] += int(f[9])
    return out


def shared_clock() -> float:
    """Seconds on CLOCK_MONOTONIC, one clock for every process on the machine (network namespaces do not
    change it), so the ranks' times can be set side by side: when the last rank entered a sync and when
    the last one left it. Only on one machine: `clock_id` names the clock."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def clock_id() -> str:
    """Which CLOCK_MONOTONIC `shared_clock` reads: the kernel's boot id (it counts from that boot), else
    the host name. Ranks on different machines have different ones, and their times are not compared."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return socket.gethostname()


def _diff(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: b[k] - a[k] for k in a}


def flat_params(model) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).float() for p in model.parameters()])


def set_flat(model, flat: torch.Tensor) -> None:
    i = 0
    with torch.no_grad():
        for p in model.parameters():
            n = p.numel()
            p.copy_(flat[i : i + n].view_as(p).to(p.dtype))
            i += n


def codec_throughput(kind: str, numel: int, world: int, ratio: float) -> float | None:
    """fp32 input bytes per second of this run's codec on this worker, measured once before training
    on a vector of the model's size (the `codec_*_bytes_per_s_cpu` quantities of the assumptions
    table, measured in the run as the compute is): int8 — one quantize and one dequantize, top-k —
    one magnitude selection and residual update. None for none and fp16."""
    import math

    from dtsim.emulator.averager import _quantize

    if kind not in ("int8", "topk"):
        return None
    x = torch.randn(math.ceil(numel / world) * world, generator=torch.Generator().manual_seed(7))
    times = []
    for _ in range(3):  # fresh tensors each time, as the averager allocates them
        t0 = time.perf_counter()
        if kind == "int8":
            q, s = _quantize(x.view(world, -1))
            (q.float() * s[:, None]).reshape(-1)
        else:
            v = x + 0.0
            idx = torch.topk(v.abs(), max(1, math.ceil(numel / ratio)), sorted=False).indices
            v[idx] = 0.0
        times.append(time.perf_counter() - t0)
    return 4.0 * x.numel() / sorted(times)[1]


def codec_local_s(
    spec: str,
    numel: int,
    world: int,
    sample: torch.Tensor | None = None,
    residual: torch.Tensor | None = None,
) -> tuple[float, float] | None:
    """Seconds of one compressed sync's local work on this worker, (before its first collective, after
    it): the Averager's own code on `LocalOps` (every codec pass, padding copy, cast, sum and
    concatenation the sync makes, no communication) over a vector of the model's size, each part the
    median of three. The compute input of the sync's prediction, measured as the step compute is (with
    communication off). `sample` is the vector to time on (the run's last pseudo-gradient) and `residual`
    top-k's error-feedback state, as the sync will see them: top-k's selection time depends on the values
    (a magnitude select over a pseudo-gradient with exact zeros, rows the batch never touched, runs faster
    than over Gaussian noise: 53 ms against 61 ms for 4.2M values with 60 % zeros, 1 thread); without a
    sample, seeded Gaussian values. None for none and fp16."""
    from dtsim.emulator.averager import Averager, LocalOps

    ops = LocalOps(world)
    av = Averager(spec, numel, ops=ops)
    if av.kind not in ("int8", "topk"):
        return None
    x = torch.randn(numel, generator=torch.Generator().manual_seed(7)) if sample is None else sample
    before, after = [], []
    for _ in range(3):
        if av.residual is not None:
            av.residual = torch.zeros(numel) if residual is None else residual.clone()
        ops.first_collective_at = None
        t0 = time.perf_counter()
        av(x)
        t1 = time.perf_counter()
        mark = ops.first_collective_at if ops.first_collective_at is not None else t1
        before.append(mark - t0)
        after.append(t1 - mark)
    return sorted(before)[1], sorted(after)[1]


def sync_local_s(
    spec: str,
    numel: int,
    world: int,
    rank: int,
    sample: torch.Tensor | None = None,
    residual: torch.Tensor | None = None,
) -> float | None:
    """The local work a compressed sync holds, as the sync runs it: a sync is timed from the last rank's
    entry, so its work before the first collective runs on that rank alone while the others wait in the
    collective (timed here one rank at a time, the others waiting at a barrier); the work after it runs
    on every rank at once (timed with every rank at once). `sample`, `residual`: codec_local_s. Call on
    every rank together."""
    alone = None
    for turn in range(world):
        dist.barrier()
        if turn == rank:
            alone = codec_local_s(spec, numel, world, sample, residual)
    dist.barrier()
    together = codec_local_s(spec, numel, world, sample, residual)
    if alone is None or together is None:
        return None
    return alone[0] + together[1]


def _drained() -> float:
    """A sync ends for a rank when it has received its last message, while its own last message may
    still wait at its shaper (a send completes when the kernel has the bytes). The interface counters
    are read after a barrier: a rank leaves it only once every rank has entered it, and the rank its
    last message went to enters only after receiving it, so by then those bytes have left this rank's
    shaper and are counted (with a few of the barrier's own packets, negligible beside a sync).
    Returns the seconds it took, which no timing counts."""
    t0 = time.perf_counter()
    dist.barrier()
    return time.perf_counter() - t0


def _inner_step(step_compute, model, inner, record: dict, outer: int, h: int, i: int) -> float:
    """One DiLoCo inner step, recorded with its forward, backward and optimizer times; returns its
    compute seconds."""
    loss, tf, tb, to = step_compute(model, inner)
    record["steps"].append(
        {
            "step": outer * h + i,
            "outer": outer,
            "loss": loss,
            "forward_s": tf,
            "backward_s": tb,
            "optimizer_s": to,
        }
    )
    return tf + tb + to


def _overlapped_diloco(cfg, record, model, inner, averager, global_flat, step_compute, evaluate, iface):
    """DiLoCo with the outer synchronisation overlapped (see the module docstring). Each outer round:
    H inner steps; then wait for the previous round's averaged pseudo-gradient (the exposed part of
    its sync), apply the outer Nesterov step to the global parameters, put this round's own progress
    back on top of them, and start averaging this round's pseudo-gradient in the background. The
    record of round k holds the sync started in round k − 1 (round 0, with none, is warm-up)."""
    import threading

    rank, world = dist.get_rank(), dist.get_world_size()
    h = int(cfg.get("inner_steps", 32))
    batch_tokens = record["tokens_per_step"] * world
    outer_lr, outer_mom = float(cfg.get("outer_lr", 0.7)), float(cfg.get("outer_momentum", 0.9))
    latency_s = float(cfg.get("app_latency_s", 0.0))
    if cfg.get("app_latency_by_rank"):
        latency_s = float(cfg["app_latency_by_rank"][rank])
    momentum = torch.zeros_like(global_flat)
    anchor = flat_params(model)  # this round's starting point
    pending: dict[str, Any] | None = None
    tokens = 0

    def average(pseudo: torch.Tensor, out: dict[str, Any]) -> None:
        try:
            c0 = iface_counters(iface)
            s0 = time.perf_counter()
            a0 = shared_clock()
            if latency_s:
                time.sleep(float(ring_allreduce_steps(world)) * latency_s)
            out["avg"] = averager(pseudo)
            out["sync_s"] = time.perf_counter() - s0
            out["sync_at"] = [a0, shared_clock()]
            out["drain_s"] = _drained()  # every rank's last bytes have left its shaper; not timed
            out["counters"] = _diff(c0, iface_counters(iface))
        except BaseException as exc:  # re-raised in the main thread
            out["error"] = exc

    def finish(job: dict[str, Any]) -> float:
        t0 = time.perf_counter()
        job["thread"].join()
        if "error" in job:
            raise job["error"]
        return time.perf_counter() - t0

    warmup = int(cfg.get("warmup_steps", 0))
    for outer in range(warmup + int(cfg["steps"]) + 1):  # round 0 has no sync to wait for
        o0 = time.perf_counter()
        compute = 0.0
        for i in range(h):
            compute += _inner_step(step_compute, model, inner, record, outer, h, i)
            tokens += batch_tokens
        now = flat_params(model)
        pseudo = anchor - now  # this round's own progress, negated
        exposed, entry = 0.0, {"sync_s": 0.0, "tx_bytes": 0, "rx_bytes": 0, "tx_packets": 0, "rx_packets": 0}
        if pending is not None:
            waited = finish(pending)
            # the wait may hold the untimed barrier after the sync (_drained), which no timing counts
            uncounted = min(waited, pending["drain_s"])
            exposed, o0 = waited - uncounted, o0 + uncounted
            avg = pending["avg"]
            momentum.mul_(outer_mom).add_(avg)
            global_flat = global_flat - outer_lr * (avg + outer_mom * momentum)  # Nesterov, one round late
            entry = {"sync_s": pending["sync_s"], "sync_at": pending["sync_at"], **pending["counters"]}
        local = global_flat - pseudo
        set_flat(model, local)
        anchor = flat_params(model)
        pending = {"avg": None}
        pending["thread"] = threading.Thread(target=average, args=(pseudo, pending), daemon=True)
        pending["thread"].start()
        o1 = time.perf_counter()
        record["syncs"].append(
            {
                "outer": outer,
                "warmup": outer <= warmup,
                "compute_s": compute,
                "exposed_s": exposed,
                "step_s": o1 - o0,
                "inner_steps": h,
                **entry,
            }
        )
        record["evals"].append({"tokens": tokens, "loss": evaluate(model)})
    # drain: the last round's pseudo-gradient lands, so the final model holds every round
    finish(pending)
    momentum.mul_(outer_mom).add_(pending["avg"])
    global_flat = global_flat - outer_lr * (pending["avg"] + outer_mom * momentum)
    set_flat(model, global_flat)
    record["evals"].append({"tokens": tokens, "loss": evaluate(model)})


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(int(cfg.get("threads", 1)))
    dtype = {"float32": torch.float32, "float64": torch.float64}[cfg.get("dtype", "float32")]
    torch.manual_seed(int(cfg.get("seed", 0)))
    dist.init_process_group("gloo", timeout=timedelta(seconds=float(cfg.get("collective_timeout_s", 600))))
    gcfg = config_for(cfg["model"])
    model = GPT(gcfg).to(dtype)
    n_params = param_count(model)
    seq = min(int(cfg.get("seq_len", 128)), gcfg.context)
    batch = int(cfg.get("batch", 4))
    lang = BigramLanguage(gcfg.vocab, language_seed=int(cfg.get("language_seed", 1234)))
    gen = torch.Generator().manual_seed(1000 + rank + 7919 * int(cfg.get("seed", 0)))
    eval_gen = torch.Generator().manual_seed(99)
    eval_x, eval_y = lang.batch(int(cfg.get("eval_batch", 16)), seq, eval_gen)
    iface = cfg.get("iface")
    latency_s = float(cfg.get("app_latency_s", 0.0))
    if cfg.get("app_latency_by_rank"):
        latency_s = float(cfg["app_latency_by_rank"][rank])
    factor = float((cfg.get("compute_factor_by_rank") or [1.0] * world)[rank])
    slow = {"extra_s": 0.0}  # set once this rank's compute is calibrated
    algorithm = cfg["algorithm"]
    record: dict[str, Any] = {
        "rank": rank,
        "world": world,
        "params": n_params,
        "value_bytes": torch.finfo(dtype).bits // 8,
        "tokens_per_step": batch * seq,
        "calibration": [],
        "steps": [],
        "syncs": [],
        "evals": [],
        "host": socket.gethostname(),
        "clock_id": clock_id(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }

    def step_compute(m, opt):
        t0 = time.perf_counter()
        x, y = lang.batch(batch, seq, gen)
        loss = m(x, y)
        if slow["extra_s"]:
            time.sleep(slow["extra_s"])  # a slower device: see the module docstring
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        return float(loss.detach()), t1 - t0, t2 - t1, t3 - t2

    def calibrated() -> None:
        """This rank's slowdown per step, (F − 1) × its calibrated compute (0 for F = 1)."""
        c = [e["forward_s"] + e["backward_s"] + e["optimizer_s"] for e in record["calibration"]]
        c = c[1:] or c
        slow["extra_s"] = (factor - 1.0) * sorted(c)[len(c) // 2] if factor > 1 and c else 0.0
        record["compute_factor"] = factor
        record["slowdown_s"] = slow["extra_s"]

    def evaluate(m) -> float:
        with torch.no_grad():
            return float(m(eval_x, eval_y))

    if algorithm == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        ddp = DDP(model, bucket_cap_mb=float(cfg.get("bucket_mb", 25)))
        opt = torch.optim.AdamW(ddp.parameters(), lr=float(cfg.get("lr", 1e-3)))
        marks: list[tuple[float, float]] = []

        def hook(state, bucket):
            if latency_s:
                # --latency-mode app: per ring step
                time.sleep(float(ring_allreduce_steps(world)) * latency_s)
            start = time.perf_counter()
            fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()

            def done(f):
                marks.append((start, time.perf_counter()))
                return f.value()[0] / world

            return fut.then(done)

        ddp.register_comm_hook(None, hook)
        for _ in range(int(cfg.get("calib_steps", 2))):
            with ddp.no_sync():
                loss, tf, tb, to = step_compute(ddp, opt)
            record["calibration"].append({"forward_s": tf, "backward_s": tb, "optimizer_s": to})
        calibrated()
        dist.barrier()
        record["evals"].append({"tokens": 0, "loss": evaluate(model)})
        for step in range(int(cfg.get("warmup_steps", 1)) + int(cfg["steps"])):
            marks.clear()
            c0 = iface_counters(iface)
            t0 = time.perf_counter()
            loss, tf, tb, to = step_compute(ddp, opt)
            t1 = time.perf_counter()
            c1 = iface_counters(iface)
            sync = (max(e for _, e in marks) - min(s for s, _ in marks)) if marks else 0.0
            entry = {
                "step": step,
                "warmup": step < int(cfg.get("warmup_steps", 1)),
                "loss": loss,
                "forward_s": tf,
                "backward_s": tb,
                "optimizer_s": to,
                "step_s": t1 - t0,
                "sync_s": sync,
                "buckets": len(marks),
                **_diff(c0, c1),
            }
            record["steps"].append(entry)
            record["syncs"].append(entry)
            every = int(cfg.get("eval_every", 0))
            if every and (step + 1) % every == 0:
                record["evals"].append({"tokens": (step + 1) * batch * seq * world, "loss": evaluate(model)})
        if not record["evals"] or record["evals"][-1]["tokens"] != (step + 1) * batch * seq * world:
            record["evals"].append({"tokens": (step + 1) * batch * seq * world, "loss": evaluate(model)})
    elif algorithm == "diloco":
        inner = torch.optim.AdamW(model.parameters(), lr=float(cfg.get("lr", 1e-3)))
        h = int(cfg.get("inner_steps", 32))
        averager = Averager(cfg.get("compression", "none"), n_params)
        global_flat = flat_params(model)
        momentum = torch.zeros_like(global_flat)
        outer_lr, outer_mom = float(cfg.get("outer_lr", 0.7)), float(cfg.get("outer_momentum", 0.9))
        for _ in range(int(cfg.get("calib_steps", 2))):
            loss, tf, tb, to = step_compute(model, inner)
            record["calibration"].append({"forward_s": tf, "backward_s": tb, "optimizer_s": to})
        calibrated()
        record["codec_bytes_per_s"] = codec_throughput(averager.kind, n_params, world, averager.ratio)
        set_flat(model, global_flat)
        inner = torch.optim.AdamW(model.parameters(), lr=float(cfg.get("lr", 1e-3)))
        dist.barrier()
        tokens = 0
        record["evals"].append({"tokens": 0, "loss": evaluate(model)})
        if cfg.get("overlap"):
            _overlapped_diloco(
                cfg, record, model, inner, averager, global_flat, step_compute, evaluate, iface
            )
            dist.barrier()
            dist.destroy_process_group()
            return record
        last_pseudo = None
        for outer in range(int(cfg.get("warmup_steps", 0)) + int(cfg["steps"])):
            codec_s = None
            if record["codec_bytes_per_s"] is not None and outer >= int(cfg.get("warmup_steps", 0)):
                # the sync's local work timed before every measured round, outside the round's timing, as
                # the sync runs it (sync_local_s), on the last round's pseudo-gradient and the live residual
                codec_s = sync_local_s(
                    cfg.get("compression", "none"), n_params, world, rank, last_pseudo, averager.residual
                )
            o0 = time.perf_counter()
            compute = 0.0
            for i in range(h):
                compute += _inner_step(step_compute, model, inner, record, outer, h, i)
                tokens += batch * seq * world
            pseudo = global_flat - flat_params(model)  # compute, before the sync is timed
            last_pseudo = pseudo
            c0 = iface_counters(iface)
            s0 = time.perf_counter()
            a0 = shared_clock()
            if latency_s:
                time.sleep(float(ring_allreduce_steps(world)) * latency_s)
            avg = averager(pseudo)
            a1 = shared_clock()
            s1 = time.perf_counter()
            drained = _drained()
            c1 = iface_counters(iface)
            o0 += drained  # the outer step does not count the wait for the counters
            momentum.mul_(outer_mom).add_(avg)
            global_flat = global_flat - outer_lr * (avg + outer_mom * momentum)  # Nesterov
            set_flat(model, global_flat)
            o1 = time.perf_counter()
            record["syncs"].append(
                {
                    "outer": outer,
                    "warmup": outer < int(cfg.get("warmup_steps", 0)),
                    "compute_s": compute,
                    "sync_s": s1 - s0,
                    "sync_at": [a0, a1],
                    "step_s": o1 - o0,
                    "inner_steps": h,
                    "codec_s": codec_s,
                    **_diff(c0, c1),
                }
            )
            record["evals"].append({"tokens": tokens, "loss": evaluate(model)})
    else:
        raise ValueError(algorithm)
    dist.barrier()
    dist.destroy_process_group()
    return record


def main(argv: list[str]) -> int:
    cfg = json.loads(Path(argv[1]).read_text())
    record = run(cfg)
    out = Path(cfg["results_dir"]) / f"rank{record['rank']}.json"
    out.write_text(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
