"""The /plan view in a real browser: its ranking equals `dtsim plan --json` for the same inputs (a 175B
model on 48 × 8 A100, run off the event loop; a small model; a cluster where nothing fits, whose
nearest layouts and advice are the command's), the TP × PP heat map is drawn, the model and cluster
carried from /step, the share link restores inputs and answer, bad files say why, and the time from an
input change to the answer is measured inside the browser."""

from __future__ import annotations

import json

import yaml

from dtsim.interfaces.web.formview import argv, defaults
from dtsim.interfaces.web.views.plan import fields
from tests.form_view_support import (
    ARTIFACTS,
    bad_upload_says_why,
    browser_latency,
    change,
    choose_llm_foundry,
    copied_link,
    open_view,
    result,
    upload,
    wait_changed,
)
from tests.web_support import charts_keep_their_text


def cli_plan(values: dict, status: int = 0) -> dict:
    """`dtsim plan --json` (exit 1 when nothing fits, its JSON printed all the same), without the
    search's wall-clock seconds, which differ between two runs."""
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    out = CliRunner().invoke(app, ["plan", *argv(fields(), values), "--json"])
    assert out.exit_code == status, out.output
    return same(json.loads(out.stdout))


def same(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k != "seconds"}


def test_plan_view(server, tmp_path):
    from tests.form_view_support import browser_page

    values = defaults(fields())
    with browser_page(server) as (context, page, hosts, errors):
        # the model and cluster chosen on /step are carried to /plan by the navigation
        open_view(page, server + "/step?model=gpt3-175b&nodes=48&tp=8&pp=8&gbs=1536")
        page.click("[data-testid=nav-plan]")
        page.wait_for_url("**/plan?**")
        page.wait_for_function(
            "document.querySelector('[data-testid=result-json]')?.textContent.length > 2", timeout=60_000
        )
        values |= {"model": "gpt3-175b", "nodes": 48}
        shown = result(page)
        assert same(shown) == cli_plan(values)
        assert shown["fits"] and shown["n_gpus"] == 384
        print(f"/plan: 175B over 48 x 8 A100: {shown['searched']:,} layouts in {shown['seconds']:.2f} s")
        assert page.locator("[data-testid=plan-table] tbody tr").count() == len(shown["layouts"]) == 10
        # every listed layout's warnings, each once with its rows (the page showed only the fastest's)
        box = " ".join(page.text_content("[data-testid=warnings]").split())
        for r in shown["layouts"]:
            for w in r["warnings"]:
                assert " ".join(w["message"].split()) in box, w
        assert page.locator("[data-testid=plan-heatmap]").is_visible()
        charts_keep_their_text(page)  # the heat map's "PP" was cut at the top
        best = shown["layouts"][0]
        assert f"{best['step_time_s']:,.3f} s" in page.text_content("[data-testid=plan-verdict]")
        cells = {(c["tp"], c["pp"]): c for c in shown["by_tp_pp"]}
        assert cells[(best["layout"]["tp"], best["layout"]["pp"])]["best_step_time_s"] == best["step_time_s"]
        page.screenshot(path=str(ARTIFACTS / "web-view-plan.png"), full_page=True)

        # nothing fits on one node: the nearest layouts and what to change, as the CLI says
        change(page, "nodes", "1")
        values["nodes"] = 1
        shown = result(page)
        assert same(shown) == cli_plan(values, status=1)
        assert not shown["fits"] and shown["nearest"]
        assert page.text_content("[data-testid=plan-verdict]") == "Nothing fits"
        assert page.text_content("[data-testid=plan-advice]") == shown["advice"]
        assert page.locator("[data-testid=plan-nearest] tbody tr").count() == len(shown["nearest"])
        box = " ".join(page.text_content("[data-testid=warnings]").split())
        assert all(" ".join(w["message"].split()) in box for r in shown["nearest"] for w in r["warnings"])
        assert all(c["best_step_time_s"] is None for c in shown["by_tp_pp"])  # the heat map's grey cells
        assert page.locator("[data-testid=plan-heatmap]").is_visible()
        page.screenshot(path=str(ARTIFACTS / "web-view-plan-nothing-fits.png"), full_page=True)

        # back to 48 nodes: the search of most of a second shows a spinner while it runs off the event loop
        before = page.locator("[data-testid=result-json]").text_content()
        page.fill("[data-testid=nodes]", "48")
        page.wait_for_selector("[data-testid=busy]", state="visible", timeout=10_000)
        wait_changed(page, before)
        page.wait_for_selector("[data-testid=busy]", state="hidden", timeout=10_000)
        assert result(page)["fits"]

        # a small search: the time from an input change to the new ranking, inside the browser
        page.fill("[data-testid=nodes]", "2")
        page.click("[data-testid=model]")
        page.get_by_role("option", name="llama3.1-8b", exact=True).click()
        page.wait_for_function(
            "JSON.parse(document.querySelector('[data-testid=result-json]').textContent).model === 'Llama 3.1 8B'",
            timeout=60_000,
        )
        values |= {"model": "llama3.1-8b", "nodes": 2, "gbs": 384}
        latency = browser_latency(page, "gbs", ["256", "640", "128", "512", "384"])
        print(
            f"/plan (llama3.1-8b on 16 GPUs): input to answer, median of 5 in the browser: {latency * 1e3:.0f} ms"
        )
        assert latency < 0.5
        assert same(result(page)) == cli_plan(values)

        # share link: a new page restores the inputs and the answer
        link = copied_link(page)
        assert "gbs=384" in link and "model" not in link and link == page.url  # the defaults are left out
        other = context.new_page()
        assert same(open_view(other, link)) == same(result(page))
        assert other.input_value("[data-testid=gbs]") == "384"

        # import: a good inputs file replaces them, a bad one says why and changes nothing
        good = tmp_path / "plan.json"
        good.write_text(json.dumps({"gbs": 1024, "top": 5, "tokens": 2e11}))
        before = page.locator("[data-testid=result-json]").text_content()
        upload(page, good)
        wait_changed(page, before)
        values |= {"gbs": 1024, "top": 5, "tokens": 2e11}
        shown = result(page)
        assert same(shown) == cli_plan(values)
        assert all(r["run"]["tokens"] == 2e11 for r in shown["layouts"]) and len(shown["layouts"]) == 5
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump({"top": 0}))
        before = page.locator("[data-testid=result-json]").text_content()
        upload(page, bad)
        page.wait_for_function(
            "document.querySelector('[data-testid=errors]')?.textContent.includes('Layouts listed = 0')",
            timeout=10_000,
        )
        assert page.locator("[data-testid=result-json]").text_content() == before
        listed = tmp_path / "list.yaml"
        listed.write_text("- 1\n- 2\n")
        bad_upload_says_why(page, listed, "must hold a mapping")
        unknown = tmp_path / "unknown.yaml"
        unknown.write_text("tp: 2\n")  # a /step input, not a /plan one
        bad_upload_says_why(page, unknown, "not an input of this view")

        # a link that cannot be used: a notice naming the field, its default kept
        notice = context.new_page()
        shown = open_view(notice, server + "/plan?gbs=lots&nodes=2")
        assert "Global batch (sequences) [gbs] = 'lots'" in notice.text_content("[data-testid=link-error]")
        assert shown["layouts"][0]["layout"]["gbs"] == 512

        # /plan's model set back to its default (llama3.1-8b) is carried back to /step, which remembered
        # the gpt3-175b it was left with: the link carries the default, so the old value does not return
        page.click("[data-testid=nav-step]")
        page.wait_for_url("**/step?**gbs=1536**")  # /step's own edits come back
        page.wait_for_selector("[data-testid=model]")
        chosen = page.text_content("[data-testid=model]")
        assert "llama3.1-8b" in chosen and "gpt3" not in chosen

        # a software stack: llm-foundry sets FP32 parameters and the triton kernel in the form, and the
        # ranking (ZeRO-3 only, the profile's overlap: no input here) is `dtsim plan --software llm-foundry`'s
        stack = choose_llm_foundry(context, server + "/plan", "answer.software === 'llm-foundry'")
        chosen = defaults(fields()) | {
            "software": "llm-foundry",
            "fp32_params": True,
            "attention_kernel": "triton",
        }
        shown = result(stack)
        cli = cli_plan(chosen)
        assert same(shown) == cli and cli["software"] == "llm-foundry"
        assert cli["layouts"] and all(
            r["layout"]["zero"] == 3
            and r["layout"]["fp32_params"]
            and r["layout"]["attention_kernel"] == "triton"
            for r in cli["layouts"]
        )
        best = cli["layouts"][0]["step_time_s"]
        assert f"{best:,.3f} s" in stack.text_content("[data-testid=plan-verdict]")
        note = stack.text_content("[data-testid=software-used]")
        assert "[llm-foundry]" in note and "zero=3" in note
        link = copied_link(stack)
        assert "software=llm-foundry" in link and "attention_kernel=triton" in link
        again = context.new_page()
        assert same(open_view(again, link)) == same(shown)
    assert hosts == {server.split("/")[2]}, f"the view reached beyond localhost: {hosts}"
    assert not errors, errors
