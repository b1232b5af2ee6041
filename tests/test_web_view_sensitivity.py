"""The /sensitivity view in a real browser: with the same seed its Sobol indices and tornado equal
`dtsim sensitivity --json` for the same inputs, both charts are drawn, the running analysis shows
that it runs, the share link restores inputs and answer, and an inputs file can be imported (a bad
one says why). Issue 17's 150 ms aim is for single scenarios; this is ~N·(d+2) of them, so the test
asserts that the answer appears and equals the CLI's."""

from __future__ import annotations

import yaml

from dtsim.interfaces.web.formview import argv
from dtsim.interfaces.web.views.sensitivity import fields
from tests.form_view_support import (
    ARTIFACTS,
    WATCH_BUSY,
    bad_upload_says_why,
    browser_page,
    change,
    choose,
    cli_json,
    open_view,
    result,
    tables_fit,
    upload,
    wait_changed,
)
from tests.web_support import charts_keep_their_text

FIELDS = fields()


def expected(values: dict) -> dict:
    return cli_json(["sensitivity", *argv(FIELDS, values)])


def test_sensitivity_view(server, tmp_path):
    values = {f.name: f.default for f in FIELDS}
    with browser_page(server) as (context, page, hosts, errors):
        page.add_init_script(WATCH_BUSY)
        shown = open_view(page, server + "/sensitivity")
        assert shown == expected(values)
        assert shown["seed"] == 1 and shown["base_samples"] == 64
        assert page.evaluate("window.__dt_busy_seen === true"), "no progress shown while the analysis ran"
        assert page.locator("[data-testid=tornado-chart]").is_visible()
        assert page.locator("[data-testid=sobol-chart]").is_visible()
        charts_keep_their_text(page, 2)
        tables_fit(page)  # the indices table's last columns were cut at the card's edge
        top = shown["indices"][0]["input"]
        assert top in page.text_content("[data-testid=indices-table]")
        # the assumptions the run never reads are held, and said as the CLI says them
        assert shown["unread"] and "restart_s" in page.text_content("[data-testid=unread]")

        # a scenario distribution, another output, a smaller N: still the CLI's answer
        change(page, "set", "mfu=0.3..0.5")
        change(page, "base", "32")
        choose(page, "output", "global_mfu")
        values |= {"set": ["mfu=0.3..0.5"], "base": 32, "output": "global_mfu"}
        shown = result(page)
        assert shown == expected(values)
        assert shown["output"] == "global_mfu" and "mfu" in [r["input"] for r in shown["indices"]]

        link = page.url
        assert "base=32" in link and "output=global_mfu" in link
        page.screenshot(path=str(ARTIFACTS / "web-view-sensitivity.png"), full_page=True)
        other = context.new_page()
        assert open_view(other, link) == shown
        assert other.input_value("[data-testid=base]") == "32"

        good = tmp_path / "sensitivity.yaml"
        good.write_text(yaml.safe_dump({"fixed_assumptions": True, "seed": 7}))
        before = page.locator("[data-testid=result-json]").text_content()
        upload(page, good)
        wait_changed(page, before)
        values |= {"fixed_assumptions": True, "seed": 7}
        shown = result(page)
        assert shown == expected(values)
        assert [r["input"] for r in shown["indices"]] == ["mfu"]  # only the scenario's own distribution
        bad = tmp_path / "bad.yaml"
        bad.write_text("base: 1.5\nseed: x\n")  # two bad fields: both said, by label and key
        bad_upload_says_why(page, bad, "Base samples (N) [base] = 1.5: must be a whole number")
        said = page.text_content("[data-testid=import-error]")
        assert "Seed (sampling and bootstrap) [seed] = 'x': must be a number" in said

        # an input the analysis refuses: named, the answer stays
        before = page.locator("[data-testid=result-json]").text_content()
        page.fill("[data-testid=base]", "1")
        page.wait_for_function(
            "document.querySelector('[data-testid=errors]')?.textContent.includes('Base samples (N) = 1')",
            timeout=30_000,
        )
        assert page.locator("[data-testid=result-json]").text_content() == before
    assert hosts == {server.split("/")[2]}, f"the view reached beyond localhost: {hosts}"
    assert not errors, errors
