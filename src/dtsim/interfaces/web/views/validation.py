"""The `/validation` view: `dtsim validate` in the browser. Every bundled measured run predicted by dtsim
(dtsim.validation.validate, the function the CLI calls), shown as a predicted-against-measured scatter
by group (log axes, y = x), the residuals per group, the groups' medians and bounds, the pooled median
of the datacenter check runs, the model-error intervals' coverage, the fit verdicts and the worst run of
each group. A group filter picks the subset, as the CLI's `--subset` does. Validation takes ~0.3 s: it
runs off the event loop.
"""

from __future__ import annotations

import functools
from typing import Any

from dtsim.errors import ScenarioError
from dtsim.interfaces.web.charts import framed
from dtsim.interfaces.web.viewkit import Busy, KitView, Latest, ViewKit, problems_text
from dtsim.interfaces.web.views import SHARED_KEYS

PATH = "/validation"
LABEL = "Validation"
TITLE = "validation against measured runs"
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
    "#e6550d",
    "#31a354",
    "#756bb1",
    "#636363",
    "#9c9ede",
    "#cedb9c",
    "#e7ba52",
    "#ad494a",
)  # fmt: skip  (matplotlib's tab10 then tab20b/c: the CLI's --plot uses tab20)


def dataset() -> Any:
    """The bundled records, read once per server process (they do not change while it runs)."""
    global _DATASET
    if _DATASET is None:
        from dtsim.validation import load_dataset

        _DATASET = load_dataset(None)
    return _DATASET


_DATASET: Any = None


@functools.cache
def predicted() -> dict[str, Any]:
    """Every bundled record's row (its prediction, or why there is none), by id: computed once per
    server process, so a change of the group filter only summarises again (the records and the
    calibration do not change while the server runs)."""
    from dtsim.validation import validate

    return {row.id: row for row in validate(dataset()).runs}


def group_names() -> list[str]:
    return list(dataset().groups)


def parse_subset(value: Any) -> list[str]:
    """The group filter from a query (comma-separated, as `--subset`) or an uploaded file (a list or
    that text): [] for all, or a ScenarioError naming an unknown group or record id."""
    from dtsim.interfaces.operations import validation_subset

    if value is None or value == "" or value == []:
        return []
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise ScenarioError([("subset", value, "must be a list of group names or record ids")])
        value = ",".join(value)
    if not isinstance(value, str):
        raise ScenarioError([("subset", value, "must be group names or record ids, comma-separated")])
    data = dataset()
    known = set(data.groups) | {r.id for r in data.records}
    names = [t.strip() for t in value.split(",") if t.strip()]
    return validation_subset(names, known, field="subset") or []


def compute(subset: list[str]) -> dict[str, Any]:
    """`dtsim validate --json [--subset …]`'s object for these groups, and the rows the view shows: the
    function operations.validation_report runs, on the bundled records read once (`dataset`)."""
    from dtsim.interfaces.operations import group_bounds_text
    from dtsim.validation import validate
    from dtsim.validation.model_error import coverage_rows

    report = validate(dataset(), subset or None, predicted=predicted())
    out = report.as_dict()
    coverage = report.interval_coverage
    view = {
        "fit_verdicts_text": report.fit_verdicts_text(),
        "coverage_levels": list(coverage["levels"]),
        "coverage_rows": [[name, runs, cells] for name, runs, cells in coverage_rows(coverage)]
        if coverage["sources"]
        else [],
        "bounds": {g: group_bounds_text(report, g) for g in report.summary},
    }
    return {"report": out, "view": view}


def pct(x: float | None, spec: str = ".1%") -> str:
    return "—" if x is None else format(x, spec)


def scatter_chart(report: dict[str, Any] | None) -> dict[str, Any]:
    """Predicted against measured, log-log, one colour per group (squares: calibration rows), the y = x
    line and ±25 % dashed, as `dtsim validate --plot` draws it."""
    rows = [r for r in (report or {}).get("runs", []) if r["predicted"] is not None and r["measured"]]
    rows = [r for r in rows if r["predicted"] > 0 and r["measured"] > 0]
    series: list[dict[str, Any]] = []
    groups = list(dict.fromkeys(r["group"] for r in rows))
    for i, g in enumerate(groups):
        sel = [r for r in rows if r["group"] == g]
        series.append(
            {
                "name": g,
                "type": "scatter",
                "symbol": "rect" if sel[0]["role"] == "calibration" else "circle",
                "symbolSize": 7,
                "color": PALETTE[i % len(PALETTE)],
                "data": [
                    {
                        "value": [r["measured"], r["predicted"]],
                        "name": f"{r['id']} ({r['metric']}{', ' + r['unit'] if r.get('unit') else ''}): "
                        f"error {pct(r['error'], '+.1%')}",
                    }
                    for r in sel
                ],
            }
        )
    if rows:
        lo = min(min(r["measured"], r["predicted"]) for r in rows) / 1.5
        hi = max(max(r["measured"], r["predicted"]) for r in rows) * 1.5
        for name, f, style in (("y = x", 1.0, "solid"), ("±25 %", 0.8, "dashed"), ("±25 % ", 1.25, "dashed")):
            series.append(
                {
                    "name": name,
                    "type": "line",
                    "showSymbol": False,
                    "silent": True,
                    "color": "#000" if f == 1.0 else "#999",
                    "lineStyle": {"type": style, "width": 1},
                    "data": [[lo, lo * f], [hi, hi * f]],
                }
            )
    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "item"},
            # every group named at once, wrapping onto more lines (a "scroll" legend paged them: 1/4)
            "legend": {"type": "plain", "bottom": 0, "data": groups},
            "grid": {"left": 70, "right": 20, "top": 20, "bottom": 170},
            "xAxis": {
                "type": "log",
                "name": "measured (each record's own unit)",
                "nameLocation": "middle",
                "nameGap": 26,
            },
            "yAxis": {"type": "log", "name": "predicted by dtsim"},
            "series": series,
        }
    )


def residual_chart(report: dict[str, Any] | None) -> dict[str, Any]:
    """Each predicted run's error (predicted / measured − 1, in %) in its group's column."""
    rows = [r for r in (report or {}).get("runs", []) if r["error"] is not None]
    groups = list(dict.fromkeys(r["group"] for r in rows))
    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "item"},
            "grid": {"left": 60, "right": 20, "top": 20, "bottom": 110},
            "xAxis": {"type": "category", "data": groups, "axisLabel": {"rotate": 40, "interval": 0}},
            "yAxis": {"type": "value", "name": "error %"},
            "series": [
                {
                    "name": "error",
                    "type": "scatter",
                    "symbolSize": 6,
                    "data": [
                        {
                            "value": [groups.index(r["group"]), round(100 * r["error"], 4)],
                            "name": r["id"],
                            "itemStyle": {"color": PALETTE[groups.index(r["group"]) % len(PALETTE)]},
                        }
                        for r in rows
                    ],
                    "markLine": {"symbol": "none", "silent": True, "data": [{"yAxis": 0}]},
                }
            ],
        }
    )


GROUP_COLUMNS = (
    ("group", "group"),
    ("roles", "roles"),
    ("runs", "predicted/runs"),
    ("median", "median |err|"),
    ("max", "max |err|"),
    ("points", "max |pt|"),
    ("spearman", "rank corr."),
    ("bounds", "bounds"),
)


def group_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for g, e in data["report"]["summary"].items():
        out.append(
            {
                "group": g,
                "roles": ",".join(e["roles"]),
                "runs": f"{e['predicted']}/{e['runs']}",
                "median": pct(e["median_abs_error"]),
                "max": pct(e["max_abs_error"]),
                "points": "—" if e["max_abs_points"] is None else f"{e['max_abs_points']:.1f}",
                "spearman": "—" if e["spearman"] is None else f"{e['spearman']:.2f}",
                "bounds": data["view"]["bounds"][g] or "—",
            }
        )
    return out


def worst_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The worst run of each group whose |error| is 5 % or more, and what may explain it (as the CLI)."""
    return [
        {"group": g, "run": e["worst"], "error": f"{e['worst_error']:+.1%}", "why": e["worst_why"] or "—"}
        for g, e in data["report"]["summary"].items()
        if e["worst"] is not None and e["worst_error"] is not None and abs(e["worst_error"]) >= 0.05
    ]


def columns(pairs: Any, align: str = "left") -> list[dict[str, Any]]:
    return [{"name": k, "label": t, "field": k, "align": align} for k, t in pairs]


class ValidationView(KitView):
    def __init__(self, ui: Any, query: dict[str, str], shell: Any) -> None:
        self.ui, self.shell = ui, shell
        self.carried = {k: v for k, v in query.items() if k in SHARED_KEYS}
        notice = None
        self.latest = Latest(compute, lambda: (list(self.subset),), self.accept, self.show_error)
        try:
            unknown = sorted(set(query) - {"subset", *SHARED_KEYS})
            if unknown:
                raise ScenarioError([(unknown[0], query[unknown[0]], "is not an input here; inputs: subset")])
            self.subset = parse_subset(query.get("subset"))
        except ScenarioError as exc:
            self.subset = []
            notice = "Ignored the link's inputs: " + problems_text(exc, "; ")
        with ui.column().classes("w-full gap-2 q-pa-sm"):
            self.kit = ViewKit(ui, shell, "validation")
            if notice:
                self.kit.link_notice(notice)
            with ui.card().classes("w-full q-pa-sm"):
                with ui.row().classes("w-full items-center gap-2 no-wrap"):
                    options = group_names() + sorted(
                        s for s in self.subset if s not in dataset().groups
                    )  # a record id from a link stays selectable
                    self.filter = (
                        ui.select(
                            options, multiple=True, value=list(self.subset), label="Groups (empty: all)"
                        )
                        .props("dense use-chips clearable data-testid=subset")
                        .classes("flex-1")
                    )
                    self.latest.busy = Busy(ui)
                self.filter.on_value_change(self.on_filter)
                self.headline = ui.label().classes("text-body1").props("data-testid=headline")
                self.verdicts = ui.label().classes("text-body2").props("data-testid=fit-verdicts")
            with ui.row().classes("w-full gap-2 flex-wrap items-start"):
                with ui.card().classes("q-pa-sm").style("flex: 1 1 520px"):
                    ui.label("Predicted against measured (squares: calibration rows; dashed ±25 %)").classes(
                        "text-weight-bold"
                    )
                    self.scatter = (
                        ui.echart(scatter_chart(None))
                        .classes("w-full")
                        .style("height: 580px")
                        .props("data-testid=scatter-chart")
                    )
                with ui.card().classes("q-pa-sm").style("flex: 1 1 420px"):
                    ui.label("Residuals per group (predicted / measured − 1)").classes("text-weight-bold")
                    self.residuals = (
                        ui.echart(residual_chart(None))
                        .classes("w-full")
                        .style("height: 460px")
                        .props("data-testid=residual-chart")
                    )
            with ui.card().classes("w-full q-pa-sm"):
                ui.label("Groups (|error| as a fraction of the measured value)").classes("text-weight-bold")
                self.groups_table = (
                    ui.table(columns=columns(GROUP_COLUMNS), rows=[], row_key="group", pagination=0)
                    .props("dense flat data-testid=groups-table")
                    .classes("w-full")
                )
            with ui.card().classes("w-full q-pa-sm"):
                ui.label(
                    "Model-error intervals, each source left out: share of its runs inside the interval the "
                    "other sources give"
                ).classes("text-weight-bold")
                self.coverage_box = ui.column().classes("w-full").props("data-testid=coverage")
            with ui.card().classes("w-full q-pa-sm"):
                ui.label("Worst run of each group, and what may explain it").classes("text-weight-bold")
                self.worst_table = (
                    ui.table(
                        columns=columns(
                            (("group", "group"), ("run", "run"), ("error", "error"), ("why", "why"))
                        ),
                        rows=[],
                        row_key="group",
                        pagination=0,
                    )
                    .props("dense flat wrap-cells data-testid=worst-table")
                    .classes("w-full")
                )
            self.kit.share_card(
                lambda: {"subset": list(self.subset)},
                lambda: None if self.data is None else self.data["report"],
                self.import_inputs,
            )

    async def on_filter(self, e: Any) -> None:
        if self.loading:
            return
        try:
            self.subset = parse_subset(list(e.value or []))
        except ScenarioError as exc:
            self.kit.show_error(exc)
            return
        await self.refresh()

    async def refresh(self) -> None:
        """Validate off the event loop (~0.3 s for every group; a spinner meanwhile), for the latest filter
        only."""
        await self.latest()

    def show(self, data: dict[str, Any]) -> None:
        ui, rep, view = self.ui, data["report"], data["view"]
        predicted = sum(1 for r in rep["runs"] if r["predicted"] is not None)
        pooled = rep["datacenter_check"]
        self.headline.text = (
            f"{len(rep['runs'])} records ({predicted} predicted); bounds "
            f"{'all met' if rep['bounds_ok'] else 'NOT all met'}"
            + (
                f"; datacenter check runs pooled: {pooled['runs']}, median |error| {pooled['median_abs_error']:.1%}"
                if pooled["runs"]
                else ""
            )
        )
        self.verdicts.text = "Fit verdicts: " + (view["fit_verdicts_text"] or "no training run judged")
        for plot, options in ((self.scatter, scatter_chart(rep)), (self.residuals, residual_chart(rep))):
            plot.options.clear()
            plot.options.update(options)
            plot.props(f"data-version={self.version}")
            plot.update()
        self.groups_table.rows = group_rows(data)
        self.groups_table.update()
        self.worst_table.rows = worst_rows(data)
        self.worst_table.update()
        self.coverage_box.clear()
        with self.coverage_box:
            if not view["coverage_rows"]:
                ui.label("No datacenter run with a source in this subset.").classes("text-grey-7")
            else:
                levels = [f"{lv:.0%}" for lv in view["coverage_levels"]]
                ui.table(
                    columns=columns((("source", "runs of"), ("runs", "runs"), *((lv, lv) for lv in levels))),
                    rows=[
                        {"source": name, "runs": runs, **dict(zip(levels, cells, strict=True))}
                        for name, runs, cells in view["coverage_rows"]
                    ],
                    row_key="source",
                    pagination=0,
                ).props("dense flat data-testid=coverage-table").classes("w-full")
        self.kit.set_result(rep)
        self.shell.share(self.carried | ({"subset": ",".join(self.subset)} if self.subset else {}))

    async def import_inputs(self, data: dict[str, Any]) -> None:
        unknown = sorted(set(data) - {"subset"})
        if unknown:
            raise ScenarioError([(unknown[0], data[unknown[0]], "is not an input here; inputs: subset")])
        subset = parse_subset(data.get("subset"))
        self.subset = subset
        self.loading = True
        try:  # a record id is an option too while it is selected
            extra = sorted(x for x in subset if x not in dataset().groups)
            self.filter.set_options(group_names() + extra, value=list(subset))
        finally:
            self.loading = False
        await self.refresh()


def build(ui: Any, query: dict[str, str], shell: Any) -> None:
    view = ValidationView(ui, query, shell)
    ui.timer(0, view.refresh, once=True)
