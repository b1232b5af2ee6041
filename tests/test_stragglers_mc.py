"""The Monte Carlo / order-statistic check of the straggler closed forms (issue 16 item 6):
physics/straggler_mc.py against exact results, the shipped table against its generator and the
closed forms, and straggler_factor(..., curve="simulated"). Fixed seeds; a few seconds in all."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dtsim.assumptions import Assumptions
from dtsim.catalog import load_table
from dtsim.errors import ScenarioError
from dtsim.physics import straggler_mc as mc
from dtsim.physics import stragglers

ASM = Assumptions()
TABLE = load_table(mc.TABLE_FILE)
CODES = {s: i for i, s in enumerate(stragglers.STRATEGIES)}
DIST = mc.distribution(TABLE["distribution"])


def harmonic(n: int) -> float:
    return float(np.sum(1.0 / np.arange(1, n + 1)))


# --- the estimators against exact results ------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 10, 72, 1000, 100_000])
def test_expected_max_of_exponentials_is_the_harmonic_number(n):
    """E[max of n Exp(λ)] = H_n / λ (David & Nagaraja 2003, §3.1 Rényi representation)."""
    lam = 2.5
    got = mc.order_statistic_mean(stats.expon(scale=1 / lam), n, n)
    assert got == pytest.approx(harmonic(n) / lam, rel=1e-5)


@pytest.mark.parametrize(
    "k,m", [(1, 1), (1, 2), (2, 2), (9, 10), (10, 10), (50, 100), (1000, 1000), (10**5, 10**5)]
)
def test_order_statistics_of_uniforms_are_k_over_m_plus_1(k, m):
    """E[U_(k:m)] = k / (m + 1); the maximum n / (n + 1) (David & Nagaraja 2003, §2.1)."""
    assert mc.order_statistic_mean(stats.uniform(), k, m) == pytest.approx(k / (m + 1), rel=1e-5)


@pytest.mark.parametrize("dist", [stats.expon(), stats.uniform()], ids=["exponential", "uniform"])
@pytest.mark.parametrize("k,m", [(10, 10), (9, 10), (45, 50), (20, 22)])
def test_sampling_agrees_with_the_exact_order_statistic(dist, k, m):
    mean, se = mc.sampled_order_statistic(dist, k, m, trials=4000, seed=20261125 + m)
    assert abs(mean - float(mc.order_statistic_mean(dist, k, m))) < 4 * se


def test_quadrature_is_vectorized_and_rejects_impossible_order_statistics():
    k = np.array([1, 5, 10])
    assert np.allclose(mc.order_statistic_mean(stats.uniform(), k, 10), k / 11, rtol=1e-5)
    with pytest.raises(ValueError, match="1 ≤ k ≤ m"):
        mc.order_statistic_mean(stats.uniform(), 11, 10)


# --- the published distribution ----------------------------------------------------------------------


def test_the_lognormal_reproduces_the_quantiles_it_was_read_from():
    """Dean & Barroso 2013 Table 1: p50 1 ms and p99 10 ms set it; the p95 (5 ms) is within 2 %."""
    row = mc.catalog()["distributions"]["tail_at_scale_leaf"]
    stated = row["stated"]
    assert DIST.ppf(0.5) == pytest.approx(stated["p50_s"], rel=1e-9)
    assert DIST.ppf(0.99) == pytest.approx(stated["p99_s"], rel=1e-9)
    assert DIST.ppf(0.95) == pytest.approx(stated["p95_s"], rel=0.02)


# --- the table: reproducible, sampled, and the check of each closed form -----------------------------


def closed_forms():
    return {s: (lambda n, c=c: stragglers.straggler_factor(n, c, ASM)) for s, c in CODES.items()}


def test_the_shipped_table_is_what_its_generator_makes():
    """benchmarks/straggler_table.py --write regenerates the same file: quadrature and seeded sampling."""
    assert mc.build_table(TABLE["distribution"], closed_forms()) == {k: v for k, v in TABLE.items()}


@pytest.mark.parametrize("strategy", mc.CHECKED)
def test_the_table_agrees_with_sampling_at_small_n(strategy):
    """The quadrature curve against the seeded Monte Carlo at n = 10 … 1000, within 4 standard errors."""
    check = TABLE["sampled_check"]
    n = np.asarray(TABLE["n"])
    for k, (f, se) in zip(check["n"], check["f_and_standard_error"][strategy], strict=True):
        exact = float(mc.simulated_factor(k, strategy, DIST, 0.9, 0.1))
        assert abs(f - exact) < 4 * se, (strategy, k)
        assert np.interp(np.log(k), np.log(n), TABLE["curves"][strategy]) == pytest.approx(exact, rel=1e-3)


@pytest.mark.parametrize("strategy", mc.CHECKED)
def test_each_closed_form_against_the_simulated_curve(strategy):
    """The check itself: a closed form more than 5 % from the simulated curve (over n = 2 … 10⁷) is
    replaced by it; within 5 % it is kept. With the published distribution every checked strategy
    misses (none by up to 98 %, threshold 54 %, backup 51 %: docs/model.md)."""
    n = np.asarray(TABLE["n"])[1:]
    miss = mc.relative_miss(closed_forms()[strategy](n), TABLE["curves"][strategy][1:]).max()
    assert miss == pytest.approx(TABLE["max_miss_of_closed_form"][strategy], rel=1e-5)
    assert TABLE["uses"][strategy] == ("simulated" if miss > TABLE["tolerance"] else "closed-form")
    simulated = stragglers.straggler_factor(n, CODES[strategy], ASM, curve="simulated")
    expected = TABLE["curves"][strategy][1:] if miss > TABLE["tolerance"] else closed_forms()[strategy](n)
    assert np.allclose(simulated, expected, rtol=1e-12)


def test_relay_keeps_its_closed_form():
    """Relay states no rule to simulate (reference README), so the simulated option leaves it alone."""
    assert TABLE["uses"]["relay"] == "closed-form"
    n = np.array([1, 2, 72, 1e5, 1e7])
    code = CODES["relay"]
    assert np.array_equal(
        stragglers.straggler_factor(n, code, ASM, curve="simulated"),
        stragglers.straggler_factor(n, code, ASM),
    )
    with pytest.raises(ValueError, match="no rule to simulate"):
        mc.order_indices(10, "relay", 0.9, 0.1)


def test_the_default_is_the_original_closed_form():
    """The MIRI simulator's f = 1 + 0.05·log2 n stays the default (its reproduction tests rely on it)."""
    assert stragglers.straggler_factor(72, 0, ASM) == pytest.approx(1 + 0.05 * np.log2(72), rel=1e-12)


# --- properties of the simulated option --------------------------------------------------------------


@pytest.mark.parametrize("strategy", stragglers.STRATEGIES)
def test_simulated_factor_is_finite_monotonic_and_one_for_one_node(strategy):
    rng = np.random.default_rng(7)
    n = np.sort(np.concatenate([[1.0, 2.0, 1e7], 10 ** rng.uniform(0, 7, 2000)]))
    f = stragglers.straggler_factor(n, CODES[strategy], ASM, curve="simulated")
    assert np.all(np.isfinite(f))
    assert np.all(np.diff(f[n >= 2]) >= 0)
    assert f[0] == 1.0
    assert stragglers.straggler_factor(
        np.array([0.0, 0.5]), CODES[strategy], ASM, curve="simulated"
    ).tolist() == [
        1.0,
        1.0,
    ]


@pytest.mark.parametrize("strategy", mc.CHECKED)
def test_interpolation_in_log_n_stays_within_a_tenth_of_a_percent(strategy):
    """Between the table's points (16 a decade) np.interp in log n is within 0.1 % of the quadrature,
    for n ≥ 2 (below 2 it runs from f(1) = 1 to the curve)."""
    n = np.asarray(TABLE["n"])
    mid = np.sqrt(n[1:] * n[:-1])
    mid = mid[mid >= 2]
    exact = mc.simulated_factor(mid, strategy, DIST, 0.9, 0.1)
    got = stragglers.straggler_factor(mid, CODES[strategy], ASM, curve="simulated")
    assert np.max(np.abs(got - exact) / exact) < 1e-3


def test_batch_equals_scalar():
    rng = np.random.default_rng(3)
    n = 10 ** rng.uniform(0, 7, 64)
    code = rng.integers(0, 4, 64)
    batch = stragglers.straggler_factor(n, code, ASM, curve="simulated")
    single = [
        float(stragglers.straggler_factor(a, b, ASM, curve="simulated")) for a, b in zip(n, code, strict=True)
    ]
    assert np.array_equal(batch, single)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="curve = 'bogus'; allowed: closed-form, simulated"):
        stragglers.straggler_factor(10, 0, ASM, curve="bogus")
    with pytest.raises(
        ScenarioError, match=r"^n = 20000000.0: the simulated straggler curve covers 1 … 10,000,000"
    ):
        stragglers.straggler_factor(2e7, 0, ASM, curve="simulated")
    other = Assumptions({"backup_worker_fraction": 0.2})
    with pytest.raises(
        ScenarioError, match=r"assumptions\.backup_worker_fraction = 0\.2: the simulated backup curve"
    ):
        stragglers.straggler_factor(10, CODES["backup"], other, curve="simulated")
    assert (
        stragglers.straggler_factor(10, CODES["none"], other, curve="simulated") > 1
    )  # only backup reads it
    with pytest.raises(ValueError, match="unknown step-time distribution 'nope'"):
        mc.distribution("nope")


def test_the_none_closed_form_stands_for_a_lognormal_spread_of_about_13_percent():
    """docs/model.md §5: against a log-normal of σ = 0.131 the `none` closed form is within 4.2 % over
    n = 2 … 10⁵, and more than 5 % away at σ = 0.1 and 0.2 (its shape is not log n)."""
    n = mc.log_grid(1e5, 16)
    n = n[n >= 2]

    def miss(sigma):
        sim = mc.simulated_factor(n, "none", stats.lognorm(s=sigma), 0.9, 0.1)
        return mc.relative_miss(stragglers.straggler_factor(n, CODES["none"], ASM), sim).max()

    assert miss(0.131) == pytest.approx(0.042, abs=0.0005)
    assert miss(0.1) > 0.18 and miss(0.2) > 0.2


def test_straggler_curve_is_a_scenario_choice_row_by_row():
    """`straggler_curve: simulated` (issue 16 item 6) takes the simulated f(n) for none, threshold and
    backup and keeps relay's closed form; the default is the closed form. Per-row codes give what each
    curve gives alone, and the batch path equals the scalar one."""
    import dtsim
    from dtsim import load_scenario

    asm = Assumptions()
    n = np.array([2.0, 72.0, 1000.0, 72.0])
    strategy = np.array([0, 1, 2, 3])
    closed = stragglers.straggler_factor(n, strategy, asm)
    sim = stragglers.straggler_factor(n, strategy, asm, "simulated")
    mixed = stragglers.straggler_factor(n, strategy, asm, np.array([1, 0, 1, 1]))
    assert mixed.tolist() == [sim[0], closed[1], sim[2], closed[3]] and sim[3] == closed[3]
    # beyond the simulated curve's range only the rows that use it are refused
    far = np.array([1e9, 1e9])
    assert np.all(stragglers.straggler_factor(far, np.array([0, 0]), asm, np.array([0, 0])) > 1)
    with pytest.raises(ScenarioError, match="covers"):
        stragglers.straggler_factor(far, np.array([0, 0]), asm, np.array([0, 1]))

    def days(strategy, curve=None):
        over = {"straggler_strategy": strategy} | ({"straggler_curve": curve} if curve else {})
        return dtsim.simulate(load_scenario(preset="intellect-1", overrides=over))

    assert days("none").wall_clock_days == days("none", "closed-form").wall_clock_days
    for s in ("none", "threshold", "backup"):
        assert days(s, "simulated").breakdown_s["straggler"] > days(s).breakdown_s["straggler"], s
    assert days("relay", "simulated").wall_clock_days == days("relay").wall_clock_days
    combos = [
        ("closed-form", "none"),
        ("simulated", "none"),
        ("simulated", "backup"),
        ("closed-form", "relay"),
    ]
    batch = dtsim.simulate_batch(
        load_scenario(preset="intellect-1"),
        straggler_curve=[c for c, _ in combos],
        straggler_strategy=[s for _, s in combos],
    )
    for i, (c, s) in enumerate(combos):
        assert batch.result(i).wall_clock_days == days(s, c).wall_clock_days
    with pytest.raises(ScenarioError, match="straggler_curve"):
        load_scenario(preset="intellect-1", overrides={"straggler_curve": "fitted"})
