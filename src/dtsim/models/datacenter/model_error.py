"""How far a datacenter prediction may be from the measured step time: the model-error interval.

The bounds live in catalog/model_error.yaml, generated from the model's residuals on the measured runs
by `python -m dtsim.validation.model_error` (split-conformal on log(measured / predicted step time);
the method, its source and its leave-one-source-out check are in that module and in
docs/validation.md). A predicted step time t gets the interval [t·exp(low), t·exp(high)]; rates
(MFU, tokens/s) and run days scale with it, the rates inversely.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from dtsim import catalog

LEVEL = 0.8  # `step` and `plan` report the 80 % interval as P10 and P90


@cache
def table() -> dict[str, Any]:
    """runs, sources, bounds {level: {low, high}}, coverage_leave_one_source_out."""
    return catalog.load_table("model_error.yaml")


def step_time_factors(level: float = LEVEL) -> tuple[float, float] | None:
    """(exp(low), exp(high)): what the predicted step time is multiplied by for the interval's ends;
    None when the table holds no interval at this level."""
    b = (table().get("bounds") or {}).get(f"{level:g}")
    if not b:
        return None
    return math.exp(b["low"]), math.exp(b["high"])


@cache
def _score_knots() -> tuple[np.ndarray, np.ndarray] | None:
    """(probabilities, scores) of the score's quantile function: each level's bounds are its quantiles
    (1 − level)/2 and (1 + level)/2 (the split-conformal bounds are order statistics of the check runs'
    scores), with the median between them."""
    t = table()
    bounds, median = t.get("bounds") or {}, t.get("median")
    if not bounds or median is None:
        return None
    knots = {0.5: float(median)}
    for level, b in bounds.items():
        if b:
            knots[round((1.0 - float(level)) / 2.0, 9)] = float(b["low"])
            knots[round((1.0 + float(level)) / 2.0, 9)] = float(b["high"])
    p = np.asarray(sorted(knots))
    return p, np.maximum.accumulate(np.asarray([knots[k] for k in p]))


def score_quantile(u) -> np.ndarray | None:
    """The model error as a distribution, for `step --uncertainty` and `plan --uncertainty`: the score
    ln(measured / predicted step time) at probability u, linear between the knots of `_score_knots`
    and held at the outermost bounds (the 95 % interval's ends) beyond them, since the measured runs
    say nothing of the tails past them. None when the table holds no interval."""
    knots = _score_knots()
    if knots is None:
        return None
    return np.interp(np.asarray(u, dtype=float), knots[0], knots[1])


def basis() -> str:
    """One sentence: what the interval rests on and how well it held, for reports."""
    t = table()
    cov = (t.get("coverage_leave_one_source_out") or {}).get(f"{LEVEL:g}")
    by_source = t.get("coverage_by_source_80") or {}
    f = step_time_factors()
    if f is None:
        return ""
    held = ""
    if cov is not None:
        held = f"; built without their source, it covered {cov:.0%} of the check runs"
        if by_source:
            ranked = sorted(by_source.items(), key=lambda kv: -kv[1])
            held += " (by source: " + ", ".join(f"{k} {v:.0%}" for k, v in ranked) + ")"
    return (
        f"{LEVEL:.0%} model-error interval: the step time × {f[0]:.2f}–{f[1]:.2f}, from the model's error on "
        f"{t['runs']} measured check runs on {', '.join(t.get('gpus') or [])}{held}. "
        "Layouts unlike those runs (other GPUs, MoE, other software stacks) may err further."
    )


NOT_PACKAGED = (
    "no model-error interval: a calibration file, calibrated=False or a clock-derate override changes the "
    "model, and the packaged interval describes the packaged model's error; any range shown leaves the "
    "model's own error out, so it is narrower than the error the prediction may have (a calibration's "
    "in-sample fit, rms_log_error in its file, is a lower bound on it)"
)


def packaged(calibrated: bool = True, clock_derate: float | None = None) -> bool:
    """Whether the model in use is the packaged one the interval describes: the packaged calibration
    (no `--calibration` document installed), calibrated, no clock-derate override."""
    return calibrated and clock_derate is None and not catalog.calibration_overridden()


def summary(is_packaged: bool = True) -> dict[str, Any]:
    """What `step --json` and `plan --json` say about their intervals: level, runs, sources, the
    leave-one-source-out coverage on check runs and the sentence of `basis` (`is_packaged=False`: the
    model is not the packaged one, so no interval is given, and this says why). A fresh dict each call
    (the caller's to keep), built once."""
    return dict(_summary() if is_packaged else {"level": None, "basis": NOT_PACKAGED})


@cache
def _summary() -> dict[str, Any]:
    t = table()
    return {
        "level": LEVEL,
        "runs": t.get("runs"),
        "sources": len(t.get("sources") or {}),
        "coverage_leave_one_source_out": (t.get("coverage_leave_one_source_out") or {}).get(f"{LEVEL:g}"),
        "basis": basis(),
    }
