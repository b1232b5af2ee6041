"""`dtsim validate` and `dtsim calibrate` (issue 5): the bundled dataset, the error bounds, the
calibration's provenance, users' own runs and malformed records."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from dtsim import catalog
from dtsim.interfaces.cli.main import app
from dtsim.validation import calibrate, load_dataset, validate
from dtsim.validation.predict import predict, ring_allreduce_abg_s
from dtsim.validation.runner import spearman
from tests.oracle.mapping import REFERENCE

runner = CliRunner()


@pytest.fixture(scope="module")
def dataset():
    d = load_dataset()
    assert not d.problems, [str(p) for p in d.problems]
    return d


@pytest.fixture(scope="module")
def result(dataset):
    return validate(dataset)


@pytest.fixture(scope="module")
def fresh_fit(dataset):
    return calibrate(dataset)


def _rows(result, group):
    return {r.id: r for r in result.runs if r.group == group}


# --- the dataset --------------------------------------------------------------------------------------------


def test_every_bundled_record_loads_and_is_predicted_or_explained(dataset, result):
    assert len(dataset.records) >= 80
    kinds = {r.kind for r in dataset.records}
    assert kinds == {"datacenter", "collective", "gemm", "testbed", "decentralized", "reference"}
    for row in result.runs:
        if row.role == "reference":
            assert row.reason
        else:
            assert row.predicted is not None, (row.id, row.reason)
            assert math.isfinite(row.error)
        assert row.source and row.certainty in ("P", "P*", "S", "D", "user")


def _csv_rows():
    with open(REFERENCE / "measured_runs.csv", newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def _first_number(text):
    return float(text.replace("%", "").replace("~", "").split("/")[0].split()[0].rstrip(";,"))


MAMF_NAMES = {  # catalog GPUs with GEMM constants → the table's accelerator names
    "a100-80gb": "NVIDIA A100 SXM",
    "h100-sxm": "NVIDIA H100 SXM",
    "h200": "NVIDIA H200 SXM",
    "gh200": "NVIDIA GH200 SXM",
    "b200": "NVIDIA B200 SXM",
    "gb200": "NVIDIA GB200 SXM",
}


def test_mamf_records_carry_the_table_values(dataset):
    """Every MAMF record holds the MAMF of its GPU in the table of its precision
    (tests/data/ml_engineering_mamf.md, verbatim; the two older rows also match measured_runs.csv), one
    record per GPU and precision, and every row of those tables for a catalog GPU with GEMM constants
    is recorded."""
    text = (Path(__file__).parent / "data" / "ml_engineering_mamf.md").read_text()
    tables, current, efficiency = {}, None, {}
    for line in text.splitlines():
        if line.startswith("**BF16**"):
            current = tables.setdefault("bf16", {})
        elif line.startswith("**FP8"):
            current = tables.setdefault("fp8", {})
        elif current is not None and line.startswith("| ") and not line.startswith(("| Accelerator", "| :")):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells[1]:
                current[cells[0]] = float(cells[1])
                efficiency.setdefault(cells[0], {})[current is tables.get("fp8")] = float(cells[1]) / float(
                    cells[2]
                )
    assert tables["bf16"]["NVIDIA B200 SXM"] == 1745.0 and tables["fp8"]["NVIDIA H100 SXM"] == 1402.6
    # each GPU's fp8_sustained_ratio is its FP8 efficiency over its BF16 one (H200's BF16: "H200 is the
    # same" as H100, the table's note)
    efficiency["NVIDIA H200 SXM"][False] = efficiency["NVIDIA H100 SXM"][False]
    for gpu, name in MAMF_NAMES.items():
        if True in efficiency.get(name, {}):
            ratio = efficiency[name][True] / efficiency[name][False]
            assert catalog.gpus()[gpu].micro.fp8_sustained_ratio == pytest.approx(ratio, abs=6e-4), gpu
    mamf = [r for r in dataset.records if r.group in ("MAMF", "MAMF-FP8")]
    recorded = {(r.gpu, r.precision): r for r in mamf}
    assert len(recorded) == len(mamf), "two MAMF records for one GPU and precision"
    gpus = catalog.gpus()
    for (gpu, precision), rec in recorded.items():
        assert rec.measured == tables[precision][MAMF_NAMES[gpu]], rec.id
    for precision, rows in tables.items():
        for gpu, name in MAMF_NAMES.items():
            assert gpus[gpu].micro is not None and gpus[gpu].micro.num_sms > 0, gpu
            if name in rows:
                assert (gpu, precision) in recorded, (gpu, precision)


def test_records_carry_the_csv_values(dataset):
    """Every record built from measured_runs.csv holds the number the CSV states (KOR22 as MFU × 312,
    the CSV's MFU column times the A100's dense BF16 peak)."""
    rows = _csv_rows()
    aliases = {
        "NCCL-H200x8-ring": ("NCCL-H200x8-NVLS", lambda r: _first_number(r["notes"].replace("ring", ""))),
        "NCCL-B200-1node": ("NCCL-B200-4node", lambda r: float(r["notes"].split("1 node")[1].split(";")[0])),
        "INTELLECT1-USA-CU": ("INTELLECT1-USA", lambda r: _first_number(r["measured_value"].split("/")[1])),
        "INTELLECT1-global-CU": (
            "INTELLECT1-global",
            lambda r: _first_number(r["measured_value"].split("/")[1]),
        ),
        "COVENANT-72B-comm": ("COVENANT-72B", lambda r: _first_number(r["measured_value"].split("/")[1])),
        "COVENANT-72B-util": ("COVENANT-72B", lambda r: _first_number(r["measured_value"])),
    }
    checked = 0
    for rec in dataset.records:
        if rec.kind in ("testbed", "reference") or rec.id.endswith("32KiB") or rec.id == "NCCL-latency-IB":
            continue
        if getattr(rec, "metric", None) == "wall_clock_days":
            continue  # durations: not in the CSV, transcribed from their sources (test_duration_records.py)
        if rec.id in aliases:
            csv_id, get = aliases[rec.id]
            expected = get(rows[csv_id])
        elif rec.group.startswith("MAXTEXT"):
            continue  # not in the CSV: transcribed from the MaxText README tables (the group's description)
        elif rec.group.startswith("MAMF") and rec.id not in rows:
            continue  # not in the CSV: checked against the vendored ml-engineering tables (below)
        elif rec.group in ("NEMO24", "NEMO24-AUG", "MBRIDGE"):
            continue  # not in the CSV: checked against the vendored NeMo/Megatron-Bridge tables (test_nemo_records.py)
        elif rec.group in ("MPT", "MPT-FP8"):  # tokens/s per GPU: the CSV's last number (others: the tables)
            if rec.id not in rows:
                continue  # checked against the vendored llm-foundry tables (test_llm_foundry_records.py)
            expected = float(rows[rec.id]["measured_value"].split("/")[-1])
        elif rec.group == "KOR22":  # "iter s / MFU / HFU": TFLOP/s = MFU × 312
            expected = _first_number(rows[rec.id]["measured_value"].split("/")[1]) / 100 * 312
        elif rec.id in rows:
            expected = _first_number(rows[rec.id]["measured_value"])
        elif rec.id == "INTELLECT1-global-comm":
            expected = 8.3 * 60
        else:
            raise AssertionError(f"{rec.id} has no row in measured_runs.csv")
        assert rec.measured == pytest.approx(expected, rel=1e-3), rec.id
        checked += 1
    assert checked >= 45


# --- the bounds of issue 5 --------------------------------------------------------------------------------


def test_check_groups_meet_their_bounds(result):
    """Issue 13: no check group's median over 15 % (MCORE24 also keeps its 10 % / 25 % bounds). Every
    datacenter check group carries that bound and meets it; MPT-FP8 missed it (38.7 %) until
    FlashAttention was charged its measured speed by sequence length (attention_kernels.yaml) rather
    than its best published share of the peak."""
    s = result.summary
    training = {r.group for r in result.runs if r.kind == "datacenter"}
    checks = {g for g, e in s.items() if e.roles == ["check"] and g in training}
    assert checks == {
        "MCORE24",
        "MPT",
        "MPT-FP8",
        "MAXTEXT",
        "MAXTEXT-V5P-CFG",
        "NEMO24",
        "NEMO24-AUG",
        "MBRIDGE",
    }
    for g in checks:
        assert any(c.bound == "median_abs_error" and c.limit <= 0.15 for c in s[g].bounds), g
    failing = {g for g, e in s.items() for c in e.bounds if not c.ok}
    assert failing == set()
    assert s["MCORE24"].median_abs_error <= 0.10 and s["MCORE24"].max_abs_error <= 0.25
    assert s["MPT"].median_abs_error <= 0.15
    assert result.bounds_ok


def test_pooled_check_error_is_reported(result):
    """The datacenter check runs pooled across groups (issue 13's 7 % target). Regression guards at the
    levels measured, not the target: 7.5 % on the sources checked before the NeMo and Megatron-Bridge
    performance summaries joined (llm-foundry, MaxText, Megatron-LM README), 8.4 % with them (their
    49 FP8 rows on H100, B200 and GB200 err by 10–12 % at the median)."""
    pooled = result.datacenter_check
    assert pooled["runs"] >= 300
    assert pooled["median_abs_error"] <= 0.09
    older = ("MCORE24", "MPT", "MPT-FP8", "MAXTEXT", "MAXTEXT-V5P-CFG")
    errors = [
        abs(r.error) for r in result.runs if r.group in older and r.role == "check" and r.error is not None
    ]
    assert len(errors) >= 260 and float(np.median(errors)) <= 0.08


def test_calibration_groups_fit_well(result):
    s = result.summary
    assert s["MEG21"].roles == ["calibration"] and s["KOR22"].roles == ["calibration"]
    assert s["MEG21"].median_abs_error <= 0.10
    assert s["KOR22"].median_abs_error <= 0.10


def test_fit_verdicts_are_counted_and_the_misses_named(result):
    """Issue 13 'done when': fit verdicts are reported. Every bundled training run ran, so the right
    verdict for each is "fits"; the report counts them and names those called out of memory, with the
    memory needed and usable. Every run outside llm-foundry's tables is called right (MPT-7B on A100-40GB
    was once called out of memory while the recomputed layer's buffer counted FlashAttention's
    never-stored scores). MPT trains without dropout, so no dropout masks are stored; of llm-foundry's
    216 FSDP runs, 21 are still called out of memory by 0.1–8 GB (the memory model is conservative
    there); this guards that level (91 % right on GPUs; the issue aims at 90 %). On TPUs (MaxText's
    tables) the GPU memory model calls most runs out of memory (PyTorch's FSDP unit buffers, a CUDA
    context and Korthikanti's activations under XLA's remat policies): the report names them."""
    fv = result.fit_verdicts
    assert fv["runs"] >= 280
    wrong = {w["id"] for w in fv["wrong"]}
    # the GB200 405B rows (TP 4, PP 16, VP 4): 190 GB with Korthikanti's in-flight activations for the
    # interleaved schedule on the first stage, of 177 GB usable (MBRIDGE's leaves_out)
    gb200 = {i for i in wrong if i.startswith("MBRIDGE-") and i.endswith("-GB200-405B")}
    assert all(i.startswith(("MPT-", "MAXTEXT-")) for i in wrong - gb200), wrong
    tpu = {r.id for r in result.runs if r.group.startswith("MAXTEXT") and r.role == "check"}
    gpu_wrong = len(wrong - tpu)
    assert (fv["runs"] - len(tpu) - gpu_wrong) / (fv["runs"] - len(tpu)) >= 0.9
    for w in fv["wrong"]:
        assert w["memory_per_gpu_gb"] > w["usable_memory_gb"]
        assert w["id"] in result.fit_verdicts_text()


def test_each_group_names_its_worst_run_and_what_may_explain_it(result):
    s = result.summary["MCORE24"]
    rows = _rows(result, "MCORE24")
    assert s.worst in rows and abs(s.worst_error) == pytest.approx(s.max_abs_error)
    assert "beyond compute" in s.worst_why and "leaves out" in s.worst_why
    r = runner.invoke(app, ["validate", "--subset", "MPT"])
    assert "Worst run of each group" in r.stdout
    assert re.search(r"Fit verdicts: \d+ of 209 measured", r.stdout.replace("\n", " "))


def test_thesis_testbed(result):
    for row in _rows(result, "THESIS-BYTES").values():
        assert abs(row.error) <= 0.02, row.id
    caps = _rows(result, "THESIS-BW")
    assert len(caps) == 3
    for row in caps.values():
        assert abs(row.error) <= 0.20, row.id
        assert row.role == "check"
    assert _rows(result, "THESIS-CAL")["THESIS-WS4-TAR"].role == "calibration"


def test_intellect1_mfu_and_order(result):
    rows = {**_rows(result, "INTELLECT1"), **_rows(result, "INTELLECT1-CAL")}
    measured = {"INTELLECT1-USA": 41.4, "INTELLECT1-USEU": 37.1, "INTELLECT1-global": 36.2}
    for rid, value in measured.items():
        assert rows[rid].measured == value
        assert abs(rows[rid].predicted - value) <= 3.0, rid
    p = [rows[r].predicted for r in measured]
    assert p[0] > p[1] > p[2]
    assert rows["INTELLECT1-USA"].role == "calibration"
    assert rows["INTELLECT1-USEU"].role == "check" and rows["INTELLECT1-global"].role == "check"


def test_covenant(result):
    rows = _rows(result, "COVENANT")
    assert abs(rows["COVENANT-72B-comm"].predicted / 70 - 1) <= 0.30
    assert abs(rows["COVENANT-72B-util"].predicted - 94.5) <= 3.0
    # every assumed input is listed with the prediction
    assert any("20 min" in a for a in rows["COVENANT-72B-util"].assumptions)
    assert any("threshold" in a for a in rows["COVENANT-72B-comm"].assumptions)


def test_validate_is_fast_enough_to_run_everywhere(result):
    # the issue asks for under 60 s on this machine; the bundled records take well under a second
    # (measured by benchmarks/validation.py; not asserted tightly here)
    assert result.seconds < 60


# --- calibration provenance --------------------------------------------------------------------------------


def test_calibration_file_is_a_fresh_fit(fresh_fit):
    stored = catalog.calibration_document()
    assert stored["subset"] == fresh_fit["subset"]
    for section in ("generations", "fabrics", "testbed", "wan"):
        assert set(stored[section]) == set(fresh_fit[section]), section
        for name, entry in fresh_fit[section].items():
            old = stored[section][name]
            assert old["fitted_on"] == entry["fitted_on"], (section, name)
            for key, value in entry.items():
                if key in ("fitted_on", "residuals", "unit", "rms_log_error"):
                    continue
                if isinstance(value, dict):
                    continue
                assert old[key] == pytest.approx(value, rel=2e-3), (section, name, key)


def test_no_check_record_is_fitted(dataset, fresh_fit):
    from dtsim.validation.runner import fitted_ids

    fitted = fitted_ids(fresh_fit)
    checks = {r.id for r in dataset.records if dataset.groups[r.group].role == "check"}
    assert fitted and not fitted & checks
    # the constants are few and global: one derate per GPU generation, two numbers per fabric, one
    # host rate, one window — never one per run
    assert set(fresh_fit["generations"]) == {"ampere"}
    n_constants = sum(
        len([k for k in e if k in ("efficiency", "latency_s")]) for e in fresh_fit["fabrics"].values()
    )
    n_constants += len(fresh_fit["generations"]) + len(fresh_fit["testbed"]) + len(fresh_fit["wan"])
    assert n_constants <= 15 < len(fitted) + 10


def test_derate_fit_is_a_minimum(dataset, fresh_fit):
    from dtsim.validation.calibrate import _loss

    recs = [r for r in dataset.records if r.group in ("MEG21", "KOR22")]
    best = fresh_fit["generations"]["ampere"]["clock_derate"]

    def with_derate(x):
        doc = json.loads(json.dumps(fresh_fit))
        doc["generations"]["ampere"]["clock_derate"] = x
        return _loss(recs, doc)

    assert with_derate(best) < with_derate(best * 0.95)
    assert with_derate(best) < with_derate(best * 1.05)
    # and lands on seed 002's empirical A100 value (gpu_presets.json: 0.85)
    assert best == pytest.approx(0.85, abs=0.02)


def test_testbed_formula_by_hand(dataset):
    """α-β-γ ring: T = 2(N−1)·d + 2(N−1)/N·S·(1/r_host + 1/r_cap), r_host = r_core · 4 vCPUs / N."""
    rec = next(r for r in dataset.records if r.id == "THESIS-BW50-TAR")
    size = 81_912_576 * 4
    expected = 2 * 3 / 4 * size * 8 * (1 / 2e8 + 1 / 50e6)  # four ranks on 4 vCPUs: one core each
    assert ring_allreduce_abg_s(rec, 2e8) == pytest.approx(expected)
    ws2 = next(r for r in dataset.records if r.id == "THESIS-WS2-BS8-TAR")
    assert ring_allreduce_abg_s(ws2, 2e8) == pytest.approx(size * 8 / (2 * 2e8))  # two cores each


def test_testbed_host_rate_is_per_core_and_fitted_on_world_size_4_only(dataset, result, fresh_fit):
    """Camilli 2025: 4 vCPUs (§4.1.1), ~100 % CPU per rank at world size 4 and ~200 % at 2 (figures
    5.24, 5.4). The rate per core is fitted on the uncapped world-size-4 row alone (492.1 MB per rank in
    21.01 s, one core each: 187 Mbit/s per core); a world-size-2 rank has two cores, so its 328 MB take
    328.1e6·8 / (2 · 187e6) = 7.0 s — half the 14.0 s the old per-link rate gave (+203 %)."""
    entry = fresh_fit["testbed"]["host_rate_per_core_bit_s"]
    assert entry["fitted_on"] == ["THESIS-WS4-TAR"]
    assert dataset.groups["THESIS-CAL"].role == "calibration"
    r_core = 2 * 3 / 4 * 81_912_576 * 4 * 8 / 21.010
    assert entry["value"] == pytest.approx(r_core, rel=1e-4)
    ws2 = _rows(result, "THESIS-WS2")
    assert len(ws2) == 4 and all(row.role == "check" for row in ws2.values())
    bs8 = ws2["THESIS-WS2-BS8-TAR"]
    assert bs8.predicted == pytest.approx(81_912_576 * 4 * 8 / (2 * r_core), rel=1e-4)
    assert bs8.details["cores_per_rank"] == 2.0
    assert ws2["THESIS-WS2-FP64-TAR"].predicted == pytest.approx(2 * bs8.predicted)
    # the gap left (+31 to +66 %) is the overlap with the backward pass the model leaves out: the model
    # must stay slower than every world-size-2 measurement (no constant fitted on them), and within 2x
    for row in ws2.values():
        assert 0.2 < row.error < 1.0, (row.id, row.error)


def test_testbed_time_record_without_host_cores_is_rejected(tmp_path):
    doc = {
        "groups": {
            "MYBED": {
                "description": "my testbed",
                "role": "check",
                "defaults": {"kind": "testbed", "certainty": "user", "unit": "s", "metric": "allreduce_s"},
            }
        },
        "records": [
            {
                "id": "MY-BED-1",
                "group": "MYBED",
                "source": "x",
                "ranks": 2,
                "bytes_per_param": 4,
                "measured": 5,
            },
            {
                "id": "MY-BED-2",
                "group": "MYBED",
                "source": "x",
                "ranks": 2,
                "bytes_per_param": 4,
                "host_cores": 0,
                "measured": 5,
            },
            {
                "id": "MY-BED-3",
                "group": "MYBED",
                "source": "x",
                "ranks": 8,
                "bytes_per_param": 4,
                "host_cores": 4,
                "measured": 5,
            },
        ],
    }
    (tmp_path / "bed.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    d = load_dataset(tmp_path)
    problems = {(p.record, p.field): p.reason for p in d.problems}
    assert "required for metric allreduce_s" in problems[("MY-BED-1", "host_cores")]
    assert ("MY-BED-2", "host_cores") in problems
    rec = next(r for r in d.records if r.id == "MY-BED-3")  # eight ranks time-share four cores
    value, details = predict(rec)
    assert details["cores_per_rank"] == 0.5
    r_core = details["host_rate_per_core_bit_s"]
    assert value == pytest.approx(2 * 7 / 8 * 81_912_576 * 4 * 8 / (0.5 * r_core))


def test_spearman():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 2], [1, 2]) is None


# --- the CLI ------------------------------------------------------------------------------------------------


def test_validate_cli_table_and_json():
    r = runner.invoke(app, ["validate"])
    assert r.exit_code == 0, r.output
    assert "MCORE24" in r.stdout and "Fitted constants" in r.stdout and "bounds all met" in r.stdout
    r = runner.invoke(app, ["validate", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["bounds_ok"] is True
    d = json.loads(r.stdout)
    row = d["runs"][0]
    assert {"id", "group", "metric", "convention", "measured", "predicted", "error"} <= set(row)
    assert {"MEG21", "MCORE24", "MPT", "INTELLECT1", "COVENANT", "THESIS-BW"} <= set(d["summary"])
    assert d["calibration"]["constants"]
    # the JSON is the typed report's as_dict(): every run and group has the same keys, null where they
    # do not apply; the numbers equal the Python API's
    report = validate(load_dataset())
    assert set(d) == set(report.as_dict())
    assert (
        len({frozenset(r) for r in d["runs"]}) == 1
        and len({frozenset(g) for g in d["summary"].values()}) == 1
    )
    by_id = {r.id: r for r in report.runs}
    for r in d["runs"]:
        assert r["predicted"] == by_id[r["id"]].predicted and r["role"] == by_id[r["id"]].role
        assert r["points"] == by_id[r["id"]].points
    for name, g in d["summary"].items():
        assert g["median_abs_error"] == report.summary[name].median_abs_error
        assert [c["ok"] for c in g["bounds"]] == [c.ok for c in report.summary[name].bounds]


def test_validate_subset_and_bad_subset():
    r = runner.invoke(app, ["validate", "--subset", "MCORE24,MPT", "--json"])
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert {x["group"] for x in d["runs"]} == {"MCORE24", "MPT"}
    r = runner.invoke(app, ["validate", "--subset", "NOPE"])
    assert r.exit_code == 2 and "--subset" in r.output and "NOPE" in r.output


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_validate_plot(tmp_path, suffix):
    out = tmp_path / f"scatter{suffix}"
    r = runner.invoke(app, ["validate", "--plot", str(out)])
    assert r.exit_code == 0, r.output
    data = out.read_bytes()
    assert (data[:8] == b"\x89PNG\r\n\x1a\n") if suffix == ".png" else (b"<svg" in data)
    r = runner.invoke(app, ["validate", "--plot", str(tmp_path / "x.txt")])
    assert r.exit_code == 2 and "--plot" in r.output


GOOD = {
    "groups": {
        "MYRUNS": {
            "description": "my cluster",
            "role": "check",
            "defaults": {
                "kind": "datacenter",
                "certainty": "user",
                "unit": "TFLOP/s per GPU",
                "metric": "tflops_per_gpu",
            },
        }
    },
    "records": [
        {
            "id": "MY-GPT-1",
            "group": "MYRUNS",
            "source": "our cluster, 2026-11",
            "convention": "model",
            "measured": 150.0,
            "model": "gpt3-175b",
            "precision": "bf16",
            "cluster": {"gpu": "a100-80gb", "nodes": 8},
            "layout": {"tp": 8, "pp": 8, "gbs": 64, "recompute": "selective", "sequence_parallel": True},
        },
        {
            "id": "MY-BAD-1",
            "group": "MYRUNS",
            "source": "typo",
            "convention": "model",
            "measured": 150.0,
            "model": "gpt3-175b",
            "cluster": {"gpu": "a100-80gb", "nodes": 8},
            "layout": {"tp": 7, "pp": 8, "gbs": 64},
        },
        {
            "id": "MY-BAD-2",
            "group": "MYRUNS",
            "source": "x",
            "convention": "model",
            "measured": -3,
            "model": "gpt2",
            "cluster": {},
            "layout": {"gbs": 8},
        },
        {"id": "MY-BAD-3", "group": "NOGROUP", "source": "x", "measured": 1},
        {
            "id": "MEG21-1.7B",
            "group": "MYRUNS",
            "source": "dup",
            "convention": "model",
            "measured": 1,
            "model": "gpt2",
            "cluster": {},
            "layout": {"gbs": 8},
        },
    ],
}


def test_user_runs_are_picked_up_and_bad_records_rejected(tmp_path):
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(GOOD, sort_keys=False))
    (tmp_path / "broken.yml").write_text("records: [unclosed\n")
    (tmp_path / "notes.txt").write_text("ignored: not a .yaml file")
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--json"])
    assert r.exit_code == 1  # something was rejected; the rest ran
    d = json.loads(r.stdout)
    ids = {x["id"] for x in d["runs"]}
    assert "MY-GPT-1" in ids and "MEG21-1.7B" in ids
    mine = next(x for x in d["runs"] if x["id"] == "MY-GPT-1")
    assert mine["role"] == "check" and mine["predicted"] > 0 and mine["certainty"] == "user"
    problems = {(p["record"], p["field"]) for p in d["problems"]}
    files = {p["file"] for p in d["problems"]}
    assert ("MY-BAD-1", "layout.tp") in problems
    assert ("MY-BAD-2", "measured") in problems
    assert ("MY-BAD-3", "group") in problems
    assert ("MEG21-1.7B", "id") in problems
    assert any(f.endswith("broken.yml") for f in files) and any(f.endswith("mine.yaml") for f in files)
    assert "Traceback" not in r.output
    # the text report names file, record, field and reason on stderr
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path)])
    # Rich wraps the line at a width that depends on the temporary path's length, turning a space into a
    # line break or breaking inside a word: compare without whitespace
    flat = "".join(r.output.split())
    assert "rejected:" in r.output and "mine.yaml:recordMY-BAD-1:layout.tp" in flat


def test_a_failing_bound_is_reported_and_exits_1(tmp_path):
    """A group whose bound fails (here a user group held to 1 % that the model misses) makes `validate`
    say so and exit 1, in the table and in JSON; the plot is still written."""
    doc = {
        "groups": {"STRICT": {**GOOD["groups"]["MYRUNS"], "bounds": {"median_abs_error": 0.01}}},
        "records": [{**GOOD["records"][0], "id": "STRICT-1", "group": "STRICT", "measured": 500.0}],
    }
    (tmp_path / "strict.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    plot = tmp_path / "scatter.png"
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--plot", str(plot)])
    assert r.exit_code == 1 and "bounds NOT all met" in r.stdout, r.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--json"])
    d = json.loads(r.stdout)
    assert r.exit_code == 1 and d["bounds_ok"] is False and not d["problems"]
    assert [c["ok"] for c in d["summary"]["STRICT"]["bounds"]] == [False]


def test_a_record_in_another_unit_than_its_metric_is_rejected(tmp_path):
    """A busbw in Gb/s was compared as GB/s (an 8× error reported as a 2 % match)."""
    doc = {
        "groups": {
            "MYNCCL": {
                "description": "my nccl runs",
                "role": "check",
                "defaults": {"kind": "collective", "op": "allreduce", "convention": "nccl-busbw"},
            }
        },
        "records": [
            {
                "id": f"MY-{unit.replace('/', '')}",
                "group": "MYNCCL",
                "source": "me",
                "certainty": "P",
                "metric": "busbw_gb_s",
                "unit": unit,
                "measured": 230,
                "ranks": 8,
                "gpus_per_node": 8,
                "size_bytes": 8589934592,
                "intra_fabric": "nvlink3",
            }
            for unit in ("GB/s", "Gb/s")
        ]
        + [  # the Greek mu reads as the micro sign (NFKC): accepted as µs
            {
                "id": "MY-TIME",
                "group": "MYNCCL",
                "source": "me",
                "certainty": "P",
                "metric": "time_us",
                "unit": "\u03bcs",
                "measured": 50,
                "ranks": 8,
                "gpus_per_node": 8,
                "size_bytes": 32768,
                "intra_fabric": "nvlink3",
            }
        ],
    }
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--subset", "MYNCCL", "--json"])
    d = json.loads(r.stdout)
    assert r.exit_code == 1 and [x["id"] for x in d["runs"]] == ["MY-GBs", "MY-TIME"]
    assert any(p["record"] == "MY-Gbs" and "write measured in 'GB/s'" in p["reason"] for p in d["problems"])
    text = " ".join(
        runner.invoke(app, ["validate", "--runs", str(tmp_path), "--subset", "MYNCCL"]).output.split()
    )
    assert "1 records rejected (listed above the tables)" in text
    # a subset that names a group whose file was rejected says so
    (tmp_path / "a.yaml").write_text("records: [unclosed\n")
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--subset", "MYNCCL"])
    assert r.exit_code == 2 and "1 records of --runs were rejected" in " ".join(r.output.split())
    # calibrate does not write a fit that silently leaves the rejected records out
    out = tmp_path / "cal.yaml"
    r = runner.invoke(app, ["calibrate", "--runs", str(tmp_path), "--out", str(out)])
    assert r.exit_code == 1 and not out.exists() and "nothing written" in r.output


def test_runs_dir_must_exist(tmp_path):
    # a trial user's case: a mistyped --runs printed the bundled records' whole report and exited 1, as
    # if a record had failed; it is a bad argument (exit 2, the error as JSON, no report)
    (tmp_path / "file.yaml").write_text("records: []\n")
    (tmp_path / "empty").mkdir()
    for path, why in (
        (tmp_path / "nope", "does not exist: give a directory of record files"),
        (tmp_path / "file.yaml", "is not a directory: give a directory of record files"),
        (tmp_path / "empty", "holds no .yaml or .yml files"),
    ):
        for command in ("validate", "calibrate"):
            r = runner.invoke(app, [command, "--runs", str(path), "--json"])
            assert r.exit_code == 2, r.output
            (problem,) = json.loads(r.stdout)["detail"]
            assert problem == {"field": "--runs", "value": str(path), "message": why}, problem


def test_an_empty_runs_path_is_named_not_read_as_this_folder(tmp_path, monkeypatch):
    # typer's Path read "" as ".": the records of whatever folder the user stood in were added
    (tmp_path / "stray.yaml").write_text("records: [{id: X, kind: datacenter}]\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["validate", "--runs", "", "--json"])
    assert r.exit_code == 2
    (problem,) = json.loads(r.stdout)["detail"]
    assert problem["field"] == "--runs" and problem["message"] == "is empty: give a directory of record files"


def test_a_runs_file_with_an_unknown_top_level_key_is_named(tmp_path):
    # `runs:` for `records:` was read as a file of no records: exit 0, the user's run silently absent
    (tmp_path / "r.yaml").write_text(
        "groups:\n  MYGRP: {description: mine, role: check}\nruns:\n  - {id: MINE-1, group: MYGRP}\n", "utf-8"
    )
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--json"])
    assert r.exit_code == 1
    (problem,) = json.loads(r.stdout)["problems"]
    assert problem["field"] == "runs" and "unknown top-level key" in problem["reason"]


def test_calibrate_cli_writes_with_provenance(tmp_path):
    out = tmp_path / "cal.yaml"
    r = runner.invoke(app, ["calibrate", "--subset", "MEG21,KOR22", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = yaml.safe_load(out.read_text())
    entry = doc["generations"]["ampere"]
    assert doc["subset"] == ["MEG21", "KOR22"] and doc["date"]
    assert len(entry["fitted_on"]) == 15 and set(entry["residuals"]) == set(entry["fitted_on"])
    assert doc["fabrics"] == {} and doc["wan"] == {}
    # a .json name gets JSON (it got YAML), the same document
    as_json = tmp_path / "cal.json"
    assert runner.invoke(app, ["calibrate", "--subset", "MEG21,KOR22", "--out", str(as_json)]).exit_code == 0
    assert {k: v for k, v in json.loads(as_json.read_text()).items() if k != "date"} == {
        k: v for k, v in doc.items() if k != "date"
    }
    # validate with that file: it is laid over the packaged calibration, so the constants it does not
    # fit keep their packaged values (and the rows those were fitted on stay calibration rows); until
    # 2026-11-26 it replaced the packaged calibration, and the window-limited INTELLECT-1 rows lost
    # their fitted TCP window
    packaged = json.loads(runner.invoke(app, ["validate", "--json"]).stdout)
    r = runner.invoke(app, ["validate", "--calibration", str(out), "--json"])
    d = json.loads(r.stdout)
    roles = {x["id"]: x["role"] for x in d["runs"]}
    assert roles["MEG21-1.7B"] == "calibration" and roles["NCCL-A100x8"] == "calibration"
    before = {x["id"]: x["predicted"] for x in packaged["runs"]}
    i1 = next(x for x in d["runs"] if x["id"] == "INTELLECT1-USEU")
    assert i1["predicted"] == before["INTELLECT1-USEU"]
    # a fit of the NCCL rows alone leaves every A100 training prediction as it was
    nccl = tmp_path / "nccl.yaml"
    assert runner.invoke(app, ["calibrate", "--subset", "NCCL", "--out", str(nccl)]).exit_code == 0
    d = json.loads(runner.invoke(app, ["validate", "--calibration", str(nccl), "--json"]).stdout)
    after = {x["id"]: x["predicted"] for x in d["runs"]}
    assert all(after[k] == before[k] for k in before if k.startswith(("MEG21", "KOR22")))
    assert after["NCCL-latency-IB"] == pytest.approx(before["NCCL-latency-IB"])
    r = runner.invoke(app, ["calibrate", "--dry-run", "--subset", "THESIS-CAL"])
    assert r.exit_code == 0 and "nothing written" in r.stdout
    r = runner.invoke(app, ["validate", "--calibration", str(tmp_path / "missing.yaml")])
    assert r.exit_code == 2 and "--calibration" in r.output


def test_predictions_do_not_depend_on_record_order(dataset):
    a = [predict(r)[0] for r in dataset.records if r.kind != "reference"]
    b = [predict(r)[0] for r in reversed([r for r in dataset.records if r.kind != "reference"])]
    assert a == list(reversed(b))


def test_validation_page_is_current():
    """docs/validation.md is what `python -m dtsim.validation.docs` writes now."""
    from pathlib import Path

    from dtsim.validation.docs import render

    page = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
    assert page.read_text(encoding="utf-8") == render(), "run: python -m dtsim.validation.docs"


def test_mfu_ceilings_file_is_current():
    """catalog/mfu_ceilings.yaml is what `python -m dtsim.validation.mfu_ceilings` writes now."""
    from dtsim.validation import mfu_ceilings

    assert mfu_ceilings.target().read_text(encoding="utf-8") == mfu_ceilings.render(), (
        "run `python -m dtsim.validation.mfu_ceilings` to regenerate src/dtsim/catalog/mfu_ceilings.yaml"
    )


def test_a_measured_mfu_in_the_model_convention_is_taken_as_it_stands():
    from dtsim.validation.predict import measured_model_mfu
    from dtsim.validation.records import load_dataset

    recs = [r for r in load_dataset().records if r.kind == "datacenter" and r.convention == "model"]
    assert recs
    for rec in recs:
        if rec.metric == "mfu" and (rec.peak_precision or rec.precision) == rec.precision:
            assert measured_model_mfu(rec) == pytest.approx(rec.measured / 100, rel=1e-12)


def test_nvls_is_calibrated_on_its_own_row_and_a_misplaced_nvls_record_is_rejected(tmp_path):
    """The NVLS row fits nvlink4's nvls_efficiency (the ring rows its ring efficiency); an NVLS record
    across nodes, or on an NVLink without SHARP, is refused naming the field."""
    r = runner.invoke(app, ["calibrate", "--subset", "NCCL", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    nv4 = json.loads(r.stdout)["fabrics"]["nvlink4"]
    assert 0.55 < nv4["nvls_efficiency"] < 0.7 and abs(nv4["residuals"]["NCCL-H200x8-NVLS"]) < 0.01
    assert "nvls_efficiency" not in json.loads(r.stdout)["fabrics"]["nvlink3"]
    shared = {"kind": "collective", "source": "me", "certainty": "user", "metric": "busbw_gb_s"}
    shared |= {
        "convention": "nccl-busbw",
        "unit": "GB/s",
        "gpus_per_node": 8,
        "size_bytes": 1e9,
        "algorithm": "nvls",
    }
    mine = {"description": "my NVLS runs", "role": "check", "defaults": shared}
    bad = {
        "groups": {"MINE": mine},
        "records": [  # across two nodes; on NVLink 3, whose switch does not reduce
            {
                "id": "MY-NVLS-1",
                "group": "MINE",
                "measured": 400,
                "ranks": 16,
                "intra_fabric": "nvlink4",
                "inter_fabric": "ib-ndr",
            },
            {"id": "MY-NVLS-2", "group": "MINE", "measured": 200, "ranks": 8, "intra_fabric": "nvlink3"},
        ],
    }
    (tmp_path / "nvls.yaml").write_text(yaml.safe_dump(bad, sort_keys=False))
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--json"])
    problems = {(p["record"], p["field"]) for p in json.loads(r.stdout)["problems"]}
    assert {("MY-NVLS-1", "algorithm"), ("MY-NVLS-2", "algorithm")} <= problems


def test_a_calibration_file_cannot_give_nvls_to_a_switch_without_it(tmp_path):
    from importlib import resources

    from dtsim.models.datacenter.workload import Cluster

    doc = yaml.safe_load(resources.files("dtsim.catalog").joinpath("calibration.yaml").read_bytes())
    doc["fabrics"]["nvlink3"]["nvls_efficiency"] = 0.5  # NVLink 3's NVSwitch cannot reduce
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(doc))
    r = runner.invoke(app, ["step", "--model", "megatron-1.7b", "--calibration", str(path)])
    assert r.exit_code == 2 and "fabrics.nvlink3.nvls_efficiency" in r.output
    # and NVLS needs more than one GPU behind the switch
    assert not Cluster(gpu="h100-sxm", gpus_per_node=1).network_fields()["nvls"]
    assert Cluster(gpu="h100-sxm").network_fields()["nvls"]


def test_records_with_infinite_numbers_or_unnamed_links_are_rejected(tmp_path):
    """A trial user's cases: a testbed record with added_delay_ms .inf raised a ZeroDivisionError in
    validate and calibrate; a collective record with size_bytes .inf was predicted as NaN and left out
    of a calibration that exited 0; one without intra_fabric was accepted, then not predicted, and a
    calibration on it wrote an empty fit. Each is rejected at load, naming the field."""
    doc = {
        "groups": {
            "TB": {
                "description": "x",
                "role": "check",
                "defaults": {
                    "kind": "testbed",
                    "certainty": "P",
                    "source": "me",
                    "unit": "s",
                    "metric": "allreduce_s",
                },
            },
            "CO": {
                "description": "x",
                "role": "calibration",
                "defaults": {
                    "kind": "collective",
                    "convention": "nccl-busbw",
                    "metric": "busbw_gb_s",
                    "unit": "GB/s",
                    "gpus_per_node": 8,
                    "certainty": "P",
                    "source": "x",
                },
            },
        },
        "records": [
            {
                "id": "TB-d",
                "group": "TB",
                "measured": 20.0,
                "ranks": 4,
                "bytes_per_param": 4,
                "host_cores": 4,
                "added_delay_ms": math.inf,
            },
            {
                "id": "CO-inf",
                "group": "CO",
                "measured": 200.0,
                "ranks": 8,
                "size_bytes": math.inf,
                "intra_fabric": "nvlink3",
            },
            {"id": "CO-none", "group": "CO", "measured": 230.0, "ranks": 8, "size_bytes": 1e9},
            {
                "id": "CO-span",
                "group": "CO",
                "measured": 230.0,
                "ranks": 16,
                "size_bytes": 1e9,
                "intra_fabric": "nvlink3",
            },
            {
                "id": "CO-ok",
                "group": "CO",
                "measured": 210.0,
                "ranks": 8,
                "size_bytes": 8589934592,
                "intra_fabric": "nvlink3",
            },
            # a NaN rejects its own record, named, not the whole file as "record -" (until 2026-11-26)
            {
                "id": "CO-nan",
                "group": "CO",
                "measured": math.nan,
                "ranks": 8,
                "size_bytes": 8589934592,
                "intra_fabric": "nvlink3",
            },
        ],
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    d = load_dataset(tmp_path)
    problems = {p.record: (p.field, p.reason) for p in d.problems}
    assert problems["CO-nan"] == ("measured", "nan: must be a number, not NaN")
    assert "-" not in problems
    assert problems["TB-d"][0] == "added_delay_ms" and "finite" in problems["TB-d"][1]
    assert problems["CO-inf"][0] == "size_bytes" and "finite" in problems["CO-inf"][1]
    assert problems["CO-none"][1].startswith("intra_fabric is required")
    assert problems["CO-span"][1].startswith("inter_fabric is required")
    assert "CO-ok" in {r.id for r in d.records}
    out = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--subset", "CO", "--json"])
    assert out.exit_code == 1 and json.loads(out.stdout)


def test_a_runs_folder_shares_its_groups_and_names_what_it_does_not_read(tmp_path):
    """A trial user's folder: groups in one file, records in files before and after it (by name), a CSV
    beside them. Every record takes its group's defaults whatever the file order (the earlier one was
    told its group was not defined, the later one got a pydantic discriminator message); a record with
    no kind is told to give one; the CSV is named as not read, in text and JSON."""
    group = _nccl_group("mine", "check")
    rec = {"measured": 360.0, "ranks": 8, "size_bytes": 8589934592, "intra_fabric": "nvlink4", "source": "me"}
    (tmp_path / "b_groups.yaml").write_text(yaml.safe_dump({"groups": {"MYG": group}}))
    (tmp_path / "a_runs.yaml").write_text(yaml.safe_dump({"records": [{"id": "A1", "group": "MYG", **rec}]}))
    (tmp_path / "c_runs.yaml").write_text(yaml.safe_dump({"records": [{"id": "C1", "group": "MYG", **rec}]}))
    no_kind = {"id": "K1", "certainty": "user", **rec}
    (tmp_path / "d_runs.yaml").write_text(yaml.safe_dump({"records": [no_kind]}))
    (tmp_path / "more.csv").write_text("id,measured\nX,1\n")
    d = load_dataset(tmp_path)
    assert {"A1", "C1"} <= {r.id for r in d.records}
    assert [(p.record, p.field) for p in d.problems] == [("K1", "kind")]
    assert "missing: give one of datacenter, collective" in d.problems[0].reason
    assert [Path(p).name for p in d.skipped] == ["more.csv"]
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--subset", "MYG", "--json"])
    assert r.exit_code == 1 and [Path(p).name for p in json.loads(r.stdout)["skipped_files"]] == ["more.csv"]
    assert "not read" in r.stderr and "more.csv" in r.stderr


def test_a_fit_pinned_at_the_end_of_its_range_is_named_and_not_written(tmp_path):
    """A trial user's records in the wrong unit (×8: per node, not per GPU) fitted a constant at the end
    of its search range, and calibrate wrote it with exit 0. It is named now; nothing is written unless
    --force, and then the file carries the verdict."""
    doc = _nccl_doc("FAST", "busbw eight times NVLink 4's wire", "FAST-1", 2880.0)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "r.yaml").write_text(yaml.safe_dump(doc))
    out = tmp_path / "cal.yaml"
    r = runner.invoke(app, ["calibrate", "--runs", str(runs), "--subset", "FAST", "--out", str(out)])
    text = " ".join((r.stdout + r.stderr).split())
    assert r.exit_code == 1 and "pinned: fabrics.nvlink4.efficiency" in text and "upper end" in text, text
    assert "nothing written" in text and not out.exists()
    r = runner.invoke(
        app, ["calibrate", "--runs", str(runs), "--subset", "FAST", "--out", str(out), "--force"]
    )
    assert r.exit_code == 0 and yaml.safe_load(out.read_text())["pinned"]
    # the file still reads as a calibration (a refused file is exit 2, naming --calibration)
    r = runner.invoke(app, ["validate", "--subset", "NCCL", "--calibration", str(out)])
    assert r.exit_code != 2 and "error: --calibration" not in r.output


def test_a_share_of_the_peak_over_100_percent_is_rejected(tmp_path):
    """A trial user's MFU of 250 % validated with exit 0: a share of the whole over 100 % is a unit slip."""
    doc = {
        "records": [
            {
                "id": "OVER",
                "group": "MPT",
                "kind": "datacenter",
                "certainty": "user",
                "source": "me",
                "metric": "mfu",
                "convention": "model",
                "unit": "%",
                "measured": 250.0,
                "model": "llama3.1-8b",
                "cluster": {"gpu": "h100-sxm", "nodes": 1},
                "layout": {"tp": 1, "gbs": 16},
            }
        ]
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(doc))
    d = load_dataset(tmp_path)
    assert [(p.record, p.field) for p in d.problems] == [("OVER", "record")] or [
        p.record for p in d.problems
    ] == ["OVER"]
    assert "250 % is over 100 %" in d.problems[0].reason


def test_a_group_declared_calibration_but_not_fitted_is_explained(tmp_path):
    """A trial user's groups declared role: calibration showed as check with no word why."""
    doc = _nccl_doc("MINECAL", "mine", "MC-1", 360.0)
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(doc))
    r = runner.invoke(app, ["validate", "--runs", str(tmp_path), "--subset", "MINECAL"])
    text = " ".join(r.output.split())
    assert "declared role: calibration whose rows are predictions here (MINECAL)" in text, r.output
    assert "declared role" not in " ".join(
        runner.invoke(app, ["validate", "--subset", "NCCL"]).output.split()
    )


def test_review_fixes_for_runs_calibration_overlay_and_out(tmp_path):
    """A review of this session's changes: a --runs path that is no folder dropped the bundled records; a
    hand-written clock derate took the packaged fit's provenance (its KOR22 rows became calibration
    rows); --out /dev/zero was read whole; a NaN in a field the model reads no further was let by."""
    from dtsim.errors import ScenarioError

    with pytest.raises(
        ScenarioError, match=r"--runs .* does not exist"
    ):  # refused now (test_runs_dir_must_exist)
        load_dataset(tmp_path / "nope")
    hand = tmp_path / "hand.yaml"
    hand.write_text("generations:\n  ampere:\n    clock_derate: 0.7\n")
    out = json.loads(
        runner.invoke(app, ["validate", "--subset", "KOR22", "--calibration", str(hand), "--json"]).stdout
    )
    assert {r["role"] for r in out["runs"]} == {"check"}
    amp = next(c for c in out["calibration"]["constants"] if c["name"] == "ampere")
    assert amp["value"] == 0.7 and amp["fitted_on"] == [] and amp["rms_log_error"] is None
    r = runner.invoke(app, ["calibrate", "--subset", "NCCL", "--out", "/dev/zero"])
    assert r.exit_code == 2 and "not a regular file" in " ".join(r.output.split())
    runs = tmp_path / "runs"
    runs.mkdir()
    rec = {
        "id": "U-6",
        "group": "INTELLECT1",
        "metric": "mfu",
        "convention": "palm",
        "unit": "% MFU",
        "measured": 37.1,
        "network": {"rtt_ms": 70},
        "scenario": {"mfu": math.nan},
    }
    (runs / "b.yaml").write_text(yaml.safe_dump({"records": [rec]}))
    d = load_dataset(runs)
    assert [(p.record, p.field) for p in d.problems] == [("U-6", "scenario.mfu")]


def _nccl_group(description: str, role: str) -> dict:
    """A group of a user's nccl-tests all-reduce records (bus bandwidth in GB/s, 8 GPUs a node)."""
    return {
        "description": description,
        "role": role,
        "defaults": {
            "kind": "collective",
            "certainty": "user",
            "op": "allreduce",
            "convention": "nccl-busbw",
            "metric": "busbw_gb_s",
            "unit": "GB/s",
            "gpus_per_node": 8,
            "source": "me",
        },
    }


def test_a_step_time_record_is_the_reciprocal_view_of_a_throughput_record(tmp_path):
    """A trial user had step times and had to convert them to tokens/s per GPU by hand: `step_time_s`
    (seconds per optimizer step of the layout's global batch, no FLOP convention) is a metric now, and
    the same run given both ways errs by reciprocal ratios; its MFU (for the ceilings) is step's."""
    from dtsim.validation.predict import measured_model_mfu, predict

    base = {
        "group": "MPT",
        "kind": "datacenter",
        "certainty": "user",
        "source": "me",
        "model": "llama3.1-8b",
        "seq_len": 4096,
        "cluster": {"gpu": "h100-sxm", "nodes": 1},
        "layout": {"tp": 1, "gbs": 16, "mbs": 1},
    }
    tokens_per_gpu = 8_000.0
    step_s = 16 * 4096 / (tokens_per_gpu * 8)
    doc = {
        "records": [
            {
                **base,
                "id": "ST-T",
                "metric": "tokens_per_s_per_gpu",
                "unit": "tokens/s per GPU",
                "measured": tokens_per_gpu,
            },
            {**base, "id": "ST-S", "metric": "step_time_s", "unit": "s", "measured": step_s},
        ]
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(doc))
    d = load_dataset(tmp_path)
    assert not d.problems, d.problems
    t, s = (next(r for r in d.records if r.id == i) for i in ("ST-T", "ST-S"))
    (pt, _), (ps, details) = predict(t), predict(s)
    assert ps == pytest.approx(details["step_time_s"])
    assert (pt / t.measured) * (ps / s.measured) == pytest.approx(1.0, rel=1e-9)
    assert measured_model_mfu(s) == pytest.approx(measured_model_mfu(t), rel=1e-9)


def _nccl_doc(group: str, description: str, record_id: str, measured: float) -> dict:
    """A record file of one calibration group and one 8 GiB all-reduce on NVLink 4 measured at `measured`."""
    record = {
        "id": record_id,
        "group": group,
        "measured": measured,
        "ranks": 8,
        "size_bytes": 8589934592,
        "intra_fabric": "nvlink4",
    }
    return {"groups": {group: _nccl_group(description, "calibration")}, "records": [record]}


def test_a_subset_with_no_name_is_refused_and_calibrates_help_says_its_default():
    """A trial user's case: `calibrate --subset ,` ran the default fit silently (the API refuses an empty
    subset), and calibrate's help said "(default: all)" where it fits the calibration groups only."""
    for command in ("validate", "calibrate"):
        for value in (",", " , ", ""):
            r = runner.invoke(app, [command, "--subset", value, "--json"])
            assert r.exit_code == 2, (command, value, r.output)
            (problem,) = json.loads(r.stdout)["detail"]
            assert problem["field"] == "--subset" and "names no group or record id" in problem["message"]
    text = " ".join(runner.invoke(app, ["calibrate", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "(default: all)" not in text and "the groups whose role is calibration" in text
