"""`dtsim step`'s memory per GPU by part (StepResult.memory_breakdown_gb, drawn as the /step view's memory
bar): the parts are those of the stage that needs the most, they sum to memory_per_gpu_gb, and each moves
with the layout switch that governs it."""

from __future__ import annotations

import pytest

from dtsim.models.datacenter.step import step
from dtsim.models.datacenter.workload import Cluster, Layout, Workload

PARTS = {
    "weights",
    "gradients",
    "optimizer",
    "zero3_unit_buffers",
    "activations",
    "logits",
    "framework_overhead",
}


def run(model: str = "llama3.1-8b", nodes: int = 2, **layout):
    layout = {"gbs": 512, **layout}
    return step(Workload(model=model, cluster=Cluster(nodes=nodes), layout=Layout(**layout)))


@pytest.mark.parametrize(
    "layout",
    [
        {},
        {"tp": 2, "pp": 4},
        {"pp": 4, "embedding_stages": "balanced"},
        {"zero": 3},
        {"zero": 3, "shard_group": 4},
        {"pp": 2, "schedule": "dualpipe"},
        {"recompute": "full", "pp": 2},
        {"tp": 2, "pp": 2, "vpp": 2, "schedule": "interleaved"},
    ],
)
def test_parts_sum_to_the_memory_per_gpu(layout):
    r = run(**layout)
    parts = r.memory_breakdown_gb
    assert set(parts) == PARTS
    assert all(v >= 0 for v in parts.values())
    assert sum(parts.values()) == pytest.approx(r.memory_per_gpu_gb, rel=1e-12)


def test_parts_follow_their_switches():
    base = run()
    z2, z3 = run(zero=2), run(zero=3)
    dp = base.layout["dp"]
    # ZeRO-1 shards the optimizer state over dp, ZeRO-2 the gradients too, ZeRO-3 the weights as well
    assert z2.memory_breakdown_gb["gradients"] == pytest.approx(base.memory_breakdown_gb["gradients"] / dp)
    assert z3.memory_breakdown_gb["weights"] < base.memory_breakdown_gb["weights"] / (dp / 2)
    assert base.memory_breakdown_gb["zero3_unit_buffers"] == 0 < z3.memory_breakdown_gb["zero3_unit_buffers"]
    # full recomputation keeps less activation memory than selective
    full = run(recompute="full")
    assert full.memory_breakdown_gb["activations"] < base.memory_breakdown_gb["activations"]
    # a pipeline's first stage holds no logits; with pp = 1 the only stage does
    assert base.memory_breakdown_gb["logits"] > 0


def test_a_last_stage_that_peaks_reports_its_own_parts():
    # a large vocabulary on a deep pipeline with one micro-batch in flight: the last stage, holding the
    # output layer and the fp32 logits, needs more than the first
    r = run(model="gemma2-9b", pp=8, gbs=2)
    parts = r.memory_breakdown_gb
    assert parts["logits"] > 0  # only the last stage holds them with pp > 1 (first-last embedding)
    assert sum(parts.values()) == pytest.approx(r.memory_per_gpu_gb, rel=1e-12)


def test_the_cli_table_shows_the_parts():
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    out = CliRunner().invoke(
        app, ["step", "-m", "llama3.1-8b", "--nodes", "2", "--gbs", "512", "--zero", "3"]
    )
    assert out.exit_code == 0, out.output
    parts = run(zero=3).memory_breakdown_gb
    text = " ".join(out.output.replace("│", " ").split())  # the table's cells, wrapped lines joined
    assert "Memory by part (GB)" in text
    assert f"zero3 unit buffers {parts['zero3_unit_buffers']:,.1f}" in text
    assert f"activations {parts['activations']:,.1f}" in text


def test_parts_sum_to_the_memory_per_gpu_for_every_candidate_of_a_plan():
    """Over a plan's candidates (pipeline stages where the last one, with the logits, is the peak and where
    a middle one is; every schedule and ZeRO stage): the parts are one stage's and sum to its memory."""
    import numpy as np

    from dtsim.assumptions import Assumptions
    from dtsim.models.datacenter.plan import PlanOptions, enumerate_layouts
    from dtsim.models.datacenter.step import evaluate, resolve_hardware
    from dtsim.physics.transformer import at_sequence, get_architecture

    a, cluster = get_architecture("llama3.1-70b"), Cluster(nodes=16, gpus_per_node=8, gpu="h100-sxm")
    cols, _ = enumerate_layouts(a, cluster, PlanOptions(gbs=512))
    asm = Assumptions({})
    out = evaluate(
        at_sequence(a, a.seq_len), resolve_hardware(cluster, "bf16", True, asm), cols, asm, a.seq_len, 16
    )
    parts = sum(np.asarray(out[f"memory_{k}_gb"], dtype=float) for k in PARTS)
    total = np.asarray(out["memory_per_gpu_gb"], dtype=float)
    assert len(total) > 10_000 and np.all(np.abs(parts - total) <= 1e-12 * total)
    last_peak = (np.asarray(cols["pp"]) > 1) & (np.asarray(out["memory_logits_gb"]) > 0)
    assert 0 < last_peak.sum() < len(total)  # the last stage (or DualPipe's rank 0) peaks in some, not all
