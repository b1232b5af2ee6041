"""How the page words a result: number formats, the result cards' rows, the compare table and the
CSV export. Pure functions of a `Result`, no widgets."""

from __future__ import annotations

import csv
import io
from typing import Any

from dtsim.interfaces.formats import days_text, duration
from dtsim.interfaces.web.fields import tip_text
from dtsim.models.decentralized.result import Result

OUTPUT_NAMES = {
    "compute": "compute",
    "latency": "latency",
    "global_sync": "global sync",
    "regional_sync": "regional sync",
    "pipeline_comm": "pipeline hand-offs",
    "bubble": "bubble",
    "straggler": "straggler wait",
    "failures": "lost to failures",
}
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
# Result fields that are not one flat value (the CSV writes the breakdown and warnings on their own rows).
CSV_SKIPPED = (
    "scenario",
    "warnings",
    "details",
    "breakdown_s",
    "max_parameters_b",
    "cost_sources",
    "assumptions_overridden",
)


def fmt_days(x: float | None) -> str:
    """A result's days as the page shows them (formats.days_text: below two days in hours, minutes or
    seconds, so a short run never reads "0.0 days")."""
    return days_text(x)


def fmt_pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def fmt_sci(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def fmt_int(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def fmt_usd(x: float | None) -> str:
    return "—" if x is None else f"${x:,.0f}"


def fmt_short(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


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
            ("compute_step_s", "Compute per step", duration),
            ("inner_step_s", "Inner step", duration),
            ("sync_s", "Global sync", duration),
            ("regional_sync_s", "Regional sync", duration),
            ("outer_step_s", "Outer step", duration),
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
            ("wall_clock_mfu", "MFU (wall-clock)", fmt_pct),
            ("global_mfu", "η-adjusted MFU (MIRI's Global MFU)", fmt_pct),
            ("global_hfu", "η-adjusted HFU", fmt_pct),
            ("model_flop", tip_text("Model FLOP ({flops_per_param_token}·P·D)"), fmt_sci),
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


def summary_text(r: Result) -> str:
    """The header line: mode, wall-clock and η-adjusted days."""
    return (
        f"{r.mode_label} · {fmt_days(r.wall_clock_days)} wall-clock · {fmt_days(r.effective_days)} η-adjusted"
    )


def bottleneck_text(r: Result) -> str:
    """The bottleneck badge: its name and, when known, its share (of the outer step's expected wall time,
    failures included: Result.bottleneck_share)."""
    share = r.bottleneck_share
    return f"bottleneck: {OUTPUT_NAMES.get(r.bottleneck, r.bottleneck)}" + (
        f" ({share:.0%})" if share is not None and r.bottleneck != "memory" else ""
    )


def compare_rows(
    pinned_values: dict[str, Any], values: dict[str, Any], pinned: Result, current: Result
) -> list[dict[str, str]]:
    """The compare table: the inputs that differ, then the key outputs with their relative change."""
    rows = [
        {"item": k, "pinned": str(pinned_values.get(k)), "current": str(v), "change": ""}
        for k, v in values.items()
        if pinned_values.get(k) != v
    ]
    a, b = pinned.model_dump(mode="json"), current.model_dump(mode="json")
    for k in COMPARE_KEYS:
        x, y = a.get(k), b.get(k)
        change = ""
        if isinstance(x, int | float) and isinstance(y, int | float) and not isinstance(x, bool) and x:
            change = f"{(y - x) / abs(x):+.1%}"
        rows.append({"item": k, "pinned": fmt_short(x), "current": fmt_short(y), "change": change})
    return rows


def result_csv(r: Result) -> str:
    """The flat outputs of a result as a two-column CSV (name, value)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["output", "value"])
    data = r.model_dump(mode="json")
    for key, value in data.items():
        if key in CSV_SKIPPED:
            continue
        writer.writerow([key, "" if value is None else value])
    for key, value in data["breakdown_s"].items():
        writer.writerow([f"breakdown_s.{key}", "" if value is None else value])
    for w in data["warnings"]:
        writer.writerow([f"warning.{w['code']}", w["message"]])
    return buf.getvalue()
