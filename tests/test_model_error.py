"""Model-error intervals of the datacenter model (issue 14, item 4): split-conformal bounds from the
residuals on the measured runs, checked leaving one source out; every `step` and `plan` prediction
carries the 80 % interval."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from dtsim.interfaces.cli.main import app
from dtsim.models.datacenter import model_error as reader
from dtsim.models.datacenter.step import step
from dtsim.models.datacenter.workload import Cluster, Layout, Workload
from dtsim.validation import model_error

runner = CliRunner()


def test_conformal_bounds_are_the_order_statistics_of_split_conformal():
    """n scores 1..9: the 80 % interval is the ⌊10·0.1⌋ = 1st and ⌈10·0.9⌉ = 9th smallest; 50 % the 2nd
    and 8th; too few scores for a level give None (an unbounded interval), not a clamp."""
    scores = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 4.0, 6.0]
    assert model_error.conformal_bounds(scores, 0.8) == (1.0, 9.0)
    assert model_error.conformal_bounds(scores, 0.5) == (2.0, 8.0)
    assert model_error.conformal_bounds([1.0, 2.0, 3.0], 0.8) is None
    with pytest.raises(ValueError):
        model_error.conformal_bounds(scores, 1.0)


def test_conformal_intervals_cover_exchangeable_scores_at_their_level():
    """The guarantee the method rests on: with exchangeable scores, a new score falls inside the
    interval built from n others at least `level` of the time (and not far above it)."""
    rng = np.random.default_rng(7)
    for level in (0.5, 0.8, 0.95):
        hits = []
        for _ in range(4000):
            x = rng.standard_t(4, size=40)
            lo, hi = model_error.conformal_bounds(x[:-1], level)
            hits.append(lo <= x[-1] <= hi)
        cover = float(np.mean(hits))
        assert level - 0.02 <= cover <= level + 0.07, (level, cover)


def _run(group, role, predicted, measured):
    return SimpleNamespace(kind="datacenter", group=group, role=role, predicted=predicted, measured=measured)


def test_leave_one_source_out_builds_each_interval_without_the_source_it_checks():
    """Two groups of one source are held out together; a source the others do not resemble (a model
    30 % fast on it) is not covered, and its bound is exactly the other sources' conformal bound."""
    rng = np.random.default_rng(3)
    runs = []
    for g, shift in (("A", 0.0), ("B", 0.0), ("C1", 0.3), ("C2", 0.3)):
        for x in rng.normal(shift, 0.05, size=30):
            runs.append(_run(g, "check", math.exp(x), 1.0))
    runs.append(SimpleNamespace(kind="collective", group="N", role="check", predicted=2.0, measured=1.0))
    source_of = {"A": "a", "B": "b", "C1": "c", "C2": "c"}
    out = model_error.leave_one_source_out(runs, source_of)
    assert set(out["sources"]) == {"a", "b", "c"}
    assert out["sources"]["c"]["runs"] == 60 and out["sources"]["c"]["others"] == 60
    others = [math.log(r.predicted) for r in runs if r.group in ("A", "B")]
    lo, hi = model_error.conformal_bounds(others, 0.8)
    assert out["sources"]["c"]["bounds"]["0.8"] == {"low": lo, "high": hi}
    assert out["sources"]["c"]["coverage"]["0.8"] == 0.0
    assert out["groups"]["C1"]["source_set"] == "c"
    assert out["check"]["runs"] == 120  # the collective row is not a datacenter training run


def test_the_table_step_reads_is_what_the_generator_writes_now():
    """catalog/model_error.yaml equals `python -m dtsim.validation.model_error` on today's model and
    records (so a model change that moves the residuals must regenerate it)."""
    assert model_error.target().read_text(encoding="utf-8") == model_error.render(), (
        "run `python -m dtsim.validation.model_error` to regenerate src/dtsim/catalog/model_error.yaml"
    )


def test_validate_reports_leave_one_source_out_coverage_within_10_points_of_nominal():
    """Issue 14's bound: on the check runs, each interval built without the run's source covers within
    10 points of its level (50, 80 and 95 %)."""
    result = runner.invoke(app, ["validate", "--json"])
    cov = json.loads(result.stdout)["interval_coverage"]
    assert cov["check"]["runs"] >= 200
    for level in ("0.5", "0.8", "0.95"):
        assert abs(cov["check"]["coverage"][level] - float(level)) <= 0.10, (level, cov["check"])
    assert len(cov["sources"]) >= 5
    assert "Model-error intervals" in runner.invoke(app, ["validate"], terminal_width=200).stdout


def test_every_step_prediction_carries_its_80_percent_interval():
    w = Workload(
        model="gpt3-175b",
        cluster=Cluster(gpu="a100-80gb", nodes=64),
        layout=Layout(tp=8, pp=8, gbs=1536),
        tokens=3e11,
    )
    r = step(w)
    lo, hi = reader.step_time_factors()
    assert lo < 1.0 < hi
    assert r.step_time_s_p10 == pytest.approx(r.step_time_s * lo)
    assert r.step_time_s_p90 == pytest.approx(r.step_time_s * hi)
    assert r.mfu_p10 == pytest.approx(r.mfu / hi) and r.mfu_p90 == pytest.approx(r.mfu / lo)
    assert r.run.days_p10 == pytest.approx(r.run.days * lo) and r.run.days_p90 == pytest.approx(
        r.run.days * hi
    )
    assert r.model_error["level"] == 0.8 and r.model_error["runs"] >= 200
    assert "model-error interval" in r.model_error["basis"]


def test_step_and_plan_show_the_interval_in_json_and_text():
    args = ["--model", "mpt-7b", "--gpu", "h100-sxm", "--nodes", "1"]
    d = json.loads(runner.invoke(app, ["step", *args, "--zero", "3", "--json"]).stdout)
    assert d["step_time_s_p10"] < d["step_time_s"] < d["step_time_s_p90"]
    assert d["mfu_p10"] < d["mfu"] < d["mfu_p90"]
    text = runner.invoke(app, ["step", *args, "--zero", "3"], terminal_width=200).stdout
    assert "80 % interval" in text and "model-error interval" in text
    p = json.loads(runner.invoke(app, ["plan", *args, "--top", "2", "--json"]).stdout)
    assert all(x["step_time_s_p10"] < x["step_time_s"] < x["step_time_s_p90"] for x in p["layouts"])
    assert p["model_error"]["level"] == 0.8
