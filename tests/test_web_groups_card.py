"""The Node groups card and the uncertainty switch without a browser: the share link's encoding reads back
as the same groups, the RTTs the card shows are the ones the model takes, a link over the server's cap
says so, and the page's P10–P90 is `dtsim simulate --uncertainty N --seed S --json`'s."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from typer.testing import CliRunner

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app as cli
from dtsim.interfaces.web.fields import parse_query
from dtsim.interfaces.web.groups_card import (
    compact,
    groups_summary,
    leave_to_model,
    link_notice,
    measured_rtt,
    query_pairs,
    region_rows,
    region_rtt_ms,
    scenario_groups,
    with_rtt,
)
from dtsim.interfaces.web.uncertainty_band import SAMPLES, SEED, band_text, headline_bands
from dtsim.models.decentralized.engine import simulate
from dtsim.schema.scenario import load_scenario

GROUPS = [
    {"count": 6, "node": "16x-h100-sxm", "region": "us-east", "bandwidth_up_mbps": 500.0},
    {"count": 4, "mfu": 0.3, "region": "eu-central", "bandwidth_down_mbps": 2000.0},
]


def test_share_link_encoding_reads_back_the_same_groups():
    rtt = {"us-east": {"eu-central": 95.0}}
    query = urlencode(query_pairs(GROUPS, rtt))
    scenario = load_scenario(layers=[parse_query(dict(parse_qsl(query)))])
    rows, back_rtt = scenario_groups(scenario)
    assert rows == compact(GROUPS)
    assert back_rtt == rtt
    assert scenario.num_nodes == 10
    # blank cells are not written (the scenario's value applies)
    assert compact([{"count": 2, "mfu": None, "region": ""}]) == [{"count": 2}]
    assert query_pairs([], None) == []


def test_region_rtt_is_the_models():
    """Each group given the RTT the card shows as its latency_ms gives the model's sync time from regions
    (a small model on fast links, so the round trip is a visible part of the sync)."""
    base = {"parameters_b": 1, "tokens_t": 0.1, "bandwidth_mbps": 100_000}
    ms = region_rtt_ms("us-east", "eu-central", None, Assumptions({}))
    assert 60 < ms < 150  # Virginia–Frankfurt is ~6,500 km: about 90 ms with route inflation

    def sync_s(latency_ms):
        groups = [g | ({"latency_ms": latency_ms} if latency_ms else {}) for g in GROUPS]
        return simulate(load_scenario(layers=[base | {"node_groups": groups}])).sync_s

    assert sync_s(None) == pytest.approx(sync_s(ms), rel=1e-9)
    assert sync_s(None) != pytest.approx(sync_s(ms * 1.5), rel=1e-3)  # the RTT shows in the sync


def test_region_rows_measured_intra_and_unknown():
    s = load_scenario(
        layers=[
            {
                "node_groups": [
                    {"count": 2, "region": "uk"},
                    {"count": 3, "region": "uk"},
                    {"count": 1, "region": "lab-a"},
                ],
                "region_rtt_ms": {"lab-a": {"uk": 42}},
            }
        ]
    )
    rows = {r["region"]: r for r in region_rows(s)}
    assert rows["uk"]["groups"] == "1, 2" and rows["uk"]["nodes"] == 5
    assert rows["uk"]["rtt_lab-a"] == rows["lab-a"]["rtt_uk"] == "42.0"  # measured, either order
    intra = catalog.assumption_rows()["intra_region_rtt_ms"]["value"]
    assert rows["uk"]["rtt_uk"] == f"{intra:.1f}"
    assert rows["lab-a"]["rtt_lab-a"] == f"{intra:.1f}"
    assert region_rtt_ms("lab-a", "eu-west", None, Assumptions({})) is None


def test_region_cells_are_sent_again_only_when_their_hint_or_rtt_changes():
    """Filling the regions table on every refresh (each keystroke) set every RTT cell's props, a
    websocket update each: a cell is given its hint and RTT again only when they change."""
    from dtsim.interfaces.web.groups_card import GroupsCard

    class Cell:
        def __init__(self) -> None:
            self.value, self.sent = None, []

        def props(self, text: str) -> None:
            self.sent.append(text)

    s = load_scenario(layers=[{"node_groups": GROUPS}])
    rows = region_rows(s)
    card = GroupsCard.__new__(GroupsCard)
    card.shown_regions = [r["region"] for r in rows]
    card.region_labels = {(r["region"], c): Cell() for r in rows for c in ("groups", "nodes", r["region"])}
    card.rtt_cells = {("us-east", "eu-central"): Cell(), ("eu-central", "us-east"): Cell()}
    card.cell_props = {}
    for _ in range(3):
        card._fill_regions(rows, s)
    assert [len(c.sent) for c in card.rtt_cells.values()] == [1, 1]
    measured = load_scenario(
        layers=[{"node_groups": GROUPS, "region_rtt_ms": {"us-east": {"eu-central": 95}}}]
    )
    card._fill_regions(region_rows(measured), measured)
    assert [c.sent[-1].endswith("data-ms=95.0") for c in card.rtt_cells.values()] == [True, True]
    assert [c.value for c in card.rtt_cells.values()] == [95, 95]


def test_groups_summary_names_the_limiting_group_one_based():
    assert "Limiting group: 2." in groups_summary({"limiting_group": 1, "hierarchy_by_region": False})
    assert "became the regional groups" in groups_summary({"limiting_group": 0, "hierarchy_by_region": True})
    assert groups_summary({"limiting_group": None}).startswith("No node groups")


def test_link_over_the_servers_cap_says_so():
    from dtsim.interfaces.api.app import MAX_QUERY_BYTES

    assert link_notice("a" * MAX_QUERY_BYTES) is None
    assert "over the server's" in link_notice("a" * (MAX_QUERY_BYTES + 1))
    # the most groups a scenario holds, every cell set: over the cap (about 13 KB)
    row = {"count": 100, "node": "16x-h100-sxm", "region": "us-east", "mfu": 0.4, "latency_ms": 100}
    many = [row | {"bandwidth_up_mbps": 1000, "bandwidth_down_mbps": 1000}] * 64
    assert link_notice(urlencode(query_pairs(many, None))) is not None


def test_headline_band_equals_the_cli(tmp_path):
    fields = {"node_groups": GROUPS, "bandwidth_mbps": 100}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(fields))
    out = CliRunner().invoke(
        cli, ["simulate", str(path), "--uncertainty", str(SAMPLES), "--seed", str(SEED), "--json"]
    )
    assert out.exit_code == 0, out.output
    cli_bands = json.loads(out.output)["uncertainty"]
    bands = headline_bands(fields)
    for key in ("wall_clock_days", "effective_days"):
        assert bands[key] == cli_bands[key]
        assert bands[key]["p10"] < bands[key]["p90"]
    assert band_text({"p10": 1234.56, "p90": 2000}) == "P10–P90: 1,234.6 days – 2,000.0 days"
    assert band_text({"p10": 0.0004, "p90": 0.03}) == "P10–P90: 34.56 s – 43.2 min"
    assert "no finite range" in band_text({"p10": float("nan"), "p90": 3.0})


def test_page_scenario_leaves_the_hierarchy_to_the_model():
    """The page holds every field; with groups in two regions it gives hierarchical / nodes_per_group /
    regional_bandwidth_mbps only where changed, so the model may make the regions a hierarchy as it does
    for a file without them, and the exported file reads back as the same scenario."""
    from dtsim.interfaces.web.fields import default_values, scenario_to_values, values_to_fields

    defaults = default_values()
    base = {"parameters_b": 1, "tokens_t": 0.1, "bandwidth_mbps": 50, "regional_bandwidth_mbps": 10_000}
    groups = [{"count": 8, "region": "us-east"}, {"count": 8, "region": "eu-central"}]
    file = base | {"node_groups": groups}
    cli = simulate(load_scenario(layers=[file]))
    assert cli.hierarchy_by_region  # the regions are the regional tier here
    page_values = scenario_to_values(load_scenario(layers=[file]))
    all_fields = values_to_fields(page_values) | {"node_groups": groups}
    all_fields.pop("num_nodes")
    page = leave_to_model(all_fields, defaults)
    assert "hierarchical" not in page and page["regional_bandwidth_mbps"] == 10_000
    # the same run and the same echo: the page gives latency_ms and the file does not, but every group has
    # a region, so neither run uses it and neither echo lists it
    assert simulate(load_scenario(layers=[page])).model_dump() == cli.model_dump()
    assert "latency_ms" in page and "latency_ms" not in cli.scenario
    exported = load_scenario(layers=[page]).to_fields()
    assert simulate(load_scenario(layers=[exported])).model_dump() == cli.model_dump()
    # every field given (as the page held them) is another scenario: no hierarchy by region
    assert simulate(load_scenario(layers=[all_fields])).hierarchy_by_region is False
    assert leave_to_model({"hierarchical": False}, defaults) == {"hierarchical": False}  # no groups


class _Widget:
    """What the band's widgets need of NiceGUI's: a text, a value and chainable settings."""

    def __init__(self, value: Any = None) -> None:
        self.text, self.value, self.shown = "", value, {}

    def props(self, text: str) -> _Widget:
        self.shown.update(p.split("=", 1) for p in text.split() if "=" in p)
        return self

    def classes(self, *_a: Any) -> _Widget:
        return self

    style = tooltip = classes


class _UI:
    def switch(self, _label: str, value: bool = False, on_change: Any = None) -> _Widget:
        return _Widget(value)

    def label(self, *_a: Any) -> _Widget:
        return _Widget()


def test_band_draws_once_after_the_current_run_for_a_burst(monkeypatch):
    """A keystroke each started its own Monte Carlo run (64 draws): ten changes while one runs now
    cost one more run, for the newest inputs, and only its range is shown."""
    import asyncio
    import threading

    import nicegui.core

    from dtsim.interfaces.web import uncertainty_band

    calls: list[int] = []
    gate = threading.Event()

    def bands(fields: dict[str, Any]) -> dict[str, Any]:
        calls.append(fields["num_nodes"])
        gate.wait(10)
        n = float(fields["num_nodes"])
        return {k: {"p10": n, "p90": 2 * n} for k in uncertainty_band.HEADLINE}

    monkeypatch.setattr(uncertainty_band, "headline_bands", bands)
    fields = {"num_nodes": 1}

    async def burst() -> uncertainty_band.UncertaintyBand:
        monkeypatch.setattr(nicegui.core, "loop", asyncio.get_running_loop())
        band = uncertainty_band.UncertaintyBand(_UI(), lambda: dict(fields), on=True)
        band.add_label("wall_clock_days")
        for n in range(1, 11):
            fields["num_nodes"] = n
            band.update()
            await asyncio.sleep(0.01)
        assert band.latest.running and band.latest.pending
        gate.set()
        for _ in range(500):
            await asyncio.sleep(0.01)
            if not band.latest.running:
                break
        return band

    band = asyncio.run(burst())
    assert calls == [1, 10]
    assert json.loads(band.json.text)["wall_clock_days"] == {"p10": 10.0, "p90": 20.0}
    assert band.labels["wall_clock_days"].text == band_text({"p10": 10.0, "p90": 20.0})
    assert band.status.text == f"{SAMPLES} draws, seed {SEED}"


def test_band_json_is_strict_for_numpy_and_non_finite_values():
    """The hidden uncertainty JSON is operations.json_ready's: a NumPy scalar is its number and NaN or
    an infinity is null, in nested mappings and lists too."""
    import numpy as np

    from dtsim.interfaces.web import uncertainty_band

    band = uncertainty_band.UncertaintyBand(_UI(), lambda: None)
    band.add_label("wall_clock_days")
    summary = {"p10": np.float32(2.0), "p90": float("nan"), "quantile_se": {"p10": float("inf")}}
    band._show(({"wall_clock_days": summary, "effective_days": {"p10": [np.int64(3), float("-inf")]}},))
    assert json.loads(band.json.text) == {
        "wall_clock_days": {"p10": 2.0, "p90": None, "quantile_se": {"p10": None}},
        "effective_days": {"p10": [3, None]},
    }


def test_latest_drops_the_run_under_way_only():
    """Latest.drop_running: the answer of a run under way is not shown (it runs once more); with no run
    under way nothing is noted, so the next change does not run twice."""
    from dtsim.interfaces.web.viewkit import Latest

    latest = Latest(lambda: None, tuple, print, print)
    latest.drop_running()
    assert not latest.pending
    latest.running = True
    latest.drop_running()
    assert latest.pending


def test_an_rtt_cell_sets_the_pair_and_the_scenario_checks_it():
    """The regions table's cells edit region_rtt_ms: one entry per pair (the reverse dropped, so the
    two orders never contradict), blank back to the estimate; a bad value is the scenario's error,
    naming region_rtt_ms.a.b and the value, as the CLI's reader says it."""
    rtt = {"eu-central": {"us-east": 70, "asia-east": 200}}
    got = with_rtt(rtt, "us-east", "eu-central", 95.0)
    assert got == {"eu-central": {"asia-east": 200}, "us-east": {"eu-central": 95}}
    assert rtt == {"eu-central": {"us-east": 70, "asia-east": 200}}  # not changed
    assert measured_rtt("eu-central", "us-east", got) == measured_rtt("us-east", "eu-central", got) == 95
    assert with_rtt(got, "eu-central", "us-east", 80.5) == {"eu-central": {"asia-east": 200, "us-east": 80.5}}
    assert with_rtt(got, "eu-central", "us-east", None) == {"eu-central": {"asia-east": 200}}
    assert with_rtt({"a": {"b": 1}}, "b", "a", "") is None
    groups = [{"count": 6, "region": "us-east"}, {"count": 4, "region": "eu-central"}]
    fields = {"node_groups": groups, "region_rtt_ms": with_rtt(None, "us-east", "eu-central", 95.0)}
    s = load_scenario(layers=[fields])
    row = {r["region"]: r for r in region_rows(s)}
    assert row["us-east"]["rtt_eu-central"] == row["eu-central"]["rtt_us-east"] == "95.0"
    with pytest.raises(ScenarioError) as info:
        load_scenario(layers=[fields | {"region_rtt_ms": with_rtt(None, "us-east", "eu-central", -5.0)}])
    assert info.value.problems[0][:2] == ("region_rtt_ms.us-east.eu-central", -5)
