"""The /target view in a real browser: the answer equals `dtsim target --json` for the same options
(a --solve question with its limiting factor and warnings, and a search for the cheapest
configuration), the share link restores inputs and answer, an inputs file can be imported (a bad one
says why), and the time from an input change to the answer is measured in the browser."""

from __future__ import annotations

import json
import urllib.request

import yaml

from dtsim.interfaces.web.formview import argv
from dtsim.interfaces.web.views.target import fields
from tests.form_view_support import (
    ARTIFACTS,
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
# A --solve question is a few target searches, not one scenario, so issue 17's 150 ms aim does not bind
# it; measured 118 ms median here (2 shared cores), bounded at 1 s for a loaded machine.
SOLVE_LATENCY_S = 1.0


def expected(values: dict) -> dict:
    return untimed(cli_json(["target", *argv(FIELDS, values)]))


def test_target_view(server, tmp_path):
    values = {f.name: f.default for f in FIELDS}
    with browser_page(server) as (context, page, hosts, errors):
        shown = untimed(open_view(page, server + "/target"))
        assert shown == expected(values)
        assert shown["solve"] == "num_nodes" and shown["limiting_factor"]
        assert shown["limiting_factor"] in page.text_content("[data-testid=limiting-factor]")
        assert page.text_content("[data-testid=answer]") == shown["question"]
        assert page.locator("[data-testid=warnings]").is_visible()

        change(page, "params_b", "30")
        change(page, "days", "60")
        values |= {"params_b": 30.0, "days": 60.0}
        shown = untimed(result(page))
        assert shown == expected(values)
        assert shown["days_limit"] == 60.0 and shown["parameters_b"] == 30.0

        latency = browser_latency(page, "params_b", ["31", "32", "33", "34", "35"])
        print(
            f"/target (--solve num_nodes): input to answer, median of 5 in the browser: {latency * 1e3:.0f} ms"
        )
        assert latency < SOLVE_LATENCY_S
        values["params_b"] = 35.0
        assert untimed(result(page)) == expected(values)

        # the share link restores the question and its answer
        link = page.url
        assert "params_b=35" in link and "days=60" in link
        page.screenshot(path=str(ARTIFACTS / "web-view-target.png"), full_page=True)
        other = context.new_page()
        assert untimed(open_view(other, link)) == untimed(result(page))
        assert other.input_value("[data-testid=params_b]") == "35"

        # a search (no question): the cheapest configuration and each mode's verdict, as the CLI's
        search = {**{f.name: f.default for f in FIELDS}, "solve": None, "params_b": 10.0, "tokens_t": 0.2}
        shown = untimed(open_view(other, server + "/target?solve=&params_b=10&tokens_t=0.2"))
        assert shown == expected(search)
        assert shown["winner"]["num_nodes"] >= 1
        assert other.locator("[data-testid=modes-table]").is_visible()
        # the search ran as one of the API's jobs; the question above answered in the server process
        job_id = other.get_attribute("[data-testid=job-progress]", "data-job")
        with urllib.request.urlopen(f"{server}/api/jobs/{job_id}") as resp:
            job = json.loads(resp.read())
        assert job["kind"] == "target" and job["state"] == "done" and untimed(job["result"]) == shown
        assert page.get_attribute("[data-testid=job-progress]", "data-job") is None
        # the inverse queries: the most compute for a budget, the fewest nodes of one preset
        reach = {
            **search,
            "params_b": None,
            "tokens_t": None,
            "budget": 5e6,
            "reach": "quality",
            "node": "dgx-h100",
            "max_nodes": 1000,
        }
        shown = untimed(
            open_view(
                other,
                server + "/target?solve=&params_b=&budget=5000000&reach=quality&node=dgx-h100&max_nodes=1000",
            )
        )
        assert shown == expected(reach) and shown["objective"] == "reach"
        fewest = {**search, "min_nodes": True, "node": "dgx-h100"}
        shown = untimed(
            open_view(other, server + "/target?solve=&params_b=10&tokens_t=0.2&min_nodes=true&node=dgx-h100")
        )
        assert shown == expected(fewest)
        assert f"{shown['min_nodes']:,} × dgx-h100" in other.text_content("[data-testid=min-nodes]")

        # import: a good inputs file, and bad ones that say why and change nothing
        good = tmp_path / "target.yaml"
        good.write_text(yaml.safe_dump({"solve": "days", "params_b": 20, "days": None}))
        before = page.locator("[data-testid=result-json]").text_content()
        upload(page, good)
        wait_changed(page, before)
        values |= {"solve": "days", "params_b": 20.0, "days": None}
        assert untimed(result(page)) == expected(values)
        bad = tmp_path / "bad.yaml"
        bad.write_text("solve: weeks\n")
        bad_upload_says_why(
            page, bad, "Question (blank: search for a target) [solve] = 'weeks': must be one of"
        )

        # an input the command refuses: the error names it, the answer stays
        before = page.locator("[data-testid=result-json]").text_content()
        page.fill("[data-testid=days]", "30")
        page.wait_for_function(
            "document.querySelector('[data-testid=errors]')?.textContent.includes('Time limit (days; blank: 547.875) = 30')",
            timeout=30_000,
        )
        assert "--" not in page.text_content("[data-testid=errors]")  # the page's names, not the CLI's
        assert page.locator("[data-testid=result-json]").text_content() == before
    assert hosts == {server.split("/")[2]}, f"the view reached beyond localhost: {hosts}"
    assert not errors, errors
