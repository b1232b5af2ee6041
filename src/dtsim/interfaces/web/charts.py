"""The page's two ECharts: one outer step's time breakdown and the sweep of one field. Each returns
the chart's options as a plain dict, so they are testable without a browser."""

from __future__ import annotations

from typing import Any

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


def _bar(name: str, color: str, data: list[float], **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "bar", "stack": "t", "color": color, "data": data, **extra}


def breakdown_chart(r: Result | None) -> dict[str, Any]:
    """Stacked bars of one outer step (what the wall clock sees) and of the sync (hidden + exposed),
    drawn on one time axis so the overlap with compute is visible."""
    b = r.breakdown_s if r else {}
    series = [
        _bar(OUTPUT_NAMES[key], COLORS[key], [round(b.get(key) or 0.0, 6), 0]) for key in BREAKDOWN_KEYS
    ]
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
    return {
        "animation": False,
        "tooltip": {"trigger": "axis", "axisPointer": {"type": "shadow"}},
        # every entry visible at once, wrapping onto more lines (a "scroll" legend paged them)
        "legend": {"type": "plain", "bottom": 0, "left": "center"},
        "grid": {"left": 90, "right": 20, "top": 10, "bottom": 90},
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
    """Wall-clock days (log axis) and global MFU over one field's range, the current value marked."""
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
