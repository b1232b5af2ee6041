"""Issue 15: nothing breaks, nothing misleads. Each reproducer of the issue is a test here; the
fuzzers (CLI options, fields table) are in tests/test_cli_fuzz.py."""

from __future__ import annotations

import itertools
import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

import dtsim
from dtsim.errors import ScenarioError, format_problem, quote
from dtsim.interfaces import operations
from dtsim.interfaces.cli.common import json_text
from dtsim.interfaces.cli.main import app
from dtsim.models.decentralized.warning_rules import NETWORK_PARTS
from dtsim.schema import inputs
from dtsim.schema.scenario import parse_set

from .test_properties import scenarios

runner = CliRunner()
WIDE = {"COLUMNS": "200"}

BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['x'] * 9)}]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f"], "abcdefg", strict=True)
)


def said(res) -> str:
    """stderr with line wrapping undone (Rich wraps at the width of the console it first made)."""
    return " ".join(res.stderr.split())


def strict_json(text: str):
    """Parse as RFC 8259 JSON: NaN and Infinity are errors."""

    def refuse(name):
        raise ValueError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


def test_json_text_writes_non_finite_values_as_null_and_names_them(capsys):
    text = json_text({"a": 1.0, "b": [float("nan"), 2], "c": {"d": float("inf")}})
    assert strict_json(text) == {"a": 1.0, "b": [None, 2], "c": {"d": None}}
    assert "b[0], c.d" in capsys.readouterr().err
    assert json_text({"a": 1}) == json.dumps({"a": 1}, indent=2)
    assert json_text({"a": "NaN or Infinity"}) == json.dumps({"a": "NaN or Infinity"}, indent=2)
    assert capsys.readouterr().err == ""  # text that reads "NaN" is not a non-finite number: no note
    where = []  # the shared builder (operations.json_text, the pages' JSON) says where, and prints nothing
    assert operations.json_text([1.0, float("-inf")], None, None, where) == "[1.0, null]" and where == ["[1]"]
    assert capsys.readouterr().err == ""


def test_an_alias_bomb_is_refused_fast_by_file_and_by_set(tmp_path):
    assert len(BOMB.encode()) < 1024
    f = tmp_path / "bomb.yaml"
    f.write_text(BOMB)
    t = time.perf_counter()
    res = runner.invoke(app, ["simulate", str(f)], env=WIDE)
    assert res.exit_code == 2 and "alias" in said(res), res.stderr
    res = runner.invoke(app, ["simulate", "--set", f"mfu={BOMB}"], env=WIDE)  # the whole bomb as a value
    assert res.exit_code == 2 and "alias counts" in said(res), res.stderr
    with pytest.raises(ScenarioError, match="alias counts"):
        inputs.parse_yaml(BOMB, "--set")
    assert time.perf_counter() - t < 5.0
    assert len(res.stderr) < 2000  # messages quote at most 80 characters of a value


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1: 2\n", "keys must be text"),
        ("num_nodes: 2024-01-01\n", "date values are not accepted"),
        ("num_nodes: !!binary aGVsbG8=\n", "bytes values are not accepted"),
        ("num_nodes: " + "9" * 5000 + "\n", "4300 digits"),
        ("num_nodes: .nan\n", "not NaN"),
        ("[" * 3000, "malformed YAML"),
    ],
)
def test_odd_yaml_is_a_clear_error(tmp_path, text, match):
    f = tmp_path / "odd.yaml"
    f.write_text(text)
    res = runner.invoke(app, ["simulate", str(f)], env=WIDE)
    assert res.exit_code == 2, res.output
    assert match in " ".join(res.stderr.split()) and "Traceback" not in res.output


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_scenario_files_in_other_encodings_are_named(tmp_path, encoding):
    f = tmp_path / "s.yaml"
    f.write_bytes("name: Größe\nnum_nodes: 4\n".encode(encoding))
    res = runner.invoke(app, ["simulate", str(f)], env=WIDE)
    assert res.exit_code == 2 and "UTF-8" in said(res)


def test_binary_file_fifo_device_and_folder_are_refused_without_reading(tmp_path):
    binary = tmp_path / "b.yaml"
    binary.write_bytes(bytes(range(256)))
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # opening it would block until a writer comes
    for path, match in [(binary, "UTF-8"), (fifo, "not a regular file"), ("/dev/zero", "not a regular file")]:
        res = runner.invoke(app, ["simulate", str(path)], env=WIDE)
        assert res.exit_code == 2 and match in said(res), (path, res.stderr)
    res = runner.invoke(app, ["simulate", str(tmp_path)], env=WIDE)
    assert res.exit_code == 2 and "is a folder" in said(res)
    # --calibration FILE reads through the same guard (a FIFO hung validate and plan, /dev/zero ended
    # in a MemoryError, until 2026-11-26)
    for path, match in [
        (fifo, "not a regular file"),
        ("/dev/zero", "not a regular file"),
        (tmp_path, "folder"),
    ]:
        for cmd in (["validate", "--subset", "NCCL"], ["step", "-m", "llama3.1-8b", "--gbs", "16"]):
            res = runner.invoke(app, [*cmd, "--calibration", str(path)], env=WIDE)
            assert res.exit_code == 2 and "--calibration" in said(res) and match in said(res), (
                cmd,
                res.output,
            )


def test_oversized_file_is_refused_by_size(tmp_path, monkeypatch):
    from dtsim import textfiles

    monkeypatch.setattr(textfiles, "MAX_FILE_BYTES", 1000)
    f = tmp_path / "big.yaml"
    f.write_text("name: x\n" + "# pad\n" * 1000)
    with pytest.raises(ScenarioError, match="at most 1,000 are read"):
        inputs.read_text_file(f)


def test_set_inside_a_scalar_assumptions_is_an_error():
    with pytest.raises(ScenarioError, match="must be a table"):
        parse_set(["assumptions=5", "assumptions.pue=1.2"])
    res = runner.invoke(app, ["simulate", "--set", "assumptions=5", "--set", "assumptions.pue=1.2"], env=WIDE)
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_error_messages_quote_at_most_80_characters_and_keep_brackets():
    assert len(quote("x" * 10_000)) <= 80
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    assert len(quote(deep)) <= 80  # no RecursionError, no megabytes of text
    assert format_problem("f" * 500, 1, "m").startswith("f" * 79 + "…")
    res = runner.invoke(app, ["simulate", "--set", "precision=[/red]x"], env=WIDE)
    assert res.exit_code == 2 and "'[/red]x'" in said(res)  # Rich markup in a value is printed as typed


def test_validate_runs_files_of_every_wrong_shape_are_named_not_crashed(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "groups:\n"
        "  G1: {role: check, defaults: 5, assumptions: abc}\n"
        "  G2: {role: check, bounds: [1]}\n"
        "records:\n"
        "  - {id: r1, group: [G1], source: x}\n"
        "  - {id: [1, 2], group: G1}\n"
        "  - 7\n"
    )
    (tmp_path / "b.yaml").write_text("groups: [1, 2]\nrecords: []\n")
    (tmp_path / "c.yaml").write_text(BOMB)
    res = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--json"], env=WIDE)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    problems = {(p["file"].rsplit("/", 1)[-1], p["field"]) for p in strict_json(res.stdout)["problems"]}
    assert {
        ("a.yaml", "groups.G1.defaults"),
        ("a.yaml", "groups.G1.assumptions"),
        ("a.yaml", "groups.G2.bounds"),
        ("a.yaml", "group"),
        ("a.yaml", "record"),
        ("b.yaml", "groups"),
        ("c.yaml", "file"),
    } <= problems, problems


def test_validate_says_which_check_groups_have_no_bound():
    res = runner.invoke(app, ["validate"], env=WIDE)
    last = " ".join(res.stdout.split())
    assert "check groups have no bound to meet" in last and "THESIS-WS2" in last


def test_user_facing_text_cites_documents_not_spec_file_labels():
    """Users have no 'seed 000': help, messages, the catalog and the docs cite the documents."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = [*(root / "src" / "dtsim").rglob("*.py"), *(root / "src" / "dtsim").rglob("*.yaml")]
    files += [*(root / "docs").glob("*.md"), root / "README.md"]
    label = re.compile(r"\b[Ss]eeds? ?-?0{2}[0-3]\b")
    found = [
        f"{p.relative_to(root)}:{i}"
        for p in files
        for i, ln in enumerate(p.read_text().splitlines(), 1)
        if label.search(ln)
    ]
    assert not found, found[:10]
    assert "Erdil & Schneider-Joseph 2024" in (root / "README.md").read_text()


def test_long_work_without_a_terminal_says_how_far_it_is(monkeypatch, capsys):
    """Without a terminal (a pipe, a log file) there is no live bar: a plain line on stderr at most
    every PLAIN_PROGRESS_S says how far the work is, so a long run is told from a hang."""
    from dtsim.interfaces.cli import common

    monkeypatch.setattr(common, "PLAIN_PROGRESS_S", 0.0)

    def work(progress):
        for done in range(3):
            if progress is not None:
                progress(done, 3)
        return "answer"

    assert common.with_progress("emulating", True, work) == "answer"
    err = capsys.readouterr().err
    assert "emulating: 1/3" in err and "emulating: 2/3" in err and "3/3" not in err
    assert common.with_progress("emulating", False, work) == "answer"  # --json: nothing
    assert capsys.readouterr().err == ""


def test_calibrate_reports_progress_to_the_end_and_fits_the_same():
    from dtsim.validation import load_dataset
    from dtsim.validation.calibrate import calibrate

    data = load_dataset()
    seen: list[tuple[int, int]] = []
    doc = calibrate(data, ["NCCL", "GLOO"], lambda d, t: seen.append((d, t)))
    assert len(seen) > 100 and seen[-1][0] == seen[-1][1]
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))  # never goes back
    assert doc["fabrics"] == calibrate(data, ["NCCL", "GLOO"])["fabrics"]


def test_governance_memory_cap_none_means_no_memory_caps():
    res = runner.invoke(
        app,
        ["governance", "--memory-cap", "none", "--compute-cap", "16", "--targets", "1e24", "--json"],
        env=WIDE,
    )
    assert res.exit_code == 0, res.output
    caps = strict_json(res.stdout)["caps"]
    assert [c.get("memory_gb") for c in caps] == [None]
    res = runner.invoke(app, ["governance", "--memory-cap", "none", "--compute-cap", "none"], env=WIDE)
    assert res.exit_code == 2 and "at least one compute cap" in " ".join(res.stderr.split())


def test_no_negative_maximum_run_length_when_growth_is_not_positive():
    from dtsim.physics.runlength import max_run_days

    assert max_run_days(0.5, 365.25) == pytest.approx(365.25 / (0.5 * 2.302585092994046))
    assert max_run_days(-0.1, 365.25) == float("inf") and max_run_days(0.0, 365.25) == float("inf")
    args = ["simulate", "--json", "--set", "hardware_growth=0.5x/yr", "--set", "software_growth=1x/yr"]
    args += ["--set", "investment_growth=1.1x/yr", "--set", "max_run_days=100"]
    res = runner.invoke(app, args, env=WIDE)
    assert res.exit_code == 0, res.output
    assert strict_json(res.stdout)["details"]["computed_max_days"] is None


@pytest.mark.parametrize(
    ("value", "ok"),
    [(".3..0.5", True), ("0.3..0.5", True), ("0.3..", False), ("..0.5", False), ("1..2..3", False)],
)
def test_ranges_with_a_leading_point_and_half_written_ranges(value, ok):
    res = runner.invoke(app, ["simulate", "--set", f"mfu={value}", "--uncertainty", "8", "--json"], env=WIDE)
    if ok:
        assert res.exit_code == 0, res.output
    else:
        assert res.exit_code == 2 and "write a range as low..high" in " ".join(res.stderr.split())


def test_counts_below_one_are_refused_and_named_alone():
    res = runner.invoke(app, ["limits", "closed-form", "--layers", "0.5"], env=WIDE)
    assert res.exit_code == 2 and "layers = '0.5': must be ≥ 1" in said(res)
    res = runner.invoke(app, ["plan", "--model", "gpt2", "--nodes", "1", "--top", "0"], env=WIDE)
    assert res.exit_code == 2 and res.stderr.startswith("error: --top = 0: must be an integer ≥ 1")
    assert "--gbs" not in said(res)


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--json", "--set", "assumptions=5", "--explain"],  # the CLI fuzzer's first find
        ["limits", "closed-form", "--latency-us", "1e-320", "--json"],  # underflowed to 0 and divided
        ["limits", "closed-form", "--batch-tokens", "1e300"],
        ["step", "--model", "a" * 300],  # a name too long to be a path
        ["limits", "closed-form", "--alpha-b", "-1e308", "--alpha-l", "16", "--json"],  # OverflowError
        ["limits", "closed-form", "--alpha-b", "0.49", "--alpha-l", "0"],  # beyond a double
        ["target", "--params-b", "1e20", "--tokens-t", "0.02", "--max-nodes", "64"],  # long run: empty space
        ["target", "--params-b", "1e-320", "--tokens-t", "0.02", "--max-nodes", "64", "--json"],
    ],
)
def test_fuzzer_finds_are_clear_errors(args):
    res = runner.invoke(app, args, env=WIDE)
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output
    assert res.stderr.startswith("error: ")


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)
@given(scenarios())
def test_one_consistent_story_per_decentralized_report(fields):
    """Bottleneck, warnings and timings agree on random scenarios (issue 15 item 4)."""
    try:
        r = dtsim.simulate(dtsim.load_scenario(overrides=fields))
    except ScenarioError:
        return
    codes = {w.code: w.message for w in r.warnings}
    if r.outer_step_s:
        parts = sum(v or 0.0 for v in r.breakdown_s.values())
        assert parts == pytest.approx(r.outer_step_s, rel=1e-9)
        regional = r.hidden_regional_sync_s or 0.0
        # each tier's hidden sync fits in the outer step (the two tiers overlap each other)
        assert regional <= r.outer_step_s * (1 + 1e-9)
        assert (r.hidden_sync_s or 0.0) - regional <= r.outer_step_s * (1 + 1e-9)
        if "SYNC_NOT_HIDDEN" in codes:
            network_bound = r.bottleneck in NETWORK_PARTS
            assert ("network-bound" in codes["SYNC_NOT_HIDDEN"]) == network_bound, (r.bottleneck, codes)
    if "STREAMING_MEMORY" in codes:
        assert "STREAMING_MEMORY" in r.mode_reason  # not "fits" alone
    if r.global_mfu is not None and r.efficiency:
        assert r.wall_clock_mfu == pytest.approx(r.global_mfu / r.efficiency, rel=1e-9)
        assert r.wall_clock_mfu >= r.global_mfu * (1 - 1e-12)


def test_declared_peak_is_cross_checked_against_the_catalog():
    r = dtsim.simulate(dtsim.Scenario())  # the MIRI docs' 32 PFLOPS for 16 × GH200: the sparse figure
    message = {w.code: w.message for w in r.warnings}["PEAK_NOT_CATALOG"]
    assert "2.02×" in message and "15.83 PFLOPS" in message and "2:4-sparsity" in message
    low = dtsim.simulate(dtsim.load_scenario(overrides={"pflops_per_node": 8}))
    message = {w.code: w.message for w in low.warnings}["PEAK_NOT_CATALOG"]
    assert "0.51×" in message and "sparsity" not in message  # the sparse explanation only near 2×
    dense = dtsim.simulate(dtsim.load_scenario(overrides={"gpu": "gh200", "gpus_per_node": 16}))
    assert "PEAK_NOT_CATALOG" not in {w.code for w in dense.warnings}  # derived from the catalog: agrees
    assert dense.wall_clock_mfu is not None and dense.global_mfu < dense.wall_clock_mfu


def test_an_empty_search_space_has_no_groups():
    import numpy as np

    from dtsim.analysis.search import config_groups

    assert config_groups({"node": np.array([]), "h": np.array([])}, lambda i: True) == []


@pytest.mark.parametrize(
    "args",
    [
        ["validate"],
        ["simulate"],
        ["plan", "--model", "gpt2", "--gpu", "a100-80gb", "--nodes", "2"],
        ["limits", "curve"],
        ["assumptions"],
    ],
)
def test_tables_fold_rather_than_cut_in_an_80_column_terminal(args):
    """Rich cut a value that did not fit with an ellipsis ('calibra…', 'MCORE24…'); now it folds."""
    import re

    res = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert not re.search(r"\w…", res.stdout), [ln for ln in res.stdout.splitlines() if re.search(r"\w…", ln)][
        :3
    ]


def test_plots_label_axes_with_units_and_readable_ticks(tmp_path):
    from dtsim.analysis.grid import parse_vary, run_grid
    from dtsim.interfaces.plotting import _short, axis_label, plot_grid

    assert axis_label("bandwidth_up_mbps") == "bandwidth up (Mbit/s)"
    assert axis_label("global_mfu_p50") == "global MFU, P50"
    assert axis_label("wall_clock_days") == "wall clock (days)"
    assert [_short(x) for x in (5340.0, 12.0, 0.0123, 2.5e7)] == ["5,340", "12", "0.0123", "2.5e+07"]
    pytest.importorskip("matplotlib")
    axes = [parse_vary("bandwidth_up_mbps=10:10000:12:log"), parse_vary("num_nodes=8:512:10:log")]
    result = run_grid(dtsim.Scenario(), axes)
    labels = plot_grid(result, "wall_clock_days", tmp_path / "h.png")
    assert labels["y"] == "bandwidth up (Mbit/s)" and labels["x"] == "number of nodes"
    assert (tmp_path / "h.png").stat().st_size > 1000


def test_node_counts_the_docs_quote_are_what_the_commands_give():
    """docs/analysis.md said 6 nodes where the command gives 5: every `dtsim … # N nodes` line of the
    docs is run and its answer compared."""
    import re
    import shlex
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    quoted = [
        (m.group(1), int(m.group(2)))
        for p in [*(root / "docs").glob("*.md"), root / "README.md"]
        for m in re.finditer(r"^dtsim (.+?)\s+# (\d+) nodes\b", p.read_text(), re.M)
    ]
    assert quoted  # the E14 line at least
    for command, nodes in quoted:
        res = runner.invoke(app, shlex.split(command), env=WIDE)
        assert res.exit_code == 0, (command, res.output)
        assert f"minimum nodes: {nodes} ×" in res.stdout, (command, nodes, res.stdout[-300:])


def test_emulate_experiments_report_runs_to_the_progress_bar():
    from dtsim.interfaces.cli.emulate import _counted

    seen: list[tuple[int, int]] = []
    started = _counted(lambda d, t: seen.append((d, t)), 3)
    for name in ("DDP baseline", "H=1", "H=8"):
        started(name)
    assert seen == [(0, 3), (1, 3), (2, 3)]
    _counted(None, 3)("quiet")  # no bar (--json): nothing to report to


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("d.yaml", "num_nodes: 1\nnum_nodes: 2\n", "the key 'num_nodes' is given twice (line 2)"),
        ("d.json", '{"num_nodes": 1, "num_nodes": 2}', "the key 'num_nodes' is given twice"),
        (
            "e.yaml",
            "name: x\nmfu: [1, 2\nnum_nodes: 3\n",
            "'line 3, column 10': malformed YAML: did not find",
        ),
        ("e.json", '{"a": 1,}', "'line 1, column 9': malformed JSON"),
    ],
)
def test_duplicate_keys_and_syntax_errors_are_named_with_their_line(tmp_path, name, text, words):
    (tmp_path / name).write_text(text)
    res = runner.invoke(app, ["simulate", str(tmp_path / name)], env=WIDE)
    assert res.exit_code == 2 and words in said(res), said(res)


def test_one_size_limit_for_every_input(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("name: x\n" + "# padding line\n" * 80_000)  # 1.2 MB
    res = runner.invoke(app, ["simulate", str(big)], env=WIDE)
    assert res.exit_code == 2 and f"at most {inputs.MAX_FILE_BYTES:,} are read" in said(res)
    with pytest.raises(ScenarioError, match="is over the 1,048,576 allowed"):
        inputs.parse_yaml("x" * (inputs.MAX_TEXT_CHARS + 1), "--set")


def test_sweep_metric_must_be_numeric():
    res = runner.invoke(app, ["sweep", "--vary", "num_nodes=8:64:3", "--metric", "mode", "-q"], env=WIDE)
    assert res.exit_code == 2 and "--metric = 'mode': is not a numeric output" in said(res)


@pytest.mark.parametrize(("args", "words"), [(["--port", "99999"], "1–65535"), (["--port", "-1"], "1–65535")])
def test_serve_refuses_a_port_it_cannot_bind(args, words):
    res = runner.invoke(app, ["serve", *args], env=WIDE)
    assert res.exit_code == 2 and words in said(res)


def test_serve_on_a_port_another_process_holds_says_so_and_never_announces_a_url():
    """With the port taken, "dtsim is serving at …" printed (its check connected to the other process)
    above uvicorn's address-in-use error: now the bind is tried first and refused, naming --port."""
    import socket

    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        res = runner.invoke(app, ["serve", "--port", str(port)], env=WIDE)
    assert res.exit_code == 2 and f"--port = {port}" in said(res) and "in use" in said(res)
    assert "serving at" not in res.output


def test_a_searched_answer_carries_what_simulate_warns_about_it():
    """target printed a winner that simulate calls infeasible (η-adjusted time past the useful run
    length) and whose streaming state does not fit, without a word."""
    res = runner.invoke(app, ["target", "--params-b", "70", "--tokens-t", "1.4", "--json"], env=WIDE)
    assert res.exit_code == 0, res.output
    out = strict_json(res.stdout)
    codes = {w["code"] for w in out["winner_warnings"]}
    assert "EXCEEDS_MAX_RUN_LENGTH" in codes, (codes, out["winner"])
    text = runner.invoke(app, ["target", "--params-b", "70", "--tokens-t", "1.4"], env=WIDE)
    assert "Warnings: the winner, run in simulate" in text.stdout and "EXCEEDS_MAX_RUN_LENGTH" in text.stdout
    solved = runner.invoke(app, ["target", "--solve", "days", "--params-b", "70", "--json"], env=WIDE)
    assert solved.exit_code == 0, solved.output
    assert "PEAK_NOT_CATALOG" in {w["code"] for w in strict_json(solved.stdout)["warnings"]}


def test_set_takes_odd_yaml_as_text_but_never_an_input_over_a_limit():
    assert parse_set(["name=2024-01-01", "precision=[x"]) == {"name": "2024-01-01", "precision": "[x"}
    with pytest.raises(inputs.InputLimitError):
        parse_set([f"name={'[' * 40 + ']' * 40}"])
