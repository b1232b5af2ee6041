"""Examples in docstrings and docs stay true."""

from __future__ import annotations

import doctest

import dtsim


def test_package_docstring_example():
    result = doctest.testmod(dtsim)
    assert result.attempted >= 3 and result.failed == 0


def test_regenerating_commands_print_help_and_write_only_where_told(tmp_path, monkeypatch):
    """`python -m dtsim.validation.docs --help` wrote docs/validation.md's tables into a file named
    "--help", and `python -m dtsim.validation.model_error --help` rewrote the catalog's interval file:
    --help only prints help now, and the target is the one given."""
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    from dtsim.interfaces import docs as assumption_docs
    from dtsim.validation import docs as validation_docs
    from dtsim.validation import model_error

    monkeypatch.chdir(tmp_path)
    for main in (validation_docs.main, assumption_docs.main):
        with pytest.raises(SystemExit) as exit_:
            main(["docs.py", "--help"])
        assert exit_.value.code == 0
        assert list(tmp_path.iterdir()) == []  # nothing written, no file called --help
        assert main(["docs.py", str(tmp_path / "out.md")]) == 0
        assert (tmp_path / "out.md").read_text(encoding="utf-8").startswith("#")
        (tmp_path / "out.md").unlink()
    catalog = model_error.target()
    before = catalog.stat().st_mtime_ns
    out = subprocess.run(
        [sys.executable, "-m", "dtsim.validation.model_error", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Regenerate" in out.stdout and catalog.stat().st_mtime_ns == before
    assert list(Path(tmp_path).iterdir()) == []
