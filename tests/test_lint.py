"""Lint and format checks are part of the suite (ruff is a test extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "src", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text().split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert readme == [
        "python3 -m pip install . && python3 -m dtsim simulate --preset default",
        "python3 -m pip install '.[test]' && python3 -m pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme[1] in ci
