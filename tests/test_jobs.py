"""Background jobs of the HTTP API (api/jobs.py, issue 17 items 2 and 4): a real sensitivity job from
queued to done with its event stream, cancelling (a job that obeys and one that ignores the request),
the 429 limits, unknown ids, one jobs store shared by `dtsim serve --workers 2`, and what `serve`
prints. Jobs run in real worker processes ("spawn"); the slow work below is a function of this module,
which the worker imports by name."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from fastapi import Request
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dtsim.interfaces.api import jobs
from dtsim.interfaces.api.app import create_app
from tests.web_support import free_port

SENSITIVITY = {
    "scenario": {"mfu": {"dist": "uniform", "low": 0.3, "high": 0.5}, "bandwidth_mbps": 100000},
    "output": "wall_clock_days",
    "base": 256,
    "seed": 4,
    "fixed_assumptions": False,  # the assumptions table's 20-odd distributions too: ~6,000 runs
}
ASYNC = {"Prefer": "respond-async"}


def slow_steps(progress, steps: int, delay: float, obey: bool) -> dict:
    """Work of `steps` sleeps that reports progress after each; with obey=False it swallows the
    cancellation and carries on (the supervisor must then terminate its process)."""
    for i in range(steps):
        time.sleep(delay)
        try:
            progress((i + 1) / steps)
        except jobs.JobCancelled:
            if obey:
                raise
    return {"steps": steps}


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(jobs.STORE_ENV, str(tmp_path / "jobs"))
    return tmp_path / "jobs"


@pytest.fixture
def client(store):
    app = create_app(ui=False)

    @app.get("/slow")
    async def slow(request: Request, steps: int, delay: float, obey: bool = True, estimate: float = 60.0):
        kwargs = {"steps": steps, "delay": delay, "obey": obey}
        return await jobs.run(request, "slow", slow_steps, kwargs, estimate_s=estimate)

    return TestClient(app)


def events(client: TestClient, href: str) -> list[tuple[str, dict]]:
    """The job's event stream, parsed: (event name, data) per event."""
    out = []
    with client.stream("GET", href + "/events") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    for block in text.strip().split("\n\n"):
        lines = [ln for ln in block.splitlines() if not ln.startswith(":")]
        if not lines:
            continue
        name = next(ln[7:] for ln in lines if ln.startswith("event: "))
        data = json.loads(next(ln[6:] for ln in lines if ln.startswith("data: ")))
        out.append((name, data))
    return out


def wait_state(client: TestClient, href: str, states: set[str], timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = client.get(href).json()
        if view["state"] in states:
            return view
        time.sleep(0.05)
    raise AssertionError(f"{href} never reached {states}: {view}")


def test_sensitivity_job_lifecycle_matches_the_inline_answer(client):
    inline = client.post("/api/sensitivity", json=SENSITIVITY)
    # ~0.5 s estimated on a quiet machine, answered at once; on a loaded one the timed probe can put it
    # past JOB_THRESHOLD_S, and then it is a job too (the estimate is meant to err that way)
    assert inline.status_code in (200, 202), inline.text
    answer = (
        inline.json()
        if inline.status_code == 200
        else wait_state(client, inline.json()["href"], {"done"})["result"]
    )
    r = client.post("/api/sensitivity", json=SENSITIVITY, headers=ASYNC)
    assert r.status_code == 202, r.text
    accepted = r.json()
    assert accepted["state"] == "queued" and accepted["href"] == f"/api/jobs/{accepted['id']}"
    assert r.headers["location"] == accepted["href"] and r.headers["preference-applied"] == "respond-async"
    stream = events(client, accepted["href"])
    names = [n for n, _ in stream]
    assert names[-1] == "done" and set(names[:-1]) == {"progress"}, names
    states = [d["state"] for n, d in stream[:-1]]
    assert states[0] == "queued" and "running" in states
    assert states.index("running") > 0 and "queued" not in states[states.index("running") :]
    progress = [d["progress"] for _n, d in stream[:-1]]
    assert progress == sorted(progress) and 0 < progress[-2] < progress[-1] <= 1, progress
    assert sum(0 < p < 1 for p in progress) >= 3  # the runs went through in pieces
    final = stream[-1][1]
    assert final["result"] == answer and final["progress"] == 1.0 and final["error"] is None
    view = client.get(accepted["href"]).json()
    assert view == final and view["kind"] == "sensitivity" and view["eta_s"] is None
    assert view["created"].endswith("Z") and view["updated"] >= view["created"]
    gone = client.delete(accepted["href"])
    assert gone.status_code == 200 and gone.json()["state"] == "done"
    assert "already ended" in gone.json()["message"]


def test_a_job_whose_input_the_model_refuses_fails_with_the_api_error_body(client):
    """Input errors found before the job is made are 422; one found in the work is the job's error."""
    bad = client.post("/api/sensitivity", json={**SENSITIVITY, "output": "nope"}, headers=ASYNC)
    assert bad.status_code == 422 and bad.json()["detail"][0]["field"] == "output"
    r = client.get("/slow", params={"steps": 1, "delay": 0.0}, headers=ASYNC)
    assert r.status_code == 202
    assert wait_state(client, r.json()["href"], {"done"})["result"] == {"steps": 1}


def test_cancel_a_job_that_stops_when_asked(client):
    r = client.get("/slow", params={"steps": 200, "delay": 0.05})
    assert r.status_code == 202  # estimated at 60 s: a job without asking
    href = r.json()["href"]
    running = wait_state(client, href, {"running"})
    assert running["eta_s"] is None or running["eta_s"] > 0
    while client.get(href).json()["progress"] < 0.02:
        time.sleep(0.05)
    pid = jobs.worker_pid(r.json()["id"])
    d = client.delete(href)
    assert d.status_code == 200, d.text
    body = d.json()
    assert body["state"] == "cancelled" and 0 < body["progress"] < 0.5 and body["result"] is None
    time.sleep(0.5)
    assert client.get(href).json()["progress"] == body["progress"]  # the work stopped
    assert jobs.alive(pid)  # it stopped by itself: its worker process serves the next job
    again = client.delete(href)
    assert again.status_code == 200 and "already ended (cancelled)" in again.json()["message"]


def test_cancel_a_job_that_ignores_it_terminates_its_process(client):
    r = client.get("/slow", params={"steps": 400, "delay": 0.05, "obey": False})
    href = r.json()["href"]
    wait_state(client, href, {"running"})
    pid = jobs.worker_pid(r.json()["id"])
    assert jobs.alive(pid)
    start = time.monotonic()
    d = client.delete(href)
    assert d.json()["state"] == "cancelled", d.text  # within CANCEL_WAIT_S: the grace, then terminated
    assert time.monotonic() - start < jobs.CANCEL_WAIT_S + 1
    deadline = time.monotonic() + 5
    while jobs.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not jobs.alive(pid)
    view = client.get(href).json()
    assert view["state"] == "cancelled" and view["progress"] < 1
    # the pool starts a new process for the next job
    nxt = client.get("/slow", params={"steps": 1, "delay": 0.0}, headers=ASYNC)
    assert wait_state(client, nxt.json()["href"], {"done"})["result"] == {"steps": 1}


def test_limits_answer_429_with_retry_after(client, store, monkeypatch):
    monkeypatch.setattr(jobs, "MAX_JOBS_PER_CLIENT", 2)
    monkeypatch.setattr(jobs, "MAX_JOBS_QUEUED", 3)
    slow = {"steps": 400, "delay": 0.05, "estimate": 20.0}
    hrefs = [client.get("/slow", params=slow).json()["href"] for _ in range(2)]
    over = client.get("/slow", params=slow)
    assert over.status_code == 429
    assert (
        over.json()["detail"][0]["field"] == "client" and "at most 2" in over.json()["detail"][0]["message"]
    )
    assert 1 <= int(over.headers["retry-after"]) <= 20
    other = TestClient(client.app, client=("192.0.2.7", 50000))  # another address
    ok = other.get("/slow", params=slow)
    assert ok.status_code == 202
    hrefs.append(ok.json()["href"])
    full = other.get("/slow", params=slow)
    assert full.status_code == 429 and full.json()["detail"][0]["field"] == "jobs"
    assert "at most 3 jobs" in full.json()["detail"][0]["message"] and int(full.headers["retry-after"]) >= 1
    for href in hrefs:
        assert client.delete(href).json()["state"] in ("cancelled", "queued", "running")
    for href in hrefs:
        wait_state(client, href, {"cancelled"})
    assert other.get("/slow", params={**slow, "steps": 1, "delay": 0}).status_code == 202  # room again


def test_requests_in_progress_per_client_are_bounded(store, monkeypatch):
    """Every API operation counts: while one request of a client is in progress and
    MAX_REQUESTS_PER_CLIENT is 1, its next gets 429 with Retry-After, another address does not, and
    the slot is free again once the first has answered."""
    monkeypatch.setattr(jobs, "MAX_REQUESTS_PER_CLIENT", 1)
    app = create_app(ui=False)
    entered = threading.Event()

    async def slow(request: Request, steps: int, delay: float):
        entered.set()
        kwargs = {"steps": steps, "delay": delay, "obey": True}
        return await jobs.run(request, "slow", slow_steps, kwargs, estimate_s=0.0)

    app.add_api_route("/api/slow", slow)
    app.router.routes.insert(0, app.router.routes.pop())  # ahead of the JSON 404 for unknown /api paths
    client = TestClient(app)
    first: dict = {}
    t = threading.Thread(
        target=lambda: first.update(r=client.get("/api/slow", params={"steps": 1, "delay": 1.5}))
    )
    t.start()
    assert entered.wait(10)
    second = client.post("/api/simulate", json={})
    assert second.status_code == 429 and second.headers["retry-after"] == str(jobs.RETRY_AFTER_BUSY_S)
    assert second.json()["detail"][0]["field"] == "client"
    other = TestClient(app, client=("192.0.2.7", 50000))
    assert other.post("/api/simulate", json={}).status_code == 200
    t.join()
    assert first["r"].status_code == 200 and first["r"].json() == {"steps": 1}  # inline: the result itself
    assert client.post("/api/simulate", json={}).status_code == 200


@pytest.mark.parametrize(("method", "suffix"), [("GET", ""), ("DELETE", ""), ("GET", "/events")])
def test_unknown_job_is_json_404(client, method, suffix):
    for job_id in ("0" * 32, "not-an-id", "..%2F..%2Fetc"):
        r = client.request(method, f"/api/jobs/{job_id}{suffix}")
        assert r.status_code == 404 and r.headers["content-type"] == "application/json", r.text
        assert r.json()["detail"][0]["field"] in ("id", "path")


def test_prefer_header_parsing():
    def prefers(*values: str) -> bool:
        headers = [(b"prefer", v.encode()) for v in values]
        return jobs.prefers_async(Request({"type": "http", "headers": headers}))

    assert prefers("respond-async")
    assert prefers("wait=10, Respond-Async")
    assert prefers("handling=lenient", "respond-async; foo=bar")
    assert not prefers("return=minimal") and not prefers()


def test_finished_jobs_expire_and_the_store_is_bounded(client, store, monkeypatch):
    r = client.get("/slow", params={"steps": 1, "delay": 0}, headers=ASYNC)
    href = r.json()["href"]
    wait_state(client, href, {"done"})
    other = client.get("/slow", params={"steps": 1, "delay": 0}, headers=ASYNC).json()["href"]
    wait_state(client, other, {"done"})
    monkeypatch.setattr(jobs, "JOB_TTL_S", 0.0)
    assert client.get(href).status_code == 404  # an expired job is gone when asked for
    assert not list(store.glob(f"{r.json()['id']}*"))
    assert list(store.glob(f"{other.rsplit('/', 1)[1]}*"))
    client.get("/slow", params={"steps": 1, "delay": 0}, headers=ASYNC)  # admission sweeps the store
    assert not list(store.glob(f"{other.rsplit('/', 1)[1]}*"))
    monkeypatch.setattr(jobs, "JOB_TTL_S", 3600.0)
    monkeypatch.setattr(jobs, "MAX_STORED_JOBS", 3)
    for _ in range(5):
        h = client.get("/slow", params={"steps": 1, "delay": 0}, headers=ASYNC).json()["href"]
        wait_state(client, h, {"done"})
    assert len(list(store.glob("*.json"))) <= 3


# --- dtsim serve ----------------------------------------------------------------------------------------------


def test_serve_refuses_bad_worker_counts():
    from dtsim.interfaces.cli.main import app

    for n in ("0", "65", "-1"):
        result = CliRunner().invoke(app, ["serve", "--workers", n])
        assert result.exit_code == 2, result.output
        assert "--workers" in result.output and "1–64" in result.output and "Traceback" not in result.output


def test_loopback_detection():
    from dtsim.interfaces.cli.serving import loopback_only

    assert loopback_only("127.0.0.1", 80) and loopback_only("localhost", 80)
    assert not loopback_only("0.0.0.0", 80)
    assert not loopback_only("192.0.2.1", 80)


@pytest.fixture(scope="module")
def public_server():
    """`dtsim serve --host 0.0.0.0 --workers 2` on a free port; yields (url, process, first output)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dtsim", "serve", "--host", "0.0.0.0", "--port", str(port), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    errors: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True).start()
    deadline = time.time() + 90
    while not any("serving at" in ln for ln in lines):
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("dtsim serve printed no URL: " + "".join(lines + errors))
        time.sleep(0.2)
    time.sleep(0.3)
    stores = _stores(proc.pid)
    yield f"http://127.0.0.1:{port}", proc, lines, errors
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("dtsim serve did not stop within 15 s of SIGTERM")
    assert stores and not any(Path(s).exists() for s in stores)  # serve removed its jobs store at exit


def test_serve_prints_its_url_and_warns_off_localhost(public_server):
    url, _proc, lines, errors = public_server
    port = url.rsplit(":", 1)[1]
    out = "".join(lines)
    assert f"serving at http://0.0.0.0:{port}/ (API docs: http://0.0.0.0:{port}/docs)" in out
    assert f"http://127.0.0.1:{port}/" in out and "web UI needs --workers 1" in out
    warning = " ".join("".join(errors).split())
    assert "warning" in warning and "no authentication" in warning and "0.0.0.0" in warning
    with urllib.request.urlopen(url + "/") as r:  # the UI is off with 2 workers, and / says so
        assert "--workers 1" in r.read().decode()


def _http(method: str, url: str, body: dict | None = None, headers: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as r:  # a new connection each time
        return r.status, json.loads(r.read())


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().split(") ", 1)[1].split()
        except (FileNotFoundError, IndexError):
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _stores(pid: int) -> set[str]:
    """The jobs stores of the server's worker processes (from their environments)."""
    stores = set()
    for w in _children(pid):
        env = Path(f"/proc/{w}/environ").read_bytes().split(b"\0")
        stores |= {e.split(b"=", 1)[1].decode() for e in env if e.startswith(jobs.STORE_ENV.encode() + b"=")}
    return stores


def test_jobs_are_shared_by_the_worker_processes(public_server):
    url, proc, _lines, _errors = public_server
    workers = _children(proc.pid)
    stores = _stores(proc.pid)
    assert len(stores) == 1, stores  # one store for every worker process
    store = Path(stores.pop())
    body = {**SENSITIVITY, "base": 16, "fixed_assumptions": True}
    owners, results = set(), []
    for _ in range(24):  # each on a new connection, which either process may accept
        status, accepted = _http("POST", url + "/api/sensitivity", body, ASYNC)
        assert status == 202
        owners.add(json.loads((store / f"{accepted['id']}.json").read_text())["owner_pid"])
        for _ in range(200):
            status, view = _http("GET", url + accepted["href"])  # 200 from whichever process answers
            if view["state"] == "done":
                break
            time.sleep(0.05)
        results.append(view["result"])
        if len(owners) >= 2 and len(results) >= 4:
            break
    assert len(owners) == 2 and owners <= set(workers)  # both processes made jobs ...
    assert all(r == results[0] for r in results)  # ... and every GET found each one, done, the same


def test_the_web_page_uses_the_same_runner_and_limits(client, store, monkeypatch):
    """web/jobrun.py's calls: `submit` (a page's job counts with the API jobs of its address), `job`
    (GET /api/jobs/{id}'s view) and `request_cancel`; past a limit JobRefused holds the 429's problem."""
    monkeypatch.setattr(jobs, "MAX_JOBS_PER_CLIENT", 2)
    slow = {"steps": 400, "delay": 0.05, "obey": True}
    href = client.get("/slow", params={**slow, "estimate": 20.0}).json()["href"]  # address "testclient"
    job_id = jobs.submit("slow", slow_steps, slow, client="testclient", estimate_s=20.0)
    with pytest.raises(jobs.JobRefused) as refused:
        jobs.submit("slow", slow_steps, slow, client="testclient", estimate_s=20.0)
    field, value, message = refused.value.problems[0]
    assert (field, value) == ("client", "testclient") and "at most 2" in message
    assert 1 <= refused.value.retry_after_s <= 20
    assert client.get("/slow", params={**slow, "estimate": 20.0}).status_code == 429  # the page's job counted
    assert jobs.job(job_id)["kind"] == "slow" and client.get(f"/api/jobs/{job_id}").status_code == 200
    while jobs.job(job_id)["state"] != "running":
        time.sleep(0.05)
    assert jobs.request_cancel(job_id)
    deadline = time.monotonic() + 10
    while jobs.job(job_id)["state"] != "cancelled" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert jobs.job(job_id)["state"] == "cancelled"
    assert not jobs.request_cancel(job_id)  # it has ended
    assert jobs.job("0" * 32) is None and not jobs.request_cancel("not-an-id")
    client.delete(href)


def test_a_view_job_answers_as_the_cli(monkeypatch):
    """web/jobrun.py's work in a job's process: the view's compute with its progress, the CLI's JSON."""
    from dtsim.interfaces.web import jobrun
    from dtsim.interfaces.web.formview import argv
    from dtsim.interfaces.web.views import sensitivity
    from tests.form_view_support import cli_json

    values = {f.name: f.default for f in sensitivity.fields()} | {"base": 8, "set": ["mfu=0.3..0.5"]}
    seen: list[float] = []
    answer = jobrun.view_job(seen.append, module=sensitivity.__name__, values=values, counted=True)
    assert answer == cli_json(["sensitivity", *argv(sensitivity.fields(), values)])
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > 1
    with pytest.raises(ValueError, match="not a web view"):
        jobrun.view_job(seen.append, module="os", values={}, counted=False)


class FakeClient:
    """A NiceGUI client as JobLatest uses it: its disconnect, delete and connect handlers."""

    def __init__(self) -> None:
        self.request = None
        self.handlers: dict[str, list] = {"disconnect": [], "delete": [], "connect": []}

    def on_disconnect(self, fn) -> None:
        self.handlers["disconnect"].append(fn)

    def on_delete(self, fn) -> None:
        self.handlers["delete"].append(fn)

    def on_connect(self, fn) -> None:
        self.handlers["connect"].append(fn)


class FakeProgress:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def start(self) -> None: ...

    def job(self, job_id: str) -> None: ...

    def update(self, rec: dict) -> None:
        self.records.append(rec)

    def stop(self) -> None: ...


def test_a_tab_closed_before_its_job_starts_submits_none(monkeypatch):
    """jobrun.JobLatest: the tab closes while the work's quick check (a thread) runs, before a job was
    submitted: no job is submitted at all (it would run unwatched, holding one of the client's job
    slots), nothing is shown, and a reconnect computes again."""
    from dtsim.interfaces.web import jobrun

    submitted: list[dict] = []

    def submit(kind, fn, kwargs, *, client, estimate_s):
        submitted.append(kwargs)
        return "f" * 32

    monkeypatch.setattr(jobs, "submit", submit)
    monkeypatch.setattr(jobs, "job", lambda job_id: {"state": "done", "progress": 1.0, "result": {"x": 1}})
    monkeypatch.setattr(jobs, "request_cancel", lambda job_id: True)
    checking, release = threading.Event(), threading.Event()

    def inline(values):
        checking.set()
        assert release.wait(10)
        return False  # not quick: a job

    shown, failed = [], []
    client = FakeClient()
    latest = jobrun.JobLatest(
        kind="slow",
        work=lambda values: pytest.fail("not quick: no in-process work"),
        args=lambda: ({"n": 1},),
        kwargs=lambda values: {"values": values},
        show=shown.append,
        fail=failed.append,
        progress=FakeProgress(),
        client=client,
        inline=inline,
    )

    async def scenario() -> None:
        task = asyncio.create_task(latest())
        while not checking.is_set():
            await asyncio.sleep(0.01)
        for fn in client.handlers["disconnect"]:
            fn()  # the tab closes during the quick check
        release.set()
        await asyncio.wait_for(task, 10)
        assert submitted == [] and shown == [] and failed == [] and not latest.running
        for fn in client.handlers["connect"]:
            await fn()  # the tab is back: computed again, as a job this time
        assert submitted == [{"values": {"n": 1}}] and shown == [({"x": 1}, {"n": 1})]

    asyncio.run(scenario())


def test_retry_after_leaves_out_jobs_whose_end_is_unknown(monkeypatch):
    """A web page's job (estimate 0) queued, or running without progress yet, says nothing about when a
    slot frees: it does not make Retry-After 1 s; with no job's end known the answer is the named default."""
    now = 1000.0
    monkeypatch.setattr(jobs, "_now", lambda: now)

    def rec(state: str, estimate: float, progress: float = 0.0, started: float | None = None) -> dict:
        return {"state": state, "estimate_s": estimate, "progress": progress, "started": started}

    web_queued, web_running = rec("queued", 0.0), rec("running", 0.0, started=now - 3)
    assert jobs._retry_after([web_queued, web_running]) == jobs.RETRY_AFTER_UNKNOWN_S > 1
    api_running = rec("running", 60.0, progress=0.25, started=now - 10)  # 30 s left
    assert jobs._retry_after([web_queued, web_running, api_running]) == 30
    assert jobs._retry_after([web_queued, rec("queued", 20.0)]) == 20
    assert jobs._retry_after([rec("running", 0.0, progress=0.5, started=now - 4)]) == 4  # its ETA


def test_a_newer_input_cancels_the_running_job_and_the_newest_is_shown(monkeypatch):
    """jobrun.JobLatest on viewkit.Latest's loop: an input while a job runs cancels that job (on_newer),
    the cancelled job's outcome is not said, and the newest inputs' job is shown; a job the limits
    refuse is said once, with when to retry."""
    from dtsim.interfaces.web import jobrun

    states: dict[str, str] = {}
    submitted: list[dict] = []
    cancelled: list[str] = []

    def submit(kind, fn, kwargs, *, client, estimate_s):
        if kwargs["values"]["n"] < 0:
            raise jobs.JobRefused([("client", client, "has 4 jobs queued or running")], 7)
        job_id = f"{len(submitted):032x}"
        submitted.append(kwargs["values"])
        states[job_id] = "running"
        return job_id

    def job(job_id):
        n = submitted[int(job_id, 16)]["n"]
        return {"state": states[job_id], "progress": 0.5, "eta_s": None, "result": {"n": n}}

    def request_cancel(job_id):
        cancelled.append(job_id)
        states[job_id] = "cancelled"
        return True

    monkeypatch.setattr(jobs, "submit", submit)
    monkeypatch.setattr(jobs, "job", job)
    monkeypatch.setattr(jobs, "request_cancel", request_cancel)
    inputs = {"n": 1}
    shown, failed = [], []
    latest = jobrun.JobLatest(
        kind="slow",
        work=lambda values: pytest.fail("no inline work"),
        args=lambda: (dict(inputs),),
        kwargs=lambda values: {"values": values},
        show=shown.append,
        fail=failed.append,
        progress=FakeProgress(),
        client=FakeClient(),
    )

    async def scenario() -> None:
        task = asyncio.create_task(latest())
        while not submitted:
            await asyncio.sleep(0.01)
        inputs["n"] = 2
        await latest()  # a newer input: the first job is cancelled
        assert cancelled == [f"{0:032x}"]
        while len(submitted) < 2:
            await asyncio.sleep(0.01)
        states[f"{1:032x}"] = "done"
        await asyncio.wait_for(task, 10)
        assert shown == [({"n": 2}, {"n": 2})] and failed == [] and not latest.running
        inputs["n"] = -1
        await latest()
        assert failed and "Retry in about 7 s" in failed[0] and "has 4 jobs" in failed[0]

    asyncio.run(scenario())


def test_asking_for_a_job_skips_the_probe_and_a_bad_input_fails_the_job_named(client):
    """A trial user's dashboard: `Prefer: respond-async` on /api/governance took 3–4 s to answer 202,
    the time of the estimate's probe (a real search in the server). It answers at once now; an input
    the work refuses is the job's error, named as a 422 would name it."""
    import time

    start = time.perf_counter()
    r = client.post("/api/governance", json={}, headers=ASYNC)
    took = time.perf_counter() - start
    assert r.status_code == 202, r.text
    assert took < 1.0, took  # the probe alone takes seconds on this machine
    client.delete(r.json()["href"])
    bad = client.post("/api/governance", json={"targets": [1e12]}, headers=ASYNC)
    assert bad.status_code == 202
    view = wait_state(client, bad.json()["href"], {"failed"})
    assert view["error"]["detail"][0]["field"] == "targets", view


def test_serve_stops_on_sigterm_with_a_long_request_in_progress():
    """A trial user's case: with a minute-long search in progress, SIGTERM made `dtsim serve` stop
    answering but not exit (only kill -9 stopped it). Requests in progress now get GRACEFUL_SHUTDOWN_S."""
    from dtsim.interfaces.cli.serving import GRACEFUL_SHUTDOWN_S
    from tests.web_support import start_server

    url, proc = start_server(90)
    # a governance analysis over every accelerator at the largest cap: its time estimate alone is a search
    # of seconds in the server, in progress when the server is told to stop
    body = json.dumps({"compute_cap": [1024], "memory_cap": None, "targets": [1e25]}).encode()
    request = urllib.request.Request(
        f"{url}/api/governance",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    threading.Thread(
        target=lambda: _ignore(urllib.request.urlopen, request, timeout=120), daemon=True
    ).start()
    time.sleep(2.0)
    proc.terminate()
    try:
        proc.wait(timeout=GRACEFUL_SHUTDOWN_S + 4)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("dtsim serve did not stop after SIGTERM with a request in progress")


def _ignore(fn, *args, **kw):
    import contextlib

    with contextlib.suppress(Exception):  # the server went away under it, as intended
        fn(*args, **kw)
