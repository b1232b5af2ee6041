"""The /sweep view in a real browser (headless Chromium against `dtsim serve`), and its input checks.

Changes the varied range, sees the grid equal `dtsim sweep --vary … --json` for the same inputs, turns
on the bands (equal to `sweep --uncertainty N --seed S --json`), varies two fields for a heat map, follows
the share link, imports a good and a bad inputs file, and measures the time from an input change to
the numbers updating.
"""

from __future__ import annotations

import json
import statistics

import pytest
from typer.testing import CliRunner

from dtsim.interfaces.cli.main import app
from tests.form_view_support import (
    ARTIFACTS,
    browser_latency_of,
    browser_page,
    copied_link,
    open_view,
    wait_changed,
)
from tests.form_view_support import result as shown
from tests.web_support import record_latency

# A 15-point grid runs in ~5 ms; the round trip (the textarea's event, the thread, four charts and a
# table sent back) is most of the time. Issue 17's aim is 150 ms; the bound is what was measured with
# other jobs running (see the printed median) with margin.
MEDIAN_UPDATE_S = 1.0


def cli_json(*args: str):
    res = CliRunner().invoke(app, ["sweep", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_sweep_inputs_are_checked_by_field():
    from dtsim.errors import ScenarioError
    from dtsim.interfaces.web.views.sweep import DEFAULTS, MAX_PAGE_POINTS, compute, parse_params

    with pytest.raises(ScenarioError) as exc:
        parse_params({"bogus": "1"})
    assert exc.value.problems[0][0] == "bogus"
    for change, field in (
        ({"vary": "nope=1,2"}, "vary"),
        ({"vary": ""}, "vary"),
        ({"vary": "num_nodes=8:4096:200;bandwidth_mbps=1:1000:200"}, "vary"),
        ({"metric": "mode"}, "metric"),
        ({"set": "num_nodes=-3"}, "num_nodes"),
        ({"uncertainty": "many"}, "uncertainty"),
        ({"uncertainty": "4096", "vary": "num_nodes=8:1024:100"}, "uncertainty"),
        ({"preset": "nope"}, "preset"),
    ):
        with pytest.raises(ScenarioError) as exc:
            compute(DEFAULTS | change)
        assert exc.value.problems[0][0] == field, change
    # the page's bound is the one the error names
    with pytest.raises(ScenarioError) as exc:
        compute(DEFAULTS | {"vary": "num_nodes=8:4096:200;bandwidth_mbps=1:1000:200"})
    assert f"{MAX_PAGE_POINTS:,}" in exc.value.problems[0][2]


def test_charts_of_a_grid():
    """Two fields: a heat map whose cells are the grid in C order (log10 where the values span more than
    10^3, as `sweep --plot`); one field with bands: the point, the P10-P90 band and the P50."""
    import math

    from dtsim.interfaces.web.views.sweep import DEFAULTS, column, compute, heat_chart, line_chart

    wide = compute(DEFAULTS | {"vary": "num_nodes=8:100000:4:log;bandwidth_mbps=1,1000"})
    chart = heat_chart(wide, "wall_clock_days")
    days = column(wide, "wall_clock_days")
    assert chart["title"]["text"] == "log10 of wall_clock_days"
    assert [c[2] for c in chart["series"][0]["data"]] == pytest.approx([math.log10(d) for d in days])
    narrow = compute(DEFAULTS | {"vary": "num_nodes=8:64:3;bandwidth_mbps=1000,2000"})
    assert [c[2] for c in heat_chart(narrow, "global_mfu")["series"][0]["data"]] == column(
        narrow, "global_mfu"
    )
    banded = compute(DEFAULTS | {"vary": "num_nodes=8:64:3", "uncertainty": "16"})
    names = [s["name"] for s in line_chart(banded, "wall_clock_days")["series"]]
    assert names == ["point", "P10", "P10–P90", "P50"]


def test_sweep_view_in_a_browser(server, tmp_path):
    with browser_page(server) as (context, page, hosts, errors):
        open_view(page, server + "/sweep")
        assert shown(page) == cli_json("--vary", "num_nodes=8:1024:15:log")
        assert page.locator("[data-testid=line-wall_clock_days]").is_visible()

        # Change the range five times, timing each update.
        latencies = []
        for top in (512, 2048, 256, 4096, 1000):
            latencies.append(
                browser_latency_of(
                    page, lambda top=top: page.fill("[data-testid=vary]", f"num_nodes=8:{top}:15:log")
                )
            )
        median = statistics.median(latencies)
        record_latency("/sweep", median)
        print(f"/sweep update latency: median {median * 1e3:.0f} ms, max {max(latencies) * 1e3:.0f} ms")
        assert median < MEDIAN_UPDATE_S

        # A preset and an override, then two fields: a heat map.
        before = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=set]", "latency_ms=80")
        wait_changed(page, before)
        before = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=vary]", "num_nodes=8:1024:5:log\nbandwidth_mbps=100,1000,10000")
        wait_changed(page, before)
        args = (
            "--set",
            "latency_ms=80",
            "--vary",
            "num_nodes=8:1024:5:log",
            "--vary",
            "bandwidth_mbps=100,1000,10000",
        )
        assert shown(page) == cli_json(*args)
        assert page.locator("[data-testid=heatmap]").is_visible()

        # Bands: the quantiles equal `sweep --uncertainty 64 --seed 0`.
        page.fill("[data-testid=uncertainty]", "64")
        before = page.text_content("[data-testid=result-json]")
        page.click("[data-testid=bands]")
        wait_changed(page, before, timeout=60_000)
        banded = shown(page)
        assert banded == cli_json(*args, "--uncertainty", "64", "--seed", "0")
        assert "p10" in " ".join(banded["points"][0])
        page.screenshot(path=str(ARTIFACTS / "web-view-sweep.png"), full_page=True)

        # A grid too large for the page: an error naming the field, the numbers stay.
        before = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=vary]", "num_nodes=8:100000:300\nbandwidth_mbps=1:10000:300")
        page.wait_for_selector("[data-testid=errors] >> text=at most 20,000 points", timeout=15_000)
        assert page.text_content("[data-testid=result-json]") == before
        page.fill("[data-testid=vary]", "num_nodes=8:1024:5:log\nbandwidth_mbps=100,1000,10000")

        # The share link restores the inputs and the numbers.
        page.wait_for_function("document.querySelector('[data-testid=errors]').offsetParent === null")
        link = copied_link(page)
        assert "uncertainty=64" in link and "latency_ms%3D80" in link
        other = context.new_page()
        open_view(other, link)
        assert shown(other) == banded
        assert other.input_value("[data-testid=set]") == "latency_ms=80"

        # Import: a bad file says why and leaves the inputs; a good one (lists, as Inputs JSON writes)
        # applies.
        bad = tmp_path / "bad.yaml"
        bad.write_text("vary: [num_nodes=0:10:5]\n")
        page.set_input_files("input[type=file]", str(bad))
        page.wait_for_selector("[data-testid=import-error] >> text=num_nodes", timeout=15_000)
        assert shown(page) == banded
        good = tmp_path / "good.json"
        good.write_text(json.dumps({"preset": "intellect-1", "vary": ["bandwidth_mbps=100,1000"]}))
        before = page.text_content("[data-testid=result-json]")
        page.set_input_files("input[type=file]", str(good))
        wait_changed(page, before)
        assert shown(page) == cli_json("--preset", "intellect-1", "--vary", "bandwidth_mbps=100,1000")
        assert not page.locator("[data-testid=import-error]").is_visible()
    assert hosts == {server.split("/")[2]}, f"the page reached beyond localhost: {hosts}"
    assert not errors, errors


def test_the_page_says_when_rounding_merged_a_ranges_points():
    from dtsim.interfaces.web.views.sweep import DEFAULTS, compute

    data = compute(DEFAULTS | {"vary": "num_nodes=8:20:30"})
    assert "30 points asked, 13 distinct whole numbers" in data["axes"][0]["note"]
    assert compute(DEFAULTS | {"vary": "num_nodes=8:20:13"})["axes"][0]["note"] is None
