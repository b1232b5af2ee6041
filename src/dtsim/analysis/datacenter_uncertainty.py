"""How sure a datacenter answer is: `step --uncertainty N` and `plan --uncertainty N`.

Two sources of uncertainty are drawn together, jointly from one scrambled Sobol sequence (as
`simulate --uncertainty` draws, analysis/uncertainty.py):

- the model's own error: the score ln(measured / predicted step time) of the measured check runs
  (catalog/model_error.yaml, split-conformal, models/datacenter/model_error.py: score_quantile), drawn
  from its quantile function; each draw's step time is the model's times exp(score). Present only while
  the packaged model is in use (no calibration file, no clock-derate override), as for the intervals.
- the assumptions table's distributions of the constants the datacenter step reads
  (models/datacenter/step.py: ASSUMPTIONS_READ; docs/assumptions.md), unless `fixed_assumptions`.

The model-error scores were measured with the assumptions at their point values, so they already hold
some of the error the assumptions' spread stands for: drawing both is the cautious reading (wider than
either alone). `--fixed-assumptions` leaves the model error alone, which is what the intervals of
`step` and `plan` without `--uncertainty` show; with both, memory and the fit verdict vary only through
the assumptions (the model-error scores are of step times).

`plan --uncertainty` draws the ranked layouts together: one model-error draw is shared by every layout
of a draw (the measured error is one width for every layout, so it moves them all alike and never
reorders them); the assumptions reorder them. Each layout gets its step time's quantiles, the chance
it fits and the chance it is the fastest of those that fit in a draw.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dtsim.analysis.uncertainty import (
    CHUNK,
    DEFAULT_LEVELS,
    MonteCarlo,
    check_seed,
    draws,
    level_name,
    probability,
    sample_count,
    share,
    split_inputs,
    summarise,
    summary_warnings,
    top_drivers,
    unread_assumptions,
    without,
    yes_no,
)
from dtsim.distributions import Distribution, make_distribution
from dtsim.errors import ScenarioError

MODEL_ERROR = "model_error"
MAX_DRAWS = 1 << 20  # draws × layouts: the datacenter step costs ~5 µs a row
MAX_PLAN_LAYOUTS = 50


def datacenter_inputs(
    workload_assumptions: Mapping[str, Any], fixed_assumptions: bool, with_model_error: bool
) -> dict[str, Distribution]:
    """What a datacenter Monte Carlo draws: `model_error` (a uniform probability, mapped through the
    score's quantile function) and, unless fixed, the table's distributions of the assumptions the step
    reads that the run does not set."""
    from dtsim.assumptions import distributions
    from dtsim.models.datacenter.step import ASSUMPTIONS_READ, HARDWARE_ASSUMPTIONS

    out: dict[str, Distribution] = {}
    if with_model_error:
        out[MODEL_ERROR] = replace(
            make_distribution(MODEL_ERROR, {"dist": "uniform", "low": 0.0, "high": 1.0}),
            origin="catalog/model_error.yaml",
        )
    if not fixed_assumptions:
        # the network's constants are read once per run (resolve_hardware), not per draw: held
        drawable = [k for k in ASSUMPTIONS_READ if k not in HARDWARE_ASSUMPTIONS]
        for k, d in distributions(drawable).items():
            if k not in workload_assumptions:
                out[f"assumptions.{k}"] = replace(d, origin="assumptions table")
    return out


def model_error_label() -> str:
    from dtsim.models.datacenter import model_error

    q = model_error.score_quantile(np.asarray([0.1, 0.5, 0.9]))
    t = model_error.table()
    return (
        f"ln(measured / predicted step time) of {t['runs']} measured check runs: "
        f"P10 {q[0]:+.3f}, P50 {q[1]:+.3f}, P90 {q[2]:+.3f}"
    )


def _block(
    start: int,
    stop: int,
    workload: Any,
    layouts: Sequence[Any],
    dists: Mapping[str, Distribution],
    seed: int,
    calibrated: bool,
    calibration: Any,
) -> dict[str, Any]:
    """Draws start..stop−1 of every layout (runs on whichever process gets it)."""
    from dtsim.models.datacenter.model_error import score_quantile
    from dtsim.models.datacenter.step import step_draws

    drawn = draws(dists, stop - start, seed, start=start)
    rows = split_inputs(drawn)[1]
    per_layout = step_draws(workload, layouts, rows, calibrated, calibration)
    n = stop - start
    factor = np.ones(n)
    if MODEL_ERROR in drawn:
        factor = np.exp(score_quantile(drawn[MODEL_ERROR]))
    for res in per_layout:  # step_draws gives one value per draw (one draw when nothing is drawn)
        res["step_time_s"] = res["step_time_s"] * factor
        res["mfu"] = res["mfu"] / factor
        res["tokens_per_s"] = res["tokens_per_s"] / factor
    return {"layouts": per_layout, "inputs": drawn}


def _step_columns(workload: Any, layouts: Sequence[Any], calibrated: bool, calibration: Any):
    """unread_assumptions' `evaluate` for the datacenter step: every drawn output of every layout."""
    from dtsim.models.datacenter.step import step_draws

    def evaluate(values: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
        rows = split_inputs(values)[1]
        try:
            per_layout = step_draws(workload, layouts, rows, calibrated, calibration)
        except ScenarioError:
            return None
        return {f"{i}.{k}": v for i, res in enumerate(per_layout) for k, v in res.items()}

    return evaluate


def _run_totals(res: Mapping[str, np.ndarray], workload: Any) -> dict[str, np.ndarray]:
    """Days, GPU-hours, energy and rental cost of the workload's tokens on each draw (physics/cost.py,
    as `step --tokens` counts them)."""
    from dtsim import catalog
    from dtsim.physics import cost

    if workload.tokens is None:
        return {}
    g = catalog.gpus()[workload.cluster.gpu]
    seconds = workload.tokens / res["tokens_per_s"]
    n = workload.cluster.n_gpus
    out = {
        "days": seconds / 86400.0,
        "gpu_hours": cost.gpu_hours(n, seconds),
        "energy_kwh": cost.energy_kwh(n, g.board_power_w, seconds, res["pue"]),
    }
    if workload.usd_per_gpu_hour is not None:
        out["rental_cost_usd"] = out["gpu_hours"] * workload.usd_per_gpu_hour
    return out


@dataclass
class DatacenterMonteCarlo:
    """The draws of one or more layouts: `mc` summarises the first (step's layout; plan's fastest),
    `layouts` gives each layout's step time (and days) quantiles, P(fits) and P(fastest)."""

    mc: MonteCarlo
    layouts: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        # layout_uncertainty: one entry per layout, in the order of the JSON's "layouts"
        return {**self.mc.json_parts(), "layout_uncertainty": self.layouts}


def datacenter_monte_carlo(
    workload: Any,
    layouts: Sequence[Any],
    n: int,
    seed: int | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    probs: Sequence[str] = (),
    fixed_assumptions: bool = False,
    calibrated: bool = True,
    calibration: Any = None,
    clock_derate: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    plan_cut: bool = False,
) -> DatacenterMonteCarlo:
    """n draws (rounded up to 2^m) of the model error and the assumptions through the datacenter step
    for each layout, in blocks of 2^16 draws, here or on Dask (analysis/distributed.py: same seed,
    same numbers). `clock_derate` or a calibration drops the model error (it describes the packaged
    model only) and says so."""
    import secrets

    from dtsim.analysis.distributed import map_blocks
    from dtsim.catalog.calibration_file import calibration_in_use
    from dtsim.models.datacenter import model_error

    t0 = time.perf_counter()
    samples = sample_count(n)
    check_seed(seed)
    if samples * len(layouts) > MAX_DRAWS:
        raise ScenarioError(
            [
                (
                    "--uncertainty",
                    n,
                    f"{samples:,} draws (N rounded up to a power of two) × {len(layouts)} layouts exceeds "
                    f"{MAX_DRAWS:,} datacenter evaluations; ask for at most "
                    f"{1 << (MAX_DRAWS // len(layouts)).bit_length() - 1:,} draws",
                )
            ]
        )
    if clock_derate is not None:
        raise ScenarioError([("clock_derate", clock_derate, "cannot be combined with --uncertainty")])
    with calibration_in_use(calibration):
        packaged = model_error.packaged(calibrated) and model_error.score_quantile(0.5) is not None
    dists = datacenter_inputs(workload.assumptions, fixed_assumptions, packaged)
    unread = unread_assumptions(dists, _step_columns(workload, layouts, calibrated, calibration))
    dists = without(dists, unread)
    warnings: list[str] = []
    if not packaged:
        varied = "only the assumptions vary" if dists else "and the assumptions are held"
        warnings.append(f"{model_error.NOT_PACKAGED}; {varied}")
    seed_given = seed is not None
    if seed is None:
        seed = secrets.randbits(63)
    names = [*_outputs(workload), "fits"]
    cols: list[dict[str, np.ndarray]] = [{} for _ in layouts]
    inputs: dict[str, np.ndarray] = {}
    blocks = [(a, min(samples, a + CHUNK)) for a in range(0, samples, CHUNK)] if dists else [(0, 1)]
    for (start, stop), res in map_blocks(
        _block,
        blocks,
        scheduler=scheduler,
        workers=workers,
        kwargs={
            "workload": workload,
            "layouts": list(layouts),
            "dists": dists,
            "seed": seed,
            "calibrated": calibrated,
            "calibration": calibration,
        },
    ):
        for i, r in enumerate(res["layouts"]):
            r = {**r, **_run_totals(r, workload)}
            for k in names:
                v = np.asarray(r[k])
                cols[i].setdefault(k, np.empty(samples, dtype=v.dtype))[start:stop] = v
        for k, v in res["inputs"].items():
            inputs.setdefault(k, np.empty(samples))[start:stop] = v
        if progress is not None:
            progress(stop if dists else samples, samples)
    if not dists:  # nothing varies: the one evaluation (draw 0) stands for every draw
        cols = [{k: np.broadcast_to(v[:1], (samples,)) for k, v in c.items()} for c in cols]
    for c in cols:  # a draw where the layout does not fit has no step time: its times are not answers
        for k in names:
            if k not in ("fits", "memory_per_gpu_gb"):
                c[k] = np.where(c["fits"], c[k], np.nan)
    first = cols[0]
    summary = {o: summarise(first[o], levels) for o in names if o != "fits"}
    warnings += summary_warnings(summary, levels, samples)
    if not np.any(first["fits"]):
        warnings.append(
            "the layout does not fit in GPU memory on any draw: its times are not answers, so none is given"
        )
    above = float(np.mean(first["mfu"] > 1.0))
    if above > 0:
        warnings.append(
            f"{above:.1%} of the draws put the MFU above 100 % (the model error's fast tail on a prediction "
            "already near the peak): those draws are not physical, and the prediction is likely optimistic"
        )
    if plan_cut:
        warnings.append(
            f"only the first {MAX_PLAN_LAYOUTS} ranked layouts are drawn (P(fastest) is among them)"
        )
    if not dists:
        warnings.append("nothing varies: every draw is the point")
    if MODEL_ERROR in dists and (min(levels) < 0.025 or max(levels) > 0.975):
        warnings.append(
            "levels beyond P2.5 and P97.5 reach the model error's tails, which the measured runs do not "
            "resolve: it is held at its 95 % bounds there, so those quantiles understate the spread"
        )
    drivers = {o: top_drivers(inputs, np.asarray(first[o]), dists) for o in summary} if inputs else {}
    mc = MonteCarlo(
        samples=samples,
        requested=n,
        seed=seed,
        levels=tuple(levels),
        inputs={
            k: (model_error_label() if k == MODEL_ERROR else d.describe()) + f" ({d.origin})"
            for k, d in sorted(dists.items())
        },
        outputs=summary,
        shares={"fits": yes_no(first["fits"])},
        probabilities=[probability(p, first) for p in probs],
        warnings=warnings,
        seconds=0.0,
        drivers=drivers,
        seed_given=seed_given,
        unread=unread,
    )
    per_layout = []
    if len(layouts) > 1:
        times = np.stack([np.where(c["fits"], c["step_time_s"], np.inf) for c in cols])
        some = np.isfinite(times).any(axis=0)
        best = np.argmin(times, axis=0)
        for i, c in enumerate(cols):
            entry: dict[str, Any] = {
                "rank": i + 1,
                "step_time_s": _quantiles(c["step_time_s"], levels),
                "p_fits": float(np.mean(c["fits"])),
                "p_fastest": float(np.mean(some & (best == i))),
            }
            if "days" in c:
                entry["days"] = _quantiles(c["days"], levels)
            per_layout.append(entry)
    mc.seconds = time.perf_counter() - t0
    return DatacenterMonteCarlo(mc=mc, layouts=per_layout)


def _outputs(workload: Any) -> list[str]:
    out = ["step_time_s", "mfu", "tokens_per_s", "memory_per_gpu_gb"]
    if workload.tokens is not None:
        out += ["days", "gpu_hours", "energy_kwh"]
        if workload.usd_per_gpu_hour is not None:
            out.append("rental_cost_usd")
    return out


def _quantiles(x: np.ndarray, levels: Sequence[float]) -> dict[str, float | None]:
    """The levels' quantiles and the mean over the draws where x is defined (None where none is)."""
    s = summarise(x, levels)
    return {level_name(q): s[level_name(q)] for q in levels} | {"mean": s["mean"]}


def plan_layouts(plan_result: Any, opt: Any) -> tuple[list[Any], bool]:
    """The ranked layouts of a plan as Layout objects `step` evaluates alike (plan_result.ranked), at
    most MAX_PLAN_LAYOUTS, and whether some were left out."""
    from dtsim.models.datacenter.workload import Layout

    extra = {
        "overlap_tp_comm": opt.overlap_tp_comm,
        "overlap_p2p_comm": opt.overlap_p2p_comm,
        "overlap_grad_reduce": opt.overlap_grad_reduce,
        "fp32_grad_accumulation": opt.fp32_grad_accumulation,
    }
    rows = [Layout(**{**r.layout, **extra}) for r in plan_result.ranked[:MAX_PLAN_LAYOUTS]]
    return rows, len(plan_result.ranked) > MAX_PLAN_LAYOUTS


def describe_fastest(layouts: Sequence[Mapping[str, Any]], first: int = 1) -> str:
    """One sentence: how often the first layout (numbered `first`, as in the table) is the fastest that
    fits, and which other layout is fastest most often; draws where layouts tie go to the one listed
    first."""
    if not layouts:
        return ""
    p = layouts[0]["p_fastest"]
    other = max(layouts[1:], key=lambda e: e["p_fastest"], default=None)
    s = f"of the {len(layouts)} layouts listed, #{first} is the fastest that fits in {share(p)} of the draws"
    if other is not None and other["p_fastest"] > 0:
        s += f"; the next most often fastest is #{other['rank'] + first - 1} ({share(other['p_fastest'])})"
    return s + " (a tie goes to the layout listed first)"


__all__ = [
    "MODEL_ERROR",
    "DatacenterMonteCarlo",
    "datacenter_inputs",
    "datacenter_monte_carlo",
    "describe_fastest",
    "plan_layouts",
]
