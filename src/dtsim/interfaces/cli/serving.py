"""`dtsim serve`'s running part: checks the address, gives every worker process one jobs store, starts
uvicorn (one process, or N worker processes importing the app factory by name), prints the URL once
the socket accepts connections, and warns when the server is reachable beyond this machine."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

import typer

from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.common import err, fail

MAX_WORKERS = 64  # engineering choice: far more than a one-machine server has cores for
LISTEN_WAIT_S = 120.0  # how long the URL waits for the socket to accept before giving up silently


# SIGTERM lets requests in progress finish for this long, then stops: a search of a minute used to hold
# the server past its SIGTERM (it stopped answering but ran on until killed)
GRACEFUL_SHUTDOWN_S = 5


def loopback_only(host: str, port: int) -> bool:
    """Whether every address `host` resolves to is a loopback address (127.0.0.0/8, ::1)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return all(ipaddress.ip_address(info[4][0].split("%", 1)[0]).is_loopback for info in infos)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _local_address(host: str) -> str:
    """Where this machine reaches the server: the address itself, or loopback for a wildcard bind."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if ip.is_unspecified:
        return "::1" if ip.version == 6 else "127.0.0.1"
    return host


def _announce(host: str, port: int, workers: int, stop: threading.Event) -> None:
    """Print the URL once the socket accepts a connection (uvicorn is listening)."""
    target = _local_address(host)
    deadline = time.monotonic() + LISTEN_WAIT_S
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            with socket.create_connection((target, port), timeout=1.0):
                break
        except OSError:
            time.sleep(0.1)
    else:
        return
    base = f"http://{_url_host(host)}:{port}/"
    lines = [f"dtsim is serving at {base} (API docs: {base}docs)"]
    if target != host:
        lines.append(f"  on every interface; from this machine: http://{_url_host(target)}:{port}/")
    if workers > 1:
        lines.append(
            f"  {workers} worker processes: the HTTP API only; the web UI needs --workers 1 (its live "
            "connection must reach the process that built the page)"
        )
    print("\n".join(lines), flush=True)


def _bind_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port (another process holds it, no permission), tried
    before uvicorn starts: the URL is announced when a connection succeeds, and with the port already
    taken that connection reached the other process, so "serving at" printed above uvicorn's error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        return f"cannot be resolved ({exc})"
    for family, kind, proto, _, addr in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            try:
                sock.bind(addr)
            except OSError as exc:
                return exc.strerror or str(exc)
    return None


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _exit_now(code: int) -> None:
    """Leave on SIGTERM without waiting for page computations still running in NiceGUI's threads (the
    interpreter would join them at exit, so one long analysis kept a stopped server alive for minutes):
    the atexit handlers run first (jobs' worker processes are stopped, stores removed), then the process
    ends."""
    import atexit

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_server(host: str, port: int, workers: int) -> None:
    if not 1 <= port <= 65535:  # uvicorn took 99999 as 34463 (mod 65536) and -1 as a crash
        fail(ScenarioError([("--port", port, "must be a TCP port, 1–65535")]))
    if not 1 <= workers <= MAX_WORKERS:
        fail(ScenarioError([("--workers", workers, f"must be a whole number of processes, 1–{MAX_WORKERS}")]))
    try:
        local = loopback_only(host, port)
    except (OSError, UnicodeError, ValueError) as exc:
        fail(ScenarioError([("--host", host, f"cannot be resolved to an address to bind ({exc})")]))
    try:
        import uvicorn

        from dtsim.interfaces.api.app import create_app, settle_heap
        from dtsim.interfaces.api.jobs import STORE_ENV
    except ImportError as exc:
        err.print(
            f"[bold red]error:[/bold red] dtsim serve needs the web extra: pip install 'dtsim\\[web]' ({exc.name})"
        )
        raise typer.Exit(code=2) from None
    if not local:
        err.print(
            f"[bold yellow]warning:[/bold yellow] bound to {host}, so other machines can reach this server; "
            "the API has no authentication: anyone who reaches it can run work on this machine. Bind "
            "127.0.0.1 (the default) unless that is what you want, or put it behind a proxy that "
            "authenticates.",
            highlight=False,
            soft_wrap=True,
        )
    taken = _bind_problem(host, port)
    if taken is not None:
        fail(ScenarioError([("--port", port, f"cannot be listened on at {host}: {taken}")]))
    store = tempfile.mkdtemp(prefix="dtsim-jobs-")  # one jobs store for every worker process
    os.environ[STORE_ENV] = store
    # uvicorn re-raises the SIGTERM it stopped on once it has shut down; with the default action the
    # process would die there, before the store is removed: exit through the `finally` below instead
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    stop = threading.Event()
    threading.Thread(target=_announce, args=(host, port, workers, stop), daemon=True).start()
    try:
        if workers == 1:
            app = create_app()
            settle_heap()
            uvicorn.run(
                app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S
            )
        else:
            uvicorn.run(
                "dtsim.interfaces.api.app:create_api_app",
                factory=True,
                host=host,
                port=port,
                workers=workers,
                log_level="warning",
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            )
    except SystemExit as exc:
        if exc.code == 128 + signal.SIGTERM:
            stop.set()
            shutil.rmtree(store, ignore_errors=True)
            _exit_now(exc.code)
        raise
    finally:
        stop.set()
        shutil.rmtree(store, ignore_errors=True)
