"""Software profiles (catalog/software.yaml, models/datacenter/software.py): each sets only Layout
fields, each field with the citation its record group gives; `step`/`plan --software ID` and the API's
`software` take a profile's fields as the layout's defaults under every field given explicitly; an
unknown id is refused naming the field, the value and the ids; record groups take their layout
defaults from a profile (`defaults: {software: ID}`)."""

from __future__ import annotations

import json
from importlib import resources

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dtsim import catalog
from dtsim.interfaces.api import app as api
from dtsim.interfaces.cli.main import app
from dtsim.models.datacenter.software import (
    RULE_FIELDS,
    SOFTWARE_FIELDS,
    apply_software,
    plan_settings,
    resolved,
)
from dtsim.models.datacenter.workload import Layout
from dtsim.validation.records import load_dataset

runner = CliRunner()
STEP = ["step", "-m", "mpt-7b", "--gpu", "h100-sxm", "--nodes", "2", "--gbs", "96", "--mbs", "2"]
PLAN = ["plan", "-m", "mpt-7b", "--gpu", "h100-sxm", "--nodes", "2", "--gbs", "96", "--top", "5"]
PLAN_BODY = {"model": "mpt-7b", "gpu": "h100-sxm", "nodes": 2, "gbs": 96}
BODY = {**PLAN_BODY, "mbs": 2}


@pytest.fixture(scope="module")
def client():
    return TestClient(api.create_app(ui=False))


def cli(*args: str, code: int = 0):
    res = runner.invoke(app, list(args))
    assert res.exit_code == code, res.output
    return res


def cli_json(*args: str) -> dict:
    return json.loads(cli(*args, "--json").stdout)


def bundled_docs() -> list[dict]:
    root = resources.files("dtsim.catalog.measured_runs")
    return [yaml.safe_load(p.read_text("utf-8")) for p in root.iterdir() if p.name.endswith(".yaml")]


def record_groups() -> dict[str, dict]:
    """Every group of the bundled measured-run files, as written."""
    return {k: v for doc in bundled_docs() for k, v in (doc.get("groups") or {}).items()}


# ---- the catalog ----------------------------------------------------------------------------------


def test_the_profiles_cover_the_stacks_of_the_records():
    assert {"megatron-lm-2021", "megatron-lm-2022", "megatron-core-2024", "llm-foundry", "maxtext"} <= set(
        catalog.software()
    )
    assert {"nemo-24.07", "megatron-bridge"} <= set(catalog.software())


@pytest.mark.parametrize("sid", list(catalog.software()))
def test_every_field_is_a_layout_field_with_a_source(sid):
    prof = catalog.software()[sid]
    assert prof.name and prof.description and prof.records
    assert prof.layout, "a profile sets at least one field"
    assert set(prof.layout) <= set(SOFTWARE_FIELDS) <= set(Layout.model_fields)
    assert set(prof.sources) == set(prof.layout)
    for field, value in prof.layout.items():
        assert isinstance(prof.sources[field], str) and len(prof.sources[field]) > 20, field
        if value == "with_tp":
            assert field in RULE_FIELDS, f"{field}: with_tp is a rule of {RULE_FIELDS} only"
    for tp in (1, 2):  # the resolved fields make a valid Layout at either side of the rule
        lay = Layout(gbs=8, tp=tp, **resolved(sid, tp))
        for field, value in prof.layout.items():
            assert getattr(lay, field) == (tp > 1 if value == "with_tp" else value)


@pytest.mark.parametrize("sid", list(catalog.software()))
def test_every_source_is_copied_from_its_record_groups(sid):
    """No new claims: each citation's text stands verbatim in the description or the assumptions of
    the record groups the profile names."""
    groups = record_groups()
    prof = catalog.software()[sid]
    text = " ".join(
        " ".join([groups[g].get("description", ""), *groups[g].get("assumptions", [])]) for g in prof.records
    )
    for field, source in prof.sources.items():
        cited = source.split("): ", 1)[1]
        assert cited in text, f"{sid}.{field}: {cited[:80]!r} is not in {prof.records}"


def test_every_record_group_that_names_a_profile_validates():
    groups = record_groups()
    named = {
        g: d["defaults"]["software"] for g, d in groups.items() if (d.get("defaults") or {}).get("software")
    }
    assert {"MEG21", "KOR22", "MCORE24", "MPT", "MPT-FP8", "MAXTEXT", "NEMO24", "MBRIDGE"} <= set(named)
    raw = {r["id"]: r for doc in bundled_docs() for r in doc.get("records") or []}
    data = load_dataset()
    assert data.problems == []
    for group, sid in named.items():
        assert group in catalog.software()[sid].records, f"{sid} does not list {group} among its records"
        recs = [r for r in data.records if r.group == group]
        assert recs, group
        for rec in recs:  # the profile's value wherever neither the group nor the record gives one
            assert rec.software == sid
            explicit = {*groups[group]["defaults"].get("layout", {}), *raw[rec.id].get("layout", {})}
            taken = {k: v for k, v in resolved(sid, rec.layout.get("tp", 1)).items() if k not in explicit}
            assert {k: rec.layout[k] for k in taken} == taken, rec.id


def test_a_record_layout_key_wins_over_its_profile_and_an_unknown_profile_is_a_problem(tmp_path):
    run = {
        "group": "G",
        "kind": "datacenter",
        "source": "test",
        "certainty": "user",
        "measured": 100.0,
        "unit": "tokens/s per GPU",
        "metric": "tokens_per_s_per_gpu",
        "model": "mpt-7b",
        "cluster": {"gpu": "h100-sxm", "nodes": 1},
    }
    records = [
        {**run, "id": "R1", "layout": {"gbs": 64, "zero": 2}},
        {**run, "id": "R2", "layout": {"gbs": 64}, "software": "pytorch-9000"},
    ]
    groups = {"G": {"defaults": {"software": "llm-foundry"}}}
    (tmp_path / "runs.yaml").write_text(yaml.safe_dump({"groups": groups, "records": records}))
    data = load_dataset(tmp_path, bundled=False)
    (r1,) = data.records
    assert r1.layout["zero"] == 2 and r1.layout["attention_kernel"] == "triton" and r1.layout["fp32_params"]
    (problem,) = data.problems
    assert (
        problem.field == "software" and "pytorch-9000" in problem.reason and "llm-foundry" in problem.reason
    )


# ---- the rule and the precedence ------------------------------------------------------------------


def test_with_tp_follows_the_layouts_tensor_parallelism():
    one = apply_software("megatron-bridge", {"tp": 1, "gbs": 8}, ())
    two = apply_software("megatron-bridge", {"tp": "2", "gbs": 8}, ())  # a --layouts CSV cell
    assert (one["sequence_parallel"], one["overlap_tp_comm"]) == (False, False)
    assert (two["sequence_parallel"], two["overlap_tp_comm"]) == (True, True)
    kept = apply_software("megatron-bridge", {"tp": 2, "sequence_parallel": False}, {"sequence_parallel"})
    assert kept["sequence_parallel"] is False and kept["overlap_tp_comm"] is True


def test_plan_settings_fix_the_options_narrow_zero_and_search_recompute():
    got = plan_settings("nemo-24.07", ())
    assert got["zero_choices"] == (1,) and got["sequence_parallel"] is True
    assert got["fp32_grad_accumulation"] is False and got["attention_kernel"] == "flash2"
    assert "recompute" not in got and "recompute_choices" not in got
    assert "flash_attention" not in plan_settings("nemo-24.07", {"flash_attention"})


# ---- step and plan --------------------------------------------------------------------------------


def test_llm_foundry_sets_zero3_fp32_params_and_triton_and_changes_the_step():
    plain = cli_json(*STEP)
    foundry = cli_json(*STEP, "--software", "llm-foundry")
    assert foundry["software"] == "llm-foundry" and "software" not in plain
    lay = foundry["layout"]
    assert (lay["zero"], lay["fp32_params"], lay["attention_kernel"]) == (3, True, "triton")
    assert (plain["layout"]["zero"], plain["layout"]["attention_kernel"]) == (1, "flash2")
    # ZeRO-3 with FP32-only parameters holds less per GPU; Triton attention and the gathers cost time
    assert foundry["memory_per_gpu_gb"] < plain["memory_per_gpu_gb"]
    assert foundry["step_time_s"] != plain["step_time_s"]
    text = cli(*STEP, "--software", "llm-foundry").stdout
    assert "Software" in text and "llm-foundry" in text


def test_an_explicit_flag_wins_over_the_profile():
    got = cli_json(*STEP, "--software", "llm-foundry", "--zero", "2", "--no-fp32-params")
    assert got["layout"]["zero"] == 2 and got["layout"]["fp32_params"] is False
    assert got["layout"]["attention_kernel"] == "triton"  # the profile's, not given
    # a flag given at its default value still wins
    assert cli_json(*STEP, "--software", "llm-foundry", "--zero", "1")["layout"]["zero"] == 1
    old = cli_json(*STEP, "--software", "megatron-lm-2021", "--flash-attention")
    assert old["layout"]["flash_attention"] is True and old["layout"]["recompute"] == "full"
    assert cli_json(*STEP, "--software", "megatron-lm-2021")["layout"]["flash_attention"] is False
    # asking for a FlashAttention kernel asks for FlashAttention: the profile must not turn it off
    kernel = cli_json(*STEP, "--software", "megatron-lm-2021", "--attention-kernel", "flash2")
    assert kernel["layout"]["flash_attention"] is True and kernel["layout"]["attention_kernel"] == "flash2"


def test_every_profile_settable_field_has_its_flag():
    """A field a profile may set without a flag mapping would never count as given: the profile would
    always override it."""
    from dtsim.interfaces.cli.datacenter import SOFTWARE_PARAMS

    assert set(SOFTWARE_PARAMS) == set(catalog.SOFTWARE_FIELDS)


def test_unknown_software_is_refused_with_the_ids():
    for command in (STEP, PLAN):
        res = cli(*command, "--software", "deepspeed-0.1", code=2)
        assert "--software" in res.output and "deepspeed-0.1" in res.output
        assert all(sid in res.output.replace("\n", " ") for sid in ("llm-foundry", "megatron-lm-2021"))
        assert "Traceback" not in res.output


def test_software_list_names_every_profile():
    text = cli("step", "--software", "list").stdout
    assert all(sid in text for sid in catalog.software())
    listed = cli_json("plan", "--software", "list")["software"]
    assert set(listed) == set(catalog.software())
    assert listed["llm-foundry"]["sources"]["zero"].startswith("llm-foundry benchmarking README")


def test_a_layouts_file_column_names_a_profile_per_row(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("tp,zero,software\n1,,llm-foundry\n2,1,\n2,,megatron-bridge\n")
    rows = cli_json(*STEP, "--layouts", str(path))["layouts"]
    assert [r.get("software") for r in rows] == ["llm-foundry", None, "megatron-bridge"]
    assert rows[0]["layout"]["zero"] == 3 and rows[1]["layout"]["attention_kernel"] == "flash2"
    assert rows[2]["layout"]["sequence_parallel"] and rows[2]["layout"]["overlap_tp_comm"]
    path.write_text("tp,software\n1,bogus\n")
    res = cli(*STEP, "--layouts", str(path), code=2)
    assert "layouts[0].software" in res.output and "bogus" in res.output


def test_plan_searches_the_profiles_zero_stage_with_its_kernel():
    plain = cli_json(*PLAN)
    got = cli_json(*PLAN, "--software", "llm-foundry")
    assert got["software"] == "llm-foundry" and got["layouts"]
    assert {r["layout"]["zero"] for r in got["layouts"]} == {3}
    assert all(
        r["layout"]["attention_kernel"] == "triton" and r["layout"]["fp32_params"] for r in got["layouts"]
    )
    assert got["searched"] < plain["searched"]
    assert "software: llm-foundry" in cli(*PLAN, "--software", "llm-foundry").stdout


# ---- the API --------------------------------------------------------------------------------------


def test_api_step_and_plan_accept_software(client):
    resp = client.post("/api/step", json={**BODY, "software": "llm-foundry"})
    assert resp.status_code == 200, resp.text
    got = resp.json()
    assert got["software"] == "llm-foundry" and got["layout"]["zero"] == 3
    assert got == cli_json(*STEP, "--software", "llm-foundry")
    given = client.post("/api/step", json={**BODY, "software": "llm-foundry", "zero": 1}).json()
    assert given["layout"]["zero"] == 1 and given["layout"]["attention_kernel"] == "triton"
    batch = client.post(
        "/api/step", json={**BODY, "software": "megatron-bridge", "layouts": [{"tp": 1}, {"tp": 2}]}
    ).json()["layouts"]
    assert [r["layout"]["overlap_tp_comm"] for r in batch] == [False, True]
    assert all(r["software"] == "megatron-bridge" for r in batch)
    plan = client.post("/api/plan", json={**PLAN_BODY, "software": "llm-foundry", "top": 3})
    assert plan.status_code == 200, plan.text
    assert plan.json()["software"] == "llm-foundry"
    assert {r["layout"]["zero"] for r in plan.json()["layouts"]} == {3}


@pytest.mark.parametrize("path", ["/api/step", "/api/plan"])
def test_api_refuses_an_unknown_software_naming_the_ids(client, path):
    resp = client.post(path, json={**PLAN_BODY, "software": "deepspeed-0.1"})
    assert resp.status_code == 422
    (problem,) = resp.json()["detail"]
    assert problem["field"] == "software" and "llm-foundry" in problem["message"]


def test_a_profile_does_not_warn_about_a_setting_it_made_itself_at_tp_1():
    """--software megatron-core-2024 at tp 1 warned "overlap_tp_comm needs tp > 1 … ignored", a setting
    the user never made: the profile's TP overlap is a with_tp rule, as its sequence parallelism is."""
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    args = [
        "step",
        "-m",
        "llama3.1-8b",
        "--gpu",
        "h100-sxm",
        "--gbs",
        "16",
        "--software",
        "megatron-core-2024",
    ]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0 and "needs tp > 1" not in r.output, r.output
    r = CliRunner().invoke(app, [*args, "--tp", "1", "--overlap-tp-comm"])
    assert "needs tp > 1" in " ".join(r.output.split())  # the user's own setting is still named


# ---- a profile on an accelerator its records never ran on ------------------------------------------------


def test_each_profiles_accelerators_are_the_kinds_its_records_ran_on():
    """`accelerators` (software.yaml) is no new claim: the kinds of the profile's records' runs."""
    from dtsim.validation.predict import record_gpu

    runs = load_dataset().records
    for sid, prof in catalog.software().items():
        chips = {record_gpu(r) for r in runs if r.group in prof.records and r.kind == "datacenter"}
        kinds = {"tpu" if catalog.gpus()[g].micro.systolic else "gpu" for g in chips}
        assert kinds and kinds == set(prof.accelerators), (sid, chips)


def test_a_gpu_stack_on_a_tpu_is_said_in_step_plan_and_the_api(client):
    """A trial's case: --software megatron-core-2024 on tpu-v5p took the CUDA stack's settings without
    a word. They are still the defaults, and every answer says where they were measured."""
    tpu = ["-m", "llama3.1-8b", "--gpu", "tpu-v5p", "--nodes", "4", "--gpus-per-node", "4", "--gbs", "64"]
    step_json = cli_json("step", *tpu, "--software", "megatron-core-2024")
    assert "runs on GPUs (its records MCORE24), and tpu-v5p is a TPU" in step_json["software_note"]
    assert "measured on TPUs: maxtext" in step_json["software_note"]
    assert step_json["layout"]["zero"] == 1  # the profile's setting, still taken
    text = " ".join(cli("step", *tpu, "--software", "megatron-core-2024").output.split())
    assert "warning: software megatron-core-2024's settings come from runs on GPUs" in text
    plan_json = cli_json("plan", *tpu, "--software", "nemo-24.07", "--top", "2")
    assert "tpu-v5p is a TPU" in plan_json["software_note"]
    # a review's case: a target-size answer names no gpu of its own, and had no note
    sized = cli_json(
        "plan",
        *[a for a in tpu if a not in ("-m", "llama3.1-8b")],
        "--target-params-b",
        "8",
        "--software",
        "megatron-core-2024",
    )
    assert "tpu-v5p is a TPU" in sized["software_note"]
    assert "software_note" not in cli_json("step", *tpu, "--software", "maxtext")
    assert "software_note" not in cli_json(*STEP, "--software", "llm-foundry")
    body = {"model": "llama3.1-8b", "gpu": "tpu-v5p", "nodes": 4, "gpus_per_node": 4, "gbs": 64}
    res = client.post("/api/step", json={**body, "software": "megatron-core-2024"})
    assert res.status_code == 200 and "tpu-v5p is a TPU" in res.json()["software_note"]
    res = client.post("/api/plan", json={**PLAN_BODY, "software": "maxtext", "top": 2})
    assert res.status_code == 200 and "h100-sxm is a GPU" in res.json()["software_note"]
