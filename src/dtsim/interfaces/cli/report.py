"""The human-readable report of `dtsim simulate`, rendered with Rich."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from dtsim.interfaces.cli.common import console as _console
from dtsim.interfaces.cli.common import table
from dtsim.interfaces.formats import duration as _duration
from dtsim.models.decentralized.explain import derivation
from dtsim.models.decentralized.result import Result
from dtsim.models.decentralized.strategies.base import BREAKDOWN_KEYS
from dtsim.models.decentralized.warning_rules import plain

NAMES = {
    "compute": "compute",
    "latency": "latency (RTT, EP all-to-all)",
    "global_sync": "global sync (bandwidth)",
    "regional_sync": "regional sync (bandwidth)",
    "pipeline_comm": "pipeline hand-offs",
    "bubble": "pipeline bubble",
    "straggler": "straggler wait",
}


def _num(x: float | None, fmt: str = ",.2f", unit: str = "") -> str:
    if x is None:
        return "—"
    return f"{x:{fmt}}{unit}"


def _table(title: str) -> Table:
    t = table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False, expand=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column(justify="right")
    t.add_column(style="dim")
    return t


def _ranged(text: str, mc: Any, key: str, show: Any) -> str:
    """`text` with `P50 [P10–P90]` of the output `key` beside it (the middle and outer --levels of a
    Monte Carlo), each value shown by `show`."""
    s = (mc.outputs if mc is not None else {}).get(key)
    if not s:
        return text
    from dtsim.analysis.uncertainty import level_name

    names = [level_name(q) for q in mc.levels]
    if s.get(names[0]) is None:
        return text
    ends = f"[{show(s[names[0]])}–{show(s[names[-1]])}]" if len(names) > 1 else ""
    mid = f"P50 {show(s['p50'])} " if "p50" in names else ""  # the median only where it was asked for
    return f"{text}  {mid}{ends}".rstrip()


def render(r: Result, title: str = "dtsim", explain: bool = False, mc: Any = None) -> Group:
    """The report; with a Monte Carlo (`mc`), each headline output shows `P50 [P10–P90]` beside it."""
    parts = []
    head = Text()
    head.append(f"{r.mode_label}", style="bold magenta")
    head.append(f"\n{r.mode_reason}", style="italic")
    parts.append(Panel(head, title=title, title_align="left"))

    t = _table("Time")
    days = lambda x: _num(x, ",.1f")  # noqa: E731
    t.add_row(
        "Wall-clock (process D tokens)",
        _ranged(_num(r.wall_clock_days, ",.1f", " days"), mc, "wall_clock_days", days),
        "D / throughput",
    )
    t.add_row(
        "η-adjusted (equivalent quality)",
        _ranged(_num(r.effective_days, ",.1f", " days"), mc, "effective_days", days),
        "wall-clock / η, MIRI simulator docs §4.1",
    )
    if r.goodput is not None and r.goodput < 1.0:
        t.add_row(
            "Goodput (node failures)",
            _ranged(_num(r.goodput, ".2%"), mc, "goodput", lambda x: _num(x, ".1%")),
            f"{r.recovery}; without failures {_num(r.failure_free_days, ',.1f', ' days')}; docs/model.md §8a",
        )
    t.add_row("Maximum useful run length", _num(r.max_days, ",.0f", " days"), "MIRI simulator docs §7")
    t.add_row(
        "Feasible",
        "—" if r.feasible is None else ("yes" if r.feasible else "[red]no[/red]"),
        "η-adjusted time ≤ maximum",
    )
    parts.append(t)

    s = _table("Steps")
    s.add_row("Compute per step (T_comp)", _duration(r.compute_step_s), "whole model, one node")
    planned = r.scenario.get("mfu") if r.scenario else None
    if r.mfu_source and isinstance(planned, float):  # with node groups it is planned per group ("auto")
        s.add_row("Node MFU (mfu: auto)", _num(planned, ".1%"), "see below")
    if r.mode in ("pp-group-diloco", "pp-over-wan"):
        s.add_row("Pipeline step", _duration(r.inner_step_s), f"{r.pp_stages} stages, GPipe")
    if r.mode != "pp-over-wan":
        s.add_row("Global sync", _duration(r.sync_s), "WAN, stragglers included")
    if r.mode == "hierarchical-diloco":
        s.add_row(
            "Regional sync", _duration(r.regional_sync_s), f"every H, {r.regional_steps_used} per global"
        )
    s.add_row("Outer step", _ranged(_duration(r.outer_step_s), mc, "outer_step_s", _duration), "")
    if r.inner_steps_used is not None:
        s.add_row(
            "Inner steps H",
            f"{r.inner_steps_used:,}",
            f"auto would pick {r.auto_inner_steps:,}" if r.auto_inner_steps else "",
        )
    parts.append(s)
    if r.mfu_source:
        parts.append(Text(r.mfu_source + ".", style="dim"))

    if r.outer_step_s:
        b = table(title="One outer step", title_justify="left", box=None, pad_edge=False)
        b.add_column("part")
        b.add_column("time", justify="right")
        b.add_column("share", justify="right")
        b.add_column("")
        # with failures the shares are of an outer step's expected wall time, T_outer / goodput
        goodput = r.goodput if r.goodput is not None else 1.0
        rows = [(NAMES[key], key, r.breakdown_s.get(key) or 0.0) for key in BREAKDOWN_KEYS]
        if goodput < 1.0:  # the expected time lost per outer step (engine; null: the run never ends)
            lost = r.details["failure_lost_s"]
            rows.append(("lost to failures (expected)", "failures", math.inf if lost is None else lost))
        for name, key, v in rows:
            if v <= 0:
                continue
            share = 1.0 - goodput if key == "failures" else v / r.outer_step_s * goodput
            bar = "█" * max(1, round(share * 30))
            style = "bold red" if key == r.bottleneck and key != "compute" else ""
            time = _duration(v) if math.isfinite(v) else "never ends"
            b.add_row(name, time, f"{share:.1%}", Text(bar, style=style or "cyan"))
        regional_hidden = r.hidden_regional_sync_s or 0.0
        global_hidden = (r.hidden_sync_s or 0.0) - regional_hidden
        if regional_hidden:
            b.add_row(
                "[dim]regional sync hidden under compute[/dim]",
                f"[dim]{_duration(regional_hidden)}[/dim]",
                "",
                "",
            )
        if global_hidden > 0:
            label = (
                "global sync hidden (WAN, beside the regional)"
                if regional_hidden
                else "sync hidden under compute"
            )
            b.add_row(f"[dim]{label}[/dim]", f"[dim]{_duration(global_hidden)}[/dim]", "", "")
        parts.append(b)
        parts.append(Text.from_markup(f"Bottleneck: [bold]{NAMES.get(r.bottleneck, r.bottleneck)}[/bold]"))

    e = _table("Efficiency and quality")
    e.add_row("η_H (inner steps)", _num(r.efficiency_h, ".1%"), "MIRI simulator docs §4")
    e.add_row("η_C (compression)", _num(r.efficiency_compression, ".1%"), "quality table")
    e.add_row("η_act (activation compression)", _num(r.efficiency_activation, ".1%"), "per pipeline hand-off")
    if r.efficiency_staleness < 1.0:
        e.add_row(
            "η_stale (late outer updates)", _num(r.efficiency_staleness, ".1%"), "per outer step of delay"
        )
    pct = lambda x: _num(x, ".1%")  # noqa: E731
    e.add_row("η total", _ranged(_num(r.efficiency, ".1%"), mc, "efficiency", pct), "")
    e.add_row("Replica loss multiplier", _num(r.replica_loss_multiplier, ".4f"), "in χ")
    e.add_row("χ (compute-optimal equivalent)", _num(r.chi, ".1%"), "Chinchilla")
    e.add_row(
        "MFU (wall-clock)",
        _num(r.wall_clock_mfu, ".1%"),
        "6·P·D / (N · peak · wall-clock)",
    )
    e.add_row(
        "η-adjusted MFU / HFU",
        _ranged(f"{_num(r.global_mfu, '.1%')} / {_num(r.global_hfu, '.1%')}", mc, "global_mfu", pct),
        "over the η-adjusted time: MIRI's Global MFU",
    )
    e.add_row("Model FLOP (6·P·D)", f"{r.model_flop:.3g}", "")
    e.add_row("Hardware FLOP (recompute, attention)", f"{r.hardware_flop:.3g}", "")
    e.add_row("Quality-adjusted FLOP", _num(r.quality_adjusted_flop, ".3g"), "C · η · χ")
    parts.append(e)

    m = _table("Memory and layout")
    m.add_row("Model state per replica", _num(r.model_state_memory_gb, ",.0f", " GB"), "")
    m.add_row("Model state per node", _num(r.memory_per_node_gb, ",.0f", " GB"), "")
    m.add_row("Pipeline stages / groups", f"{r.pp_stages} / {r.pp_groups}", "")
    if r.idle_nodes:
        m.add_row("Idle nodes", f"{r.idle_nodes:,}", "")
    parts.append(m)
    groups = (r.scenario or {}).get("node_groups")
    if groups:
        parts.append(_groups_table(groups, r))

    c = _table("Cost")
    c.add_row("GPUs", _num(r.gpu_count, ","), "")
    g3 = lambda x: _num(x, ",.3g")  # noqa: E731
    c.add_row("GPU-hours", _ranged(_num(r.gpu_hours, ",.3g"), mc, "gpu_hours", g3), "wall-clock")
    c.add_row(
        "Capital cost",
        _num(r.cost_usd, ",.0f") if r.cost_usd is None else f"${r.cost_usd:,.0f}",
        "GPUs × price",
    )
    c.add_row(
        "Energy", _ranged(_num(r.energy_kwh, ",.3g", " kWh"), mc, "energy_kwh", g3), "board power × PUE"
    )
    parts.append(c)

    if r.warnings:
        w = table(title="Warnings", title_justify="left", show_header=False, box=None, pad_edge=False)
        w.add_column(style="yellow", no_wrap=True)
        w.add_column()
        for item in r.warnings:
            w.add_row(item.code, item.message)
        parts.append(w)

    if explain:
        x = table(title="Derivation", title_justify="left", box=None, pad_edge=False)
        x.add_column("quantity", style="bold")
        x.add_column("formula")
        x.add_column("value", justify="right")
        x.add_column("source", style="dim")
        for step in derivation(r):
            x.add_row(step.quantity, step.formula, step.value, step.source)
        parts.append(x)
    return Group(*parts)


def _groups_table(groups: list[dict[str, Any]], r: Result) -> Table:
    """The node groups as the scenario gave them, the one that sets the pace marked."""
    g = table(title="Node groups", title_justify="left", box=None, pad_edge=False)
    for col in ("#", "nodes", "hardware", "region", "up / down Mbit/s", "RTT ms", ""):
        g.add_column(col, justify="right" if col in ("#", "nodes") else "left")
    sc = r.scenario or {}
    for i, grp in enumerate(groups):
        # a GPU without a count keeps the scenario's GPUs per node, a count without a GPU is of the
        # scenario's GPUs (catalog.merge_layers)
        count = grp.get("gpus_per_node", sc.get("gpus_per_node"))
        gpu = grp.get("gpu") or (sc.get("gpu") if "gpus_per_node" in grp else None)
        hw = grp.get("node") or (f"{count:g}× {gpu}" if gpu and count else gpu or "")
        hw = hw or (f"{grp['pflops_per_node']:g} PFLOPS" if grp.get("pflops_per_node") else "scenario's")
        up = grp.get("bandwidth_up_mbps", sc.get("bandwidth_up_mbps"))
        down = grp.get("bandwidth_down_mbps", sc.get("bandwidth_down_mbps"))
        rtt = grp.get("latency_ms")
        mark = "[bold]sets the pace[/bold]" if r.limiting_group == i else ""
        g.add_row(
            str(i),
            f"{grp['count']:,}",
            hw,
            grp.get("region") or "—",
            f"{plain(up)} / {plain(down)}",
            "by region"
            if rtt is None and grp.get("region")
            else plain(rtt if rtt is not None else sc.get("latency_ms")),
            mark,
        )
    return g


def print_report(
    r: Result, title: str = "dtsim", explain: bool = False, console: Console | None = None, mc: Any = None
) -> None:
    (console or _console()).print(render(r, title=title, explain=explain, mc=mc))


def print_uncertainty(mc, console: Console | None = None, title: str = "", fixed_hint: bool = True) -> None:
    """The Monte Carlo block under a report: each headline output's quantiles and mean ± its standard
    error, the shares of modes and feasibility, the probabilities asked for and the warnings."""
    con = console or _console()
    from dtsim.analysis.uncertainty import level_name

    names = [level_name(q).upper() for q in mc.levels]
    t = table(
        title=f"Uncertainty{' of ' + title if title else ''}: {mc.samples:,} draws"
        + (f" (asked {mc.requested:,}; Sobol needs a power of two)" if mc.samples != mc.requested else "")
        + (
            f", seed {mc.seed}" if mc.seed_given else f", seed {mc.seed} (drawn; --seed {mc.seed} repeats it)"
        ),
        title_justify="left",
    )
    t.add_column("output", style="bold")
    for n in names:
        t.add_column(n, justify="right")
    t.add_column("mean ± se", justify="right")
    t.add_column("top drivers (rank correlation ρ)")
    for name, s in mc.outputs.items():
        t.add_row(
            name,
            *(_num(s[n.lower()], ",.4g") for n in names),
            "—" if s["mean"] is None else f"{s['mean']:,.4g} ± {s['se']:.2g}",
            ", ".join(
                f"{d['input'].removeprefix('assumptions.')} {d['rho']:+.2f}" for d in mc.drivers.get(name, [])
            )
            or "—",
        )
    con.print(t)
    if mc.inputs:
        v = table(title="Inputs drawn", title_justify="left")
        v.add_column("input", style="bold")
        v.add_column("distribution")
        v.add_column("from")
        for k, desc in mc.inputs.items():
            dist, _, origin = desc.partition(" (")
            v.add_row(k.removeprefix("assumptions."), dist, origin.rstrip(")") or "scenario")
        con.print(v)
    if mc.unread:
        from dtsim.analysis.uncertainty import unread_note

        con.print(f"Assumptions {unread_note(mc.unread)}.", highlight=False)
    if not mc.inputs:
        con.print(
            "Nothing varied: every draw is the point (give inputs as distributions"
            + (", or drop --fixed-assumptions)." if fixed_hint else ")."),
            highlight=False,
        )
    for key, label in (
        ("mode", "Mode"),
        ("feasible", "Feasible"),
        ("bottleneck", "Bottleneck"),
        ("recovery", "Recovery from failures"),
        ("fits", "Fits in GPU memory"),
    ):
        if key in mc.shares and not (key == "recovery" and set(mc.shares[key]) == {"none"}):
            con.print(
                f"{label}: " + ", ".join(f"{v} {p:.1%}" for v, p in mc.shares[key].items()), highlight=False
            )
    for p in mc.probabilities:
        if p["p"] is None:
            con.print(f"P({p['expr']}): no draw defines {p['expr']}", highlight=False)
            continue
        over = "" if p["defined"] == 1.0 else f" (over the {p['defined']:.1%} of the draws that define it)"
        con.print(f"P({p['expr']}) = {p['p']:.1%} ± {p['se']:.1%}{over}", highlight=False)
    if mc.correlations:
        con.print(
            "Rank correlations (normal copula): "
            + ", ".join(f"{c['fields'][0]} ~ {c['fields'][1]} ρ = {c['rho']:g}" for c in mc.correlations),
            highlight=False,
        )
    if mc.samples_path:
        con.print(f"Every draw's inputs and outputs: {mc.samples_path}", highlight=False)
    for w in mc.warnings:
        con.print(f"[yellow]warning:[/yellow] {w}", highlight=False)


def print_sensitivity(res, console: Console | None = None) -> None:
    """`dtsim sensitivity`: the inputs ranked by total Sobol index, with first-order index, their 95 %
    intervals and the tornado's ends."""
    con = console or _console()
    t = table(
        title=f"Sensitivity of {res.output} (point {res.point:,.4g}): Sobol indices from {res.runs:,} runs",
        title_justify="left",
    )
    for col in ("input", "distribution", "ST ± 95 %", "S1 ± 95 %", "at P10", "at P90"):
        t.add_column(col, justify="left" if col in ("input", "distribution") else "right")
    idle = []
    for r in res.indices:
        name = r["input"].removeprefix("assumptions.") + (" (table)" if r["from"] != "scenario" else "")
        if r["ST"] + r["ST_conf"] < 0.005 and r["low"] == r["high"] == res.point:
            idle.append(name)  # no effect: listed on one line below the table
            continue
        t.add_row(
            name,
            r["distribution"],
            f"{r['ST']:.3f} ± {r['ST_conf']:.3f}",
            f"{r['S1']:.3f} ± {r['S1_conf']:.3f}",
            f"{r['low']:,.4g}",
            f"{r['high']:,.4g}",
        )
    con.print(t)
    con.print(
        "ST: share of the variance the input has a hand in (interactions included); S1: alone. "
        "At P10 / P90: the output with that input at its P10 / P90 and the others at their medians.",
        highlight=False,
    )
    if idle:
        con.print(f"No effect on {res.output} (ST < 0.005, flat tornado): {', '.join(idle)}", highlight=False)
    if res.unread:
        from dtsim.analysis.uncertainty import unread_note

        con.print(f"Assumptions {unread_note(res.unread)}.", highlight=False)
    for w in res.warnings:
        con.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
