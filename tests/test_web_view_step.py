"""The /step view in a real browser: its numbers equal `dtsim step --json` for the same inputs (the
defaults, a filled form, an imported file, a layout that does not fit), the memory bar's parts are
step's own, the iteration timeline ends at the step time, the downloaded trace is the file
`dtsim step --trace` writes, the share link restores inputs and answer, bad input and bad files say
why, and an input change reaches the numbers within issue 17's 150 ms (median of 5, timed inside the
browser)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dtsim.interfaces.web.formview import argv, defaults, fmt
from dtsim.interfaces.web.views.step import MAX_DRAWN_EVENTS, fields
from tests.form_view_support import (
    ARTIFACTS,
    bad_upload_says_why,
    browser_latency,
    change,
    choose,
    choose_llm_foundry,
    cli_json,
    copied_link,
    open_view,
    result,
    upload,
    wait_changed,
)
from tests.web_support import LATENCY_GATE_S, record_latency


def cli_step(values: dict) -> dict:
    return cli_json(["step", *argv(fields(), values)])


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def timeline_holds(answer: dict) -> None:
    """The drawn iteration: one track per stage (and the DP network), nothing past the step time, and
    every stage busy or idle until its end."""
    s, line = answer["step"], answer["timeline"]
    pp = s["layout"]["pp"]
    assert line["tracks"] == [f"stage {i}" for i in range(pp)] + ["DP network"]
    step_time = s["step_time_s"]
    if line["series"] is not None:
        rows = [r for rows in line["series"].values() for r in rows]
        assert len(rows) == line["events"] <= MAX_DRAWN_EVENTS
        assert max(end for _t, _a, end in rows) == pytest.approx(step_time, rel=1e-9)
        for stage in range(pp):  # a stage's events tile [0, step time]
            busy = sum(end - a for t, a, end in rows if t == stage)
            assert busy == pytest.approx(step_time, rel=1e-6)
    else:
        assert line["events"] > MAX_DRAWN_EVENTS
        for stage in range(pp):
            busy = sum(per_track[stage] for per_track in line["totals"].values())
            assert busy == pytest.approx(step_time, rel=1e-6)


def test_step_view(server, tmp_path):
    from tests.form_view_support import browser_page

    values = defaults(fields())
    with browser_page(server) as (context, page, hosts, errors):
        shown = open_view(page, server + "/step")
        assert shown["step"] == cli_step(values)
        timeline_holds(shown)
        parts = shown["step"]["memory_breakdown_gb"]
        assert sum(parts.values()) == pytest.approx(shown["step"]["memory_per_gpu_gb"])
        assert page.locator("[data-testid=memory-chart]").is_visible()
        assert page.locator("[data-testid=timeline-chart]").is_visible()
        assert "Fits in GPU memory" in page.text_content("[data-testid=fit-verdict]")

        # fill the form: the numbers are the CLI's for the same inputs
        change(page, "tp", "4")
        change(page, "pp", "4")
        change(page, "gbs", "128")
        change(page, "tokens", "100000000000")
        choose(page, "schedule", "gpipe")
        values |= {"tp": 4, "pp": 4, "gbs": 128, "tokens": 1e11, "schedule": "gpipe"}
        shown = result(page)
        assert shown["step"] == cli_step(values)
        timeline_holds(shown)
        days = shown["step"]["run"]["days"]
        assert page.text_content("[data-testid=days]").startswith(f"{days:,.1f}")
        assert page.text_content("[data-testid=mfu]").startswith(f"{shown['step']['mfu']:.1%}")

        latency = browser_latency(page, "gbs", ["64", "192", "256", "320", "128"])
        record_latency("/step", latency)
        assert latency < LATENCY_GATE_S

        # the trace button downloads what `dtsim step --trace FILE` writes for these inputs
        with page.expect_download() as download:
            page.click("[data-testid=download-trace]")
        got = json.loads(Path(download.value.path()).read_text())
        cli_trace = tmp_path / "trace.json"
        cli_json(["step", *argv(fields(), values), "--trace", str(cli_trace)])
        assert got == json.loads(cli_trace.read_text())

        # bad input: the problem is named, the answer stays
        before = page.locator("[data-testid=result-json]").text_content()
        page.fill("[data-testid=tp]", "3")
        page.wait_for_function(
            "document.querySelector('[data-testid=errors]')?.textContent.includes('Tensor parallel (TP) = 3')",
            timeout=10_000,
        )
        assert page.locator("[data-testid=errors]").is_visible()
        assert page.locator("[data-testid=result-json]").text_content() == before
        page.fill("[data-testid=tp]", "4")  # the inputs of the answer shown: the error goes
        page.wait_for_selector("[data-testid=errors]", state="hidden", timeout=10_000)

        # share link: a new page restores the inputs and the answer
        link = copied_link(page)
        assert "tp=4" in link and "schedule=gpipe" in link and link == page.url
        page.screenshot(path=str(ARTIFACTS / "web-view-step.png"), full_page=True)
        other = context.new_page()
        assert open_view(other, link) == result(page)
        assert other.input_value("[data-testid=pp]") == "4"

        # import: a layout of 9,000+ events (drawn as totals per stage), equal to the CLI's answer
        good = tmp_path / "inputs.yaml"
        big = {"model": "gpt3-175b", "nodes": 64, "tp": 8, "pp": 8, "gbs": 1536, "schedule": "1f1b"}
        good.write_text(yaml.safe_dump(big))
        before = page.locator("[data-testid=result-json]").text_content()
        upload(page, good)
        wait_changed(page, before)
        values |= big
        shown = result(page)
        assert shown["step"] == cli_step(values)
        assert shown["timeline"]["series"] is None
        timeline_holds(shown)
        assert "totals" in page.text_content("[data-testid=timeline-note]")
        assert page.input_value("[data-testid=nodes]") == "64"
        bad = tmp_path / "bad.yaml"
        bad.write_text("tp: many\n")
        bad_upload_says_why(page, bad, "Tensor parallel (TP) [tp] = 'many': must be a number")
        unknown = tmp_path / "unknown.json"
        unknown.write_text('{"size_mb": 3}')
        bad_upload_says_why(page, unknown, "not an input of this view")

        # a layout that does not fit: said, with why, and the CLI's numbers
        tight = context.new_page()
        shown = open_view(tight, server + "/step?model=gpt3-175b&nodes=1&tp=8&pp=1&gbs=64")
        lone = defaults(fields()) | {"model": "gpt3-175b", "nodes": 1, "tp": 8, "pp": 1, "gbs": 64}
        assert shown["step"] == cli_step(lone) and not shown["step"]["fits"]
        verdict = tight.text_content("[data-testid=fit-verdict]")
        assert verdict.startswith("Does not fit") and shown["step"]["fit_note"][1:] in verdict
        tight.screenshot(path=str(ARTIFACTS / "web-view-step-no-fit.png"), full_page=True)

        # a link that cannot be used: a notice naming the field, its default kept
        notice = context.new_page()
        shown = open_view(notice, server + "/step?tp=abc&nodes=4")
        assert "Tensor parallel (TP) [tp] = 'abc'" in notice.text_content("[data-testid=link-error]")
        assert shown["step"]["layout"]["tp"] == 2 and shown["step"]["n_gpus"] == 32

        # a software stack: choosing llm-foundry shows its settings in the form, and the step time is
        # `dtsim step --software llm-foundry`'s with those inputs; the link carries the choice
        stack = choose_llm_foundry(context, server + "/step", "answer.step.layout.zero === 3")
        assert stack.input_value("[data-testid=zero]") == "3"
        chosen = defaults(fields()) | {"software": "llm-foundry", "zero": 3, "fp32_params": True}
        chosen["attention_kernel"] = "triton"
        shown = result(stack)
        cli = cli_step(chosen)
        assert shown["step"] == cli and cli["software"] == "llm-foundry"
        assert (
            cli["layout"]["zero"] == 3
            and cli["layout"]["fp32_params"]
            and cli["layout"]["attention_kernel"] == "triton"
        )
        assert stack.text_content("[data-testid=step-time]") == fmt(cli["step_time_s"])
        assert "[llm-foundry]" in stack.text_content("[data-testid=software-used]")
        link = copied_link(stack)
        assert "software=llm-foundry" in link and "zero=3" in link
        again = context.new_page()
        assert open_view(again, link) == result(stack)
        assert "llm-foundry" in again.text_content("[data-testid=software]")
        # the form's inputs are the explicit flags: ZeRO set back to 1 wins over the profile, as --zero 1
        change(stack, "zero", "1")
        assert result(stack)["step"] == cli_step(chosen | {"zero": 1})
        # an inputs file carries the choice (NeMo sets FP32 gradient reduction off: no input for it here)
        nemo = tmp_path / "nemo.yaml"
        nemo.write_text(yaml.safe_dump({"software": "nemo-24.07"}))
        before = stack.locator("[data-testid=result-json]").text_content()
        upload(stack, nemo)
        wait_changed(stack, before)
        shown = result(stack)["step"]
        assert (
            shown == cli_step(chosen | {"zero": 1, "software": "nemo-24.07"})
            and shown["software"] == "nemo-24.07"
        )
        assert shown["layout"]["fp32_grad_accumulation"] is False
        assert "fp32_grad_accumulation=False" in stack.text_content("[data-testid=software-used]")
        bad_upload_says_why(
            stack,
            write(tmp_path / "sw.yaml", "software: pytorch\n"),
            "Software stack (blank: none) [software] = 'pytorch'",
        )
    assert hosts == {server.split("/")[2]}, f"the view reached beyond localhost: {hosts}"
    assert not errors, errors
