"""`dtsim step --trace`: one iteration of the datacenter model as a Trace Event Format document
(models/datacenter/trace.py). The picture must agree with the number: the last event ends at the step
time, every stage holds its micro-batches' passes in the schedule's order and dependencies, and each
stage's events add up to the step's breakdown."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import pairwise

import pytest
from typer.testing import CliRunner

from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app
from dtsim.models.datacenter.step import Cluster, Layout, Workload, step
from dtsim.models.datacenter.trace import MAX_PASSES, chrome_trace, iteration_events

runner = CliRunner()
GPT3 = {"model": "gpt3-175b", "cluster": Cluster(gpu="a100-80gb", nodes=64)}
OTHERS = {
    "moe-ep": Workload(
        model="mixtral-8x7b",
        cluster=Cluster(gpu="h100-sxm", nodes=8),
        layout=Layout(tp=2, pp=4, ep=8, gbs=256),
    ),
    "cp": Workload(
        model="llama3.1-8b", cluster=Cluster(gpu="h100-sxm", nodes=4), layout=Layout(tp=2, cp=4, gbs=64)
    ),
    # 12 micro-batches on 8 stages: the interleaved order needs groups of pp; drawn as the model's totals
    "interleaved-uneven": Workload(**GPT3, layout=Layout(tp=8, pp=8, vpp=3, schedule="interleaved", gbs=96)),
}
LAYOUTS = {
    "pp1": Layout(tp=8, pp=1, gbs=256),
    "1f1b": Layout(tp=8, pp=8, gbs=1536),
    "gpipe": Layout(tp=8, pp=8, gbs=512, schedule="gpipe"),
    "interleaved": Layout(tp=4, pp=16, vpp=2, schedule="interleaved", mbs=2, gbs=1536, zero=0),
    "zero3-pp1": Layout(tp=8, pp=1, gbs=1536, zero=3, recompute="full", flash_attention=False),
    "zero3-pp4": Layout(tp=8, pp=4, gbs=512, zero=3),
    "zero2": Layout(tp=8, pp=8, gbs=1536, zero=2),
    "tp-across-nodes": Layout(tp=16, pp=8, gbs=1536, sequence_parallel=True),
    "zero-bubble": Layout(tp=8, pp=8, gbs=1536, schedule="zero-bubble"),
    "dualpipev": Layout(tp=8, pp=8, gbs=1536, schedule="dualpipev"),
}
# schedules the trace times pass by pass (the others are drawn as the model's totals)
TIMED = (
    "pp1",
    "1f1b",
    "gpipe",
    "interleaved",
    "zero3-pp1",
    "zero3-pp4",
    "zero2",
    "tp-across-nodes",
    "moe-ep",
    "cp",
)
CASES = (*LAYOUTS, *OTHERS)
PASS_CATS = ("forward", "backward", "recompute", "tp_comm", "pp_comm")


def workload(name: str) -> Workload:
    return OTHERS[name] if name in OTHERS else Workload(**GPT3, layout=LAYOUTS[name])


@pytest.fixture(scope="module")
def traced():
    out = {}
    for name in CASES:
        w = workload(name)
        r = step(w)
        out[name] = (w, r, iteration_events(w, r))
    return out


def end(e):
    return e["start_s"] + e["dur_s"]


def passes(events):
    """{(stage, pass, chunk, micro-batch): (start, end)} of the pipeline passes."""
    out = {}
    for e in events:
        if e["pass"] is None:
            continue
        key = (e["track"], e["pass"], e["chunk"], e["micro_batch"])
        t0, t1 = out.get(key, (e["start_s"], end(e)))
        out[key] = (min(t0, e["start_s"]), max(t1, end(e)))
    return out


@pytest.mark.parametrize("name", CASES)
def test_the_last_event_ends_at_the_step_time(traced, name):
    _, r, events = traced[name]
    assert max(map(end, events)) == pytest.approx(r.step_time_s, rel=1e-6)
    assert min(e["start_s"] for e in events) >= 0.0
    assert all(e["dur_s"] > 0.0 for e in events)
    # every stage is accounted for from 0 to the step time: no gap, no overlap on a stage's track
    pp = r.layout["pp"]
    for s in range(pp):
        track = sorted((e for e in events if e["track"] == s), key=lambda e: e["start_s"])
        assert track[0]["start_s"] == pytest.approx(0.0, abs=1e-9 * r.step_time_s)
        for a, b in pairwise(track):
            assert b["start_s"] == pytest.approx(end(a), abs=1e-9 * r.step_time_s)
        assert end(track[-1]) == pytest.approx(r.step_time_s, rel=1e-9)


@pytest.mark.parametrize("name", TIMED)
def test_the_scheduled_passes_take_the_model_pipeline_time(traced, name):
    """The passes are placed by their dependencies alone (no padding): the last one ends where the
    model's pipeline time ends, i.e. where the step's once-per-step work (reduction, optimizer) starts."""
    _, r, events = traced[name]
    last_pass = max(end(e) for e in events if e["pass"] is not None)
    once_per_step = [
        e for e in events if e["track"] != "dp" and e["pass"] is None and e["category"] != "bubble"
    ]
    pipeline_end = r.step_time_s - sum(e["dur_s"] for e in once_per_step if e["track"] == 0)
    assert min(e["start_s"] for e in once_per_step) == pytest.approx(pipeline_end, rel=1e-9)
    assert last_pass == pytest.approx(pipeline_end, rel=1e-9)


@pytest.mark.parametrize("name", TIMED)
def test_passes_wait_for_the_pass_they_need(traced, name):
    _, r, events = traced[name]
    pp = r.layout["pp"]
    v = r.layout["vpp"] if r.layout["schedule"] == "interleaved" else 1
    p = passes(events)
    tol = 1e-9 * r.step_time_s
    for (s, kind, c, i), (t0, _) in p.items():
        if kind == "forward":
            need = (s - 1, "forward", c, i) if s > 0 else (pp - 1, "forward", c - 1, i) if c > 0 else None
        elif s < pp - 1:
            need = (s + 1, "backward", c, i)
        else:
            need = (0, "backward", c + 1, i) if c < v - 1 else (s, "forward", c, i)
        if need is not None:
            assert t0 >= p[need][1] - tol, ((s, kind, c, i), need)


@pytest.mark.parametrize("name", CASES)
def test_each_stage_adds_up_to_the_breakdown(traced, name):
    _, r, events = traced[name]
    bd = r.breakdown_s
    for s in range(r.layout["pp"]):
        total = defaultdict(float)
        for e in events:
            if e["track"] == s:
                total[e["category"]] += e["dur_s"]
        for k in ("forward", "backward", "recompute", "tp_comm", "dp_comm_exposed", "optimizer"):
            assert total[k] == pytest.approx(bd[k], rel=1e-9, abs=1e-12), k
        assert total["overlap_interference"] == pytest.approx(bd["overlap_interference"], rel=1e-9, abs=1e-12)
        # a stage's idle time is the bubble plus the fill-and-drain hand-offs it waits for
        assert total["bubble"] + total["pp_comm"] == pytest.approx(
            bd["bubble"] + bd["pp_comm"], rel=1e-9, abs=1e-12
        )


@pytest.mark.parametrize("name", CASES)
def test_tracks_and_micro_batches(traced, name):
    w, r, events = traced[name]
    lay = r.layout
    pp = lay["pp"]
    v = lay["vpp"] if lay["schedule"] == "interleaved" else 1
    m = lay["gbs"] // (lay["mbs"] * lay["dp"])
    assert r.micro_batches == m
    assert {e["track"] for e in events} - {"dp"} == set(range(pp))
    for s in range(pp):
        fwd = [e for e in events if e["track"] == s and e["category"] == "forward"]
        bwd = [e for e in events if e["track"] == s and e["category"] == "backward"]
        assert len(fwd) == len(bwd) == m * v
        assert sorted((e["chunk"], e["micro_batch"]) for e in fwd) == [
            (c, i) for c in range(v) for i in range(m)
        ]
    bubbles = [e for e in events if e["category"] == "bubble"]
    if name in TIMED or name in ("dualpipev", "interleaved-uneven"):
        assert bool(bubbles) == (pp > 1)
    if name == "zero-bubble":  # m ≥ 2·pp − 1: the model charges no bubble
        assert not bubbles
    doc = chrome_trace(w, r)
    names = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert sum(e["args"]["name"].startswith("stage ") for e in names) == pp


def test_one_f_one_b_keeps_at_most_pp_minus_stage_micro_batches_in_flight(traced):
    """1F1B (Narayanan et al. 2021 §2.2.1): stage s runs pp − s − 1 warm-up forwards, then alternates, so
    it never holds more than pp − s micro-batches' activations; GPipe runs every forward first."""
    for name, schedule in (("1f1b", "1f1b"), ("gpipe", "gpipe")):
        _, r, events = traced[name]
        pp, m = r.layout["pp"], int(r.micro_batches)
        for s in range(pp):
            order = sorted(((t0, k) for (st, k, _, _), (t0, _) in passes(events).items() if st == s))
            in_flight = peak = 0
            for _, k in order:
                in_flight += 1 if k == "forward" else -1
                peak = max(peak, in_flight)
            assert peak == (min(pp - s, m) if schedule == "1f1b" else m)


def test_chrome_trace_is_valid_trace_event_format(traced):
    w, r, _ = traced["interleaved"]
    doc = json.loads(json.dumps(chrome_trace(w, r), allow_nan=False))
    assert doc["displayTimeUnit"] == "ms"
    events = doc["traceEvents"]
    assert {e["ph"] for e in events} == {"M", "X"}
    meta = [e for e in events if e["ph"] == "M"]
    assert {e["name"] for e in meta} == {"process_name", "thread_name", "thread_sort_index"}
    assert all(e["pid"] == 1 for e in events)
    complete = [e for e in events if e["ph"] == "X"]
    for e in complete:
        assert set(e) == {"ph", "pid", "tid", "name", "cat", "ts", "dur", "args"}
        assert e["args"]["category"] == e["cat"]
        assert isinstance(e["tid"], int) and e["dur"] > 0 and e["ts"] >= 0
    fwd = [e for e in complete if e["cat"] == "forward"]
    assert all({"micro_batch", "chunk", "pass"} <= set(e["args"]) for e in fwd)
    # microseconds
    assert max(e["ts"] + e["dur"] for e in complete) == pytest.approx(r.step_time_s * 1e6, rel=1e-6)


def test_a_slower_network_lengthens_the_data_parallel_events_only():
    """Halving the NIC rate with a blocking gradient all-reduce (ZeRO-0, no overlap) lengthens the
    exposed data-parallel events; the compute passes keep their length."""
    lay = Layout(tp=8, pp=4, gbs=512, zero=0, overlap_grad_reduce=False)

    def totals(nic_gbps):
        w = Workload(**dict(GPT3, cluster=Cluster(gpu="a100-80gb", nodes=64, nic_gbps=nic_gbps)), layout=lay)
        out = defaultdict(float)
        for e in iteration_events(w):
            if e["track"] == 0:
                out[e["category"]] += e["dur_s"]
        return out

    fast, slow = totals(200.0), totals(100.0)
    assert slow["dp_comm_exposed"] > 1.5 * fast["dp_comm_exposed"] > 0
    assert slow["forward"] == pytest.approx(fast["forward"], rel=1e-12)
    assert slow["backward"] == pytest.approx(fast["backward"], rel=1e-12)


def test_zero3_gathers_sit_in_every_micro_batch():
    """ZeRO-3 gathers the weights before every micro-batch's forward and backward pass (Rajbhandari et
    al. 2020 §5.3), so its exposed time is drawn inside the passes, not once per step."""
    w = workload("zero3-pp4")
    events = iteration_events(w)
    z3 = [e for e in events if e["name"].startswith("ZeRO-3") and e["track"] == 0]
    m = int(step(w).micro_batches)
    assert len(z3) == 2 * m
    assert {e["pass"] for e in z3} == {"forward", "backward"}


def test_a_result_of_another_workload_is_refused():
    with pytest.raises(ValueError, match="step time differs"):
        iteration_events(workload("1f1b"), step(workload("gpipe")))


def test_too_many_passes_is_a_clear_error(tmp_path):
    """pp × micro-batches one over the limit (8 stages, DP 1 on 64 GPUs) is refused naming the batch."""
    lay = Layout(tp=8, pp=8, dp=1, gbs=MAX_PASSES // 8 + 1)
    w = Workload(**dict(GPT3, cluster=Cluster(gpu="a100-80gb", nodes=8)), layout=lay)
    with pytest.raises(ScenarioError) as exc:
        iteration_events(w)
    assert exc.value.problems[0][:2] == ("layout.gbs", lay.gbs)
    path = tmp_path / "t.json"
    args = ["step", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--nodes", "8", "--tp", "8", "--pp", "8"]
    res = runner.invoke(app, [*args, "--gbs", str(lay.gbs), "--trace", str(path)])
    assert res.exit_code == 2 and "layout.gbs" in res.output and "at most" in res.output
    assert not path.exists()


CLI = ["step", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--nodes", "64", "--tp", "8", "--pp", "8"]


def test_cli_round_trip(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text("old")  # overwritten, as the other commands' output files are
    res = runner.invoke(app, [*CLI, "--gbs", "512", "--trace", str(path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    doc = json.loads(path.read_text())
    complete = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert max(e["ts"] + e["dur"] for e in complete) == pytest.approx(out["step_time_s"] * 1e6, rel=1e-6)
    assert doc["otherData"]["step_time_s"] == out["step_time_s"]
    assert len({e["tid"] for e in complete}) == 8 + 1  # stages and the data-parallel network


@pytest.mark.parametrize(
    "where, extra, message",
    [
        ("missing/trace.json", [], "folder does not exist"),
        (".", [], "is a folder"),
        ("t.json", ["--uncertainty", "10"], "not with --uncertainty"),
    ],
)
def test_cli_bad_trace_paths(tmp_path, where, extra, message):
    res = runner.invoke(app, [*CLI, "--gbs", "512", "--trace", str(tmp_path / where), *extra])
    assert res.exit_code == 2
    assert "--trace" in res.output and message in " ".join(res.output.split())
    assert "Traceback" not in res.output


def test_cli_trace_refuses_a_layouts_file(tmp_path):
    layouts = tmp_path / "layouts.csv"
    layouts.write_text("tp,pp\n8,8\n")
    res = runner.invoke(
        app, [*CLI, "--gbs", "512", "--layouts", str(layouts), "--trace", str(tmp_path / "t.json")]
    )
    assert res.exit_code == 2
    assert "not with --layouts" in " ".join(res.output.split())
    assert not (tmp_path / "t.json").exists()
