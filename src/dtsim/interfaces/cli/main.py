"""The `dtsim` command line (Typer + Rich). Thin: parse, call the library, render.

Bad input exits with status 2 and one line per problem (`field = value: what is allowed`), never a
traceback.
"""

import sys
from typing import Annotated

import typer

import dtsim
from dtsim.interfaces.cli.common import command_group

# The models, the schema (pydantic) and the catalog (YAML) are imported inside the commands that
# use them, so that `dtsim --help` and `dtsim --version` start without them (issue 12 item 8).

app = command_group(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="dtsim: how long a large-model training run takes, what limits it, how to parallelize it.",
)


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"dtsim {dtsim.__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """dtsim: how long a large-model training run takes, what limits it, how to parallelize it."""


from dtsim.interfaces.cli import (  # noqa: E402
    analysis,
    datacenter,
    dataparallel,
    emulate,
    limits,
    scenario,
    validation,
)

for _module in (scenario, datacenter, dataparallel, validation, limits, emulate, analysis):
    for _name, _command in _module.COMMANDS.items():
        app.command(_name)(_command)
    for _name, _group in _module.GROUPS.items():
        app.add_typer(_group, name=_name)


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
