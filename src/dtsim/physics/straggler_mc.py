"""Monte Carlo and order-statistic check of the straggler factor f(n) (issue 16 item 6).

A synchronization among n nodes ends when the nodes its strategy waits for are in. With per-node step
times T₁…T_m drawn independently from one distribution F, a strategy that proceeds when the k fastest
of m nodes are in takes the k-th order statistic T_(k:m), and

    f(n) = E[T_(k:m)] / E[T]

(MIRI simulator docs §5.1: "the group must wait for the slowest node"; Chen et al. 2016,
arXiv:1604.00981, for backup workers). The strategies' rules (MIRI simulator docs §5.2, §4.5):

    none:      k = m = n                          (the slowest of n)
    threshold: m = n, k = threshold_fraction · n   (the fastest 90 % proceed)
    backup:    m = n · (1 + backup fraction), k = n (10 % extra nodes; the fastest n are used)
    relay:     the original simulator states no rule, so it has no check (reference README)

Two estimators, which the tests hold to each other:

- `order_statistic_mean`: exact up to quadrature. U_(k:m) of m uniforms is Beta(k, m − k + 1) and
  T_(k:m) = F⁻¹(U_(k:m)) (David & Nagaraja, "Order Statistics", 3rd ed. 2003, §2.1), so
  E[T_(k:m)] = ∫₀¹ F⁻¹(B⁻¹(v)) dv, B the Beta distribution's CDF. The integral runs over the upper tail
  (1 − U is Beta(m − k + 1, k), F⁻¹(U) = F's inverse survival function of 1 − U), so 10⁵ or 10⁷
  nodes cost the same as 10 and keep their precision. Real k and m interpolate between the integer
  order statistics (the Beta form is defined for any k, m with 1 ≤ k ≤ m).
- `sampled_order_statistic`: plain Monte Carlo, m draws per trial from a seeded generator, for the
  small n where sampling is cheap.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

STRATEGY_NAMES = ("none", "threshold", "backup", "relay")
CHECKED = ("none", "threshold", "backup")  # the strategies with a rule to simulate
_QUADRATURE_NODES = 200
_STRETCH = 4  # v = t⁴ packs the nodes near v = 0, where F⁻¹ of the upper tail grows without bound


@cache
def _quadrature() -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on (0, 1) in v = t^4 (a change of variable that tames the
    integrable singularity of F⁻¹ at the tail end; Davis & Rabinowitz, "Methods of Numerical
    Integration", 2nd ed. 1984, §2.12)."""
    t, w = np.polynomial.legendre.leggauss(_QUADRATURE_NODES)
    t = (t + 1.0) / 2.0
    w = w / 2.0
    return t**_STRETCH, w * _STRETCH * t ** (_STRETCH - 1)


def catalog() -> dict[str, Any]:
    """catalog/straggler_distributions.yaml: the distributions, the rules' constants, the tolerance."""
    from dtsim.catalog import load_table

    return load_table("straggler_distributions.yaml")


def distribution(name: str):
    """The frozen SciPy distribution of a catalog entry (a log-normal: median and sigma)."""
    from scipy import stats

    rows = catalog()["distributions"]
    if name not in rows:
        raise ValueError(f"unknown step-time distribution {name!r}; known: {', '.join(rows)}")
    row = rows[name]
    if row["family"] != "lognormal":  # pragma: no cover - guards the shipped file
        raise ValueError(f"{name}: family {row['family']!r} is not supported (lognormal)")
    return stats.lognorm(s=float(row["sigma"]), scale=float(row["median"]))


def order_statistic_mean(dist, k, m):
    """E[T_(k:m)], the mean of the k-th smallest of m independent draws from `dist` (a frozen SciPy
    distribution), for arrays k, m with 1 ≤ k ≤ m (David & Nagaraja 2003 §2.1; see the module doc)."""
    from scipy import stats

    k = np.asarray(k, dtype=float)
    m = np.asarray(m, dtype=float)
    if np.any(k < 1) or np.any(m < k):
        raise ValueError("order statistic needs 1 ≤ k ≤ m")
    v, w = _quadrature()
    upper = stats.beta.ppf(v, (m - k + 1.0)[..., None], k[..., None])  # 1 − U_(k:m), from its small end
    return np.sum(w * dist.isf(upper), axis=-1)


def sampled_order_statistic(dist, k: int, m: int, trials: int, seed: int) -> tuple[float, float]:
    """Monte Carlo estimate of E[T_(k:m)] and its standard error: `trials` draws of m step times
    from a generator seeded with `seed`, each trial's k-th smallest."""
    rng = np.random.default_rng(seed)
    draws = dist.ppf(rng.random((trials, m)))
    kth = np.partition(draws, k - 1, axis=1)[:, k - 1]
    return float(kth.mean()), float(kth.std(ddof=1) / np.sqrt(trials))


def order_indices(n, strategy: str, threshold_fraction: float, backup_fraction: float):
    """(k, m) for a strategy's rule among n useful nodes (see the module doc); n ≤ 1 gives (1, 1):
    one participant waits for nobody, as the closed form's f(1) = 1."""
    n = np.maximum(np.asarray(n, dtype=float), 1.0)
    if strategy == "none":
        return n, n
    if strategy == "threshold":
        return np.maximum(threshold_fraction * n, 1.0), n
    if strategy == "backup":
        return n, np.where(n > 1.0, n * (1.0 + backup_fraction), 1.0)
    raise ValueError(f"strategy {strategy!r} has no rule to simulate; checked: {', '.join(CHECKED)}")


def simulated_factor(n, strategy: str, dist, threshold_fraction: float, backup_fraction: float):
    """f(n) = E[T_(k:m)] / E[T] for the strategy's rule (module doc), by quadrature."""
    k, m = order_indices(n, strategy, threshold_fraction, backup_fraction)
    return np.where(np.asarray(n, dtype=float) <= 1.0, 1.0, order_statistic_mean(dist, k, m) / dist.mean())


def sampled_factor(n: int, strategy: str, dist, threshold_fraction, backup_fraction, trials: int, seed: int):
    """f(n) by sampling: the rule's k and m must be whole numbers of nodes. Returns (f, standard error)."""
    k, m = order_indices(n, strategy, threshold_fraction, backup_fraction)
    k, m = float(k), float(m)
    if abs(k - round(k)) > 1e-9 * k or abs(m - round(m)) > 1e-9 * m:
        raise ValueError(f"n = {n} gives k = {k}, m = {m}; sampling needs whole numbers of nodes")
    mean, se = sampled_order_statistic(dist, round(k), round(m), trials, seed)
    return mean / dist.mean(), se / dist.mean()


def log_grid(n_max: float, per_decade: int) -> np.ndarray:
    """1 … n_max, `per_decade` points per decade, evenly spaced in log n."""
    decades = np.log10(n_max)
    return np.logspace(0.0, decades, round(decades * per_decade) + 1)


def relative_miss(closed, simulated) -> np.ndarray:
    """|closed − simulated| / simulated: how far a closed form is from the simulated curve."""
    closed = np.asarray(closed, dtype=float)
    simulated = np.asarray(simulated, dtype=float)
    return np.abs(closed - simulated) / simulated


# --- the shipped table (catalog/straggler_curves.yaml) ---------------------------------------------------

TABLE_FILE = "straggler_curves.yaml"
TABLE_N_MAX = 1e7  # the scenario's num_nodes bound (schema/fields.py)
TABLE_PER_DECADE = 16
SAMPLE_SEED = 20261125
SAMPLE_TRIALS = 4000
SAMPLE_N = (10, 20, 50, 100, 1000)  # 0.9·n and 1.1·n whole: every rule can be sampled


def build_table(distribution_name: str, closed_forms: dict[str, Any]) -> dict[str, Any]:
    """The simulated f(n) of each checked strategy over a log grid of n (quadrature), the sampled
    check at SAMPLE_N (seeded), and each strategy's largest miss against its closed form over n ≥ 2;
    a strategy whose miss exceeds the catalog's tolerance uses the simulated curve.

    `closed_forms` maps a strategy name to a function n → closed-form f(n) (stragglers.straggler_factor
    with the assumptions table's defaults, passed in by the caller)."""
    cat = catalog()
    frac_t = float(cat["threshold_fraction"])
    frac_b = float(cat["backup_worker_fraction"])
    tol = float(cat["tolerance"])
    dist = distribution(distribution_name)
    n = log_grid(TABLE_N_MAX, TABLE_PER_DECADE)
    curves, misses, uses, sampled = {}, {}, {}, {}
    for s in CHECKED:
        f = simulated_factor(n, s, dist, frac_t, frac_b)
        curves[s] = [float(f"{x:.10g}") for x in f]
        miss = relative_miss(closed_forms[s](n[1:]), f[1:])
        misses[s] = float(f"{miss.max():.6g}")
        uses[s] = "simulated" if misses[s] > tol else "closed-form"
        sampled[s] = [
            [
                float(f"{x:.6g}")
                for x in sampled_factor(k, s, dist, frac_t, frac_b, SAMPLE_TRIALS, SAMPLE_SEED + k)
            ]
            for k in SAMPLE_N
        ]
    uses["relay"] = "closed-form"
    return {
        "about": (
            "Simulated straggler factor f(n) = E[sync time] / E[one node's time] by strategy, generated by "
            "`python benchmarks/straggler_table.py --write` (physics/straggler_mc.py: order statistics of the "
            "per-node step-time distribution below, by quadrature); do not edit by hand."
        ),
        "distribution": distribution_name,
        "threshold_fraction": frac_t,
        "backup_worker_fraction": frac_b,
        "tolerance": tol,
        "n": [float(f"{x:.10g}") for x in n],
        "curves": curves,
        "max_miss_of_closed_form": misses,
        "uses": uses,
        "sampled_check": {
            "seed": SAMPLE_SEED,
            "trials": SAMPLE_TRIALS,
            "n": list(SAMPLE_N),
            "f_and_standard_error": sampled,
        },
    }
