"""The shared duration formats (interfaces/formats.py): a positive time never reads as zero."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dtsim.interfaces.formats import days_text, duration
from dtsim.interfaces.web.results import fmt_days, summary_text
from dtsim.models.decentralized.engine import simulate
from dtsim.schema.scenario import load_scenario


@pytest.mark.parametrize(
    ("days", "text"),
    [
        (None, "—"),
        (float("nan"), "—"),
        (0.0, "0.00 s"),
        (1234.56, "1,234.6 days"),
        (2.0, "2.0 days"),
        (1.5, "36.0 h"),
        (0.05, "72.0 min"),
        (0.001, "86.40 s"),
        (1e-5, "864 ms"),
        (1e-6, "86.4 ms"),
        (1e-12, "8.64e-05 ms"),
    ],
)
def test_days_text_picks_a_unit(days, text):
    assert days_text(days) == text
    assert fmt_days(days) == text


@given(st.floats(min_value=1e-15, max_value=1e9, allow_nan=False))
def test_a_positive_time_never_reads_zero(days):
    text = days_text(days)
    number = float(text.split()[0].replace(",", ""))
    assert number > 0, text
    # and the text reads back within its precision (3 significant figures or one decimal)
    unit = {"days": 86400, "h": 3600, "min": 60, "s": 1, "ms": 1e-3}[text.split()[1]]
    assert math.isclose(number * unit, days * 86400, rel_tol=0.02, abs_tol=unit * 0.06), text


def test_duration_below_a_second_in_milliseconds():
    assert duration(0.004) == "4 ms"
    assert duration(0.5) == "500 ms"
    assert duration(1.0) == "1.00 s"
    assert duration(90) == "90.00 s"


def test_a_very_short_run_does_not_read_zero_days():
    """10 million nodes: the run takes minutes; the headline said "0.0 days"."""
    r = simulate(load_scenario(layers=[{"num_nodes": 10_000_000}]))
    assert 0 < r.wall_clock_days < 0.05
    assert "0.0 days" not in summary_text(r)
    assert fmt_days(r.wall_clock_days) == days_text(r.wall_clock_days) != "0.0 days"
    assert fmt_days(r.wall_clock_days).split()[1] in ("h", "min", "s", "ms")


def test_the_sweep_chart_draws_a_short_run_in_its_own_unit():
    """The sweep chart's axis and tooltip showed days: a run of minutes read 0.003 days."""
    from dtsim.interfaces.web.charts import sweep_chart, time_unit

    assert time_unit([400.0, 2.0, None]) == ("days", 1.0)
    assert time_unit([1.5, float("nan")]) == ("hours", 24.0)
    assert time_unit([0.01]) == ("minutes", 1440.0)
    assert time_unit([1e-4, 0.0]) == ("seconds", 86400.0)
    assert time_unit([None, 0.0]) == ("days", 1.0)
    chart = sweep_chart("num_nodes", [1e6, 1e7], [0.02, 0.003], [0.4, 0.4], 1e7)
    line = chart["series"][0]
    assert line["name"] == "wall-clock minutes" and chart["yAxis"][0]["name"] == "minutes"
    assert line["data"] == [[1e6, pytest.approx(28.8)], [1e7, pytest.approx(4.32)]]
    assert "wall-clock minutes" in chart["legend"]["data"]
    assert sweep_chart("num_nodes", [1, 2], [30.0, 3.0], [0.4, 0.4], 1)["series"][0]["data"] == [
        [1, 30.0],
        [2, 3.0],
    ]


@pytest.mark.parametrize("seconds", [1.5, 119.99, 120.01, 7199.99, 7200.01, 172799.99, 172800.01, 1e7])
def test_the_sweep_chart_and_the_headline_switch_units_at_the_same_times(seconds):
    """The chart's time axis is in the unit the headline writes the same time in (formats' thresholds)."""
    from dtsim.interfaces.web.charts import time_unit

    unit = {"s": "seconds", "min": "minutes", "h": "hours", "days": "days"}[duration(seconds).split()[1]]
    assert time_unit([seconds / 86400])[0] == unit
