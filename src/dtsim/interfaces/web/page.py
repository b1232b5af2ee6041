"""The web UI (NiceGUI, mounted on the API's FastAPI app): every input of the original simulator and
more, results that update as inputs change, charts, compare, share links, import and export.

NiceGUI keeps the UI in Python: every number on the page comes from the same `dtsim.simulate` call
the CLI makes, with no second implementation in JavaScript to drift from it. Its Vue, Quasar and
ECharts assets ship inside the package, so the page works without internet access.

This module lays the page out and wires it; the inputs are in `fields` (derived from the schema) and
`widgets`, the wording of results in `results`, the charts in `charts`. NiceGUI is imported only when
a page is built, so `dtsim --help` does not pay for it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import yaml
from fastapi import FastAPI, Request

from dtsim import catalog
from dtsim.analysis.sweep import current_value, default_range, sweep
from dtsim.errors import ScenarioError
from dtsim.interfaces.web import viewkit
from dtsim.interfaces.web.charts import SWEEP_FIELDS, breakdown_chart, sweep_chart
from dtsim.interfaces.web.fields import (
    GROUPS,
    HINTS,
    default_values,
    from_shared,
    parse_query,
    scenario_to_values,
    share_query,
    values_to_fields,
)
from dtsim.interfaces.web.groups_card import (
    GroupsCard,
    leave_to_model,
    link_notice,
    query_pairs,
    scenario_groups,
)
from dtsim.interfaces.web.results import (
    RESULT_ROWS,
    bottleneck_text,
    compare_rows,
    fmt_days,
    result_csv,
    summary_text,
)
from dtsim.interfaces.web.uncertainty_band import UncertaintyBand
from dtsim.interfaces.web.viewkit import (
    INTERNAL_ERROR,
    ErrorCard,
    ResultJson,
    ShareCard,
    labelled,
    problems_text,
)
from dtsim.interfaces.web.views import Shell, view_modules
from dtsim.interfaces.web.widgets import InputWidgets, make_widget
from dtsim.models.decentralized.engine import simulate
from dtsim.models.decentralized.result import Result
from dtsim.schema.scenario import Scenario, load_scenario

HINT_LABELS = {h.name: h.label for _, hints in HINTS for h in hints}  # scenario field → its input's label
REQUIRED = ("parameters_b", "tokens_t", "num_nodes")  # inputs of / that a blank must not default

# A page load builds every widget and chart (about 1.5 MB) and NiceGUI keeps it until its browser
# connects; one that never does (a script, a bot) was kept 60 s, so a client looping on / grew the server
# by gigabytes and stalled it for seconds while it pruned. At most MAX_PENDING_PAGES wait at once (a page
# load past that is a short 503), each at most PENDING_PAGE_S.
MAX_PENDING_PAGES = 100
PENDING_PAGE_S = 20.0
BUSY_PAGE = (
    "<!doctype html><title>dtsim: busy</title><p>dtsim: too many pages are loading at once; "
    "try again in a minute.</p>"
)

# Every page's and view's style. A table's cells wrap (Quasar's are one line each), so a wide table
# (governance's caps, sensitivity's indices) shows every column inside its card at laptop width
# instead of running past the card's edge; one still too wide scrolls sideways inside the card.
STYLE = (
    "<style>.dt-k{color:#555} .dt-v{font-variant-numeric:tabular-nums;text-align:right}"
    ".dt-group .q-expansion-item__content{padding:0 8px}"
    ".q-table th,.q-table td{white-space:normal} .q-table__middle{max-width:100%;overflow-x:auto}</style>"
)
OPEN_GROUPS = ("Model and data", "Infrastructure", "Network")
BIG_OUTPUTS = (
    ("wall_clock_days", "Wall-clock (process D tokens)"),
    ("effective_days", "η-adjusted (equivalent quality)"),
)


def scenario_from_data(data: dict[str, Any]) -> Scenario:
    """A scenario file's mapping (its fields, a `preset` key allowed) as a Scenario, or a ScenarioError
    with every problem the file holds (viewkit.every_problem)."""

    def load(fields: dict[str, Any]) -> Scenario:
        fields = dict(fields)
        preset = fields.pop("preset", None)
        return load_scenario(preset=preset, layers=[fields])  # node_groups: the Node groups card shows them

    return viewkit.every_problem(load, data)


@dataclass
class PageState:
    values: dict[str, Any] = field(default_factory=default_values)
    result: Result | None = None
    pinned: tuple[dict[str, Any], Result] | None = None
    sweep_field: str = "num_nodes"
    loading: bool = False
    version: int = 0  # bumped on every recomputation; charts carry it as data-version


class Page:
    """One browser tab's page: its state, its widgets and what happens when an input changes."""

    def __init__(self, ui: Any, query: dict[str, str]) -> None:
        self.ui = ui
        self.state = PageState()
        self.inputs = InputWidgets()
        self.out_labels: dict[str, Any] = {}
        self.link_groups: tuple[list[dict[str, Any]], dict[str, Any] | None] = ([], None)
        self.link_uncertainty = query.get("uncertainty") == "true"
        self.notice = self._restore({k: v for k, v in query.items() if k != "uncertainty"})
        ui.add_head_html(STYLE)
        self._header()
        with ui.row().classes("w-full items-start gap-4 flex-wrap q-pa-sm"):
            self._inputs_column()
            self._results_column()
        self.preset_select.on_value_change(self.on_preset)
        self.node_select.on_value_change(self.on_node)
        self.sweep_select.on_value_change(self.on_sweep_field)
        self.groups_card.set(*self.link_groups)
        self.set_values(self.state.values)

    # --- layout ---------------------------------------------------------------------------------------

    def _restore(self, query: dict[str, str]) -> str | None:
        """Take the scenario from a share link's query (`?preset=ID` starts from that preset, the other
        keys override it, as an uploaded file's `preset` key does); a notice when it is invalid."""
        if not query:
            return None
        try:
            fields = from_shared(query)
            preset = fields.pop("preset", None)
            scenario = load_scenario(preset=preset, layers=[parse_query(fields)])
            self.state.values = scenario_to_values(scenario)
            self.link_groups = scenario_groups(scenario)
        except ScenarioError as exc:
            return "Ignored the link's scenario: " + problems_text(exc, "; ")
        return None

    def _header(self) -> None:
        self.shell = Shell(self.ui, "/").build()
        self.summary = self.shell.summary

    def _inputs_column(self) -> None:
        ui = self.ui
        with ui.column().classes("gap-1").style("flex: 1 1 340px; max-width: 460px; min-width: 300px"):
            with ui.card().classes("w-full q-pa-sm"):
                with ui.row().classes("w-full gap-2 no-wrap"):
                    self.preset_select = (
                        ui.select(
                            {k: k for k in catalog.scenario_presets()}, label="Scenario preset", value=None
                        )
                        .classes("flex-1")
                        .props("data-testid=preset dense")
                    )
                    self.node_select = (
                        ui.select(
                            {k: n.name for k, n in catalog.nodes().items()}, label="Node preset", value=None
                        )
                        .classes("flex-1")
                        .props("data-testid=node-preset dense")
                    )
                self.preset_select.tooltip(
                    "Load a preset (catalog/presets.yaml): MIRI simulator docs §9 defaults, deployment "
                    "profiles, INTELLECT-1- and Covenant-72B-like runs."
                )
                self.node_select.tooltip("Fill the hardware from a node preset (catalog/nodes.yaml).")
            self.groups_card = GroupsCard(ui, self.refresh, lambda: self.state.values.get("num_nodes"))
            for title, inputs in GROUPS:
                with (
                    ui.expansion(title, value=title in OPEN_GROUPS)
                    .classes("w-full dt-group")
                    .props("dense header-class=text-weight-bold")
                ):
                    for spec in inputs:
                        make_widget(ui, spec, self.state.values.get(spec.name), self.inputs, self.on_input)

    def _results_column(self) -> None:
        ui = self.ui
        with ui.column().classes("gap-2").style("flex: 2 1 360px; min-width: 300px"):
            self.errors = ErrorCard(ui)
            if self.notice:
                viewkit.link_notice(ui, self.notice)
                ui.notify(self.notice, type="warning", multi_line=True, timeout=8000)
            self._headline_card()
            self._result_cards()
            self._chart_cards()
            with ui.card().classes("w-full q-pa-sm"):
                ui.label("Warnings").classes("text-weight-bold")
                self.warnings_box = ui.column().classes("gap-1 w-full").props("data-testid=warnings")
            self._compare_card()
            self._share_card()
            self.result_json = ResultJson(ui)

    def _headline_card(self) -> None:
        ui = self.ui
        with ui.card().classes("w-full"):
            with ui.row().classes("items-center gap-2"):
                self.mode_badge = (
                    ui.badge("", color="indigo").classes("text-subtitle1").props("data-testid=mode")
                )
                self.bottleneck_badge = ui.badge("", color="red-7").props("data-testid=bottleneck-badge")
                self.band = UncertaintyBand(ui, self.uncertainty_fields, on=self.link_uncertainty)
                self.band.switch.on_value_change(lambda _e: self.update_share_link())
            self.reason_label = (
                ui.label().classes("text-caption text-grey-8").props("data-testid=mode_reason")
            )
            with ui.row().classes("w-full gap-6 flex-wrap"):
                for key, title in BIG_OUTPUTS:
                    with ui.column().classes("gap-0"):
                        ui.label(title).classes("text-caption")
                        self.out_labels["big_" + key] = (
                            ui.label().classes("text-h5").props(f"data-testid=big-{key}")
                        )
                        self.band.add_label(key)

    def _result_cards(self) -> None:
        ui = self.ui
        with ui.row().classes("w-full gap-2 flex-wrap items-start"):
            for title, rows in RESULT_ROWS:
                with ui.card().classes("q-pa-sm").style("flex: 1 1 260px"):
                    ui.label(title).classes("text-weight-bold")
                    with ui.grid(columns=2).classes("w-full gap-x-2 gap-y-0"):
                        for key, label, _fmt in rows:
                            ui.label(label).classes("dt-k text-body2")
                            self.out_labels[key] = (
                                ui.label().classes("dt-v text-body2").props(f"data-testid={key}")
                            )

    def _chart_cards(self) -> None:
        ui = self.ui
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("One outer step: where the time goes").classes("text-weight-bold")
            self.breakdown = (
                ui.echart(breakdown_chart(None))
                .classes("w-full")
                .style("height: 240px")
                .props("data-testid=breakdown-chart")
            )
        with ui.card().classes("w-full q-pa-sm"):
            with ui.row().classes("items-center gap-2"):
                ui.label("Sweep").classes("text-weight-bold")
                self.sweep_select = (
                    ui.select(list(SWEEP_FIELDS), value=self.state.sweep_field, label="vary")
                    .props("dense data-testid=sweep-field")
                    .style("min-width: 180px")
                )
            self.sweep_plot = (
                ui.echart(sweep_chart("num_nodes", [], [], [], None))
                .classes("w-full")
                .style("height: 260px")
                .props("data-testid=sweep-chart")
            )

    def _compare_card(self) -> None:
        ui = self.ui
        with ui.card().classes("w-full q-pa-sm"):
            with ui.row().classes("items-center gap-2 flex-wrap"):
                ui.label("Compare").classes("text-weight-bold")
                ui.button("Pin this scenario", on_click=self.pin).props("dense outline data-testid=pin")
                ui.button("Clear", on_click=self.unpin).props("dense flat")
            self.compare_box = ui.column().classes("w-full").props("data-testid=compare")

    def _share_card(self) -> None:
        ui = self.ui
        self.share = ShareCard(
            ui, self.exports(), self.import_scenario, kind="scenario", holds="scenario fields", link_box=True
        )
        self.share_input = self.share.link_input
        with self.share.below_link:
            self.link_notice = ui.label().classes("text-orange-10").props("data-testid=share-too-long")

    # --- behaviour ------------------------------------------------------------------------------------

    def current_fields(self) -> dict[str, Any]:
        """The scenario's fields: the inputs', with the node groups' (which then set num_nodes). A
        REQUIRED input left blank is refused, not taken at its default (as /step refuses a blank)."""
        fields = values_to_fields(self.state.values)
        groups = self.groups_card.fields()
        blank = [
            name
            for name in REQUIRED
            if self.state.values.get(name) is None and not (name == "num_nodes" and groups.get("node_groups"))
        ]
        if blank:
            raise ScenarioError([(name, None, "is required: give a value") for name in blank])
        if groups.get("node_groups"):
            fields.pop("num_nodes", None)
        return leave_to_model(fields | groups, default_values())

    def export_fields(self) -> dict[str, Any]:
        """The inputs as a scenario file that reads back as the page computes it."""
        return self.current_scenario().to_fields()  # reads back as computed (Scenario.to_fields)

    def current_scenario(self) -> Scenario:
        return load_scenario(layers=[self.current_fields()])

    def uncertainty_fields(self) -> dict[str, Any] | None:
        return self.current_fields() if self.state.result is not None else None

    def on_input(self, name: str, value: Any) -> None:
        old = self.state.values.get(name)
        scaled = catalog.scaled_node(self.state.values, old, value) if name == "gpus_per_node" else {}
        if scaled and value != old:
            # another count of the same GPUs: the node's peak and memory scale with it, as `--set
            # gpus_per_node` scales them (catalog.scaled_node), so the page and the CLI agree
            self.set_values({**self.state.values, "gpus_per_node": value, **scaled})
            return
        self.state.values[name] = value
        self.refresh()

    def refresh(self) -> None:
        """Recompute the scenario and redraw every output (an invalid scenario shows its problems)."""
        if self.state.loading:
            return
        try:
            scenario = self.current_scenario()
            result = simulate(scenario)
        except ScenarioError as exc:
            self.errors.show(labelled(exc, HINT_LABELS))  # inputs by their labels, as the other pages
            self.state.result = None
            self.band.update()
            return
        self.errors.clear()
        self.state.result = result
        self.show_result(result)
        self.show_groups(scenario)
        self.band.update()
        self.update_sweep(scenario)
        self.update_compare()
        self.update_share_link()
        self.show_presets()

    def show_result(self, result: Result) -> None:
        data = result.model_dump(mode="json")
        self.mode_badge.text = result.mode_label
        self.mode_badge.props(f"data-value={result.mode}")
        self.reason_label.text = result.mode_reason + (f" {result.mfu_source}." if result.mfu_source else "")
        self.summary.text = summary_text(result)
        self.bottleneck_badge.text = bottleneck_text(result)
        for key, _title in BIG_OUTPUTS:
            lab = self.out_labels["big_" + key]
            lab.text = fmt_days(data[key])
            lab.props(f"data-value={data[key]}")
        for _title, rows in RESULT_ROWS:
            for key, _label, fmt in rows:
                lab = self.out_labels[key]
                lab.text = fmt(data[key])
                lab.props(f"data-value={json.dumps(data[key])}")
        self.state.version += 1
        self.breakdown.options.clear()
        self.breakdown.options.update(breakdown_chart(result))
        self.breakdown.props(f"data-version={self.state.version}")
        self.breakdown.update()
        self.warnings_box.clear()
        with self.warnings_box:
            if not result.warnings:
                self.ui.label("none").classes("text-grey-7")
            for w in result.warnings:
                with self.ui.row().classes("no-wrap items-start gap-2"):
                    self.ui.badge(w.code, color="orange-8").props(f"data-testid=warning-{w.code}")
                    self.ui.label(w.message).classes("text-body2")
        self.result_json.set(data)

    def show_groups(self, scenario: Scenario) -> None:
        """The groups' regions and result; with groups, the Nodes input shows their total (read-only)."""
        self.groups_card.show(scenario, self.state.result.model_dump(mode="json"))
        nodes = self.inputs.main.get("num_nodes")
        if nodes is not None:
            grouped = bool(scenario.node_groups)
            nodes.enabled = not grouped
            if grouped and self.state.values.get("num_nodes") != scenario.num_nodes:
                self.state.loading = True
                try:
                    self.state.values["num_nodes"] = scenario.num_nodes
                    nodes.value = scenario.num_nodes
                finally:
                    self.state.loading = False

    def update_share_link(self) -> None:
        query_string = share_query(self.state.values)
        extra = query_pairs(self.groups_card.groups, self.groups_card.rtt)
        if self.band.on:
            extra.append(("uncertainty", "true"))
        if extra:
            query_string = "&".join(p for p in (query_string, urlencode(extra)) if p)
        self.link_notice.text = link_notice(query_string) or ""
        path = "/" + (f"?{query_string}" if query_string else "")
        self.share_input.value = path
        self.shell.share(dict(parse_qsl(query_string)))
        self.ui.run_javascript(
            f"document.querySelector('[data-testid=share-url] input')?.setAttribute('data-path', {json.dumps(path)});"
        )

    def update_sweep(self, scenario: Scenario) -> None:
        fname = self.state.sweep_field
        try:
            values = default_range(scenario, fname, 41).tolist()
            batch = sweep(scenario, fname, values)
            # a planned `mfu: auto` is marked where the simulation put it
            planned = fname == "mfu" and scenario.mfu == "auto" and self.state.result is not None
            here = self.state.result.scenario["mfu"] if planned else current_value(scenario, fname)
        except ScenarioError as exc:
            # no stale chart: say why this field cannot be swept here
            self.sweep_plot.options.clear()
            self.sweep_plot.options.update(
                {
                    "title": {
                        "text": "No sweep: " + problems_text(exc, " "),
                        # wrapped inside the chart, not cut at its edges
                        "textStyle": {"width": 560, "overflow": "break", "fontSize": 13},
                    }
                }
            )
            self.sweep_plot.update()
            return
        days = [None if d != d else float(d) for d in batch["wall_clock_days"].tolist()]
        mfu = [None if m != m else float(m) for m in batch["global_mfu"].tolist()]
        self.sweep_plot.options.clear()
        self.sweep_plot.options.update(sweep_chart(fname, values, days, mfu, here))
        self.sweep_plot.props(f"data-version={self.state.version}-{fname}")
        self.sweep_plot.update()

    def on_sweep_field(self, e: Any) -> None:
        self.state.sweep_field = e.value
        if self.state.result is not None:
            self.update_sweep(self.current_scenario())

    def update_compare(self) -> None:
        ui = self.ui
        self.compare_box.clear()
        with self.compare_box:
            if self.state.pinned is None:
                ui.label("Pin a scenario to compare the current one with it.").classes("text-grey-7")
                return
            pinned_values, pinned = self.state.pinned
            ui.table(
                columns=[
                    {"name": c, "label": c, "field": c, "align": "left"}
                    for c in ("item", "pinned", "current", "change")
                ],
                rows=compare_rows(pinned_values, self.state.values, pinned, self.state.result),
                row_key="item",
            ).props("dense flat data-testid=compare-table").classes("w-full")

    def pin(self) -> None:
        if self.state.result is not None:
            self.state.pinned = (dict(self.state.values), self.state.result)
            self.update_compare()

    def unpin(self) -> None:
        self.state.pinned = None
        self.update_compare()

    def exports(self) -> list[tuple[str, Any]]:
        """The share card's downloads: the scenario (YAML, JSON) and the result (JSON, CSV)."""

        def scenario_file(dump: Any, name: str) -> Any:
            return lambda: (dump(self.export_fields()).encode(), name)

        def result_file(dump: Any, name: str) -> Any:
            return lambda: None if self.state.result is None else (dump(self.state.result).encode(), name)

        return [
            ("Scenario YAML", scenario_file(lambda f: yaml.safe_dump(f, sort_keys=False), "scenario.yaml")),
            ("Scenario JSON", scenario_file(lambda f: json.dumps(f, indent=2), "scenario.json")),
            ("Result JSON", result_file(lambda r: r.model_dump_json(indent=2), "result.json")),
            ("Result CSV", result_file(result_csv, "result.csv")),
        ]

    def import_scenario(self, data: dict[str, Any]) -> None:
        """Load an uploaded scenario file's mapping into the inputs (the share card reads the file and
        says what went wrong; a ScenarioError here leaves the inputs as they were)."""
        scenario = scenario_from_data(data)
        self.groups_card.set(*scenario_groups(scenario))
        self.set_values(scenario_to_values(scenario))

    def set_values(self, values: dict[str, Any]) -> None:
        """Show `values` in every input (without a recomputation per widget), then recompute once."""
        self.state.loading = True
        try:
            self.state.values = dict(values)
            self.inputs.show(values)
        finally:
            self.state.loading = False
        self.refresh()

    def on_preset(self, e: Any) -> None:
        if e.value and not self.state.loading and e.value != matching_preset(self.state.values):
            self.set_values(scenario_to_values(load_scenario(preset=e.value)))

    def show_presets(self) -> None:
        """The two preset menus name the presets the inputs equal (blank once an input departs from
        every preset), without loading them again."""
        self.state.loading = True
        try:
            self.preset_select.set_value(matching_preset(self.state.values))
            self.node_select.set_value(matching_node(self.state.values))
        finally:
            self.state.loading = False

    def on_node(self, e: Any) -> None:
        if not e.value or self.state.loading or e.value == matching_node(self.state.values):
            return
        node = catalog.nodes()[e.value]
        values = dict(self.state.values)
        values.update(
            gpu=node.gpu,
            gpus_per_node=node.gpu_count,
            pflops_per_node=node.pflops,
            vram_per_node_gb=node.vram_gb,
        )
        if node.precision:
            values["precision"] = node.precision
        self.set_values(values)


@functools.cache
def _preset_values() -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    return tuple(
        (pid, tuple(sorted(scenario_to_values(load_scenario(preset=pid)).items(), key=lambda kv: kv[0])))
        for pid in catalog.scenario_presets()
    )


def matching_preset(values: dict[str, Any]) -> str | None:
    """The first scenario preset whose inputs equal `values` ('default' for the defaults), else None."""
    items = tuple(sorted(values.items(), key=lambda kv: kv[0]))
    return next((pid for pid, v in _preset_values() if v == items), None)


def matching_node(values: dict[str, Any]) -> str | None:
    """The node preset whose hardware the inputs hold (GPU, count, PFLOP/s, VRAM), else None."""
    for key, node in catalog.nodes().items():
        if (
            values.get("gpu") == node.gpu
            and values.get("gpus_per_node") == node.gpu_count
            and values.get("pflops_per_node") == node.pflops
            and values.get("vram_per_node_gb") == node.vram_gb
        ):
            return key
    return None


def build_page(query: dict[str, str]) -> Page:
    """Build the page for one browser tab, its scenario taken from a share link's query when given."""
    from nicegui import ui

    return Page(ui, query)


def error_page(ui: Any) -> None:
    """What a page that failed to build shows: a short generic message (NiceGUI's own error page would
    show the exception; the traceback goes to the server's log only)."""
    with ui.column().classes("w-full items-center q-pa-xl").props("data-testid=server-error"):
        ui.label("500").classes("text-h3")
        ui.label(f"dtsim: {INTERNAL_ERROR}.").classes("text-body1")
        ui.link("Start again with the default scenario", "/")


def pending_pages() -> int:
    """Page loads whose browser has not connected (yet): NiceGUI clients without a socket."""
    from nicegui import Client

    return sum(1 for c in list(Client.instances.values()) if not c.has_socket_connection and not c.is_deleted)


def prune_pending_pages() -> None:
    from nicegui import Client

    Client.prune_instances(client_age_threshold=PENDING_PAGE_S)


def serve_view(ui: Any, view: Any, busy: Any) -> None:
    """Serve one view module (web/views) at its PATH, under the shared header."""

    @ui.page(view.PATH, title=f"dtsim: {view.TITLE}")
    def page(request: Request) -> Any:
        refused = busy()
        if refused is None:
            query = dict(request.query_params)
            ui.add_head_html(STYLE)
            view.build(ui, query, Shell(ui, view.PATH, query).build())
        return refused


def mount(app: FastAPI) -> None:
    """Serve the UI at / on the given FastAPI app (NiceGUI shares the app and its event loop)."""
    from fastapi.responses import HTMLResponse
    from nicegui import app as nicegui_app
    from nicegui import ui

    def busy() -> HTMLResponse | None:
        if pending_pages() > MAX_PENDING_PAGES:  # this load's own client is counted too
            ui.context.client.delete()
            return HTMLResponse(BUSY_PAGE, status_code=503, headers={"Retry-After": "30"})
        return None

    @ui.page("/", title="dtsim")
    def index(request: Request) -> HTMLResponse | None:
        refused = busy()
        if refused is None:
            build_page(dict(request.query_params))
        return refused

    for view in view_modules():
        serve_view(ui, view, busy)

    # NiceGUI logs the exception (its app.on_exception default) before this builds the page
    nicegui_app.on_page_exception(lambda: error_page(ui))
    nicegui_app.on_startup(lambda: nicegui_app.timer(PENDING_PAGE_S / 4, prune_pending_pages))

    ui.run_with(app, title="dtsim", favicon="📉", show_welcome_message=False, reconnect_timeout=10.0)
