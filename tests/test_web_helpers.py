"""The UI's pure helpers: share links, widget values, CSV export (no browser needed)."""

from __future__ import annotations

import csv
import io
from urllib.parse import parse_qsl

import pytest

import dtsim
from dtsim import catalog
from dtsim.interfaces.web.page import (
    INPUTS,
    _split_growth,
    default_values,
    parse_query,
    result_csv,
    scenario_to_values,
    share_query,
    values_to_fields,
)
from dtsim.schema.scenario import load_scenario


def test_default_widgets_are_the_default_scenario():
    assert load_scenario(layers=[values_to_fields(default_values())]) == dtsim.Scenario()
    assert share_query(default_values()) == ""


@pytest.mark.parametrize("preset", list(catalog.scenario_presets()))
def test_share_link_round_trips_every_preset(preset):
    scenario = load_scenario(preset=preset)
    values = scenario_to_values(scenario)
    query = share_query(values)
    restored = load_scenario(layers=[parse_query(dict(parse_qsl(query)))])
    assert dtsim.simulate(restored).model_dump(exclude={"scenario"}) == dtsim.simulate(scenario).model_dump(
        exclude={"scenario"}
    )


def test_share_link_holds_only_changed_fields():
    values = default_values() | {"num_nodes": 500, "streaming": False, "inner_steps": "auto"}
    assert dict(parse_qsl(share_query(values))) == {
        "num_nodes": "500",
        "streaming": "false",
        "inner_steps": "auto",
    }


def test_every_scenario_field_a_user_sets_has_a_widget():
    settable = set(dtsim.Scenario.model_fields) - {"node", "bandwidth_mbps", "assumptions", "name"}
    assert settable <= set(INPUTS)
    assert all(INPUTS[name].tip for name in INPUTS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.37x/yr", (1.37, "x/yr")), ("37%/yr", (37.0, "%/yr")), ("0.137 OOM/yr", (0.137, "OOM/yr"))],
)
def test_growth_split(text, expected):
    assert _split_growth(text) == expected


def test_result_csv():
    r = dtsim.simulate(num_nodes=8)
    rows = dict(csv.reader(io.StringIO(result_csv(r))))
    assert float(rows["wall_clock_days"]) == r.wall_clock_days
    assert rows["mode"] == "flat-diloco"
    assert any(k.startswith("warning.") for k in rows)
