"""Input uncertainty: scenario fields given as distributions, drawn by scrambled Sobol sampling and run
through the batch path, summarised as quantiles, moments and probabilities.

A field may be a distribution wherever a scenario is given:

- in YAML/JSON, a mapping with `dist`: `mfu: {dist: triangular, low: 0.3, mode: 0.4, high: 0.5}`,
  `{dist: uniform, low, high}`, `{dist: normal, mean, sd[, low, high]}`,
  `{dist: lognormal, median, sigma[, low, high]}` (σ of the logarithm), `{dist: choice, values: [...],
  weights: [...]}`;
- on the command line, `--set mfu=0.3..0.5` (uniform), `--set latency_ms=lognormal:100:0.3`,
  `triangular:0.3:0.4:0.5`, `normal:0.4:0.05`, `uniform:0.3:0.5`, `choice:fp16,fp8`.

`normal` and `lognormal` may be truncated to [low, high]; a draw outside what the field allows is an
error naming the field, never clamped. The point scenario (what `simulate` reports without
`--uncertainty`) takes each distribution's median (a choice: its most likely value).

Sampling: N points of a scrambled Sobol sequence in [0, 1)^d (scipy.stats.qmc.Sobol: linear matrix
scrambling and a digital shift, seeded), rounded up to a power of two (Sobol points balance only at 2^m), each coordinate mapped
through its field's inverse CDF (integer fields rounded to the nearest integer). Quantiles are the
empirical ones; the standard error of a quantile is the half-width of its distribution-free 95 %
order-statistic interval over 1.96 (the binomial ranks n·q ± 1.96·√(n·q(1−q)): Conover 1999,
"Practical Nonparametric Statistics", §3.2), conservative for a scrambled Sobol sample, which converges
faster than an independent one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dtsim.distributions import (  # noqa: F401  (re-exported: the uncertainty API)
    KINDS,
    OPTIONAL_PARAMS,
    PARAMS,
    Distribution,
    is_number,
    make_distribution,
    parse_text,
)
from dtsim.errors import ScenarioError, check_folder

DEFAULT_LEVELS = (0.1, 0.5, 0.9)
MAX_SAMPLES = 1 << 24  # 16.8 M draws
CHUNK = 1 << 16
# What `simulate --uncertainty` summarises (every numeric batch output can be asked for by name).
HEADLINE = (
    "wall_clock_days",
    "effective_days",
    "global_mfu",
    "efficiency",
    "outer_step_s",
    "gpu_hours",
    "cost_usd",
    "energy_kwh",
)


def split_distributions(
    fields: Mapping[str, Any], allowed: Sequence[str], text_values: bool = False
) -> tuple[dict[str, Any], dict[str, Distribution]]:
    """The scenario fields with each distribution replaced by its point value, and the distributions
    by field (`assumptions.NAME` for an assumption). `text_values`: strings may be distributions too
    (values from `--set`). A distribution on a field the batch path cannot vary is an error naming it."""
    point: dict[str, Any] = {}
    dists: dict[str, Distribution] = {}
    for name, value in fields.items():
        d = None
        if isinstance(value, Mapping) and "dist" in value:
            d = make_distribution(name, value)
        elif text_values and isinstance(value, str) and name != "name":
            d = parse_text(name, value)
        if name == "assumptions" and isinstance(value, Mapping):
            point[name] = _split_assumptions(value, dists, text_values)
            continue
        if d is None:
            point[name] = value
            continue
        if name not in allowed:
            raise ScenarioError(
                [(name, value, f"cannot take a distribution; fields that can: {', '.join(allowed)}")]
            )
        dists[name] = d
        point[name] = d.point()
    return point, dists


def _split_assumptions(values: Mapping[str, Any], dists: dict[str, Distribution], text_values: bool) -> dict:
    """A scenario's `assumptions` overrides with each distribution at its point, the distributions
    added to `dists` as `assumptions.NAME` (numeric assumptions of the table only)."""
    from dtsim.catalog import assumption_rows

    out = {}
    for k, v in values.items():
        where = f"assumptions.{k}"
        d = None
        if isinstance(v, Mapping) and "dist" in v:
            d = make_distribution(where, v)
        elif text_values and isinstance(v, str):
            d = parse_text(where, v)
        if d is None:
            out[k] = v
            continue
        row = assumption_rows().get(k)
        if row is None or row.get("range") is None or d.kind == "choice":
            raise ScenarioError(
                [(where, d.describe(), "only a numeric assumption of the table can take a distribution")]
            )
        dists[where] = d
        out[k] = d.point()
    return out


# --- sampling and summary --------------------------------------------------------------------------------------


def sample_count(n: int) -> int:
    """N rounded up to a power of two (Sobol points balance at 2^m), or an error naming --uncertainty."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ScenarioError([("--uncertainty", n, "must be a whole number ≥ 1 (samples to draw)")])
    if n > MAX_SAMPLES:
        raise ScenarioError([("--uncertainty", n, f"must be ≤ {MAX_SAMPLES:,}")])
    return 1 << max(0, math.ceil(math.log2(n)))


def check_seed(seed: Any) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ScenarioError([("--seed", seed, "must be a whole number ≥ 0")])


@dataclass(frozen=True)
class Correlation:
    """Spearman's rank correlation ρ between two uncertain inputs (fields or `assumptions.NAME`)."""

    a: str
    b: str
    rho: float


class Inputs(dict):
    """The uncertain inputs by name (Distribution values) and the correlations stated between them."""

    correlations: tuple[Correlation, ...] = ()


def parse_correlation(text: Any, where: str = "--corr") -> Correlation:
    """`a,b=0.5` (from --corr) or {fields: [a, b], rho: 0.5} (a scenario file's `correlations`)."""
    if isinstance(text, Mapping):
        pair, rho = text.get("fields"), text.get("rho")
        if set(text) != {"fields", "rho"} or not isinstance(pair, list) or len(pair) != 2:
            raise ScenarioError([(where, text, "write {fields: [FIELD, FIELD], rho: R}")])
    else:
        left, sep, rho = str(text).partition("=")
        pair = [p.strip() for p in left.split(",")]
        if not sep or len(pair) != 2 or not all(pair):
            raise ScenarioError([(where, text, "write FIELD,FIELD=RHO, e.g. mfu,bandwidth_mbps=0.5")])
    try:
        r = float(rho)
    except (TypeError, ValueError):
        raise ScenarioError([(where, text, "ρ must be a number between −1 and 1")]) from None
    if not -1.0 < r < 1.0:
        raise ScenarioError([(where, text, "ρ must lie strictly between −1 and 1")])
    if pair[0] == pair[1]:
        raise ScenarioError([(where, text, "correlates a field with itself")])
    return Correlation(str(pair[0]), str(pair[1]), r)


def correlation_factor(names: Sequence[str], correlations: Sequence[Correlation]) -> np.ndarray | None:
    """The Cholesky factor of the normal copula's correlation matrix over `names`, or None when no
    correlation is stated. A rank correlation ρ_s becomes the normal correlation 2·sin(π·ρ_s/6), the
    exact relation for a normal copula (Kruskal 1958, "Ordinal measures of association", JASA 53), so
    the draws keep each input's own distribution and have the stated rank correlation (Iman and
    Conover 1982 induce rank correlation in the same spirit)."""
    if not correlations:
        return None
    index = {k: i for i, k in enumerate(names)}
    r = np.eye(len(names))
    for c in correlations:
        for f in (c.a, c.b):
            if f not in index:
                raise ScenarioError(
                    [
                        (
                            "--corr",
                            f"{c.a},{c.b}={c.rho:g}",
                            f"{f} is not an uncertain input; inputs: {', '.join(names)}",
                        )
                    ]
                )
        i, j = index[c.a], index[c.b]
        r[i, j] = r[j, i] = 2.0 * math.sin(math.pi * c.rho / 6.0)
    try:
        return np.linalg.cholesky(r)
    except np.linalg.LinAlgError:
        pairs = "; ".join(f"{c.a},{c.b}={c.rho:g}" for c in correlations)
        raise ScenarioError(
            [
                (
                    "--corr",
                    pairs,
                    "these correlations cannot hold together (the matrix is not positive definite)",
                )
            ]
        ) from None


def draws(
    dists: Mapping[str, Distribution],
    n: int,
    seed: int | None,
    integer_fields=(),
    start: int = 0,
    correlations: Sequence[Correlation] | None = None,
) -> dict[str, np.ndarray]:
    """Draws start..start+n−1 of every distribution, jointly from one scrambled Sobol sequence
    (independent inputs, unless correlations are stated: then through a normal copula). A block is exactly that stretch of the whole sequence (the engine is fast-
    forwarded to it), so a run split into blocks, on one process or many, draws the same points."""
    import warnings

    from scipy.stats import qmc

    if not dists:
        return {}
    check_seed(seed)
    engine = qmc.Sobol(d=len(dists), scramble=True, rng=np.random.default_rng(seed))
    if start:
        engine.fast_forward(start)
    with warnings.catch_warnings():
        # a block of a power-of-two run need not be a power of two itself; the whole run balances
        warnings.filterwarnings("ignore", message=".*balance properties.*")
        u = engine.random(n)
    stated = correlations if correlations is not None else getattr(dists, "correlations", ())
    factor = correlation_factor(sorted(dists), stated)
    if factor is not None:  # a normal copula: u → z → correlated z → u, row by row
        from scipy.stats import norm

        z = norm.ppf(np.clip(u, 2.0**-53, 1.0 - 2.0**-53))
        u = norm.cdf(z @ factor.T)
    out = {}
    # one Sobol dimension per field in name order, so the order the fields were given in does not matter
    for j, name in enumerate(sorted(dists)):
        d = dists[name]
        x = d.ppf(u[:, j])
        if name in integer_fields and x.dtype.kind == "f":
            x = np.round(x)
        out[name] = x
    return out


# --- assumptions a run never reads ---------------------------------------------------------------------------

# Base points of the screen for the assumptions a run never reads: Sobol draws of every input, each taken
# with one assumption at its low end and then at its high end (2 × 64 rows per assumption: ~5 ms for the
# table's 22 on the batch path). A cost setting, not a model assumption.
SCREEN_DRAWS = 64
SCREEN_ENDS = (0.001, 0.999)  # the ends an assumption is taken to: its 0.1 % and 99.9 % quantiles


def unread_assumptions(
    dists: Mapping[str, Distribution],
    evaluate: Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray] | None],
    at: Mapping[str, np.ndarray] | None = None,
    integer_fields: Sequence[str] = (),
) -> list[str]:
    """The assumptions table's distributions in `dists` that this run never reads, so drawing them would
    list inputs that change nothing (and let noise pick one as a driver). At the screen's base points
    (screen_points: Sobol draws of every input, every value of a choice, the ends of the user's own
    distributions, each at a row of `at`: a sweep's grid points), each table assumption is set to its low end and then to its high end (SCREEN_ENDS) with all else held; one whose two ends
    give identical outputs (every column `evaluate` returns, compared exactly) at every draw is unread.
    A one-at-a-time screen from scattered base points (Morris 1991, "Factorial sampling plans for
    preliminary computational experiments", Technometrics 33(2)), taken to each distribution's ends.
    The user's own distributions, and table inputs in a stated correlation, are always drawn.
    `evaluate(values)` returns the outputs by name, one value per row, or None when a draw is not a value
    its field takes (the run itself then says so: nothing is dropped)."""
    stated = {n for c in getattr(dists, "correlations", ()) for n in (c.a, c.b)}
    candidates = [k for k, d in dists.items() if d.origin == "assumptions table" and k not in stated]
    if not candidates:
        return []
    base = screen_points(dists, at, integer_fields)
    m = len(next(iter(base.values())))
    rows = {k: np.tile(v, 2 * len(candidates)) for k, v in base.items()}
    for j, name in enumerate(candidates):
        low, high = dists[name].ppf(np.asarray(SCREEN_ENDS))
        rows[name][2 * j * m : (2 * j + 1) * m] = low
        rows[name][(2 * j + 1) * m : (2 * j + 2) * m] = high
    out = evaluate(rows)
    if out is None:
        return []
    n = 2 * m * len(candidates)
    columns = [a for a in (np.asarray(v) for v in out.values()) if a.shape == (n,)]

    def same(a: np.ndarray, j: int) -> bool:
        lo, hi = a[2 * j * m : (2 * j + 1) * m], a[(2 * j + 1) * m : (2 * j + 2) * m]
        return bool(np.array_equal(lo, hi, equal_nan=a.dtype.kind in "fc"))

    return [name for j, name in enumerate(candidates) if all(same(a, j) for a in columns)]


def screen_points(
    dists: Mapping[str, Distribution],
    at: Mapping[str, np.ndarray] | None = None,
    integer_fields: Sequence[str] = (),
) -> dict[str, np.ndarray]:
    """The base points of the unread-assumption screen: max(SCREEN_DRAWS, rows of `at`) Sobol draws of
    every input, each at a row of `at` (cycled); every value of a choice input among them (cycled, a
    rare one included: a review's case, relay drawn 1 % of the time, read an assumption no Sobol point
    of 64 drew it at), and two more points for each of the user's own distributions, at its ends."""
    g = len(next(iter(at.values()))) if at else 0
    m = max(SCREEN_DRAWS, g)
    base = draws(dists, m, 0, integer_fields, correlations=getattr(dists, "correlations", ()))
    for name, d in dists.items():
        if d.kind == "choice":
            values = np.asarray(d.params["values"])  # its own dtype: a draw's '<U4' would cut 'relay'
            base[name] = values[np.arange(m) % len(values)]
    if at:
        base |= {k: np.asarray(v)[np.arange(m) % g] for k, v in at.items()}
    own = [k for k, d in dists.items() if d.origin != "assumptions table" and d.kind != "choice"]
    if own:
        extra = {k: np.resize(v, 2 * len(own)) for k, v in base.items()}
        for j, name in enumerate(own):
            ends = dists[name].ppf(np.asarray(SCREEN_ENDS))
            if name in integer_fields:
                ends = np.round(ends)
            extra[name][2 * j : 2 * j + 2] = ends
        base = {k: np.concatenate([v, extra[k]]) for k, v in base.items()}
    return base


def without(dists: Mapping[str, Distribution], names: Sequence[str]) -> Inputs:
    """`dists` less `names`, keeping the correlations stated."""
    kept = Inputs({k: d for k, d in dists.items() if k not in names})
    kept.correlations = tuple(getattr(dists, "correlations", ()))
    return kept


def unread_note(unread: Sequence[str], reader: str = "of this run") -> str:
    """What a report says of the assumptions held because none changes an output `reader`."""
    names = ", ".join(k.removeprefix("assumptions.") for k in unread)
    return (
        f"held at their values, as none changes an output {reader}: {names} (each taken from its low "
        f"to its high end changed none at {SCREEN_DRAWS} or more screened draws of the other inputs, every "
        "value of a choice and each of your distributions' ends among them)"
    )


def split_inputs(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Drawn inputs as (scenario fields, assumption rows by name): `assumptions.NAME` → NAME."""
    fields = {k: v for k, v in values.items() if not k.startswith("assumptions.")}
    return fields, {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("assumptions.")}


def batch_columns(base: Any) -> Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray] | None]:
    """unread_assumptions' `evaluate` for the decentralized model: every column of the batch path."""
    from dtsim.models.decentralized.engine import simulate_batch

    def evaluate(values: dict[str, np.ndarray]) -> Mapping[str, np.ndarray] | None:
        fields, asm = split_inputs(values)
        try:
            return simulate_batch(base, assumption_rows=asm, **fields).columns
        except ScenarioError:
            return None

    return evaluate


def quantile_se(x: np.ndarray, q: float) -> float:
    """Standard error of the q-quantile of the sorted sample x: the half-width of the distribution-free
    95 % interval between the order statistics at ranks n·q ± 1.96·√(n·q(1−q)), over 2 × 1.96."""
    n = len(x)
    half = 1.96 * math.sqrt(n * q * (1.0 - q))
    # Conover's ranks are 1-based: rank r is x[r − 1]
    lo = int(max(0, math.floor(n * q - half) - 1))
    hi = int(min(n - 1, math.ceil(n * q + half) - 1))
    return float(x[hi] - x[lo]) / (2.0 * 1.96)


def summarise(values: np.ndarray, levels: Sequence[float]) -> dict[str, Any]:
    """Quantiles (p10, p50, …), mean, std, the mean's standard error and each quantile's, over the
    finite draws; `finite` is their share (an output can be undefined on some draws)."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    x = np.sort(v[ok])
    out: dict[str, Any] = {"finite": float(ok.mean()) if len(v) else 0.0}
    if len(x) == 0:
        out.update({level_name(q): None for q in levels})
        out.update({"mean": None, "std": None, "se": None, "quantile_se": {}})
        return out
    for q in levels:
        out[level_name(q)] = float(np.quantile(x, q))
    constant = x[0] == x[-1]  # (a sum of equal values is not exact in floating point)
    std = 0.0 if constant else float(x.std(ddof=1))
    out["mean"] = float(x[0]) if constant else float(x.mean())
    out["std"] = std
    out["se"] = std / math.sqrt(len(x))
    out["quantile_se"] = {level_name(q): quantile_se(x, q) for q in levels}
    return out


def level_name(q: float) -> str:
    """The name of a quantile: p10, p2.5, p99.99999 (enough digits that two levels never share one)."""
    return f"p{100 * q:.10g}"


_PROB = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|==|!=|<|>)\s*(\S.*?)\s*$")


def probability(
    expr: str, columns: Mapping[str, np.ndarray], labels: Mapping[str, Sequence[str]] | None = None
) -> dict[str, Any]:
    """P(expr) over the draws where the output is defined, for `output<=x`, `<`, `>=`, `>`, `==`, `!=`
    (text outputs such as mode: `mode==flat-diloco`, checked against `labels`; yes/no outputs:
    `feasible==true`), with its binomial standard error √(p(1−p)/n)."""
    m = _PROB.match(expr)
    if not m:
        raise ScenarioError(
            [("--prob", expr, "write OUTPUT<=NUMBER (or <, >=, >, ==, !=), e.g. wall_clock_days<=180")]
        )
    name, op, rhs = m.groups()
    if name not in columns:
        raise ScenarioError([("--prob", name, f"unknown output; known: {', '.join(sorted(columns))}")])
    col = np.asarray(columns[name])
    defined = np.ones(len(col), dtype=bool)
    if col.dtype.kind == "b":
        if rhs.lower() not in ("true", "false", "1", "0") or op not in ("==", "!="):
            raise ScenarioError([("--prob", expr, f"{name} is yes/no: write {name}==true or {name}==false")])
        ref: Any = rhs.lower() in ("true", "1")
    elif col.dtype.kind in "fiu":
        try:
            ref = float(rhs)
        except ValueError:
            raise ScenarioError([("--prob", rhs, f"{name} is a number: compare it with a number")]) from None
        if not math.isfinite(ref):
            raise ScenarioError([("--prob", rhs, "must be a finite number")])
        defined = np.isfinite(col)
    else:
        if op not in ("==", "!="):
            raise ScenarioError([("--prob", expr, f"{name} is text: use == or !=")])
        known = labels.get(name) if labels else None
        if known is not None and rhs not in known:
            raise ScenarioError([("--prob", rhs, f"is not a value of {name}; known: {', '.join(known)}")])
        ref = rhs
    ops: dict[str, Callable[[Any, Any], Any]] = {
        "<=": np.less_equal,
        "<": np.less,
        ">=": np.greater_equal,
        ">": np.greater,
        "==": np.equal,
        "!=": np.not_equal,
    }
    n = int(defined.sum())
    if n == 0:
        return {"expr": f"{name}{op}{rhs}", "p": None, "se": None, "defined": 0.0}
    hits = ops[op](col[defined], ref)
    p = float(np.mean(hits))
    # over the draws where the output is defined (an infeasible run has no wall-clock time), as the
    # quantiles are; `defined` is their share
    return {"expr": f"{name}{op}{rhs}", "p": p, "se": math.sqrt(p * (1.0 - p) / n), "defined": n / len(col)}


def yes_no(flags: np.ndarray) -> dict[str, float]:
    """The share of draws where a yes/no output holds and where it does not (a share of 0 left out)."""
    p = float(np.mean(flags))
    return {k: v for k, v in (("yes", p), ("no", 1.0 - p)) if v > 0}


def share(p: float) -> str:
    """A share as a whole percentage that never rounds a 'sometimes' to 0 % or 100 %."""
    if 0.0 < p < 0.005:
        return "<1%"
    if 0.995 <= p < 1.0:
        return ">99%"
    return f"{p:.0%}"


def counts(codes: np.ndarray, names: np.ndarray) -> dict[str, float]:
    """The share of draws of each value of a coded output (mode, bottleneck, feasibility), largest
    first, values never drawn left out."""
    c = np.bincount(np.asarray(codes, dtype=int).reshape(-1), minlength=len(names))
    order = np.argsort(-c, kind="stable")
    return {str(names[i]): float(c[i] / c.sum()) for i in order if c[i] > 0}


# --- Monte Carlo through the batch path -------------------------------------------------------------------------


@dataclass
class MonteCarlo:
    """What `--uncertainty N` adds to a report: per output its quantiles and moments, the share of
    each mode / bottleneck / feasibility verdict, the probabilities asked for, and warnings."""

    samples: int
    requested: int
    seed: int | None
    levels: tuple[float, ...]
    inputs: dict[str, str]  # field → the distribution, described
    outputs: dict[str, dict[str, Any]]
    shares: dict[str, dict[str, float]]
    probabilities: list[dict[str, Any]]
    warnings: list[str]
    seconds: float
    drivers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # output → top inputs (ρ)
    seed_given: bool = True  # False: the seed was drawn (and is reported, so the run can be repeated)
    samples_path: str | None = None  # where every draw was written (--samples)
    correlations: list[dict[str, Any]] = field(default_factory=list)  # the rank correlations stated
    unread: list[str] = field(default_factory=list)  # table assumptions held: none changes an output

    def as_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "requested": self.requested,
            "seed": self.seed,
            "sampler": "scrambled Sobol (scipy.stats.qmc.Sobol), rounded up to a power of two",
            "levels": list(self.levels),
            "inputs": dict(self.inputs),
            "outputs": self.outputs,
            "shares": self.shares,
            "probabilities": self.probabilities,
            "warnings": list(self.warnings),
            "drivers": self.drivers,
            "seed_drawn": not self.seed_given,
            "samples_file": self.samples_path,
            "correlations": self.correlations,
            "unread": list(self.unread),
        }

    def json_parts(self) -> dict[str, Any]:
        """What `--json` adds beside a command's point result: `uncertainty` (each output's summary),
        `probabilities` and `monte_carlo` (the rest: draws, seed, inputs, drivers, shares, warnings)."""
        d = self.as_dict()
        return {"uncertainty": d.pop("outputs"), "probabilities": d.pop("probabilities"), "monte_carlo": d}


def parse_levels(text: str | None) -> tuple[float, ...]:
    """`--levels 5,50,95` (percent) → (0.05, 0.5, 0.95); default P10, P50, P90."""
    if text is None:
        return DEFAULT_LEVELS
    out = []
    for part in text.split(","):
        try:
            v = float(part)
        except ValueError:
            raise ScenarioError(
                [("--levels", text, "write percentages between 0 and 100, e.g. 10,50,90")]
            ) from None
        if not 0.0 < v < 100.0:
            raise ScenarioError([("--levels", part, "each level must be above 0 and below 100 (percent)")])
        out.append(v / 100.0)
    if max(out) <= 0.01:  # every level at or under 1 %: fractions written where percent is asked
        raise ScenarioError(
            [
                (
                    "--levels",
                    text,
                    "levels are percentages (10,50,90 for P10, P50, P90), and every one here is 1 or less, "
                    "as fractions would be; for tail levels under 1 % name a level above 1 too, e.g. 0.1,50",
                )
            ]
        )
    # one column per name: levels that print alike (to ten significant digits) are one level
    by_name = {level_name(q): q for q in sorted(out)}
    return tuple(sorted(by_name.values()))


# text outputs travel as integer codes (engine.TEXT_OUTPUTS, spelled out here to keep the import light;
# tests/test_failures.py checks the two agree)
CODED = {"mode": "mode_code", "bottleneck": "bottleneck_code", "recovery": "recovery_code"}


def _labels() -> dict[str, np.ndarray]:
    from dtsim.models.decentralized.engine import TEXT_OUTPUTS

    return {name: np.asarray(TEXT_OUTPUTS[name][1]) for name in CODED}


def evaluate_block(
    base: Any,
    dists: Mapping[str, Distribution],
    seed: int | None,
    start: int,
    stop: int,
    keep: Sequence[str],
    with_inputs: bool = False,
    correlations: Sequence[Correlation] = (),
) -> dict[str, Any]:
    """Rows start..stop−1 of a Monte Carlo run: their draws through the batch path. Returns
    {"columns", "inputs", "known"}, or {"problems"} when a draw is not a value its field takes (returned,
    not raised, so that it crosses a Dask worker boundary as data). Runs on whichever process gets it."""
    from dtsim.schema.fields import INTEGER_FIELDS

    drawn = draws(dists, stop - start, seed, INTEGER_FIELDS, start, correlations)
    res = evaluate_rows(base, drawn, keep, dists)
    res["inputs"] = drawn if with_inputs else {}
    return res


def evaluate_rows(
    base: Any, values: Mapping[str, np.ndarray], keep: Sequence[str], dists: Mapping[str, Distribution]
) -> dict[str, Any]:
    """Rows with the given input values (scenario fields and `assumptions.NAME`) through the batch
    path: {"columns": the `keep` outputs, "known", "numeric"}, or {"problems"} (restated for the
    distribution that drew a disallowed value)."""
    from dtsim.models.decentralized.engine import simulate_batch

    n = len(next(iter(values.values()))) if values else 1
    fields, asm = split_inputs(values)
    try:
        batch = simulate_batch(base, assumption_rows=asm, **fields)
    except ScenarioError as exc:
        return {"problems": [_drawn_problem(p, dists) for p in exc.problems]}
    columns = {k: np.array(np.broadcast_to(batch.columns[k], (n,))) for k in keep if k in batch.columns}
    known = [k for k in batch.columns if not k.endswith("_code")]
    numeric = [k for k in known if np.asarray(batch.columns[k]).dtype.kind in "fiu"]
    return {"columns": columns, "known": known, "numeric": numeric}


def headline(base: Any, dists: Mapping[str, Any], varied: Sequence[str] = ()) -> tuple[str, ...]:
    """HEADLINE, with goodput where the runs model node failures (node_mtbf_hours given, drawn or
    `varied` by a sweep): how much they cost is then a headline too."""
    failing = (
        getattr(base, "node_mtbf_hours", None) is not None
        or "node_mtbf_hours" in dists
        or "node_mtbf_hours" in varied
    )
    return (*HEADLINE, "goodput") if failing else HEADLINE


def run_monte_carlo(
    base: Any,
    dists: Mapping[str, Distribution],
    n: int,
    seed: int | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    outputs: Sequence[str] = HEADLINE,
    probs: Sequence[str] = (),
    progress: Callable[[int, int], None] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    samples_path: str | None = None,
) -> MonteCarlo:
    """Draw n (rounded up to 2^m) samples of `dists`, simulate each on top of the scenario `base`
    with the batch path in blocks of 2^16 rows, and summarise `outputs`.

    The blocks run in this process, or on Dask (`scheduler="local"` or `workers=N`: a local cluster of
    processes; `scheduler="tcp://host:8786"`: an existing cluster); either way each block draws its own
    stretch of one Sobol sequence, so the numbers are identical. With `samples_path` (a .parquet file)
    every draw's inputs and outputs are streamed there, block by block. Without a seed one is drawn and
    reported, so any run can be repeated."""
    import secrets
    import time

    from dtsim.analysis.distributed import map_blocks

    t0 = time.perf_counter()
    samples = sample_count(n)
    check_seed(seed)
    correlation_factor(sorted(dists), getattr(dists, "correlations", ()))  # a bad one fails before any work
    from dtsim.schema.fields import INTEGER_FIELDS

    unread = unread_assumptions(dists, batch_columns(base), integer_fields=INTEGER_FIELDS)
    dists = without(dists, unread)
    seed_given = seed is not None
    if seed is None:
        seed = secrets.randbits(63)
    if tuple(outputs) == HEADLINE:
        outputs = headline(base, dists)
    wanted = [*outputs, *(m.group(1) for p in probs if (m := _PROB.match(p)))]
    keep = list(dict.fromkeys([*(CODED.get(k, k) for k in wanted), *CODED.values(), "feasible"]))
    labels = _labels()
    sink = SampleSink(samples_path, samples) if samples_path else None
    cols: dict[str, np.ndarray] = {}
    known: list[str] = []
    blocks = [(0, 1)] if not dists else [(a, min(samples, a + CHUNK)) for a in range(0, samples, CHUNK)]
    try:
        results = map_blocks(
            evaluate_block,
            blocks,
            scheduler=scheduler,
            workers=workers,
            kwargs={
                "base": base,
                "dists": dict(dists),
                "seed": seed,
                "keep": keep,
                "with_inputs": sink is not None,
                "correlations": tuple(getattr(dists, "correlations", ())),
            },
        )
        for (start, stop), res in results:
            if "problems" in res:
                raise ScenarioError(res["problems"])
            known = res["known"]
            for k, v in res["columns"].items():
                if not dists:  # nothing varies: every draw is the point
                    cols[k] = np.broadcast_to(v[:1], (samples,))
                    continue
                if k not in cols:
                    cols[k] = np.empty(samples, dtype=v.dtype)
                cols[k][start:stop] = v
            if sink is not None:
                sink.write(res, labels, samples if not dists else stop - start)
            if progress is not None:
                progress(samples if not dists else stop, samples)
    finally:
        if sink is not None:
            sink.close()
    for name, code in CODED.items():
        if name in wanted:
            cols[name] = labels[name][cols[code]]
    unknown = [o for o in wanted if o not in cols]
    if unknown:
        raise ScenarioError(
            [
                (
                    "output" if unknown[0] in outputs else "--prob",
                    unknown[0],
                    f"unknown output of simulate; known: {', '.join(sorted(known))}",
                )
            ]
        )
    summary = {o: summarise(cols[o], levels) for o in outputs if np.asarray(cols[o]).dtype.kind in "fiu"}
    warnings = summary_warnings(summary, levels, samples)
    mixed = [o for o in MODE_DEPENDENT if o in summary]
    ran = [str(m) for m in labels["mode"][np.unique(cols["mode_code"])]] if "mode_code" in cols else []
    meanings = {MODE_MEANING[m] for m in ran if m in MODE_MEANING}
    if mixed and len(meanings) > 1:
        quantity = " is a different quantity" if len(mixed) == 1 else " are different quantities"
        warnings.append(
            f"{', '.join(mixed)}{quantity} in different modes (an outer step of H inner steps; a hierarchy's "
            "global cycle of H_regional regional rounds; one pipeline step over the WAN), and the draws ran "
            f"{', '.join(m for m in ran if m in MODE_MEANING)} (Mode): the quantiles mix them"
        )
    if getattr(base, "mfu", None) == "auto" and "mfu" not in dists:
        # mfu: auto is the datacenter model's point MFU in every draw: its own error is not drawn (step and
        # plan give it an interval, models/datacenter/model_error.py)
        warnings.append(
            "mfu: auto is the datacenter model's point MFU in every draw: that model's own error (step's and "
            "plan's model-error interval) is not drawn, so the ranges are narrower than they may be; give "
            "mfu as a distribution (e.g. --set mfu=0.4..0.55) to draw it"
        )
    inputs = draws(dists, min(samples, DRIVER_DRAWS), seed, INTEGER_FIELDS)  # the drivers' prefix, again
    drivers = {o: top_drivers(inputs, np.asarray(cols[o]), dists) for o in summary}
    share = {name: counts(cols[code], labels[name]) for name, code in CODED.items() if code in cols}
    if "feasible" in cols:
        share["feasible"] = counts(cols["feasible"].astype(int), np.asarray(["no", "yes"]))
    return MonteCarlo(
        samples=samples,
        requested=n,
        seed=seed,
        levels=tuple(levels),
        inputs={
            k: d.describe() + (f" ({d.origin})" if d.origin != "scenario" else "")
            for k, d in sorted(dists.items())
        },
        outputs=summary,
        shares=share,
        probabilities=[
            probability(p, cols, {k: [str(x) for x in v] for k, v in labels.items()}) for p in probs
        ],
        warnings=warnings,
        seconds=time.perf_counter() - t0,
        drivers=drivers,
        seed_given=seed_given,
        samples_path=str(samples_path) if samples_path else None,
        correlations=[{"fields": [c.a, c.b], "rho": c.rho} for c in getattr(dists, "correlations", ())],
        unread=unread,
    )


# Outputs whose meaning changes with the mode (docs/model.md §3): quantiles over draws in several
# modes mix unlike quantities, which the summary says.
MODE_DEPENDENT = ("outer_step_s", "sync_s", "inner_step_s", "inner_steps_used")
# what the outer step is in each mode that has one (infeasible draws have none)
MODE_MEANING = {
    "flat-diloco": "H inner steps",
    "pp-group-diloco": "H inner steps",
    "hierarchical-diloco": "global cycle",
    "pp-over-wan": "pipeline step",
}


def negligible(spread: float, scale: float) -> bool:
    """Whether a spread of values around `scale` is rounding noise (1e-9 of it), not variation."""
    return spread <= 1e-9 * abs(scale)


def summary_warnings(
    summary: Mapping[str, Mapping[str, Any]], levels: Sequence[float], samples: int
) -> list[str]:
    """What a Monte Carlo summary should warn of: too few draws, quantiles whose standard error is over
    5 % of their spread (raise N), outputs undefined on some draws."""
    warnings = []
    if samples < 128:
        warnings.append(
            f"only {samples} draws: quantiles beyond the middle are rough; use --uncertainty 1024 or more"
        )
    rough = []
    undefined: dict[float, list[str]] = {}
    for o, s in summary.items():
        ends = [s[level_name(q)] for q in levels]
        spread = (max(ends) - min(ends)) if None not in ends else 0.0
        varies = None not in ends and not negligible(spread, max(ends, key=abs))
        if varies and max(s["quantile_se"].values()) > 0.05 * spread:
            rough.append(o)
        if s["finite"] < 1.0:
            undefined.setdefault(1.0 - s["finite"], []).append(o)
    for share, outs in undefined.items():  # one line for the outputs undefined on the same draws
        names = ", ".join(outs) + (" is" if len(outs) == 1 else " are")
        if share == 1.0:
            warnings.append(f"{names} undefined on every draw")
        else:
            warnings.append(f"{names} undefined on {share:.1%} of the draws (quantiles over the rest)")
    if rough:
        warnings.append(
            f"{', '.join(rough)}: a quantile's standard error is over 5 % of the quantiles' spread; "
            "raise --uncertainty"
        )
    return warnings


ANSWER_OUTPUTS = ("wall_clock_days", "global_mfu", "cost_usd", "energy_kwh")


def answer_scenario(base, fields: Mapping[str, Any], tokens_t: float):
    """The scenario a searched answer runs: the search's base with the configuration's fields (the
    target's winner, a cap's cheapest run, a --solve answer) training `tokens_t`."""

    # over the base as given (Scenario.replace): a preset's values stay the preset's, not the user's
    return base.replace(node=None, **fields, tokens_t=tokens_t)


def answer_fields(answer) -> dict[str, Any]:
    """The fields that run a searched answer (its `answer_scenario`) in `simulate` over the base's
    preset: the user's own (a file's, `--set`'s, a body's) with the configuration's over them.
    `target --solve`'s `scenario_fields` and the `--set`s of its "check it" command (a trial's case: the
    user's --set bandwidth_mbps, latency_ms and mfu were left out, and the command gave 28.1 days for
    an answer of 22.5)."""
    return {k: v for k, v in answer.given_fields().items() if k not in answer._from_preset and v is not None}


def answer_warnings(
    base, fields: Mapping[str, Any], tokens_t: float, answer: Any = None
) -> list[dict[str, str]]:
    """What `simulate` warns about a searched answer's run (no answer shown without what it says of
    itself: a node that cannot hold streaming's state, a run past the useful length, …); `answer`, its
    answer_scenario when the caller has built it already."""
    from dtsim.models.decentralized.engine import simulate

    scenario = answer if answer is not None else answer_scenario(base, fields, tokens_t)
    return [{"code": w.code, "message": w.message} for w in simulate(scenario).warnings]


def answer_monte_carlo(
    base: Any,
    fields: Mapping[str, Any],
    tokens_t: float,
    dists: Mapping[str, Distribution],
    n: int,
    days_limit: float,
    seed: int | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    scheduler: str | None = None,
    workers: int | None = None,
    probs: Sequence[str] = (),
) -> MonteCarlo:
    """How sure a searched answer is (`target --uncertainty`, `governance --uncertainty`): the
    configuration `fields` (the target's winner, a cap's cheapest run) training the `tokens_t` the point
    answer needs on top of the search's base scenario, its draws of the base's distributions and the
    assumptions table, with the chance it finishes within the time limit (`probabilities[0]`). A drawn
    field the configuration sets (num_nodes, parameters_b, …) is the configuration's, not drawn, and a
    warning says so. The search itself is not repeated per draw: this is the chance the answer holds as
    planned, not the chance some other configuration would."""
    fixed = {*fields, "tokens_t"}
    scenario = answer_scenario(base, fields, tokens_t)
    kept = Inputs({k: d for k, d in dists.items() if k not in fixed})
    kept.correlations = tuple(c for c in getattr(dists, "correlations", ()) if c.a in kept and c.b in kept)
    mc = run_monte_carlo(
        scenario,
        kept,
        n,
        seed,
        levels,
        outputs=ANSWER_OUTPUTS,
        probs=[f"wall_clock_days<={days_limit!r}", *probs],
        scheduler=scheduler,
        workers=workers,
    )
    # the answer's own test is the search's time limit (probabilities[0]), not simulate's maximum
    # worthwhile run length, which a search ignores: its verdict would contradict the answer
    mc.shares.pop("feasible", None)
    # a draw on which the configuration cannot run at all (no wall-clock time) is not in time either
    in_time = mc.probabilities[0]
    p = (in_time["p"] or 0.0) * in_time["defined"]
    mc.probabilities[0] = {
        "expr": in_time["expr"],
        "p": p,
        "se": math.sqrt(p * (1.0 - p) / mc.samples),
        "defined": 1.0,
        "undefined_counts_as": False,
    }
    days = mc.outputs["wall_clock_days"]
    lo, hi = days[level_name(min(levels))], days[level_name(max(levels))]
    if lo is not None and negligible(hi - lo, hi):
        mc.warnings.append(
            f"none of the {len(kept)} drawn inputs moves this run's days (they are the same in every draw): "
            "its range is zero only because the fields it depends on are held at one value; give the base's "
            "uncertain fields as distributions (e.g. --set mfu=0.3..0.5)"
        )
    dropped = sorted(k for k in dists if k in fixed)
    if dropped:
        mc.warnings.append(f"{', '.join(dropped)}: set by the configuration found, so not drawn")
    return mc


class SampleSink:
    """Every draw's inputs (`input.<field>`) and outputs, streamed to a Parquet file block by block
    (pyarrow.parquet.ParquetWriter), so a run of millions of draws never holds them all at once beyond
    the outputs it summarises. The file is written beside the target and renamed into place when
    complete: an interrupted run leaves no half-written file, and a failed one keeps what was there."""

    def __init__(self, path: str, samples: int):
        from pathlib import Path

        self.path = Path(path)
        if self.path.suffix.lower() != ".parquet":
            raise ScenarioError([("--samples", str(path), "must end in .parquet")])
        check_folder(path, "--samples")
        try:
            import pyarrow.parquet  # noqa: F401  (the table extra)
        except ImportError:
            raise ScenarioError(
                [("--samples", str(path), "needs pyarrow: python3 -m pip install 'dtsim[table]'")]
            ) from None
        self.partial = self.path.with_name(f".{self.path.name}.partial")
        self.writer = None
        self.done = False

    def write(self, res: Mapping[str, Any], labels: Mapping[str, np.ndarray], n: int) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        data = {f"input.{k}": np.asarray(v) for k, v in sorted(res["inputs"].items())}
        for k, v in res["columns"].items():
            name = next((t for t, c in CODED.items() if c == k), None)
            v = np.broadcast_to(v, (n,)) if len(v) != n else v
            data[name or k] = labels[name][v] if name else v
        table = pa.table({k: pa.array(np.asarray(v)) for k, v in data.items()})
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.partial, table.schema)
        self.writer.write_table(table)
        self.done = True

    def close(self) -> None:
        import sys

        if self.writer is not None:
            self.writer.close()
            if self.done and sys.exc_info()[0] is None:
                self.partial.replace(self.path)
                return
        self.partial.unlink(missing_ok=True)


DRIVER_DRAWS = 1 << 14
DRIVER_MIN_RHO = 0.05  # |ρ| below this is no effect worth naming, however many draws
# A driver's ρ must also clear twice its sampling error: the standard error of Spearman's ρ (in Fisher's
# z) near 0 is ≈ 1.03/√(n − 3) (Fieller, Hartley and Pearson 1957, "Tests for rank correlation
# coefficients. I", Biometrika 44), one degree of freedom fewer for each driver already named (a
# semipartial ρ). At 64 draws that is 0.26, at 1,024 0.064; at 2^14 the floor of 0.05 rules. A trial:
# at 64 draws, inputs with ρ ≈ 0.05 that 65,536 draws give as 0 were named beside the real drivers.
DRIVER_SE_FACTOR = 1.03
DRIVER_NOISE_SES = 2.0


def driver_floor(n: int, named: int = 0) -> float:
    """The smallest |ρ| a driver is named at, from n draws with `named` drivers already chosen."""
    dof = n - 3 - named
    return max(DRIVER_MIN_RHO, DRIVER_NOISE_SES * DRIVER_SE_FACTOR / math.sqrt(dof)) if dof > 0 else 1.0


def top_drivers(
    inputs: Mapping[str, np.ndarray], y: np.ndarray, dists: Mapping[str, Distribution], k: int = 3
) -> list[dict[str, Any]]:
    """The k inputs most associated with output y, by forward selection on Spearman's rank correlations
    (`forward_drivers`; a sampling-based sensitivity measure: Helton, Johnson, Sallaberry and Storlie
    2006, "Survey of sampling-based methods for uncertainty and sensitivity analysis", Reliability
    Engineering & System Safety 91, §6.6, §6.8). Over the first 2^14 draws, a balanced Sobol prefix,
    where y is defined; a choice of text values is ranked in its listed order; an input whose |ρ| is
    under 0.05 or twice its sampling error (driver_floor) is not listed. For the share of the variance each input explains, with interactions, run
    `dtsim sensitivity`."""
    from scipy.stats import rankdata

    m = min(len(y), DRIVER_DRAWS)
    yy = np.asarray(y[:m], dtype=float)
    ok = np.isfinite(yy)
    # an output that does not vary (or only by rounding noise) has no drivers
    if ok.sum() < 8 or negligible(float(np.ptp(yy[ok])), float(np.max(np.abs(yy[ok])))):
        return []
    ry = rankdata(yy[ok])
    out = []
    ranks = []
    for name, x in inputs.items():
        x = np.asarray(x[:m])
        if x.dtype.kind not in "fiu":
            order = {str(v): i for i, v in enumerate(dists[name].params["values"])}
            x = np.asarray([order[str(v)] for v in x], dtype=float)
        x = x[ok]
        if np.ptp(x) == 0:
            continue
        rx = rankdata(x)
        ranks.append(rx)
        out.append({"input": name, "rho": float(np.corrcoef(rx, ry)[0, 1])})
    return forward_drivers(out, np.asarray(ranks), ry, k)


def forward_drivers(
    cands: list[dict[str, Any]], ranks: np.ndarray, ry: np.ndarray, k: int
) -> list[dict[str, Any]]:
    """Forward selection on ranks (Helton et al. 2006, §6.8, stepwise regression on rank-transformed
    data): the first driver is the input of largest |ρ|; each next one the input whose rank, less the part
    the drivers already chosen explain (a least-squares fit on their ranks), correlates most with the
    output's rank, and its `rho` is that correlation (the semipartial: what it adds beyond them). With
    independent inputs this is ρ itself; where a few Sobol draws of two inputs are correlated, an
    input no longer borrows another's effect (a trial user's case: at 64 draws straggler_coefficient
    "drove" a run with ρ = −0.72 through its ρ = 0.75 with node_mtbf_hours, the sign flipping with the
    seed). Inputs under driver_floor (0.05, or twice ρ's sampling error at few draws) are left out."""
    chosen: list[int] = []
    out: list[dict[str, Any]] = []
    n = ry.size
    for _ in range(min(k, len(cands))):
        basis = np.column_stack([np.ones(n), *(ranks[i] for i in chosen)])
        best, best_rho = None, 0.0
        for i, cand in enumerate(cands):
            if i in chosen:
                continue
            if chosen:
                coef, *_ = np.linalg.lstsq(basis, ranks[i], rcond=None)
                rest = ranks[i] - basis @ coef
                if np.ptp(rest) <= 1e-9 * np.ptp(ranks[i]):  # all of it explained by the drivers above
                    continue
                rho = float(np.corrcoef(rest, ry)[0, 1])
            else:
                rho = cand["rho"]
            if abs(rho) > abs(best_rho):
                best, best_rho = i, rho
        if best is None or abs(best_rho) < driver_floor(n, len(chosen)):
            break
        chosen.append(best)
        out.append({"input": cands[best]["input"], "rho": best_rho})
    return out


def _drawn_problem(problem: tuple, dists: Mapping[str, Distribution]) -> tuple:
    """A batch error on a drawn row, restated for the distribution that drew it."""
    where, value, message = problem
    name = str(where).split("[", 1)[0]
    if name in ("bandwidth_up_mbps", "bandwidth_down_mbps") and "bandwidth_mbps" in dists:
        name = "bandwidth_mbps"  # the symmetric link sets both directions
    from dtsim.models.decentralized.encode import UNUSED_FIELD

    if name in dists and str(message).startswith(UNUSED_FIELD):  # no draw is at fault: the field
        return (name, dists[name].describe(), message)
    if name in dists:
        d = dists[name]
        hint = (
            "give only values the field takes"
            if d.kind == "choice"
            else "bound the distribution (uniform, triangular) or truncate it with low/high"
        )
        return (
            name,
            value,
            f"{d.describe()} draws {value!r}, which the field does not allow ({message}); {hint}",
        )
    return problem


def load_uncertain_scenario(
    file=None,
    preset: str | None = None,
    set_texts: Sequence[str] = (),
    fixed_assumptions: bool = False,
    corr_texts: Sequence[str] = (),
    fields: Mapping[str, Any] | None = None,
):
    """The scenario of a file / preset / `--set` with every distribution at its point value, and the
    distributions by field (a `--set` value replaces a file's distribution of the same field).
    `fields`: a scenario given as a mapping (an API body), read as a file's fields are.

    Unless `fixed_assumptions`, the distributions also hold the assumptions table's own (for the
    assumptions the model reads that the scenario does not set), as `assumptions.NAME`. Rank
    correlations come from the file's `correlations: [{fields: [a, b], rho: r}]` and `corr_texts`
    (`a,b=r`, which replace the file's for the same pair); the distributions are returned as `Inputs`
    carrying them."""
    from dtsim.models.decentralized.encode import BATCH_FIELDS
    from dtsim.schema.scenario import load_scenario, parse_set, read_scenario_file

    overrides = parse_set(list(set_texts))
    if fields is not None:
        if not isinstance(fields, Mapping):
            raise ScenarioError([("scenario", fields, "must be an object of scenario fields")])
        file_fields: dict[str, Any] | None = dict(fields)
    else:
        file_fields = read_scenario_file(file) if file is not None else None
    correlations: dict[frozenset, Correlation] = {}
    if file_fields is not None and "correlations" in file_fields:
        stated = file_fields.pop("correlations")
        if not isinstance(stated, list):
            raise ScenarioError(
                [("correlations", stated, "must be a list of {fields: [FIELD, FIELD], rho: R}")]
            )
        for i, c in enumerate(stated):
            c = parse_correlation(c, f"correlations[{i}]")
            correlations[frozenset((c.a, c.b))] = c
    for text in corr_texts:
        c = parse_correlation(text)
        correlations[frozenset((c.a, c.b))] = c
    dists: dict[str, Distribution] = {}
    if file_fields is not None:
        file_fields, dists = split_distributions(file_fields, BATCH_FIELDS)
    overrides, given = split_distributions(overrides, BATCH_FIELDS, text_values=True)
    for name in overrides:
        if name not in given:
            dists.pop(name, None)
    for name in overrides.get("assumptions") or {}:
        if f"assumptions.{name}" not in given:
            dists.pop(f"assumptions.{name}", None)
    dists.update(given)
    from dtsim.schema.fields import INTEGER_FIELDS

    for name, d in dists.items():  # the point of an integer field is a whole number, as its draws are
        if name in INTEGER_FIELDS and is_number(d.point()):
            point = float(round(d.point()))
            overrides[name] = point
            if file_fields is not None and name in file_fields:
                file_fields[name] = point
    scenario = load_scenario(file=file, preset=preset, overrides=overrides, file_fields=file_fields)
    from dtsim.models.decentralized.encode import unused_fields

    # --set bandwidth_mbps=1 and =100000 gave the same run, with no word; a drawn field is named with
    # its distribution (not its point, as if the point alone were refused)
    unused = unused_fields(scenario, {k: v for k, v in overrides.items() if k not in dists}, varied=False)
    drawn = {k: v for k, v in overrides.items() if k in dists}
    unused = unused or [_drawn_problem(p, dists) for p in unused_fields(scenario, drawn, varied=True)]
    if unused:
        raise ScenarioError(unused)
    for name, d in dists.items():  # every value a choice can draw is one the field takes
        if d.kind == "choice":
            for v in d.params["values"]:
                try:
                    load_scenario(
                        file=file, preset=preset, overrides={**overrides, name: v}, file_fields=file_fields
                    )
                except ScenarioError as exc:
                    raise ScenarioError(
                        [
                            (
                                name,
                                v,
                                f"{d.describe()} holds a value the field does not take: {exc.problems[0][2]}",
                            )
                        ]
                    ) from None
    if not fixed_assumptions:
        dists.update(table_distributions(scenario, dists))
    inputs = Inputs(dists)
    inputs.correlations = tuple(correlations.values())
    correlation_factor(sorted(inputs), inputs.correlations)
    return scenario, inputs


def table_distributions(scenario: Any, dists: Mapping[str, Distribution]) -> dict[str, Distribution]:
    """The assumptions table's distributions of the assumptions the decentralized model reads, except
    those the scenario sets (a value the user gave is theirs to hold or vary)."""
    from dtsim.assumptions import distributions
    from dtsim.models.decentralized.engine import ASSUMPTIONS_READ

    given = set(scenario.assumptions or {})
    return {
        f"assumptions.{k}": replace(d, origin="assumptions table")
        for k, d in distributions(ASSUMPTIONS_READ).items()
        if k not in given and f"assumptions.{k}" not in dists
    }
