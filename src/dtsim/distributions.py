"""Distributions of uncertain values: what a scenario field or an assumption may be given as instead of
a number (`{dist: triangular, low, mode, high}`, `--set mfu=0.3..0.5`), each mapped from a uniform
draw by its inverse CDF (scipy.stats). Used by the assumptions table (each entry's `uncertainty`) and
by `dtsim.analysis.uncertainty` (Monte Carlo) and `dtsim.analysis.sensitivity` (Sobol indices).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dtsim.errors import ScenarioError

KINDS = ("uniform", "triangular", "normal", "lognormal", "choice")
PARAMS = {
    "uniform": ("low", "high"),
    "triangular": ("low", "mode", "high"),
    "normal": ("mean", "sd"),
    "lognormal": ("median", "sigma"),
    "choice": ("values",),
}
OPTIONAL_PARAMS = {"normal": ("low", "high"), "lognormal": ("low", "high"), "choice": ("weights",)}


@dataclass(frozen=True)
class Distribution:
    """One field's distribution: `kind` (KINDS) and its parameters."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    origin: str = "scenario"  # or "assumptions table"

    def describe(self) -> str:
        if self.kind == "choice":
            return f"choice({', '.join(map(str, self.params['values']))})"
        names = PARAMS[self.kind] + tuple(k for k in OPTIONAL_PARAMS.get(self.kind, ()) if k in self.params)
        return f"{self.kind}({', '.join(f'{k}={self.params[k]:g}' for k in names)})"

    def ppf(self, u: np.ndarray) -> np.ndarray:
        """The inverse CDF at u ∈ [0, 1): the draws."""
        from scipy import stats

        p = self.params
        if self.kind == "uniform":
            return p["low"] + u * (p["high"] - p["low"])
        if self.kind == "triangular":
            width = p["high"] - p["low"]
            c = (p["mode"] - p["low"]) / width
            return stats.triang.ppf(u, c, loc=p["low"], scale=width)
        if self.kind == "choice":
            values = np.asarray(p["values"], dtype=object)
            cdf = np.cumsum(self._weights())
            idx = np.minimum(np.searchsorted(cdf, u, side="right"), len(values) - 1)
            out = values[idx]
            return out.astype(float) if all(is_number(v) for v in p["values"]) else out.astype(str)
        # normal / lognormal, optionally truncated: map u into the CDF's window [F(low), F(high)]
        if self.kind == "normal":
            dist = stats.norm(loc=p["mean"], scale=p["sd"])
        else:
            dist = stats.lognorm(s=p["sigma"], scale=p["median"])
        lo = dist.cdf(p["low"]) if "low" in p else 0.0
        hi = dist.cdf(p["high"]) if "high" in p else 1.0
        return dist.ppf(lo + u * (hi - lo))

    def point(self) -> Any:
        """The median (a choice: its most likely value, the first on a tie)."""
        if self.kind == "choice":
            return self.params["values"][int(np.argmax(self._weights()))]
        x = self.ppf(np.asarray([0.5]))[0]
        return x.item() if isinstance(x, np.generic) else x

    def _weights(self) -> np.ndarray:
        w = np.asarray(self.params.get("weights") or [1.0] * len(self.params["values"]), dtype=float)
        return w / w.sum()


def is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _finite(name: str, key: str, v: Any, spec: Any) -> float:
    if isinstance(v, str) and _is_numeric_text(v):
        v = float(v)
    if not is_number(v) or not math.isfinite(v):
        raise ScenarioError([(f"{name}.{key}", v, f"must be a finite number (in {spec!r})")])
    return float(v)


def make_distribution(name: str, spec: Mapping[str, Any]) -> Distribution:
    """A Distribution from a mapping {dist: kind, ...}, every parameter checked; errors name
    `name.<parameter>`, the value and what is allowed."""
    kind = spec.get("dist")
    if kind not in KINDS:
        raise ScenarioError([(f"{name}.dist", kind, f"unknown distribution; known: {', '.join(KINDS)}")])
    allowed = ("dist", *PARAMS[kind], *OPTIONAL_PARAMS.get(kind, ()))
    extra = [k for k in spec if k not in allowed]
    if extra:
        raise ScenarioError(
            [
                (
                    f"{name}.{extra[0]}",
                    spec[extra[0]],
                    f"not a parameter of {kind}; it takes {', '.join(allowed[1:])}",
                )
            ]
        )
    missing = [k for k in PARAMS[kind] if k not in spec]
    if missing:
        raise ScenarioError([(f"{name}.{missing[0]}", None, f"{kind} needs {', '.join(PARAMS[kind])}")])
    if kind == "choice":
        values = spec["values"]
        if not isinstance(values, list) or not values:
            raise ScenarioError([(f"{name}.values", values, "must be a non-empty list")])
        params: dict[str, Any] = {"values": list(values)}
        if "weights" in spec:
            w = spec["weights"]
            if not isinstance(w, list) or len(w) != len(values):
                raise ScenarioError([(f"{name}.weights", w, f"must be a list of {len(values)} numbers")])
            ws = [_finite(name, "weights", x, spec) for x in w]
            if any(x < 0 for x in ws) or sum(ws) <= 0:
                raise ScenarioError([(f"{name}.weights", w, "must be ≥ 0 with a positive sum")])
            params["weights"] = ws
        return Distribution(kind, params)
    params = {k: _finite(name, k, spec[k], spec) for k in allowed[1:] if k in spec}
    problems = []
    if kind == "uniform" and not params["low"] < params["high"]:
        problems.append((f"{name}.high", params["high"], f"must be above low = {params['low']:g}"))
    if kind == "triangular" and not params["low"] <= params["mode"] <= params["high"]:
        problems.append((f"{name}.mode", params["mode"], "must lie between low and high"))
    if kind == "triangular" and not params["low"] < params["high"]:
        problems.append((f"{name}.high", params["high"], f"must be above low = {params['low']:g}"))
    if kind == "normal" and not params["sd"] > 0:
        problems.append((f"{name}.sd", params["sd"], "must be > 0"))
    if kind == "lognormal":
        if not params["median"] > 0:
            problems.append((f"{name}.median", params["median"], "must be > 0"))
        if not params["sigma"] > 0:
            problems.append((f"{name}.sigma", params["sigma"], "must be > 0 (the σ of the logarithm)"))
        if "low" in params and params["low"] < 0:
            problems.append((f"{name}.low", params["low"], "must be ≥ 0 for a lognormal"))
    if (
        kind in ("normal", "lognormal")
        and "low" in params
        and "high" in params
        and not params["low"] < params["high"]
    ):
        problems.append((f"{name}.high", params["high"], f"must be above low = {params['low']:g}"))
    if problems:
        raise ScenarioError(problems)
    d = Distribution(kind, params)
    if kind in ("normal", "lognormal") and ("low" in params or "high" in params):
        probe = d.ppf(np.asarray([0.0, 0.5, 1.0 - 1e-12]))
        if not np.all(np.isfinite(probe)):
            raise ScenarioError([(name, spec, "the truncation window holds (numerically) no probability")])
    return d


_RANGE = re.compile(r"^\s*(\.?[^.:\s][^:]*?)\s*\.\.\s*(\.?[^.:\s].*?)\s*$")  # a..b; .3..0.5 too


_HALF_RANGE = re.compile(r"^\s*([-+]?[\d.][\d.eE+-]*)?\s*\.\.\s*([-+]?[\d.][\d.eE+-]*)?\s*$")


def parse_text(name: str, text: str) -> Distribution | None:
    """`a..b` (uniform) or `kind:p1:p2[:p3]` (`choice:a,b,c`) from `--set`; None when the text is not a
    distribution (an ordinary value)."""
    m = _RANGE.match(text)
    if m and _is_numeric_text(m.group(1)) and _is_numeric_text(m.group(2)):
        return make_distribution(name, {"dist": "uniform", "low": m.group(1), "high": m.group(2)})
    if _HALF_RANGE.match(text):
        raise ScenarioError([(name, text, "write a range as low..high (both numbers), e.g. 0.3..0.5")])
    kind, sep, rest = text.partition(":")
    if not sep or kind.strip().lower() not in KINDS:
        return None
    kind = kind.strip().lower()
    if kind == "choice":
        values = [_scalar(v.strip()) for v in rest.split(",")]
        if any(v == "" for v in values):
            raise ScenarioError([(name, text, "write choice:a,b,c (no empty value)")])
        return make_distribution(name, {"dist": "choice", "values": values})
    parts = rest.split(":")
    keys = PARAMS[kind] + OPTIONAL_PARAMS.get(kind, ())
    if not PARAMS[kind] or not len(PARAMS[kind]) <= len(parts) <= len(keys):
        form = ":".join([kind, *PARAMS[kind]])
        raise ScenarioError([(name, text, f"write {form} (numbers)")])
    return make_distribution(name, {"dist": kind, **dict(zip(keys, parts, strict=False))})


def _is_numeric_text(t: str) -> bool:
    try:
        return math.isfinite(float(t))
    except ValueError:
        return False


def _scalar(t: str) -> Any:
    try:
        x = float(t)
    except ValueError:
        return t
    return int(x) if x.is_integer() and "." not in t and "e" not in t.lower() else x
