"""Shared fixtures. The oracle data is vendored under tests/data (see tests/data/README.md)."""

from __future__ import annotations

import pytest

from tests.oracle.mapping import MIRI, REFERENCE


def pytest_configure(config):
    if not MIRI.is_dir():
        raise pytest.UsageError(
            f"reference data not found at {REFERENCE}: the oracle tests need the vendored tests/data"
        )
