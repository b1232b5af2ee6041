"""The one way dtsim opens matplotlib: check the output file's kind, then load pyplot headless."""

from __future__ import annotations

from pathlib import Path

from dtsim.errors import ScenarioError

FORMATS = (".png", ".svg", ".pdf")


def pyplot(path: Path, option: str = "--plot"):
    """matplotlib.pyplot on the Agg backend, for writing `path`; a clear error for another file kind or
    when matplotlib (the `plot` extra) is missing."""
    if Path(path).suffix.lower() not in FORMATS:
        raise ScenarioError([(option, str(path), "must end in .png, .svg or .pdf")])
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ScenarioError(
            [(option, str(path), "needs matplotlib: python3 -m pip install 'dtsim[plot]'")]
        ) from None
    return plt
