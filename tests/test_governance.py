"""`dtsim governance` (issue 8): the original governance model's E1–E14 reproduced (differences named),
caps and the largest nodes under them, collateral damage, monotonicity, and the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dtsim.analysis import evasion
from dtsim.analysis.governance import Cap, analyse, largest_count, systems
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app
from dtsim.schema.scenario import load_scenario

runner = CliRunner()
ASM = Assumptions()
REFERENCE = Path(__file__).resolve().parent / "data" / "miri" / "evasion_calculator_vectors.json"
ROWS = {c.name: c for c in evasion.reproduce()}


def test_packaged_vectors_equal_the_reference():
    ref = json.loads(REFERENCE.read_text())
    ours = evasion.load_vectors()
    assert ours["scenarios"] == ref["scenarios"] and ours["node_presets"] == ref["node_presets"]


def test_all_fourteen_scenarios_are_compared():
    assert sorted(ROWS, key=lambda n: int(n[1:])) == [f"E{i}" for i in range(1, 15)]
    assert all(len(c.fields) >= 5 for c in ROWS.values())


@pytest.mark.parametrize("name", [f"E{i}" for i in range(1, 15)])
def test_every_field_agrees_or_is_a_named_difference(name):
    c = ROWS[name]
    for key in c.fields:
        if key in c.differences:
            assert abs(c.rel(key)) > 1e-6, f"{name}.{key} is listed as different but agrees"
        else:
            assert evasion.agrees(c, key), f"{name}.{key}: dtsim {c.fields[key][0]} vs {c.fields[key][1]}"
    assert set(c.differences) <= set(c.fields)
    assert bool(c.differences) == bool(c.cause)


def test_e4_difference_is_exactly_the_threshold_penalty():
    c = ROWS["E4"]
    ours, theirs = c.fields["eta"]
    assert ours * ASM.threshold_efficiency_penalty == pytest.approx(theirs, rel=1e-12)


def test_e9_e10_difference_is_the_stage_share_of_the_sync():
    """With the payload scaled up S× (compression ÷ S), dtsim's sync equals the original's exactly."""
    vectors = {v["name"]: v for v in evasion.load_vectors()["scenarios"]}
    for name, stages in (("E9", 4), ("E10", 6)):
        f = evasion.scenario_for(vectors[name])
        f["compression"] = 150 / stages
        _, r = evasion.time_limited(f)
        assert r.pp_stages == stages
        assert r.sync_s == pytest.approx(vectors[name]["result"]["t_sync"], rel=1e-12)


def test_e11_difference_is_the_payload_of_total_parameters():
    vectors = {v["name"]: v for v in evasion.load_vectors()["scenarios"]}
    _, r = evasion.time_limited(evasion.scenario_for(vectors["E11"]))
    held = 100e9 + 500e9 / 72  # shared + this node's share of the experts
    assert r.details["payload_bits"] * 600e9 / held == pytest.approx(600e9 * 16 / 150, rel=1e-12)


def test_largest_node_under_caps_by_hand():
    assert largest_count("a100-80gb", Cap(16), ASM) == 50  # 16 × 990 / 312 = 50.8
    assert largest_count("h100-sxm", Cap(16), ASM) == 16
    assert largest_count("a100-80gb", Cap(16, 1280), ASM) == 16  # 1280 GB / 80 GB
    assert largest_count("b200", Cap(2), ASM) == 0  # 2,250 TFLOPS > 2 × 990
    assert largest_count("tpu-v5e", Cap(1), ASM) == 5


def test_collateral_damage_by_hand():
    by_id = {s.id: s for s in systems()}
    dgx_h100 = by_id["dgx-h100"]
    assert dgx_h100.h100_equivalents(ASM) == pytest.approx(8 * 989.4 / 990)
    assert dgx_h100.memory_gb == 640
    assert Cap(8).allows(dgx_h100.h100_equivalents(ASM), 640)
    assert not Cap(4).allows(dgx_h100.h100_equivalents(ASM), 640)
    assert not Cap(16, 512).allows(dgx_h100.h100_equivalents(ASM), 640)
    assert Cap(16, 1024).allows(dgx_h100.h100_equivalents(ASM), 640)


SMALL = dict(targets=(1e24, 1e25), gpus=("a100-80gb", "h100-sxm", "tpu-v5e"), max_nodes=20_000)


def test_looser_cap_never_raises_the_cheapest_cost():
    base = load_scenario(preset="governance")
    caps = (
        [Cap(c) for c in (16, 8, 4, 2, 1)]
        + [Cap(16, m) for m in (2048, 1024, 512, 256)]
        + [Cap(None, 700), Cap(3, 300)]
    )
    res = analyse(base, caps, **SMALL)
    assert res.rows > 0
    for a, b in itertools.permutations(res.caps, 2):
        if b.cap.contains(a.cap):
            for x in res.targets:
                wa, wb = a.cheapest[x], b.cheapest[x]
                if wa is not None:
                    assert wb is not None and wb["cost_usd"] <= wa["cost_usd"], (a.cap, b.cap, x)
    # caps also catch monotonically: a looser cap never catches more systems
    for a, b in itertools.permutations(res.caps, 2):
        if b.cap.contains(a.cap):
            assert {s.id for s in b.caught} <= {s.id for s in a.caught}


def test_a_caps_answer_does_not_depend_on_the_other_caps_analysed():
    base = load_scenario(preset="governance")
    alone = analyse(base, [Cap(8)], **SMALL).caps[0].cheapest
    beside = analyse(base, [Cap(16), Cap(8), Cap(16, 300), Cap(1)], **SMALL).caps[1].cheapest
    for x in SMALL["targets"]:
        assert (alone[x] is None) == (beside[x] is None)
        if alone[x] is not None:
            assert alone[x]["cost_usd"] == beside[x]["cost_usd"]


def test_every_winner_obeys_its_cap():
    base = load_scenario(preset="governance")
    res = analyse(base, [Cap(4), Cap(16, 512)], **SMALL)
    for cr in res.caps:
        for w in cr.cheapest.values():
            if w is not None:
                assert cr.cap.allows(w["h100_equivalents_per_node"], w["memory_gb_per_node"])
                assert w["days"] <= res.days_limit


def test_analysis_errors():
    base = load_scenario(preset="governance")
    with pytest.raises(ScenarioError, match="at least one"):
        analyse(base, [])
    with pytest.raises(ScenarioError, match="positive"):
        Cap(-1)
    with pytest.raises(ScenarioError, match="unknown accelerator"):
        analyse(base, [Cap(16)], gpus=("h100-sxm", "rtx-9999"))
    with pytest.raises(ScenarioError, match="no accelerator fits"):
        analyse(base, [Cap(0.01)], gpus=("h100-sxm",))


def test_cli_governance_json_and_table():
    args = [
        "governance",
        "--compute-cap",
        "16,4",
        "--memory-cap",
        "512",
        "--targets",
        "1e24",
        "--gpu",
        "h100-sxm",
        "--gpu",
        "a100-80gb",
        "--max-nodes",
        "5000",
    ]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [c["cap"]["h100_equivalents"] for c in out["caps"]] == [16, 4, 16]
    assert out["caps"][2]["cap"]["memory_gb"] == 512
    assert out["search"]["rows_evaluated"] > 0
    assert "dgx-h100" in out["caps"][1]["caught"] and "dgx-h100" not in out["caps"][0]["caught"]
    r = runner.invoke(app, args, env={"COLUMNS": "240"})
    assert r.exit_code == 0, r.output
    assert (
        "cheapest way to reach" in r.output
        and "largest node" in r.output
        and "systems each cap catches" in r.output
    )


def test_cli_reproduce():
    r = runner.invoke(app, ["governance", "reproduce", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert len(out) == 14
    assert all(f["agrees"] for f in out[0]["fields"].values())  # E1 agrees everywhere
    r = runner.invoke(app, ["governance", "reproduce"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "E14" in r.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["governance", "--compute-cap", "0"], "positive"),
        (["governance", "--targets", "x"], "not a number"),
        (["governance", "--metric", "speed"], "local or quality"),
        (["governance", "--precisions", "fp12"], "fp16, bf16, fp8 or fp4"),
        (["governance", "--precisions", ""], "give at least one"),
        (["governance", "--targets", "1e24,1e24"], "repeats 1e+24; give each once"),
        (["governance", "--compute-cap", "16,16"], "--compute-cap = '16,16': repeats 16; give each once"),
        (["governance", "--memory-cap", "512,512.0"], "repeats 512; give each once"),
        (
            ["governance", "--set", "gpu=a100-80gb"],
            "--set = 'gpu=a100-80gb': governance's search sets gpu itself",
        ),
        (["governance", "--set", "precision=fp16"], "use --precisions"),
        (["governance", "--gpu", "h100-sxm", "--precisions", "fp4"], "none of h100-sxm has an FP4 datapath"),
        (["governance", "--compute-cap", "none", "--memory-cap", ""], "at least one"),
    ],
)
def test_cli_bad_input(args, needle):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert needle in " ".join(r.output.split()) and "Traceback" not in r.output


def test_target_columns_are_named_apart():
    """1e24 and 1.4e24 were both headed '1e+24 FLOP'."""
    args = ["governance", "--targets", "1e24,1.4e24", "--compute-cap", "16", "--memory-cap", "none"]
    res = runner.invoke(app, [*args, "--gpu", "h100-sxm"], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "1e+24 FLOP" in res.output and "1.4e+24 FLOP" in res.output


def test_fp4_only_where_the_gpu_has_an_fp4_datapath():
    """Hopper has no FP4 tensor cores: no FP4 node of it is searched or derived (it was timed at the FP8
    rate with FP4's memory, a node no one can build); Blackwell's FP4 is timed at its FP8 rate."""
    from dtsim import catalog
    from dtsim.analysis.governance import candidate_nodes
    from dtsim.analysis.space_options import caps_from_options
    from dtsim.assumptions import Assumptions

    gpus = catalog.gpus()
    assert gpus["h100-sxm"].peak_tflops("fp4") is None and gpus["a100-80gb"].peak_tflops("fp4") is None
    assert gpus["b200"].peak_tflops("fp4") == gpus["b200"].fp8_tflops and gpus["b200"].fp4_tflops == 9000
    caps = caps_from_options("16", "none", 16.0)
    nodes = candidate_nodes(caps, Assumptions(), ["h100-sxm", "b200"], ("fp8", "fp4"))
    assert {(n.gpu, n.precision) for n in nodes} == {("h100-sxm", "fp8"), ("b200", "fp8"), ("b200", "fp4")}
    r = runner.invoke(app, ["simulate", "--set", "gpu=h100-sxm", "--set", "precision=fp4"])
    assert r.exit_code == 2 and "no FP4 datapath; use fp16/bf16/fp8" in " ".join(r.output.split())
    # a peak given beside the GPU (the default GH200 node, a Hopper node preset) runs, flagged
    for sets in (["precision=fp4"], ["node=16x-h100-sxm", "precision=fp4"]):
        args = [x for kv in sets for x in ("--set", kv)]
        out = json.loads(runner.invoke(app, ["simulate", *args, "--json"]).output)
        assert "NO_PRECISION_DATAPATH" in [w["code"] for w in out["warnings"]], sets
    out = json.loads(
        runner.invoke(app, ["simulate", "--set", "node=dgx-b200", "--set", "precision=fp4", "--json"]).output
    )
    assert "NO_PRECISION_DATAPATH" not in [w["code"] for w in out["warnings"]]
    # TPU v6e has no FP8 datapath (the MIRI table's 1,836 "FP8" is Google's INT8 rate): refused where
    # the peak is derived, flagged on the MIRI node preset that gives it (a trial user's case: it ran
    # at twice the BF16 rate, unflagged)
    assert gpus["tpu-v6e"].peak_tflops("fp8") is None
    r = runner.invoke(app, ["simulate", "--set", "gpu=tpu-v6e", "--set", "precision=fp8"])
    assert r.exit_code == 2 and "tpu-v6e has no FP8 datapath" in " ".join(r.output.split())
    out = json.loads(runner.invoke(app, ["simulate", "--set", "node=17x-tpu-v6e-fp8", "--json"]).output)
    assert "NO_PRECISION_DATAPATH" in [w["code"] for w in out["warnings"]]
    # node groups: a group whose GPU lacks the precision flags the run
    groups = '[{"count": 4, "node": "16x-h100-sxm", "region": "us-east"}, {"count": 4, "node": "dgx-b200", "region": "eu-west"}]'
    for precision, flagged in (("fp4", True), ("fp8", False)):
        args = ["simulate", "--set", f"precision={precision}", "--set", f"node_groups={groups}", "--json"]
        codes = [w["code"] for w in json.loads(runner.invoke(app, args).output)["warnings"]]
        assert ("NO_PRECISION_DATAPATH" in codes) == flagged, (precision, codes)


def test_the_pages_refuse_what_the_cli_refuses():
    """The governance, target and sweep pages call the same refusals as the CLI and the API."""
    from dtsim.interfaces.web.views import governance as g
    from dtsim.interfaces.web.views import sweep
    from dtsim.interfaces.web.views import target as t

    base = {"preset": "governance", "compute_cap": "16", "memory_cap": "none", "base_compute_cap": 16.0}
    base |= {"targets": "1e24", "metric": "quality", "days": None, "gpus": None, "precisions": "fp16"}
    with pytest.raises(ScenarioError, match="sets num_nodes itself"):
        g.compute({**base, "set": ["num_nodes=5"], "max_nodes": 100})
    with pytest.raises(ScenarioError, match="sets parameters_b itself"):
        t.compute({"preset": "governance", "set": ["parameters_b=7"], "quality_flop": 1e24})
    with pytest.raises(ScenarioError, match="num_nodes is varied"):
        sweep._compute({"set": "num_nodes=3", "vary": "num_nodes=8,16"})


def test_max_nodes_is_bounded_and_a_model_target_names_its_flags():
    """Trial users' cases: governance --max-nodes 1e10 failed naming a grid row (num_nodes[309] =
    10441131.0); target --params-b without --tokens-t said tokens_t = None."""
    r = runner.invoke(app, ["governance", "--gpu", "h100-sxm", "--max-nodes", "10000000000"])
    assert (
        r.exit_code == 2
        and "--max-nodes = 10000000000: must be a whole number of nodes from 1 to 10,000,000"
        in " ".join(r.output.split())
    )
    r = runner.invoke(app, ["target", "--node", "16x-h100-sxm", "--params-b", "70"])
    assert r.exit_code == 2 and "--tokens-t = None" in " ".join(r.output.split())


def test_each_cheapest_run_carries_simulates_warnings():
    """A trial user's case: a cap's cheapest run on MI300X (33 nodes, 164.6B) had no warnings in the
    JSON, where simulate of the same configuration says EXCEEDS_MAX_RUN_LENGTH and STREAMING_MEMORY.
    Each answer now carries simulate's codes, and the text names them."""
    import dtsim
    from dtsim.analysis.governance import scenario_fields
    from dtsim.analysis.uncertainty import answer_warnings
    from dtsim.interfaces import operations

    args = [
        "governance",
        "--gpu",
        "mi300x",
        "--compute-cap",
        "16",
        "--memory-cap",
        "none",
        "--targets",
        "1e25",
    ]
    out = json.loads(runner.invoke(app, [*args, "--json"]).output)
    cell = out["caps"][0]["cheapest"]["1e+25"]
    base = dtsim.load_scenario(preset="governance")
    ans = operations.governance_analysis(
        base, {}, compute_cap="16", memory_cap="none", targets="1e25", gpu=["mi300x"]
    )
    rec = ans.res.caps[0].cheapest[1e25]
    assert cell["warnings"] == [
        w["code"] for w in answer_warnings(base, scenario_fields(ans.res, rec), rec["tokens_t"])
    ]
    assert cell["warnings"]  # this run has some to say
    text = " ".join(runner.invoke(app, args, env={"COLUMNS": "200"}).output.split())
    assert all(f"{code} (simulate's warning of that run)" in text for code in cell["warnings"])


def test_a_target_no_cap_reaches_as_a_run_is_refused():
    """Targets so small that every configuration reaches them in less than one outer step are named, not
    answered with a run that never synchronizes (which failed on its tokens_t until 2026-11-26); a
    target reached by real runs keeps its answer, each training at least one outer step."""
    base = load_scenario(preset="governance")
    with pytest.raises(ScenarioError) as e:
        analyse(base, [Cap(16)], **{**SMALL, "targets": (1e12, 1e24)})
    assert [p[0] for p in e.value.problems] == ["--targets"] and "not a training run" in str(e.value)
    res = analyse(base, [Cap(16)], **{**SMALL, "targets": (1e20,)})
    w = res.caps[0].cheapest[1e20]
    assert w is not None and w["tokens_t"] >= 1e-6
    args = ["--targets", "1e12", "--compute-cap", "16", "--memory-cap", "none", "--gpu", "h100-sxm"]
    r = runner.invoke(app, ["governance", *args])
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "--targets" in text and "not a training run" in text, r.output


def test_caps_are_per_node_sized_and_large_ones_stay_quick():
    """A trial user's case: --compute-cap 1e9 made the search visit every GPU count up to a million (it
    ran past two minutes on the CLI and the API, 2.8 GB in the server), and a cap of 1,000 on H100s took
    22 s. A cap is at most 1,024 H100-equivalents and 65,536 GB per node, and above 128 GPUs the node
    sizes are 19 % apart, with each cap's largest node exact."""
    from fastapi.testclient import TestClient

    from dtsim.analysis.governance import EVERY_COUNT, candidate_nodes, node_sizes
    from dtsim.interfaces.api.app import create_app

    for args, needle in (
        (
            ["--compute-cap", "1e9"],
            "--compute-cap = '1e9': must be a positive number of H100-equivalents per node, at most 1,024",
        ),
        (
            ["--memory-cap", "1e6"],
            "--memory-cap = '1e6': must be a positive number of GB per node, at most 65,536",
        ),
        (["--base-compute-cap", "2000"], "at most 1,024"),
        # a trial's case: with no memory caps the value went unchecked (inf and 0 ran)
        (["--memory-cap", "none", "--base-compute-cap", "inf"], "--base-compute-cap = inf"),
        (["--memory-cap", "none", "--base-compute-cap", "0"], "--base-compute-cap = 0.0"),
    ):
        r = runner.invoke(app, ["governance", *args])
        assert r.exit_code == 2 and needle in " ".join(r.output.split()), r.output
    from dtsim.analysis.governance import MAX_COMPUTE_CAP, MAX_MEMORY_CAP_GB

    text = " ".join(runner.invoke(app, ["governance", "--help"], env={"COLUMNS": "200"}).output.split())
    assert (
        f"each ≤ {MAX_COMPUTE_CAP:,.0f}" in text and f"each ≤ {MAX_MEMORY_CAP_GB:,.0f}" in text
    )  # help = code
    c = TestClient(create_app(ui=False))
    r = c.post(
        "/api/governance",
        json={"compute_cap": [1e9], "memory_cap": None, "targets": [1e25], "gpu": ["h100-sxm"]},
    )
    assert r.status_code == 422 and "at most 1,024" in r.text, r.text
    assert c.post("/api/governance", json={"base_compute_cap": 2000}).status_code == 422
    # every count up to 128; then 2^(1/4) apart; each cap's largest exactly
    sizes = node_sizes({126, 2000, 8110})
    assert sizes[:EVERY_COUNT] == list(range(1, EVERY_COUNT + 1))
    assert {126, 2000, 8110} <= set(sizes) and sizes[-1] == 8110
    steps = [b / a for a, b in zip(sizes[EVERY_COUNT:], sizes[EVERY_COUNT + 1 :], strict=False)]
    assert max(steps) <= 2**0.25 * 1.01 and len(sizes) < EVERY_COUNT + 60
    assert node_sizes({16}) == list(range(1, 17)) and node_sizes({0}) == []
    # the default caps keep every count (V100 under 16 H100-eq: 126 GPUs, under 128)
    nodes = candidate_nodes([Cap(c) for c in (16, 8, 4, 2, 1)], ASM, gpus=("v100",), precisions=("fp16",))
    assert [n.count for n in nodes] == list(range(1, 127))
    nodes = candidate_nodes([Cap(1024)], ASM, gpus=("h100-sxm",), precisions=("fp16",))
    assert len(nodes) < 150 and nodes[-1].count == 1024


def test_a_base_files_searched_fields_are_refused_as_set_ones_are(tmp_path):
    """A trial user's case: `--set compression=16` is refused by target ("target's search sets
    compression itself"), but the same field in the base file was dropped without a word (the winner had
    compression 500, num_nodes 5), and governance ran a file's num_nodes: 100 as if it were not there."""
    path = tmp_path / "s.yaml"
    path.write_text("compression: 16\ninner_steps: 64\nnum_nodes: 7\n", "utf-8")
    r = runner.invoke(app, ["target", "--quality-flop", "1e24", "--node", "16x-h100-sxm", str(path)])
    said = " ".join(r.output.split())
    assert r.exit_code == 2, r.output
    for field, use in (
        ("compression", "--compression"),
        ("inner_steps", "--inner-steps"),
        ("num_nodes", "--max-nodes"),
    ):
        assert (
            f"file.{field} = " in said and f"target's search sets {field} itself" in said and use in said
        ), said
    r = runner.invoke(app, ["governance", "--file", str(path), "--gpu", "h100-sxm", "--targets", "1e24"])
    said = " ".join(r.output.split())
    assert r.exit_code == 2 and "file.num_nodes = 7: governance's search sets num_nodes itself" in said, said
    # fields the search keeps from the base file still run
    kept = tmp_path / "k.yaml"
    kept.write_text("latency_ms: 50\nbandwidth_mbps: 200\n", "utf-8")
    args = ["--gpu", "h100-sxm", "--targets", "1e24", "--compute-cap", "16", "--memory-cap", "none", "--json"]
    assert runner.invoke(app, ["governance", "--file", str(kept), *args]).exit_code == 0
    r = runner.invoke(
        app, ["target", "--quality-flop", "1e24", "--node", "16x-h100-sxm", str(kept), "--json"]
    )
    assert r.exit_code == 0, r.output
