"""The page's views: one per capability, sharing one header (the navigation) and the scenario fields the
views have in common.

Each view is a module of this package with
- `PATH` (its URL, e.g. "/step"), `LABEL` (its name in the navigation), `TITLE` (the browser tab's), and
- `build(ui, query: dict[str, str], shell: Shell) -> None`, which lays out the view for one browser tab
  below the header, its state taken from the share link's query.

`VIEWS` lists them in navigation order; `mount` (web/page.py) serves each at its path. The decentralized
simulator (web/page.py) stays at "/". What the views share is the URL query: a view calls
`shell.share(params)` whenever its state changes, which rewrites the address bar (the share link) and
carries the fields every view understands (SHARED_KEYS: the model, the accelerator, the cluster size)
into the navigation links, so moving from `step` to `plan` keeps the model and cluster. A link clicked
also brings back its view's own last query in this browser tab (NAV_MEMORY), so a view's other edits
survive a visit to another view.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

# (path, label, module under dtsim.interfaces.web.views or None for the decentralized page at "/")
NAVIGATION: tuple[tuple[str, str, str | None], ...] = (
    ("/", "Decentralized", None),
    ("/step", "Step", "step"),
    ("/plan", "Plan", "plan"),
    ("/limits", "Limits", "limits"),
    ("/validation", "Validation", "validation"),
    ("/sweep", "Sweep", "sweep"),
    ("/network", "Network", "network"),
    ("/target", "Target", "target"),
    ("/governance", "Governance", "governance"),
    ("/sensitivity", "Sensitivity", "sensitivity"),
)
# Query keys a view hands on to the others when the user moves between views.
SHARED_KEYS = ("model", "gpu", "nodes", "gpus_per_node", "tokens", "preset")
# Each view's last query in this browser tab (sessionStorage: one tab's, kept across its page loads),
# written when the tab leaves a view (its address bar is its share link: `share` keeps it current). A
# navigation link, when clicked, takes its view's last query with the shared keys it carries over it
# (those named in its data-clear, held blank by the view left, taken out), so moving to another view
# and back keeps the view's own edits (the links carried only SHARED_KEYS) and the shared keys as the
# view left had them (Shell.share: its links carry them at their current values, defaults included).
NAV_MEMORY = """<script>
(() => {
  const key = (path) => "dtsim-query:" + path;
  const keep = () => sessionStorage.setItem(key(location.pathname), location.search);
  window.addEventListener("pagehide", keep);
  document.addEventListener("click", (event) => {
    const a = event.target.closest && event.target.closest("[data-testid=nav] a[href]");
    if (!a) return;
    keep();
    const url = new URL(a.getAttribute("href"), location.href);
    const last = sessionStorage.getItem(key(url.pathname));
    if (last === null) return;
    const params = new URLSearchParams(last);
    for (const k of (a.dataset.clear || "").split(",")) if (k) params.delete(k);
    for (const [k, v] of url.searchParams) params.set(k, v);
    const query = params.toString();
    if (query.length > MAX_QUERY_BYTES) return;  // a link the server would refuse: the shared keys only
    a.setAttribute("href", url.pathname + (query ? "?" + query : ""));
  }, true);
})();
</script>"""


def view_modules() -> list[Any]:
    """The view modules in navigation order (imported on first use: NiceGUI only when a page is built)."""
    return [importlib.import_module(f"{__name__}.{m}") for _p, _l, m in NAVIGATION if m is not None]


def carried(params: dict[str, Any]) -> dict[str, str]:
    """The shared part of a view's query: the keys every view understands, as strings."""
    return {k: str(params[k]) for k in SHARED_KEYS if params.get(k) not in (None, "")}


@dataclass
class Shell:
    """The header of every view: the product name, one link per view (the current one marked), the API
    docs. `share` keeps the address bar and the links in step with the view's state."""

    ui: Any
    current: str
    query: dict[str, str] = field(default_factory=dict)
    links: dict[str, Any] = field(default_factory=dict)
    summary: Any = None

    def build(self) -> Shell:
        ui = self.ui
        from dtsim.interfaces.api.app import MAX_QUERY_BYTES

        ui.add_head_html(NAV_MEMORY.replace("MAX_QUERY_BYTES", str(MAX_QUERY_BYTES)))
        with ui.header().classes("items-center justify-between bg-indigo-9 q-py-xs gap-2 no-wrap"):
            ui.label("dtsim").classes("text-h6")
            with ui.row().classes("gap-1 items-center flex-wrap").props("data-testid=nav"):
                for path, label, _module in NAVIGATION:
                    link = ui.link(label, self._target(path, carried(self.query))).classes(
                        "text-white q-px-xs"
                        + (" text-weight-bold dt-nav-current" if path == self.current else "")
                    )
                    link.props(f"data-testid=nav-{path.strip('/') or 'decentralized'}")
                    self.links[path] = link
            self.summary = ui.label().classes("text-body2 flex-1 text-right").props("data-testid=summary")
            ui.link("API docs", "/docs", new_tab=True).classes("text-white")
        return self

    @staticmethod
    def _target(path: str, params: dict[str, str]) -> str:
        return path + (f"?{urlencode(params)}" if params else "")

    def share(self, params: dict[str, Any], links: dict[str, Any] | None = None) -> str:
        """Set the address bar to this view with `params` (its share link: the inputs that differ from
        the defaults) and carry the shared keys into the other views' links. Returns the share path.

        `links` are the view's full values, defaults included: its links carry every shared key it
        holds at its current value, so a key set back to its default replaces the value the target view
        remembers (NAV_MEMORY), and a shared key it holds blank is named in the links' `data-clear`,
        which drops that remembered value. Without `links` (a view that does not hold the shared keys,
        e.g. /validation) the links carry the shared keys of `params`: what the view was given.

        The decentralized page ("/") is linked with the shared keys of `params` alone: it reads them
        into its own fields (num_nodes, tokens_t, the parameter counts), which its remembered query
        holds under their own names (no old shared value to replace), so a datacenter view's default
        (2 nodes, an 8B model) would overwrite the page's own scenario."""
        # an input held blank where its default is not (`question=`: /target's search) stays in the link
        clean = {k: str(v) for k, v in params.items() if v is not None}
        path = self._target(self.current, clean)
        held = {k: v for k, v in clean.items() if v != ""} if links is None else links
        shared = carried(held)
        cleared = ",".join(k for k in SHARED_KEYS if k in held and k not in shared)
        for target, link in self.links.items():
            if target == self.current:
                continue
            own_fields = target == "/"  # the decentralized page
            href = self._target(target, carried(clean) if own_fields else shared)
            clear = "" if own_fields else cleared
            if (link._props.get("href"), link._props.get("data-clear")) != (href, clear):
                link._props["href"], link._props["data-clear"] = href, clear
                link.update()  # sent to the browser only when the link changed (share runs per input)
        self.ui.run_javascript(f"history.replaceState(null, '', {json.dumps(path)});")
        return path
