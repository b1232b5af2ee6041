"""TPUs in the datacenter model: systolic MXU padding, the ICI torus (axes, wraparounds, interleaved
groups, hop latency), slices joined by DCN, and the inputs that do not describe a TPU slice."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces.cli.main import app
from dtsim.models.datacenter.plausibility import messages
from dtsim.models.datacenter.step import resolve_hardware, step
from dtsim.models.datacenter.workload import Cluster, Layout, Workload
from dtsim.models.limits.hardware import from_gpu
from dtsim.models.network import cluster_network
from dtsim.physics.gemm import gemm_time

runner = CliRunner()


def _net(torus, link="ici-v5p"):
    links = catalog.fabrics()
    return cluster_network(4, links[link], links["dcn-tpu"], 1, torus=torus, n_gpus=math.prod(torus))


def test_every_tpu_has_systolic_constants_matching_its_datasheet_peak():
    for gid in ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"):
        gpu = catalog.gpus()[gid]
        assert gpu.micro.systolic and gpu.micro.peak_flop_s(16) == gpu.fp16_tflops * 1e12
        assert catalog.fabrics()[gpu.micro.nvlink].torus_dims in (2, 3)
    assert catalog.gpus()["tpu-v6e"].micro.mxu_dim == 256 and catalog.gpus()["tpu-v5p"].micro.mxu_dim == 128


def test_a_weight_narrower_than_the_mxu_is_padded_to_its_edge():
    v5p, v6e = (catalog.gpus()[g].micro for g in ("tpu-v5p", "tpu-v6e"))
    # 2,049 rows cost what 2,176 cost on a 128-wide MXU, and what 2,304 cost on v6e's 256-wide one
    assert gemm_time(2049, 8192, 8192, v5p) == pytest.approx(gemm_time(2176, 8192, 8192, v5p))
    assert gemm_time(2049, 8192, 8192, v6e) == pytest.approx(gemm_time(2304, 8192, 8192, v6e))
    assert gemm_time(2048, 8192, 8192, v6e) < 0.9 * gemm_time(2049, 8192, 8192, v6e)
    # large GEMMs run at the peak (× the sustained fraction); a thin one is bound by HBM
    big = 2 * 8192**3 / gemm_time(8192, 8192, 8192, v5p)
    assert big == pytest.approx(v5p.peak_flop_s(16) * v5p.clock_derate, rel=1e-9)
    thin = gemm_time(8192, 8192, 8, v5p)
    assert thin == pytest.approx((8192 * 8192 + 2 * 8192 * 8) * 2 / v5p.hbm_bytes_per_s, rel=1e-9)


def test_v5e_times_the_jax_guides_largest_xla_matmul_as_measured():
    # JAX documentation, Pallas TPU guide "Matrix Multiplication" (docs/pallas/tpu/matmul.ipynb), the
    # "XLA matmul" cell run on a TPU v5e: 8192x8192 @ 8192x8192 in BF16 took 6.047 ms (92.3 % of 197
    # TFLOP/s); the catalog's sustained fraction is that share, so the model times the product within 1 %
    v5e = catalog.gpus()["tpu-v5e"].micro
    assert gemm_time(8192, 8192, 8192, v5e) == pytest.approx(6.047e-3, rel=0.01)
    # the other TPUs have no published rate and keep v5e's share; none runs at its datasheet peak
    for gid in ("tpu-v4", "tpu-v5p", "tpu-v6e"):
        assert catalog.gpus()[gid].micro.clock_derate == v5e.clock_derate < 1.0


def test_a_collective_over_more_torus_axes_has_more_links():
    net = _net((4, 4, 4))
    w = net.nvlink_bw  # one link, one way
    one_axis, two_axes, three_axes = (float(net.ring(n)[0]) for n in (4, 16, 64))
    # full axes of 4 have wraparounds (v5p: a multiple of 4): 2 links per axis
    assert (one_axis, two_axes, three_axes) == pytest.approx((2 * w, 4 * w, 6 * w))
    # the outer axes for a group 4 apart: two axes, no interleaving
    assert float(net.ring(16, 4)[0]) == pytest.approx(4 * w)


def test_an_axis_without_its_wraparound_has_half_the_bandwidth_and_more_hops():
    v5e = catalog.fabrics()["ici-v5e"]
    full, part = _net((16, 16), "ici-v5e"), _net((4, 4), "ici-v5e")  # v5e wraps only an axis of 16
    assert full.torus_wrap == (True, True) and part.torus_wrap == (False, False)
    bw_full, alpha_full = (float(x) for x in full.ring(16))
    bw_part, alpha_part = (float(x) for x in part.ring(4))
    assert bw_full == pytest.approx(2 * bw_part) and bw_part == pytest.approx(45e9 * v5e.efficiency)
    # hops per phase: 8 on the 16-ring with its wraparound, 3 along a line of 4
    assert alpha_full * 15 == pytest.approx(8 * v5e.latency_s)
    assert alpha_part * 3 == pytest.approx(3 * v5e.latency_s)
    # a part of an axis that has a wraparound is still a line
    assert float(full.ring(4)[0]) == pytest.approx(bw_part)


def test_groups_interleaved_along_an_axis_share_its_links():
    net = _net((16, 4, 4))
    # 8 ranks 2 apart run round the whole first axis (its wraparound) beside the group at offset 1
    assert float(net.ring(8, 2)[0]) == pytest.approx(2 * net.nvlink_bw / 2)
    assert float(net.ring(8, 1)[0]) == pytest.approx(net.nvlink_bw)  # half the axis: a line, alone


def test_the_default_slice_is_the_whole_job_in_as_few_slices_as_the_pod_allows():
    assert Cluster(gpu="tpu-v5p", nodes=16).torus_shape() == (4, 4, 4)
    assert Cluster(gpu="tpu-v5e", nodes=32).torus_shape() == (16, 16)
    two = Cluster(gpu="tpu-v5e", nodes=64)
    assert two.torus_shape() == (16, 16) and two.n_gpus == 512
    assert Cluster(gpu="tpu-v5p", nodes=1).gpus_per_node == 4  # a host's chips
    assert Cluster(gpu="tpu-v5e", nodes=1).gpus_per_node == 8
    # v5p's pod (16x20x28) holds 8,960 chips, but doubled axes only 16x16x16 of them: 8,192 chips are two
    # such slices (a trial user's case: "not a power of two that the pod holds", for 8,192)
    assert Cluster(gpu="tpu-v5p", nodes=2048).torus_shape() == (16, 16, 16)
    with pytest.raises(ValueError, match="no default slice for 12 chips"):
        Cluster(gpu="tpu-v5p", nodes=3)


def test_tp_on_an_axis_with_its_wraparound_communicates_faster():
    def tp_comm(torus):
        w = Workload(
            model="llama2-70b",
            cluster=Cluster(gpu="tpu-v5p", nodes=16, torus=torus),
            layout=Layout(tp=4, gbs=256, zero=3, recompute="full"),
        )
        return step(w).breakdown_s["tp_comm"]

    # TP 4 is a whole wrapped axis of 4x4x4, a line inside the 16-long axis of 16x2x2 (no whole cubes)
    assert tp_comm("4x4x4") < 0.75 * tp_comm("16x2x2")


def test_slices_joined_by_dcn_are_slower_than_one_slice():
    def run(torus):
        w = Workload(
            model="llama2-70b",
            cluster=Cluster(gpu="tpu-v5p", nodes=16, torus=torus),
            layout=Layout(zero=3, recompute="full", gbs=256),
        )
        return step(w)

    # one 4x4x4 slice, or sixteen slices of one host (2x2x1) whose ZeRO-3 traffic crosses the DCN
    one, many = run("4x4x4"), run("2x2x1")
    assert (
        resolve_hardware(Cluster(gpu="tpu-v5p", nodes=16, torus="2x2x1"), "bf16").network.nvlink_domain == 4
    )
    assert many.breakdown_s["dp_comm_exposed"] > 100 * one.breakdown_s["dp_comm_exposed"]
    assert many.step_time_s > 2 * one.step_time_s


@pytest.mark.parametrize(
    ("fields", "field", "needle"),
    [
        ({"gpu": "h100-sxm", "torus": "2x4"}, "torus", "needs a TPU"),
        ({"gpu": "tpu-v5p", "nodes": 16, "torus": "4xa"}, "torus", "axis lengths joined by x"),
        ({"gpu": "tpu-v5p", "nodes": 16, "torus": "4x16"}, "torus", "3 axes"),
        ({"gpu": "tpu-v5e", "nodes": 2, "torus": "32x1"}, "torus", "within the pod's 16x16"),
        ({"gpu": "tpu-v5p", "nodes": 16, "torus": "4x4x5"}, "torus", "divide the job's 64 chips"),
        ({"gpu": "tpu-v5e", "nodes": 3}, "torus", "give the slice shape, whose axes multiply"),
        (
            {"gpu": "tpu-v5p", "nodes": 2, "nvlink_domain": 8},
            "nvlink_domain",
            "give the slice shape as --torus",
        ),
    ],
)
def test_a_cluster_that_is_no_tpu_slice_is_refused_naming_the_field(fields, field, needle):
    with pytest.raises((ScenarioError, ValueError)) as exc:
        Cluster(**fields)
    assert field in str(exc.value) and needle in str(exc.value)


def test_the_cli_times_a_tpu_slice_and_names_a_bad_one():
    out = runner.invoke(
        app, ["step", "--model", "llama2-70b", "--gpu", "tpu-v5p", "--nodes", "16", "--zero", "3"]
    )
    assert out.exit_code == 0, out.output
    assert "slice 4x4x4" in out.output and "ICI" in out.output
    bad = runner.invoke(
        app, ["step", "--model", "llama2-70b", "--gpu", "tpu-v5p", "--nodes", "16", "--torus", "2x2"]
    )
    assert bad.exit_code == 2 and "Traceback" not in bad.output and "torus" in bad.output
    plan = runner.invoke(
        app,
        ["plan", "--model", "llama2-70b", "--gpu", "tpu-v5p", "--nodes", "16", "--torus", "4x4x4", "--json"],
    )
    assert plan.exit_code == 0, plan.output


def test_the_gpu_limits_model_refuses_a_tpu_and_says_why():
    with pytest.raises(ScenarioError) as exc:
        from_gpu("tpu-v5p")
    assert "a TPU" in str(exc.value)


def test_the_torus_model_reproduces_how_to_scale_your_models_all_gather_estimates():
    """Austin et al. 2025, 'Sharded Matrices': an all-gather over one wrapped axis of a v4 4x4x4 takes
    V / W_bidi and over two axes half that; over a v5e 4x4 axis (no wraparound) (n−1)/n·V / W_oneway.
    Here with the link efficiency set to 1 the model's ring gives these bandwidth terms exactly."""
    from dataclasses import replace

    v4 = replace(_net((4, 4, 4), "ici-v4"), nvlink_bw=4.5e10)
    v = 2 * 1024 * 4096  # bf16[1024, 4096]
    for n, axes in ((4, 1), (16, 2)):
        bw = float(v4.ring(n)[0])
        t = (n - 1) / n * v / bw  # the ring all-gather's bandwidth term (nccl_ring_time, steps factor 1)
        assert t == pytest.approx((n - 1) / n * v / (axes * 9e10))
    v5e = replace(_net((4, 4), "ici-v5e"), nvlink_bw=4.5e10)
    assert (3 / 4) * 34e6 / float(v5e.ring(4)[0]) == pytest.approx(3 * 8.4e6 / 4.5e10, rel=0.02)
    assert np.isfinite(float(v5e.ring(1)[0]))


def test_maxtext_counts_every_parameter_and_half_the_attention_scores():
    from dtsim.physics.transformer import Architecture, count_params, maxtext_flops_per_token

    a = Architecture(hidden=1024, layers=4, heads=8, head_dim=256, ffn=4096, vocab=32768, seq_len=2048)
    attention = 6.0 * 4 * 8 * 256 * 2048  # 12·l·a·d_head·s, halved "due to causality"
    assert maxtext_flops_per_token(a) == 6.0 * count_params(a).total + attention


def test_the_maxtext_tpu_rows_are_a_check_group_that_the_model_predicts():
    from dtsim.validation import load_dataset, validate

    report = validate(load_dataset(), ["MAXTEXT", "MAXTEXT-V5P-CFG"])
    rows = [r for r in report.runs if r.role == "check"]
    assert len(rows) == 42 and {r.group for r in rows} == {"MAXTEXT", "MAXTEXT-V5P-CFG"}
    assert all(r.predicted is not None and r.predicted > 0 for r in rows)
    # the calibration holds no TPU constant: nothing is fitted on these rows
    assert not any(c.name.startswith("tpu") for c in report.constants)


def test_v5p_wraparounds_come_with_whole_cubes_and_v5e_with_an_axis_of_16():
    assert _net((2, 2, 4)).torus_wrap == (False, False, False)
    assert _net((4, 4, 8)).torus_wrap == (True, True, True)
    assert _net((8, 16), "ici-v5e").torus_wrap == (False, True)


def test_fp8_on_a_tpu_without_an_fp8_datapath_is_refused_naming_the_field():
    w = Workload(
        model="llama2-70b", precision="fp8", cluster=Cluster(gpu="tpu-v5p", nodes=16), layout=Layout(gbs=64)
    )
    with pytest.raises(ScenarioError) as exc:
        step(w)
    assert "precision" in str(exc.value) and "allowed: bf16, fp16" in str(exc.value)
    out = runner.invoke(
        app, ["step", "--model", "llama2-70b", "--gpu", "tpu-v6e", "--nodes", "8", "--precision", "fp8"]
    )
    assert out.exit_code == 2 and "Traceback" not in out.output and "precision" in out.output


def test_an_hfu_above_the_peak_is_flagged():
    w = Workload(
        model="megatron-1.7b",
        seq_len=65536,
        cluster=Cluster(gpu="tpu-v5p", nodes=16),
        layout=Layout(gbs=64, recompute="selective", zero=3),
    )
    r = step(w)
    assert r.hfu > 1.0 and any("above the peak" in x for x in messages(r.warnings))


def test_fp8_on_a_gpu_without_fp8_is_refused_too():
    """The datapath check is the chip's, not the TPU's: A100 has no FP8 (its 8-bit rate is INT8)."""
    lay = Layout(tp=8, pp=8, gbs=64)
    w = Workload(model="gpt3-175b", precision="fp8", cluster=Cluster(gpu="a100-80gb", nodes=8), layout=lay)
    with pytest.raises(ScenarioError, match="a100-80gb has no fp8 datapath; allowed: bf16, fp16"):
        step(w)
    assert step(w.model_copy(update={"precision": "bf16"})).step_time_s > 0
    assert (
        step(w.model_copy(update={"precision": "fp8", "cluster": Cluster(gpu="h100-sxm", nodes=8)})).mfu > 0
    )


def test_collective_on_an_ici_fabric_runs_on_the_slice_torus():
    """`dtsim collective --fabric ici-*` runs the ring on the torus links the ranks span (Austin et al.
    2025): 64 v5p chips filling a 4x4x4 slice (wraparounds on every axis) have 3 axes × 2 directions of
    links, 4 chips on one axis of it 2, where the fabric's single-link ring would give 1; v5e without a
    wraparound on an axis of 4 has one link an axis. Algorithms that are not the torus ring, a --torus
    without an ICI fabric and ranks beyond the slice are refused, naming the field."""
    from dtsim.models.network import collective

    link = catalog.fabrics()["ici-v5p"].bus_bytes_per_s
    full = collective("allreduce", 64, 1e9, "ring", "ici-v5p")
    assert full.bus_bandwidth_gb_s * 1e9 == pytest.approx(6 * link)
    assert collective("allreduce", 64, 1e9, "ring", "ici-v5p", torus="4x4x4") == full
    axis = collective("allreduce", 4, 1e9, "ring", "ici-v5p", torus="4x4x4")
    assert axis.bus_bandwidth_gb_s * 1e9 == pytest.approx(2 * link)
    # each wrapped axis of 4: 2 hops a phase, 3 axes, spread over the ring's 63 steps
    assert full.latency_s == pytest.approx(catalog.fabrics()["ici-v5p"].latency_s * 6 / 63)
    assert full.time_s == pytest.approx(2 * 63 / 64 * 1e9 / (6 * link) + 2 * 63 * full.latency_s)
    assert full.torus == "4x4x4" and axis.torus == "4x4x4"
    # ranks that do not fill the slice still run on its links (here 48: 3 of the 4 planes)
    part = collective("allreduce", 48, 1e9, "ring", "ici-v5p", torus="4x4x4")
    assert 2 * link < part.bus_bandwidth_gb_s * 1e9 <= 6 * link
    # a point-to-point transfer is one link, whatever the ranks
    p2p = [collective("p2p", n, 1e9, "ring", "ici-v5p") for n in (2, 64)]
    assert p2p[0].time_s == p2p[1].time_s and p2p[0].bus_bandwidth_gb_s * 1e9 == pytest.approx(link)
    v5e = collective("all-gather", 16, 1e9, "ring", "ici-v5e")  # 4x4: no wraparound
    assert v5e.bus_bandwidth_gb_s * 1e9 == pytest.approx(2 * catalog.fabrics()["ici-v5e"].bus_bytes_per_s)
    for kwargs, field in (
        ({"fabric": "ici-v5p", "algorithm": "tree"}, "algorithm"),
        ({"fabric": "nvlink4", "torus": "4x4"}, "torus"),
        ({"fabric": None, "torus": "4x4x4"}, "torus"),
        ({"fabric": "ici-v5p", "torus": "2x2x2"}, "ranks"),
        ({"fabric": "ici-v5p", "torus": "4x4"}, "torus"),
        ({"fabric": "ici-v5p", "torus": "0x4x4"}, "torus"),
        ({"fabric": "ici-v5p", "ranks": 10**9}, "ranks"),
        ({"fabric": "bogus", "torus": "4x4x4"}, "fabric"),
        ({"fabric": "ici-v5p", "bandwidth_bytes_s": 1e9}, "bandwidth_bytes_s/latency_s"),
    ):
        args = {"op": "allreduce", "ranks": 64, "size_bytes": 1e9, "algorithm": "ring"} | kwargs
        with pytest.raises(ScenarioError) as err:
            collective(**args)
        assert err.value.problems[0][0] == field
    r = CliRunner().invoke(
        app, ["collective", "--fabric", "ici-v5p", "--ranks", "64", "--torus", "4x4x4", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["bus_bandwidth_gb_s"] == pytest.approx(full.bus_bandwidth_gb_s)


def test_an_interval_whose_fast_end_passes_the_peak_says_so():
    # a trial user's case: a 7B on v5p at 91.7 % MFU, its 80 % interval up to 103.8 % without a word
    args = ["step", "--model", "mistral-7b", "--gpu", "tpu-v5p", "--nodes", "16", "--gbs", "512"]
    r = runner.invoke(app, [*args, "--recompute", "none", "--tokens", "2e12", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["mfu"] <= 1.0 < d["mfu_p90"]
    assert any("fast end (MFU" in w and "above 100 % of the peak" in w for w in messages(d["warnings"]))
    # a layout whose interval stays under the peak has no such warning
    r = runner.invoke(app, [*args, "--recompute", "full", "--zero", "3", "--tp", "4", "--json"])
    d = json.loads(r.stdout)
    assert d["mfu_p90"] <= 1.0 and not any("fast end (MFU" in w for w in messages(d["warnings"]))


def test_an_attention_kernel_named_on_a_tpu_is_said_ignored():
    # a trial user's case: --attention-kernel triton on v5p was taken without a word
    args = [
        "step",
        "--model",
        "llama2-70b",
        "--gpu",
        "tpu-v5p",
        "--nodes",
        "16",
        "--gbs",
        "256",
        "--zero",
        "3",
    ]
    d = json.loads(runner.invoke(app, [*args, "--attention-kernel", "triton", "--json"]).stdout)
    assert any(w.startswith("attention_kernel triton: no measured speed") for w in messages(d["warnings"]))
    plain = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert plain["step_time_s"] == d["step_time_s"]  # and it changes nothing
    assert not any(w.startswith("attention_kernel") for w in messages(plain["warnings"]))
