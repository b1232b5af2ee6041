"""Number formats that more than one interface shows (the CLI report and the web page)."""

from __future__ import annotations

SECONDS_PER_DAY = 86400.0
# Where a duration is written in the next larger unit: from two of it (2 min, 2 h, 2 days), so a time
# reads at least "2.0" of its unit. `duration` and the sweep chart's time axis (web/charts.time_unit)
# both switch here.
MINUTES_FROM_S = 120.0
HOURS_FROM_S = 7200.0
DAYS_FROM_S = 2 * SECONDS_PER_DAY


def duration(seconds: float | None) -> str:
    """A duration in the unit that reads best: milliseconds below 1 s (3 significant figures, so a
    positive time never reads 0), seconds below 2 min, minutes below 2 h, hours below 2 days, else
    days; '—' when unknown (None or NaN)."""
    if seconds is None or seconds != seconds:
        return "—"
    if 0 < seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < MINUTES_FROM_S:
        return f"{seconds:,.2f} s"
    if seconds < HOURS_FROM_S:
        return f"{seconds / 60:,.1f} min"
    if seconds < DAYS_FROM_S:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / SECONDS_PER_DAY:,.1f} days"


def days_text(days: float | None) -> str:
    """A duration given in days (a result's wall_clock_days, effective_days, max_days), in the unit
    that reads best (`duration`): a run shorter than two days in hours, minutes, seconds or
    milliseconds, never "0.0 days" for a positive time; '—' when unknown."""
    return "—" if days is None else duration(days * SECONDS_PER_DAY)
