"""The `/limits` view: Erdil & Schneider-Joseph 2024's utilization curve (`dtsim limits curve`) and the
cluster for a target compute (`dtsim limits search`) on a hardware preset or a custom chip.

Every number comes from the functions the CLI calls (dtsim.models.limits: `curve`, `cluster_size`,
`limits_point`, `linear_scaling_stop`; the CLI's own input checks and hardware overrides); the binding
term of each point from models/limits/binding.py. The reference implementation's curve for the same
settings (catalog/limits_reference.yaml) is drawn beside dtsim's when one exists.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict
from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces.web.charts import framed
from dtsim.interfaces.web.viewkit import KitView, Latest, ViewKit, choice, flag, number, problems_text
from dtsim.interfaces.web.views import SHARED_KEYS

PATH = "/limits"
LABEL = "Limits"
TITLE = "frontier limits"

SCALINGS = ("default", "deepseek", "fixed")
MEMORIES = ("per-gpu", "aggregate", "per-gpu-activations")
DEFAULTS: dict[str, Any] = {
    "gpu": "h100-sxm",
    "sparse": False,
    "scaling": "default",
    "months": 3.0,
    "memory": "per-gpu",
    "level_bandwidth": "",
    "level_latency_us": "",
    "peak_tflops": None,
    "hbm_tb_s": None,
    "memory_gb": None,
    "compute": "1e26",
}
KEYS = tuple(DEFAULTS)
BINDING_COLORS = {
    "compute": "#2e7d32",
    "tp_pp_comm": "#1565c0",
    "bubble": "#9e9e9e",
    "dp_comm": "#c62828",
    "latency": "#8e24aa",
}


def hardware_choices() -> dict[str, str]:
    """The limits presets (catalog/limits.yaml) and the catalog GPUs the GEMM model covers."""
    from dtsim.models.limits.hardware import scenarios

    out = {k: f"{k} — {hw.name}" for k, hw in scenarios().items()}
    for k, g in catalog.gpus().items():
        if g.micro is not None and not g.micro.systolic and k not in out:
            out[k] = f"{k} — {g.name} (nodes of 8)"
    return out


def parse_params(query: dict[str, Any]) -> dict[str, Any]:
    """The view's inputs from a share link's query or an uploaded file (missing keys: the defaults), or
    a ScenarioError naming the field."""
    unknown = sorted(set(query) - set(KEYS) - set(SHARED_KEYS))
    if unknown:
        raise ScenarioError(
            [(unknown[0], query[unknown[0]], "is not an input here; inputs: " + ", ".join(KEYS))]
        )
    p = dict(DEFAULTS)
    p["gpu"] = choice(query, "gpu", DEFAULTS["gpu"], list(hardware_choices()))
    p["sparse"] = flag(query, "sparse")
    p["scaling"] = choice(query, "scaling", "default", SCALINGS)
    p["memory"] = choice(query, "memory", "per-gpu", MEMORIES)
    p["months"] = number(query, "months", 3.0, 1e-6, 1200)
    for key in ("level_bandwidth", "level_latency_us", "compute"):
        raw = query.get(key)
        p[key] = DEFAULTS[key] if raw is None else str(raw).strip()
    p["peak_tflops"] = number(query, "peak_tflops", None, 1e-3, 1e9)
    p["hbm_tb_s"] = number(query, "hbm_tb_s", None, 1e-6, 1e6)
    p["memory_gb"] = number(query, "memory_gb", None, 1e-3, 1e7)
    return p


def levels(p: dict[str, Any], key: str) -> list[float] | None:
    """A per-level list ('9e11,1e11') as numbers, None when empty, or a ScenarioError naming the field."""
    text = str(p.get(key) or "").strip()
    if not text:
        return None
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise ScenarioError(
            [(key, text, "must be numbers separated by commas, one per network level")]
        ) from None
    if not all(math.isfinite(v) for v in values):
        raise ScenarioError([(key, text, "every level needs a finite number")])
    return values


def compute(p: dict[str, Any]) -> dict[str, Any]:
    """The curve, its binding terms, where linear scaling stops, the reference curve and the search's
    answer for `p` (the view's inputs): what the view shows, as JSON. `curve` is `dtsim limits curve
    --json`'s list and `search` `dtsim limits search --json`'s object (interfaces/operations.py, the
    functions the CLI calls)."""
    from dtsim.interfaces.operations import curve_payload, limits_curve, limits_search
    from dtsim.models.limits.binding import TERMS, binding, largest_overhead, step_terms
    from dtsim.models.limits.curve import linear_scaling_stop

    if p.get("months") in (None, ""):
        raise ScenarioError([("months", None, "give the time limit in months (> 0 and ≤ 1200)")])
    p = parse_params(p)
    target = None
    if p["compute"]:
        try:
            target = float(p["compute"])
        except ValueError:
            raise ScenarioError([("compute", p["compute"], "must be a number of FLOP, e.g. 1e26")]) from None
    chip = {k: p[k] for k in ("peak_tflops", "hbm_tb_s", "memory_gb")}
    common = {"sparse": p["sparse"], "scaling": p["scaling"], "months": p["months"], "memory": p["memory"]}
    (hw,), series = limits_curve(
        [p["gpu"]],
        level_bandwidth=levels(p, "level_bandwidth"),
        level_latency_us=levels(p, "level_latency_us"),
        **common,
        **chip,
    )
    points = series[0][1]
    stop = linear_scaling_stop(points, hw)
    out: dict[str, Any] = {
        "inputs": dict(p),
        "hardware": hw.name,
        "curve": curve_payload(series),
        "binding": [binding(pt) for pt in points],
        "largest_overhead": [largest_overhead(pt) for pt in points],
        "terms_months": [{k: step_terms(pt)[k] for k in TERMS} for pt in points],
        "linear_scaling_stop": None if stop is None else asdict(stop),
        "reference": reference_curve(p),
        "search": None,
    }
    if target is not None:
        found = limits_search(target, gpu=p["gpu"], **common, **chip)
        out["search"] = found.payload
        if found.point is not None:
            out["search_binding"] = binding(found.point)
    return out


@functools.cache
def _reference_table() -> dict[str, Any]:
    """catalog/limits_reference.yaml, read once per process (it does not change while the server runs)."""
    return catalog.load_table("limits_reference.yaml")


def reference_curve(p: dict[str, Any]) -> dict[str, Any] | None:
    """The reference implementation's curve for these settings (catalog/limits_reference.yaml): only
    for an unmodified preset it was run on, at its 3 months; None otherwise."""
    custom = any(
        p[k] for k in ("level_bandwidth", "level_latency_us", "peak_tflops", "hbm_tb_s", "memory_gb")
    )
    table = _reference_table()
    if custom or p["months"] != table["months"]:
        return None
    for c in table["curves"]:
        if (c["gpu"], c["sparse"], c["scaling"]) == (p["gpu"], p["sparse"], p["scaling"]):
            return {"setting": c["setting"], "group": c["group"], "points": c["points"]}
    return None


def fmt(x: float | None, spec: str = ".3g") -> str:
    return "—" if x is None else format(x, spec)


def chart(data: dict[str, Any] | None) -> dict[str, Any]:
    """Utilization against training compute: dtsim's curve (points coloured by the binding term of the
    step time), the reference implementation's points, the linear-scaling threshold and the search's
    answer."""
    from dtsim.models.limits.binding import TERM_NAMES

    series: list[dict[str, Any]] = []
    if data:
        pts = data["curve"]
        series.append(
            {
                "name": "dtsim curve",
                "type": "line",
                "color": "#455a64",
                "showSymbol": False,
                "data": [[q["training_flop"], q["utilization"]] for q in pts],
                "markLine": {
                    "symbol": "none",
                    "label": {"formatter": "linear scaling stops", "position": "insideEndTop"},
                    "lineStyle": {"type": "dashed", "color": "#999"},
                    "data": [{"yAxis": data["linear_scaling_stop"]["threshold_utilization"]}]
                    if data["linear_scaling_stop"]
                    else [],
                },
            }
        )
        for term, name in TERM_NAMES.items():
            items = [
                {
                    "value": [q["training_flop"], q["utilization"]],
                    "name": f"d_model {q['d_model']}: {q['n_gpus']:,} GPUs, {q['months']:.2f} months, "
                    f"${q['capital_cost_usd']:.3g}, {q['energy_kwh'] / 1e6:.3g} GWh; "
                    f"largest overhead {TERM_NAMES[data['largest_overhead'][i]]}",
                }
                for i, q in enumerate(pts)
                if data["binding"][i] == term
            ]
            if items:
                series.append(
                    {
                        "name": f"bound by {name}",
                        "type": "scatter",
                        "color": BINDING_COLORS[term],
                        "symbolSize": 8,
                        "data": items,
                    }
                )
        ref = data["reference"]
        if ref:
            series.append(
                {
                    "name": f"reference implementation ({ref['setting']})",
                    "type": "scatter",
                    "symbol": "diamond",
                    "symbolSize": 7,
                    "color": "#ff8f00",
                    "data": [[x, y] for x, y, _n in ref["points"]],
                }
            )
        s = data["search"]
        if s and s["found"]:
            series.append(
                {
                    "name": "search answer",
                    "type": "scatter",
                    "symbol": "pin",
                    "symbolSize": 26,
                    "color": "#d81b60",
                    "data": [
                        {
                            "value": [s["training_flop"], s["utilization"]],
                            "name": f"{s['n_gpus']:,} GPUs, {s['months']:.2f} months",
                        }
                    ],
                }
            )
    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "item"},
            "legend": {"type": "scroll", "bottom": 0},
            "grid": {"left": 60, "right": 20, "top": 20, "bottom": 70},
            "xAxis": {
                "type": "log",
                "name": "training compute (FLOP)",
                "nameLocation": "middle",
                "nameGap": 26,
            },
            "yAxis": {"type": "value", "name": "utilization", "min": 0, "max": 1},
            "series": series,
        }
    )


TABLE_COLUMNS = (
    ("d_model", "d_model"),
    ("flop", "FLOP"),
    ("utilization", "util"),
    ("n_gpus", "GPUs"),
    ("months", "months"),
    ("layout", "DP×TPm×TPff×PP×EP"),
    ("binding", "binding"),
    ("overhead", "largest overhead"),
    ("gpu_hours", "GPU-hours"),
    ("cost", "GPU cost $"),
    ("energy", "GWh"),
)


def table_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    from dtsim.models.limits.binding import TERM_NAMES

    return [
        {
            "d_model": q["d_model"],
            "flop": f"{q['training_flop']:.3g}",
            "utilization": f"{q['utilization']:.3f}",
            "n_gpus": f"{q['n_gpus']:,}",
            "months": f"{q['months']:.2f}",
            "layout": f"{q['dp']}×{q['tp_model']}×{q['tp_ff']}×{q['pp']}×{q['ep']}",
            "binding": TERM_NAMES[data["binding"][i]],
            "overhead": TERM_NAMES[data["largest_overhead"][i]],
            "gpu_hours": f"{q['gpu_hours']:.3g}",
            "cost": f"{q['capital_cost_usd']:.3g}",
            "energy": f"{q['energy_kwh'] / 1e6:.3g}",
        }
        for i, q in enumerate(data["curve"])
    ]


def search_text(data: dict[str, Any]) -> str:
    s = data["search"]
    if s is None:
        return "Give a training compute to find the smallest cluster that trains it in time."
    if not s["found"]:
        return f"{s['training_flop']:.3g} FLOP (d_model {s['d_model']}): {s['reason']}."
    from dtsim.models.limits.binding import TERM_NAMES

    return (
        f"{s['training_flop']:.3g} FLOP run (d_model {s['d_model']}, {s['layers']} layers, E = {s['sparsity']}, "
        f"batch {s['batch_tokens']:,} tokens): {s['n_gpus']:,} GPUs, {s['months']:.2f} months, utilization "
        f"{s['utilization']:.3f}; layout DP {s['dp']} × TP {s['tp_model']}×{s['tp_ff']} × PP {s['pp']} "
        f"(v = {s['pp_interleaving']}, m = {s['microbatches']}, {s['schedule']}) × EP {s['ep']}; bound by "
        f"{TERM_NAMES[data['search_binding']]}; {s['gpu_hours']:.3g} GPU-hours, GPUs' purchase "
        f"${s['capital_cost_usd']:,.0f}, {s['energy_kwh'] / 1e6:,.3g} GWh."
        + (
            " (The search, as `dtsim limits search`, runs on the preset's network: the per-level overrides "
            "change the curve only.)"
            if data["inputs"]["level_bandwidth"] or data["inputs"]["level_latency_us"]
            else ""
        )
    )


def restore(query: dict[str, str]) -> tuple[dict[str, Any], str | None]:
    """The inputs of a share link and a notice when some cannot be used. A `gpu` the limits model has
    no hardware for (carried from another view: a TPU, a GPU without GEMM constants) is dropped alone,
    the link's other inputs kept; any other problem keeps the defaults."""
    try:
        return parse_params(query), None
    except ScenarioError as exc:
        if exc.problems[0][0] == "gpu":
            try:
                rest = {k: v for k, v in query.items() if k != "gpu"}
                return parse_params(rest), f"Using {DEFAULTS['gpu']}: " + problems_text(exc, "; ")
            except ScenarioError:
                pass
        return dict(DEFAULTS), "Ignored the link's inputs: " + problems_text(exc, "; ")


class LimitsView(KitView):
    def __init__(self, ui: Any, query: dict[str, str], shell: Any) -> None:
        self.ui, self.shell = ui, shell
        # the shared keys this view does not use, handed on to the other views
        self.carried = {k: v for k, v in query.items() if k in SHARED_KEYS and k not in KEYS}
        self.params, notice = restore(query)
        self.widgets: dict[str, Any] = {}
        self.latest = Latest(compute, lambda: (dict(self.params),), self.accept, self.show_error)
        with ui.row().classes("w-full items-start gap-4 flex-wrap q-pa-sm"):
            with ui.column().classes("gap-1").style("flex: 1 1 300px; max-width: 400px"):
                self._inputs()
            with ui.column().classes("gap-2").style("flex: 3 1 480px; min-width: 300px"):
                self.kit = ViewKit(ui, shell, "limits")
                if notice:
                    self.kit.link_notice(notice)
                self._outputs()
                self.kit.share_card(lambda: dict(self.params), lambda: self.data, self.import_inputs)
        # the points table spans the page: its eleven columns overflowed the right-hand column (cost and
        # energy were only reachable by scrolling the table sideways)
        with ui.column().classes("w-full q-pa-sm"):
            self._points()

    def _inputs(self) -> None:
        ui, p = self.ui, self.params

        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Hardware and run").classes("text-weight-bold")
            self.bind(
                "gpu", ui.select(hardware_choices(), label="Hardware (preset or catalog GPU)", value=p["gpu"])
            )
            self.bind("sparse", ui.switch("Sparse (MoE) models", value=p["sparse"]))
            self.bind("scaling", ui.select(list(SCALINGS), label="Critical batch law", value=p["scaling"]))
            self.bind(
                # no widget min/max: NiceGUI compares them as text (a server-side TypeError) and would
                # clamp a value silently; the view's own check names a value out of range
                "months",
                ui.number("Time limit (months)", value=p["months"]),
            )
            self.bind("memory", ui.select(list(MEMORIES), label="Memory check", value=p["memory"]))
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Custom chip and network (override the preset)").classes("text-weight-bold")
            self.bind("peak_tflops", ui.number("Peak dense 16-bit TFLOP/s", value=p["peak_tflops"]))
            self.bind("hbm_tb_s", ui.number("HBM bandwidth (TB/s)", value=p["hbm_tb_s"]))
            self.bind("memory_gb", ui.number("Memory per GPU (GB)", value=p["memory_gb"]))
            self.bind(
                "level_bandwidth",
                ui.input(
                    "Bandwidth per level (bytes/s, bidirectional; comma-separated, NVLink first)",
                    value=p["level_bandwidth"],
                ),
            )
            self.bind(
                "level_latency_us",
                ui.input("Latency per level (µs, comma-separated)", value=p["level_latency_us"]),
            )
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Search").classes("text-weight-bold")
            self.bind("compute", ui.input("Training compute (FLOP)", value=p["compute"]))

    def _outputs(self) -> None:
        ui = self.ui
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Utilization of compute-optimal runs within the time limit").classes("text-weight-bold")
            self.plot = (
                ui.echart(chart(None))
                .classes("w-full")
                .style("height: 380px")
                .props("data-testid=limits-chart")
            )
            self.stop_label = ui.label().classes("text-body2").props("data-testid=linear-stop")
            self.reference_label = (
                ui.label().classes("text-caption text-grey-8").props("data-testid=reference")
            )
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Smallest cluster for the target compute (limits search)").classes("text-weight-bold")
            self.search_label = ui.label().classes("text-body2").props("data-testid=search")

    def _points(self) -> None:
        ui = self.ui
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Points (cost: the GPUs' purchase; energy: board power × time × PUE)").classes(
                "text-weight-bold"
            )
            self.table = (
                ui.table(
                    columns=[{"name": k, "label": t, "field": k, "align": "right"} for k, t in TABLE_COLUMNS],
                    rows=[],
                    row_key="d_model",
                    pagination=0,
                )
                .props("dense flat data-testid=points-table")
                .classes("w-full")
            )

    # --- behaviour ------------------------------------------------------------------------------------

    def on_input(self, name: str, value: Any) -> None:
        text = name in ("level_bandwidth", "level_latency_us", "compute")
        self.params[name] = "" if value is None and text else value
        if not self.loading:
            self.ui.timer(0, self.refresh, once=True)

    async def refresh(self) -> None:
        """Recompute off the event loop (a curve takes ~0.5 s), for the latest inputs only."""
        await self.latest()

    def show(self, data: dict[str, Any]) -> None:
        self.plot.options.clear()
        self.plot.options.update(chart(data))
        self.plot.props(f"data-version={self.version}")
        self.plot.update()
        stop = data["linear_scaling_stop"]
        end = data["curve"][-1]["training_flop"]
        self.stop_label.text = (
            f"Linear scaling stops (utilization < {stop['threshold_utilization']:.2f}) at "
            f"{stop['first_point_flop']:.2g} FLOP (crossing ≈ {stop['crossing_flop']:.2g}); the curve ends at "
            f"{end:.2g} FLOP."
            if stop
            else f"Utilization stays above the linear-scaling threshold up to {end:.2g} FLOP, where the curve ends."
        )
        ref = data["reference"]
        self.reference_label.text = (
            f"Diamonds: the reference implementation's curve ({ref['setting']}, {len(ref['points'])} points; "
            "Erdil & Schneider-Joseph 2024's code, re-run)."
            if ref
            else "No reference curve for these settings (the reference ran the presets' own hardware for 3 months)."
        )
        self.search_label.text = search_text(data)
        self.table.rows = table_rows(data)
        self.table.update()
        self.kit.set_result(data)
        self.shell.share(
            self.carried | {k: v for k, v in self.params.items() if v != DEFAULTS[k]},
            links=self.carried | self.params,  # the links carry its gpu even at the default
        )

    async def import_inputs(self, data: dict[str, Any]) -> None:
        """Apply an uploaded inputs file once its inputs run (else its error, the inputs as they were)."""
        params = parse_params(data)
        result = await self.try_import(params)
        self.params = params
        self.loading = True
        try:
            for name, w in self.widgets.items():
                w.set_value(params[name])
        finally:
            self.loading = False
        self.accept_import(result)


def build(ui: Any, query: dict[str, str], shell: Any) -> None:
    view = LimitsView(ui, query, shell)
    ui.timer(0, view.refresh, once=True)
