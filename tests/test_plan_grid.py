"""`dtsim plan`'s grid over tensor × pipeline parallelism (Plan.by_tp_pp, the /plan view's heat map):
it accounts for every evaluated candidate, its best cells are the ranking's, and when nothing fits it
says so per cell with the least memory any layout there needs."""

from __future__ import annotations

import pytest

from dtsim.models.datacenter.plan import PlanOptions, plan
from dtsim.models.datacenter.workload import Cluster
from dtsim.physics.transformer import get_architecture


def test_grid_accounts_for_every_candidate_and_agrees_with_the_ranking():
    p = plan(get_architecture("llama3.1-8b"), Cluster(nodes=2), PlanOptions(gbs=256), top=100_000)
    grid = p.by_tp_pp
    assert grid == sorted(grid, key=lambda c: (c["tp"], c["pp"]))
    too_big = p.rejected["does not fit in GPU memory"]
    assert sum(c["fitting"] for c in grid) == len(p.ranked)
    assert sum(c["layouts"] for c in grid) == len(p.ranked) + too_big
    # each cell's best is the fastest ranked layout with that tp and pp
    for c in grid:
        times = [r.step_time_s for r in p.ranked if (r.layout["tp"], r.layout["pp"]) == (c["tp"], c["pp"])]
        if times:
            assert c["best_step_time_s"] == pytest.approx(min(times), rel=1e-12)
        else:
            assert c["best_step_time_s"] is None and c["fitting"] == 0
    best = min(c["best_step_time_s"] for c in grid if c["best_step_time_s"] is not None)
    assert best == pytest.approx(p.ranked[0].step_time_s, rel=1e-12)
    assert "by_tp_pp" in p.as_dict()


def test_nothing_fits_every_cell_says_so():
    p = plan(get_architecture("gpt3-175b"), Cluster(nodes=1), PlanOptions(gbs=64))
    assert not p.fits and p.by_tp_pp
    assert all(c["fitting"] == 0 and c["best_step_time_s"] is None for c in p.by_tp_pp)
    least = min(c["min_memory_per_gpu_gb"] for c in p.by_tp_pp)
    assert least == pytest.approx(p.nearest[0].memory_per_gpu_gb, rel=1e-12)
    assert least > p.usable_memory_gb


def test_plan_lists_one_layout_where_zero_stages_change_nothing():
    """With one data-parallel rank (dp·cp = 1) every ZeRO stage is the same layout: plan lists it once,
    not once per stage (the trial's top four rows were one layout)."""
    from dtsim.models.datacenter.plan import PlanOptions, plan
    from dtsim.models.datacenter.workload import Cluster
    from dtsim.physics.transformer import get_architecture

    res = plan(
        get_architecture("llama3.1-8b"), Cluster(gpu="h100-sxm", nodes=1), PlanOptions(gbs=64), top=1000
    )
    single = [r.layout for r in res.ranked if r.layout["dp"] * r.layout["cp"] == 1]
    keys = [tuple((k, v) for k, v in sorted(lay.items()) if k != "zero") for lay in single]
    assert single and len(keys) == len(set(keys))
