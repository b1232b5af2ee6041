"""Number formats that more than one interface shows (the CLI report and the web page)."""

from __future__ import annotations


def duration(seconds: float | None) -> str:
    """A duration in the unit that reads best: seconds below 2 min, minutes below 2 h, hours below
    2 days, else days; '—' when unknown."""
    if seconds is None:
        return "—"
    if seconds < 120:
        return f"{seconds:,.2f} s"
    if seconds < 7200:
        return f"{seconds / 60:,.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} days"
