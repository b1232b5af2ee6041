"""The scenario commands: `simulate`, `presets`, `schema`, `assumptions`, `serve`."""

from pathlib import Path
from typing import Annotated

import typer

from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.common import (
    CorrOpt,
    FixedAssumptionsOpt,
    LevelsOpt,
    ProbOpt,
    SchedulerOpt,
    SeedOpt,
    WorkersOpt,
    at_medians,
    console,
    fail,
    print_json,
    table,
    with_progress,
)
from dtsim.interfaces.operations import set_keys, uncertainty_flags_alone

# The models, the schema (pydantic) and the catalog (YAML) are imported inside the commands that
# use them, so that `dtsim --help` and `dtsim --version` start without them (issue 12 item 8).


def simulate(
    file: Annotated[Path | None, typer.Argument(help="Scenario file (YAML or JSON).")] = None,
    preset: Annotated[
        str | None, typer.Option("--preset", "-p", help="Start from a preset (see `dtsim presets`).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", "-s", help="Override a field: --set num_nodes=500 (repeatable)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of the report.")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show every formula with its numbers and source.")
    ] = False,
    uncertainty: Annotated[
        int | None,
        typer.Option(
            "--uncertainty",
            help="Draw N samples (scrambled Sobol, rounded up to a power of two) of the fields given as "
            "distributions (--set mfu=0.3..0.5, --set latency_ms=lognormal:100:0.3, or {dist: ...} in "
            "the file) and report P10/P50/P90 of every headline output.",
        ),
    ] = None,
    seed: SeedOpt = None,
    prob: ProbOpt = None,
    levels: LevelsOpt = None,
    fixed_assumptions: FixedAssumptionsOpt = False,
    corr: CorrOpt = None,
    samples: Annotated[
        Path | None,
        typer.Option(
            "--samples", help="With --uncertainty: write every draw's inputs and outputs to FILE.parquet."
        ),
    ] = None,
    scheduler: SchedulerOpt = None,
    workers: WorkersOpt = None,
) -> None:
    """Simulate one training run and print the report (default scenario: MIRI simulator docs §9)."""
    # lazy: numpy/pydantic models and Rich report only when a command runs (fast --help)
    from dtsim.analysis.uncertainty import load_uncertain_scenario, parse_levels
    from dtsim.interfaces.cli.report import print_report
    from dtsim.models.decentralized.engine import simulate as run_simulation

    mc = None
    try:
        uncertainty_flags_alone(
            uncertainty,
            **{
                "--prob": prob,
                "--levels": levels,
                "--seed": seed,
                "--fixed-assumptions": fixed_assumptions,
                "--corr": corr,
                "--samples": samples,
                "--scheduler": scheduler,
                "--workers": workers,
            },
        )
        # the table's distributions only when drawing (without --uncertainty the point is the table's value)
        scenario, dists = load_uncertain_scenario(
            file,
            preset,
            set_ or [],
            fixed_assumptions=fixed_assumptions or uncertainty is None,
            corr_texts=corr or [],
        )
        result = run_simulation(scenario)
        if uncertainty is not None:
            mc = monte_carlo_with_progress(
                scenario,
                dists,
                uncertainty,
                seed,
                parse_levels(levels),
                prob or [],
                as_json,
                scheduler=scheduler,
                workers=workers,
                samples_path=samples,
            )
    except ScenarioError as exc:
        fail(exc)
        return
    if as_json:
        payload = result.model_dump(mode="json")
        if explain:
            from dtsim.models.decentralized.explain import derivation

            payload["explain"] = [step.__dict__ for step in derivation(result)]
        if mc is not None:
            payload |= mc.json_parts()
        elif dists:
            payload["distributions_at_point"] = {k: v.describe() for k, v in dists.items()}
        print_json(payload)
        return
    from rich.markup import escape

    # the name is the user's text: escaped, so Rich prints its brackets as typed (not as markup)
    base = escape(scenario.name or preset or (file.name if file else "default scenario"))
    # a title that names only the base hid every --set (a trial user's case); a field set twice is one
    changed = len(set_keys(set_))
    title = f"dtsim — {base}" + (f", {changed} field{'s' if changed > 1 else ''} set" if changed else "")
    print_report(result, title=title, explain=explain, mc=mc)
    if mc is not None:
        from dtsim.interfaces.cli.report import print_uncertainty

        print_uncertainty(mc)
    elif dists:
        console().print(at_medians(dists), highlight=False)


def monte_carlo_with_progress(scenario, dists, n, seed, levels, probs, quiet: bool, **options):
    """run_monte_carlo with a progress bar on stderr (draws done, time left) for large draws or a Dask
    run, not under --json."""
    from dtsim.analysis.uncertainty import run_monte_carlo

    on_dask = options.get("scheduler") is not None or options.get("workers") is not None
    return with_progress(
        "draws",
        not quiet and (n >= 200_000 or on_dask),
        lambda p: run_monte_carlo(scenario, dists, n, seed, levels, probs=probs, progress=p, **options),
    )


def sensitivity(
    file: Annotated[Path | None, typer.Argument(help="Scenario file (YAML or JSON).")] = None,
    preset: Annotated[
        str | None, typer.Option("--preset", "-p", help="Start from a preset (see `dtsim presets`).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            "-s",
            help="Override a field, or give it as a distribution: --set mfu=0.3..0.5 (repeatable).",
        ),
    ] = None,
    output: Annotated[
        str, typer.Option("--output", "-o", help="The simulate output to explain (any numeric output).")
    ] = "wall_clock_days",
    base: Annotated[
        int,
        typer.Option(
            "--base",
            help="Saltelli base samples N (rounded up to a power of two); the model runs N·(d+2) times.",
        ),
    ] = 1024,
    seed: Annotated[int | None, typer.Option(help="Seed of the sampling and the bootstrap.")] = None,
    fixed_assumptions: Annotated[
        bool,
        typer.Option(
            "--fixed-assumptions",
            help="Hold the assumptions table at its point values: only the scenario's distributions vary.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of the table.")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Write the tornado and Sobol indices to a .png, .svg or .pdf."),
    ] = None,
) -> None:
    """Which uncertain inputs drive an output: Sobol first-order and total indices (SALib) and a tornado.

    Varies the scenario's fields given as distributions and, unless --fixed-assumptions, the
    assumptions table's distributions (docs/assumptions.md)."""
    from dtsim.analysis.sensitivity import sensitivity as run_sensitivity
    from dtsim.analysis.uncertainty import load_uncertain_scenario

    try:
        scenario, dists = load_uncertain_scenario(
            file, preset, set_ or [], fixed_assumptions=fixed_assumptions
        )
        if plot is not None:
            from dtsim.interfaces.plotting import pyplot

            pyplot(plot)  # a wrong file kind is refused before the runs
        res = run_sensitivity(scenario, dists, output, base, seed)
        if plot is not None:
            from dtsim.interfaces.plotting import plot_sensitivity

            plot_sensitivity(res, plot)
    except ScenarioError as exc:
        fail(exc)
        return
    if as_json:
        print_json(res.as_dict())
        return
    from dtsim.interfaces.cli.report import print_sensitivity

    print_sensitivity(res)
    if plot is not None:
        console().print(f"Plot written to {plot}", highlight=False)


def presets(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List scenario presets, node presets, accelerators and regions."""
    from dtsim import catalog  # lazy: YAML parsing only when a command runs (fast --help)

    scen = catalog.scenario_presets()
    nodes = catalog.nodes()
    gpus = catalog.gpus()
    if as_json:
        data = catalog.catalog_payload()
        print_json(data)
        return
    con = console()
    t = table(title="Scenario presets (--preset NAME)", title_justify="left")
    t.add_column("name", style="bold")
    t.add_column("description")
    for k, p in scen.items():
        t.add_row(k, p.description)
    con.print(t)
    t = table(title="Node presets (--set node=NAME)", title_justify="left")
    for col in ("name", "node", "PFLOPS", "VRAM GB", "kind"):
        t.add_column(col, justify="right" if col in ("PFLOPS", "VRAM GB") else "left")
    for k, n in nodes.items():
        t.add_row(
            k,
            n.name + (f" ({n.precision})" if n.precision else ""),
            f"{n.pflops:g}",
            f"{n.vram_gb:,.0f}",
            n.kind,
        )
    con.print(t)
    t = table(title="Accelerators (--set gpu=NAME)", title_justify="left")
    for col in ("id", "name", "FP16 TFLOPS", "FP8 TFLOPS", "GB", "W", "USD"):
        t.add_column(col, justify="left" if col in ("id", "name") else "right")
    for k, g in gpus.items():
        t.add_row(
            k,
            g.name,
            f"{g.fp16_tflops:g}",
            "—" if g.fp8_tflops is None else f"{g.fp8_tflops:g}",
            f"{g.memory_gb:g}",
            f"{g.board_power_w:g}",
            f"{g.price_usd:,.0f}",
        )
    con.print(t)
    t = table(title="Regions (node_groups[].region)", title_justify="left")
    for col in ("id", "name", "hosts"):
        t.add_column(col)
    for k, r in catalog.regions().items():
        t.add_row(k, r.name, r.hosts)
    con.print(t)


def schema() -> None:
    """Print the JSON Schema of a scenario."""
    from dtsim.schema.scenario import scenario_json_schema  # lazy: pydantic (fast --help)

    print_json(scenario_json_schema())


def assumptions(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Print the assumptions table: every constant, its value, unit and source."""
    from dtsim import assumptions as assumptions_mod  # lazy: numpy + YAML (fast --help)

    rows = assumptions_mod.table()
    if as_json:
        print_json([r.__dict__ for r in rows], default=list)
        return
    t = table(title="Assumptions (override with --set assumptions.NAME=VALUE)", title_justify="left")
    for col in ("name", "value", "unit", "section", "source"):
        t.add_column(col, overflow="fold")
    for r in rows:
        value = r.value if not isinstance(r.value, dict) else "table"
        t.add_row(r.name, str(value), r.unit, r.seed, r.source)
    console().print(t)


def serve(
    host: Annotated[
        str,
        typer.Option(
            help="Interface to bind (localhost by default; any other address warns: the API has no "
            "authentication)."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[
        int,
        typer.Option(
            help="Server processes, 1–64. With more than 1 only the HTTP API is served (the web UI needs "
            "one process: its live connection must reach the process that built the page); background "
            "jobs are shared by all of them.",
        ),
    ] = 1,
) -> None:
    """Serve the web UI at / and the JSON API under /api (OpenAPI at /openapi.json, docs at /docs);
    prints the URL once it is listening."""
    from dtsim.interfaces.cli.serving import run_server

    run_server(host, port, workers)


COMMANDS = {
    "simulate": simulate,
    "sensitivity": sensitivity,
    "presets": presets,
    "schema": schema,
    "assumptions": assumptions,
    "serve": serve,
}
GROUPS: dict[str, typer.Typer] = {}
