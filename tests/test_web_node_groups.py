"""The decentralized page's Node groups card and uncertainty switch in a real browser (Debian's Chromium
through Playwright, against a `dtsim serve` subprocess).

Adds two groups in two regions and sees the numbers equal `dtsim simulate --json` for the same scenario
file, the limiting group and the regions' RTTs shown; follows the share link and sees the same groups and
numbers; uploads a YAML with node_groups; types a measured RTT in the regions table (both orders shown,
the numbers the CLI's for the exported file, a bad value named as region_rtt_ms.a.b = value); a group of
0 nodes shows an error naming node_groups[0].count;
the uncertainty switch shows P10/P90 equal to `simulate --uncertainty 64 --seed 1 --json`. Measures the
time from a group's input change to the numbers updating (reported; see the assertion's comment).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from dtsim.interfaces.web.uncertainty_band import SAMPLES, SEED
from tests.web_support import LAUNCH_ARGS, ensure_chromium, record_latency

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
GROUPS = [
    {"count": 6, "bandwidth_up_mbps": 500.0, "region": "us-east"},
    {"count": 4, "mfu": 0.3, "region": "eu-central"},
]


def cli_json(path: Path, *extra: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "dtsim", "simulate", str(path), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def result_json(page) -> dict:
    return json.loads(page.text_content("[data-testid=result-json]"))


def wait_changed(page, before: str, testid: str = "result-json") -> None:
    page.wait_for_function(
        "([t, b]) => { const e = document.querySelector(`[data-testid=${t}]`); "
        "return e && e.textContent.length > 2 && e.textContent !== b; }",
        arg=[testid, before],
        timeout=15_000,
    )


def pick(page, testid: str, option: str) -> None:
    page.click(f"[data-testid={testid}]")
    page.get_by_role("option", name=option, exact=True).click()


def fill(page, testid: str, value: str) -> None:
    before = page.text_content("[data-testid=result-json]")
    page.fill(f"[data-testid={testid}]", value)
    wait_changed(page, before)


def test_node_groups_and_uncertainty_in_the_browser(server, tmp_path):
    from playwright.sync_api import sync_playwright

    chromium = ensure_chromium()
    ARTIFACTS.mkdir(exist_ok=True)
    scenario = tmp_path / "groups.yaml"
    scenario.write_text(yaml.safe_dump({"node_groups": GROUPS}))
    expected = cli_json(scenario)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        hosts: set[str] = set()
        page.on("request", lambda r: hosts.add(r.url.split("/")[2]))
        page.goto(server + "/")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        assert result_json(page)["limiting_group"] is None

        # two groups in two regions, as the file above gives them
        page.click("[data-testid=groups-card] .q-expansion-item__container > .q-item")
        page.click("[data-testid=groups-add]")
        page.wait_for_selector("[data-testid=group-0-count]")
        # the first group takes the scenario's 72 nodes: the run keeps its size; a second starts at one
        assert page.input_value("[data-testid=group-0-count]") == "72"
        page.click("[data-testid=groups-add]")
        page.wait_for_selector("[data-testid=group-1-count]")
        assert page.input_value("[data-testid=group-1-count]") == "1"
        fill(page, "group-0-count", "6")
        fill(page, "group-0-bandwidth_up_mbps", "500")
        fill(page, "group-1-count", "4")
        fill(page, "group-1-mfu", "0.3")
        for i, region in ((0, "us-east"), (1, "eu-central")):
            before = page.text_content("[data-testid=result-json]")
            pick(page, f"group-{i}-region", region)
            wait_changed(page, before)
        got = result_json(page)
        assert got == expected
        assert expected["limiting_group"] is not None
        summary = page.text_content("[data-testid=groups-summary]")
        assert f"Limiting group: {expected['limiting_group'] + 1}." in summary
        assert ("regional groups of a hierarchy" in summary) == expected["hierarchy_by_region"]
        table = page.text_content("[data-testid=groups-regions-table]")
        assert "us-east" in table and "eu-central" in table and "→ eu-central" in table
        assert page.input_value("[data-testid=num_nodes]") == "10"

        # from a group's input change to the numbers: median of 5 changes
        latencies = []
        for count in ("7", "8", "9", "5", "6"):
            before = page.text_content("[data-testid=result-json]")
            t0 = page.evaluate("performance.now()")
            page.fill("[data-testid=group-0-count]", count)
            wait_changed(page, before)
            latencies.append(page.evaluate("performance.now()") - t0)
        median = statistics.median(latencies)
        record_latency("/ (node groups)", median / 1e3)  # performance.now() is in ms
        print(f"node-group change to numbers: median {median:.0f} ms, max {max(latencies):.0f} ms")
        # issue 17's aim is 150 ms: measured 116-148 ms here (2 shared cores, load 5-8; the page also
        # redraws the 41-point sweep and the regions table), so the bound keeps a margin for load
        assert median < 300
        assert result_json(page) == expected

        # the uncertainty switch: P10-P90 beside the headline days, equal to the CLI's
        page.click("[data-testid=uncertainty-switch]")
        page.wait_for_function(
            "document.querySelector('[data-testid=uncertainty-json]')?.textContent.length > 10",
            timeout=30_000,
        )
        bands = json.loads(page.text_content("[data-testid=uncertainty-json]"))
        cli_bands = cli_json(scenario, "--uncertainty", str(SAMPLES), "--seed", str(SEED))["uncertainty"]
        for key in ("wall_clock_days", "effective_days"):
            assert bands[key] == cli_bands[key]
            assert "P10–P90" in page.text_content(f"[data-testid=band-{key}]")
        page.screenshot(path=str(ARTIFACTS / "web-node-groups.png"), full_page=True)

        # the share link restores the groups, the numbers and the switch
        page.wait_for_function("location.search.includes('uncertainty=true')")
        link = page.url
        assert link.startswith(server) and "node_groups=" in link
        other = browser.new_page(viewport={"width": 1400, "height": 1000})
        other.goto(link)
        other.wait_for_function(
            "document.querySelector('[data-testid=result-json]')?.textContent.length > 10"
        )
        assert result_json(other) == expected
        other.click("[data-testid=groups-card] .q-expansion-item__container > .q-item")
        assert other.input_value("[data-testid=group-0-count]") == "6"
        assert other.input_value("[data-testid=group-1-mfu]") == "0.3"
        other.wait_for_function(
            "document.querySelector('[data-testid=uncertainty-json]')?.textContent.length > 10",
            timeout=30_000,
        )
        assert json.loads(other.text_content("[data-testid=uncertainty-json]")) == bands
        other.close()

        # an uploaded YAML with node_groups loads into the card
        uploaded = tmp_path / "three.yaml"
        three = [*GROUPS, {"count": 2, "node": "dgx-h100", "region": "asia-east", "latency_ms": 180}]
        uploaded.write_text(yaml.safe_dump({"node_groups": three, "bandwidth_mbps": 200}))
        before = page.text_content("[data-testid=result-json]")
        page.set_input_files("input[type=file]", str(uploaded))
        wait_changed(page, before)
        page.wait_for_selector("[data-testid=group-2-count]")
        assert result_json(page) == cli_json(uploaded)
        assert page.input_value("[data-testid=group-2-latency_ms]") == "180"
        assert not page.locator("[data-testid=import-error]").is_visible()

        # a measured RTT typed in the regions table: the pair in both orders, the numbers the CLI's for
        # the exported scenario; a bad value names the field and the value
        cell, mirror = (
            "[data-testid=rtt-us-east-eu-central]",
            "[data-testid=rtt-eu-central-us-east]",
        )
        assert page.input_value(cell) == "" and "≈" in (page.get_attribute(cell, "placeholder") or "")
        before = page.text_content("[data-testid=result-json]")
        page.fill(cell, "95")
        wait_changed(page, before)
        page.wait_for_function(f"document.querySelector({json.dumps(mirror)})?.value === '95'")
        with page.expect_download() as download:
            page.get_by_role("button", name="Scenario YAML").click()
        exported = tmp_path / "exported.yaml"
        exported.write_text(Path(download.value.path()).read_text())
        assert yaml.safe_load(exported.read_text())["region_rtt_ms"] == {"us-east": {"eu-central": 95}}
        measured = cli_json(exported)
        assert result_json(page) == measured != cli_json(uploaded)
        page.fill(mirror, "-5")
        page.wait_for_function(
            "document.querySelector('[data-testid=errors]')?.textContent.includes("
            "'region_rtt_ms.eu-central.us-east = -5')"
        )
        assert result_json(page) == measured  # the last good scenario's numbers are kept
        page.fill(mirror, "95")
        page.wait_for_function("!document.querySelector('[data-testid=errors]')?.checkVisibility()")

        # a group of 0 nodes: an error naming node_groups[0].count, the numbers kept
        kept = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=group-0-count]", "0")
        page.wait_for_function(
            "document.querySelector('[data-testid=errors]')?.textContent.includes('node_groups[0].count')"
        )
        assert page.locator("[data-testid=errors]").is_visible()
        assert page.text_content("[data-testid=result-json]") == kept
        browser.close()
    assert hosts == {server.split("/")[2]}, f"the page reached beyond localhost: {hosts}"
