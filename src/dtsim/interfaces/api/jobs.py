"""Background jobs for the HTTP API: long work runs in a small pool of separate processes, reports its
progress, streams it as server-sent events and can be cancelled (issue 17 items 2 and 4).

An operation hands its work to `run(request, kind, fn, kwargs, estimate_s=…)`; the web page's long work
(web/jobrun.py) is started with `submit` and followed with `job`, `request_cancel` stopping it: the same
runner, store and limits. `fn` is a module-level
function `fn(progress, **kwargs) -> dict` (JSON values only); `progress(fraction)` reports 0–1 and raises
`JobCancelled` once the job was cancelled. Work estimated at JOB_THRESHOLD_S or less runs inline (in the
server's thread pool) and its result is the response, unless the request says `Prefer: respond-async`
(RFC 7240 §4.1); anything else becomes a job: 202 `{"id", "state", "href"}` with a Location header.

- `GET /api/jobs/{id}`: `{"id", "kind", "state", "progress", "eta_s", "result", "error", "created",
  "updated"}`, state one of queued, running, done, failed, cancelled; `error` is the API's error body
  (`{"detail": [{field, value, message}]}`) of a job whose input the model refused, or of a failure.
- `GET /api/jobs/{id}/events`: `text/event-stream`, one `progress` event per change of progress or
  state, then one event named after the final state (done, failed or cancelled) holding the whole job,
  and the stream ends.
- `DELETE /api/jobs/{id}`: asks the job to stop; 200 with the job once it has stopped, 202 while it is
  still stopping; a finished job is left as it is and the answer says so.

Jobs never run in the server's own processes (the GIL would slow every other request): each server
process keeps up to JOB_PROCESSES worker processes started with the "spawn" context (never fork a
process that has threads) and a supervisor thread that hands them jobs, watches for cancel markers and
terminates a job that ignores one. The state lives in a store that every `dtsim serve --workers N`
process sees: a directory (env DTSIM_JOBS_DIR, which `serve` sets to a fresh temporary directory and
removes at exit; otherwise a private temporary directory per process) of per-job JSON records written
atomically (os.replace), an append-only event log per job, a result file, and a `.cancel` marker file.
A job whose server process has gone is reported failed. Finished jobs expire JOB_TTL_S after they
end, and the store holds at most MAX_STORED_JOBS jobs.

Admission is bounded: MAX_JOBS_QUEUED jobs queued or running in all (every server process counted, under
a file lock) and MAX_JOBS_PER_CLIENT per client; app.py's RequestGuard lets one client have at most
MAX_REQUESTS_PER_CLIENT API requests in progress in one server process (inline work, event streams); past a limit the answer is 429 with Retry-After and a body naming the limit. A
client is the connection's remote address (behind a reverse proxy every client is the proxy).

The limits below are engineering choices for a small shared server, not model assumptions.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import fcntl
import json
import logging
import math
import multiprocessing
import os
import re
import shutil
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from multiprocessing.connection import wait as wait_connections
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from dtsim.errors import ScenarioError, problems_body

# --- limits (engineering choices, not model assumptions) -----------------------------------------------------
JOB_THRESHOLD_S = 1.0  # issue 17: "work longer than about a second runs as a job"
MAX_JOBS_QUEUED = 16  # queued + running jobs on the whole server (all worker processes)
MAX_JOBS_PER_CLIENT = 4  # queued + running jobs of one client
# requests of one client in progress at once in one server process (every /api operation, event streams
# included; app.py's RequestGuard enforces it): anyio's thread pool has 40 threads, so one client holding
# 24 leaves 16 for everyone else (and 16 keep-alive clients on one address still fit)
MAX_REQUESTS_PER_CLIENT = 24
JOB_PROCESSES = 2  # worker processes per server process (the machine's cores are shared with requests)
JOB_NICE = 10  # worker processes run at a lower CPU priority, so requests answered inline come first
JOB_TIME_LIMIT_S = 600.0  # a job running longer is stopped and reported failed
CANCEL_GRACE_S = 2.0  # a cancelled job that has not stopped by then is terminated
CANCEL_WAIT_S = 3.0  # DELETE waits this long for the job to stop before answering 202
JOB_TTL_S = 900.0  # a finished job is kept 15 minutes, then removed
MAX_STORED_JOBS = 256  # jobs in the store; the oldest finished go first
MAX_RESULT_BYTES = 16_000_000  # a larger result fails the job instead of filling the disk
RETRY_AFTER_BUSY_S = (
    1  # Retry-After past MAX_REQUESTS_PER_CLIENT (inline work takes at most ~JOB_THRESHOLD_S)
)
# Retry-After past a job limit when no active job's end can be estimated (the web page's jobs give no
# estimate: one queued or with no progress yet): most of the page's jobs end within seconds to a minute,
# and 1 s would invite a client to ask again every second
RETRY_AFTER_UNKNOWN_S = 10
PROGRESS_STEP = 0.01  # progress is recorded when it moved by at least this much
EVENT_POLL_S = 0.1  # how often the event stream and the supervisor look at the store
KEEPALIVE_S = 15.0  # an event stream sends a comment this often while nothing changes

STORE_ENV = "DTSIM_JOBS_DIR"
STATES = ("queued", "running", "done", "failed", "cancelled")
FINAL = frozenset({"done", "failed", "cancelled"})
ACTIVE = frozenset({"queued", "running"})
ID_PATTERN = re.compile(r"[0-9a-f]{32}")
INTERNAL_ERROR = "internal error; the details are in the server's log"
log = logging.getLogger("dtsim.api")


class JobCancelled(Exception):
    """Raised by `progress` once the job was cancelled: the work stops where it is."""


Progress = Callable[[float], None]


def _no_progress(fraction: float) -> None:
    """The progress callback of inline work: nothing watches it and nothing cancels it."""


def counted(progress: Progress) -> Callable[[int, int], None]:
    """A (done, total) callback, as the analyses call theirs, reporting done/total to `progress`."""
    return lambda done, total: progress(min(1.0, done / total) if total else 1.0)


# --- the store ---------------------------------------------------------------------------------------------

_private_store: Path | None = None
_private_lock = threading.Lock()


def store_dir() -> Path:
    """The jobs directory: $DTSIM_JOBS_DIR (set by `dtsim serve` for all its worker processes), else a
    temporary directory private to this process, removed at exit."""
    global _private_store
    env = os.environ.get(STORE_ENV)
    if env:
        path = Path(env)
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path
    with _private_lock:
        if _private_store is None:
            _private_store = Path(tempfile.mkdtemp(prefix="dtsim-jobs-"))
            atexit.register(shutil.rmtree, _private_store, ignore_errors=True)
        return _private_store


def _now() -> float:
    return time.time()


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _record_path(store: Path, job_id: str) -> Path:
    return store / f"{job_id}.json"


def _read_record(store: Path, job_id: str) -> dict[str, Any] | None:
    try:
        return json.loads(_record_path(store, job_id).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _append_event(store: Path, rec: dict[str, Any]) -> None:
    line = json.dumps({"state": rec["state"], "progress": rec["progress"], "updated": rec["updated"]})
    with open(store / f"{rec['id']}.events", "a", encoding="utf-8") as f:
        f.write(line + "\n")


def _save(store: Path, rec: dict[str, Any]) -> None:
    """Write the record (atomically) and log the change for the event streams."""
    rec["updated"] = _now()
    _write_atomic(_record_path(store, rec["id"]), json.dumps(rec))
    _append_event(store, rec)


def _finish(store: Path, job_id: str, state: str, error: dict | None = None, only_if_active: bool = False):
    rec = _read_record(store, job_id)
    if rec is None or (only_if_active and rec["state"] in FINAL):
        return
    rec.update(state=state, error=error)
    if state == "done":
        rec["progress"] = 1.0
    _save(store, rec)


def alive(pid: int | None) -> bool:
    """Whether process `pid` still runs: it exists (another user's counts) and is not a zombie (exited,
    not yet reaped)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return not Path("/proc/self").exists()  # no /proc (not Linux): kill(pid, 0) is all we know


def _effective(rec: dict[str, Any]) -> dict[str, Any]:
    """The record as it stands: an active job whose server process has ended is failed."""
    if rec["state"] in ACTIVE and not alive(rec.get("owner_pid")):
        rec = dict(rec, state="failed")
        rec["error"] = problems_body([("job", rec["id"], "the server process that ran it has ended")])
    return rec


def _eta(rec: dict[str, Any], at: float | None = None) -> float | None:
    """Seconds left as of `at` (now by default): elapsed × (1 − p)/p once there is progress, before that
    what is left of the estimate; None unless running."""
    if rec["state"] != "running" or rec.get("started") is None:
        return None
    elapsed = max((_now() if at is None else at) - rec["started"], 0.0)
    p = rec["progress"]
    if p > 0:
        return elapsed * (1 - p) / p
    left = rec["estimate_s"] - elapsed
    return left if left > 0 else None


def _view(store: Path, rec: dict[str, Any]) -> dict[str, Any]:
    rec = _effective(rec)
    result = None
    if rec["state"] == "done":
        try:
            result = json.loads((store / f"{rec['id']}.result").read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            result = None
    return {
        "id": rec["id"],
        "kind": rec["kind"],
        "state": rec["state"],
        "progress": rec["progress"],
        "eta_s": _eta(rec),
        "result": result,
        "error": rec.get("error"),
        "created": _iso(rec["created"]),
        "updated": _iso(rec["updated"]),
    }


def _remove(store: Path, job_id: str) -> None:
    for suffix in (".json", ".events", ".result", ".cancel"):
        with contextlib.suppress(FileNotFoundError):
            (store / f"{job_id}{suffix}").unlink()


def _records(store: Path) -> list[dict[str, Any]]:
    out = []
    for path in store.glob("*.json"):
        rec = _read_record(store, path.stem)
        if rec is not None:
            out.append(_effective(rec))
    return out


def _expire(store: Path, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Remove finished jobs older than JOB_TTL_S, then the oldest finished ones past MAX_STORED_JOBS;
    the jobs that remain."""
    now = _now()
    kept = []
    for rec in records:
        if rec["state"] in FINAL and now - rec["updated"] > JOB_TTL_S:
            _remove(store, rec["id"])
        else:
            kept.append(rec)
    finished = sorted((r for r in kept if r["state"] in FINAL), key=lambda r: r["updated"])
    while len(kept) > MAX_STORED_JOBS - 1 and finished:
        old = finished.pop(0)
        _remove(store, old["id"])
        kept.remove(old)
    return kept


@contextlib.contextmanager
def _locked(store: Path) -> Iterator[None]:
    with open(store / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# --- the worker processes ---------------------------------------------------------------------------------


class _Reporter:
    """The `progress` callback a job's function gets in its worker process."""

    def __init__(self, store: Path, job_id: str, rec: dict[str, Any]):
        self.store, self.job_id, self.rec = store, job_id, rec
        self.marker = store / f"{job_id}.cancel"

    def __call__(self, fraction: float) -> None:
        if self.marker.exists():
            raise JobCancelled(self.job_id)
        f = float(fraction)
        if not 0.0 <= f <= 1.0:
            raise ValueError(f"progress must be a fraction 0–1, got {fraction!r}")
        if f - self.rec["progress"] >= PROGRESS_STEP:
            self.rec["progress"] = f
            _save(self.store, self.rec)


def _execute(store: Path, job_id: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    rec = _read_record(store, job_id)
    if rec is None or rec["state"] != "queued":
        return
    if (store / f"{job_id}.cancel").exists():
        _finish(store, job_id, "cancelled")
        return
    rec.update(state="running", started=_now(), worker_pid=os.getpid())
    _save(store, rec)
    try:
        result = fn(_Reporter(store, job_id, rec), **kwargs)
        text = json.dumps(result, allow_nan=False)
        if len(text) > MAX_RESULT_BYTES:
            raise ScenarioError(
                [("result", f"{len(text):,} bytes", f"a job's result holds at most {MAX_RESULT_BYTES:,}")]
            )
    except JobCancelled:
        _finish(store, job_id, "cancelled")
        return
    except ScenarioError as exc:
        _finish(store, job_id, "failed", problems_body(exc.problems))
        return
    except Exception:
        log.error("job %s (%s) failed:\n%s", job_id, rec["kind"], traceback.format_exc())
        _finish(store, job_id, "failed", problems_body([("server", None, INTERNAL_ERROR)]))
        return
    _write_atomic(store / f"{job_id}.result", text)
    _finish(store, job_id, "done")


def _worker_main(conn: Any) -> None:
    """A worker process: run the jobs its server process sends, one at a time, until the pipe closes."""
    logging.basicConfig(level=logging.WARNING)
    with contextlib.suppress(OSError):
        os.nice(JOB_NICE)
    while True:
        try:
            store, job_id, fn, kwargs = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        _execute(Path(store), job_id, fn, kwargs)
        try:
            conn.send(job_id)
        except OSError:
            return


class _Worker:
    """One worker process ("spawn": a fresh interpreter, never a fork of the threaded server) and the
    job it runs."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.job: str | None = None
        self.store = Path()
        self.started = 0.0
        self.cancel_seen: float | None = None

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(1.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1.0)
        self.conn.close()


Pending = tuple[Path, str, Callable[..., Any], dict[str, Any]]


class _Runner:
    """This server process's worker processes and the thread that supervises them: it hands queued jobs
    to idle workers, notices a job's end, terminates a job that ignores its cancel marker for
    CANCEL_GRACE_S or runs past JOB_TIME_LIMIT_S, and reports a worker that died as the job's failure."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: collections.deque[Pending] = collections.deque()
        self.workers: list[_Worker] = []
        self.thread: threading.Thread | None = None
        self.wake = threading.Event()
        self.pid = os.getpid()

    def submit(self, store: Path, job_id: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        with self.lock:
            self.pending.append((store, job_id, fn, kwargs))
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="dtsim-jobs", daemon=True)
                self.thread.start()
        self.wake.set()

    def shutdown(self) -> None:
        with self.lock:
            workers, self.workers = self.workers, []
        for w in workers:
            w.stop()

    def _loop(self) -> None:
        while True:
            try:
                self._tick()
            except Exception:  # the supervisor must outlive any one job's trouble
                log.exception("jobs supervisor")
            conns = [w.conn for w in self.workers if w.job is not None]
            if conns:
                wait_connections(conns, timeout=EVENT_POLL_S)
            else:
                self.wake.wait(EVENT_POLL_S)
                self.wake.clear()

    def _tick(self) -> None:
        now = time.monotonic()
        for w in list(self.workers):
            if w.job is None:
                continue
            if w.conn.poll():
                try:
                    w.conn.recv()
                except (EOFError, OSError):
                    self._lost(w, "the job's process ended unexpectedly")
                    continue
                w.job = None
                continue
            if not w.process.is_alive():
                self._lost(w, f"the job's process ended unexpectedly (exit code {w.process.exitcode})")
                continue
            if (w.store / f"{w.job}.cancel").exists():
                w.cancel_seen = w.cancel_seen or now
                if now - w.cancel_seen > CANCEL_GRACE_S:  # it ignores the marker: stop its process
                    store, job = w.store, w.job
                    self._drop(w)
                    _finish(store, job, "cancelled", only_if_active=True)
                    continue
            if now - w.started > JOB_TIME_LIMIT_S:
                store, job = w.store, w.job
                self._drop(w)
                problem = ("job", job, f"ran past the time limit of {JOB_TIME_LIMIT_S:g} s and was stopped")
                _finish(store, job, "failed", problems_body([problem]), only_if_active=True)
        with self.lock:
            waiting = list(self.pending)
        for item in waiting:
            store, job_id, _fn, _kwargs = item
            if (store / f"{job_id}.cancel").exists():
                with self.lock:
                    self.pending.remove(item)
                _finish(store, job_id, "cancelled", only_if_active=True)
                continue
            worker = self._idle()
            if worker is None:
                continue
            with self.lock:
                self.pending.remove(item)
            worker.job, worker.store, worker.started, worker.cancel_seen = (
                job_id,
                store,
                time.monotonic(),
                None,
            )
            try:
                worker.conn.send(item)
            except Exception as exc:  # e.g. an argument that cannot be pickled
                log.error("job %s could not be sent to a worker process: %r", job_id, exc)
                worker.job = None
                _finish(store, job_id, "failed", problems_body([("server", None, INTERNAL_ERROR)]))

    def _idle(self) -> _Worker | None:
        for w in self.workers:
            if w.job is None:
                return w
        if len(self.workers) < JOB_PROCESSES:
            w = _Worker()
            with self.lock:
                self.workers.append(w)
            return w
        return None

    def _drop(self, w: _Worker) -> None:
        w.stop()
        with self.lock:
            if w in self.workers:
                self.workers.remove(w)

    def _lost(self, w: _Worker, message: str) -> None:
        store, job = w.store, w.job
        self._drop(w)
        if job is not None:
            _finish(store, job, "failed", problems_body([("job", job, message)]), only_if_active=True)


_runner_lock = threading.Lock()
_runner: _Runner | None = None


def _get_runner() -> _Runner:
    global _runner
    with _runner_lock:
        if _runner is None or _runner.pid != os.getpid():
            _runner = _Runner()
            atexit.register(_runner.shutdown)
        return _runner


def worker_pid(job_id: str) -> int | None:
    """The id of the worker process that runs (or ran) a job, from the store; None before it starts."""
    rec = _read_record(store_dir(), job_id)
    return None if rec is None else rec.get("worker_pid")


# --- admission and the operations ------------------------------------------------------------------------


def _problem_response(
    status: int, problems: list[tuple[str, Any, str]], headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(status_code=status, content=problems_body(problems), headers=headers)


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def prefers_async(request: Request) -> bool:
    """Whether a Prefer header (RFC 7240) asks for `respond-async`: comma-separated preferences, each a
    token with optional `;`-parameters, names case-insensitive."""
    for value in request.headers.getlist("prefer"):
        for pref in value.split(","):
            name = pref.split(";", 1)[0].split("=", 1)[0].strip().lower()
            if name == "respond-async":
                return True
    return False


def _retry_after(records: list[dict[str, Any]]) -> int:
    """Seconds until the first of these jobs is likely to end: its ETA, or its estimate while queued;
    jobs whose end is unknown (no estimate, no progress yet) are left out, and when none is left
    RETRY_AFTER_UNKNOWN_S."""
    waits = []
    for rec in records:
        eta = _eta(rec)
        wait = eta if eta is not None else rec["estimate_s"]
        if wait > 0:
            waits.append(wait)
    return max(1, math.ceil(min(waits))) if waits else RETRY_AFTER_UNKNOWN_S


class JobRefused(Exception):
    """A job the limits do not admit now: `problems` name the limit (the 429 body), `retry_after_s` says
    when to try again."""

    def __init__(self, problems: list[tuple[str, Any, str]], retry_after_s: int) -> None:
        super().__init__(problems)
        self.problems, self.retry_after_s = problems, retry_after_s


def _admit(store: Path, kind: str, client: str, estimate_s: float) -> dict[str, Any]:
    """A new queued job's record, or JobRefused past MAX_JOBS_QUEUED or MAX_JOBS_PER_CLIENT."""
    with _locked(store):
        active = [r for r in _expire(store, _records(store)) if r["state"] in ACTIVE]
        if len(active) >= MAX_JOBS_QUEUED:
            raise JobRefused(
                [
                    (
                        "jobs",
                        len(active),
                        f"the server runs or queues at most {MAX_JOBS_QUEUED} jobs at once; retry later",
                    )
                ],
                _retry_after(active),
            )
        mine = [r for r in active if r["client"] == client]
        if len(mine) >= MAX_JOBS_PER_CLIENT:
            raise JobRefused(
                [
                    (
                        "client",
                        client,
                        f"has {len(mine)} jobs queued or running; one client may have at most "
                        f"{MAX_JOBS_PER_CLIENT}: wait for one to end or cancel it",
                    )
                ],
                _retry_after(mine),
            )
        now = _now()
        rec = {
            "id": uuid.uuid4().hex,
            "kind": kind,
            "state": "queued",
            "progress": 0.0,
            "estimate_s": float(estimate_s),
            "created": now,
            "updated": now,
            "started": None,
            "error": None,
            "client": client,
            "owner_pid": os.getpid(),
            "worker_pid": None,
        }
        _save(store, rec)
        return rec


def submit(
    kind: str, fn: Callable[..., Any], kwargs: dict[str, Any], *, client: str, estimate_s: float
) -> str:
    """Queue `fn(progress, **kwargs)` as a job of `client` (its remote address) on this server process's
    workers and return its id, or raise JobRefused past the limits. The API's operations (`run`) and the
    web page's long work (web/jobrun.py) both start their jobs here: one runner, one set of limits."""
    store = store_dir()
    rec = _admit(store, kind, client, estimate_s)
    _get_runner().submit(store, rec["id"], fn, kwargs)
    return rec["id"]


def job(job_id: str) -> dict[str, Any] | None:
    """A job as GET /api/jobs/{id} answers it (state, progress, eta_s, result, error), or None when there
    is no such job (or it expired)."""
    found = _find(job_id)
    return None if found is None else _view(*found)


def request_cancel(job_id: str) -> bool:
    """Ask a queued or running job to stop (its cancel marker; the supervisor terminates a job that
    ignores it): False when there is no such job or it has already ended."""
    found = _find(job_id)
    return found is not None and _ask_cancel(*found)["state"] not in FINAL


async def run(
    request: Request, kind: str, fn: Callable[..., Any], kwargs: dict[str, Any], *, estimate_s: float
) -> Any:
    """Run `fn(progress, **kwargs)` inline and return its result when it is estimated to take at most
    JOB_THRESHOLD_S and the request does not prefer respond-async; otherwise start a job and answer 202
    with its id and address. 429 (Retry-After) past the job limits (the requests one client may have
    in progress are bounded for every API operation by app.py's RequestGuard)."""
    client = _client(request)
    asked_async = prefers_async(request)
    if estimate_s <= JOB_THRESHOLD_S and not asked_async:
        return await run_in_threadpool(fn, _no_progress, **kwargs)
    try:
        job_id = await run_in_threadpool(submit, kind, fn, kwargs, client=client, estimate_s=estimate_s)
    except JobRefused as exc:
        return _problem_response(429, exc.problems, {"Retry-After": str(exc.retry_after_s)})
    href = f"/api/jobs/{job_id}"
    headers = {"Location": href}
    if asked_async:
        headers["Preference-Applied"] = "respond-async"
    return JSONResponse(
        status_code=202, content={"id": job_id, "state": "queued", "href": href}, headers=headers
    )


class JobAccepted(BaseModel):
    id: str = Field(description="The job's id.")
    state: Literal["queued"] = Field(description="A new job is queued.")
    href: str = Field(
        description="Where to follow it: GET for its state, /events for a stream, DELETE to cancel."
    )


class JobView(BaseModel):
    id: str
    kind: str = Field(description="The operation, e.g. sensitivity.")
    state: Literal["queued", "running", "done", "failed", "cancelled"]
    progress: float = Field(ge=0, le=1, description="Fraction done, 0–1.")
    eta_s: float | None = Field(description="Seconds left, estimated while it runs; null otherwise.")
    result: Any = Field(None, description="The operation's response body, once done.")
    error: dict[str, Any] | None = Field(
        None, description="Why it failed: the API's error body {detail: [{field, value, message}]}."
    )
    created: str = Field(description="When it was submitted (ISO 8601, UTC).")
    updated: str = Field(description="Its last change (ISO 8601, UTC).")


class JobCancel(JobView):
    message: str = Field(description="What the cancel did.")


JobId = Annotated[
    str, PathParam(description="The id a 202 answer gave.", examples=["3f2b9c0e6d5a4b1c8e7f6a5b4c3d2e1f"])
]


def _find(job_id: str) -> tuple[Path, dict[str, Any]] | None:
    """The store and the job's record, or None when there is no such job (or it expired)."""
    store = store_dir()
    rec = _read_record(store, job_id) if ID_PATTERN.fullmatch(job_id) else None
    if rec is not None and rec["state"] in FINAL and _now() - rec["updated"] > JOB_TTL_S:
        _remove(store, job_id)  # expired: gone now, not at the next job's admission
        rec = None
    return None if rec is None else (store, rec)


def _not_found(job_id: str) -> JSONResponse:
    return _problem_response(
        404, [("id", job_id, f"no such job; jobs are kept {JOB_TTL_S / 60:g} minutes after they end")]
    )


def _lookup(job_id: str) -> tuple[Path, dict[str, Any]] | JSONResponse:
    found = _find(job_id)
    return _not_found(job_id) if found is None else found


def _ask_cancel(store: Path, rec: dict[str, Any]) -> dict[str, Any]:
    """Leave the cancel marker of a queued or running job (its work stops at its next progress report;
    the supervisor terminates one that ignores it); the job's view as it stood (a finished job is left
    as it is)."""
    view = _view(store, rec)
    if view["state"] not in FINAL:
        (store / f"{rec['id']}.cancel").touch()
    return view


async def get_job(job_id: JobId) -> Any:
    """The job's state, progress, ETA and, once done, its result."""
    view = await run_in_threadpool(job, job_id)
    return _not_found(job_id) if view is None else view


async def cancel_job(job_id: JobId) -> Any:
    """Cancel a queued or running job (200 once stopped, 202 while stopping); a finished job stays as it is."""
    found = _lookup(job_id)
    if isinstance(found, JSONResponse):
        return found
    store, rec = found
    view = _ask_cancel(store, rec)
    if view["state"] in FINAL:
        return JobCancel(**view, message=f"the job had already ended ({view['state']}); nothing to cancel")
    deadline = time.monotonic() + CANCEL_WAIT_S
    while time.monotonic() < deadline:
        await asyncio.sleep(EVENT_POLL_S)
        rec = _read_record(store, job_id) or rec
        view = _view(store, rec)
        if view["state"] in FINAL:
            break
    if view["state"] == "cancelled":
        return JobCancel(**view, message="cancelled")
    if view["state"] in FINAL:  # it ended on its own before it saw the request
        return JobCancel(**view, message=f"the job ended ({view['state']}) before it could be cancelled")
    body = JobCancel(**view, message="cancellation requested; the job is stopping")
    return JSONResponse(status_code=202, content=body.model_dump())


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, allow_nan=False)}\n\n"


async def job_events(job_id: JobId, request: Request) -> Any:
    """Server-sent events: `progress` per change ({state, progress, eta_s, updated}), then one event
    named after the final state holding the whole job."""
    found = _lookup(job_id)
    if isinstance(found, JSONResponse):
        return found
    store, _rec = found

    async def stream():
        offset, quiet_since = 0, time.monotonic()
        log_path = store / f"{job_id}.events"
        while True:
            try:
                with open(log_path, encoding="utf-8") as f:
                    f.seek(offset)
                    chunk = f.read()
            except FileNotFoundError:
                return  # the job expired
            complete = chunk[: chunk.rfind("\n") + 1]
            offset += len(complete.encode("utf-8"))
            rec = _read_record(store, job_id)  # once a tick, read after the events it may explain
            if rec is None:
                return
            for line in complete.splitlines():
                ev = json.loads(line)
                if ev["state"] in ACTIVE:
                    eta = _eta(dict(rec, **ev), at=ev["updated"])
                    yield _sse("progress", {**ev, "eta_s": eta, "updated": _iso(ev["updated"])})
                    quiet_since = time.monotonic()
            view = _view(store, rec)
            if view["state"] in FINAL:
                yield _sse(view["state"], view)
                return
            if await request.is_disconnected():
                return
            if time.monotonic() - quiet_since > KEEPALIVE_S:
                yield ": keep-alive\n\n"
                quiet_since = time.monotonic()
            await asyncio.sleep(EVENT_POLL_S)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


# Responses an operation that may become a job documents (with the API's ErrorBody model for 429).
def job_responses(error_model: type) -> dict[int | str, dict[str, Any]]:
    return {
        202: {
            "model": JobAccepted,
            "description": f"Accepted as a background job (work estimated over {JOB_THRESHOLD_S:g} s, or the "
            "request said `Prefer: respond-async`): follow its href (GET /api/jobs/{id}).",
        },
        429: {
            "model": error_model,
            "description": f"Too many at once: {MAX_JOBS_QUEUED} jobs on the server, {MAX_JOBS_PER_CLIENT} "
            f"per client, or {MAX_REQUESTS_PER_CLIENT} requests of one client in progress at once. Retry-After "
            "says when to retry.",
        },
    }


def register(router: APIRouter, responses: dict[int | str, dict[str, Any]], error_model: type) -> None:
    """GET /jobs/{id}, GET /jobs/{id}/events, DELETE /jobs/{id} on `router`."""
    missing = {404: {"model": error_model, "description": "No such job (or it expired)."}}
    tags = ["jobs"]
    router.get(
        "/jobs/{job_id}",
        response_model=JobView,
        responses={**responses, **missing},
        tags=tags,
        summary="A job's state, progress and result",
    )(get_job)
    router.get(
        "/jobs/{job_id}/events",
        responses={
            **responses,
            **missing,
            200: {
                "content": {"text/event-stream": {}},
                "description": "progress events, then the final state",
            },
        },
        tags=tags,
        summary="A job's progress as server-sent events",
    )(job_events)
    router.delete(
        "/jobs/{job_id}",
        response_model=JobCancel,
        responses={
            **responses,
            **missing,
            202: {"model": JobCancel, "description": "Cancellation requested; still stopping."},
        },
        tags=tags,
        summary="Cancel a job",
    )(cancel_job)
