"""Shared fixtures. The oracle data is vendored under tests/data (see tests/data/README.md)."""

from __future__ import annotations

import pytest

from tests.oracle.mapping import MIRI, REFERENCE
from tests.web_support import server  # noqa: F401  (a `dtsim serve` subprocess for the browser tests)


def pytest_configure(config):
    if not MIRI.is_dir():
        raise pytest.UsageError(
            f"reference data not found at {REFERENCE}: the oracle tests need the vendored tests/data"
        )


@pytest.fixture(scope="session")
def ui_client():
    """A TestClient of the API with the web UI mounted, started once: NiceGUI binds to one FastAPI app
    per process, so every test that requests pages shares this one."""
    from fastapi.testclient import TestClient

    from dtsim.interfaces.api.app import create_app

    with TestClient(create_app(ui=True), raise_server_exceptions=False) as client:
        yield client
