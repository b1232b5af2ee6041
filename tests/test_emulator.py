"""The emulator (issue 7): real gloo training between network namespaces over tc-shaped links.

Tests that build namespaces need root, iproute2 and torch; without them they skip and say which."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dtsim.emulator import compress
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app

runner = CliRunner()

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def _network_capabilities() -> bool:
    """CAP_SYS_ADMIN (namespaces) and CAP_NET_ADMIN (links, tc) in effect: root in an unprivileged
    container has neither, and `ip netns add` fails there."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            caps = int(line.split()[1], 16)
            return bool(caps & (1 << 21)) and bool(caps & (1 << 12))
    return False


IS_ROOT = os.geteuid() == 0 and _network_capabilities()
HAVE_IP = shutil.which("ip") is not None and shutil.which("tc") is not None
needs_torch = pytest.mark.skipif(
    not HAVE_TORCH, reason="torch is not installed (pip install 'dtsim[emulator]')"
)
needs_root = pytest.mark.skipif(
    not (IS_ROOT and HAVE_IP and HAVE_TORCH),
    reason="needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN (network namespaces, veth, tc), iproute2 and "
    f"torch; root with them={IS_ROOT}, iproute2={HAVE_IP}, torch={HAVE_TORCH}",
)


def _leftovers() -> tuple[list[str], list[str]]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    names = [line.split()[0] for line in ns.splitlines() if line.startswith("dtsim-")]
    procs = subprocess.run(
        ["pgrep", "-f", "dtsim.emulator.worker"], capture_output=True, text=True
    ).stdout.split()
    return names, procs


# --- no root needed -------------------------------------------------------------------------------------------


def test_expected_bytes_by_hand():
    # ring all-reduce: 2(N−1)/N × 4 bytes per value
    assert compress.expected_bytes_per_rank("none", 1, 1000, 4) == 2 * 3 / 4 * 4000
    assert compress.expected_bytes_per_rank("fp16", 1, 1000, 4) == 2 * 3 / 4 * 2000
    # int8: one byte per value each way plus one fp32 scale per piece (2 pieces per rank's chunk)
    assert compress.INT8_PIPELINE == 2
    assert compress.expected_bytes_per_rank("int8", 1, 1000, 4) == 2 * 3 / 4 * 1000 + 2 * 3 * 2 * 4
    # values padded to whole pieces: 1001 values over 4 ranks × 2 pieces → 1008
    assert compress.expected_bytes_per_rank("int8", 1, 1001, 4) == 2 * 3 / 4 * 1008 + 2 * 3 * 2 * 4
    # top-k: all-gather of k int32 indices and k fp32 values from every rank
    assert compress.expected_bytes_per_rank("topk", 100, 1000, 4) == 3 * 10 * 8
    assert compress.expected_bytes_per_rank("none", 1, 1000, 1) == 0


def test_compression_spec_errors():
    assert compress.parse("topk:100") == ("topk", 100.0)
    for bad in ("zip", "topk:0.5", "topk:x"):
        with pytest.raises(ScenarioError) as exc:
            compress.parse(bad)
        assert exc.value.problems[0][0] == "compression"


@needs_torch
def test_model_presets_and_sizes():
    from dtsim.emulator.model import GPT, PRESETS, config_for, param_count

    assert PRESETS["distilgpt2"].params == 81_912_576  # seed 001 §5.1.1
    for name in ("tiny", "medium"):
        assert param_count(GPT(PRESETS[name])) == PRESETS[name].params
    assert PRESETS["medium"].params >= 20e6
    assert abs(config_for("20M").params / 20e6 - 1) < 0.15
    with pytest.raises(ScenarioError):
        config_for("huge")


@needs_torch
def test_synthetic_data_is_seeded_and_learnable():
    import torch

    from dtsim.emulator.data import BigramLanguage

    lang = BigramLanguage(512)
    a = lang.batch(2, 16, torch.Generator().manual_seed(3))
    b = lang.batch(2, 16, torch.Generator().manual_seed(3))
    assert torch.equal(a[0], b[0]) and torch.equal(a[0][:, 1:], a[1][:, :-1])
    assert lang.entropy_rate < math.log(512) - 2  # far below uniform: there is something to learn


@needs_torch
def test_int8_quantization_roundtrip():
    import torch

    from dtsim.emulator.averager import _quantize

    x = torch.randn(3, 1000)
    q, s = _quantize(x)
    assert q.dtype == torch.int8 and s.shape == (3,)
    assert torch.allclose(q.float() * s[:, None], x, atol=float(s.max()) * 0.51)


def _ring_rank(rank: int, world: int, port: int, out) -> None:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    from dtsim.emulator.averager import Averager

    dist.init_process_group(  # a deadlock fails the test in a minute, not gloo's default half hour
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=60),
    )
    try:
        x = torch.randn(1001, generator=torch.Generator().manual_seed(rank))
        got = Averager("int8", 1001)(x)
        xs, outs = [torch.empty(1001) for _ in range(world)], [torch.empty(1001) for _ in range(world)]
        dist.all_gather(xs, x)
        dist.all_gather(outs, got)
        mean = torch.stack(xs).mean(0)
        same = all(torch.equal(o, outs[0]) for o in outs)
        out.put((rank, float((got - mean).abs().max() / mean.abs().max()), same))
    finally:
        dist.destroy_process_group()


@needs_torch
@pytest.mark.parametrize("world", [2, 3])
def test_int8_ring_averages_and_every_rank_ends_with_the_same_values(world):
    """The int8 sync is PRIME's quantized ring (reduce-scatter of 8-bit hand-offs summed in fp32, the
    owner's chunk quantized once, all-gather forwarding it): with real gloo ranks on loopback every
    rank ends with the same vector, the average to within the 8-bit steps of a few hand-offs."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.start_processes(_ring_rank, args=(world, port, out), nprocs=world, start_method="spawn")
    rows = [out.get() for _ in range(world)]
    assert sorted(r[0] for r in rows) == list(range(world))
    for _, rel_err, same in rows:
        assert same and rel_err < 3 * world / 127, rows  # one 8-bit step per hand-off a value takes
    # the ring's messages: 2(N − 1) hand-offs of each half-chunk (int8) and its fp32 scale, to the next rank
    from dtsim.emulator.averager import Averager, LocalOps

    class Counting(LocalOps):
        def __init__(self, n):
            super().__init__(n)
            self.sent = []

        def post(self, send, recv, dst, src, tag):
            self.sent.append((send.numel(), dst, src))
            return super().post(send, recv, dst, src, tag)

    import torch

    from dtsim.emulator.averager import PIPELINE

    ops = Counting(world)
    Averager("int8", 1001, ops=ops)(torch.randn(1001))
    chunk = -(-1001 // (world * PIPELINE))  # each rank's chunk goes in PIPELINE pieces (PRIME's)
    assert PIPELINE == 2
    assert ops.sent == [(chunk + 4, 1 % world, world - 1)] * (2 * (world - 1) * PIPELINE)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["emulate", "--workers", "0"], "workers"),
        (["emulate", "--algorithm", "gossip"], "algorithm"),
        (["emulate", "--slow-link", "9"], "slow-link"),
        (["emulate", "--workers", "2", "--slow-link", "5:10"], "slow-link"),
        (["emulate", "--algorithm", "ddp", "--compression", "int8"], "compression"),
        (["emulate", "--algorithm", "diloco", "--compression", "zip"], "compression"),
        (["emulate", "--model", "enormous"], "model"),
        (["emulate", "--dtype", "float8"], "dtype"),
        (["emulate", "--bandwidth-mbps", "nan"], "bandwidth-mbps = nan"),
        (["emulate", "--slow-link", "0:1:2"], "slow-link"),
        # output paths are checked before a run, not after it
        (["emulate", "--report", "/nonexistent-dtsim/run.json"], "report = '/nonexistent-dtsim/run.json'"),
        (["emulate", "--report", "/tmp"], "is a folder"),
        (["emulate", "--worker-config", "/nonexistent-dtsim/run.json"], "worker-config"),
        # the canned experiments check every run's options before the first one starts
        (["emulate", "thesis", "--steps", "0"], "steps = 0"),
        (["emulate", "diloco-efficiency", "--model", "huge"], "model = 'huge'"),
    ],
)
def test_bad_options(args, needle):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    said = " ".join(r.output.split())
    assert needle in said and "Traceback" not in said and "running" not in said, said


def test_root_is_required(monkeypatch):
    from dtsim.emulator import netns

    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    with pytest.raises(ScenarioError) as exc:
        netns.require_root()
    assert "root" in exc.value.problems[0][2]


@needs_torch
def test_worker_config_runs_unchanged_under_torchrun(tmp_path):
    """The multi-host path: `--worker-config` writes the config, torchrun starts the same worker module."""
    torchrun = shutil.which("torchrun") or os.path.join(os.path.dirname(sys.executable), "torchrun")
    if not os.path.exists(torchrun):
        pytest.skip("torchrun is not on PATH (it ships with torch)")
    cfg = tmp_path / "run.json"
    r = runner.invoke(
        app,
        [
            "emulate",
            "--worker-config",
            str(cfg),
            "--workers",
            "2",
            "--model",
            "nano",
            "--steps",
            "1",
            "--batch",
            "2",
            "--seq-len",
            "16",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "torchrun" in r.output
    p = subprocess.run(
        [torchrun, "--standalone", "--nproc-per-node", "2", "-m", "dtsim.emulator.worker", str(cfg)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    import json

    records = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    assert [rec["rank"] for rec in records] == [0, 1] and records[0]["world"] == 2
    assert len(records[0]["syncs"]) == 2  # one warm-up and one measured step
    assert all(math.isfinite(s["loss"]) for rec in records for s in rec["steps"])


# --- with root: real runs ---------------------------------------------------------------------------------------


@needs_root
def test_two_worker_ddp_over_a_capped_link():
    from dtsim.emulator.launcher import EmulateOptions, run

    t0 = time.time()
    s = run(
        EmulateOptions(
            workers=2, bandwidth_mbps=50, model="tiny", steps=2, batch=2, seq_len=32, timeout_s=110
        )
    )
    assert time.time() - t0 < 120
    assert s.sync_events == 2
    # 2(N−1)/N × gradient bytes on the wire, headers and ACKs reported apart
    assert abs(s.bytes_error) <= 0.03
    assert s.protocol_overhead_bytes_per_rank_per_sync > 0
    assert s.expected_bytes_per_rank_per_sync == pytest.approx(s.gradient_bytes)
    assert abs(s.sync_error) <= 0.25
    assert s.tokens_per_s > 0 and s.loss_last > 0
    assert s.run.versions["torch"] and s.run.machine["cpus"]
    assert _leftovers() == ([], [])


@needs_root
def test_diloco_int8_sends_a_quarter_of_the_bytes():
    from dtsim.emulator.launcher import EmulateOptions, run

    s = run(
        EmulateOptions(
            workers=2,
            bandwidth_mbps=100,
            algorithm="diloco",
            inner_steps=2,
            compression="int8",
            model="tiny",
            steps=2,
            batch=2,
            seq_len=32,
        )
    )
    assert abs(s.bytes_error) <= 0.05
    assert s.expected_bytes_per_rank_per_sync == pytest.approx(s.params * 2 * 1 / 2 + 2 * 2 * 4, rel=1e-3)
    assert s.evals and all(math.isfinite(e["loss"]) for e in s.evals)
    assert _leftovers() == ([], [])


@needs_root
def test_cli_json_summary_and_report(tmp_path):
    report = tmp_path / "run.json"
    r = runner.invoke(
        app,
        [
            "emulate",
            "--workers",
            "2",
            "--bandwidth-mbps",
            "200",
            "--model",
            "tiny",
            "--steps",
            "1",
            "--batch",
            "2",
            "--seq-len",
            "32",
            "--json",
            "--report",
            str(report),
        ],
    )
    assert r.exit_code == 0, r.output
    import json

    d = json.loads(r.stdout)
    for key in (
        "bytes_sent_per_rank_per_sync",
        "expected_bytes_per_rank_per_sync",
        "measured_sync_s",
        "predicted_sync_s",
        "measured_step_s",
        "predicted_step_s",
        "tokens_per_s",
    ):
        assert d[key] is not None, key
    assert "emulate" in d["run"]["command"]
    full = json.loads(report.read_text())
    assert len(full["records"]) == 2 and report.with_suffix(".csv").read_text().startswith("rank")
    # --json is the report's headline: the same values without events, evals and raw records
    assert {k: v for k, v in full.items() if k not in ("value_bytes", "events", "evals", "records")} == d


@needs_root
def test_latency_without_netem_is_refused_or_approximate():
    from dtsim.emulator.launcher import netem_supported

    if netem_supported():
        pytest.skip("this kernel has netem; the refusal path cannot be exercised")
    r = runner.invoke(app, ["emulate", "--latency-ms", "5", "--model", "tiny", "--steps", "1"])
    assert r.exit_code == 2 and "netem" in r.output
    r = runner.invoke(
        app,
        [
            "emulate",
            "--latency-ms",
            "5",
            "--latency-mode",
            "app",
            "--workers",
            "2",
            "--model",
            "tiny",
            "--steps",
            "1",
            "--batch",
            "2",
            "--seq-len",
            "32",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert '"latency_approximate": true' in r.stdout


def _snapshot() -> dict[str, list[str]]:
    """What a run may leave: the emulator's namespaces, the host's interfaces, worker processes,
    temporary directories and state files."""
    import glob

    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    workers = subprocess.run(["pgrep", "-f", "dtsim.emulator.worker"], capture_output=True, text=True).stdout
    return {
        "namespaces": sorted(line.split()[0] for line in ns.splitlines() if line.startswith("dtsim-")),
        "host interfaces": sorted(line.split(":")[1].strip() for line in links.splitlines()),
        "worker processes": sorted(workers.split()),
        "directories": sorted(glob.glob(os.path.join(tempfile.gettempdir(), "dtsim-emu-*"))),
        "state files": sorted(glob.glob("/run/dtsim/*.json")),
    }


def _state_files() -> set[str]:
    import glob

    return set(glob.glob("/run/dtsim/*.json"))


def _start_long_run(until: str = "training"):
    """A run that would take minutes (5 Mbit/s links), in a session of its own so a test can signal its
    whole process group as a terminal's Ctrl-C does. Returns (process, its state file) once it is
    `until` "training" (both workers recorded, well into their steps) or "setting up" (its state file
    exists: the network is being built)."""
    import json

    cmd = [sys.executable, "-m", "dtsim", "emulate", "--workers", "2", "--bandwidth-mbps", "5"]
    cmd += ["--model", "mini", "--steps", "50", "--timeout", "300"]
    before = _state_files()
    p = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        new = sorted(_state_files() - before)
        if new and until == "setting up":
            return p, new[0]
        if new:
            with contextlib.suppress(OSError, ValueError):
                if len(json.loads(Path(new[0]).read_text())["workers"]) == 2:
                    time.sleep(1.5)  # well into training
                    return p, new[0]
        time.sleep(0.005 if until == "setting up" else 0.1)
    p.kill()
    raise AssertionError(f"the run never got to {until}: {p.communicate()[0][-2000:]}")


def _ctrl_c(p: subprocess.Popen, times: int, gap_s: float) -> None:
    for i in range(times):
        if i:
            time.sleep(gap_s)
        os.killpg(p.pid, signal.SIGINT)  # the whole group, as a terminal sends it


@needs_root
@pytest.mark.parametrize(("times", "gap_s"), [(1, 0.0), (2, 0.02), (2, 0.05)])
def test_interrupted_run_leaves_nothing(times, gap_s):
    """Ctrl-C, and two Ctrl-Cs 20 or 50 ms apart (the second lands while the first one's removal
    runs): nothing is left, and the run says what it removed only because it did."""
    before = _snapshot()
    p, _ = _start_long_run()
    _ctrl_c(p, times, gap_s)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 130, out
    assert _snapshot() == before, out
    assert "removed what the run had made: 3 namespaces" in out and "could not" not in out, out
    assert "5 interfaces, 4 qdiscs, 2 processes, 1 directory" in out, out
    assert "Traceback" not in out


@needs_root
def test_double_ctrl_c_while_the_network_is_built_leaves_nothing():
    before = _snapshot()
    p, _ = _start_long_run(until="setting up")
    _ctrl_c(p, 2, 0.02)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 130, out
    assert _snapshot() == before, out
    assert "interrupted (SIGINT): removed what the run had made" in out and "Traceback" not in out, out


@needs_root
@pytest.mark.parametrize("reclaimer", ["--cleanup", "the next run"])
def test_sigkilled_run_is_reclaimed(reclaimer):
    """kill -9 of the launcher: its workers die with it (PR_SET_PDEATHSIG); its namespaces, interfaces,
    qdiscs and directory stay recorded until `--cleanup` or the next run removes them."""
    import json

    before = _snapshot()
    p, state = _start_long_run()
    run_id = os.path.basename(state)[:-5]
    recorded = json.loads(Path(state).read_text())
    p.kill()
    p.communicate(timeout=30)
    deadline = time.time() + 5
    while time.time() < deadline and _snapshot()["worker processes"] != before["worker processes"]:
        time.sleep(0.05)
    left = _snapshot()
    assert left["worker processes"] == before["worker processes"]  # no orphan workers
    assert set(left["namespaces"]) - set(before["namespaces"]) == set(recorded["namespaces"])
    assert state in left["state files"] and recorded["directories"][0] in left["directories"]
    if reclaimer == "--cleanup":
        r = runner.invoke(app, ["emulate", "--cleanup"])
        assert r.exit_code == 0, r.output
        said = r.stdout
    else:
        from dtsim.emulator.launcher import EmulateOptions, run

        notes: list[str] = []
        run(
            EmulateOptions(workers=2, model="nano", steps=1, batch=1, seq_len=8, calib_steps=1),
            notice=notes.append,
        )
        said = "\n".join(notes)
    assert f"run {run_id} (process {recorded['pid']} has ended): removed 3 namespaces" in said, said
    assert "5 interfaces, 4 qdiscs" in said and f"1 directory ({recorded['directories'][0]})" in said, said
    assert _snapshot() == before, said


@needs_root
def test_a_live_run_survives_another_cleanup():
    before = _snapshot()
    p, state = _start_long_run()
    run_id = os.path.basename(state)[:-5]
    during = _snapshot()
    c = subprocess.run(
        [sys.executable, "-m", "dtsim", "emulate", "--cleanup"], capture_output=True, text=True, timeout=60
    )
    assert c.returncode == 0, c.stdout + c.stderr
    assert f"run {run_id}: its state file is locked" in c.stdout and "left alone" in c.stdout, c.stdout
    assert _snapshot() == during and p.poll() is None  # every namespace, worker and file still there
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, out
    assert "interrupted (SIGTERM): removed what the run had made" in out, out
    assert _snapshot() == before, out


@needs_root
def test_killed_worker_leaves_nothing():
    before = _snapshot()
    p, state = _start_long_run()
    import json

    victim = json.loads(Path(state).read_text())["workers"][0][0]
    os.kill(int(victim), signal.SIGKILL)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 2 and "worker" in out
    assert _snapshot() == before, out


# --- root and iproute2, no torch: recorded and unrecorded leftovers, built by hand ---------------------------


needs_netns = pytest.mark.skipif(
    not (IS_ROOT and HAVE_IP),
    reason="needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN, and iproute2 (network namespaces); "
    f"root with them={IS_ROOT}, iproute2={HAVE_IP}",
)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _fake_run(run_id: str, with_qdisc: bool = True):
    """What a killed run leaves, made by hand: a bridge and a worker namespace joined by a veth, a tbf
    qdisc, a process inside the worker's namespace and a temporary directory with a file."""
    br, w0 = f"dtsim-{run_id}-br", f"dtsim-{run_id}-w0"
    _ip("netns", "add", br)
    _ip("netns", "add", w0)
    _ip("-n", br, "link", "add", "p0", "type", "veth", "peer", "name", "eth0", "netns", w0)
    if with_qdisc:
        subprocess.run(
            [
                "tc",
                "-n",
                w0,
                "qdisc",
                "add",
                "dev",
                "eth0",
                "root",
                "tbf",
                "rate",
                "1mbit",
                "burst",
                "32k",
                "latency",
                "10ms",
            ],
            check=True,
        )
    sleeper = subprocess.Popen(["ip", "netns", "exec", w0, "sleep", "300"], start_new_session=True)
    work = os.path.join(tempfile.gettempdir(), f"dtsim-emu-{run_id}")
    os.mkdir(work)
    with open(os.path.join(work, "rank0.log"), "w") as fh:
        fh.write("x")
    return br, w0, sleeper, work


@needs_netns
def test_cleanup_reclaims_everything_a_dead_run_recorded():
    """A state file whose process is gone (a PID with another start time) and whose lock is free: every
    recorded namespace, interface, qdisc, worker and directory goes, each counted, then the record."""
    import secrets

    from dtsim.emulator.runstate import RunState

    before = _snapshot()
    run_id = secrets.token_hex(3)
    br, w0, sleeper, work = _fake_run(run_id)
    time.sleep(0.2)  # the sleeper is inside its namespace
    state = RunState.register(run_id, [br, w0], [work])
    state.plan([], [(br, "p0"), (w0, "eth0")], [(w0, "eth0", "tbf")])
    state.add_worker(sleeper.pid)
    state.start = (state.start or 0) + 1  # "its process": the same PID, a different start time: not us
    state._write()
    state.detach()
    try:
        r = runner.invoke(app, ["emulate", "--cleanup"])
        assert r.exit_code == 0, r.output
        assert f"run {run_id} (process {os.getpid()} has ended): removed 2 namespaces" in r.stdout, r.stdout
        assert f"2 interfaces, 1 qdisc, 1 process, 1 directory ({work})" in r.stdout, r.stdout
        assert sleeper.wait(timeout=5) == -signal.SIGKILL
        assert _snapshot() == before
    finally:
        sleeper.kill()
        for ns in (w0, br):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        state.path.unlink(missing_ok=True)


@needs_netns
@pytest.mark.parametrize("how", ["locked", "unlocked, its process running"])
def test_cleanup_leaves_a_live_runs_resources_alone(how):
    """A live run (here: this test process) keeps everything, whether it still holds its state file's
    lock or has dropped it while ending (its PID and start time still running)."""
    import secrets

    from dtsim.emulator.runstate import RunState

    run_id = secrets.token_hex(3)
    br, w0, sleeper, work = _fake_run(run_id, with_qdisc=False)
    state = RunState.register(run_id, [br, w0], [work])
    state.add_worker(sleeper.pid)
    if how != "locked":
        state.detach()
    try:
        during = _snapshot()
        r = runner.invoke(app, ["emulate", "--cleanup"])
        assert r.exit_code == 0, r.output
        assert f"run {run_id}: " in r.stdout and "left alone" in r.stdout, r.stdout
        assert _snapshot() == during and sleeper.poll() is None
    finally:
        removal = state.remove_all()
        state.release()
    assert removal.complete and sorted(removal.namespaces) == sorted([br, w0]), removal
    assert removal.directories == [work] and removal.processes == [sleeper.pid]
    assert sleeper.wait(timeout=5) == -signal.SIGKILL


@needs_netns
def test_cleanup_of_namespaces_no_state_file_claims():
    """Unrecorded namespaces (an older dtsim, a lost record) go when no process in them has a live
    launcher, stay while one does; a namespace dtsim never names is not touched."""
    import secrets

    dead, live = secrets.token_hex(3), secrets.token_hex(3)
    mine = f"dtsim-mine-{secrets.token_hex(2)}"
    for ns in (f"dtsim-{dead}-w0", f"dtsim-{dead}-br", f"dtsim-{live}-w0", mine):
        _ip("netns", "add", ns)
    # its parent is this test, which is running: a launcher still attached
    sleeper = subprocess.Popen(["ip", "netns", "exec", f"dtsim-{live}-w0", "sleep", "300"])
    try:
        time.sleep(0.2)
        r = runner.invoke(app, ["emulate", "--cleanup"])
        assert r.exit_code == 0, r.output
        assert f"run {dead} (no state file" in r.stdout and f"dtsim-{dead}-w0" in r.stdout, r.stdout
        assert (
            f"unrecorded namespaces of run {live}: process {sleeper.pid}'s parent {os.getpid()}" in r.stdout
        )
        left = _snapshot()["namespaces"]
        assert f"dtsim-{dead}-w0" not in left and f"dtsim-{live}-w0" in left and mine in left
        sleeper.kill()
        sleeper.wait()
        r = runner.invoke(app, ["emulate", "--cleanup"])
        assert f"run {live} (no state file" in r.stdout, r.stdout
        assert f"dtsim-{live}-w0" not in _snapshot()["namespaces"]
    finally:
        sleeper.kill()
        for ns in (f"dtsim-{dead}-w0", f"dtsim-{dead}-br", f"dtsim-{live}-w0", mine):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


# --- no root: the state file's lock and the process identity it records -------------------------------------


def test_state_file_is_locked_while_its_run_lives(tmp_path):
    import json

    from dtsim.emulator.runstate import RunState, _lock

    state = RunState.register("abc123", ["dtsim-abc123-br"], ["/tmp/dtsim-emu-abc123"], state_dir=tmp_path)
    path = tmp_path / "abc123.json"
    assert json.loads(path.read_text())["namespaces"] == ["dtsim-abc123-br"]
    assert _lock(path) is None  # held by the run (another open file description cannot take it)
    state.plan(["dtsim-abc123-w0"], [("dtsim-abc123-w0", "eth0")], [])
    assert _lock(path) is None  # each rewrite is locked before it replaces the file
    assert json.loads(path.read_text())["namespaces"] == ["dtsim-abc123-br", "dtsim-abc123-w0"]
    assert [p.name for p in tmp_path.iterdir()] == ["abc123.json"]  # no half-written file left
    with pytest.raises(FileExistsError):  # a second run drawing the same id cannot take the file over
        RunState.register("abc123", [], [], state_dir=tmp_path)
    assert json.loads(path.read_text())["namespaces"] == ["dtsim-abc123-br", "dtsim-abc123-w0"]
    assert _lock(path) is None and [p.name for p in tmp_path.iterdir()] == ["abc123.json"]
    state.detach()
    fd = _lock(path)
    assert fd is not None  # the run let go: a reclaimer may take it
    os.close(fd)
    state.release()
    assert not path.exists()


def test_process_identity_survives_odd_names_and_pid_reuse(tmp_path):
    from dtsim.emulator.runstate import _stat, running, start_time

    me = os.getpid()
    assert running(me, start_time(me)) and not running(me, start_time(me) + 1)  # a reused PID is not us
    odd = tmp_path / "a) (b c"  # the command name in /proc/PID/stat holds spaces and parentheses
    odd.symlink_to(shutil.which("sleep"))
    p = subprocess.Popen([str(odd), "30"])
    try:
        time.sleep(0.1)
        status, parent, start = _stat(p.pid)
        assert status in "RS" and parent == me and start == start_time(p.pid) and running(p.pid, start)
    finally:
        p.kill()
        p.wait()
    assert not running(p.pid, start)  # exited (and reaped)


def _cli_without_torch(*args: str) -> subprocess.CompletedProcess:
    """`dtsim ARGS` in a fresh interpreter where `import torch` fails, as on a machine without the extra."""
    code = (
        "import sys; sys.modules['torch'] = None; "
        f"sys.argv = ['dtsim', *{list(args)!r}]; "
        "from dtsim.interfaces.cli.main import main; main()"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ["emulate", "--workers", "2"],
        ["emulate", "thesis"],
        ["emulate", "diloco-efficiency"],
    ],
)
def test_emulate_without_torch_names_the_extra(args):
    """Issue 15: `emulate` without torch was a traceback; it is one line naming the extra and the pip
    command (its [emulator] printed as typed, not eaten as Rich markup), exit 2."""
    p = _cli_without_torch(*args)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr + p.stdout
    said = " ".join(p.stderr.split())  # Rich wraps at the terminal's width
    assert "extra = 'emulator': PyTorch is not installed" in said, said
    assert "python3 -m pip install 'dtsim[emulator]'" in said, said


def test_without_torch_options_are_still_checked_and_configs_written(tmp_path):
    p = _cli_without_torch("emulate", "--workers", "0")
    assert p.returncode == 2 and "workers = 0" in p.stderr and "Traceback" not in p.stderr, p.stderr
    cfg = tmp_path / "run.json"
    p = _cli_without_torch("emulate", "--worker-config", str(cfg), "--workers", "2", "--model", "nano")
    assert p.returncode == 0 and cfg.exists(), p.stderr


def test_summary_is_typed_and_as_dict_is_the_report():
    """Issue 12 item 5: `dtsim.emulate` returns an EmulationSummary; summarize() of two synthetic worker
    records (no root, no torch) gives its medians, errors against the prediction, and JSON-ready dicts."""
    import dataclasses
    import json

    from dtsim.emulator.launcher import HEADER_BYTES, EmulateOptions, summarize
    from dtsim.emulator.summary import EmulationSummary, SyncEvent

    opts = EmulateOptions(workers=2, bandwidth_mbps=100, model="tiny", steps=2, batch=2, seq_len=32)
    sync = {"sync_s": 0.5, "step_s": 1.0, "tx_bytes": 2_000_000, "tx_packets": 100, "rx_bytes": 1_900_000}
    records = [
        {
            "rank": r,
            "params": 1_000_000,
            "value_bytes": 4,
            "calibration": [{"forward_s": 0.1, "backward_s": 0.2, "optimizer_s": 0.01}],
            "syncs": [
                {**sync, "warmup": True},
                {**sync, "buckets": 1},
                {**sync, "sync_s": 0.7, "buckets": 1},
            ],
            "steps": [{"loss": 5.0}, {"loss": 4.0}],
            "evals": [],
        }
        for r in range(2)
    ]
    s = summarize(opts, records)
    assert isinstance(s, EmulationSummary) and all(isinstance(e, SyncEvent) for e in s.events)
    assert s.sync_events == 2 and s.measured_sync_s == pytest.approx(0.6) and s.measured_step_s == 1.0
    assert s.payload_bytes_per_rank_per_sync == 2_000_000 - HEADER_BYTES * 100
    assert s.bytes_error == pytest.approx(
        s.payload_bytes_per_rank_per_sync / s.expected_bytes_per_rank_per_sync - 1
    )
    assert s.sync_error == pytest.approx(0.6 / s.predicted_sync_s - 1)
    # unshaped links: dtsim predicts latency alone, so there is no sync error to report
    unshaped = summarize(dataclasses.replace(opts, bandwidth_mbps=None), records)
    assert unshaped.sync_error is None and 0 < unshaped.predicted_sync_s < 0.01
    assert (s.loss_first, s.loss_last) == (5.0, 4.0)
    d = json.loads(json.dumps(s.as_dict()))
    assert d["events"][0] == {
        "sync_s": 0.5,
        "step_s": 1.0,
        "tx_bytes": [2_000_000] * 2,
        "tx_packets": [100] * 2,
        "rx_bytes": [1_900_000] * 2,
        "buckets": 1,
        "arrival_skew_s": None,
    }
    assert set(s.headline()) == set(d) - {"value_bytes", "events", "evals", "records"}


def test_diloco_sync_runs_from_the_last_entry_to_the_last_exit():
    """A DiLoCo sync is one blocking collective: a rank that enters it early waits for the others' inner
    steps, not for the network. summarize() times it from the last rank's entry to the last rank's exit
    (both on the machine's one monotonic clock) and reports the early rank's wait as arrival skew; the
    slowest rank's own time (entry to exit) would count that wait as communication."""
    from dtsim.emulator.launcher import EmulateOptions, summarize

    opts = EmulateOptions(workers=2, bandwidth_mbps=100, algorithm="diloco", model="tiny", steps=1, batch=2)
    base = {"step_s": 1.0, "tx_bytes": 1, "tx_packets": 1, "rx_bytes": 1, "buckets": 1}
    # rank 0 enters at 10.00 and leaves at 10.30; rank 1 enters at 10.20 and leaves at 10.31
    at = [(10.00, 10.30), (10.20, 10.31)]
    records = [
        {
            "rank": r,
            "clock_id": "boot-1",
            "params": 1_000_000,
            "value_bytes": 4,
            "calibration": [{"forward_s": 0.1, "backward_s": 0.2, "optimizer_s": 0.01}],
            "syncs": [{**base, "sync_s": at[r][1] - at[r][0], "sync_at": list(at[r])}],
            "steps": [{"loss": 5.0}],
            "evals": [],
        }
        for r in range(2)
    ]
    s = summarize(opts, records)
    assert s.measured_sync_s == pytest.approx(0.11)  # 10.20 → 10.31, not rank 0's 0.30
    assert s.events[0].arrival_skew_s == pytest.approx(0.20)
    assert s.measured_arrival_skew_s == pytest.approx(0.20)
    # ranks on two machines (torchrun on real hosts) have two clocks: their own times are used instead
    for r in records:
        r["clock_id"] = f"boot-{r['rank']}"
    apart = summarize(opts, records)
    assert apart.measured_sync_s == pytest.approx(0.30) and apart.measured_arrival_skew_s is None


def test_nested_stop_requests_share_one_record():
    """The CLI holds one StopRequests around a run and its report: a Ctrl-C before the run's own one is
    installed is seen by it (the run stops at once), and one after the run's has been removed is noted
    by the outer one rather than raised half-way through the report (the CI failure: a second Ctrl-C
    20 ms after the first cut the report while Rich was being imported; the exit was 130 with no words)."""
    from dtsim.emulator.launcher import StopRequests

    before = {s: signal.getsignal(s) for s in StopRequests.HANDLED}
    with StopRequests() as outer:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
        with StopRequests() as inner:
            assert inner.received == [signal.SIGINT]
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
    assert outer.received == [signal.SIGINT, signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
    # the CLI's own, once a stop was asked for, ignores stops past its block (its process exits; a
    # Python handler would be reset to the default at finalization, and a Ctrl-C landing then killed
    # the process by SIGINT after its clean report: exit -2, the CI failure of stop 35), and a later
    # run does not take that finished record as its own
    keep = StopRequests(until_exit=True)
    with keep:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
    try:
        assert all(signal.getsignal(s) == signal.SIG_IGN for s in (signal.SIGINT, signal.SIGTERM))
        os.kill(os.getpid(), signal.SIGINT)  # ignored, not raised
        time.sleep(0.01)
        assert keep.received == [signal.SIGINT]
        with StopRequests() as later:
            assert later.received == []
    finally:
        for s, h in before.items():
            signal.signal(s, h)
