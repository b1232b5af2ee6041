"""A web view's long work as one of the API's jobs (api/jobs.py: worker processes at nice 10, progress,
eta_s, cancel, the bounded queue and the per-client limits), never in the server's own process.

`JobLatest` is viewkit.Latest for such work: the view's inputs are submitted with `jobs.submit` (the
same runner and limits as POST /api/...: a job of the browser's address), the job's record is read
every POLL_S and shown by `JobProgress` (a progress bar with the fraction done and the job's eta_s),
and the result is shown when the job is done, its error body in the error card when it failed. A newer
input cancels the running job (the next starts once it has stopped, so a view holds at most one job);
closing the tab (the NiceGUI client's disconnect) cancels it too, and a tab that reconnects computes
again. A job the limits refuse is said in the error card (which limit, when to retry), never a hang.
Work a view says is quick (`inline(values)`: single-scenario answers, ~100 ms) runs in-process as
before. `ui` is NiceGUI's module, passed in by the caller.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import Callable
from typing import Any

from dtsim.errors import ScenarioError, format_problem
from dtsim.interfaces.api import jobs
from dtsim.interfaces.web.viewkit import INTERNAL_ERROR, Latest

log = logging.getLogger("dtsim.web")
POLL_S = 0.1  # how often the page reads its job's record (the store's own event poll)
VIEWS = "dtsim.interfaces.web.views."


def view_job(progress: jobs.Progress, *, module: str, values: dict[str, Any], counted: bool) -> Any:
    """A job's work (in a worker process): the view module's `compute(values)`, the same call the CLI's
    `--json` makes, with `progress=` a (done, total) callback when the view's compute takes one; the
    answer as strict JSON values (what the page's hidden result JSON holds)."""
    from dtsim.interfaces.operations import json_ready

    if not module.startswith(VIEWS):
        raise ValueError(f"not a web view: {module}")
    compute = importlib.import_module(module).compute
    answer = compute(values, progress=jobs.counted(progress)) if counted else compute(values)
    return json_ready(answer)


def refused_text(exc: jobs.JobRefused) -> str:
    said = "; ".join(format_problem(*p) for p in exc.problems)
    return (
        f"Not computed: the server is busy ({said}). Retry in about {exc.retry_after_s} s: change an input "
        "or reload the page."
    )


def failure(error: dict[str, Any] | None) -> ScenarioError | str:
    """A failed job's error body ({detail: [{field, value, message}]}) as the error card says it."""
    detail = (error or {}).get("detail") or []
    problems = [(str(d.get("field")), d.get("value"), str(d.get("message"))) for d in detail]
    return ScenarioError(problems) if problems else INTERNAL_ERROR


class JobProgress:
    """The running work: a line saying what it does (data-testid=busy: queued, the share done and the
    seconds left, or the time it has run) over a progress bar (data-testid=job-progress, its
    data-fraction and data-job the job's progress and id; indeterminate while nothing is known)."""

    def __init__(self, ui: Any) -> None:
        self.ui = ui
        with ui.column().classes("w-full gap-1") as self.box:
            self.label = ui.label("computing…").props("data-testid=busy")
            self.bar = ui.linear_progress(value=0.0, show_value=False).props(
                "data-testid=job-progress instant-feedback"
            )
        self.box.visible = False
        self.started = 0.0
        self.shown: tuple[float, str] | None = None  # the (fraction, state) the bar shows

    def start(self) -> None:
        self.started = time.perf_counter()
        self.shown = None
        self.label.text = "computing…"
        self.bar.props("indeterminate data-fraction=0 data-state=starting")
        self.bar.props(remove="data-job")
        self.box.visible = True

    def job(self, job_id: str) -> None:
        self.bar.props(f"data-job={job_id}")

    def update(self, rec: dict[str, Any]) -> None:
        """Show a job's record (GET /api/jobs/{id})."""
        f, state, eta = float(rec["progress"]), rec["state"], rec.get("eta_s")
        elapsed = time.perf_counter() - self.started
        if state == "queued":
            text = f"queued, waiting for a worker… {elapsed:.0f} s"
        elif state == "running" and f > 0:
            left = "" if eta is None else f", about {eta:.0f} s left"
            text = f"computing… {f:.0%} done{left}"
        else:
            text = f"computing… {elapsed:.0f} s"
        self.label.text = text  # sent to the browser only when it changed
        if (f, state) != self.shown:  # the bar's props: likewise
            self.shown = (f, state)
            self.bar.value = f
            if f > 0:
                self.bar.props(remove="indeterminate")
            self.bar.props(f"data-fraction={f:g} data-state={state}")

    def stop(self) -> None:
        self.box.visible = False


class JobLatest(Latest):
    """Compute a view for its latest inputs only, as viewkit.Latest does (its loop: newest inputs win,
    problems said in the error card), the long work as an API job: `run` submits it and follows it,
    `on_newer` cancels it. `args()` gives the inputs (one dict); `kwargs(values)` the job's keyword
    arguments for `view_job`; `inline(values)` (optional, called in a thread) whether the work is quick
    enough to run in this process as `work(values)`. `show(result)` gets `(answer, values)`;
    `fail(ScenarioError | text)` a problem. `client` is the NiceGUI client: its disconnect cancels the
    job."""

    def __init__(
        self,
        *,
        kind: str,
        work: Callable[[dict[str, Any]], Any],
        args: Callable[[], tuple[Any, ...]],
        kwargs: Callable[[dict[str, Any]], dict[str, Any]],
        show: Callable[[Any], None],
        fail: Callable[[ScenarioError | str], None],
        progress: JobProgress,
        client: Any,
        inline: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        super().__init__(work, args, show, fail, busy=progress)
        self.name = kind
        self.kind, self.kwargs, self.progress, self.inline = kind, kwargs, progress, inline
        self.job_id: str | None = None
        self.lost = False  # the tab disconnected while the work ran: it stops; compute on reconnect
        request = getattr(client, "request", None) if client is not None else None
        self.client = request.client.host if request is not None and request.client else "unknown"
        if client is not None:
            client.on_disconnect(self.disconnected)
            client.on_delete(self.disconnected)
            client.on_connect(self.reconnected)

    def cancel(self) -> None:
        if self.job_id is not None:
            jobs.request_cancel(self.job_id)

    def on_newer(self) -> None:
        self.cancel()  # a newer input: the running job is no longer wanted

    def disconnected(self) -> None:
        """The tab closed (or lost its connection): nothing waits for the work any more. A job under way
        is cancelled; work still deciding whether it is quick, or about to submit, stops before it
        submits one (`run` sees `lost`)."""
        if self.running:
            self.lost = True
            self.cancel()

    async def reconnected(self) -> None:
        """The tab is back (a dropped connection): the inputs its cancelled job had are computed again,
        once that job has stopped."""
        if not self.lost:
            return
        self.lost = False
        if self.running:
            self.pending = True
        else:
            await self()

    async def __call__(self) -> None:
        if not self.running:
            self.lost = False  # a new run, for a tab that is here
        await super().__call__()

    async def run(self, values: dict[str, Any]) -> Any:
        """Quick inputs: `work(values)` in a thread. Others: a job, followed to its end; its answer and
        the inputs, or None once the outcome is said (a failure, a cancel, a refusal) or nobody waits."""
        from nicegui import run

        if self.lost:  # the tab closed: no quick check, no job for nobody
            return None
        if self.inline is not None and await run.io_bound(self._quick, values):
            return await run.io_bound(self.work, values)
        try:
            rec = await self._run_job(values)
        except jobs.JobRefused as exc:
            self.pending = False  # a newer input is not submitted now: it would be refused as well
            self.fail(refused_text(exc))
            return None
        if self.pending or rec is None or self.lost:
            return None  # a newer input (computed next), a job that vanished, or a closed tab
        if rec["state"] == "done":
            return rec["result"], values
        if rec["state"] == "failed":
            self.fail(failure(rec.get("error")))
        else:
            self.fail("The computation was cancelled; change an input to run it again.")
        return None

    def _quick(self, values: dict[str, Any]) -> bool:
        try:
            return bool(self.inline(values)) if self.inline is not None else False
        except ScenarioError:
            return True  # the inputs are refused: the work says so at once, in-process

    async def _run_job(self, values: dict[str, Any]) -> dict[str, Any] | None:
        """Submit the job and follow it to its end (cancelled when a newer input or the tab's close asks);
        its final record, or None when it vanished (or the server is stopping)."""
        from nicegui import run

        if self.lost:  # the tab closed while the quick check ran
            return None
        job_id = await run.io_bound(
            jobs.submit, self.kind, view_job, self.kwargs(values), client=self.client, estimate_s=0.0
        )
        if job_id is None:  # the server is stopping
            return None
        self.job_id = job_id
        try:
            self.progress.job(job_id)
            if self.pending or self.lost:
                jobs.request_cancel(job_id)
            while True:
                rec = await run.io_bound(jobs.job, job_id)
                if rec is None or rec["state"] in jobs.FINAL:
                    if rec is not None and not self.lost:
                        self.progress.update(rec)
                    return rec
                if not self.lost:
                    self.progress.update(rec)
                await asyncio.sleep(POLL_S)
        finally:
            self.job_id = None
