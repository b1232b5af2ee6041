"""What every command module shares: the error console and the one way bad input ends a command.

Every command module of the CLI declares its commands the same way: module-level functions in
`COMMANDS` (name → function) and sub-command groups in `GROUPS` (name → typer.Typer); `cli/main.py`
registers them all in one loop.
"""

from typing import NoReturn

import typer
from rich.console import Console

from dtsim.errors import ScenarioError

err = Console(stderr=True)


def fail(exc: ScenarioError) -> NoReturn:
    """Print one line per problem (`field = value: what is allowed`) and exit with status 2."""
    for field, value, message in exc.problems:
        shown = repr(value) if isinstance(value, str) else value
        err.print(f"[bold red]error:[/bold red] {field} = {shown}: {message}", highlight=False, markup=True)
    raise typer.Exit(code=2)
