"""Numerical properties of the physics primitives."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dtsim.assumptions import defaults
from dtsim.physics import efficiency, numeric, quality

ASM = defaults()


def _bisect(loss):
    lo, hi = 1e-6, 1e30
    for _ in range(300):
        mid = math.sqrt(lo * hi)
        if quality.chinchilla_loss(mid, 25.6 * mid, ASM) > loss:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


@pytest.mark.parametrize("n", [1e6, 1e8, 1e10, 1e12, 1e14])
@pytest.mark.parametrize("mult", [1.0, 1.01, 1.5, 10.0])
def test_newton_solves_the_compute_optimal_size_to_machine_precision(n, mult):
    loss = float(quality.chinchilla_loss(n, 25.6 * n, ASM)) * mult
    got = float(quality.compute_optimal_params(loss, ASM))
    assert got == pytest.approx(_bisect(loss), rel=1e-12)
    assert float(quality.chinchilla_loss(got, 25.6 * got, ASM)) == pytest.approx(loss, rel=1e-14)


def test_chi_is_one_for_a_compute_optimal_run():
    n = 70e9
    c = 6 * n * 25.6 * n
    assert float(quality.chi(n, 25.6 * n, c, 1.0, ASM)) == pytest.approx(1.0, rel=1e-12)
    assert float(quality.chi(n, 100 * n, 6 * n * 100 * n, 1.0, ASM)) < 1.0


def test_power_is_the_same_for_every_shape():
    x = np.linspace(0.5, 1.0, 101)
    e = np.full(101, 2.0)
    by_array = numeric.power(x, e)
    by_scalar = np.array([float(numeric.power(v, 2.0)) for v in x])
    assert np.array_equal(by_array, by_scalar)


def test_log_interp_is_constant_outside_and_exact_at_keys():
    keys = ASM.compression_keys
    rows = ASM.compression_table[1, 1]
    assert efficiency.log_interp(0.5, keys, rows) == rows[0]
    assert efficiency.log_interp(1e6, keys, rows) == rows[-1]
    for k, v in zip(keys, rows, strict=True):
        assert efficiency.log_interp(k, keys, rows) == pytest.approx(v, abs=1e-15)
