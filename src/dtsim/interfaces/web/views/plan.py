"""The plan view: `dtsim plan` — every valid parallel layout of a model on a cluster, ranked by step
time. The fastest that fit (step time with its model-error interval, MFU, days), a heat map of the
best step time over tensor × pipeline parallelism (cells where nothing fits marked), and, when no
layout fits, the closest ones and what to change, as the command says.

The answer is `dtsim.models.datacenter.plan.plan(...).as_dict()`, the `--json` object of `dtsim plan`
for the same options (the model, cluster and run fields are /step's). A large search (a 175B model
on 384 GPUs) takes about a second: it runs as a job of the API's (web/jobrun.py) with its progress
shown; a small one answers in-process."""

from __future__ import annotations

from typing import Any

from dtsim.errors import ScenarioError
from dtsim.interfaces.web.charts import framed
from dtsim.interfaces.web.formview import Field, form_page, table, warnings_box
from dtsim.interfaces.web.views import step as step_view

PATH = "/plan"
LABEL = "Plan"
TITLE = "datacenter plan"

SEARCH_FIELDS = (
    Field("gbs", "Global batch (sequences)", "int", 512),
    Field("top", "Layouts listed", "int", 10),
    Field("dp_multiple", "DP a multiple of", "int", 1, tip="A batch-size ramp needs dp % N == 0."),
    Field("gbs_multiple", "Global batch a multiple of", "int", 1),
)


# /step's fields that plan applies to every layout it searches
LAYOUT_OPTIONS = (
    "no_flash_attention",
    "overlap_tp_comm",
    "overlap_p2p_comm",
    "attention_kernel",
    "fp32_params",
    "moe_capacity_factor",
    "moe_imbalance",
)
# the software profile (/step's field): `dtsim plan --software ID`
SOFTWARE = "software"


def fields() -> tuple[Field, ...]:
    by_name = {f.name: f for f in step_view.fields()}
    shared = [by_name[f.name] for f in step_view.MODEL_FIELDS + step_view.CLUSTER_FIELDS]
    run = [by_name[f.name] for f in step_view.RUN_FIELDS]
    options = [by_name[name] for name in LAYOUT_OPTIONS]
    return (*shared, by_name[SOFTWARE], *SEARCH_FIELDS, *options, *run)


def linked(name: str, v: dict[str, Any]) -> dict[str, Any]:
    """Choosing a software profile sets the inputs it sets as `dtsim plan --software ID` holds them
    (plan_settings: `with_tp` on, plan evaluating TP communication only where tp > 1)."""
    from dtsim.models.datacenter.software import plan_settings

    if name != SOFTWARE or v.get(SOFTWARE) is None:
        return {}
    return step_view.software_inputs(plan_settings(v[SOFTWARE], ()), {f.name for f in fields()})


INLINE_S = 0.1  # a plan estimated at most this long answers in-process; a longer one runs as a job


def inputs(v: dict[str, Any]):
    """The architecture, cluster and PlanOptions of these inputs (the CLI's checks of the counts and
    options), or a ScenarioError named as the page names the fields."""
    from dtsim.interfaces.operations import check_attention_kernel
    from dtsim.models.datacenter.plan import PlanOptions

    counts = {k: v[k] for k in ("gbs", "top", "dp_multiple", "gbs_multiple")}
    small = [(k, x, "must be an integer ≥ 1") for k, x in counts.items() if x < 1]
    if small:
        raise ScenarioError(small)
    try:
        arch = step_view.architecture(v)
        cluster = step_view.cluster(v)
        options = dict(
            gbs=v["gbs"],
            seq_len=v.get("seq_len"),
            precision=v["precision"],
            dp_multiple=v["dp_multiple"],
            gbs_multiple=v["gbs_multiple"],
            flash_attention=not v["no_flash_attention"],
            overlap_tp_comm=v["overlap_tp_comm"],
            overlap_p2p_comm=v["overlap_p2p_comm"],
            attention_kernel=check_attention_kernel(v.get("attention_kernel"), v["no_flash_attention"]),
            fp32_params=v["fp32_params"],
            moe_capacity_factor=v.get("moe_capacity_factor"),
            moe_imbalance=v["moe_imbalance"],
            tokens=v.get("tokens"),
            usd_per_gpu_hour=v.get("usd_per_gpu_hour"),
        )
        if v.get(SOFTWARE) is not None:  # as `dtsim plan --software ID` with these inputs as its flags
            from dtsim.models.datacenter.software import plan_settings

            options |= plan_settings(v[SOFTWARE], step_view.software_given(fields(), v))
        opt = PlanOptions(**options)
    except ScenarioError as exc:
        raise step_view.body_names(exc) from None
    return arch, cluster, opt


def compute(v: dict[str, Any]) -> dict[str, Any]:
    """`dtsim plan --json` for these inputs (the CLI's checks of the counts and options)."""
    from dtsim.interfaces.operations import with_software
    from dtsim.models.datacenter.plan import plan

    arch, cluster, opt = inputs(v)
    try:
        payload = plan(arch, cluster, opt, top=v["top"]).as_dict()
    except ScenarioError as exc:
        raise step_view.body_names(exc) from None
    return with_software(payload, v.get(SOFTWARE))


def inline(v: dict[str, Any]) -> bool:
    """Whether the plan is quick enough to answer in-process: its candidate layouts (enumerated, not
    evaluated) × the seconds per candidate POST /api/plan estimates with, at most INLINE_S; a larger
    search (a 175B model on 384 GPUs) runs as a job (web/jobrun.py) with its progress shown."""
    from dtsim.interfaces.api.datacenter import plan_candidates_s

    return plan_candidates_s(*inputs(v)) <= INLINE_S


def heatmap(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Best step time over TP (x) × PP (y): a coloured cell per pair where a layout fits, a grey one
    marked "no fit" (with the least memory any layout there needs) where none does. When no cell fits
    the step-time scale is hidden (ECharts needs a visual map for a heat map; it had shown a 0–1 s
    scale of times no layout has)."""
    tps = sorted({c["tp"] for c in cells})
    pps = sorted({c["pp"] for c in cells})
    fit = [c for c in cells if c["best_step_time_s"] is not None]
    times = [c["best_step_time_s"] for c in fit] or [0.0, 1.0]
    best = min(times)

    def cell(c: dict[str, Any], value: float | None, text: str) -> dict[str, Any]:
        return {"value": [tps.index(c["tp"]), pps.index(c["pp"]), value], "label": {"formatter": text}}

    return framed(
        {
            "animation": False,
            "tooltip": {"position": "top"},
            "grid": {"left": 60, "right": 20, "top": 20, "bottom": 90},
            "xAxis": {
                "type": "category",
                "data": [str(t) for t in tps],
                "name": "TP",
                "splitArea": {"show": True},
            },
            "yAxis": {
                "type": "category",
                "data": [str(p) for p in pps],
                "name": "PP",
                "splitArea": {"show": True},
            },
            "visualMap": {
                "seriesIndex": 0,
                "show": bool(fit),
                "min": round(best, 6),
                "max": round(max(times), 6),
                "calculable": True,
                "orient": "horizontal",
                "left": "center",
                "bottom": 0,
                "text": ["slower (s/iter)", "faster"],
                "inRange": {"color": ["#1b5e20", "#81c784", "#fff59d", "#ef6c00"]},
            },
            "series": [
                {
                    "name": "best step time (s)",
                    "type": "heatmap",
                    "label": {"show": True},
                    "data": [
                        cell(
                            c,
                            round(c["best_step_time_s"], 6),
                            f"{c['best_step_time_s']:.3g}" + (" ★" if c["best_step_time_s"] == best else ""),
                        )
                        for c in fit
                    ],
                },
                {
                    "name": "nothing fits (least GB per GPU)",
                    "type": "heatmap",
                    "itemStyle": {"color": "#e0e0e0"},
                    "label": {"show": True, "color": "#b71c1c"},
                    "data": [
                        cell(
                            c,
                            round(c["min_memory_per_gpu_gb"], 3),
                            f"no fit {c['min_memory_per_gpu_gb']:.0f} GB",
                        )
                        for c in cells
                        if c["best_step_time_s"] is None
                    ],
                },
            ],
        }
    )


def layout_rows(layouts: list[dict[str, Any]], days: bool) -> list[dict[str, Any]]:
    from dtsim.interfaces.operations import layout_label
    from dtsim.models.datacenter.plausibility import mfu_marked

    rows = []
    for i, r in enumerate(layouts, 1):
        interval = (
            f"{r['step_time_s_p10']:.2f}–{r['step_time_s_p90']:.2f}"
            if r.get("step_time_s_p10") is not None
            else "—"
        )
        row = {
            "#": i,
            "s/iter": f"{r['step_time_s']:.3f}",
            "80 % range": interval,
            "MFU": mfu_marked(r["mfu"], r["warnings"]),
            "GB/GPU": f"{r['memory_per_gpu_gb']:.1f}",
            "fits": "yes" if r["fits"] else "no",
            "layout": layout_label(r["layout"]),
        }
        if days:
            row["days"] = f"{r['run']['days']:,.1f}" if r.get("run") else "—"
        rows.append(row)
    return rows


def render(ui: Any, answer: dict[str, Any], v: dict[str, Any]) -> None:
    from dtsim.models.datacenter.software import PLAN_SEARCHED

    a = answer
    days = v.get("tokens") is not None
    columns = ["#", "s/iter", "80 % range", *(["days"] if days else []), "MFU", "GB/GPU", "fits", "layout"]
    with ui.card().classes("w-full q-pa-sm").props("data-testid=plan-panel"):
        ui.label(
            f"{a['model']} ({a['params_b']:,.1f}B) on {a['n_gpus']:,} × {a['gpu']}: {a['searched']:,} layouts "
            f"searched in {a['seconds']:.2f} s"
        ).classes("text-weight-bold").props("data-testid=plan-headline")
        step_view.software_note(ui, v, fields(), PLAN_SEARCHED)
        if a["fits"]:
            best = a["layouts"][0]
            ui.label(
                f"Fastest that fits: {best['step_time_s']:,.3f} s per iteration, MFU {best['mfu']:.1%}"
            ).classes("text-h6 text-positive").props("data-testid=plan-verdict")
            ui.label("Fastest layouts that fit").classes("text-weight-medium")
            table(ui, layout_rows(a["layouts"], days), "plan-table", columns)
            if a["model_error"].get("basis"):
                ui.label(a["model_error"]["basis"]).classes("text-caption text-grey-8")
        else:
            ui.label("Nothing fits").classes("text-h6 text-negative").props("data-testid=plan-verdict")
            ui.label(a["advice"]).classes("text-negative whitespace-pre-wrap").props(
                "data-testid=plan-advice"
            )
            if a["nearest"]:
                ui.label("The closest layouts (not answers: they do not fit)").classes("text-weight-medium")
                table(ui, layout_rows(a["nearest"], days), "plan-nearest", columns)
        rejected = ", ".join(f"{n:,} {k}" for k, n in a["rejected"].items() if n)
        ui.label(f"Rejected: {rejected or 'none'}").classes("text-caption").props("data-testid=plan-rejected")
    # every listed layout's warnings, each once with the rows it is on, as the CLI lists them under its table
    from dtsim.models.datacenter.plausibility import warnings_by_rows

    shown = a["layouts"] or a["nearest"]
    warnings_box(
        ui,
        [
            f"({'MFU marked !, ' if doubts else ''}{label}) {w}"
            for label, w, doubts in warnings_by_rows([r["warnings"] for r in shown], first=1)
        ],
    )
    if a["by_tp_pp"]:
        with ui.card().classes("w-full q-pa-sm"):
            ui.label("Best step time over TP × PP (s per iteration; grey: no layout fits)").classes(
                "text-weight-bold"
            )
            height = 150 + 34 * len({c["pp"] for c in a["by_tp_pp"]})
            ui.echart(heatmap(a["by_tp_pp"])).classes("w-full").style(f"height: {min(height, 600)}px").props(
                "data-testid=plan-heatmap"
            )


build = form_page(
    __name__,
    title="Datacenter plan (dtsim plan)",
    intro="Every valid layout (TP, PP, CP, virtual stages, micro-batch, ZeRO, recomputation, schedules) "
    "evaluated by the step model and ranked by step time; those that do not fit in GPU memory are "
    "counted, and when none fits the closest are shown with what to change.",
    slow=True,
    sections=(
        ("Model", tuple(f.name for f in step_view.MODEL_FIELDS)),
        ("Cluster and network", step_view.CLUSTER),
        ("Search", (SOFTWARE, *(f.name for f in SEARCH_FIELDS), *LAYOUT_OPTIONS)),
        ("Run", tuple(f.name for f in step_view.RUN_FIELDS)),
    ),
)
