"""CLI commands of the datacenter model: `dtsim step`, `dtsim plan`, `dtsim collective`, `dtsim fabric`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from dtsim.catalog.calibration_file import read_calibration
from dtsim.errors import ScenarioError, check_folder
from dtsim.interfaces.cli.common import (
    FixedAssumptionsOpt,
    LevelsOpt,
    ProbOpt,
    SchedulerOpt,
    SeedOpt,
    WorkersOpt,
    console,
    err,
    fail,
    json_text,
    params_given,
    print_json,
    table,
    with_progress,
)
from dtsim.interfaces.operations import (
    CLUSTER_FLAGS,
    SHAPE_FLAGS,
    check_attention_kernel,
    collective_result,
    fabric_json,
    fabric_plan,
    layout_label,
    model_architecture,
    step_layouts,
    step_payload,
    target_shape_conflicts,
    target_size_payload,
    uncertainty_flags_alone,
    with_software,
)

ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Catalog model id or an architecture file.")
]


HiddenOpt = Annotated[int | None, typer.Option(help="Hidden size.")]
LayersOpt = Annotated[int | None, typer.Option(help="Transformer layers.")]
HeadsOpt = Annotated[int | None, typer.Option(help="Attention heads.")]
KvHeadsOpt = Annotated[int | None, typer.Option("--kv-heads", help="Key/value heads (GQA/MQA).")]
FfnOpt = Annotated[int | None, typer.Option(help="FFN size.")]
FfnTypeOpt = Annotated[str | None, typer.Option("--ffn-type", help="gelu | swiglu.")]
VocabOpt = Annotated[int | None, typer.Option(help="Vocabulary size.")]
SeqLenOpt = Annotated[int | None, typer.Option("--seq-len", help="Sequence length.")]
GpuOpt = Annotated[
    str | None,
    typer.Option(
        help="GPU id (catalog with micro-architecture constants) [default: the fabric's, else a100-80gb]."
    ),
]
NodesOpt = Annotated[int, typer.Option(help="Nodes.")]
GpusPerNodeOpt = Annotated[
    int | None, typer.Option("--gpus-per-node", help="GPUs per node [default: the fabric's, else 8].")
]
FabricOpt = Annotated[
    str | None,
    typer.Option(
        "--fabric",
        help="Cluster fabric (catalog/cluster_fabrics.yaml: dgx-a100-hdr, dgx-h100-ndr, dgx-b200-ndr, "
        "gb200-nvl72, a100-roce-4nic): GPUs per node, NVLink domain, NICs and link types at once.",
    ),
]
NicsOpt = Annotated[
    int | None,
    typer.Option(
        "--nics-per-node", help="Scale-out NICs per node [default: the fabric's, else one per GPU]."
    ),
]
NicGbpsOpt = Annotated[
    float | None, typer.Option("--nic-gbps", help="Line rate of one NIC in Gbit/s (200 = HDR, 400 = NDR).")
]
NvlinkGbpsOpt = Annotated[
    float | None,
    typer.Option(
        "--nvlink-gbps",
        help="NVLink bandwidth per GPU, one direction, in Gbit/s (A100 2400, H100 3600, B200 7200).",
    ),
]
NvlinkDomainOpt = Annotated[
    int | None,
    typer.Option("--nvlink-domain", help="GPUs one NVLink domain joins (8 = a DGX node, 72 = GB200 NVL72)."),
]
TorusOpt = Annotated[
    str | None,
    typer.Option(
        "--torus",
        help="TPU slice shape in chips, e.g. 4x4x4 (v4/v5p) or 16x16 (v5e/v6e); several slices join over DCN "
        "[default: the job in as few slices as the pod allows].",
    ),
]
OversubscriptionOpt = Annotated[
    float | None,
    typer.Option(
        "--oversubscription",
        help="Scale-out oversubscription above the leaf switches (1 = non-blocking); applies to "
        "collectives spanning more than leaf_switch_nodes (32) nodes.",
    ),
]
NvlsOpt = Annotated[
    bool | None,
    typer.Option(
        "--nvls/--no-nvls",
        help="NCCL's NVLS all-reduce (NVLink SHARP) inside an NVLink 4/5 domain; --no-nvls as with "
        "NCCL_NVLS_ENABLE=0 [default: on where the NVLink has it].",
    ),
]
Fp32GradsOpt = Annotated[
    bool | None,
    typer.Option(
        "--fp32-grad-accumulation/--no-fp32-grad-accumulation",
        help="Accumulate and reduce gradients in FP32 (4 bytes a parameter) or in the training precision "
        "[default: FP32 for bf16 and fp8, fp16 for fp16, as Megatron-LM does].",
    ),
]
Fp32ParamsOpt = Annotated[
    bool,
    typer.Option(
        "--fp32-params/--no-fp32-params",
        help="Parameters kept in FP32 only (PyTorch FSDP MixedPrecision, JAX/MaxText): under ZeRO-3 sharding no "
        "16-bit shard is kept; default: a 16-bit copy beside the FP32 master, as Megatron-LM and DeepSpeed "
        "keep it.",
    ),
]
MoeCapacityOpt = Annotated[
    float | None,
    typer.Option(
        "--moe-capacity-factor",
        help="MoE expert capacity as a multiple of the mean load (e.g. 1.25): experts compute padded "
        "buffers of that size and drop overflow [default: dropless].",
    ),
]
MoeImbalanceOpt = Annotated[
    float,
    typer.Option(
        "--moe-imbalance",
        help="Dropless MoE: routed tokens on the busiest expert-parallel rank over the mean (1 = balanced).",
    ),
]
AttentionKernelOpt = Annotated[
    str | None,
    typer.Option(
        "--attention-kernel",
        help="flash2 (FlashAttention-2: flash-attn ≥ 2, PyTorch ≥ 2.2 SDPA) | flash1 (flash-attn 1.x) | triton "
        "(Triton FlashAttention), each at its measured speed by sequence length and head dimension "
        "[default: flash2].",
    ),
]


NoFlashOpt = Annotated[
    bool,
    typer.Option(
        "--no-flash-attention/--flash-attention", help="Materialised attention (or FlashAttention)."
    ),
]
OverlapTpOpt = Annotated[
    bool, typer.Option("--overlap-tp-comm/--no-overlap-tp-comm", help="Overlap TP collectives.")
]
OverlapP2pOpt = Annotated[
    bool,
    typer.Option(
        "--overlap-p2p-comm/--no-overlap-p2p-comm",
        help="Overlap pipeline sends/receives with compute (Megatron's overlap_p2p_comm; interleaved only).",
    ),
]
SoftwareOpt = Annotated[
    str | None,
    typer.Option(
        "--software",
        help="Software profile (catalog/software.yaml; `--software list` lists them): the training stack's "
        "settings (ZeRO stage, FlashAttention kernel, overlaps, FP32 gradients/parameters, recomputation, "
        "sequence parallelism) become the layout's defaults; a flag given explicitly wins.",
    ),
]
# The Layout fields a software profile may set, and the parameter of `step`/`plan` that gives each
SOFTWARE_PARAMS = {
    "zero": "zero",
    "recompute": "recompute",
    "sequence_parallel": "sequence_parallel",
    "schedule": "schedule",
    "embedding_stages": "embedding_stages",
    "flash_attention": "no_flash",
    "overlap_grad_reduce": "no_overlap",
    "overlap_tp_comm": "overlap_tp",
    "overlap_p2p_comm": "overlap_p2p",
    "fp32_grad_accumulation": "fp32_grad_accumulation",
    "fp32_params": "fp32_params",
    "attention_kernel": "attention_kernel",
}


def given_flags(ctx: typer.Context) -> set[str]:
    """The profile-settable Layout fields whose flag the user gave (not left at its default)."""
    given = params_given(ctx)
    return {field for field, param in SOFTWARE_PARAMS.items() if param in given}


def print_software_list(as_json: bool) -> None:
    """`--software list`: every profile with its fields and their sources."""
    from dtsim import catalog

    profiles = catalog.software()
    if as_json:
        print_json(
            {
                "software": {
                    k: {
                        "name": p.name,
                        "description": p.description,
                        "records": list(p.records),
                        "layout": dict(p.layout),
                        "sources": dict(p.sources),
                    }
                    for k, p in profiles.items()
                }
            }
        )
        return
    t = table(title="Software profiles (--software ID)", title_justify="left")
    t.add_column("id", no_wrap=True)
    for col in ("stack", "layout fields (with_tp: on where tp > 1)", "records"):
        t.add_column(col)
    for k, p in profiles.items():
        fields = ", ".join(f"{f}={v}" for f, v in p.layout.items())
        t.add_row(k, p.name, fields, ", ".join(p.records))
    console().print(t)


def software_label(software: str, given: set[str], searched: tuple[str, ...] = ()) -> str:
    """What a profile set, for the text output: its id, the fields it gave, those the flags gave and
    (plan) those searched all the same."""
    from dtsim import catalog
    from dtsim.models.datacenter.software import taken_fields

    layout = catalog.software()[software].layout
    taken = [f"{k}={v}" for k, v in taken_fields(software, given, searched).items()]
    notes = [
        ("given", sorted(k for k in layout if k in given)),
        ("searched", sorted(k for k in layout if k in searched and k not in given)),
    ]
    return (
        software
        + (f" ({', '.join(taken)})" if taken else "")
        + "".join(f"; {what}: {', '.join(keys)}" for what, keys in notes if keys)
    )


def say_software_note(software: str | None, gpu: str) -> None:
    """The text output's warning when the profile's stack does not run on this accelerator."""
    from dtsim.models.datacenter.software import accelerator_note

    note = accelerator_note(software, gpu)
    if note:
        console().print(f"[yellow]warning:[/yellow] {note}", highlight=False)


TokensOpt = Annotated[
    float | None,
    typer.Option("--tokens", help="Training tokens (e.g. 15e12): report days, GPU-hours, cost and energy."),
]
UsdPerGpuHourOpt = Annotated[
    float | None,
    typer.Option(
        "--usd-per-gpu-hour", help="Rental price per GPU-hour, for the run's rental cost (with --tokens)."
    ),
]
CalibrationOpt = Annotated[
    Path | None,
    typer.Option(
        "--calibration",
        help="Use this calibration file (written by `dtsim calibrate --out`) instead of the packaged one.",
    ),
]


def calibration_named(path: Path | None, doc: dict[str, Any] | None) -> dict[str, Any]:
    """`calibration` of step's and plan's JSON where --calibration was given: the file, its date and
    the subset it was fitted on (laid over the packaged calibration, calibration_file.overlay)."""
    if path is None or doc is None:
        return {}
    from dtsim import catalog

    packaged = catalog.calibration_document()  # outside any override: the packaged calibration
    return {
        "calibration": {
            "file": str(path),
            "date": doc.get("date"),
            "subset": doc.get("subset"),
            # the calibration it lies over (constants the file does not fit keep their values), as
            # validate's JSON names it
            "laid_over": {"date": packaged.get("date"), "subset": packaged.get("subset")},
        }
    }


def calibration_line(path: Path | None, doc: dict[str, Any] | None) -> str | None:
    """The text output's line naming the calibration in use (None without --calibration)."""
    named = calibration_named(path, doc).get("calibration")
    if named is None:
        return None
    subset = ", ".join(map(str, named["subset"] or [])) or "?"
    return (
        f"calibration: {named['file']} (of {named['date']}, fitted on {subset}), laid over the packaged one"
    )


def say_calibration(path: Path | None, doc: dict[str, Any] | None) -> None:
    """Name the calibration in use on stderr (the text outputs; nothing without --calibration)."""
    line = calibration_line(path, doc)
    if line:
        console(stderr=True).print(line, highlight=False)


def calibration_option(path: Path | None) -> dict[str, Any] | None:
    """The checked document of `--calibration FILE` (None: the packaged calibration); a ScenarioError
    naming the option, the path and the problem otherwise."""
    return None if path is None else read_calibration(path, "--calibration")


def resolve_model(model: str | None, shape: dict[str, Any]):
    """A catalog id, an architecture file, or shape flags."""
    from dtsim.schema import inputs
    from dtsim.schema.scenario import read_scenario_file

    if model is not None and (
        Path(model).suffix.lower() in (".yaml", ".yml", ".json") or inputs.names_a_file(model)
    ):
        return model_architecture(read_scenario_file(model), shape)
    return model_architecture(model, shape)


LAYOUT_FILE_ROWS = 10_000  # a layouts file of more rows is refused (plan searches grids that large)


def read_layouts_file(path: Path, lines: list[int] | None = None) -> list[dict[str, Any]]:
    """Rows of layout fields from a CSV file (a header of field names) or a YAML/JSON list of mappings
    (or a mapping whose `layouts` is one). For a CSV file, `lines` (when given) receives each row's
    line number in the file (blank lines are skipped, so row i is not always line i + 2)."""
    import csv
    import io

    from dtsim.schema.inputs import parse_data
    from dtsim.schema.scenario import read_text_file

    # problems named as the option (`layouts`, `layouts[0].tp`), not as the file ("file", "y.yaml[0].tp")
    text = read_text_file(path, "layouts").removeprefix("\ufeff")  # a byte-order mark, as spreadsheets write
    if path.suffix.lower() == ".csv":
        reader = csv.reader(io.StringIO(text))
        header = [h.strip() for h in next(reader, [])]
        if len(set(header)) != len(header) or "" in header:
            raise ScenarioError(
                [("layouts", str(path), f"the header must name each column once: {','.join(header)}")]
            )
        rows: Any = []
        for line, values in enumerate(reader, start=2):
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise ScenarioError(
                    [
                        (
                            "layouts",
                            str(path),
                            f"line {line} has {len(values)} values for {len(header)} columns",
                        )
                    ]
                )
            rows.append({k: v.strip() for k, v in zip(header, values, strict=True) if v.strip()})
            if lines is not None:
                lines.append(line)
    else:
        rows = parse_data(text, path, "layouts")
        if isinstance(rows, dict) and set(rows) == {"layouts"}:
            rows = rows["layouts"]
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ScenarioError(
            [("layouts", str(path), "must hold a non-empty list of layouts (mappings of layout fields)")]
        )
    if len(rows) > LAYOUT_FILE_ROWS:
        raise ScenarioError(
            [("layouts", str(path), f"holds {len(rows):,} layouts; at most {LAYOUT_FILE_ROWS:,}")]
        )
    for row in rows:
        if isinstance(row.get("pp_layers"), str):
            row["pp_layers"] = parse_stage_layers(row["pp_layers"])
    return rows


def with_file_lines(problems: list[tuple[str, Any, str]], lines: list[int], path: Path):
    """Problems of a layouts file's rows (`layouts[i].field`, numbered from 0 as the results table
    numbers them) with the line of the CSV file each row came from added to the message."""
    import re

    out = []
    for field, value, message in problems:
        m = re.match(r"layouts\[(\d+)\]", field)
        if m and int(m.group(1)) < len(lines):
            message = f"{message} (line {lines[int(m.group(1))]} of {path.name})"
        out.append((field, value, message))
    return out


UncertaintyOpt = Annotated[
    int | None,
    typer.Option(
        "--uncertainty",
        help="Draw N samples (scrambled Sobol, rounded up to a power of two) of the model's measured error "
        "and of the assumptions table's distributions, and report P10/P50/P90 of step time, MFU, memory "
        "(and days, GPU-hours, energy with --tokens).",
    ),
]


def run_datacenter_mc(
    workload, layouts, uncertainty, seed, levels, prob, fixed, doc, scheduler, workers, quiet, plan_cut=False
):
    """datacenter_monte_carlo with a progress bar on stderr for long runs (not under --json)."""
    from dtsim.analysis.datacenter_uncertainty import datacenter_monte_carlo
    from dtsim.analysis.uncertainty import parse_levels, sample_count

    kwargs = {
        "seed": seed,
        "levels": parse_levels(levels),
        "probs": prob or [],
        "fixed_assumptions": fixed,
        "calibration": doc,
        "scheduler": scheduler,
        "workers": workers,
        "plan_cut": plan_cut,
    }
    return with_progress(
        "draws",
        not quiet and sample_count(uncertainty) * len(layouts) >= 1 << 17,
        lambda p: datacenter_monte_carlo(workload, layouts, uncertainty, progress=p, **kwargs),
    )


def _cell(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def print_layouts_uncertainty(dmc, first: int = 1) -> None:
    """Per layout of the table above (numbered alike): step time and days at each level, P(fits),
    P(fastest)."""
    from dtsim.analysis.datacenter_uncertainty import describe_fastest
    from dtsim.analysis.uncertainty import share
    from dtsim.interfaces.cli.report import print_uncertainty

    con = console()
    from dtsim.analysis.uncertainty import level_name

    names = [level_name(q).upper() for q in dmc.mc.levels]
    days = any("days" in e for e in dmc.layouts)
    t = table(title=f"Uncertainty of each layout ({dmc.mc.samples:,} draws)", title_justify="left")
    label = " / ".join(names)
    for col in ("#", f"s/iter {label}", *([f"days {label}"] if days else []), "P(fits)", "P(fastest)"):
        t.add_column(col, justify="right")
    for e in dmc.layouts:
        row = [
            str(e["rank"] + first - 1),
            " / ".join(_cell(e["step_time_s"][n.lower()], ".2f") for n in names),
        ]
        if days:
            row.append(" / ".join(_cell(e["days"][n.lower()], ",.1f") for n in names) if "days" in e else "")
        row += [share(e["p_fits"]), share(e["p_fastest"])]
        t.add_row(*row)
    con.print(t)
    sentence = describe_fastest(dmc.layouts, first)
    if sentence:
        con.print(sentence[0].upper() + sentence[1:] + ".", highlight=False)
    print_uncertainty(dmc.mc, console=con, title=f"layout #{first}")


def print_mfu_flag(con, warnings_by_row: list[list[str]], first: int = 0) -> None:
    """Under a table numbered from `first`: every warning once, with the rows it belongs to ("every row"
    when it is on all of them), those that doubt an MFU (marked ! in the table) first. Each row's own
    doubt is said: the rows' MFUs, and the records or the counting they are doubted by, differ."""
    from dtsim.models.datacenter.plausibility import warnings_by_rows

    for label, w, doubts in warnings_by_rows(warnings_by_row, first):
        mark = "MFU marked !, " if doubts else ""
        con.print(f"[yellow]warning ({mark}{label}):[/yellow] {w}", highlight=False)


def layout_table(
    results,
    title: str,
    first: int = 0,
    days: bool = False,
    fits: bool = False,
    names: list[str | None] | None = None,
):
    """Layouts side by side, numbered from `first`: their `names` (when any has one), step time, days
    of the run (`days`), TFLOP/s, MFU (marked ! when implausible), memory, whether each fits (`fits`)
    and the layout."""
    from rich.markup import escape

    from dtsim.models.datacenter.plausibility import mfu_marked

    t = table(title=title, title_justify="left")
    named = names is not None and any(n is not None for n in names)
    t.add_column("#", justify="right", no_wrap=True)
    if named:
        t.add_column("name", overflow="fold", max_width=16)
    for col in (
        "s/iter",
        "80 % range",
        *(["days"] if days else []),
        "TFLOP/s",
        "MFU",
        "GB",
        *(["fits"] if fits else []),
    ):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column("layout", overflow="fold")
    for i, r in enumerate(results, first):
        t.add_row(
            str(i),
            *([escape(names[i - first] or "")] if named else []),
            f"{r.step_time_s:.2f}",
            "—" if r.step_time_s_p10 is None else f"{r.step_time_s_p10:.2f}–{r.step_time_s_p90:.2f}",
            *([f"{r.run.days:,.1f}" if r.run is not None else ""] if days else []),
            f"{r.model_tflops_per_gpu:.0f}",
            mfu_marked(r.mfu, r.warnings),
            f"{r.memory_per_gpu_gb:.0f}",
            *(["yes" if r.fits else "[red]no[/red]"] if fits else []),
            layout_label(r.layout),
        )
    return t


def print_layout_table(
    results, title: str, names: list[str | None] | None = None, days: bool = False
) -> None:
    """Layouts side by side (with their `names` when any has one): step time, the run's days (`days`:
    --tokens given), MFU, memory, fit, warnings."""
    con = console()
    con.print(layout_table(results, title, fits=True, names=names, days=days))
    if days and results:
        con.print("[dim]GPU-hours, cost and energy of each layout's run: --json (`run`).[/dim]")
    print_mfu_flag(con, [r.warnings for r in results])
    if results and results[0].model_error.get("basis"):
        con.print(f"[dim]{results[0].model_error['basis']}[/dim]", highlight=False)
    if any(not r.fits for r in results):
        con.print("[red]Layouts marked no do not fit in GPU memory: their times are not answers.[/red]")


def parse_stage_layers(text: str | None) -> tuple[int, ...] | None:
    """`--pp-layers 5,6,6,5` as a tuple of whole numbers."""
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ScenarioError(
            [("layout.pp_layers", text, "must be whole numbers separated by commas, one per stage")]
        ) from None


def run_rows(run, fits: bool = True) -> list[tuple[str, str]]:
    """The rows of a run's totals (`--tokens`); of a layout that does not fit, named as what it would
    take if it fit."""
    rows = [
        (
            f"Run of {run.tokens:.3g} tokens" + ("" if fits else " (if it fit)"),
            f"{run.days:,.1f} days" + band(run.days_p10, run.days_p90, "{:,.1f}"),
        ),
        ("  GPU-hours", f"{run.gpu_hours:,.0f}"),
        ("  GPU purchase cost", f"${run.capital_cost_usd:,.0f}"),
        ("  Energy (facility)", f"{run.energy_kwh / 1e3:,.1f} MWh"),
    ]
    if run.rental_cost_usd is not None:
        rows.append(("  Rental cost", f"${run.rental_cost_usd:,.0f}"))
    return rows


def band(low: float | None, high: float | None, fmt: str, what: str = "") -> str:
    """'  (80 %: low–high)' for a row whose model-error interval is known, else ''."""
    if low is None or high is None:
        return ""
    return f"  (80 % {what}interval {fmt.format(low)}–{fmt.format(high)})"


def network_label(net: dict[str, Any]) -> str:
    """One line: NVLink rate and domain (a TPU: ICI link rate and slice shape), NICs per node × line
    rate, oversubscription, fabric."""
    if net.get("torus"):
        text = (
            f"ICI {net['nvlink_gbps'] / 8:g} GB/s per link one way, slice {'x'.join(map(str, net['torus']))}; "
            f"{net['nics_per_node']:g} × {net['nic_gbps']:g} Gb/s DCN per host"
        )
    else:
        text = (
            f"NVLink {net['nvlink_gbps'] / 8:g} GB/s per GPU, domain {net['nvlink_domain']}; "
            f"{net['nics_per_node']:g} × {net['nic_gbps']:g} Gb/s NICs per node"
        )
    if net["oversubscription"] != 1:
        text += f"; {net['oversubscription']:g}:1 oversubscribed"
    if net.get("nvls"):
        text += "; NVLS all-reduce"
    return text + (f" ({net['fabric']})" if net["fabric"] else "")


def trace_target(path: Path | None, layouts: Path | None, uncertainty: Any) -> None:
    """`step --trace FILE`'s checks, before any work: one iteration of one layout, to a file that can be
    written (an existing file is overwritten, as the other commands' output files are)."""
    if path is None:
        return
    for flag, value in (("--layouts", layouts), ("--uncertainty", uncertainty)):
        if value is not None:
            raise ScenarioError(
                [("--trace", str(path), f"draws one iteration of one layout; not with {flag}")]
            )
    check_folder(path, "--trace")
    if path.is_dir():
        raise ScenarioError([("--trace", str(path), "is a folder; give a file name")])
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ScenarioError([("--trace", str(path), "cannot be written (permission denied)")])


def write_trace(path: Path, workload: Any, result: Any, calibration: Any) -> None:
    """Write the step's iteration as a Trace Event Format document (models/datacenter/trace.py)."""
    from dtsim.errors import write_text_file
    from dtsim.models.datacenter.trace import chrome_trace

    write_text_file(
        path, json_text(chrome_trace(workload, result, calibration), indent=None) + "\n", "--trace"
    )


def step(
    ctx: typer.Context,
    model: ModelOpt = None,
    hidden: HiddenOpt = None,
    layers: LayersOpt = None,
    heads: HeadsOpt = None,
    kv_heads: KvHeadsOpt = None,
    ffn: FfnOpt = None,
    ffn_type: FfnTypeOpt = None,
    vocab: VocabOpt = None,
    seq_len: SeqLenOpt = None,
    gpu: GpuOpt = None,
    nodes: NodesOpt = 1,
    gpus_per_node: GpusPerNodeOpt = None,
    fabric: FabricOpt = None,
    nics_per_node: NicsOpt = None,
    nic_gbps: NicGbpsOpt = None,
    nvlink_gbps: NvlinkGbpsOpt = None,
    nvlink_domain: NvlinkDomainOpt = None,
    torus: TorusOpt = None,
    oversubscription: OversubscriptionOpt = None,
    nvls: NvlsOpt = None,
    dp: Annotated[int | None, typer.Option(help="Data parallel (default: the rest).")] = None,
    tp: Annotated[int, typer.Option(help="Tensor parallel.")] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline parallel.")] = 1,
    vpp: Annotated[int, typer.Option(help="Virtual stages per pipeline stage.")] = 1,
    cp: Annotated[int, typer.Option(help="Context parallel.")] = 1,
    ep: Annotated[int, typer.Option(help="Expert parallel.")] = 1,
    mbs: Annotated[int, typer.Option(help="Micro-batch size (sequences).")] = 1,
    gbs: Annotated[int, typer.Option(help="Global batch size (sequences).")] = 512,
    recompute: Annotated[str, typer.Option(help="none | selective | full.")] = "selective",
    zero: Annotated[int, typer.Option(help="ZeRO stage 0–3.")] = 1,
    pp_layers: Annotated[
        str | None,
        typer.Option(
            "--pp-layers",
            help="Transformer layers of each pipeline stage, first to last, e.g. 5,6,6,6,5 "
            "[default: as even as possible].",
        ),
    ] = None,
    shard_group: Annotated[
        int | None,
        typer.Option(
            "--shard-group",
            help="HSDP: ZeRO-3 shards over groups of this many DP ranks, replicated across groups "
            "[default: the whole DP group].",
        ),
    ] = None,
    sequence_parallel: Annotated[
        bool, typer.Option("--sequence-parallel/--no-sequence-parallel", help="Sequence parallelism.")
    ] = False,
    schedule: Annotated[
        str, typer.Option(help="gpipe | 1f1b | interleaved | zero-bubble | dualpipe | dualpipev.")
    ] = "1f1b",
    embedding_stages: Annotated[
        str, typer.Option("--embedding-stages", help="first-last | balanced.")
    ] = "first-last",
    no_flash: NoFlashOpt = False,
    no_overlap: Annotated[
        bool,
        typer.Option(
            "--no-overlap-grad-reduce/--overlap-grad-reduce",
            help="Blocking (or overlapped) gradient reduction.",
        ),
    ] = False,
    overlap_tp: OverlapTpOpt = False,
    overlap_p2p: OverlapP2pOpt = False,
    precision: Annotated[str, typer.Option(help="bf16 | fp16 | fp8.")] = "bf16",
    fp32_grad_accumulation: Fp32GradsOpt = None,
    fp32_params: Fp32ParamsOpt = False,
    attention_kernel: AttentionKernelOpt = None,
    moe_capacity_factor: MoeCapacityOpt = None,
    moe_imbalance: MoeImbalanceOpt = 1.0,
    software: SoftwareOpt = None,
    tokens: TokensOpt = None,
    usd_per_gpu_hour: UsdPerGpuHourOpt = None,
    layouts: Annotated[
        Path | None,
        typer.Option(
            "--layouts",
            help="A CSV, YAML or JSON file of layouts (rows of layout fields: tp, pp, dp, mbs, gbs, zero, ...); "
            "each is evaluated, the layout flags giving what a row leaves out.",
        ),
    ] = None,
    calibration: CalibrationOpt = None,
    uncertainty: UncertaintyOpt = None,
    seed: SeedOpt = None,
    levels: LevelsOpt = None,
    prob: ProbOpt = None,
    fixed_assumptions: FixedAssumptionsOpt = False,
    scheduler: SchedulerOpt = None,
    workers: WorkersOpt = None,
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            help="Write the iteration as a Chrome/Perfetto trace (JSON, Trace Event Format): one track per "
            "pipeline stage; overwrites FILE.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Step time, TFLOP/s per GPU, MFU/HFU and memory of one parallel layout (or of a file of them)."""
    from dtsim.models.datacenter.software import apply_software
    from dtsim.models.datacenter.step import step as run_step
    from dtsim.models.datacenter.workload import Cluster, Layout, Workload, build

    if software == "list":
        print_software_list(as_json)
        return
    dmc = None
    flags_given = given_flags(ctx)
    try:
        flags = {"--seed": seed, "--levels": levels, "--prob": prob, "--fixed-assumptions": fixed_assumptions}
        uncertainty_flags_alone(uncertainty, **flags, **{"--scheduler": scheduler, "--workers": workers})
        doc = calibration_option(calibration)
        trace_target(trace, layouts, uncertainty)
        attention_kernel = check_attention_kernel(attention_kernel, no_flash)
        arch = resolve_model(model, {k: v for k, v in locals().items() if k in SHAPE_FLAGS})
        given = {k: v for k, v in locals().items() if k in CLUSTER_FLAGS and v is not None}
        cluster = build(Cluster, given, "cluster.")
        base = {
            "dp": dp,
            "tp": tp,
            "pp": pp,
            "vpp": vpp,
            "cp": cp,
            "ep": ep,
            "mbs": mbs,
            "gbs": gbs,
            "recompute": recompute,
            "zero": zero,
            "shard_group": shard_group,
            "pp_layers": parse_stage_layers(pp_layers),
            "sequence_parallel": sequence_parallel,
            "schedule": schedule,
            "embedding_stages": embedding_stages,
            "flash_attention": not no_flash,
            "overlap_grad_reduce": not no_overlap,
            "overlap_tp_comm": overlap_tp,
            "overlap_p2p_comm": overlap_p2p,
            "fp32_grad_accumulation": fp32_grad_accumulation,
            "fp32_params": fp32_params,
            "attention_kernel": attention_kernel,
            "moe_capacity_factor": moe_capacity_factor,
            "moe_imbalance": moe_imbalance,
        }
        run = {"model": arch, "cluster": cluster, "precision": precision, "tokens": tokens}
        run["usd_per_gpu_hour"] = usd_per_gpu_hour
        mc_args = (uncertainty, seed, levels, prob, fixed_assumptions, doc, scheduler, workers, as_json)
        if layouts is not None:
            lines: list[int] = []
            rows_in = read_layouts_file(layouts, lines)
            try:
                results = step_layouts(rows_in, base, run, doc, software, flags_given, "--software")
            except ScenarioError as exc:
                raise ScenarioError(with_file_lines(exc.problems, lines, layouts)) from None
            if uncertainty is not None:
                rows = [Layout(**r.layout) for r, _, _ in results]
                workload = build(Workload, {**run, "layout": rows[0]})
                dmc = run_datacenter_mc(workload, rows, *mc_args)
        else:
            if software is not None:
                base = apply_software(software, base, flags_given, "--software")
            workload = build(Workload, {**run, "layout": build(Layout, base, "layout.")})
            result = run_step(workload, calibration=doc)
            if uncertainty is not None:
                dmc = run_datacenter_mc(workload, [workload.layout], *mc_args)
            if trace is not None:
                write_trace(trace, workload, result, doc)
                if not as_json:
                    console(stderr=True).print(f"trace written to {trace} (open it in ui.perfetto.dev)")
    except ScenarioError as exc:
        fail(exc)
        return
    if layouts is not None:
        if as_json:
            payload = {"layouts": [step_payload(r, sw, name) for r, sw, name in results]}
            if dmc is not None:
                payload |= dmc.as_dict()
            print_json(payload | calibration_named(calibration, doc))
        else:
            say_calibration(calibration, doc)
            print_layout_table(
                [r for r, _, _ in results],
                f"{len(results)} layouts from {layouts}",
                [n for _, _, n in results],
                days=tokens is not None,
            )
            used = sorted({sw for _, sw, _ in results if sw is not None})
            if used:
                console().print(f"software: {', '.join(used)}", highlight=False)
            for sw in used:
                say_software_note(sw, results[0][0].gpu)
            if dmc is not None:
                print_layouts_uncertainty(dmc, first=0)
        return
    if as_json:
        payload = step_payload(result, software)
        if dmc is not None:
            payload |= {k: v for k, v in dmc.as_dict().items() if k != "layout_uncertainty"}
        print_json(payload | calibration_named(calibration, doc))
        return
    con = console()
    say_calibration(calibration, doc)
    t = table(
        title=f"{result.model} on {result.n_gpus} × {result.gpu}"
        # a layout that does not fit is no answer: said at the top, not only under the table (a trial)
        + ("" if result.fits else " — [red]does not fit: what it would take, not an answer[/red]"),
        title_justify="left",
        show_header=False,
    )
    t.add_column(style="bold")
    t.add_column(justify="right")
    rows = [
        (
            "Step time",
            f"{result.step_time_s:,.3f} s" + band(result.step_time_s_p10, result.step_time_s_p90, "{:,.3f}"),
        ),
        ("Model TFLOP/s per GPU", f"{result.model_tflops_per_gpu:,.1f}"),
        ("Hardware TFLOP/s per GPU", f"{result.hardware_tflops_per_gpu:,.1f}"),
        (
            "MFU / HFU",
            f"{result.mfu:.1%} / {result.hfu:.1%}" + band(result.mfu_p10, result.mfu_p90, "{:.1%}", "MFU "),
        ),
        (
            "Memory per GPU",
            f"{result.memory_per_gpu_gb:,.1f} GB" + ("" if result.fits else "  [red]does not fit[/red]"),
        ),
        ("Tokens per second", f"{result.tokens_per_s:,.0f}"),
        ("Network", network_label(result.network)),
    ]
    if software is not None:
        rows.append(("Software", software_label(software, flags_given)))
    for k, v in rows:
        t.add_row(k, v)
    for k, v in result.breakdown_s.items():
        t.add_row(f"  {k.replace('_', ' ')}", f"{v:,.3f} s")
    parts = result.memory_breakdown_gb.items()
    t.add_row("Memory by part (GB)", ", ".join(f"{k.replace('_', ' ')} {v:,.1f}" for k, v in parts if v > 0))
    if result.run is not None:
        for k, v in run_rows(result.run, result.fits):
            t.add_row(k, v)
    con.print(t)
    if result.model_error.get("basis"):
        con.print(f"[dim]{result.model_error['basis']}[/dim]", highlight=False)
    if result.fit_note:
        con.print(f"[red]{result.fit_note}[/red]")
    for w in result.warnings:
        con.print(f"[yellow]warning:[/yellow] {w.message}", highlight=False)
    say_software_note(software, result.gpu)
    if dmc is not None:
        from dtsim.interfaces.cli.report import print_uncertainty

        print_uncertainty(dmc.mc, console=con)


def plan(
    ctx: typer.Context,
    model: ModelOpt = None,
    hidden: HiddenOpt = None,
    layers: LayersOpt = None,
    heads: HeadsOpt = None,
    kv_heads: KvHeadsOpt = None,
    ffn: FfnOpt = None,
    ffn_type: FfnTypeOpt = None,
    vocab: VocabOpt = None,
    seq_len: SeqLenOpt = None,
    gpu: GpuOpt = None,
    nodes: NodesOpt = 1,
    gpus_per_node: GpusPerNodeOpt = None,
    fabric: FabricOpt = None,
    nics_per_node: NicsOpt = None,
    nic_gbps: NicGbpsOpt = None,
    nvlink_gbps: NvlinkGbpsOpt = None,
    nvlink_domain: NvlinkDomainOpt = None,
    torus: TorusOpt = None,
    oversubscription: OversubscriptionOpt = None,
    nvls: NvlsOpt = None,
    gbs: Annotated[int, typer.Option(help="Global batch size (sequences).")] = 512,
    top: Annotated[int, typer.Option(help="How many layouts to list.")] = 10,
    dp_multiple: Annotated[int, typer.Option("--dp-multiple", help="Require dp % N == 0 (batch ramp).")] = 1,
    gbs_multiple: Annotated[int, typer.Option("--gbs-multiple", help="Require gbs % N == 0.")] = 1,
    no_flash: NoFlashOpt = False,
    overlap_tp: OverlapTpOpt = False,
    overlap_p2p: OverlapP2pOpt = False,
    target_params_b: Annotated[
        float | None,
        typer.Option(
            "--target-params-b",
            help="Reverse question: model shapes near this size (billions) that run fastest.",
        ),
    ] = None,
    precision: Annotated[str, typer.Option(help="bf16 | fp16 | fp8.")] = "bf16",
    fp32_grad_accumulation: Fp32GradsOpt = None,
    fp32_params: Fp32ParamsOpt = False,
    attention_kernel: AttentionKernelOpt = None,
    moe_capacity_factor: MoeCapacityOpt = None,
    moe_imbalance: MoeImbalanceOpt = 1.0,
    software: SoftwareOpt = None,
    tokens: TokensOpt = None,
    usd_per_gpu_hour: UsdPerGpuHourOpt = None,
    calibration: CalibrationOpt = None,
    uncertainty: UncertaintyOpt = None,
    seed: SeedOpt = None,
    levels: LevelsOpt = None,
    prob: ProbOpt = None,
    fixed_assumptions: FixedAssumptionsOpt = False,
    scheduler: SchedulerOpt = None,
    workers: WorkersOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Rank every valid layout of a model on a cluster by seconds per iteration."""
    from dtsim.models.datacenter.plan import PlanOptions
    from dtsim.models.datacenter.plan import plan as run_plan
    from dtsim.models.datacenter.software import PLAN_SEARCHED, plan_settings
    from dtsim.models.datacenter.workload import Cluster, build

    if software == "list":
        print_software_list(as_json)
        return
    dmc = None
    flags_given = given_flags(ctx)
    try:
        flags = {"--seed": seed, "--levels": levels, "--prob": prob, "--fixed-assumptions": fixed_assumptions}
        uncertainty_flags_alone(uncertainty, **flags, **{"--scheduler": scheduler, "--workers": workers})
        doc = calibration_option(calibration)
        attention_kernel = check_attention_kernel(attention_kernel, no_flash)
        given = {k: v for k, v in locals().items() if k in CLUSTER_FLAGS and v is not None}
        cluster = build(Cluster, given, "cluster.")
        counts = {"--gbs": gbs, "--top": top, "--dp-multiple": dp_multiple, "--gbs-multiple": gbs_multiple}
        small = [(flag, v, "must be an integer ≥ 1") for flag, v in counts.items() if v < 1]
        if small:
            raise ScenarioError(small)
        if precision not in ("bf16", "fp16", "fp8"):
            raise ScenarioError([("precision", precision, "must be bf16, fp16 or fp8")])
        options = dict(
            gbs=gbs,
            seq_len=seq_len,
            precision=precision,
            dp_multiple=dp_multiple,
            gbs_multiple=gbs_multiple,
            flash_attention=not no_flash,
            overlap_tp_comm=overlap_tp,
            overlap_p2p_comm=overlap_p2p,
            fp32_grad_accumulation=fp32_grad_accumulation,
            fp32_params=fp32_params,
            attention_kernel=attention_kernel,
            moe_capacity_factor=moe_capacity_factor,
            moe_imbalance=moe_imbalance,
            tokens=tokens,
            usd_per_gpu_hour=usd_per_gpu_hour,
        )
        if software is not None:  # the profile's settings under the flags given
            options |= plan_settings(software, flags_given, "--software")
        opt = PlanOptions(**options)
        if target_params_b is not None:
            if uncertainty is not None:
                raise ScenarioError(
                    [
                        (
                            "--uncertainty",
                            uncertainty,
                            "ranks the layouts of one model; not with --target-params-b",
                        )
                    ]
                )
            if not 0.001 <= target_params_b <= 100_000:
                raise ScenarioError(
                    [("target-params-b", target_params_b, "must be between 0.001 and 100000")]
                )
            shape = {k: v for k, v in locals().items() if k in (*SHAPE_FLAGS, "model")}
            target_shape_conflicts(shape, {k: "--" + k.replace("_", "-") for k in shape})
            payload = with_software(
                target_size_payload(target_params_b, cluster, opt, vocab, seq_len, top, doc),
                software,
                cluster.gpu,
            )
            rows, searched = payload["shapes"], payload["shapes_searched"]
            none = (
                "no shape near the target fits in GPU memory on this cluster"
                if searched
                else "no shape found"
            )
            if as_json:
                print_json(payload | calibration_named(calibration, doc))
                if not rows:
                    raise typer.Exit(1)
                return
            say_calibration(calibration, doc)
            if not rows:
                err.print(f"[bold red]error:[/bold red] {none} ({searched} shapes searched)")
                raise typer.Exit(1)
            t = table(
                title=f"Model shapes near {target_params_b:g}B on {cluster.n_gpus} × {cluster.gpu}",
                title_justify="left",
            )
            days = [] if tokens is None else ["days"]
            for col in ("#", "hidden", "layers", "heads", "params B", "µs/token", *days, "MFU", "layout"):
                t.add_column(col)
            from dtsim.models.datacenter.plausibility import mfu_marked

            for i, r in enumerate(rows, 1):
                lay = r["layout"]
                t.add_row(
                    str(i),
                    str(r["hidden"]),
                    str(r["layers"]),
                    str(r["heads"]),
                    f"{r['params_b']:.1f}",
                    f"{r['seconds_per_token'] * 1e6:.3f}",
                    *([f"{r['run']['days']:,.1f}"] if r.get("run") else []),
                    mfu_marked(r["mfu"], r["warnings"]),
                    layout_label(lay),
                )
            con = console()
            con.print(t)
            print_mfu_flag(con, [r["warnings"] for r in rows], first=1)
            say_software_note(software, cluster.gpu)
            return
        arch = resolve_model(model, {k: v for k, v in locals().items() if k in SHAPE_FLAGS})
        result = run_plan(arch, cluster, opt, top=top, calibration=doc)
        if uncertainty is not None and result.ranked:
            from dtsim.analysis.datacenter_uncertainty import plan_layouts
            from dtsim.models.datacenter.workload import Workload

            rows, cut = plan_layouts(result, opt)
            workload = build(
                Workload,
                {
                    "model": arch,
                    "cluster": cluster,
                    "precision": precision,
                    "seq_len": seq_len,
                    "tokens": tokens,
                    "usd_per_gpu_hour": usd_per_gpu_hour,
                    "layout": rows[0],
                },
            )
            dmc = run_datacenter_mc(
                workload,
                rows,
                uncertainty,
                seed,
                levels,
                prob,
                fixed_assumptions,
                doc,
                scheduler,
                workers,
                as_json,
                plan_cut=cut,
            )
    except ScenarioError as exc:
        fail(exc)
        return
    if as_json:
        payload = with_software(result.as_dict(), software)
        if dmc is not None:
            payload |= dmc.as_dict()
        print_json(payload | calibration_named(calibration, doc))
        if not result.fits:
            raise typer.Exit(1)
        return
    con = console()
    say_calibration(calibration, doc)
    con.print(
        f"[bold]{result.model}[/bold] ({result.params_b:,.1f}B) on {result.n_gpus} × {result.gpu}: "
        f"{result.searched:,} layouts searched in {result.seconds:.2f} s"
    )
    if software is not None:
        con.print(f"software: {software_label(software, flags_given, PLAN_SEARCHED)}", highlight=False)
        say_software_note(software, result.gpu)
    shown = result.ranked or result.nearest
    title = "Fastest layouts that fit" if result.fits else "Nothing fits — the closest layouts (not answers)"
    if shown:
        con.print(layout_table(shown, title, first=1, days=tokens is not None))
    if tokens is not None and result.ranked:  # the totals the README promises, for the fastest layout
        best = result.ranked[0].run
        rental = "" if best.rental_cost_usd is None else f", rental ${best.rental_cost_usd:,.0f}"
        con.print(
            f"Run of {best.tokens:.3g} tokens on #1: {best.days:,.1f} days, {best.gpu_hours:,.0f} GPU-hours, "
            f"GPU purchase cost ${best.capital_cost_usd:,.0f}, energy (facility) {best.energy_kwh / 1e3:,.1f} "
            f"MWh{rental} (every layout's in --json)",
            highlight=False,
        )
    print_mfu_flag(con, [r.warnings for r in shown], first=1)  # the closest layouts too, when none fits
    if result.fits and result.model_error.get("basis"):
        con.print(f"[dim]{result.model_error['basis']}[/dim]", highlight=False)
    if dmc is not None:
        print_layouts_uncertainty(dmc)
    con.print("Rejected: " + ", ".join(f"{v:,} {k}" for k, v in result.rejected.items() if v))
    if not result.fits:
        err.print(
            f"[bold red]error:[/bold red] {result.advice() or 'no layout is valid for this model and cluster'}"
        )
        raise typer.Exit(1)


def as_flags(exc: ScenarioError) -> ScenarioError:
    """The problems named as the command's options are (size_mb → --size-mb, a/b → --a/--b): the
    shared functions name their inputs as the API's body fields."""
    flag = lambda f: "/".join("--" + p.replace("_", "-") for p in f.split("/"))  # noqa: E731
    return ScenarioError([(flag(f), v, m) for f, v, m in exc.problems])


def collective(
    op: Annotated[
        str, typer.Option(help="allreduce | reduce-scatter | all-gather | broadcast | p2p | all-to-all.")
    ] = "allreduce",
    algorithm: Annotated[
        str,
        typer.Option(
            help="ring | ring-bidirectional | tree | nvls | wan-ring (all-reduce only; nvls reduces in the "
            "NVLink switch, with --fabric nvlink4 or nvlink5; wan-ring is Camilli 2025 eq. 3.19, "
            "(N−1)·(T_prop + S/(N·BW)), with --hop-km of fibre per ring step; it and ring-bidirectional "
            "send half the bytes each way, each direction at the --bandwidth-gbs of one link of a "
            "point-to-point ring: on a switched catalog fabric they are no faster than ring and refused)."
        ),
    ] = "ring",
    ranks: Annotated[int, typer.Option(help="Participating ranks.")] = 8,
    size_mb: Annotated[float, typer.Option("--size-mb", help="Message size in MB (10^6 bytes).")] = 1000.0,
    fabric: Annotated[
        str | None,
        typer.Option(
            help="Fabric id (catalog/fabrics.yaml) [default: nvlink3, whose bus bandwidth and latency fill "
            "whichever of --bandwidth-gbs and --latency-us is not given]."
        ),
    ] = None,
    bandwidth_gbs: Annotated[
        float | None, typer.Option("--bandwidth-gbs", help="Bus bandwidth in GB/s.")
    ] = None,
    latency_us: Annotated[float | None, typer.Option("--latency-us", help="Per-step latency in µs.")] = None,
    hop_km: Annotated[
        float, typer.Option("--hop-km", help="wan-ring: fibre between neighbouring ranks, km (5 µs/km).")
    ] = 0.0,
    torus: Annotated[
        str | None,
        typer.Option(
            "--torus",
            help="With an ICI --fabric: the TPU slice the ranks fill, e.g. 4x4x4 [default: the smallest slice "
            "of --ranks chips].",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """α-β time of a collective (Data Parallelism from Associativity; Camilli 2025 §3.5); formats `dtsim.collective`."""
    try:
        r = collective_result(op, algorithm, ranks, size_mb, fabric, bandwidth_gbs, latency_us, hop_km, torus)
    except ScenarioError as exc:
        fail(as_flags(exc))
        return
    if as_json:
        print_json(r.as_dict())
        return
    t, per_rank = r.time_s, r.bytes_sent_per_rank
    console().print(
        f"{op} ({r.algorithm}) of {size_mb:g} MB over {ranks} ranks: [bold]{t * 1e3:,.3f} ms[/bold]; "
        f"each rank sends {per_rank / 1e6:,.1f} MB"
        + (", half each way, each direction at the bandwidth" if r.algorithm in BIDIRECTIONAL else "")
        + (f" (on the TPU slice {r.torus})" if r.torus else "")
        + (
            f"; algbw {r.algbw_gb_s:,.4g} GB/s, busbw {r.busbw_gb_s:,.4g} GB/s as nccl-tests computes it, "
            f"of the links' {r.bus_bandwidth_gb_s:,.4g} GB/s"
            if r.busbw_gb_s is not None
            else ""
        )
    )


BIDIRECTIONAL = ("ring-bidirectional", "wan-ring")  # rings that send half the bytes each way


def fabric(
    cluster_power_gw: Annotated[float, typer.Option("--cluster-power-gw")] = 10.0,
    datacenters: Annotated[int, typer.Option()] = 23,
    pod_power_kw: Annotated[float, typer.Option("--pod-power-kw")] = 200.0,
    pod_pflops: Annotated[float, typer.Option("--pod-pflops")] = 360.0,
    params_t: Annotated[float, typer.Option("--params-t", help="Model parameters in trillions.")] = 72.0,
    tokens_t: Annotated[float, typer.Option("--tokens-t", help="Training tokens in trillions.")] = 2000.0,
    bits: Annotated[float, typer.Option(help="Bits per gradient value.")] = 16.0,
    train_days: Annotated[float, typer.Option("--train-days")] = 100.0,
    network_fraction: Annotated[
        float | None,
        typer.Option("--network-fraction", help="Share of a step for synchronization (default 0.05)."),
    ] = None,
    sync_budget_ms: Annotated[
        float | None,
        typer.Option(
            "--sync-budget-ms",
            help="Sync budget in ms (default: the network fraction × the batch time; at the thesis's own batch "
            "(--tokens-t, --train-days, --critical-batch-k at their defaults) and fraction 0.05, the thesis's "
            "250 ms, its rounding of 0.05 × 4.88 s). "
            "Given beside --network-fraction, the budget bounds the sync and the fraction the compute "
            "(required_mfu).",
        ),
    ] = None,
    ring_km: Annotated[float, typer.Option("--ring-km")] = 4800.0,
    hop_us: Annotated[float, typer.Option("--hop-us")] = 28.0,
    critical_batch_k: Annotated[
        float, typer.Option("--critical-batch-k", help="B_crit = k·√tokens.")
    ] = 25.27,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """Scale-across fabric dimensioning (Camilli 2025 ch. 3); defaults are its 10 GW, 23-datacenter scenario."""
    values = {
        "cluster_power_gw": cluster_power_gw,
        "datacenters": datacenters,
        "pod_power_kw": pod_power_kw,
        "pod_pflops": pod_pflops,
        "params_t": params_t,
        "tokens_t": tokens_t,
        "bits": bits,
        "train_days": train_days,
        "network_fraction": network_fraction,  # None: the thesis's (fabric_plan)
        "sync_budget_ms": sync_budget_ms,
        "ring_km": ring_km,
        "hop_us": hop_us,
        "critical_batch_k": critical_batch_k,
    }
    try:
        p = fabric_plan(values)
    except ScenarioError as exc:
        fail(as_flags(exc))
        return
    if as_json:
        print_json(fabric_json(p))
        return
    c = console()
    c.print(
        f"Pods: {p.pods:,.0f} ({p.pods_per_dc:,.0f} per datacenter, {p.power_per_dc_w / 1e6:,.0f} MW each); "
        f"peak {p.peak_flop_s:.2e} FLOP/s"
    )
    c.print(
        f"Batch {p.critical_batch_tokens:.3g} tokens, {p.steps:,.0f} steps, {p.batch_time_s:.2f} s each; "
        f"sync budget {p.sync_budget_s * 1e3:.0f} ms (propagation {p.propagation_s * 1e3:.1f} ms, hops "
        f"{p.hop_s * 1e3:.2f} ms)"
    )
    if network_fraction is not None and sync_budget_ms is not None:
        # two budgets: say which bounds what (the given budget replaced fraction × batch time unsaid)
        c.print(
            f"(the sync budget is the {sync_budget_ms:g} ms given, not --network-fraction {network_fraction:g} × "
            f"the batch ({network_fraction * p.batch_time_s * 1e3:,.0f} ms); the fraction sets required_mfu only)",
            highlight=False,
        )
    from dtsim.interfaces.operations import fabric_warnings, mfu_text

    said = {w["code"]: w["message"] for w in fabric_warnings(p)}  # the JSON's and the page's words
    bw = p.min_bandwidth_bits_s
    c.print(
        f"[red]{said['NO_BANDWIDTH_SUFFICES']}[/red]"
        if "NO_BANDWIDTH_SUFFICES" in said
        else f"Minimum WAN bandwidth per datacenter: [bold]{bw / 1e15:,.2f} Pbit/s[/bold]",
        highlight=False,
    )
    c.print(f"Internal capacity per datacenter: {p.dc_internal_bandwidth_bits_s / 1e15:,.1f} Pbit/s")
    if "SCHEDULE_NOT_MET" in said:
        c.print(f"[red]{p.compute_flop:.2e} FLOP: {said['SCHEDULE_NOT_MET']}[/red]", highlight=False)
    else:
        c.print(
            f"Compute: {p.compute_flop:.2e} FLOP need an MFU of {mfu_text(p.required_mfu)} over the compute "
            "share of the schedule"
        )


COMMANDS = {"step": step, "plan": plan, "collective": collective, "fabric": fabric}
GROUPS: dict[str, typer.Typer] = {}
