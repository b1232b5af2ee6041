"""`dtsim sweep`, `dtsim target` and `dtsim governance`: grids, target searches and the threshold analysis."""

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from dtsim.errors import ScenarioError
from dtsim.interfaces import operations
from dtsim.interfaces.cli.common import (
    CorrOpt,
    FixedAssumptionsOpt,
    LevelsOpt,
    ProbOpt,
    SchedulerOpt,
    SeedOpt,
    WorkersOpt,
    at_medians,
    command_group,
    console,
    err,
    fail,
    print_json,
    table,
    with_progress,
)

DAYS_HELP = (
    "Time limit in days (default: governance_run_days of the assumptions table, 547.875 = 1.5 × 365.25)."
)


def _fmt(x: Any) -> str:
    if isinstance(x, str):
        return x
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    x = float(x)
    if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3):
        return f"{x:.3e}"
    return f"{x:,.4g}"


def sweep(
    file: Annotated[Path | None, typer.Argument(help="Scenario file (YAML or JSON).")] = None,
    preset: Annotated[str | None, typer.Option("--preset", "-p", help="Start from a preset.")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", "-s", help="Override a field: --set num_nodes=500.")
    ] = None,
    vary: Annotated[
        list[str] | None,
        typer.Option(
            "--vary",
            "-v",
            help="field=start:stop:num[:log] or field=v1,v2,... (repeatable: the grid is the product).",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the table: .csv or .parquet.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Line plot (1 field) or heat map (2), PNG.")
    ] = None,
    metric: Annotated[
        str, typer.Option("--metric", "-m", help="Output to plot and summarise.")
    ] = "wall_clock_days",
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON records.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    uncertainty: Annotated[
        int | None,
        typer.Option(
            "--uncertainty",
            help="At every grid point, draw N samples (the same at each point) of the fields given as "
            "distributions and of the assumptions table, and add each headline output's P10/P50/P90 "
            "(columns OUTPUT_p10 …, feasible_share); plots draw the band.",
        ),
    ] = None,
    seed: SeedOpt = None,
    levels: LevelsOpt = None,
    fixed_assumptions: FixedAssumptionsOpt = False,
    corr: CorrOpt = None,
    scheduler: SchedulerOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """Simulate a grid over one or more fields (the batch path) and write a tidy table and a plot."""
    # lazy: numpy, the pydantic scenario model and the YAML catalog load only when the command runs
    # (fast --help)
    import numpy as np

    from dtsim.analysis.grid import (
        add_bands,
        check_out,
        grid_size,
        metric_names,
        parse_vary,
        run_grid,
        set_and_varied,
        write_table,
    )
    from dtsim.analysis.uncertainty import headline, level_name, parse_levels, share
    from dtsim.interfaces.plotting import plot_grid

    try:
        scenario, dists = uncertain_base(
            file, preset, set_, uncertainty, seed, levels, fixed_assumptions, corr
        )
        axes = [parse_vary(v) for v in vary or []]
        if not axes:
            raise ScenarioError([("--vary", None, "give at least one: --vary field=start:stop:num[:log]")])
        # (a drawn one gets its own error: vary it or draw it)
        set_and_varied({k: v for k, v in operations.set_keys(set_).items() if k not in dists}, axes)
        if out is not None:  # a file that cannot be written fails before the grid runs
            check_out(out)
        if plot is not None:
            from dtsim.interfaces.plotting import pyplot

            pyplot(plot)
        n = grid_size(axes)
        level_list = parse_levels(levels)
        options = {"scheduler": scheduler, "workers": workers}
        watch = not quiet and not as_json
        on_dask = scheduler is not None or workers is not None
        result = with_progress(
            f"{n:,} points",
            watch and (n >= 200_000 or on_dask),
            lambda p: run_grid(scenario, axes, p, **options),
        )
        numeric = [m for m in metric_names(result) if np.asarray(result.columns[m]).dtype.kind in "fiub"]
        if metric not in numeric:  # a text output (mode, bottleneck) has no number to rank or plot
            what = "is not a numeric output" if metric in result.columns else "is not an output"
            raise ScenarioError([("--metric", metric, f"{what}; choose one of {', '.join(numeric)}")])
        if uncertainty is not None:
            with_progress(
                f"{n:,} points × {uncertainty:,} draws",
                watch and (n * uncertainty >= 1 << 20 or on_dask),
                lambda p: add_bands(
                    result,
                    scenario,
                    dists,
                    uncertainty,
                    seed,
                    level_list,
                    tuple(dict.fromkeys([*headline(scenario, dists, [a.field for a in axes]), metric])),
                    progress=p,
                    **options,
                ),
            )
        if out is not None:
            write_table(result, out)
        if plot is not None:
            plot_grid(result, metric, plot)
    except ScenarioError as exc:
        fail(exc)
        return
    bands = result.bands
    band_names = [f"{metric}_{level_name(q)}" for q in bands.levels] if bands else []
    band_names = [k for k in band_names if k in result.columns]

    def band(i: int) -> str:
        return " / ".join(_fmt(result.columns[k][i]) for k in band_names)

    if as_json:
        from dtsim.interfaces.operations import grid_columns

        for a in result.axes:  # the records stay one JSON document; what rounding merged goes to stderr
            if a.note():
                err.print(f"note: {a.note()}", highlight=False)

        columns = grid_columns(result)  # an undefined value (no draw defined at a point) is null, never NaN
        records = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
        payload: Any = records if bands is None else {"points": records, "uncertainty": bands.as_dict()}
        print_json(payload, None, _json_default)
        return
    c = console()
    z = np.asarray(result.columns[metric], dtype=float)
    label = " / ".join(level_name(q).upper() for q in bands.levels) if bands else ""
    c.print(
        f"{result.n:,} points ({' × '.join(f'{a.field} {len(a)}' for a in result.axes)}) "
        f"in {result.seconds:.2f} s by the batch path"
    )
    for a in result.axes:
        if a.note():
            c.print(f"note: {a.note()}", highlight=False)
    from dtsim.analysis.uncertainty import unread_note
    from dtsim.models.decentralized.warning_rules import CODES

    bits = np.asarray(result.columns.get("warning_bits", np.zeros(result.n)), dtype=np.int64)
    # a point whose replicas never synchronize is a fraction of one step, not a run: not a grid extreme
    no_run = (bits >> CODES.index("LESS_THAN_ONE_OUTER_STEP")) & 1 == 1
    finite = np.isfinite(z) & ~no_run
    if finite.any():
        lo, hi = (
            int(np.nanargmin(np.where(finite, z, np.nan))),
            int(np.nanargmax(np.where(finite, z, np.nan))),
        )
        undefined = int((~np.isfinite(z)).sum())
        t = table(
            title=f"{metric}: range over the grid ({undefined:,} points where it is undefined"
            + (
                f", {int(no_run.sum()):,} that are not a run: their replicas never synchronize"
                if no_run.any()
                else ""
            )
            + ")"
        )
        t.add_column("")
        for a in result.axes:
            t.add_column(a.field, justify="right")
        t.add_column(metric, justify="right")
        if band_names:
            t.add_column(label, justify="right")
        t.add_column("mode")
        for which, i in (("lowest", lo), ("highest", hi)):
            t.add_row(
                which,
                *[_fmt(result.columns[a.field][i]) for a in result.axes],
                _fmt(z[i]),
                *([band(i)] if band_names else []),
                str(result.columns["mode"][i]),
            )
        c.print(t)
    if result.n <= 60:
        t = table(title="every point")
        for a in result.axes:
            t.add_column(a.field, justify="right")
        t.add_column(metric, justify="right")
        if band_names:
            t.add_column(label, justify="right")
            t.add_column("P(feasible)", justify="right")
        t.add_column("mode", justify="right")
        for i in range(result.n):
            extra = [band(i), share(float(result.columns["feasible_share"][i]))] if band_names else []
            t.add_row(
                *[_fmt(result.columns[a.field][i]) for a in result.axes],
                _fmt(z[i]),
                *extra,
                str(result.columns["mode"][i]) + (" (not a run)" if no_run[i] else ""),
            )
        c.print(t)
    counts = [(code, int(((bits >> k) & 1).sum())) for k, code in enumerate(CODES)]
    counts = [(code, m) for code, m in counts if m]
    if counts:
        c.print(
            "warnings at the grid's points (simulate one to read it; the JSON lists each point's): "
            + ", ".join(f"{code} at {m:,}" for code, m in counts),
            highlight=False,
        )
    if bands is not None:
        for w in bands.warnings:
            c.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
        seed_note = "" if bands.seed_given else f" (drawn; --seed {bands.seed} repeats it)"
        c.print(
            f"{label} of {metric} over {bands.draws_per_point:,} draws at each point, seed {bands.seed}{seed_note}; "
            f"inputs drawn: {', '.join(k.removeprefix('assumptions.') for k in bands.inputs) or 'none'}"
            + (
                f"; assumptions {unread_note(bands.unread, 'at any screened grid point')}."
                if bands.unread
                else "."
            ),
            highlight=False,
        )
    if out is not None:
        c.print(f"table: {out} ({result.n:,} rows × {len(result.columns)} columns)")
    if plot is not None:
        c.print(f"plot: {plot}")


def uncertain_base(file, preset, set_, uncertainty, seed, levels, fixed_assumptions, corr):
    """operations.uncertain_base, saying on stderr (so that --json output stays one document) that
    distributions given without --uncertainty ran at their medians."""
    base, dists = operations.uncertain_base(
        file, preset, set_, uncertainty, seed, levels, fixed_assumptions, corr
    )
    if uncertainty is None and dists:
        err.print(f"note: {at_medians(dists)}", highlight=False)
    return base, dists


row_dict = operations.row_dict


def _file_fields(file) -> dict:
    """The scenario fields a base file gives itself (its `preset:` is the base, not a field)."""
    from dtsim.schema.scenario import read_scenario_file

    return {} if file is None else {k: v for k, v in read_scenario_file(file).items() if k != "preset"}


def _print_search(res, title: str) -> None:
    from dtsim.analysis.search import MODE_LABEL

    c = console()
    c.print(f"[bold]{title}[/bold]")
    c.print(
        f"search space: {res.configurations:,} configurations × {len(res.space.node_counts)} node counts "
        f"(1–{int(res.space.node_counts[-1]):,}), less the hierarchies without two whole groups: "
        f"{res.rows:,} rows evaluated exhaustively"
        + (f", + {res.refined_rows:,} refined node counts" if res.refined_rows else "")
        + f"; {res.seconds:.1f} s"
    )
    w = res.winner
    if w is None:
        c.print("[red]no configuration in the space reaches it[/red]")
    else:
        t = table(title="winner", show_header=False)
        t.add_column("")
        t.add_column("", justify="right")
        for k, v in row_dict(w).items():
            t.add_row(k, _fmt(v) if not isinstance(v, int) else f"{v:,}")
        c.print(t)
    t = table(title="each mode's best, and why it lost")
    for col in ("mode", "node × count", "model B", "cost", "days", "verdict"):
        t.add_column(col)
    for mode, why in res.explanation.items():
        b = res.by_mode.get(mode) or res.closest.get(mode)
        t.add_row(
            MODE_LABEL[mode],
            f"{b.num_nodes:,} × {b.node.id}" if b else "—",
            _fmt(b.params_b) if b else "—",
            f"${b.cost_usd:,.0f}" if b else "—",
            _fmt(b.days) if b else "—",
            why,
        )
    c.print(t)


def target(
    file: Annotated[Path | None, typer.Argument(help="Base scenario (network, MFU, stragglers...).")] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset", "-p", help="Base preset (default: governance, or the file's own `preset:`)."
        ),
    ] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a base field.")] = None,
    local_flop: Annotated[
        float | None, typer.Option("--local-flop", help="Target: local-equivalent FLOP (C·η).")
    ] = None,
    quality_flop: Annotated[
        float | None, typer.Option("--quality-flop", help="Target: quality-adjusted FLOP (C·η·χ).")
    ] = None,
    params_b: Annotated[
        float | None,
        typer.Option(
            "--params-b", help="Target: this model size (B)... (with --solve num_nodes|days: the model)"
        ),
    ] = None,
    tokens_t: Annotated[
        float | None,
        typer.Option(
            "--tokens-t",
            help="...trained on this many tokens (T) (with --solve: default compute-optimal, "
            "chinchilla_tokens_per_param per parameter).",
        ),
    ] = None,
    solve: Annotated[
        str | None,
        typer.Option(
            "--solve",
            help="Direct question on the base's node kind (or one --node), naming the limiting factor: "
            "parameters_b (the largest model trained within --days on the base's num_nodes), num_nodes "
            "(the fewest nodes that train --params-b within --days) or days (how long --params-b takes on "
            "the base's num_nodes). H, compression and hierarchy range over the search space.",
        ),
    ] = None,
    objective: Annotated[
        str | None, typer.Option("--objective", help="cost (cheapest, the default) or time (fastest).")
    ] = None,
    days: Annotated[float | None, typer.Option("--days", help=DAYS_HELP)] = None,
    budget: Annotated[float | None, typer.Option("--budget", help="Capital budget in USD.")] = None,
    reach: Annotated[
        str | None,
        typer.Option(
            "--reach", help="Inverse query: the most local|quality compute reachable with --budget."
        ),
    ] = None,
    min_nodes: Annotated[
        bool,
        typer.Option("--min-nodes", help="Inverse query: fewest nodes of one --node preset for the target."),
    ] = False,
    node: Annotated[
        list[str] | None, typer.Option("--node", "-n", help="Node presets to search (default: all).")
    ] = None,
    max_nodes: Annotated[
        int | None, typer.Option("--max-nodes", help="Largest node count searched (default 100,000).")
    ] = None,
    compression: Annotated[str | None, typer.Option("--compression", help="Ratios, e.g. 1,16,150.")] = None,
    inner_steps: Annotated[
        str | None, typer.Option("--inner-steps", help="H values, e.g. auto,16,64.")
    ] = None,
    group_sizes: Annotated[
        str | None, typer.Option("--group-sizes", help="0 (flat) and group sizes.")
    ] = None,
    fractions: Annotated[
        str | None, typer.Option("--fractions", help="Model sizes: fractions of one node.")
    ] = None,
    pipeline_multiples: Annotated[
        str | None,
        typer.Option("--pipeline-multiples", help="Model sizes: multiples of one node (pipelines)."),
    ] = None,
    activation_compression: Annotated[
        str | None, typer.Option("--activation-compression", help="Activation compression ratios.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    uncertainty: Annotated[
        int | None,
        typer.Option(
            "--uncertainty",
            help="How sure the answer is: draw N samples of the base's distributions and of the assumptions "
            "table for the configuration found, and report P10/P50/P90 of its days, MFU, cost and energy and "
            "the chance it trains the tokens the point answer needs within the time limit (the token count "
            "held at the point; a draw where it cannot run counts as not in time).",
        ),
    ] = None,
    seed: SeedOpt = None,
    prob: ProbOpt = None,
    levels: LevelsOpt = None,
    fixed_assumptions: FixedAssumptionsOpt = False,
    corr: CorrOpt = None,
    scheduler: SchedulerOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """The cheapest or fastest configuration that reaches a target within a time limit (and the inverse
    queries: fewest nodes of one preset; most compute for a budget; --solve: the largest model, the
    fewest nodes or the days, with the limiting factor)."""
    # lazy: the pydantic scenario model and the YAML catalog load only when the command runs (fast --help)
    from dtsim.analysis.search import DEFAULT_DAYS
    from dtsim.schema.scenario import base_preset

    days_given, days = days, DEFAULT_DAYS if days is None else days
    try:
        operations.uncertainty_flags_alone(uncertainty, **{"--prob": prob})
        preset = base_preset(file, preset, "governance")
        base, dists = uncertain_base(file, preset, set_, uncertainty, seed, levels, fixed_assumptions, corr)
        operations.refuse_searched(operations.set_keys(set_), "target", solve, node_given=bool(node))
        # the base file's own fields that the search replaces were dropped with no word
        file_fields = _file_fields(file)
        operations.refuse_searched(file_fields, "target", solve, node_given=bool(node), where="file")
        if solve is not None:
            _target_solve(
                (_base_command(file, preset), file_fields),
                base,
                dists,
                solve,
                params_b,
                tokens_t,
                days_given,
                node,
                max_nodes,
                {
                    "--local-flop": local_flop,
                    "--quality-flop": quality_flop,
                    "--objective": objective,
                    "--budget": budget,
                    "--reach": reach,
                    "--min-nodes": min_nodes or None,
                    "--fractions": fractions,
                    "--pipeline-multiples": pipeline_multiples,
                },
                (compression, inner_steps, group_sizes, activation_compression),
                as_json,
                (uncertainty, seed, levels, prob, scheduler, workers),
            )
            return
        ans = with_progress(
            "configurations",
            not as_json,
            lambda progress: operations.target_search(
                base,
                dists,
                local_flop=local_flop,
                quality_flop=quality_flop,
                params_b=params_b,
                tokens_t=tokens_t,
                objective=objective,
                days=days_given,
                budget=budget,
                reach=reach,
                min_nodes=min_nodes,
                node=node,
                max_nodes=max_nodes,
                compression=compression,
                inner_steps=inner_steps,
                group_sizes=group_sizes,
                fractions=fractions,
                pipeline_multiples=pipeline_multiples,
                activation_compression=activation_compression,
                uncertainty=uncertainty,
                seed=seed,
                levels=levels,
                prob=prob,
                scheduler=scheduler,
                workers=workers,
                progress=progress,
            ),
        )
        res, tgt, obj, notes, mc, payload = ans.res, ans.target, ans.objective, ans.notes, ans.mc, ans.payload
        if res.winner is None and not as_json:
            from dtsim.analysis.search import not_a_run_note

            what = tgt.describe() if tgt else f"any run within ${budget:,.0f}"
            _print_search(res, f"target: {what} within {days:,.4g} days")
            short = not_a_run_note(res)
            raise ScenarioError(
                [
                    (
                        "target",
                        what,
                        f"no configuration in the space reaches it within {days:,.4g} days"
                        + (f" and ${budget:,.0f}" if budget else "")
                        + (f"; {short}" if short else "; see each mode's best above"),
                    )
                ]
            )
    except ScenarioError as exc:
        fail(exc)
        return
    if as_json:
        print_json(payload, default=_json_default)
        if res.winner is None:
            from dtsim.analysis.search import not_a_run_note

            what = tgt.describe() if tgt else f"any run within ${budget:,.0f}"
            short = not_a_run_note(res)
            err.print(
                f"[bold red]error:[/bold red] target = {what!r}: no configuration in the space reaches it within "
                f"{days:,.4g} days"
                + (f"; {short}" if short else "")
                + (" (so no --uncertainty draws)" if uncertainty is not None else ""),
                highlight=False,
            )
            raise typer.Exit(2)
        return
    title = (
        f"most {reach} compute for ${budget:,.0f} within {days:,.4g} days"
        if tgt is None
        else f"{'fewest nodes' if min_nodes else ('cheapest' if obj == 'cost' else 'fastest')}: {tgt.describe()} "
        f"within {days:,.4g} days" + (f" and ${budget:,.0f}" if budget else "")
    )
    _print_search(res, title)
    if min_nodes:
        console().print(f"minimum nodes: {res.winner.num_nodes:,} × {res.winner.node.id}")
    print_answer_warnings(notes, "the winner")
    if mc is not None:
        from dtsim.interfaces.cli.report import print_uncertainty

        p = mc.probabilities[0]
        console().print(
            f"How sure: the winner trains its {res.winner.tokens_t:,.3g}T tokens within {days:,.4g} days in "
            f"{p['p']:.1%} of {mc.samples:,} draws (a draw where it cannot run counts as not in time; the "
            "token count is the point answer's, and the search is not repeated per draw).",
            highlight=False,
        )
        print_uncertainty(mc, title="the winner")


SOLVE_QUESTION = {
    "parameters_b": "largest model",
    "num_nodes": "fewest nodes",
    "days": "how long",
}


def _base_command(file: Path | None, preset: str | None) -> str:
    """`dtsim simulate` with the base `target` searched from: its file layered on its preset, as target
    loads them (a file alone would be layered on simulate's default preset, not target's)."""
    import shlex

    return "dtsim simulate " + " ".join(
        ([shlex.quote(str(file))] if file else []) + (["--preset", shlex.quote(preset)] if preset else [])
    )


def _target_solve(
    check_base,
    base,
    dists,
    solve,
    params_b,
    tokens_t,
    days,
    nodes,
    max_nodes,
    others,
    space_opts,
    as_json,
    mc_opts,
):
    """`target --solve`: one direct question (analysis.search.solve), its answer, the configuration
    that gives it and the limiting factor, as text or --json; --uncertainty draws the answer's run."""
    compression, inner_steps, group_sizes, activation_compression = space_opts
    uncertainty, seed, levels, prob, scheduler, workers = mc_opts
    ans = operations.target_solve(
        base,
        dists,
        solve,
        params_b=params_b,
        tokens_t=tokens_t,
        days=days,
        node=nodes,
        max_nodes=max_nodes,
        others=others,
        compression=compression,
        inner_steps=inner_steps,
        group_sizes=group_sizes,
        activation_compression=activation_compression,
        uncertainty=uncertainty,
        seed=seed,
        levels=levels,
        prob=prob,
        scheduler=scheduler,
        workers=workers,
    )
    sol, question, notes, mc, in_time = ans.sol, ans.question, ans.notes, ans.mc, ans.in_time
    if as_json:
        print_json(ans.payload, default=_json_default)
        return
    c = console()
    c.print(f"[bold]{SOLVE_QUESTION[sol.solve]}:[/bold] {question}", highlight=False)
    c.print(f"tokens: {sol.tokens_t:,.4g}T ({sol.tokens_rule})", highlight=False)
    c.print(f"[bold]limiting factor: {sol.limit.factor}[/bold] — {sol.limit.why}", highlight=False)
    t = table(title="the fastest configuration at the answer", show_header=False)
    t.add_column("")
    t.add_column("", justify="right")
    for k, v in row_dict(sol.run).items():
        if k in ("reach_within_limit", "cost_usd"):
            continue
        t.add_row(k, _fmt(v) if not isinstance(v, int) else f"{v:,}")
    t.add_row("cost_usd", f"${sol.run.cost_usd:,.0f}")
    c.print(t)
    base_command, file_fields = check_base
    c.print(
        f"check it: {base_command} {_set_args(ans.payload['scenario_fields'], file_fields)}",
        highlight=False,
        markup=False,
    )
    c.print(
        f"search: {sol.searches:,} target search{'es' if sol.searches > 1 else ''}, {sol.rows:,} rows evaluated; "
        f"{sol.seconds:.1f} s",
        highlight=False,
    )
    print_answer_warnings(notes, "the answer's run")
    if mc is not None:
        from dtsim.interfaces.cli.report import print_uncertainty

        p = mc.probabilities[0]
        c.print(
            f"How sure: this configuration trains its {sol.tokens_t:,.4g}T tokens within {in_time:,.4g} days in "
            f"{p['p']:.1%} of {mc.samples:,} draws (a draw where it cannot run counts as not in time; the "
            "answer is not searched again per draw).",
            highlight=False,
        )
        print_uncertainty(mc, title="the answer's configuration")


def print_answer_warnings(notes: list[dict[str, str]], whose: str) -> None:
    """A searched answer's own warnings (what `simulate` says of its run), so none is shown without them."""
    if not notes:
        return
    t = table(title=f"Warnings: {whose}, run in simulate", title_justify="left", show_header=False, box=None)
    t.add_column("code", style="yellow", no_wrap=True)
    t.add_column("message")
    for n in notes:
        t.add_row(n["code"], n["message"])
    console().print(t)


def _set_args(fields: dict[str, Any], file_fields: dict[str, Any]) -> str:
    """`--set` items that give `fields` over a command that names the base file (its own values left
    out), each quoted for a POSIX shell; `assumptions` as one item per entry, a list or a table as JSON
    (YAML flow, as --set reads it). A review's case: an assumption printed as a Python dict, which a
    shell split in two."""
    import json
    import shlex

    items = []
    for k, v in fields.items():
        if k in file_fields and file_fields[k] == v:
            continue
        if k == "assumptions" and isinstance(v, dict):
            mine = file_fields.get("assumptions") or {}
            items += [f"assumptions.{a}={_set_text(x)}" for a, x in v.items() if mine.get(a) != x]
        elif isinstance(v, list | dict):
            items.append(f"{k}={json.dumps(v, separators=(',', ':'))}")
        else:
            items.append(f"{k}={_set_text(v)}")
    return " ".join(f"--set {shlex.quote(item)}" for item in items)


def _set_text(v: Any) -> str:
    """A field value as --set takes it (booleans as true/false, numbers in full)."""
    return str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, float) else str(v)


governance_app = command_group(
    no_args_is_help=False,
    invoke_without_command=True,
    help="Threshold analysis: per-node compute and memory caps, what they leave an actor, whom they catch.",
)


@governance_app.callback()
def governance(
    ctx: typer.Context,
    file: Annotated[Path | None, typer.Option("--file", help="Base scenario file.")] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            "-p",
            help="Base preset (network, MFU...), e.g. a miri-* deployment profile (default: governance, or "
            "the file's own `preset:`).",
        ),
    ] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a base field.")] = None,
    compute_cap: Annotated[
        str,
        typer.Option(
            "--compute-cap", help="Per-node compute caps, H100-equivalents, each ≤ 1,024 (or none)."
        ),
    ] = "16,8,4,2,1",
    memory_cap: Annotated[
        str | None,
        typer.Option(
            "--memory-cap",
            help="Per-node memory caps in GB, each ≤ 65,536, applied with --base-compute-cap (or none).",
        ),
    ] = "2048,1280,1024,512,256",
    base_compute_cap: Annotated[
        float, typer.Option("--base-compute-cap", help="Compute cap in force beside the memory caps.")
    ] = 16.0,
    targets: Annotated[str, typer.Option("--targets", help="Compute targets in FLOP.")] = "1e24,1e25,1e26",
    metric: Annotated[str, typer.Option("--metric", help="quality (C·η·χ) or local (C·η).")] = "quality",
    days: Annotated[float | None, typer.Option("--days", help=DAYS_HELP)] = None,
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", help="Accelerators to consider (default: all).")
    ] = None,
    precisions: Annotated[
        str, typer.Option("--precisions", help="Training precisions an actor may use.")
    ] = "fp16,fp8",
    max_nodes: Annotated[int, typer.Option("--max-nodes", help="Largest node count searched.")] = 100_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the analysis as JSON.")] = False,
    uncertainty: Annotated[
        int | None,
        typer.Option(
            "--uncertainty",
            help="How sure each answer is: for every cap's cheapest run to each target, draw N samples of the "
            "base's distributions and of the assumptions table and report the chance it trains the tokens "
            "the point answer needs within the time limit (and, in --json, its days at each level).",
        ),
    ] = None,
    seed: SeedOpt = None,
    levels: LevelsOpt = None,
    fixed_assumptions: FixedAssumptionsOpt = False,
    corr: CorrOpt = None,
    scheduler: SchedulerOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """For each cap: the largest node of each accelerator under it, the cheapest way to reach each
    target with such nodes, and the legitimate systems the cap would catch."""
    # lazy: the pydantic scenario model and the YAML catalog load only when the command runs (fast --help)
    from dtsim.assumptions import Assumptions
    from dtsim.schema.scenario import base_preset

    if ctx.invoked_subcommand is not None:
        return
    try:
        preset = base_preset(file, preset, "governance")
        base, dists = uncertain_base(file, preset, set_, uncertainty, seed, levels, fixed_assumptions, corr)
        operations.refuse_searched(operations.set_keys(set_), "governance")
        operations.refuse_searched(_file_fields(file), "governance", where="file")
        ans = with_progress(
            "configurations",
            not as_json,
            lambda progress: operations.governance_analysis(
                base,
                dists,
                compute_cap=compute_cap,
                memory_cap=memory_cap,
                base_compute_cap=base_compute_cap,
                targets=targets,
                metric=metric,
                days=days,
                gpu=gpu,
                precisions=precisions,
                max_nodes=max_nodes,
                uncertainty=uncertainty,
                seed=seed,
                levels=levels,
                scheduler=scheduler,
                workers=workers,
                progress=progress,
            ),
        )
    except ScenarioError as exc:
        fail(exc)
        return
    res, held = ans.res, ans.held
    if as_json:
        print_json(ans.payload, default=_json_default)
        return
    c = console()
    c.print(
        f"[bold]threshold analysis[/bold]: cheapest {res.metric}-adjusted compute within {res.days_limit:,.4g} days; "
        f"search space {res.configurations:,} configurations, {res.rows:,} rows, exhaustive over one grid "
        f"shared by every cap; {res.seconds:.1f} s"
    )
    t = table(title="cheapest way to reach each target under the cap")
    t.add_column("cap")
    for x in res.targets:
        t.add_column(f"{x:.3g} FLOP")
    t.add_column("systems caught", justify="right")
    for cr in res.caps:
        cells = []
        for x in res.targets:
            w = cr.cheapest[x]
            h = held.get((res.caps.index(cr), x))
            cells.append(
                ("only in < 1 outer step: not a run" if x in cr.not_a_run else "not reachable")
                if w is None
                else f"${w['cost_usd'] / 1e6:,.1f}M: {w['num_nodes']:,} × {w['node']}, {w['parameters_b']:.0f}B, {w['mode']}"
                + (f"; in time in {h['p_within_limit']:.0%} of draws" if h else "")
            )
        t.add_row(cr.cap.label(), *cells, f"{len(cr.caught)}/{len(res.systems)}")
    c.print(t)
    # what simulate says of each cheapest run, by code, with the cells it holds for (--json: per cell)
    said: dict[str, list[str]] = {}
    answers = 0
    for ci, cap in enumerate(ans.payload["caps"]):
        for x, w in cap["cheapest"].items():
            if w is None:
                continue
            answers += 1
            for code in w["warnings"]:
                said.setdefault(code, []).append(f"{res.caps[ci].cap.label()} at {float(x):.3g} FLOP")
    for code, where in said.items():
        label = "every cell" if len(where) == answers > 1 else "; ".join(where)
        c.print(
            f"[yellow]warning ({label}):[/yellow] {code} (simulate's warning of that run)", highlight=False
        )
    if held:
        first = next(iter(held.values()))
        c.print(
            f"How sure: each cheapest run drawn {first['samples']:,} times (seed {first['seed']}) over "
            f"{len(first['inputs'])} uncertain inputs; 'in time' is the share of draws that train the tokens "
            f"the point answer needs within {res.days_limit:,.4g} days (a draw where the run cannot go counts "
            "as not in time; the search is not repeated per draw; each run's days at the levels are in --json).",
            highlight=False,
        )
        cells: dict[str, list[str]] = {}  # each warning with the cells (cap, target) it holds for
        for (ci, x), h in held.items():
            for w in h["warnings"]:
                cells.setdefault(w, []).append(f"{res.caps[ci].cap.label()} at {x:.3g} FLOP")
        for w, where in cells.items():
            label = "every cell" if len(where) == len(held) > 1 else "; ".join(where)
            c.print(f"[yellow]warning ({label}):[/yellow] {w}", highlight=False)
    t = table(title="largest node of each accelerator under each cap (GPUs per node)")
    t.add_column("accelerator")
    for cr in res.caps:
        t.add_column(cr.cap.label(), justify="right")
    for i, row in enumerate(res.caps[0].largest):
        t.add_row(row["gpu"], *[str(cr.largest[i]["count"]) for cr in res.caps])
    c.print(t)
    t = table(title="legitimate systems each cap catches (✗ = caught)")
    t.add_column("system")
    t.add_column("H100-eq", justify="right")
    t.add_column("GB", justify="right")
    for cr in res.caps:
        t.add_column(cr.cap.label(), justify="center")
    asm = Assumptions()
    for s_ in res.systems:
        t.add_row(
            s_.name,
            f"{s_.h100_equivalents(asm):.2f}",
            f"{s_.memory_gb:,.0f}",
            *["✗" if s_ in cr.caught else "" for cr in res.caps],
        )
    c.print(t)


@governance_app.command("reproduce")
def governance_reproduce(
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """The original governance model's scenarios E1–E14 recomputed by dtsim, with every difference named."""
    from dtsim.analysis.evasion import agrees, reproduce

    rows = reproduce()
    if as_json:
        out = [
            {
                "name": c.name,
                "call": c.description,
                "fields": {
                    k: {"dtsim": a, "original": b, "agrees": agrees(c, k)} for k, (a, b) in c.fields.items()
                },
                "differences": list(c.differences),
                "cause": c.cause or None,
            }
            for c in rows
        ]
        print_json(out)
        return
    con = console()
    t = table(title="E1–E14: the original governance model beside dtsim")
    for col in ("", "call", "agree (1e-9)", "differ", "cause"):
        t.add_column(col)
    for c in rows:
        same = [k for k in c.fields if agrees(c, k)]
        diff = [f"{k} {c.rel(k):+.1%}" for k in c.fields if not agrees(c, k)]
        t.add_row(
            c.name, c.description, f"{len(same)}/{len(c.fields)}", "\n".join(diff) or "—", c.cause or ""
        )
    con.print(t)


_json_default = operations.json_default


COMMANDS = {"sweep": sweep, "target": target}
GROUPS = {"governance": governance_app}
