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
    tables_fit,
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
        wide = context.new_page()  # the default ten caps and three targets: the widest tables
        open_view(wide, f"{server}/governance?gpus=h100-sxm&max_nodes=1000")
        tables_fit(wide)
        wide.close()

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
        bad_upload_says_why(page, bad, "Metric [metric] = 'flops': must be one of quality, local")

        # an option the command refuses: named, the answer stays
        before = page.locator("[data-testid=result-json]").text_content()
        page.fill("[data-testid=precisions]", "fp12")
        page.wait_for_function(
            "document.querySelector('[data-testid=errors]')?.textContent.includes(\"Precisions an actor may use = 'fp12'\")",
            timeout=30_000,
        )
        assert page.locator("[data-testid=result-json]").text_content() == before
    assert hosts == {server.split("/")[2]}, f"the view reached beyond localhost: {hosts}"
    assert not errors, errors


# --- the analysis runs as one of the API's jobs (web/jobrun.py) ------------------------------------------

# for page.add_init_script: every fraction the job's progress bar showed and every job id it carried
WATCH_JOB = """window.__dt_job = {fractions: [], ids: []};
setInterval(() => { const b = document.querySelector('[data-testid=job-progress]'); if (!b) return;
  const w = window.__dt_job, f = b.getAttribute('data-fraction'), id = b.getAttribute('data-job');
  if (f !== null && w.fractions[w.fractions.length - 1] !== Number(f)) w.fractions.push(Number(f));
  if (id && !w.ids.includes(id)) w.ids.push(id); }, 10);"""
RUNNING = "document.querySelector('[data-testid=job-progress]')?.getAttribute('data-state') === 'running'"
# four accelerators: a search of a couple of seconds, long enough for the bar to move
MEDIUM = {"gpus": ["h100-sxm", "a100-80gb", "h200", "b200"], "targets": "1e24,1e25"}


def api(server: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    import json
    import urllib.error
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Prefer": "respond-async"}
    req = urllib.request.Request(server + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def final_state(server: str, job_id: str, timeout: float = 30.0) -> dict:
    import time

    deadline = time.monotonic() + timeout
    while True:
        status, job = api(server, "GET", f"/api/jobs/{job_id}")
        assert status == 200, job
        if job["state"] in ("done", "failed", "cancelled") or time.monotonic() > deadline:
            return job
        time.sleep(0.1)


def test_governance_runs_as_a_cancellable_job(server):
    values = {f.name: f.default for f in FIELDS} | MEDIUM
    query = "gpus=h100-sxm%0Aa100-80gb%0Ah200%0Ab200&targets=1e24,1e25"
    with browser_page(server) as (context, page, hosts, errors):
        # the progress bar moves (a fraction between 0 and 1, then 1) and the job's result is the CLI's
        page.add_init_script(WATCH_JOB)
        shown = untimed(open_view(page, f"{server}/governance?{query}"))
        assert shown == expected(values)
        page.wait_for_function("window.__dt_job.fractions.includes(1)", timeout=5_000)
        seen = page.evaluate("window.__dt_job")
        assert any(0 < f < 1 for f in seen["fractions"]), f"the progress bar did not move: {seen}"
        assert len(seen["ids"]) == 1, seen
        job = final_state(server, seen["ids"][0])
        assert job["state"] == "done" and job["kind"] == "governance" and untimed(job["result"]) == shown
        assert not page.locator("[data-testid=job-progress]").is_visible()

        # a dropped connection cancels the job too; once the tab is back, its inputs are computed again
        before = page.locator("[data-testid=result-json]").text_content()
        page.fill("[data-testid=targets]", "1e24")
        page.wait_for_function(f"window.__dt_job.ids.length === 2 && {RUNNING}", timeout=30_000)
        dropped = page.evaluate("window.__dt_job.ids[1]")
        page.evaluate("window.socket.io.engine.close()")  # the connection drops; socket.io reconnects
        assert final_state(server, dropped)["state"] == "cancelled"
        wait_changed(page, before)
        values["targets"] = "1e24"
        assert untimed(result(page)) == expected(values)
        assert len(page.evaluate("window.__dt_job.ids")) == 3

        # a newer input cancels the running job; the answer is the newer inputs'
        other = context.new_page()
        other.add_init_script(WATCH_JOB)
        other.goto(f"{server}/governance")  # the defaults: a search of ~10 s
        other.wait_for_function(RUNNING, timeout=30_000)
        first = other.evaluate("window.__dt_job.ids[0]")
        before = other.locator("[data-testid=result-json]").text_content()
        other.fill("[data-testid=gpus]", "h100-sxm")
        wait_changed(other, before)
        assert final_state(server, first)["state"] == "cancelled"
        small = {f.name: f.default for f in FIELDS} | {"gpus": ["h100-sxm"]}
        assert untimed(result(other)) == expected(small)

        # closing the tab cancels its running job
        other.fill("[data-testid=gpus]", "")
        other.wait_for_function(f"window.__dt_job.ids.length === 3 && {RUNNING}", timeout=30_000)
        running = other.evaluate("window.__dt_job.ids[2]")
        assert final_state(server, running, timeout=1.0)["state"] == "running"
        other.close()
        assert final_state(server, running)["state"] == "cancelled"

        # past the job limits the view says so (no hang); once jobs end it computes again
        held = []
        for _ in range(4):  # one client's limit (jobs.MAX_JOBS_PER_CLIENT), the page's client included
            # the default governance search (~10 s alone, four of them sharing the cores): none ends
            # before the page's own job is refused (sensitivity jobs at their largest base, 1024, did:
            # two of four ended on their own in a run of the web-view tests together)
            status, body = api(server, "POST", "/api/governance", {})
            assert status == 202, body
            held.append(body["id"])
        try:
            page.fill("[data-testid=days]", "365")
            page.wait_for_function(
                "document.querySelector('[data-testid=errors]')?.textContent.includes('the server is busy')",
                timeout=10_000,
            )
            said = page.text_content("[data-testid=errors]")
            assert "one client may have at most 4" in said and "Retry in about" in said, said
            assert page.locator("[data-testid=errors]").is_visible()
            assert not page.locator("[data-testid=job-progress]").is_visible()
        finally:
            for job_id in held:
                api(server, "DELETE", f"/api/jobs/{job_id}")
        ended = [final_state(server, j) for j in held]
        assert all(j["state"] == "cancelled" for j in ended), ended
        before = page.locator("[data-testid=result-json]").text_content()
        page.fill("[data-testid=days]", "366")
        wait_changed(page, before)
        assert untimed(result(page)) == expected(values | {"days": 366.0})
        assert not page.locator("[data-testid=errors]").is_visible()
    assert hosts == {server.split("/")[2]}, f"the view reached beyond localhost: {hosts}"
    assert not errors, errors
