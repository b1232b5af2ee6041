"""What every command module shares: the error console and the one way bad input ends a command.

Every command module of the CLI declares its commands the same way: module-level functions in
`COMMANDS` (name → function) and sub-command groups in `GROUPS` (name → typer.Typer); `cli/main.py`
registers them all in one loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import typer

from dtsim.errors import ScenarioError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# Rich is imported when a command first prints, not when the CLI starts: `dtsim --help` is plain
# Click help and loads no Rich at all (issue 12 item 8: --help in ≤ 0.25 s).


def console(**options: Any) -> Console:
    """A rich Console (`stderr=True` for the error stream)."""
    from rich.console import Console

    return Console(**options)


def table(*columns: Any, **options: Any) -> Table:
    """A rich Table."""
    from rich.table import Table

    return Table(*columns, **options)


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


def fail(exc: ScenarioError) -> NoReturn:
    """Print one line per problem (`field = value: what is allowed`) and exit with status 2."""
    for field, value, message in exc.problems:
        shown = repr(value) if isinstance(value, str) else value
        err.print(f"[bold red]error:[/bold red] {field} = {shown}: {message}", highlight=False, markup=True)
    raise typer.Exit(code=2)
