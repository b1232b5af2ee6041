"""The page's two ECharts: one outer step's time breakdown and the sweep of one field. Each returns
the chart's options as a plain dict, so they are testable without a browser."""

from __future__ import annotations

from typing import Any

from dtsim.interfaces.formats import DAYS_FROM_S, HOURS_FROM_S, MINUTES_FROM_S, SECONDS_PER_DAY
from dtsim.interfaces.web.results import OUTPUT_NAMES
from dtsim.models.decentralized.result import Result
from dtsim.models.decentralized.strategies.base import BREAKDOWN_KEYS

COLORS = {
    "compute": "#2e7d32",
    "latency": "#8e24aa",
    "global_sync": "#c62828",
    "regional_sync": "#ef6c00",
    "pipeline_comm": "#1565c0",
    "bubble": "#9e9e9e",
    "straggler": "#6d4c41",
    "failures": "#37474f",
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


def framed(options: dict[str, Any]) -> dict[str, Any]:
    """A chart's options with its axes' names and labels kept inside the chart: ECharts 6 shrinks the
    grid until every axis name and tick label lies within `grid.outerBounds` (a y axis's title above
    its top, a long last tick label, rotated category labels, a name at an axis's end), which the
    charts' fixed margins alone did not (titles were cut at the top and right edges). The bounds are
    the canvas less a few pixels, and less a top legend's or title's row, so a title never runs under
    them. Every chart of the page and the views is built through this one function."""
    legend = options.get("legend")
    top_row = (isinstance(legend, dict) and legend.get("show", True) and "bottom" not in legend) or (
        "title" in options
    )
    grid = dict(options.get("grid") or {})
    grid.setdefault("outerBounds", {"left": 4, "right": 10, "top": 30 if top_row else 4, "bottom": 4})
    grid.setdefault("outerBoundsContain", "all")
    return {**options, "grid": grid}


def _bar(name: str, color: str, data: list[float], **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "bar", "stack": "t", "color": color, "data": data, **extra}


def breakdown_chart(r: Result | None) -> dict[str, Any]:
    """Stacked bars of one outer step (what the wall clock sees) and of the sync (hidden + exposed),
    drawn on one time axis so the overlap with compute is visible."""
    b = r.breakdown_s if r else {}
    series = [
        _bar(OUTPUT_NAMES[key], COLORS[key], [round(b.get(key) or 0.0, 6), 0]) for key in BREAKDOWN_KEYS
    ]
    lost = r.details.get("failure_lost_s") if r else None  # expected, per outer step (null: never ends)
    if lost:
        series.append(_bar(OUTPUT_NAMES["failures"], COLORS["failures"], [round(lost, 6), 0]))
    hidden = (r.hidden_sync_s or 0.0) if r else 0.0
    series.append(
        _bar(
            "sync hidden under compute",
            "#ef9a9a",
            [0, round(hidden, 6)],
            itemStyle={
                "decal": {"symbol": "rect", "dashArrayX": [1, 0], "dashArrayY": [2, 3], "rotation": 0.6}
            },
        )
    )
    exposed = sum((b.get(k) or 0.0) for k in ("global_sync", "regional_sync")) if r else 0.0
    series.append(_bar("sync exposed", "#c62828", [0, round(exposed, 6)]))
    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "axis", "axisPointer": {"type": "shadow"}},
            # every entry visible at once, wrapping onto more lines (a "scroll" legend paged them)
            "legend": {"type": "plain", "bottom": 0, "left": "center"},
            "grid": {"left": 90, "right": 20, "top": 10, "bottom": 90},
            "xAxis": {"type": "value", "name": "seconds", "nameLocation": "middle", "nameGap": 22},
            "yAxis": {"type": "category", "data": ["outer step", "sync"], "inverse": True},
            "series": series,
        }
    )


def time_unit(days: list[float | None]) -> tuple[str, float]:
    """The unit the sweep chart draws its times in and how many of it make a day: days when the
    longest time is two days or more, else hours, minutes or seconds (formats.duration's thresholds),
    so a short run's curve reads in its own unit (a 10-million-node run: minutes, not 0.003 days)."""
    top = max((d for d in days if d is not None and d == d and d > 0), default=None)
    if top is None or top * SECONDS_PER_DAY >= DAYS_FROM_S:
        return "days", 1.0
    if top * SECONDS_PER_DAY >= HOURS_FROM_S:
        return "hours", 24.0
    if top * SECONDS_PER_DAY >= MINUTES_FROM_S:
        return "minutes", 1440.0
    return "seconds", SECONDS_PER_DAY


def sweep_chart(
    field_name: str,
    values: list[float],
    days: list[float | None],
    mfu: list[float | None],
    current: float | None,
) -> dict[str, Any]:
    """Wall-clock time (log axis, in `time_unit`'s unit) and global MFU over one field's range, the current
    value marked."""
    unit, per_day = time_unit(days)
    times = [None if y is None else y * per_day for y in days]
    log_x = field_name not in ("mfu", "latency_ms") or (
        values and min(values) > 0 and max(values) / min(values) > 20
    )
    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "axis"},
            "legend": {"bottom": 0, "data": [f"wall-clock {unit}", "global MFU"]},
            "grid": {"left": 60, "right": 60, "top": 20, "bottom": 60},
            "xAxis": {
                "type": "log" if log_x else "value",
                "name": field_name,
                "nameLocation": "middle",
                "nameGap": 26,
            },
            "yAxis": [
                {"type": "log", "name": unit},
                {"type": "value", "name": "MFU %", "min": 0},
            ],
            "series": [
                {
                    "name": f"wall-clock {unit}",
                    "type": "line",
                    "showSymbol": False,
                    "color": "#1565c0",
                    "data": [[x, y] for x, y in zip(values, times, strict=True) if y is not None and y > 0],
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
                    "data": [
                        [x, round(100 * y, 4)] for x, y in zip(values, mfu, strict=True) if y is not None
                    ],
                },
            ],
        }
    )
