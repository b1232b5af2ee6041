"""The pieces every web view shares, in one place: the problems' text, reading an uploaded inputs file
within the size and type limits, the error card, the link notice, the share/import/export card, the
hidden result JSON a browser test reads, the spinner, and running a computation off the event loop for
the newest inputs only.

The decentralized page (web/page.py), the form views (web/formview.py: network, target, governance,
sensitivity, step, plan) and the views with their own layout (limits, validation, sweep) are all built
on these, so a fix to one (an upload the browser refuses, an exception in a computation) reaches all.

`ui` is NiceGUI's module, passed in by the caller, so importing this module stays cheap.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import yaml

from dtsim.errors import QUOTE_CHARS, ScenarioError, format_problem
from dtsim.interfaces.operations import json_default, json_text
from dtsim.schema.inputs import decode_text, parse_data

log = logging.getLogger("dtsim.web")
# A scenario file is ~2 KB and a view's inputs file under 1 KB; the upload's multipart body stays under
# the API's request cap.
MAX_UPLOAD_BYTES = 500_000
UPLOAD_TYPES = (".yaml", ".yml", ".json")
INTERNAL_ERROR = "internal error; the details are in the server's log"

# what a download writes: (bytes, file name), or None when there is nothing to write yet
Download = tuple[bytes, str] | None


def problems_text(exc: ScenarioError, sep: str = "\n") -> str:
    """The problems one per line (or `sep`-joined): `field = value: what is allowed`, each value quoted
    in at most 80 characters; a blank input is `field: what is allowed` (no Python None on a page), and
    a pair of inputs shows a blank one as blank."""

    def line(field: str, value: Any, message: str) -> str:
        if value is None:
            return f"{field}: {message}"
        if isinstance(value, tuple) and any(v is None for v in value):
            value = " / ".join(
                "blank" if v is None else f"{v:g}" if isinstance(v, float) else str(v) for v in value
            )
        return format_problem(field, value, message)

    return sep.join(line(f, v, m) for f, v, m in exc.problems)


def widget_label(w: Any) -> str | None:
    """The label a NiceGUI input shows (its `label` prop, or a switch's text), or None."""
    props = getattr(w, "props", None)
    label = props.get("label") if isinstance(props, dict) else None
    return label or getattr(w, "text", None) or None


def labelled(exc: ScenarioError, labels: dict[str, str | None]) -> ScenarioError:
    """`exc` with a problem about an input named by its label and its key (`Label [key]`); a CLI
    option (`--months`) counts as its key; other names are left as they are."""

    def named(field: str) -> str:
        key = str(field).removeprefix("--").replace("-", "_")
        label = labels.get(key)
        if not label:
            return str(field)
        room = QUOTE_CHARS - len(key) - 3  # a message names a field in at most QUOTE_CHARS: keep the key
        return f"{label if len(label) <= room else label[: room - 1] + '…'} [{key}]"

    return ScenarioError([(named(f), v, m) for f, v, m in exc.problems])


def read_upload(
    name: str, raw: bytes, kind: str = "inputs", holds: str = "this view's inputs"
) -> dict[str, Any]:
    """An uploaded file (YAML, or JSON by its suffix) as a mapping, read as any user file is
    (schema/inputs.py: size, encoding, alias and nesting limits), or a ScenarioError naming the file.
    `kind` names the file ("inputs", "scenario") and `holds` what its mapping holds."""
    shown = name if len(name) <= 80 else name[:79] + "…"
    if not name.lower().endswith(UPLOAD_TYPES):
        raise ScenarioError([("file", shown, f"must be a .yaml, .yml or .json {kind} file")])
    if len(raw) > MAX_UPLOAD_BYTES:
        raise ScenarioError([("file", shown, f"is {len(raw):,} bytes; at most {MAX_UPLOAD_BYTES:,}")])
    data = parse_data(decode_text(raw, shown), name, "file")
    if not isinstance(data, dict):
        raise ScenarioError([("file", shown, f"must hold a mapping of {holds}")])
    return data


def top_key(field: str) -> str:
    """The key of a file's mapping a problem's field names: `node_groups[0].count` → `node_groups`."""
    return str(field).split(".")[0].split("[")[0]


def every_problem(load: Callable[[dict[str, Any]], Any], data: dict[str, Any]) -> Any:
    """`load(data)`, or a ScenarioError with every problem of the file found, not only those of the
    first check that refused it (a reader stops at its first stage: the unknown keys before the
    values, a value's range before the fields that depend on it). After a refusal the keys its
    problems name are left out and the rest is read again, until it reads or no key is named; a
    later round adds only problems of keys still in the file (not the leaving out's consequences)."""
    problems: list[tuple[str, Any, str]] = []
    rest = dict(data)
    while True:
        try:
            out = load(rest)
        except ScenarioError as exc:
            found = [p for p in exc.problems if p not in problems]
            if problems:  # a later round: what the file itself holds
                found = [p for p in found if top_key(p[0]) in rest]
            problems += found
            named = {top_key(f) for f, _v, _m in exc.problems} & set(rest)
            if not named or not found:
                raise ScenarioError(problems) from None
            rest = {k: v for k, v in rest.items() if k not in named}
            continue
        if problems:
            raise ScenarioError(problems)
        return out


def rejected_text(entries: Any, kind: str = "inputs") -> str:
    """Why the browser refused files before sending them (Quasar's `rejected` event, as ShareCard's
    handler passes it: a list of {name, size, why}): each file's name and the limit it broke."""
    lines = []
    for entry in (entries if isinstance(entries, list) else [])[:5]:
        entry = entry if isinstance(entry, dict) else {}
        name = str(entry.get("name") or "the file")[:80]
        if entry.get("why") == "max-file-size":
            lines.append(f"{name}: is {entry.get('size', 0):,} bytes; at most {MAX_UPLOAD_BYTES:,}")
        else:
            lines.append(f"{name}: must be a .yaml, .yml or .json {kind} file")
    return "Not imported: " + ("\n".join(lines) or "the browser refused the file")


def number(query: dict[str, Any], key: str, default: float | None, lo: float, hi: float) -> float | None:
    """`query[key]` as a finite number in [lo, hi] (None or '' keeps `default`), or a ScenarioError
    naming the field, the value and the range allowed."""
    raw = query.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ScenarioError([(key, raw, f"must be a number between {lo:g} and {hi:g}")]) from None
    if not lo <= value <= hi:  # NaN fails both comparisons
        raise ScenarioError([(key, raw, f"must be between {lo:g} and {hi:g}")])
    return value


def choice(query: dict[str, Any], key: str, default: str, allowed: tuple[str, ...] | list[str]) -> str:
    raw = query.get(key)
    if raw is None or raw == "":
        return default
    if str(raw) not in allowed:
        raise ScenarioError([(key, raw, "must be one of " + ", ".join(allowed))])
    return str(raw)


def flag(query: dict[str, Any], key: str) -> bool:
    raw = query.get(key)
    text = str(raw).strip().lower()
    if raw is None or text in ("", "false", "0"):
        return False
    if text in ("true", "1"):
        return True
    raise ScenarioError([(key, raw, "must be true or false")])


# --- page elements -------------------------------------------------------------------------------------


class ErrorCard:
    """A red card saying the problems of the inputs (hidden while there are none)."""

    def __init__(self, ui: Any) -> None:
        self.card = ui.card().classes("w-full bg-red-1").props("data-testid=errors role=alert")
        self.card.visible = False
        with self.card:
            self.label = ui.label().classes("text-red-10 whitespace-pre-wrap")
            # an answer below was worked out for the last inputs that held, not these
            ui.label(
                "Any answer below is still the one for the last inputs that held; it is not updated until "
                "these are fixed."
            ).classes("text-caption text-red-10").props("data-testid=errors-stale")

    def show(self, exc: ScenarioError | str) -> None:
        self.label.text = exc if isinstance(exc, str) else problems_text(exc)
        self.card.visible = True

    def clear(self) -> None:
        self.card.visible = False


def link_notice(ui: Any, text: str) -> None:
    """A share link whose query cannot be used: said above the view (the defaults are kept)."""
    with ui.card().classes("w-full bg-orange-1").props("data-testid=link-error"):
        ui.label(text).classes("text-orange-10 whitespace-pre-wrap")


class ResultJson:
    """The answer shown, as strict JSON in a hidden element (data-testid=result-json) a browser test
    reads: a value that is not finite is null, a numpy scalar a number, a date its text."""

    def __init__(self, ui: Any) -> None:
        self.label = ui.label().props("data-testid=result-json").style("display: none")

    def set(self, payload: Any) -> None:
        self.label.text = json_text(payload, None, json_default)

    @property
    def text(self) -> str:
        return self.label.text


class Busy:
    """A spinner and how long the work has run, with its share done when the work reports one
    (`fraction`, written by the work's thread and only read here, by the event loop's timer)."""

    def __init__(self, ui: Any, testid: str = "busy") -> None:
        self.ui = ui
        with ui.row().classes("items-center gap-2") as self.row:
            ui.spinner(size="md")
            self.label = ui.label("computing…").props(f"data-testid={testid}")
        self.row.visible = False
        self.fraction: float | None = None
        self._timer: Any = None

    def start(self) -> None:
        self.fraction = None
        self.label.text = "computing…"
        self.row.visible = True
        if self._timer is None:
            started = time.perf_counter()
            self._timer = self.ui.timer(0.5, lambda: self._tick(started))

    def note(self, done: int, total: int) -> None:
        """A progress callback for the work (called from its thread)."""
        self.fraction = done / total if total else None

    def _tick(self, started: float) -> None:
        share = "" if self.fraction is None else f", {self.fraction:.0%} done"
        self.label.text = f"computing… {time.perf_counter() - started:.0f} s{share}"

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.row.visible = False


def inputs_exports(
    slug: str, inputs: Callable[[], dict[str, Any]], result: Callable[[], Any]
) -> list[tuple[str, Callable[[], Download]]]:
    """The usual downloads of a view: its inputs as YAML and JSON (what an import reads back) and its
    answer as strict JSON."""

    def answer() -> Download:
        payload = result()
        return (
            None if payload is None else (json_text(payload, 2, json_default).encode(), f"{slug}-result.json")
        )

    return [
        ("Inputs YAML", lambda: (yaml.safe_dump(inputs(), sort_keys=False).encode(), f"{slug}-inputs.yaml")),
        ("Inputs JSON", lambda: (json.dumps(inputs(), indent=2).encode(), f"{slug}-inputs.json")),
        ("Result JSON", answer),
    ]


class ShareCard:
    """Copy the share link; download what `exports` write; upload a file (what a download wrote), read
    with `read_upload` and given to `on_import` as a mapping. `on_import` (sync or async) applies it or
    raises ScenarioError to refuse it: then the inputs stay as they were and the card says why, beside
    the upload and in a notification. A file the browser refuses before sending (type, size) is named
    with the limit it broke; any other failure says so (never silently) and logs the traceback.
    `link_box` adds a read-only box with the share link's path (data-testid=share-url)."""

    def __init__(
        self,
        ui: Any,
        exports: Sequence[tuple[str, Callable[[], Download]]],
        on_import: Callable[[dict[str, Any]], Awaitable[None] | None],
        *,
        kind: str = "inputs",
        holds: str = "this view's inputs",
        link_box: bool = False,
    ) -> None:
        self.ui, self.on_import, self.kind, self.holds = ui, on_import, kind, holds
        self.link_input: Any = None
        self.below_link: Any = None  # with link_box: a column under the link, for what the caller says of it
        with ui.card().classes("w-full q-pa-sm") as self.card:
            ui.label("Share, export, import").classes("text-weight-bold")
            if link_box:
                with ui.row().classes("w-full items-center gap-2 no-wrap"):
                    self.link_input = (
                        ui.input("Share link").props("readonly dense data-testid=share-url").classes("flex-1")
                    )
                    ui.button("Copy", on_click=self.copy_link).props("dense data-testid=copy-link")
                self.below_link = ui.column().classes("w-full gap-0")
            with ui.row().classes("gap-2 flex-wrap items-center"):
                if not link_box:
                    ui.button("Copy share link", on_click=self.copy_link).props("dense data-testid=copy-link")
                for text, make in exports:
                    ui.button(text, on_click=lambda make=make: self.download(make)).props("dense outline")
            self.uploader = (
                ui.upload(
                    label=f"Import {'a scenario' if kind == 'scenario' else 'an inputs'} file (YAML or JSON, "
                    "as the downloads write them)",
                    auto_upload=True,
                    on_upload=self.import_file,
                    max_file_size=MAX_UPLOAD_BYTES,
                )
                .props("accept=.yaml,.yml,.json dense data-testid=import")
                .classes("w-full")
            )
            # files the browser refuses before sending (the accept filter, the size cap): their names
            # and why, from Quasar's `rejected` event
            self.uploader.on(
                "rejected",
                lambda e: self.import_failed(rejected_text(e.args, self.kind)),
                js_handler="(entries) => emit((entries || []).map(e => ({name: String(e.file?.name ?? ''), "
                "size: Number(e.file?.size ?? 0), why: String(e.failedPropValidation ?? '')})))",
            )
            self.import_error = (
                ui.label()
                .classes("text-red-10 whitespace-pre-wrap")
                .props("data-testid=import-error role=alert")
            )
            self.import_error.visible = False

    def copy_link(self) -> None:
        self.ui.run_javascript("navigator.clipboard && navigator.clipboard.writeText(location.href)")
        self.ui.notify("Link copied", timeout=1500)

    def download(self, make: Callable[[], Download]) -> None:
        try:
            made = make()
        except ScenarioError as exc:  # inputs that do not hold make no file: say why
            self.ui.notify("Not downloaded: " + problems_text(exc, "; "), type="negative", multi_line=True)
            return
        if made is not None:
            self.ui.download(*made)

    async def import_file(self, e: Any) -> None:
        name = str(e.file.name or "the file")[:80]
        try:
            if e.file.size() > MAX_UPLOAD_BYTES:
                raise ScenarioError([("file", name, f"is over {MAX_UPLOAD_BYTES:,} bytes")])
            data = read_upload(name, await e.file.read(), self.kind, self.holds)
            done = self.on_import(data)
            if inspect.isawaitable(done):
                await done
        except ScenarioError as exc:
            self.import_failed(f"Not imported: {name}\n" + problems_text(exc))
            return
        except Exception:  # never a silent failure: the page says so, the log has the traceback
            log.exception("importing %s failed", name)
            self.import_failed(f"Not imported: {name}: {INTERNAL_ERROR}")
            return
        self.import_error.visible = False
        self.uploader.reset()
        self.ui.notify(f"Imported {name}", type="positive")

    def import_failed(self, message: str) -> None:
        self.import_error.text = message
        self.import_error.visible = True
        self.uploader.reset()
        self.ui.notify(message, type="negative", multi_line=True, timeout=10_000)


class ViewKit:
    """A view's error card, link notice, share/import/export card and hidden result JSON, for a view
    that lays itself out (limits, validation, sweep)."""

    def __init__(self, ui: Any, shell: Any, slug: str) -> None:
        self.ui, self.shell, self.slug = ui, shell, slug
        self.errors = ErrorCard(ui)

    def show_error(self, exc: ScenarioError | str) -> None:
        self.errors.show(exc)

    def clear_error(self) -> None:
        self.errors.clear()

    def link_notice(self, text: str) -> None:
        link_notice(self.ui, text)

    def share_card(
        self,
        inputs: Callable[[], dict[str, Any]],
        result: Callable[[], Any],
        on_import: Callable[[dict[str, Any]], Awaitable[None] | None],
    ) -> None:
        """The share card (inputs as YAML and JSON, the result as JSON, an inputs file's import) and,
        after it, the hidden result JSON."""
        self.share = ShareCard(self.ui, inputs_exports(self.slug, inputs, result), on_import)
        self.result_json = ResultJson(self.ui)

    def set_result(self, payload: Any) -> None:
        self.result_json.set(payload)


class KitView:
    """What the views that lay themselves out (limits, sweep, validation) do alike. A subclass sets
    `ui`, `kit` (ViewKit), `latest` (Latest), `widgets`, and defines `on_input(name, value)` and
    `show(data)`."""

    ui: Any
    kit: ViewKit
    latest: Latest
    widgets: dict[str, Any]
    version: int = 0  # bumped on every answer shown; charts carry it as data-version
    data: Any = None  # the answer shown
    loading: bool = False  # set while inputs are written back to the widgets (no recomputation)

    def bind(self, name: str, w: Any) -> Any:
        """An input widget: dense, full width, `data-testid=name`, its change given to on_input."""
        self.widgets[name] = w
        w.props(f"dense data-testid={name}").classes("w-full")
        w.on_value_change(lambda e, name=name: self.on_input(name, e.value))
        return w

    def show_error(self, exc: ScenarioError | str) -> None:
        """The problems in the error card, each input named by its widget's label and its key in the
        share link (`Time limit (months) [months]`), as the form views name theirs."""
        if isinstance(exc, ScenarioError):
            exc = labelled(exc, {k: widget_label(w) for k, w in self.widgets.items()})
        self.kit.show_error(exc)

    def accept(self, data: Any) -> None:
        """Show an answer: the error card goes, the answer is kept (for the Result JSON download)."""
        self.version += 1
        self.kit.clear_error()
        self.data = data
        self.show(data)

    async def try_import(self, *args: Any) -> Any:
        """The answer for an imported file's inputs, computed off the event loop before they are applied
        (a ScenarioError refuses the import and leaves the inputs as they were)."""
        from nicegui import run

        return await run.io_bound(self.latest.work, *args)

    def accept_import(self, data: Any) -> None:
        """Show an imported file's answer once its inputs are in the widgets; a run of the old inputs
        still in flight does not show its answer (it runs once more, for the inputs now current)."""
        self.accept(data)
        self.latest.drop_running()


class Latest:
    """Recompute a view off the event loop for its latest inputs only: `work(*args())` runs in a
    thread (NiceGUI's run.io_bound); an input change while it runs is noted and computed once it ends,
    so a burst of changes costs one run after the current one, not one each. `show(result)` or
    `fail(ScenarioError | text)` is called for the last inputs only; an exception other than a
    ScenarioError is logged and said as INTERNAL_ERROR (never a silent failure). `busy` (a Busy, or
    anything with start() and stop(): web/jobrun.py's JobProgress), when given, is shown while the work
    runs. A subclass changes how the work runs (`run`) and what a newer input does to the run under way
    (`on_newer`): web/jobrun.py's JobLatest runs it as an API job and cancels that job."""

    def __init__(
        self,
        work: Callable[..., Any],
        args: Callable[[], tuple[Any, ...]],
        show: Callable[[Any], None],
        fail: Callable[[ScenarioError | str], None],
        busy: Busy | None = None,
    ) -> None:
        self.work, self.args, self.show, self.fail, self.busy = work, args, show, fail, busy
        self.name = getattr(work, "__qualname__", "a view")  # what the log says failed
        self.running = False
        self.pending = False

    async def run(self, *args: Any) -> Any:
        """The work's result for these inputs (in a thread), or None: nothing to show (run.io_bound
        gives None once the server is stopping; a subclass that said the outcome itself)."""
        from nicegui import run

        return await run.io_bound(self.work, *args)

    def on_newer(self) -> None:
        """A newer input arrived while the work runs: here nothing (its result is just not shown)."""

    async def __call__(self) -> None:
        if self.running:
            self.pending = True
            self.on_newer()
            return
        self.running = True
        if self.busy is not None:
            self.busy.start()
        try:
            while True:
                self.pending = False
                try:
                    result = await self.run(*self.args())
                except ScenarioError as exc:
                    if not self.pending:
                        self.fail(exc)
                        return
                    continue
                except Exception:
                    log.exception("computing %s failed", self.name)
                    if not self.pending:
                        self.fail(INTERNAL_ERROR)
                        return
                    continue
                if self.pending:  # a newer input arrived: compute that one
                    continue
                if result is not None:
                    self.show(result)
                return
        finally:
            self.running = False
            if self.busy is not None:
                self.busy.stop()

    def drop_running(self) -> None:
        """The run under way, if any, is for inputs no longer wanted: its answer is not shown (the work
        runs once more, for the inputs current then); a subclass stops it as for a newer input."""
        if self.running:
            self.pending = True
            self.on_newer()
