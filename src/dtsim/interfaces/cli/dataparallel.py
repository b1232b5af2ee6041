"""`dtsim dataparallel …`: the closed forms of Data Parallelism from Associativity (critical local batch,
scaling efficiency and its limits, gradient accumulation, bucketed overlap) and the thesis's
synchronization bandwidth and epoch traffic (Camilli 2025 ch. 3 and 5). Formats dtsim.models.dataparallel."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

import typer

from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.common import command_group, console, fail, print_json, table

group = command_group(
    no_args_is_help=True,
    help="Data-parallel closed forms (Data Parallelism from Associativity) and the thesis's synchronization "
    "formulas (Camilli 2025): critical-batch, scaling, accumulation, overlap, sync-bandwidth, traffic.",
)

# --- the options of one rank and its all-reduce, shared by four commands -----------------------------

GpuOpt = Annotated[
    str | None,
    typer.Option(
        help="GPU id (catalog: h100-sxm, a100-80gb, …): F is its dense peak at --precision "
        "(the BF16 rate for fp32 gradients) [default: h100-sxm, unless --tflops]."
    ),
]
TflopsOpt = Annotated[float | None, typer.Option(help="F: one rank's TFLOP/s, instead of --gpu.")]
MfuOpt = Annotated[float, typer.Option(help="Fraction of F achieved (the documents use the peak, 1).")]
FabricOpt = Annotated[
    str | None,
    typer.Option(
        help="Link id (catalog/fabrics.yaml: nvlink4, ib-ndr, …): its bus bandwidth and per-step latency, "
        "instead of --bandwidth-gbs/--latency-us."
    ),
]
BandwidthOpt = Annotated[
    float | None,
    typer.Option(
        "--bandwidth-gbs", help="β: the all-reduce's bus bandwidth per rank in GB/s [default: 900]."
    ),
]
LatencyOpt = Annotated[
    float | None,
    typer.Option("--latency-us", help="α: latency per ring step in µs [default: 0, the documents' form]."),
]
ParamsOpt = Annotated[float, typer.Option("--params-b", help="Ψ: model parameters in billions.")]
PrecisionOpt = Annotated[str, typer.Option(help="Gradient precision: fp32, fp16, bf16, fp8 or fp4.")]
RanksOpt = Annotated[int, typer.Option(help="P: data-parallel ranks.")]
BatchOpt = Annotated[
    float,
    typer.Option(
        "--batch-tokens",
        help="b: local batch per rank in tokens (6·Ψ FLOP each; the document's 'samples').",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object.")]


def _flag(field: str) -> str:
    """An API field name as the option that gives it: params_b → --params-b (gpu/tflops → --gpu/--tflops)."""
    return "/".join("--" + part.replace("_", "-") for part in field.split("/"))


def _run(make: Callable[[], Any]) -> Any:
    """make() with a ScenarioError shown as the options that caused it, exit 2."""
    try:
        return make()
    except ScenarioError as exc:
        fail(ScenarioError([(_flag(f), v, m) for f, v, m in exc.problems]))


def _setup(gpu, tflops, mfu, fabric, bandwidth_gbs, latency_us, params_b, precision):
    from dtsim.models.dataparallel import setup

    return setup(gpu, tflops, mfu, fabric, bandwidth_gbs, latency_us, params_b, precision)


def _sig(x: float, digits: int = 4) -> str:
    """`x` to `digits` significant digits in plain notation with thousands separators (1,698 not
    1.698e+03); scientific only far from 1."""
    if x == 0:
        return "0"
    if not 1e-3 <= abs(x) < 1e15:
        return f"{x:.{digits - 1}e}"
    return f"{x:,.{max(digits - 1 - math.floor(math.log10(abs(x))), 0)}f}"


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return f"{_sig(seconds)} s" if seconds >= 10 else f"{_sig(seconds * 1e3)} ms"


def _tokens(x: float) -> str:
    return f"{x:,.0f}" if 1 <= x < 1e15 else _sig(x)


def _show(title: str, rows: list[tuple[str, str]], note: str | None = None) -> None:
    t = table(title=title, show_header=False)
    t.add_column("quantity")
    t.add_column("value", justify="right")
    for k, v in rows:
        t.add_row(k, v)
    c = console()
    c.print(t)
    if note:
        c.print(f"[dim]{note}[/dim]", highlight=False)


def _rate(bits: float, per: str = "/s") -> str:
    """Bits (a rate with `per` "/s") in the largest unit that keeps the number ≥ 1 (bit to Pbit)."""
    for unit, scale in (("Pbit", 1e15), ("Tbit", 1e12), ("Gbit", 1e9), ("Mbit", 1e6), ("kbit", 1e3)):
        if bits >= scale:
            return f"{_sig(bits / scale)} {unit}{per}"
    return f"{_sig(bits)} bit{per}"


def _ratio_text(x: float | None) -> str:
    return "∞ (no communication)" if x is None else _sig(x)


@group.command("critical-batch")
def critical_batch(
    gpu: GpuOpt = None,
    tflops: TflopsOpt = None,
    mfu: MfuOpt = 1.0,
    fabric: FabricOpt = None,
    bandwidth_gbs: BandwidthOpt = None,
    latency_us: LatencyOpt = None,
    params_b: ParamsOpt = 7.0,
    precision: PrecisionOpt = "bf16",
    ranks: RanksOpt = 8,
    ratio: Annotated[float, typer.Option(help="Target compute/communication ratio R.")] = 1.0,
    batch_tokens: Annotated[
        float | None,
        typer.Option(
            "--batch-tokens", help="A local batch (tokens) to time [default: the batch of --ratio]."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The local batch above which data parallelism is compute-bound, b > F·sizeof/(3β), and the batch of a
    target ratio R = 3·b·β/(F·sizeof) (Data Parallelism from Associativity "Compute-Communication Ratio")."""
    from dtsim.models.dataparallel import critical_batch as run

    r = _run(
        lambda: run(
            _setup(gpu, tflops, mfu, fabric, bandwidth_gbs, latency_us, params_b, precision),
            ranks,
            ratio,
            batch_tokens,
        )
    )
    if as_json:
        print_json(r.as_dict())
        return
    _show(
        f"Critical local batch ({r.source})",
        [
            ("critical local batch (R = 1)", f"{_tokens(r.critical_batch_tokens)} tokens"),
            (f"batch for R = {r.target_ratio:g}", f"{_tokens(r.batch_for_ratio_tokens)} tokens"),
            ("batch timed", f"{_tokens(r.batch_tokens)} tokens"),
            ("compute 6·Ψ·b/F", _ms(r.compute_time_s)),
            (f"ring all-reduce over {r.ranks:,} ranks", _ms(r.comm_time_s)),
            ("R = 3·b·β/(F·sizeof) (large P)", _sig(r.ratio)),
            (f"T_compute / T_comm at {r.ranks:,} ranks", _ratio_text(r.ratio_at_ranks)),
            ("bound", r.bound),
        ],
        "Without overlap of compute and communication; the ring time has the (P−1)/P factor and α.",
    )


@group.command("scaling")
def scaling(
    gpu: GpuOpt = None,
    tflops: TflopsOpt = None,
    mfu: MfuOpt = 1.0,
    fabric: FabricOpt = None,
    bandwidth_gbs: BandwidthOpt = None,
    latency_us: LatencyOpt = None,
    params_b: ParamsOpt = 7.0,
    precision: PrecisionOpt = "bf16",
    ranks: Annotated[
        str, typer.Option(help="Rank counts P to show, comma-separated (at most 64).")
    ] = "1,8,64,512,4096",
    batch_tokens: BatchOpt = 4096.0,
    global_batch_tokens: Annotated[
        float | None,
        typer.Option(
            "--global-batch-tokens",
            help="Strong scaling's global batch in tokens [default: --batch-tokens, the one-rank step].",
        ),
    ] = None,
    target_efficiency: Annotated[
        float, typer.Option(help="Efficiency the rank limits keep, below 1 (the document's table: 0.9).")
    ] = 0.9,
    as_json: JsonOpt = False,
) -> None:
    """Weak and strong scaling efficiency as P grows, the most ranks that keep a target efficiency, and the
    limits as P → ∞ (Data Parallelism from Associativity "Weak Scaling", "Strong Scaling")."""
    from dtsim.models.dataparallel import scaling as run

    counts = _run(lambda: _rank_list(ranks))
    r = _run(
        lambda: run(
            _setup(gpu, tflops, mfu, fabric, bandwidth_gbs, latency_us, params_b, precision),
            counts,
            batch_tokens,
            global_batch_tokens,
            target_efficiency,
        )
    )
    if as_json:
        print_json(r.as_dict())
        return
    t = table(title=f"Data-parallel scaling ({r.source})")
    for name in ("P", "all-reduce", "weak E", "strong b = B/P", "strong E"):
        t.add_column(name, justify="right")
    for row in r.rows:
        t.add_row(
            f"{row.ranks:,}",
            _ms(row.comm_time_s),
            f"{row.weak_efficiency:.1%}",
            _tokens(row.strong_batch_tokens),
            "—" if row.strong_efficiency is None else f"{row.strong_efficiency:.1%}",
        )
    c = console()
    c.print(t)
    if any(row.strong_efficiency is None for row in r.rows):
        c.print(
            f"Strong E — : more ranks than the global batch's {_tokens(r.global_batch_tokens)} tokens, so each "
            "rank would hold less than one token: no step to time.",
            highlight=False,
        )

    def most(n: int | None) -> str:
        return "no limit" if n is None else f"{n:,} rank{'s' if n != 1 else ''}"

    e = (
        f"{r.target_efficiency:.0%}"
        if r.target_efficiency * 100 == round(r.target_efficiency * 100)
        else f"{r.target_efficiency:g}"
    )
    c.print(
        f"Weak scaling (local batch {_tokens(r.batch_tokens)} tokens, compute {_ms(r.compute_time_s)}): "
        f"E ≥ {e} up to [bold]{most(r.weak_max_ranks)}[/bold]; as P → ∞, E → "
        + (
            f"{r.weak_limit:.1%}" if r.weak_limit > 0 else "0 (the ring's latency term 2(P−1)·α grows with P)"
        ),
        highlight=False,
    )
    c.print(
        f"Strong scaling (global batch {_tokens(r.global_batch_tokens)} tokens, {_ms(r.compute_time_one_s)} on one "
        f"rank): E ≥ {e} up to [bold]{most(r.strong_max_ranks)}[/bold]; as P → ∞, E → 0",
        highlight=False,
    )
    c.print(
        "[dim]No overlap of compute and communication; the ring all-reduce is 2(P−1)·α + 2(P−1)/P·Ψ·sizeof/β.[/dim]",
        highlight=False,
    )


def _rank_list(text: str) -> list[int]:
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise ScenarioError(
            [("ranks", text, "must be whole rank counts separated by commas, e.g. 1,8,64")]
        ) from None
    return values


@group.command("accumulation")
def accumulation(
    gpu: GpuOpt = None,
    tflops: TflopsOpt = None,
    mfu: MfuOpt = 1.0,
    fabric: FabricOpt = None,
    bandwidth_gbs: BandwidthOpt = None,
    latency_us: LatencyOpt = None,
    params_b: ParamsOpt = 7.0,
    precision: PrecisionOpt = "bf16",
    ranks: RanksOpt = 8,
    batch_tokens: Annotated[
        float, typer.Option("--batch-tokens", help="Tokens of one micro-batch per rank.")
    ] = 4096.0,
    micro_batches: Annotated[int, typer.Option(help="A: micro-batches accumulated per all-reduce.")] = 4,
    compute_ms: Annotated[
        float | None, typer.Option("--compute-ms", help="T_c of one micro-batch in ms, instead of 6·Ψ·b/F.")
    ] = None,
    comm_ms: Annotated[
        float | None, typer.Option("--comm-ms", help="T_r of one all-reduce in ms, instead of the ring's.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Speed-up from all-reducing once per A micro-batches, (A·T_c + A·T_r)/(A·T_c + T_r) (Data Parallelism
    from Associativity "Gradient Accumulation")."""
    from dtsim.models.dataparallel import accumulation as run

    r = _run(
        lambda: run(
            _setup(gpu, tflops, mfu, fabric, bandwidth_gbs, latency_us, params_b, precision),
            micro_batches,
            ranks,
            batch_tokens,
            compute_ms,
            comm_ms,
        )
    )
    if as_json:
        print_json(r.as_dict())
        return
    _show(
        f"Gradient accumulation over {r.micro_batches:,} micro-batches ({r.source})",
        [
            ("compute per micro-batch T_c", _ms(r.compute_time_s)),
            ("all-reduce T_r", _ms(r.comm_time_s)),
            ("all-reduce every micro-batch A·(T_c + T_r)", _ms(r.step_no_accumulation_s)),
            ("accumulate, all-reduce once A·T_c + T_r", _ms(r.step_accumulation_s)),
            ("speed-up", f"{_sig(r.speedup)}×"),
            ("speed-up as A → ∞ (T_c + T_r)/T_c", f"{_sig(r.speedup_limit)}×"),
        ],
    )


@group.command("overlap")
def overlap(
    gpu: GpuOpt = None,
    tflops: TflopsOpt = None,
    mfu: MfuOpt = 1.0,
    fabric: FabricOpt = None,
    bandwidth_gbs: BandwidthOpt = None,
    latency_us: LatencyOpt = None,
    params_b: ParamsOpt = 7.0,
    precision: PrecisionOpt = "bf16",
    ranks: RanksOpt = 8,
    batch_tokens: BatchOpt = 4096.0,
    buckets: Annotated[
        int | None, typer.Option(help="k: gradient buckets [default: gradient / --bucket-mb].")
    ] = None,
    bucket_mb: Annotated[
        float | None, typer.Option("--bucket-mb", help="DDP bucket size in MB [default: 25, PyTorch's].")
    ] = None,
    forward_ms: Annotated[
        float | None,
        typer.Option(
            "--forward-ms", help="Forward time in ms [default: 2/6 of 6·Ψ·b/F; 0 with --backward-ms]."
        ),
    ] = None,
    backward_ms: Annotated[
        float | None, typer.Option("--backward-ms", help="Backward time in ms [default: 4/6 of 6·Ψ·b/F].")
    ] = None,
    comm_ms: Annotated[
        float | None,
        typer.Option("--comm-ms", help="All-reduce time in ms [default: the ring's over --ranks]."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The all-reduce time left exposed when DDP reduces gradient buckets during the backward pass (Data
    Parallelism from Associativity "Bucket-Based Overlap")."""
    from dtsim.models.dataparallel import overlap as run

    r = _run(
        lambda: run(
            _setup(gpu, tflops, mfu, fabric, bandwidth_gbs, latency_us, params_b, precision),
            ranks,
            batch_tokens,
            buckets,
            bucket_mb,
            forward_ms,
            backward_ms,
            comm_ms,
        )
    )
    if as_json:
        print_json(r.as_dict())
        return
    _show(
        f"Bucketed overlap, {r.buckets:,} buckets ({r.source})",
        [
            ("forward", _ms(r.forward_time_s)),
            ("backward", _ms(r.backward_time_s)),
            ("all-reduce", _ms(r.comm_time_s)),
            ("hidden under the backward pass", f"{_ms(r.overlapped_comm_s)} ({r.overlap_fraction:.1%})"),
            ("exposed", _ms(r.exposed_comm_s)),
            ("step with overlap", _ms(r.step_s)),
            ("step without overlap", _ms(r.step_no_overlap_s)),
        ],
        "A bucket overlaps the backward compute left after it is ready; the last one is always exposed.",
    )


@group.command("sync-bandwidth")
def sync_bandwidth(
    params_b: Annotated[float, typer.Option("--params-b", help="Model parameters in billions.")] = 72_000.0,
    precision: PrecisionOpt = "bf16",
    step_s: Annotated[float, typer.Option("--step-s", help="T_batch: one step's time in s.")] = 4.9,
    network_fraction: Annotated[
        float, typer.Option(help="α_net: the share of the step synchronization may take (eq. 3.6).")
    ] = 0.05,
    sync_budget_ms: Annotated[
        float | None,
        typer.Option(
            "--sync-budget-ms", help="T_synch budget in ms, instead of α_net·T_batch (eq. 3.14: 250)."
        ),
    ] = None,
    ring_km: Annotated[
        float, typer.Option("--ring-km", help="L_max: fibre length in km (5 µs/km).")
    ] = 4800.0,
    hops: Annotated[int, typer.Option(help="N_hops: switching hops (the thesis: one per datacenter).")] = 23,
    hop_us: Annotated[float, typer.Option("--hop-us", help="τ_hop: latency per hop in µs.")] = 28.0,
    bandwidth_gbps: Annotated[
        float | None,
        typer.Option("--bandwidth-gbps", help="A link's bandwidth in Gbit/s: its synchronization time."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The WAN bandwidth a data-parallel step needs to synchronize within its budget,
    S_grad/(α_net·T_batch − T_prop − T_hop) (Camilli 2025 eq. 3.6–3.13); defaults: its 72T, 23-datacenter ring."""
    from dtsim.models.dataparallel import sync_bandwidth as run

    r = _run(
        lambda: run(
            params_b,
            precision,
            step_s,
            network_fraction,
            sync_budget_ms,
            ring_km,
            hops,
            hop_us,
            bandwidth_gbps,
        )
    )
    if as_json:
        print_json(r.as_dict())
        return
    bw = r.min_bandwidth_bits_s
    rows = [
        ("gradient S_grad", _rate(r.gradient_bits, per="")),
        ("sync budget", _ms(r.sync_budget_s)),
        ("propagation", _ms(r.propagation_s)),
        ("hops", _ms(r.hop_s)),
        (
            "minimum bandwidth",
            "none suffices: latency spends the budget" if bw is None else _rate(bw),
        ),
    ]
    if r.bandwidth_bits_s is not None:
        rows += [
            (f"on {_rate(r.bandwidth_bits_s)}: serialization", _ms(r.serialization_s)),
            ("synchronization T_prop + T_hop + T_ser", _ms(r.sync_time_s)),
            ("within the budget", "yes" if r.fits_budget else "no"),
        ]
        if r.sync_fraction is not None:
            rows.append(("share of the step", f"{r.sync_fraction:.2%}"))
    _show("Synchronization bandwidth (Camilli 2025 eq. 3.8–3.13)", rows)


@group.command("traffic")
def traffic(
    params_b: Annotated[
        float, typer.Option("--params-b", help="Model parameters in billions (DistilGPT2's by default).")
    ] = 0.082,
    precision: Annotated[
        str, typer.Option(help="Gradient precision: fp32, fp16, bf16, fp8 or fp4.")
    ] = "fp32",
    ranks: Annotated[int, typer.Option(help="N: world size.")] = 2,
    batch_samples: Annotated[
        int, typer.Option("--batch-samples", help="bs_local: samples per rank per step.")
    ] = 8,
    dataset_samples: Annotated[int, typer.Option("--dataset-samples", help="Samples in the epoch.")] = 400,
    event_s: Annotated[
        float | None,
        typer.Option(
            "--event-s", help="Measured duration of one all-reduce burst in s: its peak throughput."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """An epoch's ring all-reduce traffic: ⌊samples/(bs·ws)⌋ steps, 2(N−1)/N·S_grad per rank a step, and a
    burst's peak rate (Camilli 2025 eq. 3.18, 4.1, 5.1–5.4); defaults: its DistilGPT2 runs."""
    from dtsim.models.dataparallel import traffic as run

    r = _run(lambda: run(params_b, precision, ranks, batch_samples, dataset_samples, event_s))
    if as_json:
        print_json(r.as_dict())
        return
    rows = [
        ("gradient S_grad", f"{_sig(r.gradient_bytes / 1e6)} MB"),
        ("steps (all-reduce events)", f"{r.steps:,}"),
        ("sent per rank per event 2(N−1)/N·S", f"{_sig(r.bytes_per_rank_per_event / 1e6)} MB"),
        ("sent per rank over the epoch", f"{_sig(r.bytes_per_rank / 1e6, 6)} MB"),
        ("all ranks per event 2(N−1)·S", f"{_sig(r.bytes_per_event / 1e6)} MB"),
        ("all ranks over the epoch", f"{_sig(r.bytes_total / 1e6, 6)} MB"),
    ]
    if r.peak_throughput_bits_s is not None:
        rows.append(("peak throughput per rank", _rate(r.peak_throughput_bits_s)))
    _show(f"Ring all-reduce traffic over {r.ranks:,} ranks (Camilli 2025)", rows)


COMMANDS: dict[str, Callable[..., None]] = {}
GROUPS: dict[str, typer.Typer] = {"dataparallel": group}
