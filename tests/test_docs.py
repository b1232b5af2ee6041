"""Examples in docstrings and docs stay true."""

from __future__ import annotations

import doctest

import dtsim


def test_package_docstring_example():
    result = doctest.testmod(dtsim)
    assert result.attempted >= 3 and result.failed == 0
