"""The /governance view in a real browser: the threshold analysis equals `dtsim governance --json` for
the same options, its tables show the CLI's cells, a running analysis shows its progress, the share
link restores inputs and answer, an inputs file can be imported (a bad one says why), and the time
from an input change to the answer is measured in the browser."""

from __future__ import annotations

import yaml

from dtsim.interfaces.web.formview import argv
from dtsim.interfaces.web.views.governance import cheapest_cell, fields
from tests.form_view_support import (
    ARTIFACTS,
    WATCH_BUSY,
    bad_upload_says_why,
    browser_latency,
    browser_page,
    change,
    cli_json,
    open_view,
    result,
    untimed,
    upload,
    wait_changed,
)

FIELDS = fields()
# One accelerator, two caps, one target: a ~0.5 s exhaustive search (the defaults take ~10 s).
SMALL = {
    "gpus": ["h100-sxm"],
    "max_nodes": 1000,
    "targets": "1e24",
    "compute_cap": "16,8",
    "memory_cap": "none",
}
# An exhaustive search over a grid, not one scenario: issue 17's 150 ms aim does not bind it; the bound
# is what this machine takes with a wide margin for load.
SEARCH_LATENCY_S = 5.0


def expected(values: dict) -> dict:
    return untimed(cli_json(["governance", *argv(FIELDS, values)]))


def test_governance_view(server, tmp_path):
    values = {f.name: f.default for f in FIELDS} | SMALL
    query = "gpus=h100-sxm&max_nodes=1000&targets=1e24&compute_cap=16,8&memory_cap=none"
    with browser_page(server) as (context, page, hosts, errors):
        page.add_init_script(WATCH_BUSY)
        shown = untimed(open_view(page, f"{server}/governance?{query}"))
        assert shown == expected(values)
        assert page.evaluate("window.__dt_busy_seen === true"), "no progress shown while the analysis ran"
        table = page.text_content("[data-testid=cheapest-table]")
        for cap in shown["caps"]:
            assert cheapest_cell(cap["cheapest"]["1e+24"]) in table
        assert "1e+24 FLOP" in page.text_content("[data-testid=binding]")
        assert page.locator("[data-testid=systems-table]").is_visible()

        change(page, "targets", "1e24,1e25")
        change(page, "days", "365")
        values |= {"targets": "1e24,1e25", "days": 365.0}
        shown = untimed(result(page))
        assert shown == expected(values)
        assert shown["days_limit"] == 365.0 and list(shown["caps"][0]["cheapest"]) == ["1e+24", "1e+25"]

        latency = browser_latency(page, "base_compute_cap", ["15", "14", "13", "12", "11"])
        print(
            f"/governance (1 accelerator, 2 caps, 2 targets): input to answer, median of 5: {latency * 1e3:.0f} ms"
        )
        assert latency < SEARCH_LATENCY_S

        link = page.url
        assert "days=365" in link and "targets=1e24" in link
        page.screenshot(path=str(ARTIFACTS / "web-view-governance.png"), full_page=True)
        other = context.new_page()
        assert untimed(open_view(other, link)) == untimed(result(page))
        assert other.input_value("[data-testid=days]") == "365"

        good = tmp_path / "governance.json"
        good.write_text('{"metric": "local", "compute_cap": "4"}')
        before = page.locator("[data-testid=result-json]").text_content()
        upload(page, good)
        wait_changed(page, before)
        values |= {"metric": "local", "compute_cap": "4", "base_compute_cap": 11.0}
        assert untimed(result(page)) == expected(values)
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump({"metric": "flops"}))
        bad_upload_says_why(page, bad, "metric = 'flops': must be one of quality, local")

        # an option the command refuses: named, the answer stays
        before = page.locator("[data-testid=result-json]").text_content()
        page.fill("[data-testid=precisions]", "fp12")
        page.wait_for_function(
            "document.querySelector('[data-testid=errors]')?.textContent.includes('--precisions')",
            timeout=30_000,
        )
        assert page.locator("[data-testid=result-json]").text_content() == before
    assert hosts == {server.split("/")[2]}, f"the view reached beyond localhost: {hosts}"
    assert not errors, errors
