"""`dtsim emulate --experiment NAME` and `--experiment list`: the emulator as the referee — canned runs,
each printed as the emulated measurement beside dtsim's prediction and the signed error."""

from __future__ import annotations

from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.common import console, fail, print_json, table, with_progress


def _list(as_json: bool) -> None:
    from dtsim.emulator.referee import EXPERIMENTS

    if as_json:
        print_json([{"name": e.name, "description": e.description} for e in EXPERIMENTS.values()])
        return
    c = console()
    for e in EXPERIMENTS.values():
        c.print(f"{e.name:<22} {e.description}", markup=False, highlight=False, soft_wrap=True)
    c.print(
        "Longer studies are subcommands: `dtsim emulate thesis` (the thesis's DDP testbed sweeps) and "
        "`dtsim emulate diloco-efficiency` (η against H); `dtsim emulate --help` lists them.",
        highlight=False,
    )


def run_experiment_command(name: str, as_json: bool) -> None:
    import typer

    from dtsim.emulator import referee
    from dtsim.emulator.launcher import Interrupted, StopRequests, WorkerFailed, require_emulator
    from dtsim.emulator.netns import CommandFailed
    from dtsim.interfaces.cli.emulate import _counted, _interrupted

    if name == "list":
        _list(as_json)
        raise typer.Exit(0)
    with StopRequests():
        try:
            runs = referee.get(name).runs
            require_emulator()
            out = with_progress(
                f"emulating {name}",
                not as_json,
                lambda p: referee.run_experiment(name, progress=_counted(p, runs)),
            )
        except (WorkerFailed, CommandFailed, OSError) as exc:
            fail(ScenarioError([("run", "failed", str(exc))]))
        except ScenarioError as exc:
            fail(exc)
        except Interrupted as exc:
            _interrupted(exc)
    if as_json:
        print_json(out)
        return
    c = console()
    t = table(title=f"{out['experiment']}: {out['description']}", title_justify="left")
    for col in ("run", "metric", "measured", "predicted", "error", "tolerance"):
        t.add_column(col, justify="left" if col in ("run", "metric") else "right")
    for r in out["rows"]:
        err = "—" if r["error"] is None else f"{r['error']:+.1%}"
        mark = "" if r["error"] is None else (" ✓" if r["within"] else " ✗")
        fmt = "{:,.0f}" if "bytes" in r["metric"] else "{:.3f}"
        t.add_row(
            r["run"],
            r["metric"],
            "—" if r["measured"] is None else fmt.format(r["measured"]),
            fmt.format(r["predicted"]),
            err + mark,
            f"±{r['tolerance']:.0%}",
        )
    c.print(t)
    for r in out["rows"]:
        if r["note"]:
            c.print(f"{r['run'] or r['metric']}: {r['note']}", markup=False, highlight=False, soft_wrap=True)
    c.print("reproduce each run with:", markup=False)
    for cmd in dict.fromkeys(r["command"] for r in out["rows"]):
        c.print(f"  {cmd}", markup=False, highlight=False, soft_wrap=True)
