"""What the limits, validation and sweep views share: the error card, the share/import/export card, the
hidden result JSON a browser test reads, reading an uploaded inputs file and a query's numbers.

`ui` is NiceGUI's module, passed in by the view, so importing this module stays cheap.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import yaml

from dtsim.errors import ScenarioError, format_problem
from dtsim.interfaces.cli.common import json_text
from dtsim.schema.inputs import decode_text, parse_data

log = logging.getLogger("dtsim.web")
MAX_UPLOAD_BYTES = 500_000  # an inputs file is under 1 KB; as the decentralized page's cap
UPLOAD_TYPES = (".yaml", ".yml", ".json")
INTERNAL_ERROR = "internal error; the details are in the server's log"


def problems_text(exc: ScenarioError, sep: str = "\n") -> str:
    """The problems one per line: `field = value: what is allowed`."""
    return sep.join(format_problem(f, v, m) for f, v, m in exc.problems)


def read_upload(name: str, raw: bytes) -> dict[str, Any]:
    """An uploaded inputs file (YAML, or JSON by its suffix) as a mapping, read as any user file is
    (schema/inputs.py: size, encoding, alias and nesting limits), or a ScenarioError naming the file."""
    shown = name if len(name) <= 80 else name[:79] + "…"
    if not name.lower().endswith(UPLOAD_TYPES):
        raise ScenarioError([("file", shown, "must be a .yaml, .yml or .json inputs file")])
    if len(raw) > MAX_UPLOAD_BYTES:
        raise ScenarioError([("file", shown, f"is {len(raw):,} bytes; at most {MAX_UPLOAD_BYTES:,}")])
    data = parse_data(decode_text(raw, shown), name, "file")
    if not isinstance(data, dict):
        raise ScenarioError([("file", shown, "must hold a mapping of the view's inputs")])
    return data


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


class ViewKit:
    """A view's error card, link notice, share/import/export card and hidden result JSON."""

    def __init__(self, ui: Any, shell: Any, slug: str) -> None:
        self.ui, self.shell, self.slug = ui, shell, slug
        self.error_card = ui.card().classes("w-full bg-red-1").props("data-testid=errors role=alert")
        self.error_card.visible = False
        with self.error_card:
            self.error_label = ui.label().classes("text-red-10 whitespace-pre-wrap")

    # --- errors --------------------------------------------------------------------------------------

    def show_error(self, exc: ScenarioError | str) -> None:
        self.error_label.text = exc if isinstance(exc, str) else problems_text(exc)
        self.error_card.visible = True

    def clear_error(self) -> None:
        self.error_card.visible = False

    def link_notice(self, text: str) -> None:
        """A share link whose query cannot be used: said above the view (the defaults are kept)."""
        with self.ui.card().classes("w-full bg-orange-1").props("data-testid=link-error"):
            self.ui.label(text).classes("text-orange-10 whitespace-pre-wrap")

    # --- share, import, export -----------------------------------------------------------------------

    def share_card(
        self,
        inputs: Callable[[], dict[str, Any]],
        result: Callable[[], Any],
        on_import: Callable[[dict[str, Any]], Awaitable[None] | None],
    ) -> None:
        """Copy the share link; download the inputs (YAML, JSON) and the result (JSON); upload an inputs
        file (what a download wrote), `on_import` taking its mapping (raising ScenarioError to refuse)."""
        ui = self.ui
        self._inputs, self._result, self._on_import = inputs, result, on_import
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Share, export, import").classes("text-weight-bold")
            with ui.row().classes("gap-2 flex-wrap items-center"):
                ui.button("Copy share link", on_click=self.copy_link).props("dense data-testid=copy-link")
                ui.button("Inputs YAML", on_click=lambda: self.export("yaml")).props("dense outline")
                ui.button("Inputs JSON", on_click=lambda: self.export("json")).props("dense outline")
                ui.button("Result JSON", on_click=lambda: self.export("result")).props("dense outline")
            self.uploader = (
                ui.upload(
                    label="Import inputs (YAML or JSON, as the Inputs buttons write them)",
                    auto_upload=True,
                    on_upload=self.import_file,
                    max_file_size=MAX_UPLOAD_BYTES,
                )
                .props("accept=.yaml,.yml,.json dense data-testid=import")
                .classes("w-full")
            )
            self.uploader.on(
                "rejected",
                lambda _e: self.import_failed(
                    f"Not imported: the browser refused the file (a .yaml, .yml or .json file of at most "
                    f"{MAX_UPLOAD_BYTES:,} bytes)"
                ),
            )
            self.import_error = (
                ui.label()
                .classes("text-red-10 whitespace-pre-wrap")
                .props("data-testid=import-error role=alert")
            )
            self.import_error.visible = False
        self.result_json = ui.label().props("data-testid=result-json").style("display: none")

    def set_result(self, payload: Any) -> None:
        """The JSON the view shows (strict: a value that is not finite is null; a date as its text, as
        the CLI's --json writes it), for a browser test."""
        self.result_json.text = json_text(payload, None, str)

    def copy_link(self) -> None:
        self.ui.run_javascript("navigator.clipboard && navigator.clipboard.writeText(location.href)")
        self.ui.notify("Link copied", timeout=1500)

    def export(self, kind: str) -> None:
        if kind == "yaml":
            self.ui.download(yaml.safe_dump(self._inputs(), sort_keys=False).encode(), f"{self.slug}.yaml")
        elif kind == "json":
            self.ui.download(json.dumps(self._inputs(), indent=2).encode(), f"{self.slug}.json")
        elif (result := self._result()) is not None:
            self.ui.download(json_text(result, 2, str).encode(), f"{self.slug}-result.json")

    async def import_file(self, e: Any) -> None:
        name = str(e.file.name or "the file")[:80]
        try:
            if e.file.size() > MAX_UPLOAD_BYTES:
                raise ScenarioError([("file", name, f"is over {MAX_UPLOAD_BYTES:,} bytes")])
            data = read_upload(name, await e.file.read())
            done = self._on_import(data)
            if done is not None:
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


class Latest:
    """Recompute a view off the event loop for its latest inputs only: `work(*args())` runs in a
    thread (NiceGUI's run.io_bound); an input change while it runs is noted and computed once it ends,
    so a burst of changes costs one run after the current one, not one each. `show(result)` or
    `fail(ScenarioError)` is called for the last inputs only."""

    def __init__(
        self,
        work: Callable[..., Any],
        args: Callable[[], tuple[Any, ...]],
        show: Callable[[Any], None],
        fail: Callable[[ScenarioError], None],
    ) -> None:
        self.work, self.args, self.show, self.fail = work, args, show, fail
        self.running = False
        self.pending = False

    async def __call__(self) -> None:
        from nicegui import run

        if self.running:
            self.pending = True
            return
        self.running = True
        try:
            while True:
                self.pending = False
                try:
                    result = await run.io_bound(self.work, *self.args())
                except ScenarioError as exc:
                    if not self.pending:
                        self.fail(exc)
                        return
                    continue
                if not self.pending:
                    self.show(result)
                    return
        finally:
            self.running = False
