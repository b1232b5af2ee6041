"""The frontier-limits model (seed 002; issue 6): closed forms (Table 2), the reference
implementation's curves (shared/reference/epoch/reference_runs.json), Tables 3–4, properties, CLI."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dtsim.interfaces.cli.main import app
from dtsim.models.limits import closed_form as cf
from dtsim.models.limits import (
    curve,
    get_hardware,
    linear_scaling_stop,
    optimal_layout,
    shape_for,
    shape_for_compute,
)
from dtsim.models.limits.curve import LimitsPoint, LinearScalingStop, limits_point, parallelism_fractions
from dtsim.models.limits.hardware import custom
from dtsim.models.limits.model import bubble_fraction
from dtsim.models.limits.scaling import critical_batch_sequences, d_model_grid, layer_count, take_closest
from tests.oracle.mapping import REFERENCE

runner = CliRunner()
REF = json.loads((REFERENCE / "epoch" / "reference_runs.json").read_text())
SCENARIO = {
    "V100 SXM": "v100-sxm",
    "A100 SXM": "a100-sxm",
    "H100 SXM": "h100-sxm",
    "H100 SXM Low Latency": "h100-sxm-low-latency",
    "H100 SXM Global NVLink": "h100-sxm-global-nvlink",
    "H100 SXM Global NVLink and LL": "h100-sxm-global-nvlink-ll",
    "H100 SXM Infinite Network and LL": "h100-sxm-infinite-network-ll",
}
BATCH_LAW = {"No scaling": "fixed", "Default scaling": "default", "DeepSeek scaling": "deepseek"}
SETTINGS = settings(
    max_examples=int(os.environ.get("DTSIM_HYPOTHESIS_EXAMPLES", "40")),
    deadline=None,
    derandomize=os.environ.get("DTSIM_HYPOTHESIS_RANDOM") is None,
    suppress_health_check=[HealthCheck.too_slow],
)

# The one point (of the 148 the issue names) where dtsim and the reference disagree by more than the
# tolerance: on the reference's cluster dtsim's run takes 3.004 months against the reference's 2.965
# (its GEMM model is ~1.4% slower for this per-GPU shape), so the 3-month search doubles the cluster.
KNIFE_EDGE = {("H100 SXM Low Latency", 53248)}


# --- closed forms (item 1) ---------------------------------------------------------------------------------

TABLE2 = {  # name: (d′, b′, T_critical FLOP) as printed in seed 002 Table 2
    "DGX-1 (V100)": (26.7e3, 278, 1e27),
    "DGX A100": (16.7e3, 401, 3e28),
    "DGX H100": (26.4e3, 591, 2e28),
    "DGX H100 in SuperPOD": (5.9e3, 16, 1e34),
}


def test_table2():
    rows = {r.name: r for r in cf.table2()}
    assert set(rows) == set(TABLE2)
    for name, (d, b, t) in TABLE2.items():
        r = rows[name]
        assert r.d_prime == pytest.approx(d, rel=0.05), name
        assert r.b_prime == pytest.approx(b, rel=0.05), name
        assert 0.5 <= r.t_critical_flop / t <= 2.0, (name, r.t_critical_flop)
    assert rows["DGX H100 in SuperPOD"].weights_in_sram and not rows["DGX H100"].weights_in_sram


def test_latency_limits():
    # b = 4e6, L = 100, 3 months, t_L = 9 µs: T_limit ≈ 2e31 FLOP, N_p ≈ 4e14, cliff ≈ 3e30 (eqs. 15, 17, 18)
    assert cf.t_limit() == pytest.approx(2e31, rel=0.25)
    assert cf.params_at_limit() == pytest.approx(4e14, rel=0.15)
    assert cf.t_critical_latency() == pytest.approx(3e30, rel=0.25)
    assert cf.t_limit() / cf.t_critical_latency() == pytest.approx(9.0)  # "exactly nine times"
    # appendix 8.3 reduces to eqs. 13 and 18 when α_b = α_L
    assert cf.generalized("limit", 0.2, 0.2) == pytest.approx(cf.t_limit(), rel=1e-9)
    h100 = next(r for r in cf.table2() if r.name == "DGX H100")
    assert cf.generalized(
        "critical", 0.1, 0.1, mac_per_s=h100.mac_per_s, d=h100.d_prime, b=h100.b_prime
    ) == pytest.approx(h100.t_critical_flop, rel=1e-9)
    # a faster batch than layer scaling raises the limit by orders of magnitude
    assert cf.generalized("limit", 0.3271, 0.1271) > 1e4 * cf.t_limit()


# --- scaling relations ----------------------------------------------------------------------------------------


def test_scaling_relations_match_the_reference_shapes():
    for group in ("base_dense", "base_sparse", "batch_size_dense_h100"):
        for c in REF["groups"][group]:
            law = BATCH_LAW.get(c["setting"], "default")
            for p in c["points"]:
                s = shape_for(p["d_model"], sparse="sparse" in group, batch_law=law)
                assert (s.layers, s.sparsity, s.batch_tokens) == (
                    p["layers"],
                    p["sparsity"],
                    p["batch_tokens"],
                ), (group, p["d_model"])
                assert s.params == pytest.approx(p["params"])
                assert s.training_flop == pytest.approx(p["training_flop"])


def test_rounding_and_laws_by_hand():
    assert take_closest(197.8) == 192 and take_closest(210) == 224
    assert take_closest(208) == 192  # a tie between 192 and 224 goes to the smaller
    assert layer_count(12288, 49152) == 192
    # default law: 4 Mi tokens at 3e23 FLOP, E = 1 → 2048 sequences of 2048
    assert critical_batch_sequences(3e23, 2048, 1) == 2048
    assert critical_batch_sequences(1e30, 2048, 1, "fixed") == 2048
    assert d_model_grid()[:4] == [12288, 14336, 16384, 18432] and d_model_grid()[-1] == 1572864


def test_bubble_formula():
    # eq. 22 by hand: N_PP = 8, m = 4, v = 2 → z = 4, f_b = (7 + 4)/(7 + 4 + 8)
    assert bubble_fraction(8, 4, 2, False) == pytest.approx(11 / 19)
    assert bubble_fraction(8, 16, 1, False) == pytest.approx(7 / 23)
    assert bubble_fraction(8, 15, 1, True) == 0.0


# --- against the reference implementation (item 2) ----------------------------------------------------------------


def _curves(group):
    out = []
    for c in REF["groups"][group]:
        hw = get_hardware(SCENARIO[c["gpu"]])
        pts = curve(hw, sparse="sparse" in group, batch_law=BATCH_LAW.get(c["setting"], "default"))
        out.append((c, {p.d_model: p for p in pts}))
    return out


@pytest.fixture(scope="module", params=["base_dense", "base_sparse", "grand_dense"])
def group_curves(request):
    return request.param, _curves(request.param)


def test_every_reference_point(group_curves):
    group, curves = group_curves
    checked = 0
    for c, ours in curves:
        for p in c["points"]:
            mine = ours.get(p["d_model"])
            assert mine is not None, (group, c["setting"], p["d_model"], "dtsim finds no cluster")
            ratio = mine.n_gpus / p["n_gpus"]
            du = mine.utilization - p["utilization"]
            if (c["setting"], p["d_model"]) in KNIFE_EDGE:
                assert ratio == 2  # the documented exception: one doubling more
                continue
            assert abs(du) <= 0.03, (group, c["setting"], p["d_model"], mine.utilization, p["utilization"])
            assert 0.5 <= ratio <= 2, (group, c["setting"], p["d_model"], mine.n_gpus, p["n_gpus"])
            checked += 1
        # the curves end at the same width (the latency wall)
        assert max(ours) == c["points"][-1]["d_model"], (group, c["setting"])
    assert checked >= {"base_dense": 93, "base_sparse": 75, "grand_dense": 190}[group]


def test_knife_edge_is_what_the_docs_say():
    c = next(c for c in REF["groups"]["grand_dense"] if c["setting"] == "H100 SXM Low Latency")
    p = next(p for p in c["points"] if p["d_model"] == 53248)
    hw = get_hardware("h100-sxm-low-latency")
    best = optimal_layout(shape_for(53248), hw, p["n_gpus"])
    assert best.layout["dp"] == p["dp"] and best.layout["pp"] == p["pp"]  # the same layout …
    assert 3.0 < best.months < 3.0 * 1.005  # … just over the limit


TABLE3_4 = {  # (group, setting): the paper's "linear scaling stops" compute (Tables 3 and 4)
    ("base_dense", "V100 SXM"): 3e27,
    ("base_dense", "A100 SXM"): 3e28,
    ("base_dense", "H100 SXM"): 2e28,
    ("base_sparse", "V100 SXM"): 2e27,
    ("base_sparse", "A100 SXM"): 2e29,
    ("base_sparse", "H100 SXM"): 7e28,
    ("grand_dense", "H100 SXM Low Latency"): 1e29,
    ("grand_dense", "H100 SXM Global NVLink"): 4e29,
    ("grand_dense", "H100 SXM Global NVLink and LL"): 5e31,
    ("grand_dense", "H100 SXM Infinite Network and LL"): 9e31,
}


def test_linear_scaling_stops_tables_3_and_4(group_curves):
    group, curves = group_curves
    for c, ours in curves:
        paper = TABLE3_4.get((group, c["setting"]))
        if paper is None:
            continue
        hw = get_hardware(SCENARIO[c["gpu"]])
        stop = linear_scaling_stop([ours[d] for d in sorted(ours)], hw)
        off = abs(math.log10(stop.first_point_flop / paper))
        if (c["setting"], 53248) in KNIFE_EDGE:
            # the knife-edge point falls below the threshold here; the next point is the paper's value
            nxt = [
                ours[d]
                for d in sorted(ours)
                if d > 53248 and ours[d].utilization >= stop.threshold_utilization
            ]
            assert nxt and abs(math.log10(nxt[0].training_flop / paper)) <= 0.5
            continue
        assert off <= 0.5, (group, c["setting"], stop, paper)


# --- properties (item 4) --------------------------------------------------------------------------------------


@st.composite
def cases(draw):
    d = draw(st.sampled_from([12288, 16384, 24576, 32768]))
    sparse = draw(st.booleans())
    shape = shape_for(d, sparse=sparse)
    n = shape.sparsity * 2 ** draw(st.integers(8, 16))
    hw = get_hardware(draw(st.sampled_from(["v100-sxm", "a100-sxm", "h100-sxm", "h100-sxm-superpod"])))
    return shape, hw, n


@SETTINGS
@given(cases(), st.floats(1.0, 50.0), st.integers(0, 2))
def test_more_bandwidth_or_less_latency_never_lowers_the_best_utilization(case, factor, which):
    shape, hw, n = case
    base = optimal_layout(shape, hw, n)
    if base is None:
        return
    if which == 0:
        better = custom(hw, bandwidth=[b * factor for b in hw.bandwidth])
    elif which == 1:
        better = custom(
            hw, latency=[t / factor for t in hw.latency], matmul_latency_s=hw.matmul_latency_s / factor
        )
    else:
        level = len(hw.bandwidth) - 1
        bws = list(hw.bandwidth)
        bws[level] *= factor
        better = custom(hw, bandwidth=bws)
    after = optimal_layout(shape, better, n)
    assert after is not None and after.utilization >= base.utilization * (1 - 1e-12)


@SETTINGS
@given(cases())
def test_the_chosen_layout_is_never_slower_than_any_evaluated_one(case):
    shape, hw, n = case
    best = optimal_layout(shape, hw, n)
    full = optimal_layout(shape, hw, n, prune=False)
    if best is None:
        assert full is None
        return
    assert best.step_s <= float(np.min(full.extra["all_step_s"])) * (1 + 1e-12)
    assert best.step_s == pytest.approx(full.step_s, rel=1e-12)  # pruning loses nothing


@SETTINGS
@given(cases(), st.floats(0.5, 2.0))
def test_a_step_time_to_beat_changes_nothing_when_it_is_beaten(case, factor):
    """The cluster search starts the branch and bound at the time limit's step time: the answer is the
    unbounded search's whenever its step beats that time, and nothing beats it otherwise."""
    shape, hw, n = case
    free = optimal_layout(shape, hw, n)
    if free is None:
        return
    within = free.step_s * factor
    bounded = optimal_layout(shape, hw, n, within_s=within)
    if free.step_s < within:
        assert bounded == free
    else:
        assert bounded is None or bounded.step_s >= within * (1 - 1e-12)


def test_the_kernel_latency_floor_bounds_every_cluster_and_ends_the_curve():
    """A step is at least 6·L kernel latencies whatever the cluster (search.cluster_size): no layout on
    any cluster beats it, and a run whose steps cannot fit the limit at that floor has no cluster, so
    the curve ends there at once."""
    from dtsim.models.limits.search import SECONDS_PER_MONTH, cluster_size

    hw = get_hardware("h100-sxm")
    last = curve(hw)[-1].d_model

    def floor_months(shape):
        return shape.steps * 6 * shape.layers * hw.matmul_latency_s / SECONDS_PER_MONTH

    # the first width past the curve's end whose floor alone is over the 3-month limit
    walled = next(shape_for(d) for d in d_model_grid() if d > last and floor_months(shape_for(d)) >= 3.0)
    assert cluster_size(walled, hw, months=3.0) is None
    assert cluster_size(walled, hw, months=floor_months(walled) * 1.5) is not None
    for shape in (shape_for(last), walled):
        floor_s = 6 * shape.layers * hw.matmul_latency_s
        for i in (20, 30, 40):
            best = optimal_layout(shape, hw, 2**i)
            assert best is None or best.step_s >= floor_s


def test_kept_layout_searches_give_what_fresh_searches_give(monkeypatch):
    """cluster_size keeps its layout searches (they do not depend on the time limit): a run of limits
    that re-uses them answers exactly as searches from an empty store, the store stays bounded, and an
    answer handed out is a copy (changing it changes no later answer)."""
    import importlib

    from dtsim.models.limits.search import cluster_size

    search_module = importlib.import_module(
        "dtsim.models.limits.search"
    )  # the package's `search` is a function

    hw = get_hardware("v100-sxm")
    shapes = [shape_for(d) for d in d_model_grid()[:12:3]]
    limits = (6.0, 4.0, 0.5, 12.0, 4.0, 6.0)

    def fresh(shape, months):
        search_module._SEARCHED.clear()
        return cluster_size(shape, hw, months)

    want = {(s.d_model, m): fresh(s, m) for s in shapes for m in limits}
    search_module._SEARCHED.clear()
    for m in limits:
        for s in shapes:
            got = cluster_size(s, hw, m)
            assert got == want[(s.d_model, m)]
            if got is not None:
                got.memory["check_used"] = "changed"
                got.layout["dp"] = -1
    again = cluster_size(shapes[0], hw, 6.0)
    assert again == want[(shapes[0].d_model, 6.0)]

    monkeypatch.setattr(search_module, "SEARCHES_KEPT", 5)
    for m in (1.0, 2.0, 3.0, 5.0, 7.0, 9.0):
        cluster_size(shapes[-1], get_hardware("a100-sxm"), m)
    assert len(search_module._SEARCHED) <= 5


def test_a_kept_search_is_used_only_where_it_says_the_same():
    """A kept layout search that found nothing faster than its starting step time answers only for
    shorter step times; one whose answer beat it answers for any; anything else searches again."""
    import importlib

    search_module = importlib.import_module("dtsim.models.limits.search")
    best = optimal_layout(shape_for(12288), get_hardware("h100-sxm"), 2048)
    calls = []

    def search(answer):
        return lambda: calls.append(answer) or answer

    search_module._SEARCHED.clear()
    key = ("hw", "shape", 1, "per-gpu", ("1f1b",))
    t = best.step_s
    assert search_module._searched(key, t / 2, search(None)) is None  # nothing beats t/2
    assert search_module._searched(key, t / 4, search("again")) is None  # nor t/4: kept
    assert search_module._searched(key, t * 2, search(best)) == best  # 2t may be beaten: searched again
    assert calls == [None, best]
    assert search_module._searched(key, t / 10, search("again")) == best  # the optimum: kept
    assert search_module._searched(key, t * 10, search("again")) == best
    assert calls == [None, best]
    # a search that found only layouts slower than its starting time: not the optimum, kept for less
    slow = ("hw", "shape", 2, "per-gpu", ("1f1b",))
    assert search_module._searched(slow, t / 2, search(best)) == best
    assert search_module._searched(slow, t / 3, search("again")) == best
    assert search_module._searched(slow, t * 2, search("searched")) == "searched"
    assert calls == [None, best, best, "searched"]


# --- memory and CLI -------------------------------------------------------------------------------------------


def test_memory_checks_are_reported():
    best = optimal_layout(shape_for(30720), get_hardware("h100-sxm"), 262144)
    m = best.memory
    assert m["check_used"] == "per-gpu" and m["per_gpu_states_ok"] and m["aggregate_check_ok"]
    assert m["activations_per_gpu_gb"] > 0 and "per_gpu_with_activations_ok" in m
    strict = optimal_layout(shape_for(30720), get_hardware("h100-sxm"), 262144, memory="per-gpu-activations")
    assert strict is None or strict.memory["per_gpu_with_activations_ok"]


def test_cli_curve_json_and_csv(tmp_path):
    r = runner.invoke(
        app,
        ["limits", "curve", "--gpu", "h100-sxm-global-nvlink", "--json", "--csv", str(tmp_path / "c.csv")],
    )
    assert r.exit_code == 0, r.output
    pts = json.loads(r.stdout)
    assert len(pts) == 31
    for key in (
        "d_model",
        "training_flop",
        "utilization",
        "n_gpus",
        "months",
        "dp",
        "tp_model",
        "tp_ff",
        "pp",
        "ep",
        "microbatches",
    ):
        assert key in pts[0]
    assert (tmp_path / "c.csv").read_text().startswith("hardware,d_model")


def test_nothing_varied_hint_names_only_options_the_command_has():
    out = " ".join(runner.invoke(app, ["limits", "closed-form", "--uncertainty", "16"]).output.split())
    assert "Nothing varied" in out and "--fixed-assumptions" not in out


def test_cli_curve_marks_the_points_whose_activations_do_not_fit():
    """limits search said so; the curve showed such points with no flag."""
    pts = json.loads(runner.invoke(app, ["limits", "curve", "--gpu", "h100-sxm", "--json"]).output)
    over = [p["d_model"] for p in pts if not p["memory"]["per_gpu_with_activations_ok"]]
    assert over
    out = runner.invoke(app, ["limits", "curve", "--gpu", "h100-sxm"], env={"COLUMNS": "200"}).output
    assert all(f" {d}* " in out for d in over)
    assert f"with its activations it does not fit ({len(over)} of {len(pts)} points" in " ".join(out.split())
    fits = runner.invoke(
        app, ["limits", "curve", "--memory", "per-gpu-activations"], env={"COLUMNS": "200"}
    ).output
    assert "*" not in fits and "does not fit" not in fits


def test_cli_curve_plots(tmp_path):
    png, svg = tmp_path / "u.png", tmp_path / "f.svg"
    r = runner.invoke(
        app,
        [
            "limits",
            "curve",
            "--gpu",
            "h100-sxm-global-nvlink",
            "--gpu",
            "h100-sxm-infinite-network-ll",
            "--plot",
            str(png),
            "--fractions-plot",
            str(svg),
        ],
    )
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:4] == b"\x89PNG" and b"<svg" in svg.read_bytes()
    assert "Linear scaling stops" in r.stdout


def test_cli_closed_form_and_search():
    d = json.loads(runner.invoke(app, ["limits", "closed-form", "--json"]).stdout)
    assert len(d["table2"]) == 4 and d["t_limit_flop"] == pytest.approx(cf.t_limit())
    r = runner.invoke(app, ["limits", "search", "--compute", "1e27", "--months", "3", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["found"] and s["training_flop"] >= 1e27 and s["months"] < 3
    r = runner.invoke(app, ["limits", "search", "--compute", "1e27"])
    assert "GPUs" in r.stdout and "Layout" in r.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["limits", "curve", "--gpu", "tpu-v9"], "gpu"),
        (["limits", "curve", "--months", "0"], "months"),
        (["limits", "curve", "--scaling", "cubic"], "scaling"),
        (["limits", "curve", "--memory", "none"], "memory"),
        (["limits", "curve", "--plot", "x.txt"], "--plot"),
        (
            ["limits", "curve", "--level-bandwidth", "1e11"],
            "network has 2 levels (8 GPUs, then the whole cluster)",
        ),
        # a subnormal bandwidth overflowed the cost terms to inf, then NaN: a traceback (API: a 500)
        (["limits", "curve", "--level-bandwidth", "6.7e16,2.2e-309"], "level_bandwidth = 2.2e-309"),
        (["limits", "curve", "--level-bandwidth", "6.7e16,inf"], "bandwidth ≥ 1 byte/s and ≤ 1e+18"),
        (["limits", "curve", "--level-latency-us", "1,inf"], "level_latency_us = inf"),
        (["limits", "curve", "--csv", "/nonexistent/x.csv"], "--csv"),
        (["limits", "curve", "--csv", "/tmp"], "is a folder"),
        (["limits", "curve", "--fractions-plot", "x.txt"], "--fractions-plot"),
        (["limits", "search", "--compute", "1e50"], "compute"),
        (["limits", "closed-form", "--latency-us", "-1"], "latency-us"),
        (["limits", "closed-form", "--alpha-b", "0.3"], "--alpha-b"),
    ],
)
def test_cli_bad_input(args, needle):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert needle in " ".join(r.output.split()) and "Traceback" not in r.output


# --- typed results (issue 12 item 5) --------------------------------------------------------------------------

# the flat JSON of `dtsim limits curve --json`, in order (dense: one factor per network level and degree)
JSON_KEYS = (  # noqa: SIM905 (the wire format, pinned as one string)
    "d_model d_ff params layers sparsity batch_tokens training_flop months utilization n_gpus dp tp_model tp_ff pp "
    "pp_interleaving ep microbatches schedule bubble_fraction dp_per_level tp_model_per_level tp_ff_per_level "
    "pp_per_level ep_per_level parallelism_fraction step_s gemm_months tp_comm_months dp_comm_months "
    "pp_comm_months latency_months gemm_shape_per_gpu memory layouts_searched gpu_hours capital_cost_usd energy_kwh"
).split()


def test_curve_returns_typed_points_whose_dicts_are_the_cli_json():
    import dataclasses

    import dtsim

    hw = dtsim.limits.get_hardware("h100-sxm")
    pts = dtsim.limits.curve(hw)
    assert pts and all(isinstance(p, LimitsPoint) for p in pts)
    with pytest.raises(dataclasses.FrozenInstanceError):
        pts[0].n_gpus = 1
    r = runner.invoke(app, ["limits", "curve", "--gpu", "h100-sxm", "--json"])
    assert r.exit_code == 0, r.output
    assert r.stdout == json.dumps([p.as_dict() for p in pts], indent=2) + "\n"
    assert list(json.loads(r.stdout)[0]) == JSON_KEYS
    p = pts[len(pts) // 2]
    d = p.as_dict()
    assert (d["n_gpus"], d["utilization"], d["dp_per_level"]) == (
        p.n_gpus,
        p.utilization,
        p.levels["dp_per_level"],
    )
    assert d["gemm_shape_per_gpu"] == list(p.gemm_shape_per_gpu)
    d["memory"]["check_used"] = "changed"  # as_dict hands out copies, the point stays as it was
    assert p.memory["check_used"] == "per-gpu"
    # the degrees multiply to the cluster, so the parallelism fractions sum to one (Figure 7)
    assert p.dp * p.tp_model * p.tp_ff * p.pp * p.ep == p.n_gpus
    fr = parallelism_fractions(pts)
    assert set(fr) == {"dp", "tp", "pp", "ep"} and len(fr["dp"]) == len(pts)
    assert np.allclose(sum(fr.values()), 1.0, rtol=1e-12)
    stop = linear_scaling_stop(pts, hw)
    assert isinstance(stop, LinearScalingStop)
    assert stop.threshold_utilization < pts[0].utilization
    first = next(q for q in pts if q.utilization < stop.threshold_utilization)
    assert stop.first_point_flop == first.training_flop
    assert pts[pts.index(first) - 1].training_flop <= stop.crossing_flop <= first.training_flop


def test_search_point_as_dict_is_the_cli_json():
    import dtsim

    shape = shape_for_compute(1e27)
    best = dtsim.limits.search(shape, get_hardware("h100-sxm"), 3.0)
    r = runner.invoke(app, ["limits", "search", "--compute", "1e27", "--json"])
    assert r.exit_code == 0, r.output
    point = limits_point(shape, best, get_hardware("h100-sxm"))
    assert r.stdout == json.dumps({"found": True, **point.as_dict()}, indent=2) + "\n"


def test_every_point_carries_its_gpu_hours_cost_and_energy():
    """Issue 13 item 9: `limits` reports cost and energy per point, counted as `simulate` counts them."""
    from dtsim import catalog
    from dtsim.assumptions import Assumptions
    from dtsim.models.limits.search import SECONDS_PER_MONTH

    hw = get_hardware("h100-sxm")
    shape = shape_for_compute(1e26)
    p = limits_point(shape, dtsim_search(shape, hw), hw)
    g = catalog.gpus()["h100-sxm"]
    hours = p.n_gpus * p.months * SECONDS_PER_MONTH / 3600
    assert p.gpu_hours == pytest.approx(hours, rel=1e-9)
    assert p.capital_cost_usd == pytest.approx(p.n_gpus * g.price_usd, rel=1e-9)
    assert p.energy_kwh == pytest.approx(hours * g.board_power_w / 1000 * Assumptions().pue, rel=1e-9)
    r = runner.invoke(app, ["limits", "search", "--compute", "1e26"])
    assert r.exit_code == 0 and "GPU-hours" in r.stdout and "GWh" in r.stdout


def test_custom_hardware_as_seed_002_table_2_describes_a_chip():
    """Issue 13 item 9: peak, HBM bandwidth and memory of a custom chip, beside the network overrides.
    Twice the peak trains the same run on fewer GPUs or sooner; nonsense is refused by name."""
    base = get_hardware("h100-sxm")
    fast = custom(base, peak_tflops=2 * base.peak_flop_s / 1e12, hbm_tb_s=6.7, memory_gb=141)
    assert fast.peak_flop_s == pytest.approx(2 * base.peak_flop_s)
    assert fast.micro.hbm_bytes_per_s == 6.7e12 and fast.memory_bytes == 141e9
    shape = shape_for_compute(1e26)
    slow_pt, fast_pt = (dtsim_search(shape, hw) for hw in (base, fast))
    assert fast_pt.n_gpus * fast_pt.months < slow_pt.n_gpus * slow_pt.months
    out = runner.invoke(app, ["limits", "search", "--compute", "1e26", "--peak-tflops", "1979", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["found"]
    for flag, value in (("--peak-tflops", "0"), ("--hbm-tb-s", "inf"), ("--memory-gb", "-5")):
        bad = runner.invoke(app, ["limits", "curve", flag, value])
        assert bad.exit_code == 2 and flag.strip("-").replace("-", "_") in bad.output, bad.output


def dtsim_search(shape, hw):
    import dtsim

    return dtsim.limits.search(shape, hw, 3.0)


def test_hardware_that_trains_nothing_says_so_instead_of_an_empty_table():
    r = runner.invoke(app, ["limits", "curve", "--memory-gb", "1e-9"])
    assert (
        r.exit_code == 2 and "trains not even the grid's smallest" in r.output and "d_model 12288" in r.output
    )


def test_limits_search_says_when_its_answer_does_not_fit_or_none_exists():
    """The search bounds the model states (the paper's check): an answer whose activations overflow the
    GPU says so in the text; with nothing that trains it the reason is given and the exit status is 1."""
    out = runner.invoke(app, ["limits", "search", "--compute", "1e20"])
    text = " ".join(out.output.split())
    assert out.exit_code == 0 and "with its activations it does not fit" in text
    ok = runner.invoke(app, ["limits", "search", "--compute", "1e20", "--memory", "per-gpu-activations"])
    assert ok.exit_code == 0 and "does not fit" not in ok.output
    none = runner.invoke(app, ["limits", "search", "--compute", "1e25", "--months", "0.001", "--json"])
    assert none.exit_code == 1 and "latency wall" in json.loads(none.stdout)["reason"]


def test_limits_curve_table_reads_whole_in_an_80_column_terminal():
    """At 80 columns the table leaves out its cost, energy, interleaving and schedule columns and says
    so, rather than folding numbers mid-token (6.5e+ / 24); a wide terminal shows them."""
    narrow = runner.invoke(app, ["limits", "curve", "--gpu", "h100-sxm"], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0 and "a narrow terminal" in narrow.output
    assert "--json or --csv has them" in " ".join(
        narrow.output.split()
    )  # it named --out, which curve has not
    assert "6.5e24" in narrow.output and "GWh" not in narrow.output.split("a narrow terminal")[0]
    wide = runner.invoke(app, ["limits", "curve", "--gpu", "h100-sxm"], env={"COLUMNS": "160"})
    assert "GWh" in wide.output and "a narrow terminal" not in wide.output
