"""A view made of one form and one answer: the layout shared by the network, target, governance and
sensitivity views (web/views).

A `FormView` is given the view's inputs (`Field`s named as the CLI's options are), a `compute`
function that returns the JSON its CLI command prints with `--json` (the same Python call, no second
implementation) and a `render` function that lays that answer out. It keeps the inputs in the URL
query (the share link), restores them from it (a value that cannot be used: a visible notice naming
the field, its default kept), imports and exports the inputs as YAML or JSON, exports the answer as
JSON, and holds the answer in a hidden `data-testid=result-json` element for the browser tests.

Every computation runs off the event loop (`nicegui.run.io_bound`): a change made while one runs is
computed once that one ends, so the answer shown is always the inputs' latest. A slow view's work
(governance, sensitivity, target searches, large plans) runs as one of the API's jobs in a worker
process (web/jobrun.py), its progress bar and ETA shown; a newer input or closing the tab cancels it.
Bad input shows the problems (field, value, what is allowed) and leaves the inputs and the last answer
as they were. Those pieces (error card, share card, result JSON, the newest-inputs-win
computation) are web/viewkit.py's, shared with every other view, and the job's progress bar is
web/jobrun.py's; this module adds the form's fields and layout.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dtsim.errors import ScenarioError, format_problem
from dtsim.interfaces.web.jobrun import JobLatest, JobProgress
from dtsim.interfaces.web.viewkit import (
    ErrorCard,
    Latest,
    ResultJson,
    ShareCard,
    inputs_exports,
    link_notice,
)

KINDS = ("number", "int", "select", "text", "lines", "switch")


@dataclass(frozen=True)
class Field:
    """One input of a form view. `name` is its key in the share link and in an inputs file; `flag` the
    CLI option it stands for (default: --name with dashes)."""

    name: str
    label: str
    kind: str  # one of KINDS; "lines": one value a line (a repeatable CLI option such as --set)
    default: Any = None
    options: tuple[str, ...] = ()  # a select's choices
    optional: bool = False  # may be blank (None: the CLI's default)
    tip: str = ""
    flag: str | None = None
    blank: str | None = None  # what a blank text input means (e.g. "none"), given to the CLI as such
    labels: tuple[str, ...] = ()  # a select's choices as shown, one per option (default: the options)
    off: str | None = None  # a switch's CLI option when off (--no-x): off is then given, not left out

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind

    @property
    def option(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def parse(self, raw: Any) -> Any:
        """A value from a share link (text) or an inputs file (YAML/JSON), or a ScenarioError naming the
        field, the value and what is allowed."""
        if raw is None or (isinstance(raw, str) and raw.strip() == ""):
            if self.kind == "lines":
                return []
            if self.blank is not None:
                return self.blank
            if self.optional:
                return None
            raise ScenarioError([(self.name, raw, "must be given")])
        if self.kind == "switch":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "1", "yes", "on"):
                return True
            if text in ("false", "0", "no", "off"):
                return False
            raise ScenarioError([(self.name, raw, "must be true or false")])
        if self.kind in ("number", "int"):
            if isinstance(raw, bool):
                raise ScenarioError([(self.name, raw, "must be a number")])
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise ScenarioError([(self.name, raw, "must be a number")]) from None
            if not math.isfinite(value):
                raise ScenarioError([(self.name, raw, "must be a finite number")])
            if self.kind == "int":
                if value != int(value):
                    raise ScenarioError([(self.name, raw, "must be a whole number")])
                return int(value)
            return value
        if self.kind == "select":
            if str(raw) not in self.options:
                raise ScenarioError([(self.name, raw, "must be one of " + ", ".join(self.options))])
            return str(raw)
        if self.kind == "lines":
            items = raw if isinstance(raw, list) else str(raw).splitlines()
            if not all(isinstance(x, str | int | float) and not isinstance(x, bool) for x in items):
                raise ScenarioError([(self.name, raw, "must be lines of text (name=value)")])
            return [str(x).strip() for x in items if str(x).strip()]
        if not isinstance(raw, str | int | float) or isinstance(raw, bool):
            raise ScenarioError([(self.name, raw, "must be text")])
        return str(raw).strip()

    def text(self, value: Any) -> str | None:
        """The value as the share link writes it (None: left out)."""
        if value is None or value == []:
            return None
        if self.kind == "lines":
            return "\n".join(value)
        if self.kind == "switch":
            return "true" if value else "false"
        if isinstance(value, float) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return str(value)

    def argv(self, value: Any) -> list[str]:
        """The CLI arguments that give this value (the browser tests run the CLI with them)."""
        if value is None or value == []:
            return []
        if self.kind == "lines":
            return [a for v in value for a in (self.option, v)]
        if self.kind == "switch":
            return [self.option] if value else ([self.off] if self.off else [])
        return [self.option, self.text(value) or ""]


def defaults(fields: tuple[Field, ...]) -> dict[str, Any]:
    return {f.name: ([] if f.kind == "lines" and f.default is None else f.default) for f in fields}


FLAG = re.compile(r"--[a-z][a-z0-9-]*")


def page_names(fields: tuple[Field, ...], exc: ScenarioError, keys: bool = False) -> ScenarioError:
    """`exc` with every field named as the page labels it: a problem's field given by its input name
    (`base`), its CLI option (`--base`) or both of a pair (`bandwidth_gbs/latency_us`), and a CLI
    option in a message, become the input's label ("Base samples (N)"). With `keys`, the label is
    followed by the name the share link or an inputs file writes (`Base samples (N) [base]`). Other
    names (a scenario field in a `name=value` line, a file) are left as they are."""
    by_key: dict[str, Field] = {}
    for f in fields:
        for key in (f.name, f.option):
            by_key.setdefault(key, f)

    def label(key: str) -> str:
        f = by_key[key]
        return f"{f.label} [{f.name}]" if keys else f.label

    def named(field: str) -> str:
        parts = str(field).split("/")
        return " / ".join(label(p) for p in parts) if all(p in by_key for p in parts) else str(field)

    def said(message: str) -> str:
        return FLAG.sub(lambda m: f"“{by_key[m[0]].label}”" if m[0] in by_key else m[0], str(message))

    return ScenarioError([(named(f), v, said(m)) for f, v, m in exc.problems])


def from_query(fields: tuple[Field, ...], query: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The inputs a share link gives (keys the view does not have, such as other views' shared keys,
    are left alone) and the problems of the values it could not use (their defaults kept), each named
    by its label and its key in the link."""
    values, problems = defaults(fields), []
    for f in fields:
        if f.name in query:
            try:
                values[f.name] = f.parse(query[f.name])
            except ScenarioError as exc:
                problems += [format_problem(*p) for p in page_names(fields, exc, keys=True).problems]
    return values, problems


def to_query(fields: tuple[Field, ...], values: dict[str, Any]) -> dict[str, str]:
    """The share link's query: every input that differs from its default."""
    base = defaults(fields)
    out = {}
    for f in fields:
        if values.get(f.name) != base[f.name]:
            out[f.name] = f.text(values.get(f.name)) or ""
    return out


def argv(fields: tuple[Field, ...], values: dict[str, Any]) -> list[str]:
    """CLI arguments for `values` (each field as its option)."""
    return [a for f in fields for a in f.argv(values.get(f.name))]


def from_mapping(fields: tuple[Field, ...], data: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """An inputs file's mapping (input name: value) over `current`, or a ScenarioError naming every
    input it does not have and every value it cannot use, in the file's order."""
    by_name = {f.name: f for f in fields}
    allowed = ", ".join(by_name)
    values, problems = dict(current), []
    for k, v in data.items():
        if k not in by_name:
            problems.append((str(k), v, f"is not an input of this view; allowed: {allowed}"))
            continue
        try:
            values[k] = by_name[k].parse(v)
        except ScenarioError as exc:
            problems += exc.problems
    if problems:
        raise ScenarioError(problems)
    return values


def fmt(x: Any, digits: int = 4) -> str:
    """A number for a table cell: grouped thousands, scientific beyond 1e6 or below 1e-3."""
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if not math.isfinite(x):
        return "—"
    if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3):
        return f"{x:.3e}"
    if abs(x) >= 10**digits:
        return f"{x:,.0f}"
    return f"{x:,.{digits}g}"


@dataclass
class FormView:
    """One browser tab's form view. `compute(values)` returns the answer (the CLI's `--json` object) or
    raises ScenarioError; `render(ui, answer, values)` draws it (inside the results column). The error
    card, share card, hidden result JSON and the newest-inputs-win computation are viewkit's."""

    ui: Any
    shell: Any
    query: dict[str, str]
    fields: tuple[Field, ...]
    compute: Callable[[dict[str, Any]], dict[str, Any]]
    render: Callable[[Any, dict[str, Any], dict[str, Any]], None]
    title: str
    intro: str = ""
    slow: bool = False  # the work runs as an API job of `module` (web/jobrun.py), its progress bar shown
    sections: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (heading, field names): one card each
    progress: bool = False  # compute takes a progress=(done, total) callback (a job's progress bar)
    module: str = ""  # the view's module: a slow view's compute runs there as an API job (web/jobrun.py)
    inline: Callable[[dict[str, Any]], bool] | None = None  # slow view: inputs quick enough for in-process
    # linked(name, values): the other inputs a change of input `name` sets (shown in the form), e.g. a
    # software profile's settings; {} for none
    linked: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    values: dict[str, Any] = field(default_factory=dict)
    answer: dict[str, Any] | None = None
    widgets: dict[str, Any] = field(default_factory=dict)
    loading: bool = False

    def build(self) -> FormView:
        if self.slow and not self.module:
            raise ValueError(f"{self.title}: a slow FormView needs its module (its work runs there as a job)")
        ui = self.ui
        self.values, problems = from_query(self.fields, self.query)
        with ui.row().classes("w-full items-start gap-4 flex-wrap q-pa-sm"):
            with ui.column().classes("gap-1").style("flex: 1 1 320px; max-width: 420px; min-width: 280px"):
                with ui.card().classes("w-full q-pa-sm"):
                    ui.label(self.title).classes("text-h6")
                    if self.intro:
                        ui.label(self.intro).classes("text-caption text-grey-8")
                    if not self.sections:
                        for f in self.fields:
                            self._widget(f)
                by_name = {f.name: f for f in self.fields}
                for heading, names in self.sections:
                    with ui.card().classes("w-full q-pa-sm"):
                        ui.label(heading).classes("text-weight-bold")
                        for name in names:
                            self._widget(by_name[name])
                stem = self.shell.current.strip("/") or "view"
                self.share = ShareCard(
                    ui, inputs_exports(stem, self.inputs_data, lambda: self.answer), self.import_inputs
                )
            with ui.column().classes("gap-2").style("flex: 2 1 420px; min-width: 300px"):
                if problems:
                    link_notice(ui, "Ignored in the link: " + "; ".join(problems))
                self.errors = ErrorCard(ui)
                self.job_progress = JobProgress(ui) if self.slow else None
                self.results = ui.column().classes("w-full gap-2").props("data-testid=results")
                self.result_json = ResultJson(ui)
        if self.job_progress is not None:  # long work: a job of the API's runner, its progress shown
            self.latest = JobLatest(
                kind=self.module.rsplit(".", 1)[-1],
                work=self._work,
                args=lambda: (dict(self.values),),
                kwargs=lambda values: {"module": self.module, "values": values, "counted": self.progress},
                show=self.show,
                fail=self.show_error,
                progress=self.job_progress,
                client=ui.context.client,
                inline=self.inline,
            )
        else:
            self.latest = Latest(self._work, lambda: (dict(self.values),), self.show, self.show_error)
        self.ui.timer(0.0, self.refresh, once=True)
        return self

    # --- inputs ---------------------------------------------------------------------------------------

    def _widget(self, f: Field) -> None:
        ui, value = self.ui, self.values.get(f.name)

        async def changed(e: Any, f: Field = f) -> None:
            await self.on_input(f, e.value)

        if f.kind in ("number", "int"):
            w = ui.number(f.label, value=value, on_change=changed)
            w.props("dense" + (" clearable" if f.optional else ""))
        elif f.kind == "select":
            choices = dict(zip(f.options, f.labels, strict=True)) if f.labels else list(f.options)
            w = ui.select(choices, label=f.label, value=value, on_change=changed)
            w.props("dense" + (" clearable" if f.optional else ""))
        elif f.kind == "switch":
            w = ui.switch(f.label, value=bool(value), on_change=changed).props("dense")
        elif f.kind == "lines":
            w = ui.textarea(f.label, value="\n".join(value or []), on_change=changed)
            w.props("dense autogrow")
        else:
            w = ui.input(f.label, value=value or "", on_change=changed).props("dense")
        w.props(f"data-testid={f.name}").classes("w-full")
        if f.tip:
            w.tooltip(f.tip)
        self.widgets[f.name] = w

    async def on_input(self, f: Field, raw: Any) -> None:
        if self.loading:
            return
        try:
            value = f.parse(raw)
        except ScenarioError as exc:
            self.show_error(exc)
            return
        changed = value != self.values.get(f.name)
        self.values[f.name] = value
        # a change made here, not the echo of set_values (an import, a linked change) shown in a widget
        if changed and self.linked is not None:
            try:
                also = self.linked(f.name, dict(self.values))
            except ScenarioError as exc:
                self.show_error(exc)
                return
            if also:
                await self.set_values({**self.values, **also})
                return
        await self.refresh()

    async def set_values(self, values: dict[str, Any]) -> None:
        """Show `values` in every input (without a computation per widget), then compute once."""
        self.loading = True
        try:
            self.values = dict(values)
            for f in self.fields:
                v = values.get(f.name)
                w = self.widgets[f.name]
                w.value = (
                    "\n".join(v or []) if f.kind == "lines" else ("" if v is None and f.kind == "text" else v)
                )
        finally:
            self.loading = False
        await self.refresh()

    def show_error(self, exc: ScenarioError | str) -> None:
        """The problems in the error card, each input named by its label (the CLI's and the API's
        names stay theirs)."""
        self.errors.show(exc if isinstance(exc, str) else page_names(self.fields, exc))

    # --- computing ------------------------------------------------------------------------------------

    async def refresh(self) -> None:
        """Compute the answer for the current inputs (once a computation under way ends, if one is)."""
        full = {f.name: f.text(self.values.get(f.name)) for f in self.fields}  # the links: defaults too
        self.shell.share(to_query(self.fields, self.values), links=full)
        await self.latest()

    def _work(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The computation (in a thread, no progress shown: the quick inputs of a slow view, or a quick
        view): the answer and the inputs it answers."""
        return self.compute(values), values

    def show(self, done: tuple[dict[str, Any], dict[str, Any]]) -> None:
        answer, values = done
        self.errors.clear()
        self.answer = answer
        self.results.clear()
        with self.results:
            self.render(self.ui, answer, values)
        self.result_json.set(answer)

    # --- share, import, export ------------------------------------------------------------------------

    def inputs_data(self) -> dict[str, Any]:
        return {f.name: self.values.get(f.name) for f in self.fields}

    def import_inputs(self, data: dict[str, Any]) -> None:
        """Take an uploaded inputs file's mapping (a ScenarioError, naming the inputs it cannot use,
        leaves the inputs as they were, each named by its label and its key in the file); the inputs are
        shown and computed once the import is said."""
        try:
            values = from_mapping(self.fields, data, self.values)
        except ScenarioError as exc:
            raise page_names(self.fields, exc, keys=True) from None
        self.ui.timer(0.0, lambda: self.set_values(values), once=True)


def form_page(module: str, **options: Any) -> Callable[[Any, dict[str, str], Any], None]:
    """A form view module's `build(ui, query, shell)`: a FormView of that module's `fields()`, `compute`
    and `render`, with `options` (title, intro, slow, progress, sections)."""

    def build(ui: Any, query: dict[str, str], shell: Any) -> None:
        m = sys.modules[module]
        jobbed = {"module": module, "inline": getattr(m, "inline", None)} if options.get("slow") else {}
        linked = getattr(m, "linked", None)
        FormView(
            ui, shell, query, m.fields(), m.compute, m.render, **options, **jobbed, linked=linked
        ).build()

    return build


def table(ui: Any, rows: list[dict[str, Any]], testid: str, columns: list[str] | None = None) -> Any:
    """A dense table of `rows` (dicts), its columns the keys of the first row unless given."""
    cols = columns or (list(rows[0]) if rows else [])
    return (
        ui.table(
            columns=[{"name": c, "label": c, "field": c, "align": "left"} for c in cols],
            rows=[{c: r.get(c, "") for c in cols} for r in rows],
        )
        .props(f"dense flat data-testid={testid}")
        .classes("w-full")
    )


def key_values(ui: Any, items: list[tuple[str, str, str]]) -> None:
    """A two-column grid of (label, shown value, testid)."""
    with ui.grid(columns=2).classes("w-full gap-x-3 gap-y-0"):
        for label, shown, testid in items:
            ui.label(label).classes("text-body2 text-grey-8")
            ui.label(shown).classes("text-body2 text-right").style(
                "font-variant-numeric: tabular-nums"
            ).props(f"data-testid={testid}")


def warnings_box(ui: Any, notes: list[Any]) -> None:
    """Warnings (dicts with code and message, or text), each visible; 'none' when there are none."""
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("Warnings").classes("text-weight-bold")
        with ui.column().classes("gap-1 w-full").props("data-testid=warnings"):
            if not notes:
                ui.label("none").classes("text-grey-7")
            for n in notes:
                with ui.row().classes("no-wrap items-start gap-2"):
                    if isinstance(n, dict):
                        ui.badge(str(n.get("code", "")), color="orange-8")
                        ui.label(str(n.get("message", ""))).classes("text-body2")
                    else:
                        ui.label(str(n)).classes("text-body2 text-orange-10")
