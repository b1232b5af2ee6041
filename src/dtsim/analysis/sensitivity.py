"""Global sensitivity: which uncertain inputs drive an output, by Sobol indices and a tornado.

Sobol indices (Sobol 2001, "Global sensitivity indices for nonlinear mathematical models and their
Monte Carlo estimates", Mathematics and Computers in Simulation 55): S1 is the share of the output's
variance an input explains alone, ST the share it has a hand in, interactions included; ST − S1 is
what it explains only together with others. They are estimated with SALib (Herman and Usher 2017,
Iwanaga, Usher and Herman 2022): Saltelli's sampling scheme on a scrambled Sobol sequence (Saltelli
et al. 2010, "Variance based sensitivity analysis of model output. Design and estimator for the total
sensitivity index", Computer Physics Communications 181) with N base samples, N·(d + 2) model runs
for d inputs, and bootstrap 95 % confidence intervals. The inputs are drawn on the unit cube and mapped
through each distribution's inverse CDF, exactly as `--uncertainty` draws them.

The tornado (`low`, `high`) is the output with one input at its P10 and then its P90 and every other
input at its median: a one-at-a-time view that shows the direction of an effect, which the indices
do not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dtsim.distributions import Distribution
from dtsim.errors import MissingExtra, ScenarioError

MAX_RUNS = 1 << 24  # model runs, N·(d + 2)
DEFAULT_BASE = 1024
TORNADO = (0.1, 0.9)
# With a progress callback the runs go through the model in about PROGRESS_CHUNKS pieces of at least
# PROGRESS_MIN_ROWS rows (each row is computed on its own, so the pieces change no number; an
# engineering choice: fine enough for a progress bar, coarse enough to stay vectorized)
PROGRESS_CHUNKS = 20
PROGRESS_MIN_ROWS = 256


@dataclass
class Sensitivity:
    """Sobol indices and a tornado for one output, ranked by ST."""

    output: str
    base_samples: int
    runs: int
    seed: int | None
    point: float  # the output with every input at its median
    variance: float
    indices: list[dict[str, Any]]  # input, distribution, from, S1, S1_conf, ST, ST_conf, low, high
    warnings: list[str]
    unread: list[str] = field(default_factory=list)  # table assumptions held: none changes an output

    def as_dict(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "method": "Sobol indices, Saltelli sampling (SALib), bootstrap 95 % intervals",
            "base_samples": self.base_samples,
            "runs": self.runs,
            "seed": self.seed,
            "point": self.point,
            "variance": self.variance,
            "tornado_levels": list(TORNADO),
            "indices": self.indices,
            "warnings": list(self.warnings),
            "unread": list(self.unread),
        }


def base_count(n: Any, d: int) -> int:
    """N rounded up to a power of two (Saltelli's scheme on a Sobol sequence balances there), within
    the run limit, or an error naming --base."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ScenarioError([("--base", n, "must be a whole number ≥ 2 (Saltelli base samples)")])
    m = 1 << math.ceil(math.log2(n))
    if m * (d + 2) > MAX_RUNS:
        raise ScenarioError(
            [
                (
                    "--base",
                    n,
                    f"with {d} inputs runs the model {m * (d + 2):,} times; the limit is {MAX_RUNS:,}",
                )
            ]
        )
    return m


def _values(d: Distribution, u: np.ndarray, integer: bool) -> np.ndarray:
    x = d.ppf(u)
    return np.round(x) if integer and x.dtype.kind == "f" else x


def sobol_analysis(
    dists: Mapping[str, Distribution],
    evaluate: Callable[[dict[str, np.ndarray]], np.ndarray],
    output: str,
    n: int = DEFAULT_BASE,
    seed: int | None = None,
    integer_fields: Sequence[str] = (),
    origins: Mapping[str, str] | None = None,
) -> Sensitivity:
    """Sobol first-order and total indices of `evaluate` (inputs by name → output array) over `dists`,
    and the tornado. `evaluate` must be vectorized: one output per row of the input arrays."""
    try:
        from SALib.analyze import sobol as sobol_analyze
        from SALib.sample import sobol as sobol_sample
    except ImportError:
        raise MissingExtra(
            [("sensitivity", "SALib", "needs SALib: python3 -m pip install 'dtsim[sensitivity]'")]
        ) from None
    if not dists:
        raise ScenarioError(
            [("inputs", None, "nothing varies: give fields as distributions, or drop --fixed-assumptions")]
        )
    if getattr(dists, "correlations", ()):
        pairs = "; ".join(f"{c.a},{c.b}" for c in dists.correlations)
        raise ScenarioError(
            [("correlations", pairs, "Sobol indices need independent inputs; drop the correlations here")]
        )
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ScenarioError([("--seed", seed, "must be a whole number ≥ 0")])
    names = sorted(dists)
    d = len(names)
    base = base_count(n, d)
    problem = {"num_vars": d, "names": names, "bounds": [[0.0, 1.0]] * d}
    u = sobol_sample.sample(problem, base, calc_second_order=False, scramble=True, seed=seed)
    x = {k: _values(dists[k], u[:, j], k in integer_fields) for j, k in enumerate(names)}
    y = np.asarray(evaluate(x), dtype=float)
    bad = ~np.isfinite(y)
    if bad.any():
        raise ScenarioError(
            [
                (
                    "--output",
                    output,
                    f"is undefined on {bad.mean():.1%} of the runs (e.g. where the run is infeasible); "
                    "Sobol indices need it everywhere: choose an output defined on every run or narrow "
                    "the distributions",
                )
            ]
        )
    # the tornado: each input at its P10 and P90, the others at their medians (one batch of 2d + 1 rows)
    med = {k: _values(dists[k], np.full(2 * d + 1, 0.5), k in integer_fields) for k in names}
    for j, k in enumerate(names):
        ends = _values(dists[k], np.asarray(TORNADO), k in integer_fields)
        med[k] = med[k].copy()
        med[k][2 * j : 2 * j + 2] = ends
    t = np.asarray(evaluate(med), dtype=float)
    point = float(t[-1])
    variance = float(np.var(y))
    warnings = []
    if variance == 0.0 or np.ptp(y) <= 1e-12 * max(1.0, abs(point)):
        s1 = st = s1c = stc = np.zeros(d)
        warnings.append(f"{output} does not vary with these inputs: every index is 0")
    else:
        res = sobol_analyze.analyze(
            problem,
            y,
            calc_second_order=False,
            num_resamples=200,
            conf_level=0.95,
            seed=_bootstrap_seed(seed),
        )
        s1, st, s1c, stc = (np.asarray(res[k], dtype=float) for k in ("S1", "ST", "S1_conf", "ST_conf"))
        if float(np.max(stc)) > 0.1:
            warnings.append(
                f"an ST's 95 % interval is ±{float(np.max(stc)):.2f}: raise --base for firmer indices"
            )
    origins = origins or {}
    indices = [
        {
            "input": k,
            "distribution": dists[k].describe(),
            "from": origins.get(k, "scenario"),
            "S1": float(s1[j]),
            "S1_conf": float(s1c[j]),
            "ST": float(st[j]),
            "ST_conf": float(stc[j]),
            "low": float(t[2 * j]),
            "high": float(t[2 * j + 1]),
        }
        for j, k in enumerate(names)
    ]
    indices.sort(key=lambda r: (-r["ST"], r["input"]))
    return Sensitivity(
        output=output,
        base_samples=base,
        runs=len(y) + len(t),
        seed=seed,
        point=point,
        variance=variance,
        indices=indices,
        warnings=warnings,
    )


def _bootstrap_seed(seed: int | None) -> int | None:
    """The seed of SALib's bootstrap of the confidence intervals, derived from the run's seed: SALib
    seeds it only when the seed is truthy (`if seed:` in SALib.analyze.sobol), so seed 0 would give
    different intervals on every run."""
    if seed is None:
        return None
    return int(np.random.SeedSequence(seed).generate_state(1)[0]) or 1


def sensitivity(
    base: Any,
    dists: Mapping[str, Distribution],
    output: str = "wall_clock_days",
    n: int = DEFAULT_BASE,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Sensitivity:
    """Sobol indices and tornado of a `simulate` output over the scenario's distributions (from
    `load_uncertain_scenario`: the fields given as distributions and, unless held fixed, the
    assumptions table's). The public API of `dtsim sensitivity`. `progress(done, total)`, when given, is
    called with the model runs done and the runs in all as they proceed, as the other analyses call
    theirs (the API's jobs: it may raise to stop the work)."""
    from dtsim.analysis.uncertainty import (
        batch_columns,
        evaluate_rows,
        unread_assumptions,
        unread_note,
        without,
    )
    from dtsim.schema.fields import INTEGER_FIELDS

    unread = unread_assumptions(dists, batch_columns(base), integer_fields=INTEGER_FIELDS)
    if unread and len(unread) == len(dists):
        raise ScenarioError(
            [
                (
                    "inputs",
                    None,
                    f"nothing this run reads varies: the assumptions table's are {unread_note(unread)}; give fields as distributions",
                )
            ]
        )
    dists = without(dists, unread)

    def evaluate(values: dict[str, np.ndarray]) -> np.ndarray:
        res = evaluate_rows(base, values, [output], dists)
        if "problems" in res:
            raise ScenarioError(res["problems"])
        col = res["columns"].get(output)
        if col is None or col.dtype.kind not in "fiub":
            known = ", ".join(sorted(k for k in res["numeric"]))
            raise ScenarioError(
                [("--output", output, f"is not a numeric output of simulate; known: {known}")]
            )
        return col

    total = [0, 0]  # rows to run (known at the first call: the Saltelli rows, then 2d + 1), rows run

    def evaluate_reporting(values: dict[str, np.ndarray]) -> np.ndarray:
        n = len(next(iter(values.values())))
        if total[0] == 0:
            total[0] = n + 2 * len(dists) + 1
        step = max(PROGRESS_MIN_ROWS, math.ceil(total[0] / PROGRESS_CHUNKS))
        parts = []
        for lo in range(0, n, step):
            parts.append(evaluate({k: v[lo : lo + step] for k, v in values.items()}))
            total[1] += min(step, n - lo)
            progress(min(total[1], total[0]), total[0])
        return np.concatenate(parts)

    res = sobol_analysis(
        dists,
        evaluate if progress is None else evaluate_reporting,
        output,
        n,
        seed,
        INTEGER_FIELDS,
        origins={k: d.origin for k, d in dists.items()},
    )
    res.unread = unread
    return res
