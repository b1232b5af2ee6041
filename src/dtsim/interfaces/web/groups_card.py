"""The decentralized page's "Node groups" card: a table editor of the scenario's `node_groups` (count, node
preset or accelerator × accelerators per node, MFU, up/down bandwidth, RTT, region), the regions they use
with the round-trip times between them, and what the result says about the groups (the limiting group,
whether the regions became a hierarchy).

The card holds the groups as the scenario file gives them (only the fields a row sets), so the export, the
share link and the CLI read the same `node_groups`; an empty table is the homogeneous scenario. The
regions table edits `region_rtt_ms`: a cell between two regions is their measured round trip (both
orders: one entry), a blank cell the estimate (shown as its placeholder); the scenario's own validation
(the CLI's) says what is wrong with a value, naming region_rtt_ms.a.b.
The RTTs shown are the model's: a measured `region_rtt_ms` pair, else physics/wan.py's geographic estimate
(great-circle distance × route inflation at the speed of light in fiber, Bozkurt et al. 2018), with
`intra_region_rtt_ms` inside one region — the functions models/decentralized/groups.py calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.physics import wan
from dtsim.schema.scenario import LEFT_TO_MODEL, Scenario

# The columns of the editor: (field, label, kind). Limits are not set on the widgets: a value the schema
# refuses is shown as the scenario's error naming node_groups[i].field, never clamped by the browser.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("count", "Nodes", "int"),
    ("node", "Node preset", "node"),
    ("gpu", "Accelerator", "gpu"),
    ("gpus_per_node", "Accel./node", "int"),
    ("mfu", "MFU", "number"),
    ("bandwidth_up_mbps", "Up Mbit/s", "number"),
    ("bandwidth_down_mbps", "Down Mbit/s", "number"),
    ("latency_ms", "RTT ms", "number"),
    ("region", "Region", "region"),
)
NEW_GROUP: dict[str, Any] = {"count": 1}
# Fields whose being given changes what the model does with node groups (models/decentralized/encode.py):
# hierarchical or nodes_per_group given keeps the model from making the groups' regions the regional tier
# of a hierarchy; regional_bandwidth_mbps given replaces the links inside a region. The page holds every
# field, so with groups it gives these only where they differ from the defaults: the model then decides,
# as it does for a scenario file that leaves them out.


def compact(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as node_groups entries: the fields a row sets (blank cells are the scenario's)."""
    return [{k: v for k, v in g.items() if v is not None and v != ""} for g in groups]


def scenario_groups(s: Scenario) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """A scenario's node_groups as editor rows (what each group sets) and its region_rtt_ms."""
    rows = [g.model_dump(exclude_none=True) for g in s.node_groups or ()]
    return rows, (dict(s.region_rtt_ms) if s.region_rtt_ms else None)


def group_fields(groups: list[dict[str, Any]], rtt: dict[str, Any] | None) -> dict[str, Any]:
    """The scenario fields the card adds (none for an empty table)."""
    out: dict[str, Any] = {}
    if groups:
        out["node_groups"] = compact(groups)
    if rtt:
        out["region_rtt_ms"] = rtt
    return out


def leave_to_model(fields: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """`fields` less the LEFT_TO_MODEL fields at their defaults, when they hold node groups."""
    if not fields.get("node_groups"):
        return fields
    return {k: v for k, v in fields.items() if k not in LEFT_TO_MODEL or v != defaults.get(k)}


def query_pairs(groups: list[dict[str, Any]], rtt: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The share link's encoding: each field as compact JSON (a YAML flow value, which the link's reader
    parses as `--set` does)."""
    return [(k, json.dumps(v, separators=(",", ":"))) for k, v in group_fields(groups, rtt).items()]


def link_notice(query_string: str) -> str | None:
    """Why a share link will not open (the server refuses a query over MAX_QUERY_BYTES), else None."""
    from dtsim.interfaces.api.app import MAX_QUERY_BYTES

    size = len(query_string.encode())
    if size <= MAX_QUERY_BYTES:
        return None
    return (
        f"This link's query is {size:,} bytes, over the server's {MAX_QUERY_BYTES:,}: it will not open; "
        "share the scenario file (Scenario YAML) instead."
    )


def region_rtt_ms(a: str, b: str, rtt: dict[str, Any] | None, asm: Assumptions) -> float | None:
    """The round trip between two regions in ms as the model takes it: a measured region_rtt_ms pair
    (either order), else the geographic estimate between the regions table's coordinates
    (physics/wan.py), `intra_region_rtt_ms` (an assumption) inside one region; None when unknown."""
    measured = measured_rtt(a, b, rtt)
    if measured is not None:
        return float(measured)
    regions = catalog.regions()
    if a == b:
        return float(asm.intra_region_rtt_ms)
    if a not in regions or b not in regions:
        return None
    ra, rb = regions[a], regions[b]
    return float(wan.geographic_rtt_s(wan.great_circle_m(ra.lat, ra.lon, rb.lat, rb.lon), asm)) * 1e3


def with_rtt(rtt: dict[str, Any] | None, a: str, b: str, ms: Any) -> dict[str, Any] | None:
    """`rtt` (a region_rtt_ms mapping, not changed) with the round trip between regions a and b set
    to `ms` for both orders: one entry a → b, the reverse entry dropped (the model reads either
    order). None or '' drops the pair (back to the geographic estimate). The value is not checked
    here: the scenario's validation names region_rtt_ms.a.b and the value when it is refused."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in (rtt or {}).items()}
    for x, y in ((a, b), (b, a)):
        if isinstance(out.get(x), dict):
            out[x].pop(y, None)
    if ms is not None and ms != "":
        row = out.get(a) if isinstance(out.get(a), dict) else {}
        out[a] = {**row, b: int(ms) if isinstance(ms, float) and ms.is_integer() else ms}
    return {k: v for k, v in out.items() if v} or None


def measured_rtt(a: str, b: str, rtt: dict[str, Any] | None) -> float | None:
    """The measured round trip between two regions in `rtt` (either order), else None."""
    for x, y in ((a, b), (b, a)):
        row = (rtt or {}).get(x)
        if isinstance(row, dict) and y in row:
            return row[y]
    return None


def region_rows(s: Scenario) -> list[dict[str, Any]]:
    """One row per region the groups use: its name, its groups (1-based, as the table numbers them),
    its nodes and the RTT to each other used region."""
    groups = s.node_groups or ()
    used = sorted({g.region for g in groups if g.region is not None})
    asm = Assumptions(s.assumptions)
    regions = catalog.regions()
    rows = []
    for r in used:
        row: dict[str, Any] = {
            "region": r,
            "name": regions[r].name if r in regions else "(measured RTTs only)",
            "groups": ", ".join(str(i + 1) for i, g in enumerate(groups) if g.region == r),
            "nodes": sum(g.count for g in groups if g.region == r),
        }
        for other in used:
            ms = region_rtt_ms(r, other, s.region_rtt_ms, asm)
            row[f"rtt_{other}"] = "—" if ms is None else f"{ms:.1f}"
        rows.append(row)
    return rows


def groups_summary(result_data: dict[str, Any]) -> str:
    """What the result says about the groups: the limiting group (1-based) and the hierarchy."""
    limiting = result_data.get("limiting_group")
    if limiting is None:
        return "No node groups: every node is the scenario's."
    parts = [f"Limiting group: {limiting + 1}."]
    parts.append(
        # hierarchical: true, or chosen as faster: the mode's reason says which
        "The groups' regions became the regional groups of a hierarchy."
        if result_data.get("hierarchy_by_region")
        else "No hierarchy by region."
    )
    return " ".join(parts)


class GroupsCard:
    """The card; `on_change` is called (with no argument) whenever a row changes."""

    def __init__(
        self, ui: Any, on_change: Callable[[], None], nodes_now: Callable[[], Any] | None = None
    ) -> None:
        self.ui = ui
        self.on_change = on_change
        self.nodes_now = nodes_now  # the scenario's node count: the first group's count
        self.groups: list[dict[str, Any]] = []
        self.rtt: dict[str, Any] | None = None
        self.shown_regions: list[str] | None = None  # the regions table's regions, as drawn
        self.region_labels: dict[tuple[str, str], Any] = {}  # (region, column) → label
        self.rtt_cells: dict[tuple[str, str], Any] = {}  # (a, b) → number input, a != b
        self.cell_props: dict[tuple[str, str], str] = {}  # (a, b) → the hint and RTT the cell was given
        self.filling = False  # set while the table shows the scenario's values (no on_change)
        nodes = {k: k for k in catalog.nodes()}
        gpus = {k: k for k in catalog.gpus()}
        self.choices = {"node": nodes, "gpu": gpus, "region": {k: k for k in catalog.regions()}}
        with (
            ui.expansion("Node groups", value=False)
            .classes("w-full dt-group")
            .props("dense header-class=text-weight-bold data-testid=groups-card")
        ):
            ui.label(
                "Heterogeneous nodes: each row is `count` nodes; a blank cell takes the scenario's value. "
                "Nodes is then the groups' total. Empty table: the homogeneous scenario."
            ).classes("text-caption text-grey-8")
            self.rows_box = ui.column().classes("w-full gap-1").props("data-testid=groups-rows")
            with ui.row().classes("gap-2"):
                ui.button("Add group", on_click=self.add).props("dense outline data-testid=groups-add")
            self.summary = ui.label().classes("text-body2").props("data-testid=groups-summary")
            self.regions_box = ui.column().classes("w-full").props("data-testid=groups-regions")
        self._rows()

    # --- state ------------------------------------------------------------------------------------------

    def set(self, groups: list[dict[str, Any]], rtt: dict[str, Any] | None) -> None:
        """Show these rows (an import, a link) without calling on_change."""
        self.groups = [dict(g) for g in groups]
        self.rtt = rtt
        self._rows()

    def fields(self) -> dict[str, Any]:
        return group_fields(self.groups, self.rtt)

    def add(self) -> None:
        """A new row. The first takes the scenario's node count (its nodes become the group, so the run
        keeps its size); later ones start at NEW_GROUP's one node."""
        row = dict(NEW_GROUP)
        nodes = self.nodes_now() if self.nodes_now is not None and not self.groups else None
        if (
            isinstance(nodes, int | float)
            and not isinstance(nodes, bool)
            and nodes >= 1
            and nodes == int(nodes)
        ):
            row["count"] = int(nodes)
        self.groups.append(row)
        self._rows()
        self.on_change()

    def remove(self, i: int) -> None:
        del self.groups[i]
        if not self.groups:
            self.rtt = None  # measured RTTs apply to groups' regions only
        self._rows()
        self.on_change()

    def edit_rtt(self, a: str, b: str, value: Any) -> None:
        """A cell of the regions table: the measured round trip between a and b (both orders), blank
        for the estimate; the other order's cell shows it at once."""
        if self.filling:
            return
        self.rtt = with_rtt(self.rtt, a, b, value)
        other = self.rtt_cells.get((b, a))
        if other is not None and other.value != value:
            self.filling = True
            try:
                other.value = value
            finally:
                self.filling = False
        self.on_change()

    def edit(self, i: int, key: str, value: Any) -> None:
        if value is None or value == "":
            self.groups[i].pop(key, None)
        else:
            self.groups[i][key] = (
                int(value) if key in ("count", "gpus_per_node") and value == int(value) else value
            )
        self.on_change()

    # --- drawing ----------------------------------------------------------------------------------------

    def _rows(self) -> None:
        ui = self.ui
        self.rows_box.clear()
        with self.rows_box:
            for i, g in enumerate(self.groups):
                with ui.row().classes("w-full items-center gap-1 no-wrap").props(f"data-testid=group-{i}"):
                    ui.label(f"{i + 1}").classes("text-weight-bold")
                    with ui.grid(columns=3).classes("flex-1 gap-x-1 gap-y-0"):
                        for key, label, kind in COLUMNS:
                            self._cell(i, key, label, kind, g.get(key))
                    ui.button(icon="delete", on_click=lambda i=i: self.remove(i)).props(
                        f"dense flat round data-testid=group-{i}-remove"
                    ).tooltip("Remove this group")

    def _cell(self, i: int, key: str, label: str, kind: str, value: Any) -> None:
        ui = self.ui
        testid = f"data-testid=group-{i}-{key}"
        if kind in self.choices:
            options = dict(self.choices[kind])
            if value is not None and value not in options:  # a region only region_rtt_ms names
                options[value] = value
            w = ui.select(
                options,
                label=label,
                value=value,
                on_change=lambda e, i=i, key=key: self.edit(i, key, e.value),
            ).props(f"dense clearable options-dense {testid}")
        else:
            w = ui.number(
                label,
                value=value,
                step=1 if kind == "int" else None,
                on_change=lambda e, i=i, key=key: self.edit(i, key, e.value),
            ).props(f"dense {testid}")
        w.classes("w-full")

    def show(self, scenario: Scenario | None, result_data: dict[str, Any] | None) -> None:
        """The regions table and the groups' summary for the computed scenario. The table is drawn again
        only when its regions change (a cell being typed in keeps its focus); otherwise its values are
        filled in."""
        self.summary.text = groups_summary(result_data or {})
        rows = region_rows(scenario) if scenario is not None and scenario.node_groups else []
        used = [r["region"] for r in rows]
        if used != self.shown_regions:
            self._draw_regions(rows)
        if rows and scenario is not None:
            self._fill_regions(rows, scenario)

    def _draw_regions(self, rows: list[dict[str, Any]]) -> None:
        ui = self.ui
        self.regions_box.clear()
        self.region_labels, self.rtt_cells, self.cell_props = {}, {}, {}
        self.shown_regions = [r["region"] for r in rows]
        if not rows:
            return
        used = self.shown_regions
        with self.regions_box:
            ui.label("Regions and round-trip times (ms)").classes("text-caption text-weight-bold")
            ui.label(
                "Type a measured RTT in a cell (it sets both directions: region_rtt_ms); a blank cell "
                "takes the geographic estimate shown in it, the diagonal intra_region_rtt_ms."
            ).classes("text-caption text-grey-8")
            ui.label(", ".join(f"{r['region']}: {r['name']}" for r in rows)).classes(
                "text-caption text-grey-8"
            )
            with (
                ui.grid(columns=3 + len(used))
                .classes("w-full gap-x-2 gap-y-0 items-center")
                .style("overflow-x: auto")
                .props("data-testid=groups-regions-table")
            ):
                for head in ("region", "groups", "nodes", *(f"→ {r}" for r in used)):
                    ui.label(head).classes("text-caption text-weight-bold")
                for a in used:
                    ui.label(a).classes("text-body2")
                    for col in ("groups", "nodes"):
                        self.region_labels[(a, col)] = ui.label().classes("text-body2")
                    for b in used:
                        if a == b:
                            self.region_labels[(a, a)] = (
                                ui.label()
                                .classes("dt-v text-body2 text-grey-8")
                                .props(f"data-testid=rtt-{a}-{b}")
                            )
                            continue
                        self.rtt_cells[(a, b)] = (
                            ui.number(on_change=lambda e, a=a, b=b: self.edit_rtt(a, b, e.value))
                            .props(f"dense data-testid=rtt-{a}-{b}")
                            .classes("w-full")
                        )

    def _fill_regions(self, rows: list[dict[str, Any]], scenario: Scenario) -> None:
        asm = Assumptions(scenario.assumptions)
        self.filling = True
        try:
            for row in rows:
                a = row["region"]
                for col in ("groups", "nodes"):
                    self.region_labels[(a, col)].text = str(row[col])
                self.region_labels[(a, a)].text = row[f"rtt_{a}"]
                for b in self.shown_regions or ():
                    cell = self.rtt_cells.get((a, b))
                    if cell is None:
                        continue
                    measured = measured_rtt(a, b, scenario.region_rtt_ms)
                    estimate = region_rtt_ms(a, b, None, asm)
                    hint = "no estimate: give one" if estimate is None else f"≈ {estimate:.1f}"
                    shown = f'placeholder="{hint}" data-ms={row[f"rtt_{b}"]}'
                    if self.cell_props.get((a, b)) != shown:  # each props() is a websocket update
                        cell.props(shown)
                        self.cell_props[(a, b)] = shown
                    if measured is None and cell.value is not None:
                        cell.value = None
                    elif measured is not None and (
                        cell.value is None or float(cell.value) != float(measured)
                    ):
                        cell.value = measured
        finally:
            self.filling = False
