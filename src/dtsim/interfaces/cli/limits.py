"""`dtsim limits`: the frontier-limits model of Erdil & Schneider-Joseph 2024 — closed forms, utilization curves, and the
cluster and layout for a given training compute."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.common import (
    LevelsOpt,
    ProbOpt,
    SchedulerOpt,
    SeedOpt,
    WorkersOpt,
    at_medians,
    command_group,
    console,
    fail,
    print_json,
    table,
)
from dtsim.interfaces.operations import uncertainty_flags_alone

if TYPE_CHECKING:
    from dtsim.models.limits.curve import LimitsPoint

limits_app = command_group(
    no_args_is_help=True,
    help="Frontier limits (Erdil & Schneider-Joseph 2024): how large a run fits in a given time before data movement bites.",
)

GpuOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--gpu", help="Scenario (h100-sxm, h100-sxm-low-latency, …) or catalog GPU; repeat to compare."
    ),
]
MonthsOpt = Annotated[float, typer.Option("--months", help="Training duration limit in months.")]
ScalingOpt = Annotated[str, typer.Option("--scaling", help="Critical batch law: default | deepseek | fixed.")]
MemoryOpt = Annotated[
    str,
    typer.Option(
        "--memory",
        help="Memory check: per-gpu (default) | aggregate (the reference's) | per-gpu-activations.",
    ),
]


NARROW_TABLE_COLUMNS = 110  # below this terminal width `limits curve` leaves out WIDE_ONLY
WIDE_ONLY = ("GPU cost $", "GWh", "v", "sched")


def _short(x: float, spec: str) -> str:
    """A number in `spec` with its exponent written short (6.5e24, not 6.5e+24), for a narrow table."""
    return format(x, spec).replace("e+", "e").replace("e0", "e").replace("e-0", "e-")


CSV_FIELDS = (
    "d_model",
    "d_ff",
    "layers",
    "sparsity",
    "params",
    "batch_tokens",
    "training_flop",
    "months",
    "utilization",
    "n_gpus",
    "dp",
    "tp_model",
    "tp_ff",
    "pp",
    "pp_interleaving",
    "ep",
    "microbatches",
    "schedule",
    "tp_comm_months",
    "dp_comm_months",
    "pp_comm_months",
    "latency_months",
    "gpu_hours",
    "capital_cost_usd",
    "energy_kwh",
)

PeakOpt = Annotated[
    float | None,
    typer.Option(
        "--peak-tflops",
        help="Custom chip: dense TFLOP/s at 16-bit (Erdil & Schneider-Joseph 2024 Table 2's peak).",
    ),
]
HbmOpt = Annotated[float | None, typer.Option("--hbm-tb-s", help="Custom chip: HBM bandwidth in TB/s.")]
MemGbOpt = Annotated[float | None, typer.Option("--memory-gb", help="Custom chip: memory per GPU in GB.")]


def generalized_limit(cf, alpha_b, alpha_l, batch_tokens, layers, months, sparsity, t_l) -> float:
    """Appendix 8.3's limit, raising OverflowError where it is beyond a double (α near 0.5)."""
    value = cf.generalized(
        "limit", alpha_b, alpha_l, batch_tokens, layers, months=months, sparsity=sparsity, t_latency=t_l
    )
    if not math.isfinite(value):
        raise OverflowError(value)
    return value


def _check_common(months: float, scaling: str, memory: str) -> None:
    from dtsim.interfaces.operations import check_limits_common

    check_limits_common(months, scaling, memory)


def _levels(bandwidth: str | None, latency_us: str | None) -> tuple[list[float] | None, list[float] | None]:
    """--level-bandwidth (bytes/s) and --level-latency-us (µs) as lists of numbers."""
    try:
        bws = None if bandwidth is None else [float(x) for x in bandwidth.split(",")]
        lats = None if latency_us is None else [float(x) for x in latency_us.split(",")]
    except ValueError:
        raise ScenarioError(
            [("--level-bandwidth/--level-latency-us", bandwidth or latency_us, "comma-separated numbers")]
        ) from None
    return bws, lats


def _plot_curves(series: list[tuple[str, list[LimitsPoint]]], path: Path, fractions: bool = False) -> None:
    from dtsim.interfaces.plotting import pyplot
    from dtsim.models.limits.curve import parallelism_fractions

    plt = pyplot(path, "--fractions-plot" if fractions else "--plot")
    fig, ax = plt.subplots(figsize=(8, 5))
    if fractions:
        name, pts = series[0]
        x = [p.training_flop for p in pts]
        for key, y in parallelism_fractions(pts).items():
            ax.plot(x, y, marker="o", ms=3, label=key.upper())
        ax.set_ylabel("log(N_X) / log(N_GPU)")
        ax.set_title(f"Parallelism fractions — {name}")
    else:
        for name, pts in series:
            ax.plot(
                [p.training_flop for p in pts],
                [p.utilization for p in pts],
                marker="o",
                ms=3,
                label=name,
            )
        ax.set_ylabel("utilization (fraction of peak)")
        ax.set_title("Utilization of compute-optimal runs within the time limit")
    ax.set_xscale("log")
    ax.set_xlabel("training compute (FLOP)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


@limits_app.command("closed-form")
def closed_form_cmd(
    batch_tokens: Annotated[
        str,
        typer.Option(
            "--batch-tokens", help="Critical batch b in tokens, or a distribution (a..b, kind:params)."
        ),
    ] = "4e6",
    layers: Annotated[str, typer.Option(help="MLP blocks L, or a distribution.")] = "100",
    months: Annotated[
        str, typer.Option("--months", help="Training duration limit in months, or a distribution.")
    ] = "3",
    latency_us: Annotated[
        str, typer.Option("--latency-us", help="Latency timescale t_L in µs, or a distribution.")
    ] = "9",
    sparsity: Annotated[str, typer.Option(help="Sparsity factor E, or a distribution.")] = "1",
    alpha_b: Annotated[float | None, typer.Option("--alpha-b", help="Appendix 8.3: batch exponent.")] = None,
    alpha_l: Annotated[float | None, typer.Option("--alpha-l", help="Appendix 8.3: layer exponent.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    uncertainty: Annotated[
        int | None,
        typer.Option(
            "--uncertainty",
            help="Draw N samples of the inputs given as distributions (e.g. --batch-tokens lognormal:4e6:1, "
            "--latency-us 5..15) and report P10/P50/P90 of every limit and what drives it.",
        ),
    ] = None,
    seed: SeedOpt = None,
    levels: LevelsOpt = None,
    prob: ProbOpt = None,
) -> None:
    """Erdil & Schneider-Joseph 2024 §5: d′, b′ and T_critical per node type (Table 2), the latency cliff and limit."""
    from dtsim.analysis.limits_uncertainty import INPUTS, closed_form_monte_carlo, point_inputs, read_input
    from dtsim.analysis.uncertainty import parse_levels
    from dtsim.models.limits import closed_form as cf

    mc = None
    try:
        uncertainty_flags_alone(uncertainty, **{"--seed": seed, "--levels": levels, "--prob": prob})
        texts = {"batch-tokens": batch_tokens, "layers": layers, "months": months}
        texts |= {"latency-us": latency_us, "sparsity": sparsity}
        values = {INPUTS[flag]: read_input(flag, text) for flag, text in texts.items()}
        drawn = sorted(f"--{f}" for f, t in texts.items() if not isinstance(values[INPUTS[f]], float))
        point = point_inputs(values)
        batch_tokens, layers, months = point["batch_tokens"], point["layers"], point["months"]
        latency_us, sparsity = point["latency_us"], point["sparsity"]
        _check_common(months, "default", "per-gpu")
        if (alpha_b is None) != (alpha_l is None):
            raise ScenarioError([("--alpha-b/--alpha-l", (alpha_b, alpha_l), "give both or neither")])
        for flag, a in (("--alpha-b", alpha_b), ("--alpha-l", alpha_l)):
            if a is not None and not -1.0 <= a <= 1.0:  # T^α exponents; the paper's fits lie well inside
                raise ScenarioError([(flag, a, "must be between -1 and 1 (an exponent of training compute)")])
        if alpha_b is not None and not alpha_b - alpha_l < 0.5:
            raise ScenarioError([("--alpha-b", alpha_b, "alpha_b − alpha_l must be < 0.5")])
        if uncertainty is not None:
            alphas = None if alpha_b is None else (alpha_b, alpha_l)
            mc = closed_form_monte_carlo(values, uncertainty, seed, parse_levels(levels), prob or [], alphas)
        kw = dict(batch_tokens=batch_tokens, layers=layers, months=months, sparsity=sparsity)
        rows = cf.table2(**kw)
        t_l = latency_us * 1e-6
        out: dict[str, Any] = {
            "inputs": {**kw, "latency_s": t_l},
            "table2": [r.as_dict() for r in rows],
            "t_critical_latency_flop": cf.t_critical_latency(t_l, batch_tokens, layers, months, sparsity),
            "t_limit_flop": cf.t_limit(t_l, batch_tokens, layers, months, sparsity),
            "params_at_limit": cf.params_at_limit(t_l, batch_tokens, layers, months),
        }
        if alpha_b is not None:
            try:
                generalized_limit(cf, alpha_b, alpha_l, batch_tokens, layers, months, sparsity, t_l)
            except OverflowError:
                raise ScenarioError(
                    [
                        (
                            "--alpha-b",
                            alpha_b,
                            f"with --alpha-l {alpha_l:g} the limit exceeds the largest number a double holds; "
                            "bring alpha_b − alpha_l further below 0.5",
                        )
                    ]
                ) from None
            out["generalized"] = {
                "alpha_b": alpha_b,
                "alpha_l": alpha_l,
                "t_limit_flop": cf.generalized(
                    "limit",
                    alpha_b,
                    alpha_l,
                    batch_tokens,
                    layers,
                    months=months,
                    sparsity=sparsity,
                    t_latency=t_l,
                ),
                "t_critical_flop": {
                    r.name: cf.generalized(
                        "critical",
                        alpha_b,
                        alpha_l,
                        batch_tokens,
                        layers,
                        months=months,
                        sparsity=sparsity,
                        mac_per_s=r.mac_per_s,
                        d=r.d_prime,
                        b=r.b_prime,
                    )
                    for r in rows
                },
            }
    except ScenarioError as exc:
        fail(exc)
        return
    if mc is not None:
        out |= mc.json_parts()
    elif drawn:
        out["distributions_at_point"] = {k: str(texts[k.removeprefix("--")]) for k in drawn}
    if as_json:
        print_json(out)
        return
    t = table(
        title=f"Erdil & Schneider-Joseph 2024 Table 2 (b = {batch_tokens:.3g} tokens, L = {layers:g}, {months:g} months)",
        title_justify="left",
    )
    for col in ("node", "MAC/s", "net words/s", "DRAM words/s", "SRAM words", "d′", "b′", "T_critical FLOP"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(
            r.name,
            f"{r.mac_per_s:.3g}",
            f"{r.net_words_per_s:.2g}",
            f"{r.dram_words_per_s:.2g}",
            f"{r.sram_words / 1e6:.0f}M",
            f"{r.d_prime / 1e3:.1f}k",
            f"{r.b_prime:.0f}",
            f"{r.t_critical_flop:.1g}",
        )
    c = console()
    c.print(t)
    c.print(f"Latency cliff (eq. 14, t_L = {latency_us:g} µs): {out['t_critical_latency_flop']:.1g} FLOP")
    c.print(f"Absolute limit (eq. 18): {out['t_limit_flop']:.1g} FLOP, N_p = {out['params_at_limit']:.1g}")
    if "generalized" in out:
        c.print(
            f"Appendix 8.3 (α_b = {alpha_b:g}, α_L = {alpha_l:g}): T_limit {out['generalized']['t_limit_flop']:.2g} FLOP"
        )
    if mc is not None:
        from dtsim.interfaces.cli.report import print_uncertainty

        print_uncertainty(mc, console=c, title="the limits", fixed_hint=False)
    elif drawn:
        c.print(at_medians({k: values[INPUTS[k.removeprefix("--")]] for k in drawn}), highlight=False)


@limits_app.command("curve")
def curve_cmd(
    gpu: GpuOpt = None,
    sparse: Annotated[bool, typer.Option("--sparse", help="Sparse (MoE) models: E from the width.")] = False,
    scaling: ScalingOpt = "default",
    months: MonthsOpt = 3.0,
    memory: MemoryOpt = "per-gpu",
    level_bandwidth: Annotated[
        str | None,
        typer.Option("--level-bandwidth", help="Override: bidirectional bytes/s per level, comma-separated."),
    ] = None,
    level_latency_us: Annotated[
        str | None, typer.Option("--level-latency-us", help="Override: µs per level, comma-separated.")
    ] = None,
    peak_tflops: PeakOpt = None,
    hbm_tb_s: HbmOpt = None,
    memory_gb: MemGbOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="A JSON list of points (one list per --gpu when several).")
    ] = False,
    csv_path: Annotated[Path | None, typer.Option("--csv", help="Write the points as CSV.")] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Utilization against compute (.png/.svg/.pdf).")
    ] = None,
    fractions_plot: Annotated[
        Path | None, typer.Option("--fractions-plot", help="Parallelism fractions (Figure 7).")
    ] = None,
) -> None:
    """Utilization against training compute for compute-optimal runs within the time limit."""
    from dtsim import catalog
    from dtsim.assumptions import Assumptions
    from dtsim.errors import check_folder, write_text_file
    from dtsim.interfaces.operations import curve_payload, limits_curve
    from dtsim.models.limits.curve import linear_scaling_stop

    try:
        for path, option in ((csv_path, "--csv"), (plot, "--plot"), (fractions_plot, "--fractions-plot")):
            if path is not None:  # before the work
                check_folder(path, option)
        bws, lats = _levels(level_bandwidth, level_latency_us)
        hws, series = limits_curve(
            gpu, sparse, scaling, months, memory, bws, lats, peak_tflops, hbm_tb_s, memory_gb
        )
        if plot is not None:
            _plot_curves(series, plot)
        if fractions_plot is not None:
            _plot_curves(series, fractions_plot, fractions=True)
        if csv_path is not None:
            buf = io.StringIO()
            w = csv.writer(buf)
            w.writerow(("hardware", *CSV_FIELDS))
            for name, pts in series:
                for p in pts:
                    w.writerow((name, *(getattr(p, k) for k in CSV_FIELDS)))
            write_text_file(csv_path, buf.getvalue(), "--csv")
    except ScenarioError as exc:
        fail(exc)
        return
    if as_json:
        print_json(curve_payload(series))
        return
    c = console()
    for hw, (name, pts) in zip(hws, series, strict=True):
        t = table(
            title=f"{name}: {'sparse' if sparse else 'dense'}, {scaling} batch scaling, ≤ {months:g} months",
            title_justify="left",
        )
        overflow = [p for p in pts if not p.memory["per_gpu_with_activations_ok"]]
        cells = {
            "d_model": lambda p: (
                str(p.d_model) + ("*" if not p.memory["per_gpu_with_activations_ok"] else "")
            ),
            "FLOP": lambda p: _short(p.training_flop, ".2g"),
            "util": lambda p: f"{p.utilization:.3f}",
            "GPUs": lambda p: _short(p.n_gpus, ".3g"),
            "months": lambda p: f"{p.months:.2f}",
            "GPU cost $": lambda p: _short(p.capital_cost_usd, ".2g"),
            "GWh": lambda p: _short(p.energy_kwh / 1e6, ".3g"),
            "DP×TPm×TPff×PP×EP": lambda p: f"{p.dp}×{p.tp_model}×{p.tp_ff}×{p.pp}×{p.ep}",
            "v": lambda p: str(p.pp_interleaving),
            "m": lambda p: str(p.microbatches),
            "sched": lambda p: "ZB" if p.schedule == "zero-bubble" else "1F1B",
        }
        narrow = c.width < NARROW_TABLE_COLUMNS  # the columns shown whole in an 80-column terminal
        shown = [k for k in cells if not (narrow and k in WIDE_ONLY)]
        for col in shown:
            t.add_column(col, justify="right")
        for p in pts:
            t.add_row(*(cells[k](p) for k in shown))
        c.print(t)
        if narrow:
            c.print(
                f"(a narrow terminal: {', '.join(WIDE_ONLY)} are left out; a wider one, --json or --csv has "
                "them)",
                highlight=False,
            )
        if overflow:
            worst = max(overflow, key=lambda p: p.memory["activations_per_gpu_gb"])
            total = worst.memory["model_states_per_gpu_gb"] + worst.memory["activations_per_gpu_gb"]
            c.print(
                f"[yellow]* with its activations it does not fit[/yellow] ({len(overflow)} of {len(pts)} points; "
                f"up to {total:,.1f} GB per GPU of the {hw.memory_bytes / 1e9:,.1f} GB at d_model "
                f"{worst.d_model}): --memory {memory} bounds only what Erdil & Schneider-Joseph 2024 do; "
                "--memory per-gpu-activations bounds both",
                highlight=False,
            )
        g = catalog.gpus()[hw.gpu]
        c.print(
            f"GPU cost: GPUs × {g.price_usd:,.0f} USD ({hw.gpu}, purchase); energy: GPUs × {g.board_power_w:g} W × "
            f"time × PUE {Assumptions().pue:g} (--json adds GPU-hours)."
        )
        stop = linear_scaling_stop(pts, hw)
        if stop:
            c.print(
                f"Linear scaling stops (utilization < {stop.threshold_utilization:.2f}) at {stop.first_point_flop:.2g} FLOP "
                f"(crossing ≈ {stop.crossing_flop:.2g}); the curve ends at {pts[-1].training_flop:.2g} FLOP."
            )


@limits_app.command("search")
def search_cmd(
    compute: Annotated[float, typer.Option("--compute", help="Training compute in FLOP.")],
    months: Annotated[
        str, typer.Option("--months", help="Training duration limit in months, or a distribution (2..4).")
    ] = "3",
    gpu: Annotated[str, typer.Option("--gpu", help="Scenario or catalog GPU.")] = "h100-sxm",
    sparse: Annotated[bool, typer.Option("--sparse")] = False,
    scaling: Annotated[
        str,
        typer.Option(
            "--scaling", help="Critical batch law: default | deepseek | fixed, or choice:default,deepseek."
        ),
    ] = "default",
    memory: MemoryOpt = "per-gpu",
    peak_tflops: Annotated[
        str | None,
        typer.Option("--peak-tflops", help="Custom chip: dense 16-bit TFLOP/s, or a distribution."),
    ] = None,
    hbm_tb_s: Annotated[
        str | None, typer.Option("--hbm-tb-s", help="Custom chip: HBM bandwidth in TB/s, or a distribution.")
    ] = None,
    memory_gb: Annotated[
        str | None, typer.Option("--memory-gb", help="Custom chip: memory per GPU in GB, or a distribution.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    uncertainty: Annotated[
        int | None,
        typer.Option(
            "--uncertainty",
            help="Draw N samples of the inputs given as distributions (--months, --scaling choice:…, the "
            "chip), one search each, and report P10/P50/P90 of the cluster size, utilization, time, cost "
            "and energy, and the share of draws where some cluster trains the run in time.",
        ),
    ] = None,
    seed: SeedOpt = None,
    levels: LevelsOpt = None,
    prob: ProbOpt = None,
    scheduler: SchedulerOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """The smallest cluster that trains a compute-optimal run of this compute within the time limit,
    and its best layout."""
    from dtsim.analysis.limits_uncertainty import (
        SEARCH_INPUTS,
        point_inputs,
        read_input,
        read_scaling,
        search_monte_carlo,
    )
    from dtsim.analysis.uncertainty import parse_levels
    from dtsim.interfaces.operations import limits_search

    mc = None
    try:
        flags = {"--seed": seed, "--levels": levels, "--prob": prob}
        uncertainty_flags_alone(uncertainty, **flags, **{"--scheduler": scheduler, "--workers": workers})
        texts = {"months": months, "peak-tflops": peak_tflops, "hbm-tb-s": hbm_tb_s, "memory-gb": memory_gb}
        values: dict[str, Any] = {
            SEARCH_INPUTS[f]: (None if t is None else read_input(f, t)) for f, t in texts.items()
        }
        values["scaling"] = read_scaling(scaling)
        drawn = sorted(k for k, v in values.items() if v is not None and not isinstance(v, float | str))
        point = point_inputs({k: v for k, v in values.items() if v is not None and k != "scaling"})
        months = point["months"]
        scaling = values["scaling"] if isinstance(values["scaling"], str) else values["scaling"].point()
        peak_tflops, hbm_tb_s, memory_gb = (point.get(k) for k in ("peak_tflops", "hbm_tb_s", "memory_gb"))
        found = limits_search(compute, months, gpu, sparse, scaling, memory, peak_tflops, hbm_tb_s, memory_gb)
        shape, hw, point, out = found.shape, found.hw, found.point, found.payload
        if uncertainty is not None:
            mc = search_monte_carlo(
                compute,
                values,
                gpu,
                sparse,
                memory,
                uncertainty,
                seed,
                parse_levels(levels),
                prob or [],
                scheduler=scheduler,
                workers=workers,
            )
    except ScenarioError as exc:
        fail(exc)
        return
    if mc is not None:
        out |= mc.json_parts()
    elif drawn:
        out["distributions_at_point"] = {k: values[k].describe() for k in drawn}
    if as_json:
        print_json(out)
        if point is None:  # nothing trains it: exit 1, as plan does when nothing fits
            raise typer.Exit(1)
        return
    c = console()
    if mc is not None or drawn:
        _search_uncertainty(c, mc, drawn, values)
    if point is None:
        c.print(f"[red]{out['reason']}[/red] (d_model {shape.d_model}, {shape.training_flop:.2g} FLOP)")
        raise typer.Exit(1)
    p = point
    c.print(
        f"{p.training_flop:.3g} FLOP run (d_model {p.d_model}, {p.layers} layers, E = {p.sparsity}, "
        f"batch {p.batch_tokens:,} tokens) on {hw.name}: [bold]{p.n_gpus:,} GPUs[/bold], "
        f"{p.months:.2f} months, utilization {p.utilization:.3f}"
    )
    c.print(
        f"{p.gpu_hours:.3g} GPU-hours; GPUs' purchase cost ${p.capital_cost_usd:,.0f}; energy "
        f"{p.energy_kwh / 1e6:,.3g} GWh (board power × time × PUE)"
    )
    c.print(
        f"Layout DP {p.dp} × TP {p.tp_model}×{p.tp_ff} × PP {p.pp} (v = {p.pp_interleaving}, m = {p.microbatches}, "
        f"{p.schedule}) × EP {p.ep}; per level: "
        + ", ".join(f"{k.replace('_per_level', '')} {v}" for k, v in p.levels.items())
    )
    g = p.gemm_shape_per_gpu
    c.print(
        f"Per-GPU GEMM {g[0]}×{g[1]}×{g[2]}; memory per GPU {p.memory['model_states_per_gpu_gb']:.1f} GB states, {p.memory['activations_per_gpu_gb']:.1f} GB activations"
    )
    if not p.memory["per_gpu_with_activations_ok"]:
        total = p.memory["model_states_per_gpu_gb"] + p.memory["activations_per_gpu_gb"]
        c.print(
            f"[red]with its activations it does not fit[/red]: {total:,.1f} GB per GPU of the "
            f"{hw.memory_bytes / 1e9:,.1f} GB; --memory {memory} bounds the model states only (as "
            "Erdil & Schneider-Joseph 2024 do); --memory per-gpu-activations bounds both",
            highlight=False,
        )


def _search_uncertainty(c, mc, drawn, values) -> None:
    """Under `limits search`: the Monte Carlo of the search, or the note that distributions ran at their
    medians (printed first: the point answer follows)."""
    if mc is None:
        c.print(at_medians({k: values[k] for k in drawn}), highlight=False)
        return
    from dtsim.interfaces.cli.report import print_uncertainty

    print_uncertainty(mc, console=c, title="the search", fixed_hint=False)
    c.print("The point answer (each distribution at its median):", highlight=False)


COMMANDS: dict = {}
GROUPS = {"limits": limits_app}
