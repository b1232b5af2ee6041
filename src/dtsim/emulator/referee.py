"""The emulator as the referee (issue 16 item 8): canned runs that put one emulated measurement beside
dtsim's prediction for the same configuration, with the signed error and the tolerance each is held to.
`dtsim emulate --experiment NAME` runs one; `--experiment list` names them.

Every prediction comes from the project's models with the run's own measured compute as the compute
input (the workers time their steps with communication off before training; `launcher.predict`):
the α-β collectives (`physics.collectives`) on the shaped links, DDP's bucketed overlap
(`physics.dataparallel`), the codec's compute (`physics.codec`), the decentralized model's
outer-step composition (`models.decentralized.strategies.base.combine`), and, for the unshaped
world-size-2 testbed, the host-bound all-reduce (`physics.hostbound`). Nothing here is fitted to the
measurement it is compared with.

Runs are small (the `tiny` and `mini` models, a few steps) so the whole set fits in a few minutes on a
2-core host; the option lists below are the exact runs (`launcher.command_line` prints each).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dtsim.emulator.launcher import EmulateOptions, run
from dtsim.errors import ScenarioError

SMALL = {"steps": 4, "batch": 2, "seq_len": 32, "timeout_s": 120.0, "calib_steps": 4}


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    runner: Callable[[Callable[[str], None] | None], list[dict[str, Any]]]
    runs: int = 1  # emulations it makes (for a progress bar)


def _row(
    run_name: str,
    metric: str,
    measured: float | None,
    predicted: float,
    tolerance: float,
    opts: EmulateOptions,
    note: str = "",
    **extra: Any,
) -> dict[str, Any]:
    from dtsim.emulator.launcher import command_line

    error = measured / predicted - 1 if measured is not None and predicted > 0 else None
    return {
        "run": run_name,
        "metric": metric,
        "measured": measured,
        "predicted": predicted,
        "error": error,
        "tolerance": tolerance,
        "within": error is not None and abs(error) <= tolerance,
        "note": note,
        "command": command_line(opts),
        **extra,
    }


def _go(opts: EmulateOptions, label: str, progress) -> Any:
    if progress:
        progress(label)
    return run(opts, command=f"dtsim emulate --experiment ({label})")


def slow_link(progress=None) -> list[dict[str, Any]]:
    """Per-worker link rates and latencies: three workers at 200 Mbit/s, worker 1's link capped at
    50 Mbit/s and worker 2's delayed 20 ms (in the workers: this kernel has no netem). The ring runs
    at its slowest link's rate and every step waits for its slowest latency."""
    opts = EmulateOptions(
        workers=3,
        bandwidth_mbps=200.0,
        slow_links={1: 50.0},
        link_latency_ms={2: 20.0},
        latency_mode="app",
        model="tiny",
        **SMALL,
    )
    s = _go(opts, "slow-link", progress)
    return [
        _row(
            "3 workers, 200 Mbit/s; w1 50 Mbit/s; w2 +20 ms",
            "sync s",
            s.measured_sync_s,
            s.predicted_sync_s,
            0.20,
            opts,
        ),
        _row(
            "",
            "bytes per rank",
            s.payload_bytes_per_rank_per_sync,
            s.expected_bytes_per_rank_per_sync,
            0.03,
            opts,
        ),
    ]


def straggler(progress=None) -> list[dict[str, Any]]:
    """A straggler under synchronous DDP: worker 1 computes 3× slower; every step waits for it."""
    base = {"workers": 2, "bandwidth_mbps": 1000.0, "model": "tiny", "steps": 4, "batch": 8, "seq_len": 64}
    opts = EmulateOptions(compute_factors={1: 3.0}, timeout_s=120.0, calib_steps=4, **base)
    s = _go(opts, "straggler", progress)
    return [
        _row(
            "DDP, 2 workers, worker 1 ×3 slower",
            "step s",
            s.measured_step_s,
            s.predicted_step_s,
            0.20,
            opts,
            "the fast worker's measured sync includes its wait for the straggler; the step is compared",
        )
    ]


def heterogeneous_compute(progress=None) -> list[dict[str, Any]]:
    """Heterogeneous compute under DiLoCo: three workers at speed 1, 1/1.5 and 1/2.5; an outer step
    waits for the slowest worker's H inner steps, then the sync and the outer update. The device's step
    is the ×1 worker's as timed in the measured rounds, and each slower worker's is that step plus its
    slowdown (`launcher._round_compute`), so the prediction says which worker sets the pace
    (`limiting_worker`; each worker's measured rounds beside) and carries the load the host had during
    the run: three workers share two cores, and a prediction from each worker's calibration × its factor
    (shown beside) missed by +39 % in a CI run whose host was loaded differently during calibration and
    rounds. Eight measured rounds (not SMALL's four): one round's outer step moves by tens of percent
    with the load."""
    opts = EmulateOptions(
        workers=3,
        bandwidth_mbps=200.0,
        algorithm="diloco",
        inner_steps=4,
        compute_factors={1: 1.5, 2: 2.5},
        model="tiny",
        warmup_steps=1,
        **{**SMALL, "steps": 8},
    )
    from dtsim.emulator.launcher import predict

    s = _go(opts, "heterogeneous-compute", progress)
    c = s.measured_compute_s
    by_rank = c.get("round_compute_by_rank_s") or []
    # the same prediction with every worker's compute from its calibration × its factor
    calibrated = {k: v for k, v in c.items() if k != "round_compute_by_rank_s"}
    pred = predict(opts, s.params, s.value_bytes, calibrated, s.buckets_per_sync)
    from_calibration = pred["predicted_step_s"]
    error_cal = s.measured_step_s / from_calibration - 1 if s.measured_step_s else None
    return [
        _row(
            "DiLoCo H=4, 3 workers ×1, ×1.5, ×2.5",
            "outer step s",
            s.measured_step_s,
            s.predicted_step_s,
            0.20,
            opts,
            "slowest worker's H inner steps (the ×1 worker's step in the rounds + the slowdown) + sync + "
            "outer update"
            + (f"; from calibration × factor {error_cal:+.0%}" if error_cal is not None else ""),
            limiting_worker=by_rank.index(max(by_rank)) if by_rank else None,
            inner_steps_by_worker_s=by_rank,
            measured_inner_steps_by_worker_s=c.get("measured_round_compute_by_rank_s") or [],
            predicted_from_calibration=from_calibration,
            measured_sync=s.measured_sync_s,
            predicted_sync=s.predicted_sync_s,
        )
    ]


def overlapped_diloco(progress=None) -> list[dict[str, Any]]:
    """DiLoCo with the outer sync overlapped with the next round's inner steps (Streaming DiLoCo;
    eager updates), beside the same run without overlap: the outer step falls from compute + sync to
    max(compute, sync)."""
    rows = []
    for overlap in (False, True):
        opts = EmulateOptions(
            workers=2,
            bandwidth_mbps=40.0,
            algorithm="diloco",
            inner_steps=8,
            model="tiny",
            overlap=overlap,
            warmup_steps=1,
            steps=4,
            batch=8,
            seq_len=64,
            timeout_s=120.0,
            calib_steps=4,
        )
        s = _go(opts, "overlapped-diloco" if overlap else "diloco (not overlapped)", progress)
        rows.append(
            _row(
                f"DiLoCo H=8, 40 Mbit/s, {'overlapped' if overlap else 'not overlapped'}",
                "outer step s",
                s.measured_step_s,
                s.predicted_step_s,
                0.20,
                opts,
                "max(H·compute, sync)" if overlap else "H·compute + sync",
            )
        )
    return rows


def codec(progress=None) -> list[dict[str, Any]]:
    """Compressed DiLoCo syncs at 1 Gbit/s, where the codec's compute is as large as the wire time:
    int8 (quantized ring all-reduce) and top-k 1 %. Predicted = α-β wire time + the sync's local work
    (codec passes, padding, casts, concatenation) measured in the run by every worker before each round
    as the sync runs it (`worker.sync_local_s`: the work before the first collective with one rank at a
    time, the rest with every rank at once); the wire-only prediction is shown beside. Eight measured
    rounds (not SMALL's four): a ~50 ms sync on a shared host moves by tens of percent from one round to
    the next, and the median of eight moves less. The int8 ring posts each hand-off as two pieces, as
    PRIME's does: one message each way per hand-off took 1.6× its wire time under gloo
    (`benchmarks/gloo_exchange.py`, docs/emulator.md)."""
    rows = []
    for spec in ("int8", "topk:100"):
        opts = EmulateOptions(
            workers=2,
            bandwidth_mbps=1000.0,
            algorithm="diloco",
            inner_steps=2,
            compression=spec,
            model="mini",
            warmup_steps=1,
            **{**SMALL, "steps": 8},
        )
        s = _go(opts, f"codec {spec}", progress)
        from dtsim.emulator.launcher import predict

        p = predict(opts, s.params, s.value_bytes, s.measured_compute_s, s.buckets_per_sync)
        wire = p["predicted_wire_s"]
        rows.append(
            _row(
                f"DiLoCo {spec}, 2 workers, 1 Gbit/s, {s.params / 1e6:.1f}M values",
                "sync s",
                s.measured_sync_s,
                s.predicted_sync_s,
                0.20,
                opts,
                f"wire only {wire:.3f} s ({s.measured_sync_s / wire - 1:+.0%}); codec and copies "
                f"{p['predicted_codec_s']:.3f} s (measured in the run)",
                predicted_wire=wire,
                predicted_codec=p["predicted_codec_s"],
            )
        )
    return rows


def ws2(progress=None) -> list[dict[str, Any]]:
    """The thesis's world-size-2 testbed (Camilli 2025 tables 5.3, 5.15), scaled down: DDP on unshaped
    links, so the all-reduce is bound by the host's CPU, not the network. As dtsim's validation does
    with the thesis, the host-bound rate is fitted on the world-size-4 run and predicts world size 2 —
    per link, as validation's THESIS-WS2 group used to (what gave its +200 %), and per core, as it now does: each rank
    has cores/N of the host (1 core at N = 2 on this 2-core host, ½ at N = 4; 2 and 1 of the thesis's
    4 vCPUs), and the rate follows the CPU a rank has (`physics.hostbound`)."""
    from dtsim.physics.collectives import allreduce_bytes_per_rank
    from dtsim.physics.hostbound import host_bound_allreduce_time, host_rate_per_core

    cores = _host_cores()
    base = {
        "bandwidth_mbps": None,
        "model": "mini",
        "steps": 5,
        "batch": 4,
        "seq_len": 64,
        "timeout_s": 120.0,
        "calib_steps": 4,
    }
    cal_opts = EmulateOptions(workers=4, **base)
    cal = _go(cal_opts, "ws4 (calibration)", progress)
    opts = EmulateOptions(workers=2, **base)
    s = _go(opts, "ws2", progress)
    size = cal.gradient_bytes
    per_core = host_rate_per_core(4, size, cal.measured_sync_s, cores / 4)
    per_link = float(allreduce_bytes_per_rank(4, size)) / cal.measured_sync_s
    predicted_link = float(allreduce_bytes_per_rank(2, size)) / per_link
    predicted = float(host_bound_allreduce_time(2, size, per_core, cores / 2))
    return [
        _row(
            "DDP, 2 workers, unshaped (host-bound)",
            "sync s",
            s.measured_sync_s,
            predicted,
            0.35,
            opts,
            f"rate per core fitted on the 4-worker run ({cal.measured_sync_s:.3f} s); per link instead: "
            f"{predicted_link:.3f} s ({s.measured_sync_s / predicted_link - 1:+.0%}, the old THESIS-WS2 gap)",
            predicted_per_link=predicted_link,
            calibration_sync_s=cal.measured_sync_s,
            host_cores=cores,
        )
    ]


def _host_cores() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            "slow-link", "per-worker link rates and latencies: the ring runs at its slowest link", slow_link
        ),
        Experiment(
            "straggler", "one worker 3× slower under synchronous DDP: every step waits for it", straggler
        ),
        Experiment(
            "heterogeneous-compute",
            "DiLoCo workers at speeds 1, 1/1.5, 1/2.5: an outer step waits for the slowest",
            heterogeneous_compute,
        ),
        Experiment(
            "overlapped-diloco",
            "DiLoCo with the outer sync overlapped with the next round (Streaming DiLoCo / eager updates)",
            overlapped_diloco,
            2,
        ),
        Experiment("codec", "int8 and top-k DiLoCo syncs: wire time plus the codec's compute", codec, 2),
        Experiment(
            "ws2",
            "the thesis's world-size-2 testbed (host-bound, unshaped): why per-link rates miss by +200%",
            ws2,
            2,
        ),
    )
}


def get(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ScenarioError([("experiment", name, f"must be one of: {', '.join(EXPERIMENTS)} (or list)")])
    return EXPERIMENTS[name]


def run_experiment(name: str, progress=None) -> dict[str, Any]:
    """Run experiment `name`; {experiment, description, rows}, each row a prediction beside its
    measurement (run, metric, measured, predicted, error, tolerance, within, note, command)."""
    e = get(name)
    rows = e.runner(progress)
    return {"experiment": e.name, "description": e.description, "rows": rows}
