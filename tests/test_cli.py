"""The command line: golden output, every preset, bad input with exit status 2 and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import dtsim
from dtsim import catalog
from dtsim.interfaces.cli.main import app

runner = CliRunner()
REQUIRED_KEYS = {
    "mode",
    "mode_reason",
    "wall_clock_days",
    "effective_days",
    "compute_step_s",
    "sync_s",
    "regional_sync_s",
    "outer_step_s",
    "efficiency",
    "global_mfu",
    "global_hfu",
    "chi",
    "quality_adjusted_flop",
    "bottleneck",
    "pp_stages",
    "pp_groups",
    "memory_per_node_gb",
    "max_days",
    "feasible",
    "cost_usd",
    "warnings",
}


def run(*args):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize("preset", list(catalog.scenario_presets()))
def test_every_preset_simulates_as_json(preset):
    result = run("simulate", "--preset", preset, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= REQUIRED_KEYS
    assert all({"code", "message"} == set(w) for w in data["warnings"])
    assert data["wall_clock_days"] > 0


def test_default_json_is_the_library_result():
    data = json.loads(run("simulate", "--json").stdout)
    expected = dtsim.simulate().model_dump(mode="json")
    assert data == expected


def test_golden_default_values():
    """Seed 000 §9 defaults: golden numbers, hand-derivable from tests/test_formulas.py."""
    data = json.loads(run("simulate", "--preset", "default", "--json").stdout)
    assert data["mode"] == "flat-diloco"
    assert data["pp_stages"] == 1 and data["pp_groups"] == 0
    assert data["compute_step_s"] == pytest.approx(8.84736, rel=1e-12)
    assert data["sync_s"] == pytest.approx(3768.6000498327, rel=1e-12)
    assert data["wall_clock_days"] == pytest.approx(433.3064569266926, rel=1e-12)
    assert data["effective_days"] == pytest.approx(491.1369244256339, rel=1e-12)
    assert data["bottleneck"] == "global_sync"
    assert data["feasible"] is False
    assert round(data["max_days"]) == 137
    assert data["cost_usd"] == 72 * 16 * 28000


def test_report_shows_both_times_and_the_mode():
    result = run("simulate")
    assert result.exit_code == 0
    out = result.stdout
    for text in (
        "A: flat DiLoCo",
        "Wall-clock (process D tokens)",
        "η-adjusted (equivalent quality)",
        "433.3 days",
        "491.1 days",
        "Bottleneck",
        "SYNC_NOT_HIDDEN",
    ):
        assert text in out, text


def test_explain_prints_the_derivation():
    result = runner.invoke(
        app, ["simulate", "--explain", "--set", "parameters_b=300"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0
    assert "000 §" not in result.stdout  # the documents by their names, not spec-file labels
    for text in ("Derivation", "T_PP", "MIRI simulator docs §3.3", "η_H", "η_stale", "χ"):
        assert text in result.stdout, text
    data = json.loads(run("simulate", "--json", "--explain").stdout)
    assert [s["quantity"] for s in data["explain"]][:3] == ["P_active", "β", "M_node"]


def test_file_and_set_layers(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("preset: intercontinental\nnum_nodes: 500\nparameters_b: 70\n")
    data = json.loads(run("simulate", str(path), "--set", "num_nodes=100", "--json").stdout)
    assert data["scenario"]["num_nodes"] == 100
    assert data["scenario"]["latency_ms"] == 150
    assert data["scenario"]["parameters_b"] == 70
    jpath = tmp_path / "s.json"
    jpath.write_text(json.dumps({"num_nodes": 9, "bandwidth_mbps": 50}))
    data = json.loads(run("simulate", str(jpath), "--json").stdout)
    assert data["scenario"]["bandwidth_up_mbps"] == data["scenario"]["bandwidth_down_mbps"] == 50


def test_set_node_replaces_hardware_from_lower_layers():
    data = json.loads(
        run("simulate", "--preset", "intellect-1", "--set", "node=16x-h100-fp8", "--json").stdout
    )
    sc = data["scenario"]
    assert (sc["pflops_per_node"], sc["vram_per_node_gb"], sc["gpu"], sc["precision"]) == (
        31.68,
        1280,
        "h100-sxm",
        "fp8",
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["simulate", "--set", "num_nodes=-3"], "num_nodes = -3: must be an integer ≥ 1"),
        (["simulate", "--set", "num_nodes=0"], "num_nodes = 0"),
        (["simulate", "--set", "mfu=nan"], "mfu = 'nan': must be a number"),
        (["simulate", "--set", "parameters_b=.nan"], "parameters_b"),
        (["simulate", "--set", "precision=fp3"], "precision = 'fp3'"),
        (["simulate", "--set", "colour=blue"], "colour = 'blue': unknown field"),
        (["simulate", "--set", "num_node=3"], "did you mean num_nodes?"),
        (["simulate", "--preset", "nope"], "preset = 'nope': unknown preset"),
        (
            ["simulate", "--set", "moe=true", "--set", "active_parameters_b=200"],
            "active_parameters_b = 200.0: must be ≤",
        ),
        (
            ["simulate", "--set", "hierarchical=true", "--set", "num_nodes=4"],
            "nodes_per_group = 8: must be ≤ num_nodes",
        ),
        (["simulate", "--set", "straggler_strategy=sometimes"], "straggler_strategy = 'sometimes'"),
        (["simulate", "--set", "hardware_growth=3"], "hardware_growth = 3.0: a bare number is ambiguous"),
        (["simulate", "--set", "assumptions.pue=0.5"], "assumptions.pue = 0.5: must be between 1 and 5"),
        (["simulate", "--set", "gpu=h100"], "gpu = 'h100': unknown gpu"),
        (["simulate", "--set", "gpu=a100-80gb", "--set", "precision=fp8"], "has no FP8 datapath"),
        (["simulate", "/no/such/file.yaml"], "cannot read"),
        (["sweep", "--vary", "num_nodes=1:100:3:banana"], "1:100:3:banana"),  # printed as typed, no emoji
        # a node preset fixes its GPU and their count: another one beside it is refused, not half-taken
        (["simulate", "--set", "node=dgx-b200", "--set", "gpu=h100-sxm"], "node dgx-b200 has b200 GPUs"),
        (["simulate", "--set", "node=dgx-b200", "--set", "gpus_per_node=4"], "node dgx-b200 has 8 GPUs"),
        (["simulate", "--set", "micro_batches=1000000"], "must be ≤ local_batch_tokens"),
    ],
)
def test_bad_input_exits_2_with_a_message(args, needle):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert needle in result.output.replace("\n", " ").replace("  ", " ") or needle in result.output
    assert "Traceback" not in result.output


def test_malformed_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_nodes: [1\n")
    result = run("simulate", str(bad))
    assert result.exit_code == 2 and "malformed YAML" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = run("simulate", str(bad))
    assert result.exit_code == 2 and "malformed JSON" in result.output
    bad.write_text("[1, 2]")
    result = run("simulate", str(bad))
    assert result.exit_code == 2 and "must hold a mapping" in result.output
    # an empty or comment-only file ran the default scenario (a 144B model, 433 days) without a word
    empty = tmp_path / "mine.yaml"
    empty.write_text("# my three-continent run (TODO)\n")
    result = run("simulate", str(empty))
    assert result.exit_code == 2 and "holds no fields (empty, or comments only)" in " ".join(
        result.output.split()
    )
    empty.write_text("{}\n")  # every default, said explicitly
    assert run("simulate", str(empty)).exit_code == 0


def test_presets_schema_and_assumptions_commands():
    result = run("presets", "--json")
    data = json.loads(result.stdout)
    assert {"default", "intellect-1", "covenant-72b", "global-worst-case", "colocated"} <= set(
        data["scenarios"]
    )
    assert "16x-h100-sxm" in data["nodes"] and "tpu-v6e" in data["gpus"]
    assert run("presets").exit_code == 0
    schema = json.loads(run("schema").stdout)
    assert "num_nodes" in schema["properties"] and schema["additionalProperties"] is False
    table = json.loads(run("assumptions", "--json").stdout)
    assert any(row["name"] == "straggler_coefficient" and row["value"] == 0.05 for row in table)
    assert run("assumptions").exit_code == 0


def test_console_script_runs_in_a_subprocess():
    """The installed entry point: exit status 2 and one line on stderr for bad input."""
    proc = subprocess.run(
        [sys.executable, "-m", "dtsim", "simulate", "--set", "num_nodes=-1"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "num_nodes = -1" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "dtsim", "simulate", "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["mode"] == "flat-diloco"


def test_json_runs_write_bad_input_to_stdout_as_one_json_error():
    """Under --json a script reads stdout: bad input is the HTTP API's error body there
    ({"detail": [{field, value, message}]}), with the same lines on stderr and exit status 2 —
    both for a value a model refuses and for a usage error Click finds before the command runs."""
    res = run("step", "--model", "nosuch", "--json")
    assert res.exit_code == 2
    (problem,) = json.loads(res.stdout)["detail"]
    assert (
        problem["field"] == "model" and problem["value"] == "nosuch" and "unknown model" in problem["message"]
    )
    assert "Traceback" not in res.output
    assert run("step", "--model", "nosuch").stdout == ""  # without --json, stdout stays empty
    for args, field, value in (
        (["step", "--tp=abc", "--json"], "--tp", "abc"),
        (["step", "--json", "--tp", "abc"], "--tp", "abc"),
        (["step", "--gpus", "8", "--json"], "--gpus", None),
        (["nosuchcommand", "--json"], "command line", None),
    ):
        proc = subprocess.run([sys.executable, "-m", "dtsim", *args], capture_output=True, text=True)
        assert proc.returncode == 2, (args, proc.stderr)
        (problem,) = json.loads(proc.stdout)["detail"]
        assert (problem["field"], problem["value"]) == (field, value), (args, problem)
        assert problem["message"] in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "dtsim", "step", "--tp", "abc"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == "" and "Invalid value for '--tp'" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "dtsim", "step", "--model", "llama2-70b", "--json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["layout"]["tp"] >= 1


def test_version_prints_the_package_version():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"dtsim {dtsim.__version__}"


HEAVY = (
    "numpy",
    "pydantic",
    "yaml",
    "rich",
    "fastapi",
    "nicegui",
    "matplotlib",
    "torch",
    "pyarrow",
    "uvicorn",
)


def _imported_by(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stderr.split()


def test_help_and_import_load_no_heavy_library():
    """`dtsim --help` and `import dtsim` stay fast: the models, YAML and the web stack load on first use."""
    help_code = (
        "from dtsim.interfaces.cli.main import app\ntry:\n    app(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert _imported_by(help_code) == []
    assert _imported_by("import dtsim") == []
    loaded = _imported_by("import dtsim\ndtsim.simulate(dtsim.Scenario(num_nodes=72))")
    assert "numpy" in loaded and "fastapi" not in loaded and "nicegui" not in loaded


def test_a_files_preset_and_the_command_lines_must_agree(tmp_path):
    """A trial user's case: a file's `preset: intellect-1` silently replaced `--preset covenant-72b`
    (simulate, sweep, target). Two different bases are refused; either alone is the base, and target's
    and governance's own default (governance) gives way to the file's."""
    f = tmp_path / "p2.yaml"
    f.write_text("preset: intellect-1\nnum_nodes: 20\n")
    for argv in (
        ["simulate", str(f), "--preset", "covenant-72b"],
        ["sweep", str(f), "--preset", "covenant-72b", "--vary", "num_nodes=10,20"],
        ["target", str(f), "--preset", "governance", "--solve", "days", "--params-b", "10"],
    ):
        r = runner.invoke(app, argv)
        assert r.exit_code == 2 and "the file names another base preset (intellect-1)" in " ".join(
            r.output.split()
        )
    assert (
        json.loads(runner.invoke(app, ["simulate", str(f), "--json"]).output)["scenario"]["parameters_b"]
        == 10.21
    )
    same = runner.invoke(app, ["simulate", str(f), "--preset", "INTELLECT-1", "--json"])
    assert same.exit_code == 0, same.output
    r = runner.invoke(
        app,
        ["target", str(f), "--solve", "days", "--params-b", "10", "--tokens-t", "1"],
        env={"COLUMNS": "10000"},
    )
    assert r.exit_code == 0 and f"check it: dtsim simulate {f} --set" in r.output, r.output
