"""A fuzzer of the command line, shared by tests/test_cli_fuzz.py (a fixed seed, in CI) and
benchmarks/fuzz.py (a long run): every option of every command (read from the Click command
tree, so a new option is fuzzed without listing it here) gets extreme, wrong-typed and odd values on
top of a base invocation that works. A case fails when the command raises anything but a clean exit
(a traceback), exits with a status other than 0, 1 or 2, prints JSON that a strict reader refuses
(NaN, Infinity), or runs past its time limit (a hang)."""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import typer
import typer.testing
from typer.testing import CliRunner

from dtsim.interfaces.cli import common
from dtsim.interfaces.cli.main import app

# Commands with a working base invocation; `weight` sets how often each is picked (slow commands less).
BASES: dict[tuple[str, ...], tuple[list[str], float]] = {
    ("simulate",): ([], 6.0),
    ("step",): (["--model", "gpt2", "--gpu", "a100-80gb", "--nodes", "1", "--tp", "2"], 6.0),
    ("plan",): (["--model", "gpt2", "--gpu", "a100-80gb", "--nodes", "1"], 1.0),
    ("collective",): (["--op", "all-reduce", "--ranks", "8", "--size-mb", "64"], 4.0),
    ("fabric",): ([], 4.0),
    ("dataparallel", "critical-batch"): ([], 1.0),
    ("dataparallel", "scaling"): ([], 1.0),
    ("dataparallel", "accumulation"): ([], 1.0),
    ("dataparallel", "overlap"): ([], 1.0),
    ("dataparallel", "sync-bandwidth"): ([], 1.0),
    ("dataparallel", "traffic"): ([], 1.0),
    ("limits", "closed-form"): ([], 4.0),
    ("limits", "curve"): ([], 1.0),
    ("limits", "search"): (["--compute", "1e26"], 1.0),
    ("sweep",): (["--vary", "num_nodes=8:64:4"], 2.0),
    ("presets",): ([], 0.5),
    ("assumptions",): ([], 0.5),
    ("schema",): ([], 0.2),
    ("target",): (["--params-b", "1", "--tokens-t", "0.02", "--max-nodes", "64"], 0.3),
    ("governance", "reproduce"): ([], 0.1),
    ("validate",): (["--subset", "NCCL"], 0.05),
    ("calibrate",): (["--dry-run", "--subset", "NCCL"], 0.02),
    ("sensitivity",): (["--base", "8"], 0.02),
    ("governance",): (
        ["--targets", "1e24", "--compute-cap", "16", "--max-nodes", "64", "--memory-cap", "none"],
        0.01,
    ),
}
# Options that read a file (and a command's positional scenario file): given one of FILES' odd files
FILE_OPTIONS = {"--runs", "--layouts", "--model", "--file"}
FILES = {
    "binary.yaml": bytes(range(256)) * 4,
    "utf16.yaml": "num_nodes: 4\n".encode("utf-16"),
    "bomb.yaml": "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['x'] * 9)}]\n"
        for p, n in zip(["", "a", "b", "c", "d", "e"], "abcdef", strict=True)
    ).encode(),
    "list.yaml": b"- 1\n- 2\n",
    "dupe.yaml": b"num_nodes: 2\nnum_nodes: 3\n",
    "keys.yaml": b"1: 2\n? [a]\n: 3\n",
    "broken.json": b'{"num_nodes": ',
    "good.yaml": b"num_nodes: 16\nmfu: 0.3..0.5\n",
    "layouts.csv": b"tp,pp,gbs\n1,1,8\n2,1,x\n",
    "empty.yaml": b"",
}
# Never fuzzed: `serve` (starts a server), `emulate` (real processes and network namespaces: its own
# tests), and options that write files (their folder checks are tested directly).
SKIP_OPTIONS = {
    "--out",
    "--plot",
    "--csv",
    "--fractions-plot",
    "--samples",
    "--output",
    "--calibration",
    "--trace",
}
EVIL = [
    "0",
    "-1",
    "1",
    "2",
    "7",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e999",
    "18446744073709551616",
    "9" * 50,
    "0.5",
    "-0",
    "abc",
    "",
    " ",
    "1,2,3",
    "1,,2",
    ",",
    "..",
    "1..",
    "[x]",
    "{a: 1}",
    "*a",
    "&a x",
    "ü",
    "a" * 300,
    "auto",
    "none",
    "true",
    "normal:1,0",
    "uniform:2,1",
    "choice:",
    "1..0:3",
    "8..64:0",
    "gpt2",
    "a100-80gb",
    "h100-sxm",
    "fp8",
    "x=1",
    "num_nodes=0",
    "num_nodes=nan",
    "assumptions.pue=-1",
    "assumptions=5",
    "16",
    "1024",
]
# values a user might well type: they pass the first checks, so the models themselves get exercised
PLAUSIBLE = [
    "1",
    "2",
    "3",
    "4",
    "5",
    "8",
    "12",
    "16",
    "32",
    "64",
    "100",
    "128",
    "512",
    "4096",
    "1e6",
    "0.01",
    "0.1",
    "0.3",
    "0.9",
    "0.99",
    "1.5",
    "10",
    "1000",
    "1e20",
    "1e26",
    "gpt2",
    "gpt3-175b",
    "llama2-70b",
    "mixtral-8x7b",
    "deepseek-v3",
    "a100-80gb",
    "h100-sxm",
    "v100",
    "tpu-v5p",
    "b200",
    "fp8",
    "fp16",
    "bf16",
    "fp32",
    "full",
    "selective",
    "none",
    "1f1b",
    "interleaved",
    "zero-bubble",
    "dualpipe",
    "all-reduce",
    "all-to-all",
    "tree",
    "ring",
    "nvls",
    "ib-hdr",
    "ib-ndr",
    "ici-v5p",
    "ethernet-40g",
    "cost",
    "time",
    "local",
    "quality",
    "deepseek",
    "default",
    "1,16",
    "auto,16",
    "0,4",
    "0.5,1",
    "2x2x2",
    "4x4x4",
    "num_nodes=1:1000:5",
    "num_nodes=1:1000:5:log",
    "bandwidth_mbps=10..1e5:4",
    "mfu=0.2..0.6:3",
    "num_nodes=normal:100,10",
    "mfu=uniform:0.3,0.5",
    "gpu=h100-sxm",
    "precision=fp8",
    "10,50,90",
    "25,75",
    "0.9",
    "7",
    "governance",
    "colocated",
    "intellect-1",
    "diloco",
    "mode",
    "bottleneck",
]
# values kept small where a large one is only slow, not wrong (their limits are tested directly; a
# Dask cluster takes seconds to start and an unreachable scheduler 10 s to give up: tests/test_uncertainty*)
BOUNDED = {
    "--uncertainty": ["0", "-1", "1", "2", "nan", "abc", "64", "1e308"],
    "--workers": ["0", "-1", "x", "1e9", "100000"],
    "--scheduler": ["x", "", "tcp://", "udp://a:1"],
}


@dataclass
class Failure:
    args: list[str]
    kind: str
    detail: str


@dataclass
class Report:
    cases: int = 0
    seconds: float = 0.0
    exit_codes: dict[int, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    slowest: tuple[float, list[str]] = (0.0, [])


@functools.cache
def _options(path: tuple[str, ...]) -> list[tuple[str, bool]]:
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    out = []
    for p in cmd.params:
        if not getattr(p, "opts", None) or p.name == "help" or not p.opts[0].startswith("--"):
            continue
        if p.opts[0] in SKIP_OPTIONS:
            continue
        out.append((p.opts[0], bool(getattr(p, "is_flag", False))))
    return out


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def strict_json(text: str):
    def refuse(name: str):
        raise ValueError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


@functools.cache
def _takes_file(path: tuple[str, ...]) -> bool:
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return any(getattr(p, "param_type_name", "") == "argument" and p.name == "file" for p in cmd.params)


def one_case(
    rng: random.Random, commands: list[tuple[str, ...]], weights: list[float], files: list[str] | None = None
) -> list[str]:
    path = rng.choices(commands, weights)[0]
    base, _ = BASES[path]
    args = [*path, *base]
    options = _options(path)
    for _ in range(rng.choice((1, 1, 1, 2, 3)) if options else 0):
        opt, flag = rng.choice(options)
        if flag:
            args.append(opt)
        elif opt in FILE_OPTIONS and files is not None and rng.random() < 0.5:
            args += [opt, rng.choice(files)]
        else:
            pool = BOUNDED.get(opt) or (PLAUSIBLE if rng.random() < 0.7 else EVIL)
            args += [opt, rng.choice(pool)]
    if files is not None and _takes_file(path) and rng.random() < 0.15:
        args.append(rng.choice(files))
    if rng.random() < 0.4 and any(o == "--json" for o, _ in options):
        args.append("--json")
    return args


def run(cases: int, seed: int, limit_s: float = 20.0, progress=None) -> Report:
    """Run `cases` random cases (the same ones for the same seed); each may take `limit_s`."""
    rng = random.Random(seed)
    runner = CliRunner()
    folder = Path(tempfile.mkdtemp(prefix="dtsim-fuzz-"))
    for name, content in FILES.items():
        (folder / name).write_bytes(content)
    os.mkfifo(folder / "fifo.yaml")  # opening it would block: refused before reading
    files = [
        *sorted(str(p) for p in folder.iterdir()),
        str(folder),
        str(folder / "missing.yaml"),
        "/dev/zero",
    ]
    # Typer rebuilds the whole Click command tree on every invoke (~20 ms); build it once.
    built = typer.main.get_command(app)
    rebuild = typer.testing._get_command
    typer.testing._get_command = lambda a: built if a is app else rebuild(a)
    commands = list(BASES)
    weights = [BASES[c][1] for c in commands]
    report = Report()
    start = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for i in range(cases):
            args = one_case(rng, commands, weights, files)
            t = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, limit_s)
            try:
                res = runner.invoke(app, args, env={"COLUMNS": "120"})
                exc = res.exception
            except _Timeout:
                res, exc = None, _Timeout()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            dt = time.perf_counter() - t
            report.cases += 1
            if dt > report.slowest[0]:
                report.slowest = (dt, args)
            if isinstance(exc, _Timeout) or (exc is not None and "_Timeout" in type(exc).__name__):
                report.failures.append(Failure(args, "hang", f"over {limit_s} s"))
                continue
            if exc is not None and not isinstance(exc, SystemExit):
                report.failures.append(Failure(args, "traceback", f"{type(exc).__name__}: {exc}"[:300]))
                continue
            code = res.exit_code
            report.exit_codes[code] = report.exit_codes.get(code, 0) + 1
            if code not in (0, 1, 2):
                report.failures.append(Failure(args, "exit code", str(code)))
            elif "Traceback" in res.output:
                report.failures.append(Failure(args, "traceback", res.output[-300:]))
            elif "--json" in args and res.stdout.strip():  # exit 1 (nothing fits...) prints JSON too
                try:
                    strict_json(res.stdout)
                except ValueError as e:
                    report.failures.append(Failure(args, "invalid JSON", str(e)[:200]))
            elif "--json" in args and code == 2 and "Usage:" not in res.output:
                # bad input under --json is a JSON error on stdout (a Click usage error, which reaches
                # stdout only through the console script's main(), not this runner, is exempt)
                report.failures.append(Failure(args, "no JSON error", res.output[-200:]))
            if progress is not None:
                progress(i + 1, cases)
    finally:
        signal.signal(signal.SIGALRM, old)
        typer.testing._get_command = rebuild
        common.err._console = None  # the error console keeps the width of the run that made it
        shutil.rmtree(folder, ignore_errors=True)
    report.seconds = time.perf_counter() - start
    return report
