"""A real browser against `dtsim serve`: headless Chromium (Debian's package) driven by Playwright.

Opens the page, changes the node count and the bandwidth, sees the numbers and both charts update,
checks the numbers against `dtsim simulate --json` for the same scenario, copies the share link,
opens it in a new page and sees the same scenario and numbers. Screenshots (laptop and phone width)
go to artifacts/ for CI to keep. Every request the page makes must stay on localhost.

Needs /usr/bin/chromium. As root (CI) the test installs Debian's `chromium` package when it is
missing; otherwise it skips and says why.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import yaml

import dtsim
from dtsim.interfaces.web.results import fmt_days
from dtsim.physics.transformer import count_params, get_architecture
from tests.form_view_support import browser_latency_of, copied_link
from tests.web_support import LAUNCH_ARGS, charts_keep_their_text, ensure_chromium, record_latency

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"


def _result_json(page) -> dict:
    return json.loads(page.locator("[data-testid=result-json]").text_content())


def _wait_changed(
    page, selector: str, attribute: str | None, before: str | None, timeout: float = 10_000
) -> None:
    js = (
        f"document.querySelector({json.dumps(selector)})?.getAttribute({json.dumps(attribute)}) !== {json.dumps(before)}"
        if attribute
        else f"document.querySelector({json.dumps(selector)})?.textContent !== {json.dumps(before)}"
    )
    page.wait_for_function(js, timeout=timeout)


def test_browser_session(server):
    from playwright.sync_api import sync_playwright

    chromium = ensure_chromium()
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
        hosts: set[str] = set()
        errors: list[str] = []
        page = context.new_page()
        page.on("request", lambda r: hosts.add(r.url.split("/")[2]))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(server + "/")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        first = _result_json(page)
        assert first == dtsim.simulate().model_dump(mode="json")

        chart_before = page.get_attribute("[data-testid=breakdown-chart]", "data-version")
        sweep_before = page.get_attribute("[data-testid=sweep-chart]", "data-version")
        latencies = []
        for selector, value in (
            ("num_nodes", "500"),
            ("bandwidth_up_mbps", "1000"),
            ("bandwidth_down_mbps", "1000"),
        ):
            latencies.append(
                browser_latency_of(page, lambda s=selector, v=value: page.fill(f"[data-testid={s}]", v))
            )
        print(
            f"browser update latency: median {statistics.median(latencies) * 1e3:.0f} ms, max "
            f"{max(latencies) * 1e3:.0f} ms"
        )
        record_latency("/ (decentralized)", statistics.median(latencies))
        assert max(latencies) < 2.0

        # The page's numbers are `dtsim simulate --json` for the same scenario.
        from typer.testing import CliRunner

        from dtsim.interfaces.cli.main import app

        cli = CliRunner().invoke(
            app,
            [
                "simulate",
                "--set",
                "num_nodes=500",
                "--set",
                "bandwidth_up_mbps=1000",
                "--set",
                "bandwidth_down_mbps=1000",
                "--json",
            ],
        )
        expected = json.loads(cli.stdout)
        shown = _result_json(page)
        assert shown == expected
        assert page.text_content("[data-testid=wall_clock_days]") == fmt_days(expected["wall_clock_days"])
        assert page.text_content("[data-testid=big-effective_days]") == fmt_days(expected["effective_days"])
        assert page.text_content("[data-testid=mode]").strip() == expected["mode_label"]

        # Both charts were redrawn.
        assert page.get_attribute("[data-testid=breakdown-chart]", "data-version") != chart_before
        assert page.get_attribute("[data-testid=sweep-chart]", "data-version") != sweep_before

        # Share: the copied link restores the scenario and its numbers in a new page.
        link = copied_link(page)
        assert link.startswith(server) and "num_nodes=500" in link and "bandwidth_up_mbps=1000" in link
        assert page.url == link
        page.screenshot(path=str(ARTIFACTS / "web-ui.png"), full_page=True)
        other = context.new_page()
        other.on("request", lambda r: hosts.add(r.url.split("/")[2]))
        other.goto(link)
        other.wait_for_function(
            "document.querySelector('[data-testid=result-json]')?.textContent.length > 10"
        )
        assert _result_json(other) == shown
        assert other.input_value("[data-testid=num_nodes]") == "500"
        assert other.input_value("[data-testid=bandwidth_up_mbps]") == "1000"

        # A very short run (10 million nodes) reads in minutes, not "0.0 days".
        before = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=num_nodes]", "10000000")
        _wait_changed(page, "[data-testid=result-json]", None, before)
        short = _result_json(page)["wall_clock_days"]
        assert 0 < short < 0.05
        headline = page.text_content("[data-testid=big-wall_clock_days]")
        assert headline == fmt_days(short) and headline.split()[1] in ("h", "min", "s", "ms"), headline
        assert float(headline.split()[0].replace(",", "")) > 0
        assert "0.0 days" not in page.text_content("[data-testid=summary]")

        # To another view and back by the navigation links: this page's own (non-shared) edits stay.
        page.click("[data-testid=nav-step]")
        page.wait_for_url("**/step**")
        page.wait_for_selector("[data-testid=nav-decentralized]")
        page.click("[data-testid=nav-decentralized]")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        assert page.input_value("[data-testid=bandwidth_up_mbps]") == "1000"
        assert page.input_value("[data-testid=num_nodes]") == "10000000"
        assert _result_json(page)["wall_clock_days"] == short
        before = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=num_nodes]", "500")
        _wait_changed(page, "[data-testid=result-json]", None, before)
        assert _result_json(page) == shown

        # Compare: pin this scenario, change a field, see both side by side.
        page.click("[data-testid=pin]")
        before = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=num_nodes]", "72")
        _wait_changed(page, "[data-testid=result-json]", None, before)
        page.wait_for_selector("[data-testid=compare-table]")
        table = page.text_content("[data-testid=compare-table]")
        assert "num_nodes" in table and "500" in table and "72" in table and "wall_clock_days" in table

        # Export the scenario, edit it, import it back.
        with page.expect_download() as download:
            page.get_by_role("button", name="Scenario YAML").click()
        exported = yaml.safe_load(Path(download.value.path()).read_text())
        assert exported["num_nodes"] == 72 and exported["bandwidth_up_mbps"] == 1000
        exported["num_nodes"] = 300
        scenario_file = ARTIFACTS / "imported.yaml"
        scenario_file.write_text(yaml.safe_dump(exported))
        before = page.text_content("[data-testid=result-json]")
        page.set_input_files("input[type=file]", str(scenario_file))
        _wait_changed(page, "[data-testid=result-json]", None, before)
        assert page.input_value("[data-testid=num_nodes]") == "300"
        assert _result_json(page) == dtsim.simulate(dtsim.load_scenario(layers=[exported])).model_dump(
            mode="json"
        )
        with page.expect_download() as download:
            page.get_by_role("button", name="Result CSV").click()
        assert "wall_clock_days" in Path(download.value.path()).read_text()

        # Another count of the same GPUs scales the node's peak and memory, as `--set gpus_per_node` does
        # (a review's case: the page kept the shown 32 PFLOPS at 8 GPUs, its link read back at 16)
        before = page.text_content("[data-testid=result-json]")
        page.fill("[data-testid=gpus_per_node]", "8")
        _wait_changed(page, "[data-testid=result-json]", None, before)
        assert float(page.input_value("[data-testid=pflops_per_node]")) == 16.0
        assert float(page.input_value("[data-testid=vram_per_node_gb]")) == 1152.0
        cli = dtsim.simulate(dtsim.load_scenario(layers=[exported], overrides={"gpus_per_node": 8}))
        assert _result_json(page)["wall_clock_days"] == cli.wall_clock_days

        # The API docs render offline too.
        docs = context.new_page()
        docs.on("request", lambda r: hosts.add(r.url.split("/")[2]))
        docs.goto(server + "/docs")
        docs.wait_for_selector(".opblock-summary-path", timeout=15_000)
        assert "/api/simulate" in docs.text_content("body")

        # Phone width: the page still renders its results.
        other.set_viewport_size({"width": 390, "height": 844})
        other.screenshot(path=str(ARTIFACTS / "web-ui-phone.png"), full_page=True)
        assert other.locator("[data-testid=summary]").is_visible()
        browser.close()
    assert hosts == {server.split("/")[2]}, f"the page reached beyond localhost: {hosts}"
    assert not errors, errors


def test_bad_uploads_and_share_links_say_why(server, tmp_path):
    """A scenario file that cannot be used leaves the inputs as they were and says why beside the upload
    (it used to fail silently while the upload showed success); a share link that cannot be used loads
    the default scenario with a visible notice. A good file afterwards clears the error."""
    from playwright.sync_api import sync_playwright

    from tests.abuse import alias_bomb

    chromium = ensure_chromium()
    bad = {
        "bomb.yaml": (alias_bomb().encode(), "200,000 values"),
        "utf16.yaml": ("num_nodes: 5\n".encode("utf-16"), "UTF-16"),
        "binary.json": (bytes(range(256)), "not UTF-8"),
        "list.yaml": (b"- 1\n- 2\n", "must hold a mapping"),
        "negative.yaml": (b"num_nodes: -5\n", "num_nodes = -5"),
        "keys.yaml": (b"{1: 2}\n", "keys must be text"),
        "scenario.txt": (b"num_nodes: 5\n", "must be a .yaml, .yml or .json"),
        "big.yaml": (b"# " * 300_001, "bytes; at most 500,000"),
    }
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(server + "/")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        first = page.text_content("[data-testid=result-json]")
        error = page.locator("[data-testid=import-error]")
        for name, (content, words) in bad.items():
            path = tmp_path / name
            path.write_bytes(content)
            started = time.perf_counter()
            # set_input_files skips the file input's accept filter, as a user's "all files" choice does
            page.set_input_files("input[type=file]", str(path))
            page.wait_for_function(
                "(w) => document.querySelector('[data-testid=import-error]')?.textContent.includes(w)",
                arg=words,
                timeout=10_000,
            )
            assert time.perf_counter() - started < 5.0
            assert error.is_visible() and name in error.text_content()
            assert page.text_content("[data-testid=result-json]") == first
            assert page.input_value("[data-testid=num_nodes]") == str(dtsim.load_scenario().num_nodes)
            # the upload's own "done" tick is cleared: nothing claims the file was taken
            page.wait_for_function("document.querySelectorAll('.q-uploader__file').length === 0")
        # two bad fields (the reader stops at its first stage): both said
        two = tmp_path / "two.yaml"
        two.write_text("mfu: 5\nbandwidth_mbps: -1\n")
        page.set_input_files("input[type=file]", str(two))
        page.wait_for_function(
            "document.querySelector('[data-testid=import-error]')?.textContent.includes('two.yaml')"
        )
        said = error.text_content()
        assert "mfu = " in said and "bandwidth_mbps = -1" in said, said
        assert page.text_content("[data-testid=result-json]") == first
        page.screenshot(path=str(ARTIFACTS / "web-ui-bad-upload.png"), full_page=True)

        good = tmp_path / "good.yaml"
        good.write_text("num_nodes: 321\n")
        page.set_input_files("input[type=file]", str(good))
        _wait_changed(page, "[data-testid=result-json]", None, first)
        assert page.input_value("[data-testid=num_nodes]") == "321"
        assert not error.is_visible()

        page.goto(server + "/?assumptions=5&assumptions.pue=1.2")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        notice = page.locator("[data-testid=link-error]")
        assert notice.is_visible() and "assumptions = 5: must be a table" in notice.text_content()
        assert _result_json(page) == dtsim.simulate().model_dump(mode="json")
        browser.close()


def test_preset_link_menus_and_legend(server):
    """Issue 17's defects on the decentralized page: `?preset=ID` in the address loads that preset (it was
    ignored), the preset menus name the preset and node the inputs hold (they showed blank), and the
    breakdown chart's legend shows every entry at once (it was paged: its options are tested in
    test_web_helpers); the header links every view."""
    from playwright.sync_api import sync_playwright

    chromium = ensure_chromium()
    expected = dtsim.simulate(dtsim.load_scenario(preset="intellect-1", overrides={"num_nodes": 20}))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(server + "/?preset=intellect-1&num_nodes=20")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        shown, want = _result_json(page), expected.model_dump(mode="json")
        # the page holds a node preset's hardware in its inputs, not the preset's id
        assert want["scenario"].pop("node") == "dgx-h100" and "node" not in shown["scenario"]
        assert shown == want
        assert page.input_value("[data-testid=num_nodes]") == "20"
        assert not page.locator("[data-testid=link-error]").is_visible()
        # 20 nodes is not the preset any more: the menu is blank; the node preset still matches
        assert page.locator("[data-testid=preset]").input_value() == ""
        assert "DGX H100" in page.locator("[data-testid=node-preset]").text_content()

        page.goto(server + "/?preset=intellect-1")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        assert "intellect-1" in page.locator("[data-testid=preset]").text_content()

        # what the navigation carries from the datacenter views: their model, node and token counts
        page.goto(server + "/?model=mixtral-8x7b&nodes=16&tokens=2e12&gpu=h100-sxm")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        assert not page.locator("[data-testid=link-error]").is_visible()
        carried = _result_json(page)["scenario"]
        assert (carried["num_nodes"], carried["tokens_t"], carried["moe"]) == (16, 2.0, True)
        mixtral = count_params(get_architecture("mixtral-8x7b"))
        assert (carried["parameters_b"], carried["active_parameters_b"]) == (
            mixtral.total / 1e9,
            mixtral.active / 1e9,
        )
        assert page.input_value("[data-testid=num_nodes]") == "16"

        page.goto(server + "/?preset=nope")
        page.wait_for_function("document.querySelector('[data-testid=result-json]')?.textContent.length > 10")
        notice = page.locator("[data-testid=link-error]")
        assert notice.is_visible() and "nope" in notice.text_content()

        # the legend's options are checked without a browser (test_web_helpers); here, a picture of it
        page.locator("[data-testid=breakdown-chart]").screenshot(path=str(ARTIFACTS / "web-ui-legend.png"))
        charts_keep_their_text(page, 2)  # the sweep chart's "days" and "MFU %" were cut at the top
        links = page.locator("[data-testid=nav] a")
        assert links.count() >= 1 and links.first.get_attribute("href").startswith("/")
        browser.close()


def test_limits_points_table_is_not_cut_on_a_laptop(server):
    """The /limits points table has eleven columns; inside the right-hand column of a 1280-px window its
    last two (GPU cost, GWh) lay beyond the card, reachable only by scrolling the table sideways. It now
    spans the page: nothing overflows at 1280 px."""
    from playwright.sync_api import sync_playwright

    chromium = ensure_chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server + "/limits")
        page.wait_for_function(
            "document.querySelectorAll('[data-testid=points-table] tbody tr').length > 10", timeout=60_000
        )
        scroll, client = page.evaluate(
            "() => { const e = document.querySelector('[data-testid=points-table] .q-table__middle');"
            " return [e.scrollWidth, e.clientWidth]; }"
        )
        assert scroll <= client, (scroll, client)
        assert page.locator("[data-testid=points-table] th", has_text="GWh").is_visible()
        browser.close()
