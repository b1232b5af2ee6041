"""The target view: `dtsim target` in the browser. Either a direct question on one node kind
(`solve`: the fewest nodes that train a model within the time limit, how long it takes, or the
largest model trained in time) with the factor that limits the answer, or a search for the cheapest
(or fastest) configuration that reaches a target (a model and its tokens, or an amount of local- or
quality-adjusted compute), with each mode's best and why it lost. The answer's own `simulate`
warnings are shown beside it.

The inputs are the command's options; the answer is `dtsim target --json` from the same calls
(interfaces/operations.py `target_solve`, `target_search`)."""

from __future__ import annotations

from typing import Any

from dtsim import catalog
from dtsim.analysis.search import nodes_text
from dtsim.interfaces.web.formview import Field, fmt, form_page, key_values, table, warnings_box

PATH = "/target"
LABEL = "Target"
TITLE = "target"

SOLVE = ("num_nodes", "days", "parameters_b")
BASE_FIELDS = (
    Field(
        "preset",
        "Base scenario preset",
        "select",
        "governance",
        tip="The network, MFU and the rest of the run.",
    ),
    Field(
        "set",
        "Base overrides (one name=value a line)",
        "lines",
        None,
        tip="Scenario fields over the preset, e.g. bandwidth_mbps=1000 (dtsim target --set).",
    ),
)
QUESTION_FIELDS = (
    Field(
        "solve",
        "Question (blank: search for a target)",
        "select",
        "num_nodes",
        options=SOLVE,
        optional=True,
        tip="num_nodes: the fewest nodes that train the model within the days; days: how long it takes on the "
        "base's nodes; parameters_b: the largest model trained within the days. Blank: the cheapest or fastest "
        "configuration that reaches the target below.",
    ),
    Field("params_b", "Model size (B parameters)", "number", 70.0, optional=True),
    Field(
        "tokens_t",
        "Tokens (T; blank with a question: compute-optimal)",
        "number",
        None,
        optional=True,
    ),
    Field("local_flop", "Target: local-equivalent FLOP (C·η)", "number", None, optional=True),
    Field("quality_flop", "Target: quality-adjusted FLOP (C·η·χ)", "number", None, optional=True),
    Field("objective", "Objective (search)", "select", None, options=("cost", "time"), optional=True),
    Field("days", "Time limit (days; blank: 547.875)", "number", None, optional=True),
    Field("budget", "Budget (USD, search)", "number", None, optional=True),
    Field("node", "Node preset (blank: the base's, or all in a search)", "select", None, optional=True),
    Field(
        "reach",
        "Inverse: most compute for the budget (search)",
        "select",
        None,
        options=("local", "quality"),
        optional=True,
        tip="The most local- or quality-adjusted compute reachable with the budget; no target.",
    ),
    Field(
        "min_nodes",
        "Inverse: fewest nodes of the one node preset (search)",
        "switch",
        False,
        tip="The target on the fewest nodes of the node preset chosen above.",
    ),
    Field("max_nodes", "Largest node count (nodes)", "int", None, optional=True),
)


def fields() -> tuple[Field, ...]:
    from dataclasses import replace

    choices = {"preset": tuple(catalog.scenario_presets()), "node": tuple(catalog.nodes())}
    return tuple(replace(f, options=choices.get(f.name, f.options)) for f in BASE_FIELDS + QUESTION_FIELDS)


def base_scenario(v: dict[str, Any]):
    """The base scenario and its distributions, as the CLI loads them without --uncertainty (the
    distributions at their medians, the assumptions table at its point values)."""
    from dtsim.analysis.uncertainty import load_uncertain_scenario

    return load_uncertain_scenario(None, v["preset"], v.get("set") or [], fixed_assumptions=True)


def compute(v: dict[str, Any], progress: Any = None) -> dict[str, Any]:
    """`dtsim target --json` for these inputs; a search reports `progress(done, total)` (its job can
    then stop where it is when cancelled)."""
    from dtsim.interfaces import operations as ops

    base, dists = base_scenario(v)
    node = [v["node"]] if v.get("node") else None
    ops.refuse_searched(
        ops.set_keys(v.get("set")), "target", v.get("solve"), where="set", node_given=bool(node)
    )
    if v.get("solve"):
        others = {
            "--local-flop": v.get("local_flop"),
            "--quality-flop": v.get("quality_flop"),
            "--objective": v.get("objective"),
            "--budget": v.get("budget"),
            "--reach": v.get("reach"),
            "--min-nodes": v.get("min_nodes") or None,
        }
        return ops.target_solve(
            base,
            dists,
            v["solve"],
            params_b=v.get("params_b"),
            tokens_t=v.get("tokens_t"),
            days=v.get("days"),
            node=node,
            max_nodes=v.get("max_nodes"),
            others=others,
        ).payload
    return ops.target_search(
        base,
        dists,
        local_flop=v.get("local_flop"),
        quality_flop=v.get("quality_flop"),
        params_b=v.get("params_b"),
        tokens_t=v.get("tokens_t"),
        objective=v.get("objective"),
        days=v.get("days"),
        budget=v.get("budget"),
        reach=v.get("reach"),
        min_nodes=bool(v.get("min_nodes")),
        node=node,
        max_nodes=v.get("max_nodes"),
        progress=progress,
    ).payload


def inline(v: dict[str, Any]) -> bool:
    """A direct question (`solve`: a few searches on one node kind) answers in-process, as POST
    /api/target answers it inline; a search for a target runs as a job (web/jobrun.py)."""
    return bool(v.get("solve"))


def render_solve(ui: Any, a: dict[str, Any]) -> None:
    with ui.card().classes("w-full q-pa-sm"):
        ui.label(a["question"]).classes("text-h6").props("data-testid=answer")
        with ui.row().classes("items-center gap-2"):
            ui.badge(f"limiting factor: {a['limiting_factor']}", color="red-7").props(
                "data-testid=limiting-factor"
            )
            ui.label(f"tokens: {fmt(a['tokens_t'])}T ({a['tokens']})").classes("text-body2")
        ui.label(a["limit"]["why"]).classes("text-body2 text-grey-9").props("data-testid=limit-why")
        b = a.get("beyond")
        if b is not None:
            past = f"Just past the answer ({fmt(b['parameters_b'])}B on {nodes_text(b['num_nodes'])}): " + (
                f"{fmt(b['days'])} days" if b["runs"] and b["days"] is not None else "it cannot run"
            )
            ui.label(past).classes("text-caption").props("data-testid=beyond")
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("The fastest configuration at the answer").classes("text-weight-bold")
        key_values(ui, [(k, fmt(x), f"config-{k}") for k, x in (a["configuration"] or {}).items()])
        s = a["search"]
        ui.label(
            f"{s['searches']:,} target searches, {s['rows_evaluated']:,} rows evaluated; {s['seconds']:.1f} s"
        ).classes("text-caption text-grey-8")
    warnings_box(ui, a.get("warnings") or [])


def render_search(ui: Any, a: dict[str, Any]) -> None:
    from dtsim.analysis.search import MODE_LABEL

    w = a["winner"]
    with ui.card().classes("w-full q-pa-sm"):
        what = a["target"] or f"most compute within ${fmt(a['budget_usd'])}"
        ui.label(f"{a['objective']}: {what} within {fmt(a['days_limit'])} days").classes("text-weight-bold")
        if w is None:
            ui.label("No configuration in the space reaches it: see each mode's best below.").classes(
                "text-h6 text-red-9"
            ).props("data-testid=answer")
        else:
            ui.label(
                f"{w['num_nodes']:,} × {w['node']}: {fmt(w['parameters_b'])}B, {fmt(w['days'])} days, "
                f"${fmt(w['cost_usd'])} ({MODE_LABEL.get(w['mode'], w['mode'])})"
            ).classes("text-h6").props("data-testid=answer")
            if a.get("min_nodes") is not None:
                ui.label(f"Fewest nodes: {a['min_nodes']:,} × {w['node']}").classes("text-body1").props(
                    "data-testid=min-nodes"
                )
            key_values(ui, [(k, fmt(x), f"winner-{k}") for k, x in w.items()])
        s = a["search"]
        ui.label(
            f"{s['configurations']:,} configurations × {s['node_counts']} node counts, {s['rows_evaluated']:,} rows; "
            f"{s['seconds']:.1f} s"
        ).classes("text-caption text-grey-8")
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("Each mode's best, and why it lost").classes("text-weight-bold")
        rows = []
        for mode, m in a["modes"].items():
            b = m["best"]
            rows.append(
                {
                    "mode": MODE_LABEL.get(mode, mode),
                    "nodes": f"{b['num_nodes']:,} × {b['node']}" if b else "—",
                    "model B": fmt(b["parameters_b"]) if b else "—",
                    "cost": f"${fmt(b['cost_usd'])}" if b else "—",
                    "days": fmt(b["days"]) if b else "—",
                    "verdict": m["verdict"],
                }
            )
        table(ui, rows, "modes-table")
    warnings_box(ui, a.get("winner_warnings") or [])


def render(ui: Any, a: dict[str, Any], _v: dict[str, Any]) -> None:
    (render_solve if "solve" in a else render_search)(ui, a)


build = form_page(
    __name__,
    title="Target",
    intro="The fewest nodes, the days or the largest model for a training run, with the factor that limits "
    "it; or the cheapest or fastest configuration that reaches a target (MIRI simulator docs' threshold "
    "questions, searched exhaustively).",
    slow=True,
    progress=True,
)
