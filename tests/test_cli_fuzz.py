"""Fuzzing as tests (issue 15 item 2): the command line over every command's options, and the
scenario fields table with extreme and wrong-typed values. Fixed seeds here, so CI runs the same
cases every time; `python benchmarks/fuzz.py` runs the long version. Zero tracebacks, zero exit
codes outside 0/1/2, zero invalid JSON, zero hangs (a per-case time limit)."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtsim
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.common import json_text
from dtsim.schema.fields import BOUNDS
from dtsim.schema.scenario import FIELD_NAMES, Scenario

from .cli_fuzzing import run, strict_json

CLI_CASES = int(os.environ.get("DTSIM_FUZZ_CLI_CASES", "10000"))
FIELD_CASES = int(os.environ.get("DTSIM_FUZZ_FIELD_CASES", "10000"))
PROPERTIES = Scenario.model_json_schema()["properties"]


@pytest.mark.filterwarnings("error::RuntimeWarning")  # a NumPy overflow warning would reach the user too
def test_cli_fuzz_fixed_seed():
    report = run(CLI_CASES, seed=20261125, limit_s=30.0)
    shown = "\n".join(f"{f.kind}: dtsim {' '.join(f.args)} -> {f.detail}" for f in report.failures[:20])
    assert not report.failures, shown
    assert report.cases == CLI_CASES
    # the cases reach the models, not only the option parser
    assert report.exit_codes.get(0, 0) >= CLI_CASES // 20, report.exit_codes


def _extreme(name: str):
    """Values at and beyond a field's edges, of its type and of every other type."""
    b = BOUNDS.get(name, {})
    edges = [v for v in (b.get("ge"), b.get("gt"), b.get("le")) if isinstance(v, int | float)]
    near = [x * f for x in edges for f in (1.0, 1.0 - 1e-12, 1.0 + 1e-12, 10.0, 0.1)] + [
        e + d for e in edges for d in (-1, 1)
    ]
    return st.one_of(
        st.sampled_from(near) if near else st.nothing(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.booleans(),
        st.none(),
        st.text(max_size=20),
        st.sampled_from(["auto", "auto-quality", "none", "1e3", "1..2", "normal:1,2", "choice:a,b", "-0"]),
        st.lists(st.integers(0, 5), max_size=3),
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    )


def _valid_choice(name: str):
    """A value the field's schema allows (enums and bounded numbers), so rules between fields run."""
    prop = PROPERTIES.get(name, {})
    if "enum" in prop:
        return st.sampled_from(prop["enum"])
    b = BOUNDS.get(name)
    if b and "le" in b:
        lo = b.get("ge", b.get("gt", 0.0))
        hi = b["le"]
        if lo > 0 and hi / lo > 1e3:
            return st.floats(math.log10(lo), math.log10(hi)).map(lambda e: float(10**e))
        return st.floats(lo, hi)
    return st.nothing()


@st.composite
def field_overrides(draw):
    """One to four fields of the table, each set to a value it allows (two times in three, so the
    rules between fields and the model run) or to an extreme or wrong-typed one."""
    names = draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=4, unique=True))
    return {n: draw(st.one_of(_valid_choice(n), _valid_choice(n), _extreme(n))) for n in names}


@settings(
    max_examples=FIELD_CASES,
    deadline=None,
    derandomize=os.environ.get("DTSIM_FUZZ_RANDOM") is None,  # benchmarks/fuzz.py sets it (other seeds)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    database=None,
)
@given(field_overrides())
def test_every_field_with_extreme_and_wrong_values(overrides):
    try:
        scenario = dtsim.load_scenario(overrides=overrides)
    except ScenarioError as exc:
        assert exc.problems and all(isinstance(f, str) and m for f, _, m in exc.problems)
        assert len(str(exc)) < 4000  # a bounded message, whatever the value
        return
    try:
        result = dtsim.simulate(scenario)
    except ScenarioError as exc:  # a rule only the model can check (mfu: auto finds no shape that fits)
        assert exc.problems
        return
    strict_json(json_text(result.model_dump(mode="python")))  # strict JSON, whatever the values
