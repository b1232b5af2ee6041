"""The governance view: `dtsim governance` in the browser, the threshold analysis of the MIRI
simulator docs. For each per-node cap (compute in H100-equivalents, or memory at a compute cap): the
largest node of each accelerator under it, the cheapest way to reach each compute target with such
nodes, and the legitimate systems the cap would catch; and, per target, the caps under which it can
no longer be reached.

The inputs are the command's options; the answer is `dtsim governance --json` from the same call
(interfaces/operations.py `governance_analysis`). The search takes seconds with the defaults, so it
runs off the event loop with its progress shown."""

from __future__ import annotations

from typing import Any

from dtsim import catalog
from dtsim.interfaces.web.formview import Field, fmt, form_page, table

PATH = "/governance"
LABEL = "Governance"
TITLE = "governance"

FIELDS = (
    Field(
        "preset",
        "Base scenario preset",
        "select",
        "governance",
        tip="The network, MFU and the rest of the run.",
    ),
    Field("set", "Base overrides (one name=value a line)", "lines", None),
    Field(
        "compute_cap", "Compute caps per node (H100-equivalents, or none)", "text", "16,8,4,2,1", blank="none"
    ),
    Field("memory_cap", "Memory caps per node (GB, or none)", "text", "2048,1280,1024,512,256", blank="none"),
    Field("base_compute_cap", "Compute cap beside the memory caps (H100-equivalents)", "number", 16.0),
    Field("targets", "Compute targets (FLOP)", "text", "1e24,1e25,1e26"),
    Field(
        "metric",
        "Metric",
        "select",
        "quality",
        options=("quality", "local"),
        tip="quality: C·η·χ; local: C·η.",
    ),
    Field("days", "Time limit (days; blank: 547.875)", "number", None, optional=True),
    Field(
        "gpus",
        "Accelerators (one a line; blank: all)",
        "lines",
        None,
        flag="--gpu",
        tip="Accelerator ids of catalog/gpus.yaml, e.g. h100-sxm.",
    ),
    Field("precisions", "Precisions an actor may use", "text", "fp16,fp8"),
    Field("max_nodes", "Largest node count searched (nodes)", "int", 100_000),
)


def fields() -> tuple[Field, ...]:
    from dataclasses import replace

    return tuple(
        replace(f, options=tuple(catalog.scenario_presets())) if f.name == "preset" else f for f in FIELDS
    )


def compute(v: dict[str, Any], progress: Any = None) -> dict[str, Any]:
    """`dtsim governance --json` for these inputs (the base loaded as the CLI loads it)."""
    from dtsim.analysis.uncertainty import load_uncertain_scenario
    from dtsim.interfaces import operations as ops

    base, dists = load_uncertain_scenario(None, v["preset"], v.get("set") or [], fixed_assumptions=True)
    ops.refuse_searched(ops.set_keys(v.get("set")), "governance", where="set")
    return ops.governance_analysis(
        base,
        dists,
        compute_cap=v["compute_cap"],
        memory_cap=v.get("memory_cap"),
        base_compute_cap=v["base_compute_cap"],
        targets=v["targets"],
        metric=v["metric"],
        days=v.get("days"),
        gpu=v.get("gpus") or None,
        precisions=v["precisions"],
        max_nodes=v["max_nodes"],
        progress=progress,
    ).payload


def cap_label(cap: dict[str, Any]) -> str:
    from dtsim.analysis.governance import Cap

    return Cap(h100_equivalents=cap["h100_equivalents"], memory_gb=cap["memory_gb"]).label()


def cheapest_cell(w: dict[str, Any] | None, not_a_run: bool = False) -> str:
    """One answer as the CLI's table writes it (`not_a_run`: its nodes reach the target only in less than
    one outer step)."""
    if w is None:
        return "only in < 1 outer step: not a run" if not_a_run else "not reachable"
    return f"${w['cost_usd'] / 1e6:,.1f}M: {w['num_nodes']:,} × {w['node']}, {w['parameters_b']:.0f}B, {w['mode']}"


def render(ui: Any, a: dict[str, Any], _v: dict[str, Any]) -> None:
    caps = a["caps"]
    targets = list(caps[0]["cheapest"]) if caps else []
    s = a["search"]
    with ui.card().classes("w-full q-pa-sm"):
        ui.label(f"Cheapest {a['metric']}-adjusted compute within {fmt(a['days_limit'])} days").classes(
            "text-h6"
        )
        ui.label(
            f"search space {s['configurations']:,} configurations, {s['rows_evaluated']:,} rows, exhaustive over one "
            f"grid shared by every cap; {s['seconds']:.1f} s"
        ).classes("text-caption text-grey-8")
        with ui.column().classes("gap-0").props("data-testid=binding"):
            for t in targets:
                blocked = [cap_label(c["cap"]) for c in caps if c["cheapest"][t] is None]
                text = (
                    f"{t} FLOP: reachable under every cap"
                    if not blocked
                    else f"{t} FLOP: not reachable within the time limit under " + "; ".join(blocked)
                )
                ui.label(text).classes("text-body2" + (" text-red-9" if blocked else ""))
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("Cheapest way to reach each target under the cap").classes("text-weight-bold")
        rows = []
        for c in caps:
            row = {"cap": cap_label(c["cap"])}
            row |= {
                f"{t} FLOP": cheapest_cell(c["cheapest"][t], t in c.get("not_a_run", ())) for t in targets
            }
            row["systems caught"] = f"{len(c['caught'])}/{len(a['systems'])}"
            rows.append(row)
        table(ui, rows, "cheapest-table")
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("Largest node of each accelerator under each cap (GPUs per node)").classes(
            "text-weight-bold"
        )
        rows = []
        for i, first in enumerate(caps[0]["largest_nodes"] if caps else []):
            row = {"accelerator": first["gpu"]}
            row |= {cap_label(c["cap"]): str(c["largest_nodes"][i]["count"]) for c in caps}
            rows.append(row)
        table(ui, rows, "largest-table")
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("Legitimate systems each cap catches (✗ = caught)").classes("text-weight-bold")
        rows = []
        for sys_ in a["systems"]:
            row = {
                "system": sys_["name"],
                "H100-eq": f"{sys_['h100_equivalents']:.2f}",
                "GB": fmt(sys_["memory_gb"]),
            }
            row |= {cap_label(c["cap"]): "✗" if sys_["id"] in c["caught"] else "" for c in caps}
            rows.append(row)
        table(ui, rows, "systems-table")


build = form_page(
    __name__,
    title="Governance: per-node caps",
    intro="What a per-node compute or memory cap leaves an actor (the cheapest way to each compute target) "
    "and which legitimate systems it catches (the threshold analysis of the MIRI simulator docs).",
    slow=True,
    progress=True,
)
