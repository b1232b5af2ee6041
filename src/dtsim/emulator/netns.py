"""The emulated network: one namespace per worker plus one holding a bridge, joined by veth pairs that
are created inside those namespaces (nothing appears in the host's namespace), addresses from a
private range inside them only, and links shaped in both directions with `tbf` (the worker's egress
is its upload, the bridge port's egress towards it its download). Latency uses `netem` when the
kernel has it (probed at start, in a namespace of the run). Every name carries the run's id
(`dtsim-ID-…`), and the run records every namespace, interface and qdisc it will make before it makes
it (`emulator/runstate.py`), so what a killed run left is found and removed by name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dtsim.errors import ScenarioError

PREFIX = "dtsim-"  # every namespace of every run starts with this
SUBNET = "10.213.{}.{}"  # private range; exists only inside the run's namespaces
COMMAND_TIMEOUT_S = 30.0  # one ip/tc command; a hung one is killed and reported, never waited on forever


def setup_problems() -> list[tuple[str, object, str]]:
    """What this machine lacks for the emulator's network: root, and the ip and tc tools."""
    problems: list[tuple[str, object, str]] = []
    if os.geteuid() != 0:
        problems.append(
            (
                "user",
                os.geteuid(),
                "the emulator needs root (network namespaces, veth, tc); run as root or with sudo",
            )
        )
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            problems.append(("tools", tool, "not found; install iproute2"))
    return problems


def require_root() -> None:
    problems = setup_problems()
    if problems:
        raise ScenarioError(problems)


class CommandFailed(RuntimeError):
    """An ip or tc command failed (its command line and message are the text)."""


STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextlib.contextmanager
def stop_signals_blocked():
    """Hold SIGINT, SIGTERM and SIGHUP while a child is started. A child joins a session of its own
    only after it is forked; a Ctrl-C sent to the terminal's process group between the two would kill
    it half-way (an `ip` command, a worker). Held, the signal waits: the launcher's handler takes it
    once the child is started, and the child (which inherits the mask) never sees it."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _run(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    # A session of its own, and the stop signals held (above): the launcher handles a Ctrl-C; the
    # command finishes what it started (an `ip netns del` killed half-way would leave a namespace).
    with stop_signals_blocked():
        p = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
    try:
        out, err = p.communicate(timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise CommandFailed(f"{' '.join(args)}: no answer within {COMMAND_TIMEOUT_S:g} s") from None
    if check and p.returncode != 0:
        raise CommandFailed(f"{' '.join(args)}: {err.strip() or f'exit status {p.returncode}'}")
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def list_namespaces() -> list[str]:
    p = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def pids_in(ns: str) -> list[int]:
    p = _run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.strip().isdigit()]


def interfaces_in(ns: str) -> set[str]:
    """Names of the interfaces in `ns` (`eth0`, not `eth0@if12`)."""
    p = _run(["ip", "-n", ns, "-o", "link", "show"], check=False)
    out = set()
    for line in p.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            out.add(parts[1].strip().split("@", 1)[0])
    return out


def qdiscs_in(ns: str) -> set[tuple[str, str]]:
    """(device, kind) of every qdisc in `ns`, e.g. ("eth0", "tbf")."""
    p = _run(["tc", "-n", ns, "qdisc", "show"], check=False)
    out = set()
    for line in p.stdout.splitlines():
        words = line.split()
        if len(words) >= 5 and words[0] == "qdisc" and "dev" in words:
            out.add((words[words.index("dev") + 1], words[1]))
    return out


def kill_namespace(ns: str) -> list[int]:
    """Kill every process in `ns`; returns the processes that were there. Raises RuntimeError when one
    is still there after SIGKILL (a process stuck in the kernel)."""
    seen: list[int] = []
    for sig, wait_s in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 3.0)):
        pids = pids_in(ns)
        if not pids:
            return seen
        seen += [p for p in pids if p not in seen]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and pids_in(ns):
            time.sleep(0.02)
    left = pids_in(ns)
    if left:
        raise RuntimeError(f"process(es) {', '.join(map(str, left))} in {ns} survived SIGKILL")
    return seen


def delete_namespace(ns: str) -> None:
    """Delete `ns` (its processes must be gone); RuntimeError unless it is gone afterwards."""
    p = _run(["ip", "netns", "del", ns], check=False)
    if ns in list_namespaces():
        raise RuntimeError(f"ip netns del {ns}: {p.stderr.strip() or 'it is still listed'}")


def probe_namespace(run_id: str) -> str:
    """The namespace a run probes netem in."""
    return f"{PREFIX}{run_id}-probe"


def netem_available(ns: str) -> bool:
    """Probe netem in a throw-away namespace of the run (named `ns`, recorded by the run before this
    creates it; never on the host's interfaces)."""
    try:
        _run(["ip", "netns", "add", ns])
        p = _run(["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"], check=False)
        return p.returncode == 0
    finally:
        _run(["ip", "netns", "del", ns], check=False)


@dataclass
class Topology:
    workers: int
    bandwidth_mbps: float | None
    latency_ms: float = 0.0
    slow_links: dict[int, float] = field(default_factory=dict)
    run_id: str = "000000"
    netem: bool = False
    queue_ms: float = 10.0  # tbf queue: a packet waits at most this long (bounded bufferbloat)
    link_latency_ms: dict[int, float] = field(default_factory=dict)  # per rank, overrides latency_ms

    @property
    def bridge_ns(self) -> str:
        return f"{PREFIX}{self.run_id}-br"

    def worker_ns(self, rank: int) -> str:
        return f"{PREFIX}{self.run_id}-w{rank}"

    def address(self, rank: int) -> str:
        return SUBNET.format(rank // 250, rank % 250 + 1)

    def link_mbps(self, rank: int) -> float | None:
        return self.slow_links.get(rank, self.bandwidth_mbps)

    def link_latency(self, rank: int) -> float:
        return self.link_latency_ms.get(rank, self.latency_ms)

    # what create() makes, known before it makes any of it (the run records these first)

    def namespaces(self) -> list[str]:
        return [self.bridge_ns] + [self.worker_ns(r) for r in range(self.workers)]

    def interfaces(self) -> list[tuple[str, str]]:
        """(namespace, device) of every interface create() adds (the bridge and both ends of each veth)."""
        out = [(self.bridge_ns, "br0")]
        for r in range(self.workers):
            out += [(self.bridge_ns, f"p{r}"), (self.worker_ns(r), "eth0")]
        return out

    def qdiscs(self) -> list[tuple[str, str, str]]:
        """(namespace, device, kind) of every qdisc create() adds."""
        out = []
        for r in range(self.workers):
            kinds = self._kinds(self.link_mbps(r), self.link_latency(r))
            out += [(self.worker_ns(r), "eth0", k) for k in kinds]
            out += [(self.bridge_ns, f"p{r}", k) for k in kinds]
        return out

    def _kinds(self, mbps: float | None, latency_ms: float) -> list[str]:
        return (["netem"] if latency_ms and self.netem else []) + (["tbf"] if mbps else [])

    def _shape(self, ns: str, dev: str, mbps: float | None, latency_ms: float) -> None:
        """Root qdisc of `dev`: netem delay with tbf under it when both apply, else whichever applies."""

        def add(*where_and_what: str) -> None:
            _run(["tc", "-n", ns, "qdisc", "add", "dev", dev, *where_and_what])

        if latency_ms and self.netem:
            add("root", "handle", "1:", "netem", "delay", f"{latency_ms}ms")
            if mbps:
                add("parent", "1:", "handle", "2:", *self._tbf(mbps))
        elif mbps:
            add("root", *self._tbf(mbps))

    def _tbf(self, mbps: float) -> list[str]:
        # burst ≥ one 64 KiB GSO segment, so tbf never drops a whole offloaded packet
        burst = max(131072, int(mbps * 1e6 / 8 * 0.004))
        queue_ms = self.queue_ms
        return ["tbf", "rate", f"{mbps}mbit", "burst", str(burst), "latency", f"{queue_ms}ms"]

    def create(self, check: Callable[[], None] = lambda: None) -> None:
        """Make the namespaces, links and qdiscs; `check()` runs between commands (it raises to stop)."""
        require_root()
        br = self.bridge_ns
        _run(["ip", "netns", "add", br])
        _run(["ip", "-n", br, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", br, "link", "set", "br0", "up"])
        _run(["ip", "-n", br, "link", "set", "lo", "up"])
        for r in range(self.workers):
            check()
            ns = self.worker_ns(r)
            _run(["ip", "netns", "add", ns])
            port = f"p{r}"
            _run(["ip", "-n", br, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns])
            _run(["ip", "-n", br, "link", "set", port, "master", "br0", "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{self.address(r)}/16", "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            mbps = self.link_mbps(r)
            self._shape(ns, "eth0", mbps, self.link_latency(r))  # upload
            self._shape(br, port, mbps, self.link_latency(r))  # download

    def exec_prefix(self, rank: int) -> list[str]:
        return ["ip", "netns", "exec", self.worker_ns(rank)]
