"""The web UI (NiceGUI, mounted on the API's FastAPI app): every input of the original simulator and
more, results that update as inputs change, charts, compare, share links, import and export.

NiceGUI keeps the UI in Python: every number on the page comes from the same `dtsim.simulate` call
the CLI makes, with no second implementation in JavaScript to drift from it. Its Vue, Quasar and
ECharts assets ship inside the package, so the page works without internet access.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import yaml
from fastapi import FastAPI, Request

from dtsim import catalog
from dtsim.analysis.sweep import default_range, sweep
from dtsim.errors import ScenarioError
from dtsim.models.decentralized.engine import simulate
from dtsim.models.decentralized.result import Result
from dtsim.models.decentralized.strategies.base import BREAKDOWN_KEYS
from dtsim.physics.runlength import parse_growth
from dtsim.schema.scenario import BOUNDS, Scenario, load_scenario, parse_set

# --- the inputs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    name: str
    label: str
    kind: str  # number | int | optional | select | switch | steps | growth
    tip: str
    options: tuple = ()
    step: float | None = None


GROUPS: tuple[tuple[str, tuple[Input, ...]], ...] = (
    (
        "Model and data",
        (
            Input(
                "parameters_b",
                "Parameters (B)",
                "number",
                "Total parameters P, all experts for MoE. Model-state memory M = P·β with β = 16/14/13 bytes "
                "for FP16/FP8/FP4 (seed 000 §2.1; ZeRO, Rajbhandari et al. 2019).",
            ),
            Input(
                "tokens_t",
                "Tokens (T)",
                "number",
                "Training tokens D. Compute C = 6·P_active·D (seed 000 §1.1; Kaplan et al. 2020).",
            ),
            Input(
                "moe",
                "Mixture of experts",
                "switch",
                "MoE: compute uses active parameters, memory total parameters (seed 000 §1.4, §2.3).",
            ),
            Input(
                "active_parameters_b",
                "Active parameters (B)",
                "optional",
                "Parameters active per token (MoE). Also the shared parameters of the EP memory model "
                "(seed 000 §2.4).",
            ),
            Input(
                "moe_layers",
                "MoE layers",
                "int",
                "Each MoE layer costs two latency-bound all-to-alls per step with EP: T_EP = 2·RTT·L_MoE "
                "(seed 000 §1.5; GShard, Tutel).",
            ),
            Input(
                "expert_parallelism",
                "Expert parallelism",
                "select",
                "Shard experts over all nodes (global) or a regional group: M_node = (P_shared + "
                "P_experts/N_EP)·β (seed 000 §2.4; SPES, GShard, DeepSeek-V2).",
                options=("none", "regional", "global"),
            ),
            Input(
                "hidden_size",
                "Hidden size (blank: 0.03·√P)",
                "optional",
                "Hidden size h for pipeline activations; default h ≈ 0.03·√P_active, within ~20% of "
                "LLaMA-2 70B, GPT-3 and LLaMA-3.1 405B (seed 000 §3.3).",
            ),
        ),
    ),
    (
        "Infrastructure",
        (
            Input(
                "num_nodes",
                "Nodes",
                "int",
                "Geographically distributed nodes, each a training replica (seed 000 §9).",
            ),
            Input(
                "pflops_per_node",
                "Peak PFLOPS per node",
                "number",
                "Dense peak at the training precision, e.g. 16×GH200 (seed 000 §9); catalog/gpus.yaml cites "
                "every accelerator's datasheet.",
            ),
            Input(
                "vram_per_node_gb",
                "VRAM per node (GB)",
                "number",
                "Accelerator memory per node; the model is pipelined over S = ⌈M/VRAM⌉ nodes when it does not "
                "fit (seed 000 §2.2).",
            ),
            Input(
                "mfu",
                "Base MFU",
                "number",
                "Model FLOP utilization per node: PaLM 46%, LLaMA-3.1 38–43%, INTELLECT-1 36–43% "
                "(seed 000 §1.3). Warning above 60%.",
                step=0.01,
            ),
            Input(
                "precision",
                "Precision",
                "select",
                "Sets β (16/14/13 B per parameter) and bytes per communicated value (2/1/0.5) "
                "(seed 000 §2.1, §8.1).",
                options=("fp16", "bf16", "fp8", "fp4"),
            ),
            Input(
                "gpu",
                "Accelerator (cost, energy)",
                "select",
                "Catalog accelerator for price and board power (catalog/gpus.yaml, a source per number).",
                options=tuple(catalog.gpus()),
            ),
            Input(
                "gpus_per_node", "Accelerators per node", "int", "GPUs per node: GPU count = nodes × this."
            ),
        ),
    ),
    (
        "Network",
        (
            Input(
                "bandwidth_up_mbps",
                "Upload (Mbit/s)",
                "number",
                "Per-node WAN upload. A sync takes V/BW_up + V/BW_down + RTT (seed 000 §3.1; asymmetric "
                "links per the original's later model).",
            ),
            Input("bandwidth_down_mbps", "Download (Mbit/s)", "number", "Per-node WAN download."),
            Input(
                "latency_ms",
                "RTT (ms)",
                "number",
                "WAN round trip, paid once per sync and once per pipeline micro-batch slot (seed 000 §3.1, "
                "§3.3; SWARM).",
            ),
        ),
    ),
    (
        "Hierarchy",
        (
            Input(
                "hierarchical",
                "Hierarchical DiLoCo",
                "switch",
                "Regional groups sync every H steps, group leaders over the WAN every H·H_regional; "
                "H_eff = H·H_regional^0.5 (seed 000 §3.2, §4.4; SPES, INTELLECT-1).",
            ),
            Input(
                "nodes_per_group",
                "Nodes per group",
                "int",
                "Regional group size; groups are whole (⌊N/N_group⌋), fewer than two fall back to flat.",
            ),
            Input(
                "regional_bandwidth_mbps", "Regional bandwidth (Mbit/s)", "number", "Intra-group bandwidth."
            ),
            Input("regional_latency_ms", "Regional RTT (ms)", "number", "Intra-group round trip."),
            Input(
                "regional_steps",
                "Regional cycles per global sync",
                "steps",
                "H_regional, or auto: the smallest that hides the global sync.",
            ),
        ),
    ),
    (
        "Algorithm",
        (
            Input(
                "inner_steps",
                "Inner steps H",
                "steps",
                "Local steps between syncs. auto: the smallest H whose compute hides the sync; auto-quality: "
                "the H maximising quality-adjusted compute per day. η_H = max(0.4, 1 − α·log10 H) "
                "(seed 000 §4; Douillard et al. 2023, Charles et al. 2025).",
            ),
            Input(
                "compression",
                "Pseudo-gradient compression (×)",
                "number",
                "On top of precision; quality from the table by ratio (original simulator; Streaming DiLoCo, "
                "MuLoCo, SparseLoCo, INTELLECT-1).",
            ),
            Input(
                "compression_scenario",
                "Compression quality table",
                "select",
                "Optimistic, expected or conservative quality factors (MIRI Compression_Quality.md).",
                options=("optimistic", "expected", "conservative"),
            ),
            Input(
                "error_feedback",
                "Error feedback",
                "switch",
                "Selects the with/without error-feedback table (Karimireddy et al. 2019).",
            ),
            Input(
                "activation_compression",
                "Activation compression (×)",
                "number",
                "Pipeline hand-offs; quality q^(2·(S−1)) (original simulator; COAT, SWARM, TAH-Quant).",
            ),
            Input(
                "local_batch_tokens",
                "Local batch (tokens)",
                "int",
                "Tokens per local step per replica = sequences × sequence length (seed 000 §3.3).",
            ),
            Input(
                "micro_batches",
                "Micro-batches",
                "int",
                "GPipe step (M + S − 1)·(T/(M·S) + (A/BW + RTT)·f(S)) (seed 000 §3.3; Huang et al. 2019).",
            ),
            Input(
                "streaming",
                "Streaming (overlap sync)",
                "switch",
                "Outer step = max(H·T, T_sync) with streaming, else the sum (seed 000 §3.1; Streaming DiLoCo).",
            ),
            Input(
                "pipeline_backward",
                "Count backward activation gradients",
                "switch",
                "Forward-only undercounts pipeline traffic about 2× (seed 000 §10 item 6).",
            ),
            Input(
                "replica_penalty",
                "Replica penalty",
                "select",
                "Loss multiplier M^β in χ, β = 1.0923·P^−0.2342: scaled by ln H/ln 30 (h-scaled), unscaled "
                "(fixed, the original web app) or none.",
                options=("h-scaled", "fixed", "none"),
            ),
            Input(
                "straggler_strategy",
                "Straggler mitigation",
                "select",
                "none: f(n) = 1 + 0.05·log2 n; threshold: no wait, η/1.15; backup: 10% extra nodes, 70% less "
                "delay; relay: 1 + 0.02·log2 n (seed 000 §5).",
                options=("none", "threshold", "backup", "relay"),
            ),
        ),
    ),
    (
        "Run length and assumptions",
        (
            Input(
                "hardware_growth",
                "Hardware growth",
                "growth",
                "Maximum useful run L = 1/((g_H + g_S + g_I)·ln 10) years (seed 000 §7; Epoch AI, The Longest "
                "Training Run).",
            ),
            Input(
                "software_growth",
                "Software growth",
                "growth",
                "Algorithmic efficiency growth (seed 000 §7.2).",
            ),
            Input("investment_growth", "Investment growth", "growth", "Spending growth (seed 000 §7.2)."),
            Input("max_run_days", "Maximum run (days; blank: computed)", "optional", "Override L."),
            Input(
                "assumptions.hfu_mfu_ratio",
                "HFU/MFU ratio",
                "number",
                "MFU as a fraction of HFU: 0.8 with selective recomputation (PaLM 46.2%/57.8%), 1.0 without, "
                "~0.67 with full recomputation (seed 000 §6.2).",
                step=0.01,
            ),
        ),
    ),
)
INPUTS = {i.name: i for _, group in GROUPS for i in group}
GROWTH_UNITS = ("x/yr", "%/yr", "OOM/yr")
OUTPUT_NAMES = {
    "compute": "compute",
    "latency": "latency",
    "global_sync": "global sync",
    "regional_sync": "regional sync",
    "pipeline_comm": "pipeline hand-offs",
    "bubble": "bubble",
    "straggler": "straggler wait",
}
COLORS = {
    "compute": "#2e7d32",
    "latency": "#8e24aa",
    "global_sync": "#c62828",
    "regional_sync": "#ef6c00",
    "pipeline_comm": "#1565c0",
    "bubble": "#9e9e9e",
    "straggler": "#6d4c41",
}
SWEEP_FIELDS = (
    "num_nodes",
    "bandwidth_mbps",
    "latency_ms",
    "inner_steps",
    "compression",
    "parameters_b",
    "tokens_t",
    "mfu",
)
COMPARE_KEYS = (
    "mode",
    "wall_clock_days",
    "effective_days",
    "efficiency",
    "global_mfu",
    "chi",
    "quality_adjusted_flop",
    "bottleneck",
    "cost_usd",
)


def default_values() -> dict[str, Any]:
    """Widget values for the default scenario."""
    return scenario_to_values(Scenario())


def scenario_to_values(s: Scenario) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in INPUTS:
        if name.startswith("assumptions."):
            key = name.split(".", 1)[1]
            from dtsim.assumptions import Assumptions

            values[name] = Assumptions(s.assumptions).as_dict()[key]
            continue
        v = getattr(s, name)
        values[name] = v.value if hasattr(v, "value") else v
    return values


def values_to_fields(values: dict[str, Any]) -> dict[str, Any]:
    """Widget values → scenario fields (None means 'not set')."""
    fields: dict[str, Any] = {}
    for name, value in values.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if name.startswith("assumptions."):
            key = name.split(".", 1)[1]
            if value != catalog.assumption_rows()[key]["value"]:  # only real overrides
                fields.setdefault("assumptions", {})[key] = value
        else:
            fields[name] = value
    return fields


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def share_query(values: dict[str, Any]) -> str:
    """The query string of a scenario: only fields that differ from the defaults (order fixed)."""
    defaults = default_values()
    pairs = [(k, _query_value(v)) for k, v in values.items() if v != defaults.get(k) and v is not None]
    return urlencode(pairs)


def parse_query(params: dict[str, str]) -> dict[str, Any]:
    """A share URL's query parameters → scenario fields (parsed as `--set` values are)."""
    return parse_set([f"{k}={v}" for k, v in params.items()])


def result_csv(r: Result) -> str:
    """The flat outputs of a result as a two-column CSV (name, value)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["output", "value"])
    data = r.model_dump(mode="json")
    for key, value in data.items():
        if key in (
            "scenario",
            "warnings",
            "details",
            "breakdown_s",
            "max_parameters_b",
            "cost_sources",
            "assumptions_overridden",
        ):
            continue
        writer.writerow([key, "" if value is None else value])
    for key, value in data["breakdown_s"].items():
        writer.writerow([f"breakdown_s.{key}", "" if value is None else value])
    for w in data["warnings"]:
        writer.writerow([f"warning.{w['code']}", w["message"]])
    return buf.getvalue()


# --- formatting ------------------------------------------------------------------------------------------


def fmt_days(x: float | None) -> str:
    return "—" if x is None else f"{x:,.1f} days"


def fmt_seconds(x: float | None) -> str:
    if x is None:
        return "—"
    if x < 120:
        return f"{x:,.2f} s"
    if x < 7200:
        return f"{x / 60:,.1f} min"
    if x < 172800:
        return f"{x / 3600:,.1f} h"
    return f"{x / 86400:,.1f} days"


def fmt_pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def fmt_sci(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def fmt_int(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def fmt_usd(x: float | None) -> str:
    return "—" if x is None else f"${x:,.0f}"


RESULT_ROWS: tuple[tuple[str, tuple[tuple[str, str, Any], ...]], ...] = (
    (
        "Time",
        (
            ("wall_clock_days", "Wall-clock (process D tokens)", fmt_days),
            ("effective_days", "η-adjusted (equivalent quality)", fmt_days),
            ("max_days", "Maximum useful run length", fmt_days),
            ("feasible", "Feasible", lambda v: "—" if v is None else ("yes" if v else "no")),
        ),
    ),
    (
        "Steps",
        (
            ("compute_step_s", "Compute per step", fmt_seconds),
            ("inner_step_s", "Inner step", fmt_seconds),
            ("sync_s", "Global sync", fmt_seconds),
            ("regional_sync_s", "Regional sync", fmt_seconds),
            ("outer_step_s", "Outer step", fmt_seconds),
            ("inner_steps_used", "H used", fmt_int),
            ("auto_inner_steps", "H that hides the sync", fmt_int),
        ),
    ),
    (
        "Efficiency and quality",
        (
            ("efficiency_h", "η_H (inner steps)", fmt_pct),
            ("efficiency_compression", "η_C (compression)", fmt_pct),
            ("efficiency_activation", "η_act (activations)", fmt_pct),
            ("efficiency", "η total", fmt_pct),
            (
                "replica_loss_multiplier",
                "Replica loss multiplier",
                lambda v: "—" if v is None else f"{v:.4f}",
            ),
            ("chi", "χ (compute-optimal equivalent)", fmt_pct),
            ("global_mfu", "Global MFU", fmt_pct),
            ("global_hfu", "Global HFU", fmt_pct),
            ("model_flop", "Model FLOP (6·P·D)", fmt_sci),
            ("hardware_flop", "Hardware FLOP", fmt_sci),
            ("quality_adjusted_flop", "Quality-adjusted FLOP", fmt_sci),
        ),
    ),
    (
        "Layout and cost",
        (
            ("bottleneck", "Bottleneck", lambda v: OUTPUT_NAMES.get(v, v)),
            ("pp_stages", "Pipeline stages", fmt_int),
            ("pp_groups", "Pipeline groups", fmt_int),
            ("memory_per_node_gb", "Model state per node (GB)", fmt_int),
            ("gpu_count", "GPUs", fmt_int),
            ("gpu_hours", "GPU-hours", fmt_sci),
            ("cost_usd", "Capital cost", fmt_usd),
            ("energy_kwh", "Energy (kWh)", fmt_sci),
        ),
    ),
)


def breakdown_chart(r: Result | None) -> dict[str, Any]:
    """Stacked bars of one outer step (what the wall clock sees) and of the sync (hidden + exposed),
    drawn on one time axis so the overlap with compute is visible."""
    series = []
    b = r.breakdown_s if r else {}
    for key in BREAKDOWN_KEYS:
        v = b.get(key) or 0.0
        series.append(
            {
                "name": OUTPUT_NAMES[key],
                "type": "bar",
                "stack": "t",
                "color": COLORS[key],
                "data": [round(v, 6), 0],
            }
        )
    hidden = (r.hidden_sync_s or 0.0) if r else 0.0
    series.append(
        {
            "name": "sync hidden under compute",
            "type": "bar",
            "stack": "t",
            "color": "#ef9a9a",
            "data": [0, round(hidden, 6)],
            "itemStyle": {
                "decal": {"symbol": "rect", "dashArrayX": [1, 0], "dashArrayY": [2, 3], "rotation": 0.6}
            },
        }
    )
    exposed = sum((b.get(k) or 0.0) for k in ("global_sync", "regional_sync")) if r else 0.0
    series.append(
        {
            "name": "sync exposed",
            "type": "bar",
            "stack": "t",
            "color": "#c62828",
            "data": [0, round(exposed, 6)],
        }
    )
    return {
        "animation": False,
        "tooltip": {"trigger": "axis", "axisPointer": {"type": "shadow"}},
        "legend": {"type": "scroll", "bottom": 0},
        "grid": {"left": 90, "right": 20, "top": 10, "bottom": 50},
        "xAxis": {"type": "value", "name": "seconds", "nameLocation": "middle", "nameGap": 22},
        "yAxis": {"type": "category", "data": ["outer step", "sync"], "inverse": True},
        "series": series,
    }


def sweep_chart(
    field_name: str,
    values: list[float],
    days: list[float | None],
    mfu: list[float | None],
    current: float | None,
) -> dict[str, Any]:
    log_x = field_name not in ("mfu", "latency_ms") or (
        values and min(values) > 0 and max(values) / min(values) > 20
    )
    return {
        "animation": False,
        "tooltip": {"trigger": "axis"},
        "legend": {"bottom": 0, "data": ["wall-clock days", "global MFU"]},
        "grid": {"left": 60, "right": 60, "top": 20, "bottom": 60},
        "xAxis": {
            "type": "log" if log_x else "value",
            "name": field_name,
            "nameLocation": "middle",
            "nameGap": 26,
        },
        "yAxis": [
            {"type": "log", "name": "days"},
            {"type": "value", "name": "MFU %", "min": 0},
        ],
        "series": [
            {
                "name": "wall-clock days",
                "type": "line",
                "showSymbol": False,
                "color": "#1565c0",
                "data": [[x, y] for x, y in zip(values, days, strict=True) if y is not None and y > 0],
                "markLine": {
                    "symbol": "none",
                    "label": {"formatter": "current"},
                    "lineStyle": {"type": "dashed"},
                    "data": [{"xAxis": current}] if current else [],
                },
            },
            {
                "name": "global MFU",
                "type": "line",
                "yAxisIndex": 1,
                "showSymbol": False,
                "color": "#2e7d32",
                "data": [[x, round(100 * y, 4)] for x, y in zip(values, mfu, strict=True) if y is not None],
            },
        ],
    }


# --- the page ------------------------------------------------------------------------------------------------


@dataclass
class PageState:
    values: dict[str, Any] = field(default_factory=default_values)
    result: Result | None = None
    pinned: tuple[dict[str, Any], Result] | None = None
    sweep_field: str = "num_nodes"
    loading: bool = False
    version: int = 0  # bumped on every recomputation; charts carry it as data-version


def build_page(query: dict[str, str]) -> None:
    from nicegui import events, ui

    state = PageState()
    widgets: dict[str, Any] = {}
    unit_widgets: dict[str, Any] = {}
    mode_widgets: dict[str, Any] = {}
    out_labels: dict[str, Any] = {}

    ui.add_head_html(
        "<style>.dt-k{color:#555} .dt-v{font-variant-numeric:tabular-nums;text-align:right}"
        ".dt-group .q-expansion-item__content{padding:0 8px}</style>"
    )

    # --- restore from the URL -------------------------------------------------------------------------
    notice = None
    if query:
        try:
            scenario = load_scenario(layers=[parse_query(query)])
            state.values = scenario_to_values(scenario)
        except ScenarioError as exc:
            notice = "Ignored the link's scenario: " + "; ".join(
                f"{f} = {v!r}: {m}" for f, v, m in exc.problems
            )

    # --- header ---------------------------------------------------------------------------------------------
    with ui.header().classes("items-center justify-between bg-indigo-9 q-py-xs gap-2"):
        ui.label("dtsim").classes("text-h6")
        summary = ui.label().classes("text-body2 flex-1").props("data-testid=summary")
        ui.link("API docs", "/docs", new_tab=True).classes("text-white")

    with ui.row().classes("w-full items-start gap-4 flex-wrap q-pa-sm"):
        # --- inputs -----------------------------------------------------------------------------------------
        with ui.column().classes("gap-1").style("flex: 1 1 340px; max-width: 460px; min-width: 300px"):
            with ui.card().classes("w-full q-pa-sm"):
                with ui.row().classes("w-full gap-2 no-wrap"):
                    preset_select = (
                        ui.select(
                            {k: k for k in catalog.scenario_presets()},
                            label="Scenario preset",
                            value=None,
                        )
                        .classes("flex-1")
                        .props("data-testid=preset dense")
                    )
                    node_select = (
                        ui.select(
                            {k: n.name for k, n in catalog.nodes().items()},
                            label="Node preset",
                            value=None,
                        )
                        .classes("flex-1")
                        .props("data-testid=node-preset dense")
                    )
                preset_select.tooltip(
                    "Load a preset (catalog/presets.yaml): seed 000 §9 defaults, deployment "
                    "profiles, INTELLECT-1- and Covenant-72B-like runs."
                )
                node_select.tooltip("Fill the hardware from a node preset (catalog/nodes.yaml).")
            for title, inputs in GROUPS:
                with (
                    ui.expansion(title, value=title in ("Model and data", "Infrastructure", "Network"))
                    .classes("w-full dt-group")
                    .props("dense header-class=text-weight-bold")
                ):
                    for spec in inputs:
                        _make_input(ui, spec, state, widgets, unit_widgets, mode_widgets, lambda: refresh())

        # --- results --------------------------------------------------------------------------------------------
        with ui.column().classes("gap-2").style("flex: 2 1 360px; min-width: 300px"):
            error_card = ui.card().classes("w-full bg-red-1").props("data-testid=errors")
            error_card.visible = False
            with error_card:
                error_label = ui.label().classes("text-red-10 whitespace-pre-wrap")
            if notice:
                ui.notify(notice, type="warning", multi_line=True, timeout=8000)
            with ui.card().classes("w-full"):
                with ui.row().classes("items-center gap-2"):
                    mode_badge = (
                        ui.badge("", color="indigo").classes("text-subtitle1").props("data-testid=mode")
                    )
                    bottleneck_badge = ui.badge("", color="red-7").props("data-testid=bottleneck-badge")
                reason_label = ui.label().classes("text-caption text-grey-8").props("data-testid=mode_reason")
                with ui.row().classes("w-full gap-6 flex-wrap"):
                    for key, title in (
                        ("wall_clock_days", "Wall-clock (process D tokens)"),
                        ("effective_days", "η-adjusted (equivalent quality)"),
                    ):
                        with ui.column().classes("gap-0"):
                            ui.label(title).classes("text-caption")
                            out_labels["big_" + key] = (
                                ui.label().classes("text-h5").props(f"data-testid=big-{key}")
                            )
            with ui.row().classes("w-full gap-2 flex-wrap items-start"):
                for title, rows in RESULT_ROWS:
                    with ui.card().classes("q-pa-sm").style("flex: 1 1 260px"):
                        ui.label(title).classes("text-weight-bold")
                        with ui.grid(columns=2).classes("w-full gap-x-2 gap-y-0"):
                            for key, label, _fmt in rows:
                                ui.label(label).classes("dt-k text-body2")
                                out_labels[key] = (
                                    ui.label().classes("dt-v text-body2").props(f"data-testid={key}")
                                )
            with ui.card().classes("w-full q-pa-sm"):
                ui.label("One outer step: where the time goes").classes("text-weight-bold")
                breakdown = (
                    ui.echart(breakdown_chart(None))
                    .classes("w-full")
                    .style("height: 190px")
                    .props("data-testid=breakdown-chart")
                )
            with ui.card().classes("w-full q-pa-sm"):
                with ui.row().classes("items-center gap-2"):
                    ui.label("Sweep").classes("text-weight-bold")
                    sweep_select = (
                        ui.select(list(SWEEP_FIELDS), value=state.sweep_field, label="vary")
                        .props("dense data-testid=sweep-field")
                        .style("min-width: 180px")
                    )
                sweep_plot = (
                    ui.echart(sweep_chart("num_nodes", [], [], [], None))
                    .classes("w-full")
                    .style("height: 260px")
                    .props("data-testid=sweep-chart")
                )
            with ui.card().classes("w-full q-pa-sm"):
                ui.label("Warnings").classes("text-weight-bold")
                warnings_box = ui.column().classes("gap-1 w-full").props("data-testid=warnings")
            with ui.card().classes("w-full q-pa-sm"):
                with ui.row().classes("items-center gap-2 flex-wrap"):
                    ui.label("Compare").classes("text-weight-bold")
                    ui.button("Pin this scenario", on_click=lambda: pin()).props(
                        "dense outline data-testid=pin"
                    )
                    ui.button("Clear", on_click=lambda: unpin()).props("dense flat")
                compare_box = ui.column().classes("w-full").props("data-testid=compare")
            with ui.card().classes("w-full q-pa-sm"):
                ui.label("Share, export, import").classes("text-weight-bold")
                with ui.row().classes("w-full items-center gap-2 no-wrap"):
                    share_input = (
                        ui.input("Share link").props("readonly dense data-testid=share-url").classes("flex-1")
                    )
                    ui.button("Copy", on_click=lambda: copy_link()).props("dense data-testid=copy-link")
                with ui.row().classes("gap-2 flex-wrap"):
                    ui.button("Scenario YAML", on_click=lambda: export("yaml")).props("dense outline")
                    ui.button("Scenario JSON", on_click=lambda: export("json")).props("dense outline")
                    ui.button("Result JSON", on_click=lambda: export("result-json")).props("dense outline")
                    ui.button("Result CSV", on_click=lambda: export("result-csv")).props("dense outline")
                ui.upload(
                    label="Import a scenario file (YAML or JSON)",
                    auto_upload=True,
                    on_upload=lambda e: import_file(e),
                    max_file_size=1_000_000,
                ).props("accept=.yaml,.yml,.json dense data-testid=import").classes("w-full")
            result_json = ui.label().props("data-testid=result-json").style("display: none")

    # --- behaviour ----------------------------------------------------------------------------------------------
    def current_scenario() -> Scenario:
        return load_scenario(layers=[values_to_fields(state.values)])

    def refresh() -> None:
        if state.loading:
            return
        try:
            scenario = current_scenario()
            result = simulate(scenario)
        except ScenarioError as exc:
            error_label.text = "\n".join(f"{f} = {v!r}: {m}" for f, v, m in exc.problems)
            error_card.visible = True
            return
        error_card.visible = False
        state.result = result
        data = result.model_dump(mode="json")
        mode_badge.text = result.mode_label
        mode_badge.props(f"data-value={result.mode}")
        reason_label.text = result.mode_reason
        summary.text = (
            f"{result.mode_label} · {fmt_days(result.wall_clock_days)} wall-clock · "
            f"{fmt_days(result.effective_days)} η-adjusted"
        )
        share = result.breakdown_s.get(result.bottleneck) if result.bottleneck in result.breakdown_s else None
        bottleneck_badge.text = f"bottleneck: {OUTPUT_NAMES.get(result.bottleneck, result.bottleneck)}" + (
            f" ({share / result.outer_step_s:.0%})" if share and result.outer_step_s else ""
        )
        for key in ("wall_clock_days", "effective_days"):
            lab = out_labels["big_" + key]
            lab.text = fmt_days(data[key])
            lab.props(f"data-value={data[key]}")
        for _title, rows in RESULT_ROWS:
            for key, _label, fmt in rows:
                lab = out_labels[key]
                lab.text = fmt(data[key])
                lab.props(f"data-value={json.dumps(data[key])}")
        state.version += 1
        breakdown.options.clear()
        breakdown.options.update(breakdown_chart(result))
        breakdown.props(f"data-version={state.version}")
        breakdown.update()
        warnings_box.clear()
        with warnings_box:
            if not result.warnings:
                ui.label("none").classes("text-grey-7")
            for w in result.warnings:
                with ui.row().classes("no-wrap items-start gap-2"):
                    ui.badge(w.code, color="orange-8").props(f"data-testid=warning-{w.code}")
                    ui.label(w.message).classes("text-body2")
        result_json.text = json.dumps(data, sort_keys=True)
        update_sweep(scenario)
        update_compare()
        query_string = share_query(state.values)
        path = "/" + (f"?{query_string}" if query_string else "")
        share_input.value = path
        ui.run_javascript(
            f"history.replaceState(null, '', {json.dumps(path)});"
            f"document.querySelector('[data-testid=share-url] input')?.setAttribute('data-path', {json.dumps(path)});"
        )

    def update_sweep(scenario: Scenario) -> None:
        fname = state.sweep_field
        try:
            values = default_range(scenario, fname, 41).tolist()
            batch = sweep(scenario, fname, values)
        except ScenarioError:
            return
        days = [None if d != d else float(d) for d in batch["wall_clock_days"].tolist()]
        mfu = [None if m != m else float(m) for m in batch["global_mfu"].tolist()]
        from dtsim.analysis.sweep import current_value

        sweep_plot.options.clear()
        sweep_plot.options.update(sweep_chart(fname, values, days, mfu, current_value(scenario, fname)))
        sweep_plot.props(f"data-version={state.version}-{fname}")
        sweep_plot.update()

    def on_sweep_field(e: Any) -> None:
        state.sweep_field = e.value
        if state.result is not None:
            update_sweep(current_scenario())

    sweep_select.on_value_change(on_sweep_field)

    def update_compare() -> None:
        compare_box.clear()
        if state.pinned is None:
            with compare_box:
                ui.label("Pin a scenario to compare the current one with it.").classes("text-grey-7")
            return
        pinned_values, pinned = state.pinned
        current = state.result
        with compare_box:
            rows = []
            for k, v in state.values.items():
                if pinned_values.get(k) != v:
                    rows.append(
                        {"item": k, "pinned": str(pinned_values.get(k)), "current": str(v), "change": ""}
                    )
            a, b = pinned.model_dump(mode="json"), current.model_dump(mode="json")
            for k in COMPARE_KEYS:
                x, y = a.get(k), b.get(k)
                change = ""
                if (
                    isinstance(x, int | float)
                    and isinstance(y, int | float)
                    and not isinstance(x, bool)
                    and x
                ):
                    change = f"{(y - x) / abs(x):+.1%}"
                rows.append({"item": k, "pinned": _short(x), "current": _short(y), "change": change})
            ui.table(
                columns=[
                    {"name": c, "label": c, "field": c, "align": "left"}
                    for c in ("item", "pinned", "current", "change")
                ],
                rows=rows,
                row_key="item",
            ).props("dense flat data-testid=compare-table").classes("w-full")

    def pin() -> None:
        if state.result is not None:
            state.pinned = (dict(state.values), state.result)
            update_compare()

    def unpin() -> None:
        state.pinned = None
        update_compare()

    def copy_link() -> None:
        ui.run_javascript("navigator.clipboard && navigator.clipboard.writeText(location.href)")
        ui.notify("Link copied", timeout=1500)

    def export(kind: str) -> None:
        if kind == "yaml":
            ui.download(
                yaml.safe_dump(current_scenario().to_fields(), sort_keys=False).encode(), "scenario.yaml"
            )
        elif kind == "json":
            ui.download(json.dumps(current_scenario().to_fields(), indent=2).encode(), "scenario.json")
        elif state.result is not None and kind == "result-json":
            ui.download(state.result.model_dump_json(indent=2).encode(), "result.json")
        elif state.result is not None and kind == "result-csv":
            ui.download(result_csv(state.result).encode(), "result.csv")

    async def import_file(e: events.UploadEventArguments) -> None:
        text = await e.file.text()
        try:
            data = json.loads(text) if e.file.name.lower().endswith(".json") else yaml.safe_load(text)
            if not isinstance(data, dict):
                raise ScenarioError([("file", e.file.name, "must hold a mapping of scenario fields")])
            preset = data.pop("preset", None)
            scenario = load_scenario(preset=preset, layers=[data])
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            ui.notify(f"{e.file.name}: malformed file: {str(exc).splitlines()[0]}", type="negative")
            return
        except ScenarioError as exc:
            ui.notify(
                "; ".join(f"{f} = {v!r}: {m}" for f, v, m in exc.problems), type="negative", multi_line=True
            )
            return
        set_values(scenario_to_values(scenario))
        ui.notify(f"Imported {e.file.name}", type="positive")

    def set_values(values: dict[str, Any]) -> None:
        state.loading = True
        try:
            state.values = dict(values)
            for name, widget in widgets.items():
                spec = INPUTS[name]
                value = values.get(name)
                if spec.kind == "steps":
                    is_auto = isinstance(value, str)
                    mode_widgets[name].value = value if is_auto else "fixed"
                    widget.value = None if is_auto else value
                    widget.enabled = not is_auto
                elif spec.kind == "growth":
                    number, unit = _split_growth(value)
                    widget.value = number
                    unit_widgets[name].value = unit
                else:
                    widget.value = value
        finally:
            state.loading = False
        refresh()

    def on_preset(e: Any) -> None:
        if e.value:
            set_values(scenario_to_values(load_scenario(preset=e.value)))

    def on_node(e: Any) -> None:
        if not e.value:
            return
        node = catalog.nodes()[e.value]
        values = dict(state.values)
        values.update(
            gpu=node.gpu,
            gpus_per_node=node.gpu_count,
            pflops_per_node=node.pflops,
            vram_per_node_gb=node.vram_gb,
        )
        if node.precision:
            values["precision"] = node.precision
        set_values(values)

    preset_select.on_value_change(on_preset)
    node_select.on_value_change(on_node)
    set_values(state.values)


def _short(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _split_growth(text: Any) -> tuple[float, str]:
    """'1.37x/yr' → (1.37, 'x/yr'); other forms keep their own unit."""
    t = str(text).strip()
    for unit, suffixes in (
        ("%/yr", ("%/yr", "%")),
        ("OOM/yr", ("oom/yr", "oom")),
        ("x/yr", ("x/yr", "×/yr", "x")),
    ):
        for suffix in suffixes:
            if t.lower().endswith(suffix):
                return float(t[: -len(suffix)].strip()), unit
    return 10 ** parse_growth(t), "x/yr"


def _make_input(ui, spec: Input, state: PageState, widgets, unit_widgets, mode_widgets, refresh) -> None:
    name = spec.name
    value = state.values.get(name)

    def set_value(v: Any) -> None:
        state.values[name] = v
        refresh()

    bounds = BOUNDS.get(name, {})
    lo = bounds.get("ge", bounds.get("gt"))
    hi = bounds.get("le")
    if spec.kind in ("number", "int", "optional"):
        w = ui.number(
            spec.label,
            value=value,
            min=lo,
            max=hi,
            step=spec.step or (1 if spec.kind == "int" else None),
            on_change=lambda e: set_value(_number(e.value, spec.kind, name)),
        )
        w.props(f"dense data-testid={name}" + (" clearable" if spec.kind == "optional" else "")).classes(
            "w-full"
        )
    elif spec.kind == "select":
        w = ui.select(
            list(spec.options), label=spec.label, value=value, on_change=lambda e: set_value(e.value)
        )
        w.props(f"dense data-testid={name}").classes("w-full")
    elif spec.kind == "switch":
        w = ui.switch(spec.label, value=bool(value), on_change=lambda e: set_value(bool(e.value)))
        w.props(f"dense data-testid={name}")
    elif spec.kind == "steps":
        choices = ["fixed", "auto", "auto-quality"] if name == "inner_steps" else ["fixed", "auto"]
        with ui.row().classes("w-full no-wrap gap-2"):
            w = (
                ui.number(
                    spec.label,
                    value=None if isinstance(value, str) else value,
                    min=1,
                    max=bounds.get("le"),
                    step=1,
                )
                .classes("flex-1")
                .props(f"dense data-testid={name}")
            )
            mode = (
                ui.select(choices, value=value if isinstance(value, str) else "fixed")
                .props(f"dense data-testid={name}-mode")
                .style("min-width: 120px")
            )

        def on_steps(_e: Any = None) -> None:
            w.enabled = mode.value == "fixed"
            if mode.value == "fixed":
                if w.value is None:
                    return
                set_value(_number(w.value, "int", name))
            else:
                set_value(mode.value)

        w.on_value_change(on_steps)
        mode.on_value_change(on_steps)
        mode_widgets[name] = mode
    elif spec.kind == "growth":
        number, unit = _split_growth(value)
        with ui.row().classes("w-full no-wrap gap-2"):
            w = ui.number(spec.label, value=number).classes("flex-1").props(f"dense data-testid={name}")
            u = (
                ui.select(list(GROWTH_UNITS), value=unit)
                .props(f"dense data-testid={name}-unit")
                .style("min-width: 90px")
            )

        def on_growth(_e: Any = None) -> None:
            if w.value is None:
                return
            set_value(f"{w.value:g}{u.value}" if u.value != "OOM/yr" else f"{w.value:g} OOM/yr")

        w.on_value_change(on_growth)
        u.on_value_change(on_growth)
        unit_widgets[name] = u
    else:  # pragma: no cover - the GROUPS table only uses the kinds above
        raise ValueError(spec.kind)
    w.tooltip(spec.tip)
    widgets[name] = w


def _number(value: Any, kind: str, name: str) -> Any:
    if value is None:
        return None
    if kind == "int" and float(value) == int(value):
        return int(value)
    return float(value)


def mount(app: FastAPI) -> None:
    """Serve the UI at / on the given FastAPI app (NiceGUI shares the app and its event loop)."""
    from nicegui import ui

    @ui.page("/", title="dtsim")
    def index(request: Request) -> None:
        build_page(dict(request.query_params))

    ui.run_with(app, title="dtsim", favicon="📉", show_welcome_message=False, reconnect_timeout=10.0)
