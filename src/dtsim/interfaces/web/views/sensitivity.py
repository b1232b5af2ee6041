"""The sensitivity view: `dtsim sensitivity` in the browser. Which uncertain inputs drive an output of
`simulate`: Sobol first-order (S1) and total (ST) indices with their bootstrap 95 % intervals, and a
tornado (the output with one input at its P10, then its P90, the others at their medians).

The scenario is a preset with its fields' distributions (`--set mfu=0.3..0.5` lines) and, unless held
fixed, the assumptions table's distributions. The answer is `dtsim sensitivity --json` from the same
call (analysis/sensitivity.py `sensitivity`, Saltelli sampling with SALib); the view's default N is
small (64, some 1,600 runs) so it answers in seconds, as a job of the API's (web/jobrun.py) with its
progress and ETA shown."""

from __future__ import annotations

from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces.web.charts import framed
from dtsim.interfaces.web.formview import Field, fmt, form_page, table, warnings_box

PATH = "/sensitivity"
LABEL = "Sensitivity"
TITLE = "sensitivity"
DEFAULT_BASE = 64  # the CLI's is 1024: a page should answer in seconds (raise it for firmer indices)
CHART_INPUTS = 15  # the charts show the inputs of largest ST; the table lists every one

FIELDS = (
    Field("preset", "Scenario preset (blank: the defaults)", "select", None, optional=True),
    Field(
        "set",
        "Fields and distributions (one a line)",
        "lines",
        None,
        tip="A field's value or its distribution, e.g. mfu=0.3..0.5 (dtsim sensitivity --set).",
    ),
    Field("output", "Output to explain", "select", "wall_clock_days"),
    Field(
        "base",
        "Base samples (N)",
        "int",
        DEFAULT_BASE,
        tip="Saltelli base samples: N·(inputs + 2) runs; 2 to 1,024 here.",
    ),
    Field("seed", "Seed (sampling and bootstrap)", "int", 1, optional=True),
    Field(
        "fixed_assumptions",
        "Hold the assumptions table fixed",
        "switch",
        False,
        tip="Only the scenario's own distributions vary.",
    ),
)


def fields() -> tuple[Field, ...]:
    from dataclasses import replace

    from dtsim.analysis.uncertainty import HEADLINE

    choices = {"preset": tuple(catalog.scenario_presets()), "output": HEADLINE}
    return tuple(replace(f, options=choices.get(f.name, f.options)) for f in FIELDS)


def compute(v: dict[str, Any], progress: Any = None) -> dict[str, Any]:
    """`dtsim sensitivity --json` for these inputs; `progress(done, total)` counts the model runs."""
    from dtsim.analysis.sensitivity import sensitivity
    from dtsim.analysis.uncertainty import load_uncertain_scenario
    from dtsim.interfaces.api.app import MAX_SENSITIVITY_BASE  # the API's bound: one home

    problems = []
    if not 2 <= v["base"] <= MAX_SENSITIVITY_BASE:  # the API's bound: the page runs in the server too
        problems.append(
            (
                "--base",
                v["base"],
                f"must be between 2 and {MAX_SENSITIVITY_BASE:,} (as POST /api/sensitivity)",
            )
        )
    try:  # the scenario's problems said with N's, not after it is mended
        scenario, dists = load_uncertain_scenario(
            None, v.get("preset"), v.get("set") or [], fixed_assumptions=v["fixed_assumptions"]
        )
    except ScenarioError as exc:
        raise ScenarioError(problems + exc.problems) from None
    if problems:
        raise ScenarioError(problems)
    return sensitivity(scenario, dists, v["output"], v["base"], v.get("seed"), progress=progress).as_dict()


def short(name: str) -> str:
    return name.removeprefix("assumptions.")


def tornado_chart(a: dict[str, Any]) -> dict[str, Any]:
    """Change of the output from its point (every input at its median) with one input at P10 and at
    P90; inputs of largest ST on top."""
    rows = a["indices"][:CHART_INPUTS][::-1]
    point = a["point"]
    lo_level, hi_level = a["tornado_levels"]

    def delta(x: float | None) -> float | None:
        return None if x is None or point is None else x - point

    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "axis", "axisPointer": {"type": "shadow"}},
            "legend": {"top": 0},
            "grid": {"left": 200, "right": 30, "top": 30, "bottom": 40},
            "xAxis": {
                "type": "value",
                "name": f"{a['output']} − {fmt(point)} (the point)",
                "nameLocation": "middle",
                "nameGap": 26,
            },
            "yAxis": {"type": "category", "data": [short(r["input"]) for r in rows]},
            "series": [
                {
                    "name": f"input at P{lo_level * 100:.0f}",
                    "type": "bar",
                    "stack": "t",
                    "color": "#1565c0",
                    "data": [delta(r["low"]) for r in rows],
                },
                {
                    "name": f"input at P{hi_level * 100:.0f}",
                    "type": "bar",
                    "stack": "t",
                    "color": "#c62828",
                    "data": [delta(r["high"]) for r in rows],
                },
            ],
        }
    )


def _box(est: float | None, conf: float | None) -> list[float | None]:
    """[min, Q1, median, Q3, max] drawing an estimate (the line) and its 95 % interval (the box)."""
    if est is None:
        return [None] * 5
    c = conf or 0.0
    return [est - c, est - c, est, est + c, est + c]


def sobol_chart(a: dict[str, Any]) -> dict[str, Any]:
    """S1 and ST of the inputs of largest ST: the line is the estimate, the box its bootstrap 95 %
    interval."""
    rows = a["indices"][:CHART_INPUTS]
    return framed(
        {
            "animation": False,
            "tooltip": {"trigger": "item"},
            "legend": {"top": 0},
            "grid": {"left": 50, "right": 20, "top": 30, "bottom": 110},
            "xAxis": {
                "type": "category",
                "data": [short(r["input"]) for r in rows],
                "axisLabel": {"rotate": 40, "interval": 0},
            },
            "yAxis": {"type": "value", "name": "Sobol index"},
            "series": [
                {
                    "name": "S1 (alone)",
                    "type": "boxplot",
                    "color": "#2e7d32",
                    "data": [_box(r["S1"], r["S1_conf"]) for r in rows],
                },
                {
                    "name": "ST (with interactions)",
                    "type": "boxplot",
                    "color": "#6a1b9a",
                    "data": [_box(r["ST"], r["ST_conf"]) for r in rows],
                },
            ],
        }
    )


def render(ui: Any, a: dict[str, Any], _v: dict[str, Any]) -> None:
    with ui.card().classes("w-full q-pa-sm"):
        ui.label(
            f"{a['output']}: {fmt(a['point'])} with every input at its median; variance {fmt(a['variance'])}"
        ).classes("text-h6").props("data-testid=answer")
        ui.label(f"{a['method']}; N = {a['base_samples']:,}, {a['runs']:,} runs, seed {a['seed']}").classes(
            "text-caption text-grey-8"
        )
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("Tornado: one input at a time").classes("text-weight-bold")
        height = 60 + 22 * min(len(a["indices"]), CHART_INPUTS)
        ui.echart(tornado_chart(a)).classes("w-full").style(f"height: {height}px").props(
            "data-testid=tornado-chart"
        )
    with ui.card().classes("w-full q-pa-sm"):
        ui.label("Sobol indices (line: estimate; box: bootstrap 95 % interval)").classes("text-weight-bold")
        ui.echart(sobol_chart(a)).classes("w-full").style("height: 320px").props("data-testid=sobol-chart")
    lo_level, hi_level = (f"at P{x * 100:.0f}" for x in a["tornado_levels"])
    with ui.card().classes("w-full q-pa-sm"):
        rows = [
            {
                "input": r["input"],
                "distribution": r["distribution"],
                "S1": f"{fmt(r['S1'], 3)} ± {fmt(r['S1_conf'], 2)}",
                "ST": f"{fmt(r['ST'], 3)} ± {fmt(r['ST_conf'], 2)}",
                lo_level: fmt(r["low"]),
                hi_level: fmt(r["high"]),
            }
            for r in a["indices"]
        ]
        table(ui, rows, "indices-table")
    if a.get("unread"):  # as the CLI says it: the table's assumptions the run never reads, held
        from dtsim.analysis.uncertainty import unread_note

        ui.label(f"Assumptions {unread_note(a['unread'])}.").classes("text-caption text-grey-8").props(
            "data-testid=unread"
        )
    warnings_box(ui, a.get("warnings") or [])


build = form_page(
    __name__,
    title="Sensitivity: which inputs drive an output",
    intro="Sobol indices (Sobol 2001; Saltelli et al. 2010 sampling, SALib) and a tornado over the scenario's "
    "distributions and the assumptions table's (docs/assumptions.md).",
    slow=True,
    progress=True,
)
