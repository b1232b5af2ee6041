"""Numerical helpers that keep a batch bit-for-bit equal to a single run."""

from __future__ import annotations

import numpy as np


def power(base, exponent):
    """base ** exponent through NumPy's general power loop for every shape.

    NumPy computes `x ** y` exactly (x·x, sqrt) when y is a scalar 2 or 0.5 but with the general
    pow routine when y is an array, and the two can differ in the last bit. NumPy 2.4 also takes the
    exact path for an exponent that is one value broadcast over the base (a stride-0 operand, as a
    one-element array is), but not for a base of one element: pow(10056, 0.5) came out
    0x1.911e51d8a5af1p+6 in a batch of two and 0x1.911e51d8a5af0p+6 alone. A batch would then disagree
    with a single run of the same row, so both operands are laid out in full (contiguous, the
    broadcast shape, a single value as one element) and every power goes through the general routine.
    """
    b, e = np.broadcast_arrays(np.asarray(base, dtype=float), np.asarray(exponent, dtype=float))
    shape = b.shape  # a 0-d pair takes NumPy's scalar path (exact for 0.5 too): computed as one element
    return np.power(np.array(b, copy=True).reshape(-1), np.array(e, copy=True).reshape(-1)).reshape(shape)


def select(condition, if_true, if_false):
    """np.where(condition, if_true, if_false) that keeps a shared (0-d) condition from broadcasting.

    When the condition is the same for every row the result is simply one of the two arrays, whose
    values are exactly those np.where would give; it stays as small as that array, so a batch that
    varies one field does not materialize every other column at full length.
    """
    c = np.asarray(condition)
    if c.ndim == 0:
        return np.asarray(if_true if c else if_false, dtype=np.result_type(if_true, if_false))
    return np.where(c, if_true, if_false)


def broadcast(*arrays):
    """np.broadcast_arrays, skipping its cost when every input already has one shape (a single run)."""
    arrays = [np.asarray(a) for a in arrays]
    shape = arrays[0].shape
    if all(a.shape == shape for a in arrays[1:]):
        return arrays
    return np.broadcast_arrays(*arrays)
