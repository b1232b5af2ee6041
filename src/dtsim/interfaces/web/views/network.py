"""The network view: `dtsim collective` (the α-β time of one collective, and its bus bandwidth over
message sizes) and `dtsim fabric` (the scale-across fabric a cluster spread over datacenters needs).

Both answers are the commands' `--json` objects, from the same calls (`dtsim.collective`,
`dtsim.fabric`) with the same unit conversions as the CLI's options."""

from __future__ import annotations

from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces.web.charts import framed
from dtsim.interfaces.web.formview import Field, fmt, form_page, key_values

PATH = "/network"
LABEL = "Network"
TITLE = "collective and fabric"

COLLECTIVE_FIELDS = (
    Field("op", "Operation", "select", "allreduce", options=()),
    Field("algorithm", "Algorithm (all-reduce)", "select", "ring", options=()),
    Field("ranks", "Ranks (GPUs)", "int", 8),
    Field("size_mb", "Message size (MB, 10^6 bytes)", "number", 1000.0),
    Field("fabric", "Fabric (catalog/fabrics.yaml)", "select", None, optional=True),
    Field("bandwidth_gbs", "Bus bandwidth (GB/s)", "number", None, optional=True, tip="Without a fabric."),
    Field("latency_us", "Per-step latency (µs)", "number", None, optional=True, tip="Without a fabric."),
    Field("hop_km", "wan-ring: fibre per ring step (km)", "number", 0.0),
    Field("torus", "TPU slice (e.g. 4x4x4, ICI fabrics)", "text", None, optional=True),
)
FABRIC_FIELDS = (
    Field("cluster_power_gw", "Cluster power (GW)", "number", 10.0),
    Field("datacenters", "Datacenters (count, at least 2)", "int", 23),
    Field("pod_power_kw", "Pod power (kW)", "number", 200.0),
    Field("pod_pflops", "Pod peak (PFLOP/s)", "number", 360.0),
    Field("params_t", "Parameters (T)", "number", 72.0),
    Field("tokens_t", "Training tokens (T)", "number", 2000.0),
    Field("bits", "Gradient value size (bits)", "number", 16.0),
    Field("train_days", "Training days", "number", 100.0),
    Field("network_fraction", "Network share of a step (fraction, 0–1, below 1)", "number", 0.05),
    Field(
        "sync_budget_ms",
        "Sync budget (ms; blank: share × batch time, the thesis's 250 ms at its own batch)",
        "number",
        None,
        optional=True,
    ),
    Field("ring_km", "Ring length (km)", "number", 4800.0),
    Field("hop_us", "Latency per hop (µs)", "number", 28.0),
    Field("critical_batch_k", "Critical batch k (B = k·√tokens)", "number", 25.27),
)
# busbw chart: message sizes from 1 KB to 16 GB, a factor of 4 apart
CHART_SIZES_MB = tuple(1e-3 * 4**i for i in range(13))


def fields() -> tuple[Field, ...]:
    """The inputs, with the catalog's choices filled in."""
    from dataclasses import replace

    from dtsim.models.network import ALLREDUCE_ALGORITHMS, OPS

    choices = {"op": OPS, "algorithm": ALLREDUCE_ALGORITHMS, "fabric": tuple(catalog.fabrics())}
    return (
        tuple(replace(f, options=choices.get(f.name, f.options)) for f in COLLECTIVE_FIELDS) + FABRIC_FIELDS
    )


def run_collective(v: dict[str, Any], size_mb: float | None = None) -> dict[str, Any]:
    """`dtsim collective --json` for these inputs (the CLI's own checks and unit conversions)."""
    from dtsim.interfaces.operations import collective_result

    size_mb = v["size_mb"] if size_mb is None else size_mb
    r = collective_result(
        v["op"],
        v["algorithm"],
        v["ranks"],
        size_mb,
        v.get("fabric"),
        v.get("bandwidth_gbs"),
        v.get("latency_us"),
        v["hop_km"],
        v.get("torus"),
    )
    return r.as_dict()


def busbw_curve(v: dict[str, Any]) -> list[dict[str, float]]:
    """The collective at each chart size: time and nccl-tests bus bandwidth (algbw × nccl_bus_factor)."""
    from dtsim.models.network import nccl_bus_factor

    factor = nccl_bus_factor(v["op"], v["ranks"])
    out = []
    for mb in CHART_SIZES_MB:
        r = run_collective(v, mb)
        algbw = r["algbw_gb_s"]
        out.append(
            {"size_mb": mb, "time_s": r["time_s"], "busbw_gb_s": None if algbw is None else algbw * factor}
        )
    return out


def run_fabric(v: dict[str, Any]) -> dict[str, Any]:
    """`dtsim fabric --json` for these inputs, by the CLI's own functions (this view's fields are the
    CLI's inputs, so errors name them as the CLI does)."""
    from dtsim.interfaces.operations import fabric_json, fabric_plan

    return fabric_json(fabric_plan(v))


def compute(v: dict[str, Any]) -> dict[str, Any]:
    """Both answers; a problem in either is reported (both panels' problems together)."""
    problems: list[tuple[str, Any, str]] = []
    out: dict[str, Any] = {}
    for key, fn in (("collective", run_collective), ("fabric", run_fabric)):
        try:
            out[key] = fn(v)
        except ScenarioError as exc:
            problems += exc.problems
    if problems:
        raise ScenarioError(problems)
    out["busbw_curve"] = busbw_curve(v)
    return out


def busbw_chart(curve: list[dict[str, float]], rated: float, op: str) -> dict[str, Any]:
    """Bus bandwidth (GB/s) over message size (log axis), with the rated bus bandwidth as a line."""
    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "axis"},
            "grid": {"left": 60, "right": 20, "top": 30, "bottom": 45},
            "xAxis": {"type": "log", "name": "message size (MB)", "nameLocation": "middle", "nameGap": 28},
            "yAxis": {"type": "value", "name": "bus bandwidth (GB/s)"},
            "legend": {"top": 0},
            "series": [
                {
                    "name": f"{op} busbw (nccl-tests convention)",
                    "type": "line",
                    "data": [[p["size_mb"], p["busbw_gb_s"]] for p in curve],
                },
                {
                    "name": "link bus bandwidth",
                    "type": "line",
                    "lineStyle": {"type": "dashed"},
                    "symbol": "none",
                    "data": [[curve[0]["size_mb"], rated], [curve[-1]["size_mb"], rated]],
                },
            ],
        }
    )


def render(ui: Any, answer: dict[str, Any], v: dict[str, Any]) -> None:
    c, p = answer["collective"], answer["fabric"]
    with ui.card().classes("w-full q-pa-sm").props("data-testid=collective-panel"):
        ui.label("Collective (dtsim collective)").classes("text-weight-bold")
        ui.label(
            f"{c['op']} ({c['algorithm']}) of {v['size_mb']:g} MB over {c['ranks']} ranks: {c['time_s'] * 1e3:,.3f} ms"
        ).classes("text-h6").props("data-testid=collective-headline")
        key_values(
            ui,
            [
                ("Time (ms)", fmt(c["time_s"] * 1e3), "collective-time-ms"),
                ("Algorithm", c["algorithm"], "collective-algorithm"),
                ("Bus bandwidth of the links (GB/s)", fmt(c["bus_bandwidth_gb_s"]), "collective-busbw"),
                ("Algorithm bandwidth, size / time (GB/s)", fmt(c["algbw_gb_s"]), "collective-algbw"),
                ("Sent per rank (MB)", fmt(c["bytes_sent_per_rank"] / 1e6), "collective-per-rank"),
                ("Latency per step (µs)", fmt(c["latency_s"] * 1e6), "collective-latency"),
                ("TPU slice", c["torus"] or "—", "collective-torus"),
            ],
        )
        ui.echart(busbw_chart(answer["busbw_curve"], c["bus_bandwidth_gb_s"], c["op"])).classes(
            "w-full"
        ).style("height: 260px").props("data-testid=busbw-chart")
    with ui.card().classes("w-full q-pa-sm").props("data-testid=fabric-panel"):
        ui.label("Scale-across fabric (dtsim fabric, Camilli 2025 ch. 3)").classes("text-weight-bold")
        bw = p["min_bandwidth_bits_s"]
        ui.label(
            f"Minimum WAN bandwidth per datacenter: {bw / 1e15:,.2f} Pbit/s"
            if bw is not None
            else "The sync budget is spent on latency alone: no bandwidth suffices."
        ).classes("text-h6" + ("" if bw is not None else " text-red-9")).props("data-testid=fabric-headline")
        for w in p["warnings"]:
            if w["code"] == "SCHEDULE_NOT_MET":
                ui.label(w["message"]).classes("text-red-9").props("data-testid=fabric-warning")
        key_values(ui, [(k, fmt(x), f"fabric-{k}") for k, x in p.items() if k != "warnings"])


build = form_page(
    __name__,
    title="Network: collective and fabric",
    intro="α-β time of one collective (Data Parallelism from Associativity; Camilli 2025 §3.5) and the "
    "scale-across fabric of a cluster spread over datacenters (Camilli 2025 ch. 3).",
    sections=(
        ("Collective", tuple(f.name for f in COLLECTIVE_FIELDS)),
        ("Fabric", tuple(f.name for f in FABRIC_FIELDS)),
    ),
)
