"""What each emulator run owns, on disk, so nothing it makes can outlive it unnoticed.

Every run writes a state file, `/run/dtsim/ID.json`, *before* it makes anything: its process (PID,
the kernel's start time of that PID and the boot it belongs to, so a reused PID is never mistaken for
the run), the network namespaces, interfaces and qdiscs it is about to create, its temporary directory,
and each worker process as it starts. The run holds an exclusive `flock` on the file while it lives;
the kernel drops the lock when the process dies, however it dies (kill -9 included).

`reclaim()` — at the start of every run and under `dtsim emulate --cleanup` — walks the state files:

- a run whose file is locked, or whose process (same PID *and* start time, same boot) is still running,
  is live: nothing of it is touched;
- a dead run's workers (if still running), namespaces (with every process inside, their interfaces and
  qdiscs) and directory are removed, each checked gone afterwards, and only then its state file;
  whatever could not be removed stays recorded for the next attempt and is reported, never claimed;
- namespaces named as dtsim names them (`dtsim-ID-br`, `-wN`, `-probe`) that no state file claims (an
  older dtsim, a lost state directory) are removed only when no process in them still has its
  launcher (a parent outside the emulator's namespaces other than init); temporary directories
  `dtsim-emu-ID…` nobody claims, only when no namespace of theirs is left and they are over a minute
  old. Any other namespace, `dtsim-` or not, is never touched.

A file is replaced, never rewritten in place: the new version is locked before it is renamed over the
old one, so a reader sees a whole, locked file or none.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from dtsim.emulator import netns

STATE_DIR = Path("/run/dtsim")
FORMAT = 1
LEGACY_DIR_MIN_AGE_S = (
    60.0  # an unclaimed directory or half-written file younger than this may be a run starting
)
_RUN_ID = re.compile(r"[0-9a-f]{6}")
_NAMESPACE = re.compile(r"dtsim-([0-9a-f]{6})-(?:br|w\d+|probe)")
_DEFAULT_QDISCS = ("noqueue", "noop", "pfifo_fast", "mq", "fq_codel")  # the kernel's, not a run's
_LEGACY_PROBE = re.compile(r"dtsim-probe-[0-9a-f]{6}")  # an older dtsim's netem probe
_LEGACY_DIR = re.compile(r"dtsim-emu-([0-9a-f]{6})(?:-[A-Za-z0-9_]+)?")


# --- processes ---------------------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent PID, start time in clock ticks since boot) of `pid`, or None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    rest = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return rest[0], int(rest[1]), int(rest[19])


def start_time(pid: int) -> int | None:
    s = _stat(pid)
    return None if s is None else s[2]


def running(pid: int, start: int | None) -> bool:
    """Whether `pid` is the very process that had start time `start` and has not exited (a zombie has)."""
    s = _stat(pid)
    return s is not None and s[0] != "Z" and start is not None and s[2] == start


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _net_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


# --- what a removal did ----------------------------------------------------------------------------------------


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@dataclass
class Removal:
    """What was checked gone after a removal, and what could not be removed (with why)."""

    namespaces: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)  # "namespace/device"
    qdiscs: list[str] = field(default_factory=list)  # "namespace/device kind"
    processes: list[int] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.failed

    @property
    def empty(self) -> bool:
        return not (self.namespaces or self.interfaces or self.qdiscs or self.processes or self.directories)

    def describe(self) -> str:
        """e.g. '3 namespaces (dtsim-…-br, …), 5 interfaces, 4 qdiscs, 2 processes, 1 directory (/tmp/…)'."""
        parts = []
        if self.namespaces:
            parts.append(
                f"{_count(len(self.namespaces), 'namespace', 'namespaces')} ({', '.join(self.namespaces)})"
            )
        if self.interfaces:
            parts.append(_count(len(self.interfaces), "interface", "interfaces"))
        if self.qdiscs:
            parts.append(_count(len(self.qdiscs), "qdisc", "qdiscs"))
        if self.processes:
            parts.append(_count(len(self.processes), "process", "processes"))
        if self.directories:
            d = self.directories
            parts.append(f"{_count(len(d), 'directory', 'directories')} ({', '.join(d)})")
        return ", ".join(parts) or "nothing"


# --- the state file --------------------------------------------------------------------------------------------


@dataclass
class RunState:
    """One run's record. `register()` creates it (locked), `release()` deletes it once all is gone."""

    run_id: str
    pid: int
    start: int | None
    boot: str
    command: str
    created: float
    namespaces: list[str] = field(default_factory=list)
    interfaces: list[list[str]] = field(default_factory=list)  # [namespace, device]
    qdiscs: list[list[str]] = field(default_factory=list)  # [namespace, device, kind]
    workers: list[list[int | None]] = field(default_factory=list)  # [pid, start time]
    directories: list[str] = field(default_factory=list)
    path: Path = field(default=STATE_DIR, repr=False)
    _fd: int | None = field(default=None, repr=False)

    @classmethod
    def register(
        cls, run_id: str, namespaces: list[str], directories: list[str], state_dir: Path = STATE_DIR
    ) -> RunState:
        """Record a new run of this process, locked, before it makes anything."""
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        pid = os.getpid()
        s = cls(
            run_id=run_id,
            pid=pid,
            start=start_time(pid),
            boot=boot_id(),
            command=_cmdline(pid),
            created=time.time(),
            namespaces=list(namespaces),
            directories=list(directories),
            path=state_dir / f"{run_id}.json",
        )
        s._write(first=True)
        return s

    def plan(self, namespaces: list[str], interfaces, qdiscs) -> None:
        """Add what the run is about to create (recorded before it exists)."""
        self.namespaces += [n for n in namespaces if n not in self.namespaces]
        self.interfaces += [list(i) for i in interfaces]
        self.qdiscs += [list(q) for q in qdiscs]
        self._write()

    def add_worker(self, pid: int) -> None:
        self.workers.append([pid, start_time(pid)])
        self._write()

    def as_dict(self) -> dict:
        return {
            "format": FORMAT,
            "run_id": self.run_id,
            "pid": self.pid,
            "start": self.start,
            "boot": self.boot,
            "command": self.command,
            "created": self.created,
            "namespaces": self.namespaces,
            "interfaces": self.interfaces,
            "qdiscs": self.qdiscs,
            "workers": self.workers,
            "directories": self.directories,
        }

    @classmethod
    def from_dict(cls, d: dict, path: Path) -> RunState:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(f"not a format-{FORMAT} state file")
        run_id = d["run_id"]
        if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id) or path.stem != run_id:
            raise ValueError(f"run_id {run_id!r} does not match the file name")
        return cls(
            run_id=run_id,
            pid=int(d["pid"]),
            start=None if d["start"] is None else int(d["start"]),
            boot=str(d["boot"]),
            command=str(d.get("command", "")),
            created=float(d.get("created", 0.0)),
            namespaces=[str(n) for n in d["namespaces"]],
            interfaces=[[str(a), str(b)] for a, b in d["interfaces"]],
            qdiscs=[[str(a), str(b), str(c)] for a, b, c in d["qdiscs"]],
            workers=[[int(p), None if t is None else int(t)] for p, t in d["workers"]],
            directories=[str(x) for x in d["directories"]],
            path=path,
        )

    def _write(self, first: bool = False) -> None:
        """Replace the file by a new, locked one. The first write links instead of renaming, so it
        fails (FileExistsError) rather than take over another run's file of the same id."""
        tmp = self.path.with_name(f".{self.run_id}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # locked before it appears under its name
            data = json.dumps(self.as_dict(), indent=1).encode()
            while data:
                data = data[os.write(fd, data) :]
            if first:
                os.link(tmp, self.path)
                os.unlink(tmp)
            else:
                os.rename(tmp, self.path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        old, self._fd = self._fd, fd
        if old is not None:
            os.close(old)

    def release(self) -> None:
        """Everything is gone: delete the record and drop the lock."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.detach()

    def detach(self) -> None:
        """Drop the lock, keep the record (something is left: the next run or --cleanup reclaims it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove_all(self) -> Removal:
        """Remove everything recorded here (and any other namespace of this run id); never raises."""
        return _remove(self)


def _lock(path: Path) -> int | None:
    """An fd holding `path`'s exclusive lock, or None while someone else holds it (or it is gone)."""
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            raise
        try:  # the run may have replaced the file between our open and our lock: lock the current one
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
            os.close(fd)
            return None
        if same:
            return fd
        os.close(fd)


# --- removal -------------------------------------------------------------------------------------------------------


def _stop_worker(pid: int, start: int | None) -> bool:
    """SIGKILL the worker if it is still the recorded process; True once it is gone."""
    if not running(pid, start):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and running(pid, start):
        time.sleep(0.01)
    if running(pid, start):
        raise RuntimeError(f"worker process {pid} survived SIGKILL")
    return True


def _remove_namespaces(names: list[str], removal: Removal, interfaces=None, qdiscs=None) -> None:
    """Kill what runs in each namespace, delete it, check it gone; count the interfaces and qdiscs
    (those recorded, or without a record every one but `lo` and the kernel's default qdiscs) that went
    with them."""
    present = set(netns.list_namespaces())
    names = [ns for ns in names if ns in present]
    # what is there before anything goes (deleting one namespace takes the far end of its veth with it)
    before = {ns: (netns.interfaces_in(ns), netns.qdiscs_in(ns)) for ns in names}
    if interfaces is None:
        interfaces = [(ns, d) for ns, (ifs, _) in before.items() for d in sorted(ifs) if d != "lo"]
    if qdiscs is None:
        qdiscs = [
            (ns, d, k) for ns, (_, qs) in before.items() for d, k in sorted(qs) if k not in _DEFAULT_QDISCS
        ]
    for ns in names:
        try:
            killed = netns.kill_namespace(ns)
            netns.delete_namespace(ns)
        except (RuntimeError, OSError) as exc:
            removal.failed.append(f"namespace {ns}: {exc}")
            continue
        removal.namespaces.append(ns)
        removal.processes += [p for p in killed if p not in removal.processes]
    for ns, (had_if, had_q) in before.items():
        # interfaces and qdiscs live in their namespace: gone with it; in one that is left, gone if
        # no longer listed there
        now_if, now_q = (
            (set(), set()) if ns in removal.namespaces else (netns.interfaces_in(ns), netns.qdiscs_in(ns))
        )
        removal.interfaces += [f"{n}/{d}" for n, d in interfaces if n == ns and d in had_if - now_if]
        removal.qdiscs += [f"{n}/{d} {k}" for n, d, k in qdiscs if n == ns and (d, k) in had_q - now_q]


def _remove_directory(path: str, run_id: str, removal: Removal) -> None:
    p = Path(path)
    if not _LEGACY_DIR.fullmatch(p.name) or _LEGACY_DIR.fullmatch(p.name).group(1) != run_id:
        removal.failed.append(f"directory {path}: not named as a directory of run {run_id}; left alone")
        return
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        removal.failed.append(f"directory {path}: not a directory this user made (a link?); left alone")
        return
    try:
        shutil.rmtree(p)
    except OSError as exc:
        removal.failed.append(f"directory {path}: {exc}")
        return
    if os.path.lexists(p):
        removal.failed.append(f"directory {path}: still there after removal")
    else:
        removal.directories.append(path)


def _remove(state: RunState) -> Removal:
    removal = Removal()
    for pid, start in state.workers:
        try:
            if _stop_worker(int(pid), start):
                removal.processes.append(int(pid))
        except (RuntimeError, OSError) as exc:
            removal.failed.append(f"process {pid}: {exc}")
    try:
        present = netns.list_namespaces()
        extra = [
            n for n in present if n.startswith(f"{netns.PREFIX}{state.run_id}-") and n not in state.namespaces
        ]
        # workers' namespaces before the bridge's (the reverse of creation)
        _remove_namespaces(list(reversed(state.namespaces)) + extra, removal, state.interfaces, state.qdiscs)
    except (RuntimeError, OSError) as exc:
        removal.failed.append(f"namespaces of run {state.run_id}: {exc}")
    for d in state.directories:
        _remove_directory(d, state.run_id, removal)
    return removal


# --- reclaiming what dead runs left ---------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One run (or one unclaimed run id) that reclaim() looked at."""

    run_id: str
    status: str  # "reclaimed" | "incomplete" | "live" | "in use"
    removal: Removal = field(default_factory=Removal)
    note: str = ""

    def describe(self) -> str:
        if self.status == "live":
            return f"run {self.run_id}: {self.note}; left alone"
        if self.status == "in use":
            return f"unrecorded namespaces of run {self.run_id}: {self.note}; left alone"
        text = f"run {self.run_id} ({self.note}): removed {self.removal.describe()}"
        if self.removal.failed:
            text += (
                "; could not remove: "
                + "; ".join(self.removal.failed)
                + " (still recorded, tried again next time)"
            )
        return text


def _attached(ns: str, dtsim_nets: set[str]) -> str | None:
    """A process in `ns` whose launcher is alive: its parent is not init and not in an emulator
    namespace (a launcher runs in the host's). Returns a description of that parent, or None."""
    for pid in netns.pids_in(ns):
        s = _stat(pid)
        if s is None or s[1] <= 1:
            continue
        if _net_namespace(s[1]) in dtsim_nets:
            continue
        return f"process {pid}'s parent {s[1]} ({_cmdline(s[1])[:60] or '?'}) is running"
    return None


def new_run_id(state_dir: Path = STATE_DIR) -> str:
    """A run id no state file, namespace or temporary directory uses yet."""
    taken = netns.list_namespaces()
    tmp = Path(tempfile.gettempdir())
    while True:
        rid = secrets.token_hex(3)
        if (
            not (state_dir / f"{rid}.json").exists()
            and not any(n.startswith(f"{netns.PREFIX}{rid}-") for n in taken)
            and not any(tmp.glob(f"dtsim-emu-{rid}*"))
        ):
            return rid


def reclaim(state_dir: Path = STATE_DIR) -> list[Outcome]:
    """Remove what dead runs left (see the module's docstring); a live run's resources are never touched."""
    # Namespaces first, state files second: a run records itself before it creates a namespace, so
    # every namespace listed here that a run of this dtsim made already has its state file.
    names = [n for n in netns.list_namespaces() if n.startswith(netns.PREFIX)]
    outcomes: list[Outcome] = []
    claimed: set[str] = set()
    paths = sorted(state_dir.glob("*.json")) if state_dir.is_dir() else []
    for path in paths:
        run_id = path.stem
        claimed.add(run_id)
        fd = _lock(path)
        if fd is None:
            if path.exists():
                outcomes.append(
                    Outcome(
                        run_id,
                        "live",
                        note="its state file is locked (by its running launcher, or a cleanup)",
                    )
                )
            continue
        try:
            try:
                state = RunState.from_dict(json.loads(path.read_text()), path)
            except (ValueError, KeyError, TypeError) as exc:
                # the lock is free, so its run has ended; what it made is found by its run id
                removal = Removal()
                mine = [n for n in names if n.startswith(f"{netns.PREFIX}{run_id}-")]
                why = _reclaim_unrecorded(run_id, mine, removal)
                if why:
                    outcomes.append(Outcome(run_id, "in use", note=f"unreadable state file ({exc}); {why}"))
                    continue
                if removal.complete:
                    path.unlink()
                status = "reclaimed" if removal.complete else "incomplete"
                outcomes.append(Outcome(run_id, status, removal, f"unreadable state file: {exc}"))
                continue
            if state.boot == boot_id() and running(state.pid, state.start):
                # the lock is free but the process lives (it is ending with something it could not
                # remove): still its own, never touched while it runs
                outcomes.append(Outcome(run_id, "live", note=f"process {state.pid} is still running"))
                continue
            removal = state.remove_all()
            if removal.complete:
                path.unlink()
            status = "reclaimed" if removal.complete else "incomplete"
            outcomes.append(Outcome(run_id, status, removal, f"process {state.pid} has ended"))
        finally:
            os.close(fd)
    # half-written state files of runs that died while writing one (the run's resources come after;
    # a young one may be a run between creating and locking it)
    if state_dir.is_dir():
        for tmp in state_dir.glob(".*.tmp"):
            with contextlib.suppress(FileNotFoundError):
                if time.time() - tmp.stat().st_mtime < LEGACY_DIR_MIN_AGE_S:
                    continue
            fd = _lock(tmp)
            if fd is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                os.close(fd)
    outcomes += _reclaim_unclaimed(names, claimed)
    return [o for o in outcomes if o.status in ("live", "in use") or not o.removal.empty or o.removal.failed]


def _reclaim_unrecorded(run_id: str, names: list[str], removal: Removal) -> str | None:
    """Remove namespaces no state file lists unless one still has a launcher; returns why not, if not."""
    present = set(netns.list_namespaces())
    names = [n for n in names if n in present]
    dtsim_nets = set()
    for n in present:
        if n.startswith(netns.PREFIX):
            with contextlib.suppress(OSError):
                dtsim_nets.add(f"net:[{os.stat(f'/run/netns/{n}').st_ino}]")
    for ns in names:
        why = _attached(ns, dtsim_nets)
        if why:
            return why
    _remove_namespaces(names, removal)
    for d in Path(tempfile.gettempdir()).glob(f"dtsim-emu-{run_id}*"):
        _remove_directory(str(d), run_id, removal)
    return None


def _reclaim_unclaimed(names: list[str], claimed: set[str]) -> list[Outcome]:
    groups: dict[str, list[str]] = {}
    for n in names:
        m = _NAMESPACE.fullmatch(n)
        if m:
            key = m.group(1)
        elif _LEGACY_PROBE.fullmatch(n):
            key = n
        else:
            continue  # a name dtsim never makes (someone's own `dtsim-…` namespace): not ours
        if key not in claimed:
            groups.setdefault(key, []).append(n)
    outcomes = []
    for key, group in groups.items():
        removal = Removal()
        why = _reclaim_unrecorded(key, group, removal)
        if why:
            outcomes.append(Outcome(key, "in use", note=why))
        else:
            status = "reclaimed" if removal.complete else "incomplete"
            outcomes.append(Outcome(key, status, removal, "no state file: an older dtsim or a lost record"))
    # temporary directories nobody claims, whose run has no namespace left, old enough not to be starting
    now = time.time()
    left = set(netns.list_namespaces())
    for d in sorted(Path(tempfile.gettempdir()).glob("dtsim-emu-*")):
        m = _LEGACY_DIR.fullmatch(d.name)
        if not m or m.group(1) in claimed or m.group(1) in groups:
            continue
        rid = m.group(1)
        if any(n.startswith(f"{netns.PREFIX}{rid}-") for n in left):
            continue
        try:
            if now - os.lstat(d).st_mtime < LEGACY_DIR_MIN_AGE_S:
                continue
        except FileNotFoundError:
            continue
        removal = Removal()
        _remove_directory(str(d), rid, removal)
        outcomes.append(
            Outcome(
                rid,
                "reclaimed" if removal.complete else "incomplete",
                removal,
                "an unclaimed temporary directory",
            )
        )
    return outcomes
