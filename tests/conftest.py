"""Shared fixtures. The oracle data lives in ../shared/reference beside the checkout (CI provides it)."""

from __future__ import annotations

import pytest

from tests.oracle.mapping import MIRI, REFERENCE


def pytest_configure(config):
    if not MIRI.is_dir():
        raise pytest.UsageError(
            f"reference data not found at {REFERENCE}: the oracle tests need ../shared/reference beside the checkout"
        )
