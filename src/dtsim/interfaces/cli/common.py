"""What every command module shares: the error console and the one way bad input ends a command.

Every command module of the CLI declares its commands the same way: module-level functions in
`COMMANDS` (name → function) and sub-command groups in `GROUPS` (name → typer.Typer); `cli/main.py`
registers them all in one loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from dtsim.errors import ScenarioError
from dtsim.interfaces import operations

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# Rich is imported when a command first prints, not when the CLI starts: `dtsim --help` is plain
# Click help and loads no Rich at all (issue 12 item 8: --help in ≤ 0.25 s).


def console(**options: Any) -> Console:
    """A rich Console (`stderr=True` for the error stream). Emoji codes are off: a user's value such as
    `1:100:3` is printed as typed, not with `:100:` turned into an emoji."""
    from rich.console import Console

    options.setdefault("emoji", False)
    return Console(**options)


def table(*columns: Any, **options: Any) -> Table:
    """A rich Table whose columns fold a value that does not fit onto the next line instead of cutting
    it with an ellipsis (Rich's default): in a narrow terminal a number or an id is shown whole."""
    from rich.table import Table

    class _Folding(Table):
        def add_column(self, *args: Any, **kw: Any) -> None:
            kw.setdefault("overflow", "fold")
            super().add_column(*args, **kw)

    return _Folding(*columns, **options)


PLAIN_PROGRESS_S = 10.0  # without a terminal, long work says how far it is this often


def with_progress(what: str, show: bool, run: Callable[[Callable[[int, int], None] | None], Any]) -> Any:
    """run(progress) with a progress bar on stderr (done of total, time left) when `show`, else run(None):
    the one progress bar of every long command (Monte Carlo, grids, searches)."""
    if not show:
        return run(None)
    err = console(stderr=True)
    if not err.is_terminal:  # no live bar (a pipe, a log file): a plain line at most every 10 s
        import time

        last = [time.monotonic()]

        def line(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] >= PLAIN_PROGRESS_S and done < total:
                last[0] = now
                err.print(f"{what}: {done:,}/{total:,}", highlight=False)

        return run(line)
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(what), BarColumn(), TextColumn("{task.completed:,}/{task.total:,}"))
    bar = Progress(*columns, TimeRemainingColumn(), console=console(stderr=True), transient=True)
    tasks: list[Any] = []

    def report(done: int, total: int) -> None:
        if not tasks:  # the bar appears with the run's first step: an input refused before it prints alone
            bar.start()
            tasks.append(bar.add_task(what, total=total))
        bar.update(tasks[0], completed=done, total=total)

    try:
        return run(report)
    finally:
        if tasks:
            bar.stop()


def json_text(payload: Any, indent: int | None = 2, default: Callable[[Any], Any] | None = None) -> str:
    """`payload` as strict JSON (operations.json_text: a value that is not finite, NaN or ±Infinity, an
    undefined or unbounded quantity, is written as null), each such value named on stderr, so every
    `--json` output parses with any JSON reader (RFC 8259 has no NaN or Infinity)."""
    where: list[str] = []
    text = operations.json_text(payload, indent, default, where)
    if where:
        shown = ", ".join(where[:5]) + (f" and {len(where) - 5:,} more" if len(where) > 5 else "")
        err.print(f"note: not finite, written as null: {shown}", highlight=False, markup=False)
    return text


def print_json(payload: Any, indent: int | None = 2, default: Callable[[Any], Any] | None = None) -> None:
    """Write `payload` to stdout as strict JSON (json_text), one document and a newline."""
    import sys

    sys.stdout.write(json_text(payload, indent, default) + "\n")


def command_group(**options: Any) -> typer.Typer:
    """A Typer app or sub-command group: plain Click help (no Rich on the --help path), no completion."""
    return typer.Typer(add_completion=False, rich_markup_mode=None, **options)


class _Stderr:
    """The error console, created on its first use."""

    _console: Console | None = None

    def print(self, *objects: Any, **options: Any) -> None:
        if self._console is None:
            self._console = console(stderr=True)
        self._console.print(*objects, **options)


err = _Stderr()


def click_module(name: str) -> Any:
    """A module of Click as the installed Typer has it (`globals`, `exceptions`): Typer ≥ 0.22 bundles its
    own Click, whose context stack and error classes are not the `click` package's."""
    import importlib

    core = next(c.__module__ for c in typer.Context.__mro__ if c.__module__.endswith(".core"))
    return importlib.import_module(core.removesuffix("core") + name)


def params_given(ctx: typer.Context) -> set[str]:
    """The parameters of a command the user gave (not left at their defaults), by name: typer's context
    may carry its own click's ParameterSource enum."""
    return {
        p
        for p in ctx.params
        if getattr(ctx.get_parameter_source(p), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")
    }


def json_requested() -> bool:
    """Whether the running command was given `--json` (read from Click's current context)."""
    ctx = click_module("globals").get_current_context(silent=True)
    if ctx is None:
        return False
    for param in ctx.command.params:
        if "--json" in getattr(param, "opts", ()):
            return bool(ctx.params.get(param.name or ""))
    return False


def print_json_problems(problems: list[tuple[str, Any, str]]) -> None:
    """Bad input as the one JSON document a `--json` run writes to stdout: the HTTP API's error body,
    `{"detail": [{field, value, message}, ...]}` (errors.problems_body), so a script that reads stdout
    parses an error as it parses an answer."""
    from dtsim.errors import problems_body

    print_json(problems_body(problems))


def fail(exc: ScenarioError) -> NoReturn:
    """Print one line per problem (`field = value: what is allowed`) on stderr and exit with status 2;
    under `--json` the problems are also written to stdout as one JSON object (print_json_problems)."""
    from rich.markup import escape

    from dtsim.errors import format_problem

    if json_requested():
        print_json_problems(exc.problems)
    for field, value, message in exc.problems:
        # the problem is user text (a value, a field name): escaped, so Rich prints brackets as typed
        line = escape(format_problem(field, value, message))
        err.print(f"[bold red]error:[/bold red] {line}", highlight=False, markup=True)
    raise typer.Exit(code=2)


# --- the options every `--uncertainty` command shares (simulate, sweep, target, governance, step, plan) ---------

SeedOpt = Annotated[
    int | None,
    typer.Option(help="With --uncertainty: seed of the Sobol scrambling (same seed, same numbers)."),
]
LevelsOpt = Annotated[
    str | None,
    typer.Option(
        help="With --uncertainty: the quantiles in percent, e.g. 5,50,95 (default 10,50,90; not 0.1,0.5,0.9)."
    ),
]
ProbOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--prob",
        help="With --uncertainty: the chance of a condition on an output, OUTPUT<=VALUE (or <, >=, >, ==, !=), "
        'e.g. "wall_clock_days<=180" (simulate, target) or "days<=90" and "fits==true" '
        "(step and plan with --tokens) (repeatable).",
    ),
]
FixedAssumptionsOpt = Annotated[
    bool,
    typer.Option(
        "--fixed-assumptions",
        help="With --uncertainty: hold the assumptions table at its point values, so only the scenario's own "
        "distributions (and, for step and plan, the model's measured error) vary.",
    ),
]
CorrOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--corr",
        help="With --uncertainty: a rank correlation between two uncertain inputs, "
        "e.g. --corr mfu,bandwidth_mbps=0.5 (repeatable; a file may list `correlations`).",
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        help="Run the blocks on Dask — 'local' (worker processes on this machine) or an existing cluster's "
        "tcp://host:8786. Same seed, same numbers. Default: this process."
    ),
]
WorkersOpt = Annotated[int | None, typer.Option(help="A local Dask cluster of N worker processes.")]


def at_medians(dists: Any) -> str:
    """The note for inputs given as distributions without --uncertainty (name → Distribution)."""
    from dtsim.schema.fields import INTEGER_FIELDS

    def used(name: str, d: Any) -> str:  # the value the run took: a whole number for an integer field
        point = d.point()
        if isinstance(point, int | float) and not isinstance(point, bool):
            return f"{round(point):d}" if name in INTEGER_FIELDS else f"{point:g}"
        return str(point)

    return (
        "Inputs given as distributions ran at their medians (a choice: its most likely value; an integer "
        "field rounded): "
        + ", ".join(f"{k}: {v.describe()} at {used(k, v)}" for k, v in dists.items())
        + "; add --uncertainty N for ranges."
    )
