"""The `dtsim` command line (Typer + Rich). Thin: parse, call the library, render.

Bad input exits with status 2 and one line per problem (`field = value: what is allowed`), never a
traceback; under `--json` the problems are also one JSON object on stdout (the API's error body).
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
    """Run the CLI. With `--json` on the command line, a usage error Click finds before the command
    runs (an unknown option, a value of the wrong type) is also written to stdout as the one JSON
    error object every `--json` run gives for bad input (common.print_json_problems), with the same
    message and exit status as without it."""
    if "--json" not in sys.argv[1:]:
        app()
        return
    from dtsim.interfaces.cli.common import click_module, print_json_problems

    click_error = click_module("exceptions").ClickException
    try:
        status = app(standalone_mode=False)
    except click_error as exc:
        print_json_problems([(_usage_field(exc), _usage_value(exc), exc.format_message())])
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("Aborted!\n")
        sys.exit(1)
    sys.exit(status if isinstance(status, int) else 0)


def _usage_value(exc: Exception) -> str | None:
    """The value the command line gave the option a Click usage error is about (its last one), or None."""
    opts = getattr(getattr(exc, "param", None), "opts", None) or ()
    args, value = sys.argv[1:], None
    for i, arg in enumerate(args):
        for opt in opts:
            if arg == opt and i + 1 < len(args):
                value = args[i + 1]
            elif arg.startswith(opt + "="):
                value = arg[len(opt) + 1 :]
    return value


def _usage_field(exc: Exception) -> str:
    """The option a Click usage error is about (`--tp`), or "command line" when it names none."""
    param = getattr(exc, "param", None)
    opts = getattr(param, "opts", None)
    if opts:
        return str(opts[0])
    if getattr(param, "name", None):
        return str(param.name)
    return str(getattr(exc, "option_name", None) or "command line")


if __name__ == "__main__":  # pragma: no cover
    main()
