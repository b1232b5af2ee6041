"""Maximum useful training-run length (MIRI simulator docs §7; Epoch AI, "The Longest Training Run")."""

from __future__ import annotations

import math
import re

import numpy as np

_GROWTH = re.compile(
    r"^\s*(?P<num>[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)\s*(?P<unit>%|x|×|oom)\s*(/\s*(yr|year|y))?\s*$",
    re.IGNORECASE,
)
GROWTH_FORMS = "'37%/yr', '1.37x/yr' (or ×/yr) or '0.137 OOM/yr'"


def parse_growth(text: str) -> float:
    """A growth rate as orders of magnitude per year.

    '37%/yr' → log10(1.37); '1.37x/yr' → log10(1.37); '0.137 OOM/yr' → 0.137. Raises ValueError with
    the accepted forms for anything else (a bare number is ambiguous, so it is refused).
    """
    if not isinstance(text, str):
        raise ValueError(f"a bare number is ambiguous; give a rate with a unit: {GROWTH_FORMS}")
    m = _GROWTH.match(text)
    if not m:
        raise ValueError(f"not a growth rate; use {GROWTH_FORMS}")
    value = float(m.group("num"))
    unit = m.group("unit").lower()
    if unit == "oom":
        oom = value
    elif unit == "%":
        if value <= -100:
            raise ValueError("a percentage growth must be above −100%/yr")
        oom = math.log10(1.0 + value / 100.0)
    else:
        if value <= 0:
            raise ValueError("a growth factor must be positive (1.0x/yr means no growth)")
        oom = math.log10(value)
    if not math.isfinite(oom) or abs(oom) > 100:
        raise ValueError("growth rate out of range (|rate| must be below 100 OOM/yr)")
    return oom


def max_run_days(total_growth_oom, days_per_year):
    """L = 1 / ((g_H + g_S + g_I) · ln 10) years, in days (MIRI simulator docs §7.1). Where the total
    growth is not above 0 OOM/yr waiting never loses, so there is no finite maximum: infinity (a
    negative L would read as an impossible deadline)."""
    g = np.asarray(total_growth_oom, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(g > 0, days_per_year / (g * np.log(10.0)), np.inf)
