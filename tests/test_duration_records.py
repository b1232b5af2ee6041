"""Duration records (issue 16 item 9): a decentralized run's stated wall-clock days against
`dtsim.simulate`'s wall_clock_days, shown by `dtsim validate` with a signed error.

Only the bundled catalog is read (src/dtsim/catalog/measured_runs/decentralized.yaml, presets.yaml).
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

import dtsim
from dtsim import catalog
from dtsim.interfaces.cli.main import app
from dtsim.validation import load_dataset, validate
from dtsim.validation.predict import decentralized_inputs, predict
from dtsim.validation.records import Dataset, _load_text
from dtsim.validation.runner import fitted_ids

GROUP = "INTELLECT-1 duration"

# INTELLECT-1's training configuration (github.com/PrimeIntellect-ai/prime, configs/10B/H100_cooldown.toml):
# total_steps = 90400 inner steps, batch_size = 128 sequences of seq_length 8192 per node; 1T tokens
# (Jaghouar et al. 2024, abstract). The run's nodes averaged over its steps: tokens / (steps × batch).
I1_STEPS = 90_400
I1_BATCH = 128 * 8192
I1_TOKENS = 1e12


def cli_run(*args):
    out = CliRunner().invoke(app, list(args))
    assert out.exit_code == 0, out.output
    return out


@pytest.fixture(scope="module")
def dataset():
    return load_dataset()


@pytest.fixture(scope="module")
def duration(dataset):
    return next(r for r in dataset.records if r.id == "INTELLECT1-duration")


def test_duration_record_loads_as_a_check_never_fitted(dataset, duration):
    assert not dataset.problems
    assert duration.kind == "decentralized" and duration.metric == "wall_clock_days"
    assert (duration.measured, duration.unit, duration.certainty) == (42, "days", "P")
    assert "INTELLECT-1" in duration.group
    assert dataset.groups[duration.group].role == "check"
    # a duration is never what a constant is fitted on (calibrate fits only calibration groups)
    assert duration.id not in fitted_ids()
    assert dataset.groups[duration.group].leaves_out  # the gap's mechanisms are stated


def test_duration_is_the_models_wall_clock_days(duration):
    """The prediction is simulate's wall-clock time to process the tokens, not the η-adjusted days."""
    value, details = predict(duration)
    r = dtsim.simulate(decentralized_inputs(duration))
    assert value == pytest.approx(r.wall_clock_days, rel=1e-12)
    assert details["effective_days"] == pytest.approx(r.effective_days, rel=1e-12)
    assert value < details["effective_days"]  # η < 1 lengthens only the effective time
    # rounds × round time: the rounds are the tokens over nodes × H × local batch
    sc = decentralized_inputs(duration)
    rounds = sc["tokens_t"] * 1e12 / (sc["num_nodes"] * sc["inner_steps"] * sc["local_batch_tokens"])
    assert details["rounds"] == pytest.approx(rounds, rel=1e-6)
    assert value * 86400 == pytest.approx(rounds * details["outer_step_s"], rel=1e-6)


def test_intellect1_nodes_are_the_runs_step_average(duration):
    """The record's node count is derived from the run's configuration, never from its duration: 1T
    tokens over 90,400 inner steps of 1,048,576 tokens per node is 10.55 nodes, rounded to whole nodes."""
    average = I1_TOKENS / (I1_STEPS * I1_BATCH)
    assert average == pytest.approx(10.55, abs=0.005)
    assert duration.scenario["num_nodes"] == round(average) <= 14  # the report's "up to 14"
    assert duration.scenario["local_batch_tokens"] == I1_BATCH
    assert duration.scenario["inner_steps"] == 100


def test_intellect1_duration_error_and_its_gap(duration):
    """The model leaves out downtime (churn, onboarding, restarts), so it can only be short of the
    stated 42 days, and by about the downtime the stated numbers leave: the 90,400 steps at the measured
    43.3% MFU are 24.0 days of compute, 28.9 days at the three-continent 83% utilization. The issue's
    25% aim is not met (−37%): see docs/validation.md, group "INTELLECT-1 duration"."""
    value, details = predict(duration)
    error = value / duration.measured - 1.0
    assert -0.40 < error < 0.0
    per_step_s = details["compute_per_round_s"] / duration.scenario["inner_steps"]
    compute_days = I1_STEPS * per_step_s / 86400
    assert compute_days == pytest.approx(24.0, abs=0.1)
    assert compute_days / 0.83 == pytest.approx(28.9, abs=0.1)
    # the prediction sits between the stated run's compute alone (with the whole-node rounding) and
    # that compute at the setting's stated utilization: the network part is the report's size
    rounding = round(I1_TOKENS / (I1_STEPS * I1_BATCH)) / (I1_TOKENS / (I1_STEPS * I1_BATCH))
    assert compute_days / rounding < value < compute_days / 0.83


def test_preset_matches_the_duration_record(duration):
    """The intellect-1 preset is the record's run: same nodes, H, batch, tokens, compression and compute
    rate; its own links (500 Mbps, 250 ms) give a wall-clock within 3% of the record's prediction."""
    pre = catalog.preset_fields("intellect-1")
    sc = decentralized_inputs(duration)
    for k in ("num_nodes", "inner_steps", "local_batch_tokens", "tokens_t", "compression", "parameters_b"):
        assert pre[k] == sc[k], k
    assert pre["straggler_strategy"] == sc["straggler_strategy"]
    assert pre["mfu"] == pytest.approx(sc["mfu"], abs=0.0005)
    days = dtsim.simulate(pre).wall_clock_days
    assert days == pytest.approx(predict(duration)[0], rel=0.03)


def test_validate_json_lists_duration_with_group_and_signed_error():
    out = cli_run("validate", "--subset", GROUP, "--json")
    data = json.loads(out.stdout)
    rows = [r for r in data["runs"] if r["metric"] == "wall_clock_days"]
    assert [r["id"] for r in rows] == ["INTELLECT1-duration"]
    row = rows[0]
    assert "INTELLECT-1" in row["group"] and row["role"] == "check" and row["unit"] == "days"
    assert row["error"] == pytest.approx(row["predicted"] / row["measured"] - 1.0)
    assert row["error"] < 0  # signed: the model is short
    assert GROUP in data["summary"]


def test_validate_table_shows_duration():
    out = cli_run("validate", "--subset", GROUP)
    assert "INTELLECT1-duration" in out.stdout and "days" in out.stdout


def test_a_users_duration_record(tmp_path):
    """A user's own duration record in --runs loads and is predicted; a bad convention names the field."""
    base = {
        "kind": "decentralized",
        "source": "user",
        "certainty": "user",
        "metric": "wall_clock_days",
        "unit": "days",
        "measured": 10,
        "scenario": {"parameters_b": 1, "tokens_t": 0.02, "node": "dgx-h100", "num_nodes": 4},
        "compute": {"round_s": 600},
        "network": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 50},
    }
    good = {**base, "id": "mine", "group": "G", "convention": "days"}
    bad = {**base, "id": "bad", "group": "G", "convention": "hours"}
    # compute per round needs a whole number of inner steps (the default local batch is taken)
    auto = {**good, "id": "auto", "scenario": {**base["scenario"], "inner_steps": "auto"}}
    data = Dataset()
    _load_text(yaml.safe_dump({"groups": {"G": {}}, "records": [good, bad, auto]}), "mine.yaml", data)
    assert [r.id for r in data.records] == ["mine"]
    assert [(p.record, p.field) for p in data.problems] == [
        ("bad", "convention"),
        ("auto", "scenario.inner_steps"),
    ]
    report = validate(data)
    row = report.runs[0]
    assert row.predicted > 0 and row.error == pytest.approx(row.predicted / 10 - 1)
