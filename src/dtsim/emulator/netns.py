"""The emulated network: one namespace per worker plus one holding a bridge, joined by veth pairs that
are created inside those namespaces (nothing appears in the host's namespace), addresses from a
private range inside them only, and links shaped in both directions with `tbf` (the worker's egress
is its upload, the bridge port's egress towards it its download). Latency uses `netem` when the
kernel has it (probed at start, in a namespace of the run). Every name carries the run's prefix, so
`cleanup_leftovers()` can find a killed run's remains.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from dtsim.errors import ScenarioError

PREFIX = "dtsim-"  # every namespace of every run starts with this
SUBNET = "10.213.{}.{}"  # private range; exists only inside the run's namespaces


def require_root() -> None:
    if os.geteuid() != 0:
        raise ScenarioError(
            [
                (
                    "user",
                    os.geteuid(),
                    "the emulator needs root (network namespaces, veth, tc); run as root or with sudo",
                )
            ]
        )
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise ScenarioError([("tools", tool, "not found; install iproute2")])


def _run(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(args, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.strip()}")
    return p


def list_namespaces() -> list[str]:
    p = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def pids_in(ns: str) -> list[int]:
    p = _run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.strip().isdigit()]


def kill_namespace(ns: str) -> None:
    """Kill every process in `ns`, then delete it (its interfaces go with it)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = pids_in(ns)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.time() + 3
        while time.time() < deadline and pids_in(ns):
            time.sleep(0.05)
    _run(["ip", "netns", "del", ns], check=False)


def cleanup_leftovers(run_id: str | None = None) -> list[str]:
    """Remove every namespace (and its processes) of a run, or of all runs; returns what was removed."""
    prefix = PREFIX + (run_id + "-" if run_id else "")
    removed = []
    for ns in list_namespaces():
        if ns.startswith(prefix):
            kill_namespace(ns)
            removed.append(ns)
    return removed


def netem_available() -> bool:
    """Probe netem in a throw-away namespace of our own (never on the host's interfaces)."""
    ns = f"{PREFIX}probe-{secrets.token_hex(3)}"
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
    run_id: str = field(default_factory=lambda: secrets.token_hex(3))
    netem: bool = False
    queue_ms: float = 10.0  # tbf queue: a packet waits at most this long (bounded bufferbloat)
    created: list[str] = field(default_factory=list)

    @property
    def bridge_ns(self) -> str:
        return f"{PREFIX}{self.run_id}-br"

    def worker_ns(self, rank: int) -> str:
        return f"{PREFIX}{self.run_id}-w{rank}"

    def address(self, rank: int) -> str:
        return SUBNET.format(rank // 250, rank % 250 + 1)

    def link_mbps(self, rank: int) -> float | None:
        return self.slow_links.get(rank, self.bandwidth_mbps)

    def _shape(self, ns: str, dev: str, mbps: float | None) -> None:
        """Root qdisc of `dev`: netem delay with tbf under it when both apply, else whichever applies."""

        def add(*where_and_what: str) -> None:
            _run(["tc", "-n", ns, "qdisc", "add", "dev", dev, *where_and_what])

        if self.latency_ms and self.netem:
            add("root", "handle", "1:", "netem", "delay", f"{self.latency_ms}ms")
            if mbps:
                add("parent", "1:", "handle", "2:", *self._tbf(mbps))
        elif mbps:
            add("root", *self._tbf(mbps))

    def _tbf(self, mbps: float) -> list[str]:
        # burst ≥ one 64 KiB GSO segment, so tbf never drops a whole offloaded packet
        burst = max(131072, int(mbps * 1e6 / 8 * 0.004))
        queue_ms = self.queue_ms
        return ["tbf", "rate", f"{mbps}mbit", "burst", str(burst), "latency", f"{queue_ms}ms"]

    def create(self) -> None:
        require_root()
        br = self.bridge_ns
        _run(["ip", "netns", "add", br])
        self.created.append(br)
        _run(["ip", "-n", br, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", br, "link", "set", "br0", "up"])
        _run(["ip", "-n", br, "link", "set", "lo", "up"])
        for r in range(self.workers):
            ns = self.worker_ns(r)
            _run(["ip", "netns", "add", ns])
            self.created.append(ns)
            port = f"p{r}"
            _run(["ip", "-n", br, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns])
            _run(["ip", "-n", br, "link", "set", port, "master", "br0", "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{self.address(r)}/16", "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            mbps = self.link_mbps(r)
            self._shape(ns, "eth0", mbps)  # upload
            self._shape(br, port, mbps)  # download

    def exec_prefix(self, rank: int) -> list[str]:
        return ["ip", "netns", "exec", self.worker_ns(rank)]

    def destroy(self) -> None:
        for ns in reversed(self.created):
            kill_namespace(ns)
        self.created.clear()
        cleanup_leftovers(self.run_id)
