"""`dtsim emulate`: real PyTorch distributed training over shaped links, beside dtsim's prediction."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from dtsim.errors import ScenarioError, check_folder
from dtsim.interfaces.cli.common import (
    command_group,
    console,
    err,
    fail,
    json_text,
    params_given,
    print_json,
    table,
    with_progress,
)

if TYPE_CHECKING:  # the emulator loads its own modules only when a command runs
    from dtsim.emulator.launcher import Interrupted
    from dtsim.emulator.summary import EmulationSummary

DILOCO_HS = (1, 8, 32, 128)  # the H values `emulate diloco-efficiency` compares


def _counted(progress, total: int):
    """An experiment's progress(name) as the progress bar's (runs started, runs): each run's name
    starts it, so the bar shows the runs done before it (None: no bar, e.g. under --json)."""
    done = [0]

    def started(name: str) -> None:
        if progress is not None:
            progress(done[0], total)
        done[0] += 1

    return started


emulate_app = command_group(
    invoke_without_command=True,
    help="Run real distributed training (torch.distributed, gloo) between network namespaces joined by "
    "tc-shaped links, and compare with dtsim's prediction. Needs root and the `emulator` extra.",
)


def _parse_slow(values: list[str] | None) -> tuple[dict[int, float], dict[int, float]]:
    """--slow-link RANK:MBPS[:MS] → ({rank: Mbit/s}, {rank: one-way latency ms}); MBPS may be empty
    (`2::40`: the common rate, 40 ms more latency)."""
    rates, latencies = {}, {}
    for v in values or []:
        try:
            parts = v.split(":")
            if len(parts) not in (2, 3):
                raise ValueError
            rank = int(parts[0])
            if parts[1] != "":
                rates[rank] = float(parts[1])
            if len(parts) == 3:
                latencies[rank] = float(parts[2])
            elif parts[1] == "":
                raise ValueError
        except ValueError:
            raise ScenarioError(
                [
                    (
                        "slow-link",
                        v,
                        "must be RANK:MBPS or RANK:MBPS:MS (MBPS may be empty), e.g. 3:50 or 1:100:20",
                    )
                ]
            ) from None
    return rates, latencies


def _parse_factors(values: list[str] | None) -> dict[int, float]:
    out = {}
    for v in values or []:
        try:
            rank, factor = v.split(":")
            out[int(rank)] = float(factor)
        except ValueError:
            raise ScenarioError([("compute-factor", v, "must be RANK:FACTOR, e.g. 1:3")]) from None
    return out


def _note(message: str) -> None:
    err.print(message, markup=False, highlight=False, soft_wrap=True)


def _interrupted(exc: Interrupted) -> NoReturn:
    """Say what the interrupted run removed, or what it could not (never claim more), and exit
    128 + the signal's number (130 for Ctrl-C)."""
    r = exc.removal
    name = str(exc)
    if r.complete:
        _note(f"interrupted ({name}): removed what the run had made: {r.describe()}")
    else:
        done = f"removed {r.describe()}; " if not r.empty else ""
        _note(
            f"interrupted ({name}): {done}could not remove: {'; '.join(r.failed)}. "
            "It stays recorded; `dtsim emulate --cleanup` (or the next run) removes it."
        )
    raise typer.Exit(128 + exc.signum)


def _cleanup(as_json: bool = False) -> NoReturn:
    """`--cleanup`: reclaim what dead runs left, leave live runs alone, say which is which (`--json`: one
    object per run looked at: run_id, status, what was removed, what could not be, why)."""
    from dtsim.emulator.launcher import StopRequests
    from dtsim.emulator.netns import CommandFailed, require_root
    from dtsim.emulator.runstate import reclaim

    require_root()
    with StopRequests() as signals:  # a Ctrl-C waits until the removal in progress is done
        try:
            outcomes = reclaim()
        except (CommandFailed, OSError) as exc:
            raise ScenarioError([("cleanup", "failed", str(exc))]) from None
    if as_json:
        print_json(
            [
                {
                    "run_id": o.run_id,
                    "status": o.status,
                    "note": o.note,
                    "removed": o.removal.describe(),
                    "failed": list(o.removal.failed),
                }
                for o in outcomes
            ]
        )
    else:
        out = console()
        for o in outcomes:
            out.print(o.describe(), markup=False, highlight=False, soft_wrap=True)
        if not any(o.status in ("reclaimed", "incomplete") for o in outcomes):
            out.print("nothing left behind by a dead run", markup=False, highlight=False, soft_wrap=True)
    if signals.received:
        raise typer.Exit(128 + signals.received[0])
    raise typer.Exit(1 if any(o.status == "incomplete" for o in outcomes) else 0)


def _writable(path: Path, option: str) -> None:
    """A clear error, before any work, when `path` cannot be written: its folder does not exist or is
    not writable, or it is a folder itself."""
    check_folder(path, option)
    if path.is_dir():
        raise ScenarioError([(option, str(path), "is a folder; give a file name")])
    if not os.access(path.parent, os.W_OK):
        raise ScenarioError([(option, str(path), f"its folder is not writable ({path.parent})")])


def _write_report(path: Path, summary: EmulationSummary) -> None:
    path.write_text(json_text(summary.as_dict(), default=str))
    rows = []
    for rec in summary.records:
        for s in rec["syncs"]:
            rows.append(
                {"rank": rec["rank"], **{k: v for k, v in s.items() if not isinstance(v, (list, dict))}}
            )
    if rows:
        keys = sorted({k for r in rows for k in r}, key=lambda k: (k != "rank", k))
        with open(path.with_suffix(".csv"), "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)


def _print_summary(s: EmulationSummary) -> None:
    c = console()
    approx = " (latency applied in the workers: approximate)" if s.latency_approximate else ""
    t = table(
        title=f"{s.algorithm.upper()} on {s.workers} workers, {s.params / 1e6:.1f}M parameters{approx}",
        title_justify="left",
    )
    t.add_column("")
    t.add_column("measured", justify="right")
    t.add_column("predicted", justify="right")
    t.add_column("error", justify="right")

    def err(x):
        return "—" if x is None else f"{x:+.1%}"

    mb = 1e6
    t.add_row(
        "bytes sent per rank per sync (payload)",
        f"{s.payload_bytes_per_rank_per_sync / mb:,.2f} MB",
        f"{s.expected_bytes_per_rank_per_sync / mb:,.2f} MB",
        err(s.bytes_error),
    )
    t.add_row(
        "  protocol overhead (headers, ACKs)",
        f"{s.protocol_overhead_bytes_per_rank_per_sync / mb:,.3f} MB",
        "",
        "",
    )
    if s.links_shaped:
        t.add_row("sync time", f"{s.measured_sync_s:.3f} s", f"{s.predicted_sync_s:.3f} s", err(s.sync_error))
    else:  # unshaped links: the model has no link rate to predict a time from
        t.add_row("sync time", f"{s.measured_sync_s:.3f} s", "— (links not shaped)", "")
    t.add_row("step time", f"{s.measured_step_s:.3f} s", f"{s.predicted_step_s:.3f} s", err(s.step_error))
    t.add_row("tokens per second", f"{s.tokens_per_s:,.0f}", f"{s.predicted_tokens_per_s:,.0f}", "")
    t.add_row("communication share of the step", f"{s.overhead_fraction:.1%}", "", "")
    t.add_row("loss (first → last step)", f"{s.loss_first:.3f} → {s.loss_last:.3f}", "", "")
    c.print(t)


@emulate_app.callback()
def emulate(
    ctx: typer.Context,
    workers: Annotated[int, typer.Option(help="Worker processes, one network namespace each.")] = 2,
    bandwidth_mbps: Annotated[
        float | None, typer.Option("--bandwidth-mbps", help="Every link, both directions (omit: unshaped).")
    ] = None,
    latency_ms: Annotated[
        float,
        typer.Option("--latency-ms", help="One-way delay per link (needs netem, or --latency-mode app)."),
    ] = 0.0,
    latency_mode: Annotated[
        str, typer.Option("--latency-mode", help="netem | app (delay inside the workers; approximate).")
    ] = "netem",
    slow_link: Annotated[
        list[str] | None,
        typer.Option(
            "--slow-link",
            help="RANK:MBPS[:MS], one worker's own link rate and one-way latency (MBPS may be empty; repeatable).",
        ),
    ] = None,
    compute_factor: Annotated[
        list[str] | None,
        typer.Option(
            "--compute-factor",
            help="RANK:FACTOR, a worker that computes FACTOR (≥ 1) times slower: a straggler (repeatable).",
        ),
    ] = None,
    overlap: Annotated[
        bool,
        typer.Option(
            "--overlap",
            help="DiLoCo: overlap each outer sync with the next round's inner steps, applied one round late.",
        ),
    ] = False,
    experiment: Annotated[
        str | None,
        typer.Option(
            "--experiment",
            help="Run a canned emulator-vs-prediction experiment by name; `list` prints them.",
        ),
    ] = None,
    algorithm: Annotated[str, typer.Option(help="ddp | diloco.")] = "ddp",
    inner_steps: Annotated[int, typer.Option("--inner-steps", help="DiLoCo H.")] = 32,
    compression: Annotated[str, typer.Option(help="DiLoCo: none | fp16 | int8 | topk:RATIO.")] = "none",
    model: Annotated[
        str, typer.Option(help="nano | tiny | mini | small | medium | distilgpt2, or a size like 20M.")
    ] = "tiny",
    steps: Annotated[
        int, typer.Option(help="Measured synchronisations (DDP steps, DiLoCo outer steps).")
    ] = 3,
    batch: Annotated[int, typer.Option(help="Sequences per worker per step.")] = 4,
    seq_len: Annotated[int, typer.Option("--seq-len")] = 64,
    dtype: Annotated[str, typer.Option(help="float32 | float64.")] = "float32",
    bucket_mb: Annotated[float, typer.Option("--bucket-mb", help="DDP gradient bucket size.")] = 25.0,
    queue_ms: Annotated[
        float | None,
        typer.Option(
            "--queue-ms",
            help="tbf queue limit in milliseconds [default: emulator_tbf_queue_ms in the assumptions table].",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Hard limit on the whole run, seconds.")] = 600.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write every measurement (JSON, and CSV beside it).")
    ] = None,
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup",
            help="Remove what dead runs left (namespaces, interfaces, qdiscs, worker processes, temporary "
            "directories; runs still going are left alone), and exit. Every run does this first.",
        ),
    ] = False,
    worker_config: Annotated[
        Path | None,
        typer.Option(
            "--worker-config",
            help="Write the worker config for torchrun on real hosts (see docs/emulator.md), and exit.",
        ),
    ] = None,
) -> None:
    # lazy: the assumptions table (numpy + YAML) and the launcher load only when the command runs
    from dtsim.assumptions import defaults as asm_defaults
    from dtsim.emulator.launcher import EmulateOptions

    if queue_ms is None:
        queue_ms = float(asm_defaults().emulator_tbf_queue_ms)  # assumptions table
    given = params_given(ctx)
    flag = lambda p: "--" + p.replace("_", "-")  # noqa: E731
    if experiment is not None and ctx.invoked_subcommand is None and not cleanup:
        from dtsim.interfaces.cli.emulate_experiments import run_experiment_command

        fixed = sorted(given - {"experiment", "as_json"}, key=list(ctx.params).index)
        if fixed:
            fail(
                ScenarioError(
                    [
                        (
                            flag(p),
                            ctx.params[p],
                            f"--experiment {experiment} runs with its own options (its reproduce line shows "
                            "them); drop this, or run `dtsim emulate` with the options you want",
                        )
                        for p in fixed
                    ]
                )
            )
            return
        run_experiment_command(experiment, as_json)
        return
    if algorithm == "ddp" and "inner_steps" in given:
        fail(
            ScenarioError(
                [("--inner-steps", inner_steps, "applies to --algorithm diloco only (DDP syncs every step)")]
            )
        )
        return
    try:
        slow, slow_latency = _parse_slow(slow_link)
        ctx.obj = EmulateOptions(
            workers=workers,
            bandwidth_mbps=bandwidth_mbps,
            latency_ms=latency_ms,
            latency_mode=latency_mode,
            slow_links=slow,
            link_latency_ms=slow_latency,
            compute_factors=_parse_factors(compute_factor),
            overlap=overlap,
            algorithm=algorithm,
            inner_steps=inner_steps,
            compression=compression,
            model=model,
            steps=steps,
            batch=batch,
            seq_len=seq_len,
            dtype=dtype,
            bucket_mb=bucket_mb,
            queue_ms=queue_ms,
            timeout_s=timeout,
        )
        if cleanup:
            _cleanup(as_json)
        if ctx.invoked_subcommand is not None:
            return
        ctx.obj.validate()
        if worker_config is not None:
            from dtsim.emulator.launcher import worker_config as make_config

            cfg = make_config(ctx.obj, netem=True, results_dir=".", iface=None)  # real links: no app delay
            cfg["collective_timeout_s"] = timeout
            _writable(worker_config, "worker-config")
            try:
                worker_config.write_text(json.dumps(cfg, indent=2) + "\n")
            except OSError as exc:
                raise ScenarioError(
                    [("worker-config", str(worker_config), exc.strerror or str(exc))]
                ) from None
            console().print(
                f"wrote {worker_config}; on each host: torchrun --nnodes {workers} --nproc-per-node 1 "
                f"--node-rank R --master-addr HOST0 --master-port 29500 -m dtsim.emulator.worker {worker_config}"
            )
            raise typer.Exit(0)
        if report is not None:
            _writable(report, "report")  # before the run, not after it
        from dtsim.emulator.launcher import Interrupted, StopRequests, WorkerFailed, run
        from dtsim.emulator.netns import CommandFailed

        # held around the run and the report of what an interrupted run removed: a second Ctrl-C after
        # the removal must not cut that report (a stop keeps later ones ignored until the exit)
        with StopRequests(until_exit=True):
            try:
                summary = run(ctx.obj, notice=_note)
            except (WorkerFailed, CommandFailed, OSError) as exc:  # everything made is removed by now
                raise ScenarioError([("run", "failed", str(exc))]) from None
            except Interrupted as exc:
                _interrupted(exc)
    except ScenarioError as exc:
        fail(exc)
        return
    if as_json:
        print_json(summary.headline(), default=str)
    else:
        _print_summary(summary)
    if report is not None:
        try:
            _write_report(report, summary)
        except OSError as exc:  # printed above, so the run is not lost
            fail(ScenarioError([("report", str(report), exc.strerror or str(exc))]))


@emulate_app.command("thesis")
def thesis_cmd(
    ctx: typer.Context,
    model: Annotated[
        str, typer.Option(help="Scaled-down model (the thesis used DistilGPT2, 82M).")
    ] = "small",
    steps: Annotated[int, typer.Option(help="Measured all-reduce events per configuration.")] = 3,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Camilli 2025 chapter 5, scaled down: world size 2 and 4, batch 8 and 16, FP32 and FP64, one slow link
    at 200/100/50 Mbit/s — the thesis's tables beside these measurements."""
    from dtsim.emulator.experiments import thesis, thesis_runs
    from dtsim.emulator.launcher import Interrupted, StopRequests, require_emulator
    from dtsim.emulator.presets import config_for

    with StopRequests(
        until_exit=True
    ):  # a Ctrl-C between runs stops the next; one after a removal waits for the report
        try:
            config_for(model)
            for _, opts in thesis_runs(model, steps):  # every run's options, before the first starts
                opts.validate()
            require_emulator()
            runs = len(list(thesis_runs(model, steps)))
            out = with_progress(
                "emulating the thesis's runs",
                not as_json,
                lambda p: thesis(model, steps, progress=_counted(p, runs)),
            )
        except ScenarioError as exc:
            fail(exc)
        except Interrupted as exc:
            _interrupted(exc)
    if as_json:
        print_json(out, default=str)
        return
    c = console()
    t = table(
        title=f"Bytes per all-reduce event (medians): {model} model; the thesis used DistilGPT2",
        title_justify="left",
    )
    for col in ("run", "all flows MB", "per flow MB", "2(N−1)/N·S MB", "thesis all flows MB"):
        t.add_column(col, justify="right")
    for name, r in out["runs"].items():
        t.add_row(
            name,
            f"{r['bytes_per_event_mb']:.2f}",
            f"{r['bytes_per_flow_mb']:.2f}",
            f"{r['expected_per_flow_mb']:.2f}",
            f"{r['thesis']['bytes_mb']:.1f}",
        )
    c.print(t)
    t = table(
        title="Time per event and step (medians), and the all-reduce share of the step", title_justify="left"
    )
    for col in ("run", "event s", "predicted s", "thesis T_ar s", "step s", "thesis s", "overhead", "thesis"):
        t.add_column(col, justify="right")
    for name, r in out["runs"].items():
        th = r["thesis"]
        t.add_row(
            name,
            f"{r['event_s']:.2f}",
            "—" if r["predicted_event_s"] < 1e-3 else f"{r['predicted_event_s']:.2f}",
            f"{th['tar_s']:.2f}",
            f"{r['step_s']:.2f}",
            f"{th['step_s']:.1f}",
            f"{r['overhead']:.0%}",
            f"{th['overhead']:.0%}",
        )
    c.print(t)
    c.print(
        "Unshaped runs are host-bound, as the thesis's bridge was; dtsim predicts shaped links only ('—')."
    )
    for k, (ours, theirs) in out["ratios"].items():
        c.print(f"{k}: {ours:.3f} (thesis {theirs:.3f})")
    for k, ok in out["findings"].items():
        c.print(f"{'✓' if ok else '✗'} {k}")


@emulate_app.command("diloco-efficiency")
def diloco_efficiency_cmd(
    model: Annotated[str, typer.Option()] = "nano",
    total_inner_steps: Annotated[
        int, typer.Option("--total-inner-steps", help="Inner steps per worker for every H.")
    ] = 512,
    workers: Annotated[int, typer.Option()] = 2,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Loss against tokens for H ∈ {1, 8, 32, 128} on the same model and data, and the η(H) it implies
    beside the MIRI simulator docs' η = 1 − α·log10(H)."""
    from dtsim.emulator.experiments import diloco_efficiency
    from dtsim.emulator.launcher import Interrupted, StopRequests, require_emulator

    with StopRequests(until_exit=True):  # as in `thesis`
        try:
            if not 128 <= total_inner_steps <= 100000:
                raise ScenarioError(
                    [("total-inner-steps", total_inner_steps, "must be between 128 and 100000")]
                )
            if not 1 <= workers <= 16:
                raise ScenarioError([("workers", workers, "must be between 1 and 16")])
            from dtsim.emulator.presets import config_for

            config_for(model)
            require_emulator()
            runs = 1 + len(DILOCO_HS)  # the DDP baseline, then one run per H
            out = with_progress(
                "emulating DDP and DiLoCo",
                not as_json,
                lambda p: diloco_efficiency(
                    total_inner_steps=total_inner_steps,
                    workers=workers,
                    model=model,
                    hs=DILOCO_HS,
                    progress=_counted(p, runs),
                ),
            )
        except ScenarioError as exc:
            fail(exc)
        except Interrupted as exc:
            _interrupted(exc)
    if as_json:
        print_json(out, default=str)
        return
    c = console()
    t = table(
        title=f"DiLoCo on {out['workers']} workers, {out['params'] / 1e6:.1f}M parameters, {out['total_inner_steps']} inner steps each",
        title_justify="left",
    )
    for col in ("H", "tokens", "final held-out loss", "η measured", "η MIRI simulator docs"):
        t.add_column(col, justify="right")
    for h, r in out["runs"].items():
        eta = "≥ 1 (beats DDP)" if r["eta_measured"] is None else f"{r['eta_measured']:.2f}"
        t.add_row(str(h), f"{r['tokens']:,}", f"{r['final_loss']:.3f}", eta, f"{r['eta_seed000']:.2f}")
    c.print(t)
    c.print(
        f"DDP baseline: held-out loss {out['baseline']['final_loss']:.3f} after the same tokens. η = tokens DDP needs "
        f"for a run's final loss ÷ tokens the run used; the MIRI simulator docs' α for {out['params'] / 1e6:.1f}M parameters: "
        f"{out['alpha_seed000']:.3f}"
    )


COMMANDS: dict = {}
GROUPS = {"emulate": emulate_app}
