"""CLI commands of the validation: `dtsim validate` and `dtsim calibrate`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.common import console, err, fail, print_json, table, with_progress
from dtsim.interfaces.cli.datacenter import CalibrationOpt, calibration_option
from dtsim.interfaces.operations import group_bounds_text

if TYPE_CHECKING:  # the validation package loads numpy and pydantic: only when a command runs
    from dtsim.validation.report import ValidationReport

RunsOpt = Annotated[  # a string: typer's Path would read "" as "." (this folder)
    str | None,
    typer.Option("--runs", help="A directory of your own record files (*.yaml), added to the bundled ones."),
]
SubsetOpt = Annotated[
    str | None, typer.Option("--subset", help="Comma-separated group names or record ids (default: all).")
]
CalibrationSubsetOpt = Annotated[
    str | None,
    typer.Option(
        "--subset",
        help="Comma-separated group names or record ids to fit on (default: the groups whose role is "
        "calibration and that hold fitted kinds of record, as `dtsim validate` lists them).",
    ),
]


def _names(text: str | None) -> list[str] | None:
    """--subset's names (None when it is not given); a value with no name in it (`,` or spaces) is
    refused: it ran as if --subset had been left out."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ScenarioError(
            [("--subset", text, "names no group or record id; leave --subset out for the default")]
        )
    return names


def _subset(text: str | None, known: set[str], data=None) -> list[str] | None:
    from dtsim.interfaces.operations import validation_subset

    return validation_subset(_names(text), known, data=data)


def plot_file(result: ValidationReport, path: Path) -> Path:
    """Predicted against measured, log-log, one colour per group, the y = x line."""
    from dtsim.interfaces.plotting import pyplot

    plt = pyplot(path)
    rows = result.predicted_runs
    if not rows:
        raise ScenarioError([("--plot", str(path), "no predicted runs to plot")])
    fig, ax = plt.subplots(figsize=(8, 7))
    groups = list(dict.fromkeys(r.group for r in rows))
    cmap = plt.get_cmap("tab20")
    for i, g in enumerate(groups):
        sel = [r for r in rows if r.group == g]
        marker = "o" if sel[0].role == "check" else "s"
        ax.scatter(
            [r.measured for r in sel],
            [r.predicted for r in sel],
            label=f"{g} ({sel[0].role})",
            color=cmap(i % 20),
            marker=marker,
            s=28,
            alpha=0.85,
        )
    lo = min(min(r.measured, r.predicted) for r in rows) / 1.5
    hi = max(max(r.measured, r.predicted) for r in rows) * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", lw=1)
    for f in (0.8, 1.25):
        ax.plot([lo, hi], [lo * f, hi * f], color="grey", lw=0.6, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured (each record's own unit)")
    ax.set_ylabel("predicted by dtsim")
    ax.set_title("dtsim against measured runs (squares: calibration, circles: predictions; dashed ±25%)")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _skipped_note(data) -> None:
    """The files of --runs that were not read (only *.yaml / *.yml are), on stderr."""
    if data.skipped:
        names = ", ".join(Path(p).name for p in data.skipped[:5]) + (" …" if len(data.skipped) > 5 else "")
        err.print(
            f"[yellow]not read:[/yellow] {len(data.skipped)} file(s) of --runs that are not .yaml/.yml: {names}",
            highlight=False,
        )


def _ids(ids: list[str]) -> str:
    if len(ids) <= 2:
        return ", ".join(ids)
    return f"{ids[0]} … {ids[-1]} ({len(ids)})"


def _fmt(v: float | None, unit: str | None = None) -> str:
    if v is None:
        return "—"
    return f"{v:,.4g}"


def coverage_table(coverage: dict[str, Any]):
    """The datacenter model's intervals, left out source by source: the share of each source's runs
    inside the interval the other sources give, at each level, then pooled."""
    from dtsim.validation.model_error import coverage_rows

    t = table(
        title="Model-error intervals, each source left out: share of its runs inside (the records "
        "validated; a group without source_set is a source of its own)",
        title_justify="left",
    )
    t.add_column("runs of", overflow="fold")
    t.add_column("runs", justify="right")
    for lv in coverage["levels"]:
        t.add_column(f"{lv:.0%}", justify="right")
    for name, runs, cells in coverage_rows(coverage):
        t.add_row(name, str(runs), *cells)
    return t


def validate(
    runs: RunsOpt = None,
    subset: SubsetOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object: runs, summary, calibration.")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Write a predicted-vs-measured scatter (.png/.svg/.pdf)."),
    ] = None,
    calibration: CalibrationOpt = None,
) -> None:
    """Predict every measured run and print the distance from reality (exit 1 if a bound fails or a
    record is rejected)."""
    from dtsim.interfaces.operations import validation_report

    try:
        doc = calibration_option(calibration)
        names = _names(subset)
        data, result = validation_report(names, runs, doc)
        if plot is not None:
            plot_file(result, plot)
    except ScenarioError as exc:
        fail(exc)
        return
    for p in data.problems:
        err.print(
            f"[bold red]rejected:[/bold red] {p.file}: record {p.record}: {p.field}: {p.reason}",
            highlight=False,
        )
    _skipped_note(data)
    code = 0 if (result.bounds_ok and not data.problems) else 1
    if as_json:
        print_json(result.as_dict(), default=str)
        raise typer.Exit(code)
    con = console()
    t = table(title="Runs", title_justify="left")
    for col in ("id", "group", "role", "metric", "measured", "predicted", "error"):
        t.add_column(col, justify="right" if col in ("measured", "predicted", "error") else "left")
    for r in result.runs:
        if r.role == "reference":
            t.add_row(r.id, r.group, "reference", str(r.metric), r.measured_text or "—", "—", "not predicted")
            continue
        err_txt = "—" if r.error is None else f"{r.error:+.1%}"
        if r.points is not None:
            err_txt += f" ({r.points:+.1f} pt)"
        t.add_row(r.id, r.group, r.role, r.metric, _fmt(r.measured), _fmt(r.predicted), err_txt)
    con.print(t)
    s = table(title="Groups (|error| as a fraction of the measured value)", title_justify="left")
    for col in (
        "group",
        "roles",
        "runs",
        "median |err|",
        "max |err|",
        "max |pt|",
        "rank corr.",
        "bounds",
    ):
        s.add_column(col, no_wrap=col in ("group", "runs", "roles"), overflow="fold")
    for g, e in result.summary.items():
        bounds = group_bounds_text(result, g)
        s.add_row(
            g,
            ",".join(e.roles),
            f"{e.predicted}/{e.runs}",
            "—" if e.median_abs_error is None else f"{e.median_abs_error:.1%}",
            "—" if e.max_abs_error is None else f"{e.max_abs_error:.1%}",
            "—" if e.max_abs_points is None else f"{e.max_abs_points:.1f}",
            "—" if e.spearman is None else f"{e.spearman:.2f}",
            bounds or "—",
        )
    con.print(s)
    w = table(title="Worst run of each group, and what may explain it", title_justify="left")
    for col in ("group", "run", "error", "why"):
        w.add_column(col, no_wrap=col != "why", overflow="fold")
    for g, e in result.summary.items():
        if e.worst is not None and e.worst_error is not None and abs(e.worst_error) >= 0.05:
            w.add_row(g, e.worst, f"{e.worst_error:+.1%}", e.worst_why or "—")
    if w.rows:
        con.print(w)
    pooled = result.datacenter_check
    if pooled["runs"]:
        con.print(
            f"Datacenter check runs pooled: {pooled['runs']}, median |error| {pooled['median_abs_error']:.1%}",
            highlight=False,
        )
    coverage = result.interval_coverage
    if coverage["sources"]:
        con.print(coverage_table(coverage))
    verdicts = result.fit_verdicts_text()
    if verdicts:
        con.print(f"Fit verdicts: {verdicts}", highlight=False)
    c = table(
        title=f"Fitted constants in use (calibration of {result.calibration_date}"
        + (
            f", laid over the packaged calibration of {result.calibration_laid_over.get('date')})"
            if result.calibration_laid_over
            else ")"
        ),
        title_justify="left",
    )
    for col in ("section", "name", "constant", "value", "fitted on"):
        c.add_column(col)
    for row in result.constants:
        c.add_row(row.section, row.name, row.constant, f"{row.value:.4g}", _ids(row.fitted_on))
    con.print(c)
    declared = sorted(
        {
            r.group
            for r in result.runs
            if r.role == "check" and getattr(data.groups.get(r.group), "role", None) == "calibration"
        }
    )
    if declared:  # the role column says check: why, and how they become calibration rows
        con.print(
            f"Groups declared role: calibration whose rows are predictions here ({', '.join(declared)}): a row "
            "is a calibration row only where the constants in use were fitted on it; fit them with `dtsim "
            "calibrate --runs DIR --subset GROUP --out FILE`, then pass --calibration FILE.",
            highlight=False,
        )
    unbounded = [
        f"{name} {s.median_abs_error:.0%}"
        for name, s in result.summary.items()
        if not s.bounds and "check" in s.roles and s.median_abs_error is not None
    ]
    con.print(
        f"{len(result.runs)} records ({len(result.predicted_runs)} predicted) "
        f"in {result.seconds:.1f} s; bounds {'all met' if result.bounds_ok else 'NOT all met'}"
        + (
            f" — but {len(unbounded)} check groups have no bound to meet (median |error|: "
            + ", ".join(unbounded)
            + ")"
            if unbounded
            else ""
        )
        + (f"; plot written to {plot}" if plot else "")
        + (
            f"; [red]{len(data.problems)} records rejected[/red] (listed above the tables)"
            if data.problems
            else ""
        )
    )
    raise typer.Exit(code)


def calibrate(
    ctx: typer.Context,
    subset: CalibrationSubsetOpt = None,
    runs: RunsOpt = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Write the fitted constants here (never into the installed package); use the file "
            "with --calibration FILE. An existing file is kept unless --force.",
        ),
    ] = Path("calibration.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --out file.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Fit and print; write nothing.")] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the calibration document as JSON (writing it only with --out)."),
    ] = False,
) -> None:
    """Fit the documented efficiency constants on the calibration subset and write them, with the
    records they were fitted on, the date and the residuals."""
    from dtsim.interfaces.cli.common import params_given
    from dtsim.validation import calibrate as run_calibration
    from dtsim.validation import load_dataset
    from dtsim.validation.calibrate import existing_calibration, write

    try:
        if as_json and "out" not in params_given(ctx):
            dry_run = True  # --json prints; it writes only where --out says
        if not dry_run and (out.is_dir() or (out.exists() and not out.is_file())):  # --force or not
            raise ScenarioError([("--out", str(out), existing_calibration(out))])
        if not dry_run and not force and out.exists():
            # checked before the fit: a saved calibration is never replaced unasked
            raise ScenarioError([("--out", str(out), existing_calibration(out))])
        data = load_dataset(runs)
        known = set(data.groups) | {r.id for r in data.records}
        names = _subset(subset, known, data)
        doc = with_progress("fitting", not as_json, lambda p: run_calibration(data, names, p))
        target = None
        if data.problems:  # a calibration that silently left out the user's records would be lost work
            dry_run = True
        pinned = doc.get("pinned") or []
        if pinned and not force:  # a constant stuck at its range's end is no fit: written only if asked
            dry_run = True
        if not dry_run:
            try:
                target = write(doc, out)
            except OSError as exc:
                raise ScenarioError(
                    [("--out", str(out), f"cannot be written ({exc.strerror}); pass --out FILE")]
                ) from None
    except ScenarioError as exc:
        fail(exc)
        return
    for p in data.problems:
        console(stderr=True).print(f"[bold red]rejected:[/bold red] {p}", highlight=False)
    for line in pinned:
        console(stderr=True).print(f"[bold yellow]pinned:[/bold yellow] {line}", highlight=False)
    _skipped_note(data)
    code = 1 if data.problems or (pinned and not force) else 0
    if as_json:
        print_json(doc)
        raise typer.Exit(code)
    con = console()
    t = table(title=f"Fitted on {', '.join(doc['subset'])} ({doc['date']})", title_justify="left")
    for col in ("section", "name", "constant", "value", "RMS log err", "fitted on"):
        t.add_column(col)
    from dtsim.validation.runner import constants_table

    for row in constants_table(doc):
        t.add_row(
            row.section,
            row.name,
            row.constant,
            f"{row.value:.4g}",
            "—" if row.rms_log_error is None else f"{row.rms_log_error:.4f}",
            _ids(row.fitted_on),
        )
    con.print(t)
    if data.problems:
        con.print(
            f"[red]nothing written: {len(data.problems)} records were rejected (listed above); fix them, or "
            "drop --runs, and fit again[/red]",
            highlight=False,
        )
    elif pinned and not force:
        con.print(
            f"[red]nothing written: {len(pinned)} constant(s) sit at an end of their search range (listed "
            "above), so the records ask for more than the model allows; check them, or --force to write it[/red]",
            highlight=False,
        )
    else:
        con.print("written to " + str(target) if target else "dry run: nothing written")
    raise typer.Exit(code)


COMMANDS = {"validate": validate, "calibrate": calibrate}
GROUPS: dict[str, typer.Typer] = {}
