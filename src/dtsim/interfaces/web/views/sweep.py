"""The `/sweep` view: `dtsim sweep` in the browser. A decentralized scenario (a preset and `--set`
overrides) simulated over the grid of any number of varied fields (`--vary field=start:stop:num[:log]` or
`field=v1,v2,…`) by the batch path (dtsim.analysis.grid.run_grid, the function the CLI calls). One field:
line charts of the headline outputs; two: a heat map of the chosen output; more: the table. With
"uncertainty bands" each point also gets P10/P50/P90 of the outputs over draws of the scenario's
distributions and the assumptions table (analysis/grid.add_bands, `sweep --uncertainty`), computed off
the event loop with a progress bar.

The page bounds its grids (MAX_PAGE_POINTS, MAX_PAGE_SIMULATIONS): larger ones are refused with a
visible error pointing at `dtsim sweep --out`, which takes up to 5,000,000 points.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces.web.charts import framed
from dtsim.interfaces.web.viewkit import KitView, Latest, ViewKit, choice, problems_text
from dtsim.interfaces.web.views import SHARED_KEYS

PATH = "/sweep"
LABEL = "Sweep"
TITLE = "sweep"

# What one browser tab may ask for: a grid drawn as charts and a table in the page (the CLI writes
# larger ones to files), and the simulations of the bands (~10 s on one core of a 2-core machine).
MAX_PAGE_POINTS = 20_000
MAX_PAGE_SIMULATIONS = 200_000
SEP = ";"  # between the items of `set` and `vary` in a share link (ranges and lists use : and ,)
DEFAULTS: dict[str, Any] = {
    "preset": "",
    "set": "",
    "vary": "num_nodes=8:1024:15:log",
    "metric": "wall_clock_days",
    "uncertainty": "",
    "seed": "0",
}
KEYS = tuple(DEFAULTS)
LINE_OUTPUTS = ("wall_clock_days", "effective_days", "global_mfu", "efficiency")
TABLE_ROWS = 500
DRAWS = "256"  # the draws field's starting value (the CLI's --uncertainty has none: it must be given)


def split(text: str) -> list[str]:
    return [t.strip() for t in str(text or "").replace("\n", SEP).split(SEP) if t.strip()]


def parse_params(query: dict[str, Any]) -> dict[str, Any]:
    """The view's inputs from a share link's query or an uploaded file (missing keys: the defaults), or
    a ScenarioError naming the field. `set` and `vary` are lists in a file, `;`-joined text in a link."""
    unknown = sorted(set(query) - set(KEYS) - set(SHARED_KEYS))
    if unknown:
        raise ScenarioError(
            [(unknown[0], query[unknown[0]], "is not an input here; inputs: " + ", ".join(KEYS))]
        )
    p = dict(DEFAULTS)
    p["preset"] = choice(query, "preset", "", ["", *catalog.scenario_presets()])
    for key in ("set", "vary"):
        raw = query.get(key)
        if isinstance(raw, list):
            if not all(isinstance(v, str) for v in raw):
                raise ScenarioError([(key, raw, "must be a list of field=value texts")])
            raw = SEP.join(raw)
        if raw is not None and not isinstance(raw, str):
            raise ScenarioError([(key, raw, "must be field=value texts separated by ';'")])
        p[key] = DEFAULTS[key] if raw is None else SEP.join(split(raw))
    for key in ("metric", "uncertainty", "seed"):
        raw = query.get(key)
        p[key] = DEFAULTS[key] if raw is None else str(raw).strip()
    return p


def compute(p: dict[str, Any], progress: Any = None) -> dict[str, Any]:
    """`_compute`, its errors naming the view's fields (`vary`, not the CLI's `--vary`)."""
    try:
        return _compute(p, progress)
    except ScenarioError as exc:
        raise ScenarioError([(f.removeprefix("--"), v, m) for f, v, m in exc.problems]) from None


def _compute(p: dict[str, Any], progress: Any = None) -> dict[str, Any]:
    """`dtsim sweep [--preset P] --set … --vary … [--uncertainty N --seed S] --json` for the view's
    inputs, as the CLI builds it (records, or {points, uncertainty} with bands), and what the charts
    need. The CLI's functions throughout: uncertain_base, parse_vary, run_grid, add_bands, grid_columns."""
    import numpy as np

    from dtsim.analysis.grid import (
        add_bands,
        check_axes,
        grid_size,
        metric_names,
        parse_vary,
        run_grid,
        set_and_varied,
    )
    from dtsim.analysis.uncertainty import HEADLINE, level_name
    from dtsim.interfaces.operations import grid_columns, json_default, set_keys, uncertain_base

    p = parse_params(p)
    draws = None
    if p["uncertainty"]:
        try:
            draws = int(p["uncertainty"])
        except ValueError:
            raise ScenarioError(
                [("uncertainty", p["uncertainty"], "must be a whole number of draws ≥ 1")]
            ) from None
    seed = None
    if draws is not None:
        try:
            seed = int(p["seed"]) if p["seed"] else None
        except ValueError:
            raise ScenarioError([("seed", p["seed"], "must be a whole number ≥ 0")]) from None
    scenario, dists = uncertain_base(
        None, p["preset"] or None, split(p["set"]), draws, seed, None, False, None
    )
    axes = [parse_vary(v) for v in split(p["vary"])]
    if not axes:
        raise ScenarioError([("vary", p["vary"], "give at least one: field=start:stop:num[:log]")])
    check_axes(axes)
    set_and_varied({k: v for k, v in set_keys(split(p["set"])).items() if k not in dists}, axes, where="set")
    n = grid_size(axes)
    if n > MAX_PAGE_POINTS:
        raise ScenarioError(
            [
                (
                    "vary",
                    f"{n:,} points",
                    f"the page draws at most {MAX_PAGE_POINTS:,} points; `dtsim sweep --out FILE` "
                    "takes up to 5,000,000",
                )
            ]
        )
    if draws is not None:
        from dtsim.analysis.uncertainty import sample_count

        sims = sample_count(draws) * n
        if sims > MAX_PAGE_SIMULATIONS:
            raise ScenarioError(
                [
                    (
                        "uncertainty",
                        draws,
                        f"{sample_count(draws):,} draws × {n:,} points = {sims:,} simulations; the page runs at "
                        f"most {MAX_PAGE_SIMULATIONS:,} (fewer draws or points, or `dtsim sweep --uncertainty`)",
                    )
                ]
            )
    result = run_grid(scenario, axes)
    numeric = [m for m in metric_names(result) if np.asarray(result.columns[m]).dtype.kind in "fiub"]
    if p["metric"] not in numeric:
        what = "is not a numeric output" if p["metric"] in result.columns else "is not an output"
        raise ScenarioError([("metric", p["metric"], f"{what}; choose one of {', '.join(numeric)}")])
    if draws is not None:
        add_bands(
            result,
            scenario,
            dists,
            draws,
            seed,
            (0.1, 0.5, 0.9),
            tuple(dict.fromkeys([*HEADLINE, p["metric"]])),
            progress=progress,
        )
    columns = grid_columns(result)
    records = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    bands = result.bands
    payload: Any = records if bands is None else {"points": records, "uncertainty": bands.as_dict()}
    band_levels = [level_name(q) for q in bands.levels] if bands else []
    import json

    return {
        # the CLI's --json document, exactly (NumPy scalars as values, as its json_default writes them)
        "cli": json.loads(json.dumps(payload, default=json_default)),
        "inputs": p,
        "axes": [
            {
                "field": a.field,
                "values": a.values.tolist(),
                "log": bool(a.log),
                "numeric": bool(a.numeric),
                "note": a.note(),  # a whole-number range whose rounding merged points, as the CLI says
            }
            for a in axes
        ],
        "numeric_outputs": numeric,
        "band_levels": band_levels,
        "n": result.n,
        "drawn": sorted(k.removeprefix("assumptions.") for k in (bands.inputs if bands else {})),
    }


def column(data: dict[str, Any], name: str) -> list[Any]:
    rec = data["cli"] if isinstance(data["cli"], list) else data["cli"]["points"]
    return [r.get(name) for r in rec]


def line_chart(data: dict[str, Any], output: str) -> dict[str, Any]:
    """One output against the one varied field; with bands, the P10–P90 band and the P50 dashed."""
    axis = data["axes"][0]
    x = axis["values"] if axis["numeric"] else list(range(len(axis["values"])))
    y = column(data, output)
    series: list[dict[str, Any]] = [
        {
            "name": "point",
            "type": "line",
            "color": "#1565c0",
            "showSymbol": len(x) <= 40,
            "data": [[a, b] for a, b in zip(x, y, strict=True) if b is not None],
        }
    ]
    levels = data["band_levels"]
    if len(levels) >= 2 and f"{output}_{levels[0]}" in column_names(data):
        lo, hi = column(data, f"{output}_{levels[0]}"), column(data, f"{output}_{levels[-1]}")
        ok = [i for i in range(len(x)) if lo[i] is not None and hi[i] is not None]
        series.append(
            {
                "name": f"{levels[0].upper()}",
                "type": "line",
                "stack": "band",
                "showSymbol": False,
                "lineStyle": {"opacity": 0},
                "data": [[x[i], lo[i]] for i in ok],
                "color": "#90caf9",
            }
        )
        series.append(
            {
                "name": f"{levels[0].upper()}–{levels[-1].upper()}",
                "type": "line",
                "stack": "band",
                "showSymbol": False,
                "lineStyle": {"opacity": 0},
                "areaStyle": {"color": "#90caf9", "opacity": 0.5},
                "data": [[x[i], hi[i] - lo[i]] for i in ok],
                "color": "#90caf9",
            }
        )
        mid = levels[len(levels) // 2]
        med = column(data, f"{output}_{mid}")
        series.append(
            {
                "name": mid.upper(),
                "type": "line",
                "showSymbol": False,
                "color": "#0d47a1",
                "lineStyle": {"type": "dashed"},
                "data": [[x[i], med[i]] for i in range(len(x)) if med[i] is not None],
            }
        )
    values = [v for v in y if isinstance(v, int | float)]
    log_y = bool(values) and min(values) > 0 and max(values) / min(values) > 1e3
    return framed(
        {
            "animation": False,
            "title": {"text": output, "textStyle": {"fontSize": 13}},
            "tooltip": {"trigger": "axis"},
            "legend": {"bottom": 0},
            "grid": {"left": 70, "right": 20, "top": 30, "bottom": 55},
            "xAxis": {
                "type": "log" if axis["log"] else ("value" if axis["numeric"] else "category"),
                **({} if axis["numeric"] else {"data": [str(v) for v in axis["values"]]}),
                "name": axis["field"],
                "nameLocation": "middle",
                "nameGap": 26,
            },
            "yAxis": {"type": "log" if log_y else "value", "scale": True},
            "series": series,
        }
    )


def column_names(data: dict[str, Any]) -> set[str]:
    rec = data["cli"] if isinstance(data["cli"], list) else data["cli"]["points"]
    return set(rec[0]) if rec else set()


def heat_chart(data: dict[str, Any], output: str) -> dict[str, Any]:
    """The chosen output over two varied fields (its P50 with bands), coloured on a log10 scale where its
    positive values span more than 10^3, as `sweep --plot` draws it (interfaces/plotting.plot_grid)."""
    a, b = data["axes"]
    mid = next((lv for lv in data["band_levels"] if lv == "p50"), None)
    name = f"{output}_{mid}" if mid and f"{output}_{mid}" in column_names(data) else output
    z = column(data, name)
    positive = [v for v in z if isinstance(v, int | float) and v > 0]
    use_log = bool(positive) and max(positive) / min(positive) > 1e3
    if use_log:
        z = [math.log10(v) if isinstance(v, int | float) and v > 0 else None for v in z]
    cells = [
        [j, i, z[i * len(b["values"]) + j]] for i in range(len(a["values"])) for j in range(len(b["values"]))
    ]
    finite = [c[2] for c in cells if isinstance(c[2], int | float)]
    return framed(
        {
            "animation": False,
            "title": {"text": f"log10 of {name}" if use_log else name, "textStyle": {"fontSize": 13}},
            "tooltip": {"position": "top"},
            "grid": {"left": 90, "right": 30, "top": 30, "bottom": 90},
            "xAxis": {
                "type": "category",
                "data": [f"{v:.4g}" if isinstance(v, float) else str(v) for v in b["values"]],
                "name": b["field"],
                "nameLocation": "middle",
                "nameGap": 45,
                "axisLabel": {"rotate": 30},
            },
            "yAxis": {
                "type": "category",
                "data": [f"{v:.4g}" if isinstance(v, float) else str(v) for v in a["values"]],
                "name": a["field"],
            },
            "visualMap": {
                "min": min(finite) if finite else 0,
                "max": max(finite) if finite else 1,
                "calculable": True,
                "orient": "vertical",
                "right": 0,
                "top": "center",
                "itemHeight": 200,
            },
            "series": [{"name": name, "type": "heatmap", "data": cells}],
        }
    )


class SweepView(KitView):
    def __init__(self, ui: Any, query: dict[str, str], shell: Any) -> None:
        self.ui, self.shell = ui, shell
        self.progress = [0, 0]
        self.lock = threading.Lock()
        self.carried = {k: v for k, v in query.items() if k in SHARED_KEYS and k not in KEYS}
        notice = None
        try:
            self.params = parse_params(query)
        except ScenarioError as exc:
            self.params = dict(DEFAULTS)
            notice = "Ignored the link's inputs: " + problems_text(exc, "; ")
        # bands are on when the link asks for draws; the draws field keeps a count either way
        self.bands_on = bool(self.params["uncertainty"])
        self.params["uncertainty"] = self.params["uncertainty"] or DRAWS
        self.widgets: dict[str, Any] = {}
        self.latest = Latest(compute, self.args, self.accept, self.show_error)
        with ui.row().classes("w-full items-start gap-4 flex-wrap q-pa-sm"):
            with ui.column().classes("gap-1").style("flex: 1 1 300px; max-width: 420px"):
                self._inputs()
            with ui.column().classes("gap-2").style("flex: 3 1 480px; min-width: 300px"):
                self.kit = ViewKit(ui, shell, "sweep")
                if notice:
                    self.kit.link_notice(notice)
                self._outputs()
                self.kit.share_card(
                    self.file_inputs,
                    lambda: None if self.data is None else self.data["cli"],
                    self.import_inputs,
                )

    def _inputs(self) -> None:
        ui, p = self.ui, self.params

        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Scenario").classes("text-weight-bold")
            presets = {"": "(the defaults: MIRI simulator docs §9)"} | {
                k: k for k in catalog.scenario_presets()
            }
            self.bind("preset", ui.select(presets, label="Start from a preset", value=p["preset"]))
            self.bind(
                "set",
                ui.textarea(
                    "Overrides, one field=value a line (as --set)", value=p["set"].replace(SEP, "\n")
                ),
            )
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Vary").classes("text-weight-bold")
            self.bind(
                "vary",
                ui.textarea(
                    "One field a line: field=start:stop:num[:log] or field=v1,v2,… (the grid is the product)",
                    value=p["vary"].replace(SEP, "\n"),
                ),
            )
            self.metric = self.bind(
                "metric",
                ui.input(
                    "Output to chart (a heat map with two fields)",
                    value=p["metric"],
                    autocomplete=list(LINE_OUTPUTS),
                ),
            )
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Uncertainty bands").classes("text-weight-bold")
            self.bands_box = ui.checkbox("P10/P50/P90 over draws at every point", value=self.bands_on)
            self.bands_box.props("dense data-testid=bands")
            self.bands_box.on_value_change(self.on_bands)
            self.bind("uncertainty", ui.input("Draws per point (rounded up to 2^m)", value=p["uncertainty"]))
            self.bind("seed", ui.input("Seed", value=p["seed"]))
            self.bar = ui.linear_progress(value=0, show_value=False).props("data-testid=progress")
            self.bar.visible = False

    def _outputs(self) -> None:
        ui = self.ui
        with ui.card().classes("w-full q-pa-sm"):
            self.headline = ui.label().classes("text-body1").props("data-testid=headline")
            self.charts = ui.column().classes("w-full gap-1").props("data-testid=charts")
        with ui.card().classes("w-full q-pa-sm"):
            ui.label(f"Points (the first {TABLE_ROWS}; Result JSON has all)").classes("text-weight-bold")
            self.table_box = ui.column().classes("w-full")

    # --- behaviour ------------------------------------------------------------------------------------

    def file_inputs(self) -> dict[str, Any]:
        """The inputs as a file holds them: `set` and `vary` as lists."""
        p = self.current()
        return {**p, "set": split(p["set"]), "vary": split(p["vary"])}

    def current(self) -> dict[str, Any]:
        p = dict(self.params)
        p["set"], p["vary"] = SEP.join(split(p["set"])), SEP.join(split(p["vary"]))
        if not self.bands_box.value:
            p["uncertainty"] = ""
        return p

    def on_input(self, name: str, value: Any) -> None:
        self.params[name] = "" if value is None else str(value)
        if not self.loading:
            self.ui.timer(0, self.refresh, once=True)

    def on_bands(self, _e: Any) -> None:
        if not self.loading:
            self.ui.timer(0, self.refresh, once=True)

    def _progress(self, done: int, total: int) -> None:
        with self.lock:
            self.progress = [done, total]

    async def refresh(self) -> None:
        """Run the grid (and its bands, with a progress bar) off the event loop, for the latest inputs
        only."""
        timer = None
        if self.bands_box.value:
            with self.lock:
                self.progress = [0, 0]
            self.bar.value = 0
            self.bar.visible = True
            timer = self.ui.timer(0.2, self._show_progress)
        try:
            await self.latest()
        finally:
            if timer is not None:
                timer.cancel()
            if not self.latest.running:  # a call that only noted a change leaves the bar to the run
                self.bar.visible = False

    def args(self) -> tuple[Any, ...]:
        params = self.current()
        return params, (self._progress if params["uncertainty"] else None)

    def _show_progress(self) -> None:
        with self.lock:
            done, total = self.progress
        self.bar.value = done / total if total else 0

    def show(self, data: dict[str, Any]) -> None:
        ui = self.ui
        axes, metric = data["axes"], data["inputs"]["metric"]
        sizes = " × ".join(f"{a['field']} {len(a['values'])}" for a in axes)
        self.headline.text = f"{data['n']:,} points ({sizes}) by the batch path" + (
            f"; bands over {data['cli']['uncertainty']['draws_per_point']:,} draws a point, seed "
            f"{data['cli']['uncertainty']['seed']}, drawn: {', '.join(data['drawn']) or 'none'}"
            + (
                f"; held (no output at any screened grid point changes with them): "
                f"{', '.join(k.removeprefix('assumptions.') for k in data['cli']['uncertainty']['unread'])}"
                if data["cli"]["uncertainty"].get("unread")
                else ""
            )
            if data["band_levels"]
            else ""
        )
        self.charts.clear()
        with self.charts:
            if len(axes) == 1:
                for out in dict.fromkeys([metric, *LINE_OUTPUTS]):
                    ui.echart(line_chart(data, out)).classes("w-full").style("height: 240px").props(
                        f"data-testid=line-{out} data-version={self.version}"
                    )
            elif len(axes) == 2:
                ui.echart(heat_chart(data, metric)).classes("w-full").style("height: 420px").props(
                    f"data-testid=heatmap data-version={self.version}"
                )
            else:
                ui.label("Charts draw one or two varied fields; the table lists the points.").classes(
                    "text-grey-8"
                )
            for a in axes:
                if a.get("note"):
                    ui.label(f"note: {a['note']}").classes("text-body2").props("data-testid=axis-note")
            if data["band_levels"]:
                warnings = data["cli"]["uncertainty"]["warnings"]
                for w in warnings:
                    ui.label(f"warning: {w}").classes("text-orange-10 text-body2")
        names = [a["field"] for a in axes] + list(dict.fromkeys([metric, *LINE_OUTPUTS]))
        names += [f"{metric}_{lv}" for lv in data["band_levels"]] + ["mode", "bottleneck"]
        names = [n for n in dict.fromkeys(names) if n in column_names(data)]
        cols = {n: column(data, n)[:TABLE_ROWS] for n in names}  # each column built once, not per cell
        rows = [{"i": i, **{n: fmt(cols[n][i]) for n in names}} for i in range(len(cols[names[0]]))]
        self.table_box.clear()
        with self.table_box:
            ui.table(
                columns=[{"name": n, "label": n, "field": n, "align": "right"} for n in names],
                rows=rows,
                row_key="i",
            ).props("dense flat data-testid=points-table").classes("w-full")
        self.metric.set_autocomplete(data["numeric_outputs"])
        self.kit.set_result(data["cli"])
        current = self.current()
        shared = {k: v for k, v in current.items() if v != DEFAULTS[k]}
        self.shell.share(self.carried | shared, links=self.carried | current)  # the links: preset too

    async def import_inputs(self, data: dict[str, Any]) -> None:
        """Apply an uploaded inputs file once its inputs run (else its error, the inputs as they were)."""
        params = parse_params(data)
        result = await self.try_import(params)
        self.params = params | {"uncertainty": params["uncertainty"] or DRAWS}
        self.loading = True
        try:
            for name, w in self.widgets.items():
                w.set_value(
                    self.params[name].replace(SEP, "\n") if name in ("set", "vary") else self.params[name]
                )
            self.bands_box.set_value(bool(params["uncertainty"]))
        finally:
            self.loading = False
        self.accept_import(result)


def fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def build(ui: Any, query: dict[str, str], shell: Any) -> None:
    view = SweepView(ui, query, shell)
    ui.timer(0, view.refresh, once=True)
