"""The step view: `dtsim step` of one parallel layout — step time with its model-error interval, MFU,
tokens/s, the run's days, cost and energy, whether it fits in GPU memory (and why not), the warnings;
a memory bar of the peak stage's parts against the GPU's memory; one iteration laid out per pipeline
stage (models/datacenter/trace.py: iteration_events), whose Trace Event Format file can be downloaded.

Every number is `dtsim.models.datacenter.step.step`'s, the function `dtsim step` calls, on the
workload the CLI builds from the same options (`workload`); the answer's `step` is the command's
`--json` object. The fields shared with /plan (the model, its shape, the cluster and its network, the
run) are defined here and imported there."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces.web.charts import framed
from dtsim.interfaces.web.formview import Field, fmt, form_page, key_values, warnings_box

PATH = "/step"
LABEL = "Step"
TITLE = "datacenter step"

DEFAULT_MODEL = "llama3.1-8b"
MODEL_FIELDS = (
    Field("model", "Model (catalog; blank: the shape below)", "select", DEFAULT_MODEL, optional=True),
    Field(
        "hidden", "Hidden size", "int", None, optional=True, tip="Overrides the model's, or with no model."
    ),
    Field("layers", "Layers", "int", None, optional=True),
    Field("heads", "Attention heads", "int", None, optional=True),
    Field("kv_heads", "Key/value heads (GQA)", "int", None, optional=True),
    Field("ffn", "FFN size", "int", None, optional=True),
    Field("ffn_type", "FFN type", "select", None, options=("gelu", "swiglu"), optional=True),
    Field("vocab", "Vocabulary", "int", None, optional=True),
    Field("seq_len", "Sequence length (tokens)", "int", None, optional=True),
)
SHAPE = tuple(f.name for f in MODEL_FIELDS[1:])
CLUSTER_FIELDS = (
    Field("gpu", "GPU (blank: the fabric's, else a100-80gb)", "select", None, optional=True),
    Field("nodes", "Nodes (count)", "int", 2),
    Field("gpus_per_node", "GPUs per node (blank: the fabric's, else 8)", "int", None, optional=True),
    Field("fabric", "Cluster fabric preset", "select", None, optional=True),
    Field("nics_per_node", "NICs per node", "int", None, optional=True),
    Field("nic_gbps", "NIC line rate (Gb/s)", "number", None, optional=True, tip="200 = HDR, 400 = NDR"),
    Field("nvlink_gbps", "NVLink per GPU, one way (Gb/s)", "number", None, optional=True),
    Field("nvlink_domain", "NVLink domain (GPUs)", "int", None, optional=True),
    Field("oversubscription", "Oversubscription above the leaves (ratio)", "number", None, optional=True),
    Field("torus", "TPU slice (e.g. 4x4x4; TPU GPUs)", "text", None, optional=True),
)
CLUSTER = tuple(f.name for f in CLUSTER_FIELDS)
# A training stack (catalog/software.yaml), `--software ID`: choosing one sets the inputs below that it
# sets (shown, each then the user's to change); what the form has no input for (FP32 gradient
# reduction) is the profile's, as `dtsim step --software ID` takes it. Shared with /plan.
SOFTWARE_FIELD = Field(
    "software",
    "Software stack (blank: none)",
    "select",
    None,
    optional=True,
    tip="Sets the inputs the stack's profile sets (catalog/software.yaml); each stays yours to change.",
)
# The Layout fields a profile sets, and the input that shows each (True: the input is its negation)
SOFTWARE_INPUTS = {
    "zero": ("zero", False),
    "recompute": ("recompute", False),
    "schedule": ("schedule", False),
    "sequence_parallel": ("sequence_parallel", False),
    "flash_attention": ("no_flash_attention", True),
    "overlap_grad_reduce": ("no_overlap_grad_reduce", True),
    "overlap_tp_comm": ("overlap_tp_comm", False),
    "overlap_p2p_comm": ("overlap_p2p_comm", False),
    "fp32_params": ("fp32_params", False),
    "attention_kernel": ("attention_kernel", False),
}
LAYOUT_FIELDS = (
    SOFTWARE_FIELD,
    Field("tp", "Tensor parallel (TP)", "int", 2),
    Field("pp", "Pipeline parallel (PP)", "int", 2),
    Field("dp", "Data parallel (blank: the rest)", "int", None, optional=True),
    Field("cp", "Context parallel (CP)", "int", 1),
    Field("ep", "Expert parallel (EP)", "int", 1),
    Field("vpp", "Virtual stages per stage", "int", 1),
    Field("mbs", "Micro-batch (sequences)", "int", 1),
    Field("gbs", "Global batch (sequences)", "int", 256),
    Field("zero", "ZeRO stage (0–3)", "int", 1),
    Field("recompute", "Recomputation", "select", "selective", options=("none", "selective", "full")),
    Field("schedule", "Pipeline schedule", "select", "1f1b", options=()),
    Field("sequence_parallel", "Sequence parallelism", "switch", False, off="--no-sequence-parallel"),
    Field(
        "no_flash_attention",
        "No FlashAttention (materialised scores)",
        "switch",
        False,
        off="--flash-attention",
    ),
    Field(
        "no_overlap_grad_reduce", "Blocking gradient reduction", "switch", False, off="--overlap-grad-reduce"
    ),
    Field("overlap_tp_comm", "Overlap TP communication", "switch", False, off="--no-overlap-tp-comm"),
    Field(
        "overlap_p2p_comm",
        "Overlap pipeline sends (interleaved)",
        "switch",
        False,
        off="--no-overlap-p2p-comm",
    ),
    Field("shard_group", "HSDP shard group (ZeRO-3; blank: all DP)", "int", None, optional=True),
    Field("attention_kernel", "Attention kernel (blank: flash2)", "select", None, options=(), optional=True),
    Field("fp32_params", "FP32 parameters only (FSDP/JAX)", "switch", False, off="--no-fp32-params"),
    Field("moe_capacity_factor", "MoE capacity factor (blank: dropless)", "number", None, optional=True),
    Field("moe_imbalance", "MoE busiest-rank load / mean (ratio)", "number", 1.0),
)
RUN_FIELDS = (
    Field("precision", "Precision", "select", "bf16", options=("bf16", "fp16", "fp8")),
    Field("tokens", "Training tokens (count; for days, cost, energy)", "number", None, optional=True),
    Field("usd_per_gpu_hour", "Rental price (USD per GPU-hour)", "number", None, optional=True),
)
# the trace's categories (iteration_events) in drawing order, with their colours
CATEGORIES = {
    "forward": ("forward", "#2e7d32"),
    "backward": ("backward", "#66bb6a"),
    "recompute": ("recompute", "#a5d6a7"),
    "tp_comm": ("TP/CP/EP comm", "#8e24aa"),
    "pp_comm": ("pipeline hand-off", "#1565c0"),
    "bubble": ("bubble", "#bdbdbd"),
    "dp_comm_exposed": ("DP/ZeRO comm (exposed)", "#c62828"),
    "dp_comm_overlapped": ("DP comm (overlapped)", "#ef9a9a"),
    "overlap_interference": ("overlap slowdown", "#6d4c41"),
    "optimizer": ("optimizer", "#ef6c00"),
}
MEMORY_COLORS = {
    "weights": "#1565c0",
    "gradients": "#8e24aa",
    "optimizer": "#ef6c00",
    "zero3_unit_buffers": "#00838f",
    "activations": "#2e7d32",
    "logits": "#f9a825",
    "framework_overhead": "#9e9e9e",
}
# Events drawn one by one at most; a longer iteration is drawn as each stage's totals (the downloaded
# trace keeps every event). A few thousand rectangles keep an update under issue 17's 150 ms.
MAX_DRAWN_EVENTS = 3000


def model_choices() -> dict[str, tuple[str, ...]]:
    """The catalog's choices for the select fields shared with /plan."""
    from dtsim.models.datacenter.workload import ATTENTION_KERNELS, SCHEDULES
    from dtsim.physics.transformer import architectures

    return {
        "model": tuple(architectures()),
        "gpu": tuple(k for k, g in catalog.gpus().items() if g.micro is not None),
        "fabric": tuple(catalog.cluster_fabrics()),
        "schedule": SCHEDULES,
        "attention_kernel": ATTENTION_KERNELS,
    }


def software_field() -> Field:
    """The software select: the catalog's profile ids, each shown by its name."""
    profiles = catalog.software()
    return replace(SOFTWARE_FIELD, options=tuple(profiles), labels=tuple(p.name for p in profiles.values()))


def fields() -> tuple[Field, ...]:
    choices = model_choices()
    every = MODEL_FIELDS + CLUSTER_FIELDS + LAYOUT_FIELDS + RUN_FIELDS
    return tuple(
        software_field() if f.name == "software" else replace(f, options=choices.get(f.name, f.options))
        for f in every
    )


def software_inputs(layout: dict[str, Any], names: Any) -> dict[str, Any]:
    """A profile's Layout fields (`resolved`, `plan_settings`) as the form's inputs among `names`: the
    values choosing the profile shows."""
    out = {}
    for k, v in layout.items():
        if k in SOFTWARE_INPUTS and SOFTWARE_INPUTS[k][0] in names:
            name, negated = SOFTWARE_INPUTS[k]
            out[name] = (not v) if negated else v
    return out


def software_given(form: tuple[Field, ...], v: dict[str, Any]) -> set[str]:
    """The profile-settable Layout fields these inputs give, as `dtsim step`/`plan` counts a flag given
    (its argv not empty: a blank attention kernel is not given, a switch is, on or off); the profile
    sets the rest."""
    by_name = {f.name: f for f in form}
    return {
        k
        for k, (name, _neg) in SOFTWARE_INPUTS.items()
        if name in by_name and by_name[name].argv(v.get(name))
    }


def software_note(
    ui: Any, v: dict[str, Any], form: tuple[Field, ...], searched: tuple[str, ...] = ()
) -> None:
    """The answer card's line naming the software profile used (nothing without one), and the fields it
    set that no input of the form gives (those `searched` aside: /plan searches them all the same)."""
    from dtsim.models.datacenter.software import accelerator_note, profile, taken_fields

    if v.get("software") is None:
        return
    p = profile(v["software"])
    set_here = taken_fields(v["software"], software_given(form, v), searched)
    taken = ", ".join(f"{k}={x}" for k, x in set_here.items())
    ui.label(
        f"Software stack: {p.name} [{v['software']}]"
        + (f"; set by the profile (no input here, or left blank): {taken}" if taken else "")
    ).classes("text-body2").props("data-testid=software-used")
    note = accelerator_note(v["software"], v.get("gpu"))
    if note:
        ui.label(f"Warning: {note}").classes("text-body2 text-warning").props("data-testid=software-note")


def linked(name: str, v: dict[str, Any]) -> dict[str, Any]:
    """Choosing a software profile sets the inputs it sets, `with_tp` resolved for the form's TP."""
    from dtsim.models.datacenter.software import resolved

    if name != "software" or v.get("software") is None:
        return {}
    return software_inputs(resolved(v["software"], v.get("tp")), {f.name for f in LAYOUT_FIELDS})


def body_names(exc: ScenarioError) -> ScenarioError:
    """The library's field names as the form's: `layout.tp` → `tp`, `cluster.nodes` → `nodes`,
    `model.hidden` → `hidden`, `--attention-kernel` → `attention_kernel`."""
    out = []
    for f, v, m in exc.problems:
        f = f.lstrip("-").replace("-", "_")  # a CLI flag (--attention-kernel) as the field
        for prefix in ("layout.", "cluster.", "model."):
            f = f.removeprefix(prefix)
        out.append((f, v, m))
    return ScenarioError(out)


def architecture(v: dict[str, Any]):
    """The model as `dtsim step` resolves --model and the shape flags (operations.model_architecture)."""
    from dtsim.interfaces.operations import model_architecture

    return model_architecture(v.get("model"), {k: v.get(k) for k in SHAPE}, name=lambda f: f)


def cluster(v: dict[str, Any]):
    """The cluster as `dtsim step` builds it from its cluster flags."""
    from dtsim.models.datacenter.workload import Cluster, build

    return build(Cluster, {k: v[k] for k in CLUSTER if v.get(k) is not None}, "cluster.")


def workload(v: dict[str, Any]):
    """The Workload `dtsim step` builds from the same options (its layout flags' defaults for the
    switches this form does not show)."""
    from dtsim.interfaces.operations import check_attention_kernel
    from dtsim.models.datacenter.workload import Layout, Workload, build

    try:
        arch = architecture(v)
        base = {
            "dp": v.get("dp"),
            **{
                k: v[k]
                for k in ("tp", "pp", "vpp", "cp", "ep", "mbs", "gbs", "recompute", "zero", "schedule")
            },
            "shard_group": v.get("shard_group"),
            "pp_layers": None,
            "sequence_parallel": v["sequence_parallel"],
            "embedding_stages": "first-last",
            "flash_attention": not v["no_flash_attention"],
            "overlap_grad_reduce": not v["no_overlap_grad_reduce"],
            "overlap_tp_comm": v["overlap_tp_comm"],
            "overlap_p2p_comm": v["overlap_p2p_comm"],
            "fp32_grad_accumulation": None,
            "fp32_params": v["fp32_params"],
            "attention_kernel": check_attention_kernel(v.get("attention_kernel"), v["no_flash_attention"]),
            "moe_capacity_factor": v.get("moe_capacity_factor"),
            "moe_imbalance": v["moe_imbalance"],
        }
        if v.get("software") is not None:  # as `dtsim step --software ID` with these inputs as its flags
            from dtsim.models.datacenter.software import apply_software

            base = apply_software(v["software"], base, software_given(fields(), v))
        run = {"model": arch, "cluster": cluster(v), "precision": v["precision"], "tokens": v.get("tokens")}
        run["usd_per_gpu_hour"] = v.get("usd_per_gpu_hour")
        return build(Workload, {**run, "layout": build(Layout, base, "layout.")})
    except ScenarioError as exc:
        raise body_names(exc) from None


def timeline(events: list[dict[str, Any]], pp: int) -> dict[str, Any]:
    """The iteration's events as the chart draws them: per category, [track, start_s, end_s] rows (the
    track is the stage, pp for the overlapped data-parallel communication); past MAX_DRAWN_EVENTS,
    each track's events of a category merged into its total time (`totals`)."""
    tracks = [f"stage {s}" for s in range(pp)] + ["DP network"]
    if len(events) <= MAX_DRAWN_EVENTS:
        series: dict[str, list[list[float]]] = {}
        for e in events:
            track = pp if e["track"] == "dp" else int(e["track"])
            series.setdefault(e["category"], []).append([track, e["start_s"], e["start_s"] + e["dur_s"]])
        return {"tracks": tracks, "events": len(events), "series": series, "totals": None}
    totals: dict[str, list[float]] = {}
    for e in events:
        track = pp if e["track"] == "dp" else int(e["track"])
        totals.setdefault(e["category"], [0.0] * (pp + 1))[track] += e["dur_s"]
    return {"tracks": tracks, "events": len(events), "series": None, "totals": totals}


def compute(v: dict[str, Any]) -> dict[str, Any]:
    """`dtsim step --json` (under `step`), the GPU's memory, and the iteration's timeline."""
    from dtsim.interfaces.operations import step_payload
    from dtsim.models.datacenter.step import step
    from dtsim.models.datacenter.trace import iteration_events

    w = workload(v)
    try:
        r = step(w)
    except ScenarioError as exc:
        raise body_names(exc) from None
    payload = step_payload(r, v.get("software"))
    try:
        line = timeline(iteration_events(w, r), int(r.layout["pp"]))
    except ScenarioError as exc:  # too many passes to draw: the numbers stand, the timeline says why
        line = {"unavailable": "; ".join(m for _f, _v, m in exc.problems)}
    return {"step": payload, "gpu_memory_gb": catalog.gpus()[r.gpu].memory_bytes / 1e9, "timeline": line}


def memory_chart(s: dict[str, Any], gpu_memory_gb: float) -> dict[str, Any]:
    """One stacked bar: the peak stage's memory by part, against the usable limit and the GPU's memory."""
    parts = s["memory_breakdown_gb"]
    usable = s["usable_memory_gb"]
    series: list[dict[str, Any]] = [
        {
            "name": k.replace("_", " "),
            "type": "bar",
            "stack": "m",
            "color": MEMORY_COLORS.get(k, "#607d8b"),
            "data": [round(x, 4)],
        }
        for k, x in parts.items()
        if x > 0
    ]
    series.append(
        {
            "name": "limits",
            "type": "line",
            "data": [],
            "color": "#c62828",
            "markLine": {
                "symbol": "none",
                "data": [
                    {
                        "xAxis": round(usable, 3),
                        "name": "usable",
                        "lineStyle": {"color": "#c62828", "width": 2},
                        "label": {"formatter": "usable {c} GB", "position": "start"},
                    },
                    {
                        "xAxis": round(gpu_memory_gb, 3),
                        "name": "GPU",
                        "lineStyle": {"color": "#424242"},
                        "label": {"formatter": "GPU {c} GB", "position": "end"},
                    },
                ],
            },
        }
    )
    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "item"},
            "legend": {"top": 0, "type": "plain"},
            "grid": {"left": 60, "right": 70, "top": 60, "bottom": 30},
            "xAxis": {
                "type": "value",
                "name": "GB",
                "max": round(max(gpu_memory_gb, s["memory_per_gpu_gb"]) * 1.05, 1),
                "axisLabel": {"showMaxLabel": False},
            },
            "yAxis": {"type": "category", "data": ["per GPU"]},
            "series": series,
        }
    )


RENDER_RECT = """function (params, api) {
  const y = api.coord([0, api.value(0)])[1];
  const a = api.coord([api.value(1), api.value(0)]);
  const b = api.coord([api.value(2), api.value(0)]);
  const h = api.size([0, 1])[1] * 0.7;
  return {type: 'rect', shape: {x: a[0], y: y - h / 2, width: Math.max(b[0] - a[0], 0.5), height: h},
          style: api.style()};
}"""


def timeline_chart(line: dict[str, Any], step_time_s: float) -> dict[str, Any]:
    """One iteration per pipeline stage: a custom series per category (a rectangle per event), or, past
    MAX_DRAWN_EVENTS, stacked bars of each stage's time per category."""
    base = {
        "animation": False,
        "legend": {"top": 0},
        "grid": {"left": 80, "right": 20, "top": 50, "bottom": 40},
        "yAxis": {"type": "category", "data": line["tracks"], "inverse": True},
        "tooltip": {"trigger": "item"},
    }
    if line["series"] is not None:
        series = [
            {
                "name": CATEGORIES.get(cat, (cat, None))[0],
                "type": "custom",
                ":renderItem": RENDER_RECT,
                "color": CATEGORIES.get(cat, (cat, "#607d8b"))[1],
                "encode": {"x": [1, 2], "y": 0},
                "data": [[t, round(a, 9), round(b, 9)] for t, a, b in line["series"][cat]],
            }
            for cat in CATEGORIES
            if cat in line["series"]
        ]
        x = {
            "type": "value",
            "name": "s",
            "min": 0,
            "max": round(step_time_s, 9),
            "axisLabel": {"showMaxLabel": False},
        }
        base["dataZoom"] = [{"type": "inside", "xAxisIndex": 0, "filterMode": "weakFilter"}]
    else:
        series = [
            {
                "name": CATEGORIES.get(cat, (cat, None))[0],
                "type": "bar",
                "stack": "t",
                "color": CATEGORIES.get(cat, (cat, "#607d8b"))[1],
                "data": [round(x, 9) for x in line["totals"][cat]],
            }
            for cat in CATEGORIES
            if cat in line["totals"]
        ]
        x = {"type": "value", "name": "s (totals per stage)"}
    return framed({**base, "xAxis": x, "series": series})


def render(ui: Any, answer: dict[str, Any], v: dict[str, Any]) -> None:
    s = answer["step"]
    lay = s["layout"]
    with ui.card().classes("w-full q-pa-sm").props("data-testid=step-panel"):
        ui.label(f"{s['model']} on {s['n_gpus']:,} × {s['gpu']}").classes("text-weight-bold")
        interval = (
            f" (80 % interval {s['step_time_s_p10']:,.3f}–{s['step_time_s_p90']:,.3f} s)"
            if s.get("step_time_s_p10") is not None
            else ""
        )
        ui.label(f"Step time {s['step_time_s']:,.3f} s{interval}").classes("text-h6").props(
            "data-testid=step-headline"
        )
        software_note(ui, v, fields())
        note = s["fit_note"] or "does not fit in GPU memory"
        verdict = ui.label("Fits in GPU memory" if s["fits"] else note[:1].upper() + note[1:])
        verdict.props("data-testid=fit-verdict")
        verdict.classes("text-positive" if s["fits"] else "text-negative text-weight-bold")
        if not s["fits"]:
            ui.label("The times below are not answers: the layout does not fit.").classes("text-negative")
        mfu_band = f" ({s['mfu_p10']:.1%}–{s['mfu_p90']:.1%})" if s.get("mfu_p10") is not None else ""
        rows = [
            ("Step time (s)", fmt(s["step_time_s"]), "step-time"),
            ("MFU", f"{s['mfu']:.1%}{mfu_band}", "mfu"),
            ("HFU", f"{s['hfu']:.1%}", "hfu"),
            ("Model TFLOP/s per GPU", fmt(s["model_tflops_per_gpu"]), "tflops"),
            ("Tokens per second", fmt(s["tokens_per_s"]), "tokens-per-s"),
            (
                "Memory per GPU (GB)",
                f"{s['memory_per_gpu_gb']:,.1f} of {s['usable_memory_gb']:,.1f} usable",
                "memory",
            ),
            (
                "Layout",
                f"dp {lay['dp']} · tp {lay['tp']} · pp {lay['pp']} · cp {lay['cp']} · ep {lay['ep']}",
                "layout",
            ),
            ("Micro-batches", fmt(s["micro_batches"]), "micro-batches"),
            ("Bubble share", f"{s['bubble_fraction']:.1%}", "bubble"),
        ]
        run = s.get("run")
        if run:
            days_band = (
                f" ({run['days_p10']:,.1f}–{run['days_p90']:,.1f})" if run.get("days_p10") is not None else ""
            )
            rows += [
                (f"Days for {run['tokens']:.3g} tokens", f"{run['days']:,.1f}{days_band}", "days"),
                ("GPU-hours", fmt(run["gpu_hours"]), "gpu-hours"),
                ("GPU purchase cost ($)", fmt(run["capital_cost_usd"]), "capital-cost"),
                ("Energy (MWh, facility)", fmt(run["energy_kwh"] / 1e3), "energy"),
            ]
            if run.get("rental_cost_usd") is not None:
                rows.append(("Rental cost ($)", fmt(run["rental_cost_usd"]), "rental-cost"))
        key_values(ui, rows)
        if s["model_error"].get("basis"):
            ui.label(s["model_error"]["basis"]).classes("text-caption text-grey-8")
    warnings_box(ui, s["warnings"])
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("Memory per GPU (the stage that needs the most)").classes("text-weight-bold")
        ui.echart(memory_chart(s, answer["gpu_memory_gb"])).classes("w-full").style("height: 170px").props(
            "data-testid=memory-chart"
        )
    with ui.card().classes("w-full q-pa-sm"):
        with ui.row().classes("items-center justify-between w-full"):
            ui.label("One iteration per pipeline stage").classes("text-weight-bold")
            ui.button(
                "Download trace (Perfetto / chrome://tracing)", on_click=lambda: download_trace(ui, v)
            ).props("dense outline data-testid=download-trace")
        line = answer["timeline"]
        if "unavailable" in line:
            ui.label(f"Not drawn: {line['unavailable']}").classes("text-orange-10").props(
                "data-testid=timeline-note"
            )
            return
        if line["series"] is None:
            ui.label(
                f"{line['events']:,} events: drawn as each stage's totals; the downloaded trace has every event."
            ).classes("text-caption").props("data-testid=timeline-note")
        height = 90 + 28 * len(line["tracks"])
        ui.echart(timeline_chart(line, s["step_time_s"])).classes("w-full").style(
            f"height: {min(height, 700)}px"
        ).props("data-testid=timeline-chart")
        bd = ", ".join(f"{k.replace('_', ' ')} {x:,.3f} s" for k, x in s["breakdown_s"].items() if x > 0)
        ui.label(f"Step breakdown: {bd}").classes("text-caption text-grey-8").props("data-testid=breakdown")


def trace_bytes(v: dict[str, Any]) -> bytes:
    """The iteration as a Trace Event Format file (chrome_trace), as `dtsim step --trace FILE` writes it."""
    from dtsim.interfaces.operations import json_text
    from dtsim.models.datacenter.trace import chrome_trace

    return json_text(chrome_trace(workload(v)), indent=None).encode()


async def download_trace(ui: Any, v: dict[str, Any]) -> None:
    """Download the trace of the inputs shown (built off the event loop: a long one is megabytes)."""
    from nicegui import run

    try:
        data = await run.io_bound(trace_bytes, dict(v))
    except ScenarioError as exc:
        ui.notify("No trace: " + "; ".join(m for _f, _v, m in exc.problems), type="negative", multi_line=True)
        return
    ui.download(data, "step-trace.json")


build = form_page(
    __name__,
    title="Datacenter step (dtsim step)",
    intro="Step time, MFU and memory of one parallel layout: the GEMM model of Erdil & Schneider-Joseph "
    "2024 §8.1.1 with the pipeline schedules and collectives of the datacenter model; the interval is the "
    "model's measured error.",
    sections=(
        ("Model", tuple(f.name for f in MODEL_FIELDS)),
        ("Cluster and network", CLUSTER),
        ("Layout", tuple(f.name for f in LAYOUT_FIELDS)),
        ("Run", tuple(f.name for f in RUN_FIELDS)),
    ),
)
