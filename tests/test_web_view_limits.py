"""The /limits view in a real browser (headless Chromium against `dtsim serve`), and the binding terms
it colours the points by.

The browser test changes the hardware, the time limit and the target compute, sees the curve and the
search answer equal `dtsim limits curve --json` and `dtsim limits search --json` for the same inputs,
follows the share link in a new page, imports a good and a bad inputs file, and measures the time from
an input change to the numbers updating.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

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
from tests.web_support import charts_keep_their_text, record_latency

# A curve is ~30 cluster and layout searches: 0.4-0.9 s alone on this 2-core machine, 2.8-3.5 s at a load
# average of 7.6. It cannot meet issue 17's 150 ms for single-layout answers, so the test bounds what the
# page adds to the model's own time (measured in this process for the same inputs): the browser's median
# update was 1.5-2.4 s where the curve alone took 0.9-2 s.
PAGE_OVERHEAD_S = 1.5


def cli_json(*args: str):
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_binding_terms_add_up_to_the_run_time():
    """eq. 21's terms of every point sum to its months; the binding term is the largest one; and a
    curve bends down where communication or latency, not the GEMMs, grows (the V100's at 1e28 FLOP)."""
    from dtsim.models.limits.binding import TERMS, binding, largest_overhead, step_terms
    from dtsim.models.limits.curve import curve
    from dtsim.models.limits.hardware import get

    points = curve(get("v100-sxm"))
    for p in points:
        terms = step_terms(p)
        assert set(terms) == set(TERMS)
        assert sum(terms.values()) == pytest.approx(p.months, rel=1e-9)
        assert min(terms.values()) >= 0
        assert terms[binding(p)] == max(terms.values())
        assert largest_overhead(p) != "compute"
    late = [p for p in points if p.utilization < 0.4]
    assert late and any(binding(p) != "compute" for p in late)


def test_limits_inputs_are_checked_by_field():
    from dtsim.errors import ScenarioError
    from dtsim.interfaces.web.views.limits import DEFAULTS, compute, parse_params

    for query, field in (
        ({"months": "abc"}, "months"),
        ({"months": "nan"}, "months"),
        ({"gpu": "nope"}, "gpu"),
        ({"scaling": "cubic"}, "scaling"),
        ({"bogus": "1"}, "bogus"),
    ):
        with pytest.raises(ScenarioError) as exc:
            parse_params(query)
        assert exc.value.problems[0][0] == field
    for change, field in (
        ({"compute": "1e50"}, "compute"),
        ({"compute": "lots"}, "compute"),
        ({"level_bandwidth": "9e11,x"}, "level_bandwidth"),
        ({"months": None}, "months"),
    ):
        with pytest.raises(ScenarioError) as exc:
            compute(DEFAULTS | change)
        assert exc.value.problems[0][0] == field


def test_a_carried_gpu_without_a_limits_model_is_dropped_alone():
    from dtsim.interfaces.web.views.limits import DEFAULTS, restore

    params, notice = restore({"gpu": "tpu-v5p", "months": "6"})
    assert params["gpu"] == DEFAULTS["gpu"] and params["months"] == 6.0
    assert notice.startswith("Using h100-sxm: gpu = 'tpu-v5p'")
    params, notice = restore({"gpu": "gh200", "months": "x"})
    assert params == DEFAULTS and "months = 'x'" in notice
    assert restore({"gpu": "gh200"}) == (DEFAULTS | {"gpu": "gh200"}, None)


def test_limits_view_in_a_browser(server, tmp_path):
    from dtsim.interfaces.web.views.limits import DEFAULTS, compute

    with browser_page(server) as (context, page, hosts, errors):
        open_view(page, server + "/limits")
        first = shown(page)
        assert first["curve"] == cli_json("limits", "curve", "--json")
        assert first["search"] == cli_json("limits", "search", "--compute", "1e26", "--json")
        assert first["reference"]["setting"] == "H100 SXM"
        assert "32,768 GPUs" in page.text_content("[data-testid=search]")
        charts_keep_their_text(page)  # "utilization" and the linear-scaling label were cut

        # Another preset from the menu, a 6-month limit and a target compute.
        before = page.text_content("[data-testid=result-json]")
        page.click("[data-testid=gpu]")
        page.get_by_role("option", name="v100-sxm — V100 SXM (DGX-1)").click()
        wait_changed(page, before)
        latencies = []
        for months in ("6", "4", "5", "2", "6"):
            latencies.append(
                browser_latency_of(page, lambda months=months: page.fill("[data-testid=months]", months))
            )
        # One scenario: the smallest cluster for a target compute (the curve stays as it was)
        searches = [
            browser_latency_of(page, lambda c=c: page.fill("[data-testid=compute]", c))
            for c in ("2e25", "5e25", "1e26", "7e25", "3e25")
        ]
        record_latency("/limits (target compute)", statistics.median(searches))
        median = statistics.median(latencies)
        record_latency("/limits", median)
        alone = []
        for months in ("6", "4", "5"):
            t0 = time.perf_counter()
            compute(DEFAULTS | {"gpu": "v100-sxm", "months": months})
            alone.append(time.perf_counter() - t0)
        print(
            f"/limits update latency: median {median * 1e3:.0f} ms, max {max(latencies) * 1e3:.0f} ms; "
            f"the curve alone: median {statistics.median(alone) * 1e3:.0f} ms"
        )
        assert median < statistics.median(alone) + PAGE_OVERHEAD_S

        data = shown(page)
        args = ("--gpu", "v100-sxm", "--months", "6")
        assert data["curve"] == cli_json("limits", "curve", *args, "--json")
        assert data["search"] == cli_json("limits", "search", "--compute", "3e25", *args, "--json")
        assert data["reference"] is None  # the reference curves are 3-month runs
        assert "No reference curve" in page.text_content("[data-testid=reference]")
        rows = page.locator("[data-testid=points-table] tbody tr")
        assert rows.count() == len(data["curve"])
        assert page.get_attribute("[data-testid=limits-chart]", "data-version")

        # The share link restores the inputs and the numbers in a new page.
        link = copied_link(page)
        assert "gpu=v100-sxm" in link and "months=6" in link and "compute=3e25" in link
        page.screenshot(path=str(ARTIFACTS / "web-view-limits.png"), full_page=True)
        other = context.new_page()
        open_view(other, link)
        assert shown(other) == data
        assert other.input_value("[data-testid=months]") == "6"
        assert other.input_value("[data-testid=compute]") == "3e25"

        # A bad input: the error names the field, the numbers stay.
        before = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=level_bandwidth]", "9e11,fast")
        page.wait_for_selector("[data-testid=errors] >> text=level_bandwidth", timeout=15_000)
        assert page.text_content("[data-testid=result-json]") == before
        page.fill("[data-testid=level_bandwidth]", "")
        page.wait_for_function(
            "!document.querySelector('[data-testid=errors]') || "
            "document.querySelector('[data-testid=errors]').offsetParent === null",
            timeout=30_000,
        )

        # Import: a bad file says why and leaves the inputs; a good one (as Inputs YAML writes) applies.
        bad = tmp_path / "bad.yaml"
        bad.write_text("gpu: h100-sxm\nmonths: -2\n")
        page.set_input_files("input[type=file]", str(bad))
        page.wait_for_selector("[data-testid=import-error] >> text=months", timeout=15_000)
        assert page.input_value("[data-testid=months]") == "6"
        with page.expect_download() as download:
            page.get_by_role("button", name="Inputs YAML").click()
        exported = Path(download.value.path()).read_text()
        assert "gpu: v100-sxm" in exported and "months: 6" in exported
        good = tmp_path / "good.yaml"
        good.write_text("gpu: a100-sxm\nmonths: 3\ncompute: '1e25'\n")
        before = page.text_content("[data-testid=result-json]")
        page.set_input_files("input[type=file]", str(good))
        wait_changed(page, before)
        assert page.input_value("[data-testid=months]") == "3"
        imported = shown(page)
        assert imported["curve"] == cli_json("limits", "curve", "--gpu", "a100-sxm", "--json")
        assert imported["reference"]["setting"] == "A100 SXM"
        assert not page.locator("[data-testid=import-error]").is_visible()
    assert hosts == {server.split("/")[2]}, f"the page reached beyond localhost: {hosts}"
    assert not errors, errors
