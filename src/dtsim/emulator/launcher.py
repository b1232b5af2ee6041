"""`dtsim emulate`: build the network, run the workers inside it, clean everything up, and put dtsim's
prediction beside the measurement.

Prediction (from `dtsim.physics.collectives`, the model every dtsim prediction uses): the workers'
own compute is timed first (steps without communication); the synchronisation is the α-β time of
the collective the algorithm runs, over the slowest shaped link of the ring (a ring runs at its
slowest link), at the link's TCP payload rate (the tbf rate less one 66-byte header per 64 KiB
offloaded segment); DDP's step is compute plus the part of the all-reduce its buckets cannot hide under
the backward pass (Data Parallelism from Associativity bucketed overlap, `physics.dataparallel`).
A compressed DiLoCo sync adds its codec's compute (`physics.codec`, at the throughput the workers
measured, or its local work timed in the run); a worker slowed by a factor F computes F times longer and
a synchronous round waits for the slowest (without overlap, DiLoCo reads the device's step from the
fastest workers' measured rounds and adds each worker's slowdown: `_round_compute`); an overlapped
DiLoCo round takes the longer of its compute and the previous round's sync (`combine` of the
decentralized model, MIRI simulator docs §3.1).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from dtsim.assumptions import defaults
from dtsim.emulator import compress, runstate
from dtsim.emulator.netns import (
    STOP_SIGNALS,
    Topology,
    netem_available,
    probe_namespace,
    require_root,
    setup_problems,
    stop_signals_blocked,
)
from dtsim.emulator.runstate import Removal
from dtsim.emulator.summary import EmulationSummary, RunInfo, SyncEvent
from dtsim.errors import ScenarioError
from dtsim.physics import collectives as coll
from dtsim.physics.codec import codec_time
from dtsim.physics.dataparallel import exposed_bucketed_allreduce

_ASM = defaults()
# Constants live in the assumptions table (catalog/assumptions.yaml, docs/assumptions.md).
HEADER_BYTES = int(_ASM.emulator_frame_header_bytes)  # per packet the interface counts
GSO_SEGMENT = int(_ASM.emulator_gso_segment_bytes)  # veth hands tbf offloaded packets this large
BASE_ALPHA_S = float(_ASM.emulator_ring_step_latency_s)  # one ring step, two veth hops and a bridge
DEFAULT_QUEUE_MS = float(_ASM.emulator_tbf_queue_ms)


@dataclass
class EmulateOptions:
    workers: int = 2
    bandwidth_mbps: float | None = None  # None: unshaped
    latency_ms: float = 0.0
    latency_mode: str = "netem"  # netem | app
    slow_links: dict[int, float] = field(default_factory=dict)
    algorithm: str = "ddp"
    inner_steps: int = 32
    compression: str = "none"
    model: str = "tiny"
    steps: int = 3
    warmup_steps: int = 1
    calib_steps: int = 2
    batch: int = 4
    seq_len: int = 64
    dtype: str = "float32"
    bucket_mb: float = 25.0
    lr: float = 1e-3
    seed: int = 0
    timeout_s: float = 600.0
    threads: int = 1
    queue_ms: float = DEFAULT_QUEUE_MS
    eval_every: int = 0
    link_latency_ms: dict[int, float] = field(default_factory=dict)  # per rank, overrides latency_ms
    compute_factors: dict[int, float] = field(default_factory=dict)  # per rank, ≥ 1: F× slower
    overlap: bool = False  # DiLoCo: outer sync overlapped with the next round, applied a round late

    def rank_latency_ms(self, rank: int) -> float:
        return self.link_latency_ms.get(rank, self.latency_ms)

    @property
    def any_latency(self) -> bool:
        return any(self.rank_latency_ms(r) > 0 for r in range(self.workers))

    def validate(self) -> None:
        p = []
        if not 1 <= self.workers <= 64:
            p.append(("workers", self.workers, "must be between 1 and 64"))
        if self.bandwidth_mbps is not None and not 0.1 <= self.bandwidth_mbps <= 100000:
            p.append(
                (
                    "bandwidth-mbps",
                    self.bandwidth_mbps,
                    "must be between 0.1 and 100000 (or omitted: unshaped)",
                )
            )
        if not 0 <= self.latency_ms <= 10000:
            p.append(("latency-ms", self.latency_ms, "must be between 0 and 10000"))
        if self.latency_mode not in ("netem", "app"):
            p.append(("latency-mode", self.latency_mode, "must be netem or app"))
        for r, mbps in self.slow_links.items():
            if not 0 <= r < self.workers:
                p.append(("slow-link", r, f"rank must be between 0 and {self.workers - 1}"))
            if not 0.1 <= mbps <= 100000:
                p.append(("slow-link", mbps, "Mbit/s must be between 0.1 and 100000"))
        for r, ms in self.link_latency_ms.items():
            if not 0 <= r < self.workers:
                p.append(("slow-link", r, f"rank must be between 0 and {self.workers - 1}"))
            if not 0 <= ms <= 10000:
                p.append(("slow-link", ms, "latency in ms must be between 0 and 10000"))
        for r, f in self.compute_factors.items():
            if not 0 <= r < self.workers:
                p.append(("compute-factor", r, f"rank must be between 0 and {self.workers - 1}"))
            if not 1 <= f <= 100:
                p.append(("compute-factor", f, "factor must be between 1 (full speed) and 100"))
        if self.overlap and self.algorithm != "diloco":
            p.append(("overlap", self.algorithm, "applies to --algorithm diloco only"))
        if self.algorithm not in ("ddp", "diloco"):
            p.append(("algorithm", self.algorithm, "must be ddp or diloco"))
        if not 1 <= self.inner_steps <= 100000:
            p.append(("inner-steps", self.inner_steps, "must be between 1 and 100000"))
        if not 1 <= self.steps <= 100000:
            p.append(("steps", self.steps, "must be between 1 and 100000"))
        if self.dtype not in ("float32", "float64"):
            p.append(("dtype", self.dtype, "must be float32 or float64"))
        if not 1 <= self.batch <= 4096 or not 8 <= self.seq_len <= 4096:
            p.append(("batch/seq-len", (self.batch, self.seq_len), "batch 1–4096, sequence 8–4096"))
        if not 0.001 <= self.bucket_mb <= 10000:
            p.append(("bucket-mb", self.bucket_mb, "must be between 0.001 and 10000"))
        if not 0.5 <= self.queue_ms <= 10000:
            p.append(("queue-ms", self.queue_ms, "must be between 0.5 and 10000"))
        if not 1 <= self.timeout_s <= 86400:
            p.append(("timeout", self.timeout_s, "must be between 1 and 86400 seconds"))
        try:
            compress.parse(self.compression)
        except ScenarioError as exc:
            p.extend(exc.problems)
        if self.algorithm == "ddp" and self.compression != "none":
            p.append(
                (
                    "compression",
                    self.compression,
                    "applies to diloco only (DDP all-reduces fp32/fp64 gradients)",
                )
            )
        from dtsim.emulator.presets import config_for

        try:
            config_for(self.model)
        except ScenarioError as exc:
            p.extend(exc.problems)
        if p:
            raise ScenarioError(p)


class WorkerFailed(RuntimeError):
    pass


def payload_rate_bytes_s(mbps: float) -> float:
    """TCP payload throughput of a link shaped to `mbps` by tbf. The shaper counts the bytes of the
    packets it sees; over veth those are segmentation-offloaded packets of up to 64 KiB with one header
    each, so headers cost ~0.1% of the rate (ACKs, on the other direction of the full-duplex link,
    nothing here; both are measured and reported as protocol overhead)."""
    return mbps * 1e6 / 8.0 * GSO_SEGMENT / (GSO_SEGMENT + HEADER_BYTES)


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def links_shaped(opts: EmulateOptions) -> bool:
    """Whether any worker's link is shaped to a rate (--bandwidth-mbps, a slow link): only then does
    dtsim predict the sync time; an unshaped run is bound by the host, as the thesis's bridge was."""
    return any(opts.slow_links.get(r, opts.bandwidth_mbps) is not None for r in range(opts.workers))


def predict(
    opts: EmulateOptions, params: int, value_bytes: int, compute: dict[str, float], buckets: int
) -> dict[str, Any]:
    """dtsim's prediction for this run (module docstring). Latency: a ring step waits for its slowest
    link, so α is the largest per-worker latency; every bucket is an all-reduce of its own and pays the
    ring's 2(N−1) latency steps. Compute: each worker's calibrated step × its slowdown factor, and a
    synchronous round waits for the slowest worker; a DiLoCo round without overlap takes the slowest
    worker's H inner steps as predicted from the fastest workers' compute in the measured rounds, and the
    outer update timed there, when `compute` has them (`round_compute_by_rank_s`, `update_s`:
    `_round_compute`)."""
    n = opts.workers
    rates = [opts.slow_links.get(r, opts.bandwidth_mbps) for r in range(n)]
    shaped = [r for r in rates if r is not None]
    bw = payload_rate_bytes_s(min(shaped)) if shaped else float("inf")
    latency_s = max(opts.rank_latency_ms(r) for r in range(n)) * 1e-3
    alpha = BASE_ALPHA_S + latency_s
    slowest = max([1.0, *opts.compute_factors.values()])
    step_compute = slowest * (compute["forward_s"] + compute["backward_s"] + compute["optimizer_s"])
    tokens = n * opts.batch * opts.seq_len
    if opts.algorithm == "ddp":
        size = params * value_bytes
        sync = float(coll.ring_allreduce_time(n, size, bw, alpha))
        sync += (max(buckets, 1) - 1) * float(coll.ring_allreduce_steps(n)) * alpha
        exposed = float(exposed_bucketed_allreduce(sync, compute["backward_s"], max(buckets, 1)))
        step = step_compute + exposed
        expected = compress.expected_bytes_per_rank("none", 1, params, n, value_bytes)
        return {
            "predicted_sync_s": sync,
            "predicted_step_s": step,
            "predicted_tokens_per_s": tokens / step,
            "expected_bytes_per_rank_per_sync": expected,
        }
    kind, ratio = compress.parse(opts.compression)
    if kind == "none":
        sync = float(coll.ring_allreduce_time(n, params * 4, bw, alpha))
    elif kind == "fp16":
        sync = float(coll.ring_allreduce_time(n, params * 2, bw, alpha))
    elif kind == "int8":  # a ring of n·b pieces, one byte per value and a 4-byte scale per message
        pieces = n * compress.INT8_PIPELINE
        size = pieces * (-(-params // pieces) + 4)
        sync = float(coll.ring_allreduce_time(n, size, bw, alpha))
    else:
        k = -(-params // int(ratio))
        sync = 2 * float(coll.all_gather_time(n, n * k * 4, bw, alpha))  # indices, then values
    wire = sync
    codec = 0.0
    if kind in ("int8", "topk") and compute.get("codec_s"):
        codec = float(compute["codec_s"])  # the sync's local work as measured in this run
        sync += codec
    elif kind in ("int8", "topk") and compute.get("codec_bytes_per_s"):
        codec = float(codec_time(params * 4, kind, world=n, bytes_per_s=compute["codec_bytes_per_s"]))
        sync += codec
    from dtsim.models.decentralized.strategies.base import combine

    calibrated = opts.inner_steps * step_compute
    # A synchronous round waits for its slowest worker's H inner steps. Without overlap the device's step is
    # read from the fastest workers' measured rounds (`_round_compute`): it then carries the load the host
    # had while the run ran, which a calibration before the run does not see. With overlap the rounds'
    # compute shares the host with the background sync, so it stays calibrated.
    by_rank = compute.get("round_compute_by_rank_s") if not opts.overlap else None
    update = 0.0 if opts.overlap else float(compute.get("update_s") or 0.0)
    outer = float(combine(opts.overlap, max(by_rank) if by_rank else calibrated, sync)) + update
    return {
        "predicted_wire_s": wire,
        "predicted_codec_s": codec,
        "predicted_sync_s": sync,
        "predicted_update_s": update,
        "predicted_step_s": outer,
        "predicted_tokens_per_s": tokens * opts.inner_steps / outer,
        "expected_bytes_per_rank_per_sync": compress.expected_bytes_per_rank(kind, ratio, params, n),
    }


def _round_compute(opts: EmulateOptions, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A DiLoCo round's compute inputs from the measured rounds (no overlap), for `predict`.

    The workers are one device emulated at different speeds: a worker of factor F computes the same
    steps and sleeps (F − 1) × its calibrated step after each (`slowdown_s`, module docstring of
    `worker`). The device's step under the run's own load is the real compute per inner step (round
    compute / H − slowdown) of the workers with the smallest factor (their median); each worker's round
    is then predicted as H × (that step + its own slowdown) (`round_compute_by_rank_s`), and the round
    waits for the largest. Only the fastest workers' compute is read, so a model that gets the slower
    workers' compute, or what the round waits for, wrong misses. The outer update (pseudo-gradient,
    outer Nesterov step, setting the parameters: a round's time outside its inner steps and its sync)
    is local work timed in the rounds, as a compressed sync's codec work is (`update_s`).
    Returns {} when the records hold no measured rounds."""
    h = max(int(opts.inner_steps), 1)
    rounds = [
        [x for x in r["syncs"] if not x.get("warmup") and x.get("compute_s") is not None] for r in records
    ]
    if not all(rounds):
        return {}
    factors = [
        float(r.get("compute_factor", opts.compute_factors.get(i, 1.0))) for i, r in enumerate(records)
    ]
    slow = [float(r.get("slowdown_s", 0.0)) for r in records]
    measured = [_median([x["compute_s"] for x in rs]) for rs in rounds]
    fastest = min(factors)
    step = _median([m / h - sd for m, sd, f in zip(measured, slow, factors, strict=True) if f == fastest])
    by_rank = [h * (step + sd) for sd in slow]
    update = _median([x["step_s"] - x["compute_s"] - x["sync_s"] for rs in rounds for x in rs])
    return {
        "round_compute_by_rank_s": by_rank,
        "measured_round_compute_by_rank_s": measured,
        "update_s": max(update, 0.0),
    }


def summarize(opts: EmulateOptions, records: list[dict[str, Any]]) -> EmulationSummary:
    r0 = records[0]
    params, value_bytes = r0["params"], r0["value_bytes"]
    calib = [c for r in records for c in r["calibration"][1:] or r["calibration"]]
    compute = {k: _median([c[k] for c in calib]) for k in ("forward_s", "backward_s", "optimizer_s")}
    if any(r.get("codec_bytes_per_s") for r in records):
        compute["codec_bytes_per_s"] = _median([r.get("codec_bytes_per_s") for r in records])
    # a compressed sync's local work, timed before each measured round as the sync runs it (worker.sync_local_s)
    local = [x["codec_s"] for r in records for x in r["syncs"] if x.get("codec_s") and not x.get("warmup")]
    if local:
        compute["codec_s"] = _median(local)
    if opts.algorithm == "diloco" and not opts.overlap:
        compute.update(_round_compute(opts, records))
    events = len(r0["syncs"])
    per_event = []
    # ranks' sync times are comparable on one machine's clock only (worker-config runs span hosts)
    one_clock = len({r.get("clock_id") for r in records}) == 1
    for i in range(events):
        rows = [r["syncs"][i] for r in records]
        if rows[0].get("warmup"):
            continue
        # A DiLoCo sync is one blocking collective: it runs from the moment the last rank enters it to the
        # moment the last rank leaves it. A rank that arrives early waits for the others' inner steps
        # (compute imbalance, which the outer step time shows), not for the network, so that wait is kept
        # apart as the arrival skew. DDP's span of bucket all-reduces inside the backward pass stays per rank.
        entered = [x["sync_at"][0] for x in rows if x.get("sync_at")]
        left = [x["sync_at"][1] for x in rows if x.get("sync_at")]
        timed = one_clock and len(entered) == len(rows)
        per_event.append(
            SyncEvent(
                sync_s=(max(left) - max(entered)) if timed else max(x["sync_s"] for x in rows),
                step_s=max(x["step_s"] for x in rows),
                tx_bytes=[x["tx_bytes"] for x in rows],
                tx_packets=[x["tx_packets"] for x in rows],
                rx_bytes=[x["rx_bytes"] for x in rows],
                buckets=rows[0].get("buckets", 1),
                arrival_skew_s=(max(entered) - min(entered)) if timed else None,
            )
        )
    buckets = int(_median([e.buckets for e in per_event]) or 1)
    pred = predict(opts, params, value_bytes, compute, buckets)
    sent = _median([b for e in per_event for b in e.tx_bytes])
    packets = _median([p for e in per_event for p in e.tx_packets])
    payload = sent - HEADER_BYTES * packets if sent is not None else None
    measured_sync = _median([e.sync_s for e in per_event])
    measured_step = _median([e.step_s for e in per_event])
    tokens = (
        opts.workers * opts.batch * opts.seq_len * (opts.inner_steps if opts.algorithm == "diloco" else 1)
    )
    losses = [s["loss"] for s in r0["steps"]]
    shaped = links_shaped(opts)  # unshaped links (loopback, host-bound): latency alone, not a time to check
    return EmulationSummary(
        algorithm=opts.algorithm,
        workers=opts.workers,
        params=params,
        value_bytes=value_bytes,
        gradient_bytes=params * value_bytes,
        sync_events=len(per_event),
        buckets_per_sync=buckets,
        bytes_sent_per_rank_per_sync=sent,
        payload_bytes_per_rank_per_sync=payload,
        protocol_overhead_bytes_per_rank_per_sync=(sent - payload) if sent is not None else None,
        expected_bytes_per_rank_per_sync=pred["expected_bytes_per_rank_per_sync"],
        bytes_error=(payload / pred["expected_bytes_per_rank_per_sync"] - 1)
        if payload and pred["expected_bytes_per_rank_per_sync"]
        else None,
        measured_compute_s=compute,
        measured_sync_s=measured_sync,
        predicted_sync_s=pred["predicted_sync_s"],
        sync_error=(measured_sync / pred["predicted_sync_s"] - 1)
        if measured_sync and pred["predicted_sync_s"] and shaped
        else None,
        links_shaped=shaped,
        measured_step_s=measured_step,
        predicted_step_s=pred["predicted_step_s"],
        step_error=measured_step / pred["predicted_step_s"] - 1 if measured_step else None,
        tokens_per_s=tokens / measured_step if measured_step else None,
        predicted_tokens_per_s=pred["predicted_tokens_per_s"],
        overhead_fraction=measured_sync / measured_step if measured_step else None,
        loss_first=losses[0] if losses else None,
        loss_last=losses[-1] if losses else None,
        evals=r0.get("evals", []),
        latency_approximate=opts.latency_mode == "app" and opts.any_latency,
        events=per_event,
        measured_arrival_skew_s=_median(
            [e.arrival_skew_s for e in per_event if e.arrival_skew_s is not None]
        ),
    )


def worker_config(
    opts: EmulateOptions, netem: bool, results_dir: str, iface: str | None = "eth0"
) -> dict[str, Any]:
    """The JSON config `python -m dtsim.emulator.worker` reads (here, or under torchrun on real hosts,
    where `iface` None counts every interface but loopback)."""
    return {
        "algorithm": opts.algorithm,
        "model": opts.model,
        "dtype": opts.dtype,
        "batch": opts.batch,
        "seq_len": opts.seq_len,
        "steps": opts.steps,
        "warmup_steps": opts.warmup_steps,
        "calib_steps": opts.calib_steps,
        "inner_steps": opts.inner_steps,
        "compression": opts.compression,
        "bucket_mb": opts.bucket_mb,
        "lr": opts.lr,
        "seed": opts.seed,
        "threads": opts.threads,
        "iface": iface,
        "app_latency_s": opts.latency_ms * 1e-3
        if (opts.latency_mode == "app" or not netem) and opts.latency_ms
        else 0.0,
        "app_latency_by_rank": [opts.rank_latency_ms(r) * 1e-3 for r in range(opts.workers)]
        if (opts.latency_mode == "app" or not netem) and opts.link_latency_ms
        else None,
        "compute_factor_by_rank": [opts.compute_factors.get(r, 1.0) for r in range(opts.workers)],
        "overlap": opts.overlap,
        "collective_timeout_s": opts.timeout_s,
        "eval_every": opts.eval_every,
        "results_dir": results_dir,
    }


def command_line(opts: EmulateOptions) -> str:
    """The `dtsim emulate` command that reproduces this run."""
    parts = ["dtsim", "emulate", "--workers", str(opts.workers)]
    if opts.bandwidth_mbps is not None:
        parts += ["--bandwidth-mbps", f"{opts.bandwidth_mbps:g}"]
    if opts.latency_ms:
        parts += ["--latency-ms", f"{opts.latency_ms:g}", "--latency-mode", opts.latency_mode]
    for r in sorted(set(opts.slow_links) | set(opts.link_latency_ms)):
        mbps = opts.slow_links.get(r, opts.bandwidth_mbps)
        spec = f"{r}:{'' if mbps is None else f'{mbps:g}'}"
        if r in opts.link_latency_ms:
            spec += f":{opts.link_latency_ms[r]:g}"
        parts += ["--slow-link", spec]
    if opts.link_latency_ms and not opts.latency_ms:
        parts += ["--latency-mode", opts.latency_mode]
    for r, f in sorted(opts.compute_factors.items()):
        parts += ["--compute-factor", f"{r}:{f:g}"]
    parts += ["--algorithm", opts.algorithm]
    if opts.algorithm == "diloco":
        parts += ["--inner-steps", str(opts.inner_steps), "--compression", opts.compression]
        if opts.overlap:
            parts += ["--overlap"]
    parts += [
        "--model",
        opts.model,
        "--steps",
        str(opts.steps),
        "--batch",
        str(opts.batch),
        "--seq-len",
        str(opts.seq_len),
    ]
    parts += [
        "--dtype",
        opts.dtype,
        "--bucket-mb",
        f"{opts.bucket_mb:g}",
        "--queue-ms",
        f"{opts.queue_ms:g}",
        "--timeout",
        f"{opts.timeout_s:g}",
    ]
    return " ".join(parts)


TORCH_HINT = "python3 -m pip install 'dtsim[emulator]' (PyTorch 2.13.0, CPU)"


def torch_problems() -> list[tuple[str, object, str]]:
    """The `emulator` extra's PyTorch, if it is not installed (the workers train with it; the launcher
    itself never imports it)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return [("extra", "emulator", f"PyTorch is not installed; install it with: {TORCH_HINT}")]
    return []


def require_emulator() -> None:
    """Root, iproute2 and PyTorch, all missing ones in one error."""
    problems = setup_problems() + torch_problems()
    if problems:
        raise ScenarioError(problems)


def _register(namespaces: Callable[[str], list[str]], work: bool) -> runstate.RunState:
    """A new run's state file under a fresh id (another run that took the same id at the same moment
    keeps its own: the id is drawn again)."""
    for _ in range(8):
        run_id = runstate.new_run_id()
        dirs = [str(Path(tempfile.gettempdir()) / f"dtsim-emu-{run_id}")] if work else []
        try:
            return runstate.RunState.register(run_id, namespaces(run_id), dirs)
        except FileExistsError:
            continue
    raise OSError("could not find a free run id in /run/dtsim after 8 tries")


def netem_supported() -> bool:
    """Whether this kernel has the netem qdisc: probed in a namespace of its own, recorded as a run's
    are (so a concurrent `--cleanup` leaves it alone and a kill leaves nothing unclaimed)."""
    require_root()
    state = _register(lambda run_id: [probe_namespace(run_id)], work=False)
    try:
        return netem_available(state.namespaces[0])
    finally:
        if state.remove_all().complete:
            state.release()
        else:
            state.detach()


class Interrupted(KeyboardInterrupt):
    """The run was stopped by SIGINT, SIGTERM or SIGHUP after removing what it had made; `removal`
    says what was checked gone and what could not be removed (still recorded for reclaim)."""

    def __init__(self, signum: int, removal: Removal):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.removal = removal


class _Stop(Exception):
    pass


class StopRequests:
    """SIGINT, SIGTERM and SIGHUP only set a flag while a run is going; the run checks it where stopping
    is safe (between setup commands, while waiting for the workers) and removes everything before it
    ends. A second Ctrl-C, while that removal runs, is noted and changes nothing: the removal finishes.
    Installed only in the main thread (where Python delivers signals); even when the process inherited
    SIGINT ignored, since a parent that ignores it passes SIG_IGN through exec and the run would not stop.
    A hang-up ignored on purpose (nohup) stays ignored.

    Nested (the CLI holds one around a run and its report), the inner one shares the outer one's
    record: a stop asked for before the run began stops it at once, and one that lands after the run
    has removed everything, while the CLI reports, is noted by the outer one instead of raising
    KeyboardInterrupt half-way through that report."""

    HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, until_exit: bool = False) -> None:
        """`until_exit`: once a stop was asked for, ignore further ones after the block (the CLI, whose
        process ends with the report: a third Ctrl-C must not cut its report or its exit)."""
        self.received: list[int] = []
        self._old: dict[int, Any] = {}
        self._until_exit = until_exit
        self._active = False  # inside its block (only then does a nested one share its record)

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for s in self.HANDLED:
                old = signal.getsignal(s)
                if s == signal.SIGHUP and old == signal.SIG_IGN:
                    continue
                self._old[s] = old
                outer = getattr(old, "__self__", None)
                if isinstance(outer, StopRequests) and outer._active:
                    self.received = outer.received
                signal.signal(s, self._note)
        self._active = True
        return self

    def _note(self, signum: int, frame: Any) -> None:
        self.received.append(signum)

    def check(self) -> None:
        if self.received:
            raise _Stop

    def __exit__(self, *exc: object) -> None:
        self._active = False
        if self._until_exit and self.received:
            # the process is ending: ignore further stops rather than note them, since Python resets
            # handlers it installed to the default at finalization, and a Ctrl-C landing then would
            # kill the process by SIGINT after its clean report (exit -2 instead of 130)
            for s in self._old:
                signal.signal(s, signal.SIG_IGN)
            return
        for s, h in self._old.items():
            signal.signal(s, h)


def _die_with_launcher(parent: int):
    """For each worker, in the child before exec: the kernel sends it SIGKILL when the launcher dies,
    however it dies (kill -9 included), so no worker outlives its run (prctl PR_SET_PDEATHSIG; kept
    through `ip netns exec`'s exec, as `ip` is not set-user-ID)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1

    def preexec() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before the line above
            os._exit(1)
        # in its own session by now, out of reach of a terminal's Ctrl-C: take signals again
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    return preexec


def _notice(message: str) -> None:
    print(message, file=sys.stderr)


def run(opts: EmulateOptions, command: str = "", notice: Callable[[str], None] = _notice) -> EmulationSummary:
    """Run one emulation; everything the run created is removed before this returns or raises.

    Before anything, what dead runs left is reclaimed (`runstate.reclaim`, told through `notice`); the
    run then records what it will make in its state file before making it. Stopped by a signal, it
    removes all of it and raises `Interrupted`; anything it could not remove is reported through
    `notice` and stays recorded for the next run or `dtsim emulate --cleanup`."""
    opts.validate()
    require_emulator()
    procs: list[subprocess.Popen] = []
    logs: list[Any] = []
    started = time.time()
    with StopRequests() as signals:
        for outcome in runstate.reclaim():
            if outcome.status in ("reclaimed", "incomplete"):  # live runs are none of this one's business
                notice(f"reclaimed what an earlier run left: {outcome.describe()}")
        if signals.received:  # stopped while reclaiming: this run has made nothing yet
            raise Interrupted(signals.received[0], Removal())
        state = _register(lambda run_id: [probe_namespace(run_id)] if opts.any_latency else [], work=True)
        run_id = state.run_id
        probe = probe_namespace(run_id)
        work = Path(state.directories[0])
        netem, records = False, []
        try:
            work.mkdir(mode=0o700)
            netem, records = _execute(opts, run_id, probe, work, state, procs, logs, signals)
        except _Stop:
            pass  # a signal: handled below, once everything is removed
        finally:
            removal = _teardown(state, procs, logs, notice)
    if signals.received:
        raise Interrupted(signals.received[0], removal)
    info = RunInfo(
        command=command or command_line(opts),
        options={
            **asdict(opts),
            "slow_links": {str(k): v for k, v in opts.slow_links.items()},
            "link_latency_ms": {str(k): v for k, v in opts.link_latency_ms.items()},
            "compute_factors": {str(k): v for k, v in opts.compute_factors.items()},
        },
        run_id=run_id,
        netem=netem,
        wall_s=time.time() - started,
        versions={"dtsim": _dtsim_version(), "torch": records[0]["torch"], "python": records[0]["python"]},
        machine={"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count()},
    )
    return replace(summarize(opts, records), run=info, records=records)


def _execute(
    opts: EmulateOptions,
    run_id: str,
    probe: str,
    work: Path,
    state: runstate.RunState,
    procs: list[subprocess.Popen],
    logs: list[Any],
    signals: StopRequests,
) -> tuple[bool, list[dict[str, Any]]]:
    """Build the network, start and wait for the workers; (netem used, each rank's record)."""
    signals.check()
    netem = netem_available(probe) if opts.any_latency else False
    if opts.any_latency and opts.latency_mode == "netem" and not netem:
        raise ScenarioError(
            [
                (
                    "latency-ms" if opts.latency_ms else "slow-link",
                    opts.latency_ms or opts.link_latency_ms,
                    "this kernel has no netem qdisc, so links cannot be delayed; use --latency-mode app "
                    "(each collective step delayed inside the workers; approximate) or --latency-ms 0",
                )
            ]
        )
    topo = Topology(
        opts.workers,
        opts.bandwidth_mbps,
        opts.latency_ms if netem else 0.0,
        dict(opts.slow_links),
        run_id=run_id,
        netem=netem,
        queue_ms=opts.queue_ms,
        link_latency_ms=dict(opts.link_latency_ms) if netem else {},
    )
    state.plan(topo.namespaces(), topo.interfaces(), topo.qdiscs())
    signals.check()
    topo.create(check=signals.check)
    cfg = worker_config(opts, netem, str(work))
    cfg_path = work / "config.json"
    cfg_path.write_text(json.dumps(cfg))
    preexec = _die_with_launcher(os.getpid())
    for r in range(opts.workers):
        signals.check()
        env = {
            **os.environ,
            "RANK": str(r),
            "WORLD_SIZE": str(opts.workers),
            "LOCAL_RANK": "0",
            "MASTER_ADDR": topo.address(0),
            "MASTER_PORT": "29500",
            "GLOO_SOCKET_IFNAME": "eth0",
            "OMP_NUM_THREADS": str(opts.threads),
        }
        logs.append(open(work / f"rank{r}.log", "w"))  # noqa: SIM115 - closed in _teardown
        with stop_signals_blocked():  # see netns.stop_signals_blocked
            procs.append(
                subprocess.Popen(
                    [*topo.exec_prefix(r), sys.executable, "-m", "dtsim.emulator.worker", str(cfg_path)],
                    env=env,
                    stdout=logs[-1],
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=preexec,  # the launcher starts no threads of its own
                )
            )
        state.add_worker(procs[-1].pid)
    started = time.time()
    while True:
        signals.check()
        codes = [p.poll() for p in procs]
        failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            tail = (work / f"rank{failed[0]}.log").read_text()[-2000:]
            raise WorkerFailed(f"worker {failed[0]} exited with {codes[failed[0]]}: {tail.strip()}")
        if all(c == 0 for c in codes):
            break
        if time.time() - started > opts.timeout_s:
            raise WorkerFailed(f"the run exceeded its time limit of {opts.timeout_s:g} s")
        time.sleep(0.1)
    return netem, [json.loads((work / f"rank{r}.json").read_text()) for r in range(opts.workers)]


def _teardown(
    state: runstate.RunState, procs: list[subprocess.Popen], logs: list[Any], notice: Callable[[str], None]
) -> Removal:
    """Kill the workers, remove the namespaces and the directory, check each gone; then delete the
    state file, or keep it (and say so) when something could not be removed. Never raises."""
    removal = Removal()
    for p in procs:
        if p.returncode is None:  # never signal a process already reaped: its PID may be someone else's
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
    for p in procs:
        was_running = p.returncode is None
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            removal.failed.append(f"process {p.pid}: still running 5 s after SIGKILL")
            continue
        if was_running and p.returncode == -signal.SIGKILL:
            removal.processes.append(p.pid)
    for fh in logs:
        with contextlib.suppress(OSError):
            fh.close()
    rest = state.remove_all()
    removal.namespaces += rest.namespaces
    removal.interfaces += rest.interfaces
    removal.qdiscs += rest.qdiscs
    removal.processes += [p for p in rest.processes if p not in removal.processes]
    removal.directories += rest.directories
    removal.failed += rest.failed
    if removal.complete:
        state.release()
    else:
        state.detach()
        notice(
            f"run {state.run_id} could not remove: {'; '.join(removal.failed)}. They stay recorded in "
            f"{state.path}; the next run or `dtsim emulate --cleanup` removes them once this process ends."
        )
    return removal


def _dtsim_version() -> str:
    import dtsim

    return getattr(dtsim, "__version__", "unknown")
