"""The emulator (issue 7): real gloo training between network namespaces over tc-shaped links.

Tests that build namespaces need root, iproute2 and torch; without them they skip and say which."""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import time

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

IS_ROOT = os.geteuid() == 0
HAVE_IP = shutil.which("ip") is not None and shutil.which("tc") is not None
needs_torch = pytest.mark.skipif(
    not HAVE_TORCH, reason="torch is not installed (pip install 'dtsim[emulator]')"
)
needs_root = pytest.mark.skipif(
    not (IS_ROOT and HAVE_IP and HAVE_TORCH),
    reason="needs root (network namespaces, veth, tc), iproute2 and torch; "
    f"root={IS_ROOT}, iproute2={HAVE_IP}, torch={HAVE_TORCH}",
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
    # int8: one byte per value each way plus one fp32 scale per chunk
    assert compress.expected_bytes_per_rank("int8", 1, 1000, 4) == 2 * 3 / 4 * 1000 + 2 * 3 * 4
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
    ],
)
def test_bad_options(args, needle):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output


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
    assert s.expected_bytes_per_rank_per_sync == pytest.approx(s.params * 2 * 1 / 2 + 2 * 4, rel=1e-3)
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


def _start_long_run():
    cmd = [
        sys.executable,
        "-m",
        "dtsim",
        "emulate",
        "--workers",
        "2",
        "--bandwidth-mbps",
        "5",
        "--model",
        "mini",
        "--steps",
        "50",
        "--timeout",
        "300",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        names, procs = _leftovers()
        if len(names) >= 3 and len(procs) >= 2:
            time.sleep(2)  # well into training
            return p
        time.sleep(0.2)
    p.kill()
    raise AssertionError("the run never started its workers")


@needs_root
def test_interrupted_run_leaves_nothing():
    p = _start_long_run()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode != 0
    assert _leftovers() == ([], []), out


@needs_root
def test_killed_worker_leaves_nothing():
    p = _start_long_run()
    victim = subprocess.run(
        ["pgrep", "-f", "dtsim.emulator.worker"], capture_output=True, text=True
    ).stdout.split()[0]
    os.kill(int(victim), signal.SIGKILL)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 2 and "worker" in out
    assert _leftovers() == ([], []), out


@needs_root
def test_cleanup_command_removes_a_killed_runs_namespaces():
    subprocess.run(["ip", "netns", "add", "dtsim-deadbe-w0"], check=True)
    subprocess.run(["ip", "netns", "add", "dtsim-deadbe-br"], check=True)
    r = runner.invoke(app, ["emulate", "--cleanup"])
    assert r.exit_code == 0 and "dtsim-deadbe-w0" in r.stdout
    assert _leftovers() == ([], [])


def test_summary_is_typed_and_as_dict_is_the_report():
    """Issue 12 item 5: `dtsim.emulate` returns an EmulationSummary; summarize() of two synthetic worker
    records (no root, no torch) gives its medians, errors against the prediction, and JSON-ready dicts."""
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
    assert (s.loss_first, s.loss_last) == (5.0, 4.0)
    d = json.loads(json.dumps(s.as_dict()))
    assert d["events"][0] == {
        "sync_s": 0.5,
        "step_s": 1.0,
        "tx_bytes": [2_000_000] * 2,
        "tx_packets": [100] * 2,
        "rx_bytes": [1_900_000] * 2,
        "buckets": 1,
    }
    assert set(s.headline()) == set(d) - {"value_bytes", "events", "evals", "records"}
