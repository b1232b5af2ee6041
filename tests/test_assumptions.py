"""The assumptions table: complete, sourced, overridable, rendered in the docs."""

from __future__ import annotations

from pathlib import Path

import pytest

import dtsim
from dtsim.assumptions import Assumptions, table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "assumptions.md"


def test_every_assumption_has_unit_description_source_and_seed():
    rows = table()
    assert len(rows) >= 35
    for row in rows:
        assert row.unit and row.description and row.source and row.seed, row.name


def test_every_scalar_assumption_is_overridable_within_its_range():
    for row in table():
        if row.range is None:
            continue
        lo, hi = row.range
        value = min(max(float(row.value) * 1.01 if row.value else lo, lo), hi)
        asm = Assumptions({row.name: value})
        assert getattr(asm, row.name) == value
        with pytest.raises(dtsim.ScenarioError):
            Assumptions({row.name: hi + abs(hi) + 1})


def test_an_override_changes_the_result_and_is_reported():
    base = dtsim.simulate()
    slower = dtsim.simulate(assumptions={"straggler_coefficient": 0.1})
    assert slower.sync_s > base.sync_s
    assert slower.assumptions_overridden == {"straggler_coefficient": 0.1}


def test_table_overrides_are_validated_and_used():
    table_ = {
        "error_feedback": {
            s: [1.0, 1.0, 1.0, 1.0, 1.0, 0.5] for s in ("optimistic", "expected", "conservative")
        },
        "no_error_feedback": {s: [1.0] * 6 for s in ("optimistic", "expected", "conservative")},
    }
    r = dtsim.simulate(compression=500, assumptions={"compression_quality": table_})
    assert r.efficiency_compression == 0.5
    with pytest.raises(dtsim.ScenarioError, match="must map each of optimistic"):
        dtsim.simulate(assumptions={"compression_quality": {"error_feedback": {}, "no_error_feedback": {}}})


def test_docs_table_is_generated_from_the_yaml():
    from dtsim.interfaces.docs import assumptions_markdown

    assert DOCS.read_text() == assumptions_markdown(), (
        "run `python -m dtsim.interfaces.docs` to regenerate docs/assumptions.md"
    )
