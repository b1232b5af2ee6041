"""The /step and /plan views' charts, without a browser: the timeline keeps every event of the
iteration (or each stage's totals past the drawing limit, or says why there is none), the memory bar
stacks step's own parts against the usable limit and the GPU's memory, and the heat map puts every
(TP, PP) cell of plan's grid in the right place, fitting or greyed."""

from __future__ import annotations

import json

import pytest

from dtsim.errors import ScenarioError
from dtsim.interfaces.web.formview import argv, defaults
from dtsim.interfaces.web.views import plan as plan_view
from dtsim.interfaces.web.views import step as step_view
from dtsim.models.datacenter.step import step
from dtsim.models.datacenter.trace import iteration_events


def small_values(**over):
    return defaults(step_view.fields()) | over


def test_timeline_keeps_every_event_or_each_stage_total(monkeypatch):
    v = small_values(pp=4, tp=1, gbs=64)
    w = step_view.workload(v)
    r = step(w)
    events = iteration_events(w, r)
    drawn = step_view.timeline(events, 4)
    rows = [row for rows in drawn["series"].values() for row in rows]
    assert len(rows) == len(events) == drawn["events"] and drawn["totals"] is None
    assert sorted(drawn["series"]) == sorted({e["category"] for e in events})
    monkeypatch.setattr(step_view, "MAX_DRAWN_EVENTS", len(events) - 1)
    merged = step_view.timeline(events, 4)
    assert merged["series"] is None
    for cat, per_track in merged["totals"].items():
        for track in range(4):
            want = sum(e["dur_s"] for e in events if e["category"] == cat and e["track"] == track)
            assert per_track[track] == pytest.approx(want, rel=1e-12)


def test_an_iteration_too_long_to_draw_says_why_and_keeps_the_numbers():
    answer = step_view.compute(small_values(gbs=131072))
    assert "passes" in answer["timeline"]["unavailable"]
    assert answer["step"]["micro_batches"] == 131072 / 4


def test_memory_bar_stacks_steps_parts():
    answer = step_view.compute(small_values())
    s = answer["step"]
    chart = step_view.memory_chart(s, answer["gpu_memory_gb"])
    bars = [x for x in chart["series"] if x["type"] == "bar"]
    assert sum(b["data"][0] for b in bars) == pytest.approx(s["memory_per_gpu_gb"], abs=1e-3)
    limits = chart["series"][-1]["markLine"]["data"]
    assert [m["xAxis"] for m in limits] == [
        round(s["usable_memory_gb"], 3),
        round(answer["gpu_memory_gb"], 3),
    ]
    assert s["usable_memory_gb"] < answer["gpu_memory_gb"] <= chart["xAxis"]["max"]


def test_heat_map_places_every_cell():
    cells = [
        {"tp": 1, "pp": 2, "best_step_time_s": 3.0, "min_memory_per_gpu_gb": 50.0},
        {"tp": 4, "pp": 1, "best_step_time_s": 2.0, "min_memory_per_gpu_gb": 40.0},
        {"tp": 1, "pp": 1, "best_step_time_s": None, "min_memory_per_gpu_gb": 120.0},
    ]
    chart = plan_view.heatmap(cells)
    assert chart["xAxis"]["data"] == ["1", "4"] and chart["yAxis"]["data"] == ["1", "2"]
    fit, none = chart["series"]
    assert [c["value"] for c in fit["data"]] == [[0, 1, 3.0], [1, 0, 2.0]]
    assert fit["data"][1]["label"]["formatter"].endswith("★")  # the fastest
    assert [c["value"] for c in none["data"]] == [[0, 0, 120.0]]
    assert none["data"][0]["label"]["formatter"] == "no fit 120 GB"
    assert (chart["visualMap"]["min"], chart["visualMap"]["max"]) == (2.0, 3.0)
    assert chart["visualMap"]["show"]
    # nothing fits: no step-time scale (it showed 0–1 s, times no layout has)
    nothing = plan_view.heatmap([c for c in cells if c["best_step_time_s"] is None])
    assert not nothing["visualMap"]["show"] and nothing["series"][0]["data"] == []


@pytest.mark.parametrize(
    "over",
    [
        {"model": "mixtral-8x7b", "nodes": 4, "tp": 2, "pp": 2, "ep": 4, "moe_capacity_factor": 1.25},
        {"model": "mixtral-8x7b", "nodes": 2, "tp": 2, "pp": 1, "ep": 8, "moe_imbalance": 1.5},
        {"zero": 3, "tp": 1, "pp": 1, "shard_group": 4, "fp32_params": True, "attention_kernel": "flash1"},
        {"gpu": "tpu-v5p", "nodes": 16, "gpus_per_node": 4, "torus": "4x4x4", "tp": 4, "pp": 1},
        {"model": None, "hidden": 2048, "layers": 16, "heads": 16, "vocab": 32000, "seq_len": 2048},
        {"fabric": "dgx-h100-ndr", "nic_gbps": 200, "oversubscription": 2, "precision": "fp8", "cp": 2},
    ],
)
def test_step_view_answers_are_the_clis(over):
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    v = small_values(**over)
    out = CliRunner().invoke(app, ["step", *argv(step_view.fields(), v), "--json"])
    assert out.exit_code == 0, out.output
    assert step_view.compute(v)["step"] == json.loads(out.stdout)


def test_step_view_errors_name_the_form_fields():
    with pytest.raises(ScenarioError) as exc:
        step_view.compute(small_values(no_flash_attention=True, attention_kernel="flash1"))
    assert exc.value.problems[0][0] == "attention_kernel"
    with pytest.raises(ScenarioError) as exc:
        step_view.compute(small_values(tp=3))
    # tp 3 breaks the heads rule and leaves no whole dp: both named at the tp the form gave
    assert [p[0] for p in exc.value.problems] == ["tp", "tp"]
    with pytest.raises(ScenarioError) as exc:
        step_view.compute(small_values(model=None, hidden=1024))
    assert exc.value.problems[0][0] == "model" and "layers" in exc.value.problems[0][2]


@pytest.mark.parametrize(
    "over",
    [
        {"model": "mixtral-8x7b", "nodes": 4, "moe_capacity_factor": 1.25, "top": 3},
        {"attention_kernel": "triton", "fp32_params": True, "gbs": 256, "dp_multiple": 2},
    ],
)
def test_plan_view_answers_are_the_clis(over):
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    v = defaults(plan_view.fields()) | over
    out = CliRunner().invoke(app, ["plan", *argv(plan_view.fields(), v), "--json"])
    assert out.exit_code == 0, out.output
    want = json.loads(out.stdout)
    got = plan_view.compute(v)
    assert want.pop("seconds") > 0 and got.pop("seconds") > 0  # the search's wall clock differs
    assert got == want and got["layouts"]
