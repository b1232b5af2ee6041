"""What binds a point of a utilization curve: its run time split into the terms of the step time
(Erdil & Schneider-Joseph 2024 eq. 21, as models/limits/model.py `step_time` evaluates it), the largest
of them named.

eq. 21 with DP not overlapped and TP/PP/EP overlapped with the GEMMs:
  1F1B:  t = t_latency + t_DP + max(t_GEMM, t_TP + t_PP) / (1 − f_b)
  ZB-H2: t = t_latency,DP + t_DP + max(t_GEMM, t_TP + t_PP)
so a run's time (months) is the sum of
  - `compute`: t_GEMM, when the GEMMs take longer than the TP and PP/EP communication hidden under them;
  - `tp_pp_comm`: t_TP + t_PP otherwise (communication the GEMMs cannot hide);
  - `bubble`: max(t_GEMM, t_TP + t_PP) · f_b / (1 − f_b) (1F1B only);
  - `dp_comm`: the data-parallel all-reduce's bandwidth time;
  - `latency`: the network latency the schedule pays, the rest of the step (eq. 21's t_latency: every
    degree's with 1F1B, only DP's with zero-bubble, §8.1.5).
"""

from __future__ import annotations

from typing import Any

TERMS = ("compute", "tp_pp_comm", "bubble", "dp_comm", "latency")
TERM_NAMES = {
    "compute": "compute (GEMMs)",
    "tp_pp_comm": "TP + PP/EP communication",
    "bubble": "pipeline bubble",
    "dp_comm": "DP all-reduce",
    "latency": "network latency",
}


def step_terms(point: Any) -> dict[str, float]:
    """A LimitsPoint's run time (months) split into eq. 21's terms (see the module docstring); the
    terms sum to `point.months`."""
    hidden = point.tp_comm_months + point.pp_comm_months
    core = max(point.gemm_months, hidden)
    fb = 0.0 if point.schedule == "zero-bubble" else point.bubble_fraction
    bubble = core * fb / (1.0 - fb)
    terms = {
        "compute": point.gemm_months if point.gemm_months >= hidden else 0.0,
        "tp_pp_comm": hidden if hidden > point.gemm_months else 0.0,
        "bubble": bubble,
        "dp_comm": point.dp_comm_months,
    }
    # the latency the schedule pays is what remains of the step (never below zero by rounding)
    terms["latency"] = max(0.0, point.months - sum(terms.values()))
    return terms


def binding(point: Any) -> str:
    """The largest term of a point's run time (one of TERMS)."""
    terms = step_terms(point)
    return max(TERMS, key=lambda k: terms[k])


def largest_overhead(point: Any) -> str:
    """The largest term other than the GEMMs: what grows as the curve bends down (one of TERMS[1:])."""
    terms = step_terms(point)
    return max(TERMS[1:], key=lambda k: terms[k])
