"""`dtsim dataparallel …` and POST /api/dataparallel/… against the worked examples the documents state
(Data Parallelism from Associativity, its chapter text and exercises; Camilli 2025 ch. 3 and 5) and
hand-computed numbers; bad input exits 2 (422 over HTTP) naming the field; --json is strict JSON."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from dtsim.interfaces.cli.main import app
from dtsim.models import dataparallel as dpm
from dtsim.physics import dataparallel as dp

runner = CliRunner()


def _strict(text: str):
    def refuse(name: str):
        raise ValueError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


def run_json(*args: str) -> dict:
    res = runner.invoke(app, ["dataparallel", *args, "--json"])
    assert res.exit_code == 0, res.output
    return _strict(res.stdout)


def run_fail(*args: str) -> str:
    res = runner.invoke(app, ["dataparallel", *args])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    return " ".join(res.output.split())  # Rich wraps long lines


# --- Data Parallelism from Associativity: the documents' numbers --------------------------------------


def test_chapter_example_h100_needs_about_1500_samples():
    # "Compute-Communication Ratio": H100 with F = 2·10^15 FLOP/s, NVLink β = 900 GB/s, FP16:
    # R = 675·b/10^6, so R > 1 needs b > 10^6/675 ≈ 1,500
    out = run_json("critical-batch", "--tflops", "2000", "--bandwidth-gbs", "900", "--precision", "fp16")
    assert out["critical_batch_tokens"] == pytest.approx(1e6 / 675)
    assert round(out["critical_batch_tokens"], -2) == 1500
    timed = run_json("critical-batch", "--tflops", "2000", "--bandwidth-gbs", "900", "--batch-tokens", "1000")
    assert timed["ratio"] == pytest.approx(675 * 1000 / 1e6)
    assert timed["bound"] == "communication"


def test_exercise_2_seven_billion_on_eight_h100s():
    # Exercise 2: Ψ = 7·10^9, P = 8, β = 900 GB/s, F = 989·10^12, FP16, R = 2 → b = 1,465;
    # verification: T_comm = 2·7/8·(7·10^9·2/900·10^9) = 27.2 ms, T_compute = 62.2 ms, R = 2.29
    args = ("--tflops", "989", "--bandwidth-gbs", "900", "--params-b", "7", "--ranks", "8", "--ratio", "2")
    out = run_json("critical-batch", *args)
    assert round(out["batch_for_ratio_tokens"]) == 1465
    assert out["comm_time_s"] * 1e3 == pytest.approx(27.2, abs=0.05)
    assert out["compute_time_s"] * 1e3 == pytest.approx(62.2, abs=0.05)
    assert out["ratio_at_ranks"] == pytest.approx(2.29, abs=0.005)
    assert out["ratio"] == pytest.approx(2.0)


def test_exercise_3_overlap_of_100_equal_layers():
    # Exercise 3: 100 equal layers, all-reduce 100 ms, backward 80 ms → 79.2 % overlapped, step 100.8 ms
    # (backward + exposed; the exercise counts no forward), 180 ms without overlap
    out = run_json("overlap", "--buckets", "100", "--backward-ms", "80", "--comm-ms", "100")
    assert out["overlap_fraction"] == pytest.approx(0.792)
    assert out["step_s"] * 1e3 == pytest.approx(100.8)
    assert out["step_no_overlap_s"] * 1e3 == pytest.approx(180.0)
    assert out["exposed_comm_s"] * 1e3 == pytest.approx(20.8)


def test_exercise_5_accumulation_over_four_micro_batches():
    # Exercise 5: 100 ms compute and 40 ms all-reduce a micro-batch, A = 4: 4·100 + 40 = 440 ms a step;
    # all-reducing each micro-batch is 4·(100 + 40) = 560 ms
    out = run_json("accumulation", "--compute-ms", "100", "--comm-ms", "40", "--micro-batches", "4")
    assert out["step_accumulation_s"] * 1e3 == pytest.approx(440.0)
    assert out["step_no_accumulation_s"] * 1e3 == pytest.approx(560.0)
    assert out["speedup"] == pytest.approx(560 / 440)
    assert out["speedup_limit"] == pytest.approx(140 / 100)


@pytest.mark.parametrize("a", [1, 2, 8, 1000])
def test_accumulation_with_equal_times_is_2a_over_a_plus_1(a):
    # "Communication Pattern": for T_r = T_c, speedup = 2A/(A + 1) → 2 as A → ∞
    out = run_json("accumulation", "--compute-ms", "7", "--comm-ms", "7", "--micro-batches", str(a))
    assert out["speedup"] == pytest.approx(2 * a / (a + 1))
    assert out["speedup_limit"] == pytest.approx(2.0)


# --- scaling: hand-computed -----------------------------------------------------------------------------


def test_scaling_efficiencies_by_hand():
    # 1B parameters (2 GB in BF16) at 100 GB/s and α = 10 µs, 100 TFLOP/s, b = 10,000 tokens:
    # T_c = 6·1e9·1e4/1e14 = 0.6 s; T_r(4) = 6·10 µs + 2·3/4·2e9/1e11 = 0.03006 s;
    # E_weak(4) = 0.6/0.63006; strong (B = 40,000): T_c(1) = 2.4 s, E = 2.4/(4·(0.6 + 0.03006))
    args = ("--tflops", "100", "--bandwidth-gbs", "100", "--latency-us", "10", "--params-b", "1")
    out = run_json(
        "scaling", *args, "--ranks", "1,4", "--batch-tokens", "1e4", "--global-batch-tokens", "4e4"
    )
    one, four = out["rows"]
    assert (one["weak_efficiency"], one["strong_efficiency"], one["comm_time_s"]) == (1.0, 1.0, 0.0)
    assert four["comm_time_s"] == pytest.approx(6e-5 + 0.03)
    assert four["weak_efficiency"] == pytest.approx(0.6 / 0.63006)
    assert four["strong_efficiency"] == pytest.approx(2.4 / (4 * (0.6 + 0.03006)))
    assert four["strong_batch_tokens"] == 1e4
    assert out["weak_limit"] == 0.0  # α > 0: the latency term grows without bound


def test_weak_limit_without_latency_is_r_over_r_plus_1():
    # α = 0: T_r → 2S/β, so E_weak → T_c/(T_c + 2S/β); with T_c = 0.6 s and 2S/β = 0.04 s, 0.6/0.64;
    # E ≥ 0.9 ⇔ 0.04·(P−1)/P ≤ 0.6/9 — always: no limit
    args = ("--tflops", "100", "--bandwidth-gbs", "100", "--params-b", "1", "--batch-tokens", "1e4")
    out = run_json("scaling", *args)
    assert out["weak_limit"] == pytest.approx(0.6 / 0.64)
    assert out["weak_max_ranks"] is None
    # strong, α = 0: P ≤ 1 + X/(2S/β) with X = T_c(1)·(1/0.9 − 1) = 0.6/9: P ≤ 2.67 → 2
    assert out["strong_max_ranks"] == 2


@pytest.mark.parametrize("fabric", ["nvlink4", "ib-ndr", "ethernet-40g"])
@pytest.mark.parametrize("target", [0.5, 0.9, 0.99])
def test_rank_limits_are_the_last_p_that_keeps_the_target(fabric, target):
    s = dpm.setup(fabric=fabric, params_b=7.0)
    r = dpm.scaling(s, [1], 65536.0, 4e6, target)
    t_c, t_one = float(s.compute_time(65536.0)), float(s.compute_time(4e6))
    for p_max, eff in (
        (r.weak_max_ranks, lambda p: dp.weak_scaling_efficiency(t_c, s.comm_time(p))),
        (r.strong_max_ranks, lambda p: dp.strong_scaling_efficiency(t_one, p, s.comm_time(p))),
    ):
        assert p_max is not None  # α > 0 on every catalog fabric
        assert p_max == 1 or eff(p_max) >= target
        assert eff(p_max + 1) < target


def test_critical_batch_rises_with_compute_and_falls_with_bandwidth():
    base = run_json("critical-batch", "--tflops", "1000")["critical_batch_tokens"]
    assert run_json("critical-batch", "--tflops", "2000")["critical_batch_tokens"] == pytest.approx(2 * base)
    faster = run_json("critical-batch", "--tflops", "1000", "--bandwidth-gbs", "1800")
    assert faster["critical_batch_tokens"] == pytest.approx(base / 2)
    fp32 = run_json("critical-batch", "--tflops", "1000", "--precision", "fp32")
    assert fp32["critical_batch_tokens"] == pytest.approx(2 * base)


def test_gpu_and_fabric_come_from_the_catalog():
    from dtsim import catalog

    out = run_json("critical-batch", "--gpu", "a100-80gb", "--fabric", "nvlink3", "--mfu", "0.5")
    assert out["flop_s"] == pytest.approx(catalog.gpus()["a100-80gb"].fp16_tflops * 1e12 * 0.5)
    assert out["bandwidth_bytes_s"] == pytest.approx(catalog.fabrics()["nvlink3"].bus_bytes_per_s)
    assert out["latency_s"] == catalog.fabrics()["nvlink3"].latency_s


def test_overlap_from_hardware_splits_compute_two_to_four_and_counts_25_mb_buckets():
    # 7B in BF16 = 14 GB of gradient: 560 buckets of 25 MB; forward 2/6 and backward 4/6 of 6·Ψ·b/F
    out = run_json("overlap", "--tflops", "1000", "--batch-tokens", "1000")
    t_c = 6 * 7e9 * 1000 / 1e15
    assert out["buckets"] == 560
    assert out["forward_time_s"] == pytest.approx(t_c / 3)
    assert out["backward_time_s"] == pytest.approx(2 * t_c / 3)
    assert out["step_s"] == pytest.approx(t_c + out["exposed_comm_s"])
    assert run_json("overlap", "--bucket-mb", "14000")["buckets"] == 1


# --- the thesis (Camilli 2025) --------------------------------------------------------------------------


def test_thesis_eq_3_14_five_pbit_s():
    # eq. 3.14: 72·10^12 · 16 bit / (250 ms − 4,800 km · 5 µs/km − 23 · 28 µs) ≈ 5.1 Pbit/s
    out = run_json("sync-bandwidth", "--sync-budget-ms", "250")
    assert out["gradient_bits"] == pytest.approx(1.152e15)  # eq. 3.12: ≈ 1.15 Pbit
    assert out["propagation_s"] == pytest.approx(0.024)  # eq. 3.9: ≈ 24 ms
    assert out["min_bandwidth_bits_s"] / 1e15 == pytest.approx(5.1, abs=0.05)
    # eq. 3.8 on a 6 Pbit/s link: 24 ms + 0.644 ms + 192 ms, inside the 250 ms budget
    on_link = run_json("sync-bandwidth", "--sync-budget-ms", "250", "--bandwidth-gbps", "6e6")
    assert on_link["sync_time_s"] == pytest.approx(0.024 + 0.000644 + 0.192)
    assert on_link["fits_budget"] is True


def test_sync_bandwidth_from_step_time_and_when_latency_spends_the_budget():
    # α_net · T_batch = 0.05 · 4.9 s = 245 ms: 1.152e15 / (0.245 − 0.024644)
    out = run_json("sync-bandwidth")
    assert out["min_bandwidth_bits_s"] == pytest.approx(1.152e15 / (0.245 - 0.024644))
    none = run_json("sync-bandwidth", "--sync-budget-ms", "20")  # less than the 24 ms of fibre
    assert none["min_bandwidth_bits_s"] is None
    text = runner.invoke(app, ["dataparallel", "sync-bandwidth", "--sync-budget-ms", "20"])
    assert text.exit_code == 0 and "none suffices" in text.output


def test_thesis_eq_5_1_and_5_2_two_ranks():
    # eq. 5.2: ⌊400/(8·2)⌋ = 25 steps; eq. 5.1: 2(2−1)·328/2 · 25 = 8,200 MB per rank
    out = run_json("traffic")
    assert out["gradient_bytes"] == pytest.approx(328e6)
    assert out["steps"] == 25
    assert out["bytes_per_rank"] == pytest.approx(8200e6)


def test_thesis_eq_5_3_to_5_5_four_ranks():
    # eq. 5.3: ⌊400/(8·4)⌋ = 12 (the thesis's ws = 4 run); eq. 5.4: 2·3·328/4 · 12 = 5,904 MB per rank,
    # 492 MB an event; eq. 5.5: B_ws4/B_ws2 = 2(4−1)/2(2−1) = 3 (eq. 3.18, all ranks per event)
    four = run_json("traffic", "--ranks", "4")
    two = run_json("traffic", "--ranks", "2")
    assert four["steps"] == 12
    assert four["bytes_per_rank_per_event"] == pytest.approx(492e6)
    assert four["bytes_per_rank"] == pytest.approx(5904e6)
    assert four["bytes_per_event"] / two["bytes_per_event"] == pytest.approx(3.0)
    assert run_json("traffic", "--batch-samples", "16")["steps"] == 12  # eq. 5.3, bs = 16, ws = 2


def test_thesis_table_5_12_peak_throughput():
    # Table 5.12: 492.1 MB per event in a median 19.519 s → TH_peak = 201.7 Mbit/s (eq. 4.1)
    out = run_json("traffic", "--ranks", "4", "--params-b", "0.0820167", "--event-s", "19.519")
    assert out["bytes_per_rank_per_event"] / 1e6 == pytest.approx(492.1, abs=0.01)
    assert out["peak_throughput_bits_s"] / 1e6 == pytest.approx(201.7, abs=0.05)


# --- text output, errors, JSON ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["critical-batch", "scaling", "accumulation", "overlap", "sync-bandwidth", "traffic"]
)
def test_every_command_prints_a_table_and_strict_json(command):
    res = runner.invoke(app, ["dataparallel", command], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    assert "│" in res.output or "┃" in res.output  # a Rich table
    out = run_json(command)
    assert all(not isinstance(v, float) or math.isfinite(v) for v in out.values())


@pytest.mark.parametrize(
    ("args", "field", "allowed"),
    [
        (["critical-batch", "--params-b", "-1"], "--params-b", "> 1e-09"),
        (["critical-batch", "--mfu", "1.5"], "--mfu", "≤ 1"),
        (["critical-batch", "--precision", "fp9"], "--precision", "fp32, fp16, bf16, fp8, fp4"),
        (["critical-batch", "--gpu", "h100-sxm", "--tflops", "100"], "--gpu/--tflops", "one or the other"),
        (["critical-batch", "--gpu", "nope"], "--gpu", "unknown GPU"),
        (["critical-batch", "--fabric", "ib-ndr", "--latency-us", "2"], "--fabric", "not both"),
        (["critical-batch", "--bandwidth-gbs", "nan"], "--bandwidth-gbs", "finite"),
        (["critical-batch", "--ranks", "0"], "--ranks", "integer from 1"),
        (["scaling", "--ranks", "1,x"], "--ranks", "separated by commas"),
        (["scaling", "--ranks", "4,0"], "--ranks[1]", "integer from 1"),
        (["scaling", "--target-efficiency", "1"], "--target-efficiency", "below 1"),
        (["accumulation", "--micro-batches", "0"], "--micro-batches", "integer from 1"),
        (["accumulation", "--compute-ms", "0"], "--compute-ms", "≥ 1e-09"),
        (["overlap", "--buckets", "2", "--bucket-mb", "25"], "--buckets/--bucket-mb", "one or the other"),
        (["overlap", "--comm-ms", "-1"], "--comm-ms", "≥ 0"),
        (["sync-bandwidth", "--network-fraction", "0"], "--network-fraction", "> 0"),
        (["sync-bandwidth", "--network-fraction", "1"], "--network-fraction", "> 0 and < 1"),
        (["sync-bandwidth", "--hops", "-1"], "--hops", "integer from 0"),
        (["sync-bandwidth", "--ring-km", "inf"], "--ring-km", "finite"),
        (["traffic", "--dataset-samples", "0"], "--dataset-samples", "integer from 1"),
        (["traffic", "--event-s", "0"], "--event-s", "≥ 1e-09"),
        (["traffic", "--batch-samples", "1000"], "--batch-samples", "no full step"),
    ],
)
def test_bad_input_exits_2_naming_the_option(args, field, allowed):
    out = run_fail(*args)
    assert f"error: {field} = " in out
    assert allowed in out


def test_one_rank_has_no_communication():
    out = run_json("critical-batch", "--ranks", "1")
    assert out["comm_time_s"] == 0.0 and out["ratio_at_ranks"] is None and out["bound"] == "compute"


# --- the API: the same answers, 422 naming the field --------------------------------------------------


@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from dtsim.interfaces.api.app import create_app

    return TestClient(create_app(ui=False))


def test_api_matches_the_cli(client):
    body = {"tflops": 989, "bandwidth_gbs": 900, "params_b": 7, "ranks": 8, "ratio": 2}
    res = client.post("/api/dataparallel/critical-batch", json=body)
    assert res.status_code == 200
    cli = run_json("critical-batch", "--tflops", "989", "--params-b", "7", "--ratio", "2")
    assert res.json() == cli
    traffic = client.post("/api/dataparallel/traffic", json={"ranks": 4}).json()
    assert traffic["bytes_per_rank"] == pytest.approx(5904e6)
    acc = client.post("/api/dataparallel/accumulation", json={"compute_ms": 100, "comm_ms": 40}).json()
    assert acc["step_accumulation_s"] == pytest.approx(0.44)


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("critical-batch", {"ranks": "8"}, "ranks"),  # strict: text is not a number
        ("critical-batch", {"ranks": True}, "ranks"),
        ("scaling", {"ranks": [1, 0]}, "ranks[1]"),
        ("overlap", {"buckets": 3, "bucket_mb": 4}, "buckets/bucket_mb"),
        ("sync-bandwidth", {"step_s": None}, "step_s"),
        ("traffic", {"nodes": 3}, "nodes"),
        ("critical-batch", {"gpu": "h100-sxm", "tflops": 10}, "gpu/tflops"),
    ],
)
def test_api_bad_input_is_422_naming_the_field(client, path, body, field):
    res = client.post(f"/api/dataparallel/{path}", json=body)
    assert res.status_code == 422
    assert field in [p["field"] for p in res.json()["detail"]]


def test_api_operations_are_documented_with_examples(client):
    spec = client.get("/openapi.json").json()
    for op in ("critical-batch", "scaling", "accumulation", "overlap", "sync-bandwidth", "traffic"):
        post = spec["paths"][f"/api/dataparallel/{op}"]["post"]
        assert {"200", "422"} <= set(post["responses"])
        ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        assert spec["components"]["schemas"][ref]["examples"], op


def test_docs_examples_are_the_commands_real_output():
    """docs/dataparallel.md shows each command's output: rerun at 100 columns, the same text."""
    import re
    import shlex
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "dataparallel.md").read_text()
    blocks = re.findall(r"```text\n\$ dtsim (dataparallel [^\n]+)\n(.*?)```", text, re.S)
    assert len(blocks) == 6
    for command, shown in blocks:
        res = runner.invoke(app, shlex.split(command), env={"COLUMNS": "100"})
        assert res.exit_code == 0, res.output
        got = "\n".join(line.rstrip() for line in res.output.strip("\n").split("\n"))
        assert got == shown.strip("\n"), command


@pytest.mark.parametrize(
    ("a", "b", "c"),
    [(2e-6, -4.7e4, -3.0), (2e-6, -1.0, -3.0), (2e-6, 5.0, -3.0), (1e-12, -1e3, -1e-9), (4.0, 1e8, -2.0)],
)
def test_the_largest_root_does_not_cancel(a, b, c):
    """A trial user's case: at 1e10 tokens and 1 µs the weak-scaling limit was 8.6e9 ranks where the root
    is 2.36e10: the form 2c/(−b − √D), stable for b > 0, cancels for b < 0 (the weak-scaling quadratic's b
    is 2S/β − 2α − X, negative once X is large). Checked against the root in 50-digit arithmetic."""
    from decimal import Decimal, getcontext

    getcontext().prec = 50
    da, db, dc = (Decimal(repr(x)) for x in (a, b, c))
    exact = (-db + (db * db - 4 * da * dc).sqrt()) / (2 * da)
    assert float(dp._largest_root(a, b, c)) == pytest.approx(float(exact), rel=1e-12)


def test_weak_scaling_has_a_limit_at_every_batch():
    """At 1e11 tokens the cancelled root came out infinite: "E ≥ 90% up to no limit; as P → ∞, E → 0"."""
    limits = [
        run_json("scaling", "--batch-tokens", t, "--latency-us", "1", "--ranks", "1")["weak_max_ranks"]
        for t in ("1e9", "1e10", "1e11")
    ]
    assert all(x is not None and math.isfinite(x) for x in limits) and limits[0] < limits[1] < limits[2]


def test_a_given_time_is_titled_as_given():
    """A trial user's case: accumulation --comm-ms 5 --fabric ib-ndr was titled "β = ib-ndr bus bandwidth",
    which the given T_r did not use. The title names what was given and what was derived."""
    assert run_json("accumulation", "--comm-ms", "5", "--fabric", "ib-ndr")["source"] == (
        "F = h100-sxm dense bf16 peak; T_r given"
    )
    assert run_json("accumulation", "--compute-ms", "100", "--comm-ms", "40")["source"] == "times given"
    assert run_json("overlap", "--backward-ms", "10")["source"].startswith("T_c given; β = ")


def test_strong_scaling_past_one_token_per_rank_is_not_a_step():
    """More ranks than the global batch's tokens: each would hold half a token. The row keeps its weak
    scaling and B/P but no strong efficiency (null, — in the table, with a line saying why); it had
    printed 0.1 % as if that were a run."""
    out = run_json("scaling", "--ranks", "1,4096,8192", "--batch-tokens", "4096")
    rows = {r["ranks"]: r for r in out["rows"]}
    assert rows[4096]["strong_efficiency"] is not None and rows[4096]["strong_batch_tokens"] == 1.0
    assert rows[8192]["strong_efficiency"] is None and rows[8192]["strong_batch_tokens"] == 0.5
    assert rows[8192]["weak_efficiency"] > 0
    r = runner.invoke(app, ["dataparallel", "scaling", "--ranks", "1,8192", "--batch-tokens", "4096"])
    assert r.exit_code == 0 and "less than one token" in " ".join(r.output.split()), r.output


def test_the_strong_scaling_limit_never_passes_one_token_per_rank():
    out = run_json(
        "scaling",
        "--batch-tokens",
        "100",
        "--ranks",
        "1,8,64,512",
        "--params-b",
        "0.001",
        "--bandwidth-gbs",
        "1000000",
        "--target-efficiency",
        "0.5",
    )
    assert out["strong_max_ranks"] == 100
