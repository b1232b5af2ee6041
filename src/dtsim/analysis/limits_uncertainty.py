"""How sure the frontier limits are: `limits closed-form --uncertainty N`.

Epoch AI's "Data Movement Limits to Frontier Model Training" (Erdil and Schneider-Joseph, 2024) places
the utilization cliff and the latency limit in closed form (its §5, eqs. 13–18; models/limits/
closed_form.py) and stresses that they are quadratically sensitive to the batch size over the layer
count b/L, to the latency t_L and to the training time ("within one or two orders of magnitude", §5.1;
its appendix 8.3 varies the batch and layer scaling). Any of those inputs (`--batch-tokens`,
`--layers`, `--latency-us`, `--months`, `--sparsity`) may be given as a distribution (`a..b`,
`lognormal:median:sigma`, `triangular:low:mode:high`, …, as `--set` takes them), and `--uncertainty N`
draws them (scrambled Sobol, analysis/uncertainty.py) through the vectorized closed forms: P10/P50/P90
of T_critical for each node type of the paper's Table 2, of the latency cliff (eq. 14) and the absolute
limit (eq. 18) and of the parameter count at the limit (eq. 17), the inputs that drive each, and the
chance of a threshold (`--prob "t_limit_flop>=1e30"`).

The limits model has no measured runs to give it a model-error interval; the ranges here are those of
the inputs only.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dtsim.analysis.uncertainty import (
    DEFAULT_LEVELS,
    MonteCarlo,
    check_seed,
    draws,
    probability,
    sample_count,
    summarise,
    summary_warnings,
    top_drivers,
    yes_no,
)
from dtsim.distributions import Distribution, parse_text
from dtsim.errors import ScenarioError

# the closed forms' inputs: flag → (keyword of the formulas, how a value is read)
INPUTS = {
    "batch-tokens": "batch_tokens",
    "layers": "layers",
    "months": "months",
    "latency-us": "latency_us",
    "sparsity": "sparsity",
}
MAX_MONTHS = 1200.0
# The range each input may take: counts the closed forms read as real numbers are at least one, and
# every input stays where the formulas' products and quotients are finite doubles (a latency of
# 1e-320 µs underflows to 0 and divides by it). Wide enough for any run anyone would ask about.
AT_LEAST = {"layers": 1.0, "batch-tokens": 1.0, "sparsity": 1.0, "latency-us": 1e-3, "months": 1e-3}
AT_MOST = {"layers": 1e6, "batch-tokens": 1e15, "sparsity": 1e6, "latency-us": 1e9}
AT_LEAST_WHY = {
    "layers": "a model has at least one MLP block",
    "batch-tokens": "a batch holds at least one token",
    "sparsity": "E = total / active parameters; 1 is dense",
    "latency-us": "one nanosecond; below it no link exists",
    "months": "about 45 minutes",
}


def read_input(flag: str, text: str | float) -> float | Distribution:
    """A closed-form input: a finite number > 0, or a distribution (`a..b`, `kind:params`)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        value: float | Distribution = float(text)
    else:
        d = parse_text(f"--{flag}", str(text))
        if d is not None:
            return d
        try:
            value = float(text)
        except ValueError:
            raise ScenarioError(
                [(flag, text, "must be a number > 0 or a distribution (a..b, lognormal:MEDIAN:SIGMA, …)")]
            ) from None
    if not (math.isfinite(value) and value > 0) or (flag == "months" and value > MAX_MONTHS):
        limit = " and ≤ 1200" if flag == "months" else ""
        raise ScenarioError([(flag, text, f"must be a finite number > 0{limit}")])
    if value < AT_LEAST.get(flag, 0.0):
        raise ScenarioError([(flag, text, f"must be ≥ {AT_LEAST[flag]:g} ({AT_LEAST_WHY[flag]})")])
    if value > AT_MOST.get(flag, math.inf):
        raise ScenarioError([(flag, text, f"must be ≤ {AT_MOST[flag]:g}")])
    return value


def point_inputs(values: Mapping[str, float | Distribution]) -> dict[str, float]:
    """Each input's point: the number, or the distribution's median."""
    return {k: float(v.point()) if isinstance(v, Distribution) else float(v) for k, v in values.items()}


def _flag(name: str) -> str:
    return next(f for f, n in INPUTS.items() if n == name)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def closed_form_outputs(x: Mapping[str, Any], alphas: tuple[float, float] | None = None) -> dict[str, Any]:
    """The closed forms for inputs given as numbers or arrays (one value per draw): T_critical of each
    Table 2 node (`t_critical_flop_<node>`), the latency cliff, the limit, N_p at the limit and, with
    (alpha_b, alpha_l), appendix 8.3's generalized limit and critical compute."""
    from dtsim.models.limits import closed_form as cf

    kw = {"batch_tokens": x["batch_tokens"], "layers": x["layers"], "months": x["months"]}
    t_l = np.asarray(x["latency_us"], dtype=float) * 1e-6
    out: dict[str, Any] = {}
    for r in cf.table2():
        out[f"t_critical_flop_{_slug(r.name)}"] = cf.t_critical(
            r.mac_per_s, r.d_prime, r.b_prime, sparsity=x["sparsity"], **kw
        )
    out["t_critical_latency_flop"] = cf.t_critical_latency(t_l, sparsity=x["sparsity"], **kw)
    out["t_limit_flop"] = cf.t_limit(t_l, sparsity=x["sparsity"], **kw)
    out["params_at_limit"] = cf.params_at_limit(t_l, **kw)
    if alphas is not None:
        common = {"months": x["months"], "sparsity": x["sparsity"]}
        b0, l0 = x["batch_tokens"], x["layers"]
        out["generalized_t_limit_flop"] = cf.generalized("limit", *alphas, b0, l0, t_latency=t_l, **common)
        for r in cf.table2():
            out[f"generalized_t_critical_flop_{_slug(r.name)}"] = cf.generalized(
                "critical", *alphas, b0, l0, mac_per_s=r.mac_per_s, d=r.d_prime, b=r.b_prime, **common
            )
    return out


def closed_form_monte_carlo(
    values: Mapping[str, float | Distribution],
    n: int,
    seed: int | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    probs: Sequence[str] = (),
    alphas: tuple[float, float] | None = None,
) -> MonteCarlo:
    """n draws (rounded up to 2^m) of the inputs given as distributions through the closed forms."""
    import secrets

    t0 = time.perf_counter()
    samples = sample_count(n)
    check_seed(seed)
    seed_given = seed is not None
    if seed is None:
        seed = secrets.randbits(63)
    dists = {k: v for k, v in values.items() if isinstance(v, Distribution)}
    drawn = draws(dists, samples, seed) if dists else {}
    for k, v in drawn.items():
        flag = _flag(k)
        bad = ~(np.isfinite(v) & (v > 0)) | ((v > MAX_MONTHS) if k == "months" else False)
        if bad.any():
            x = float(v[np.argmax(bad)])
            raise ScenarioError(
                [
                    (
                        flag,
                        x,
                        f"{dists[k].describe()} draws {x:g}, which is not > 0{' and ≤ 1200' if k == 'months' else ''}; "
                        "bound the distribution (uniform, triangular) or truncate it with low/high",
                    )
                ]
            )
    x = {k: drawn[k] if k in dists else np.full(samples, float(values[k])) for k in values}
    cols = {
        k: np.asarray(v, dtype=float) * np.ones(samples) for k, v in closed_form_outputs(x, alphas).items()
    }
    summary = {k: summarise(v, levels) for k, v in cols.items()}
    return MonteCarlo(
        samples=samples,
        requested=n,
        seed=seed,
        levels=tuple(levels),
        inputs={k: f"{d.describe()} (--{_flag(k)})" for k, d in sorted(dists.items())},
        outputs=summary,
        shares={},
        probabilities=[probability(p, cols) for p in probs],
        warnings=summary_warnings(summary, levels, samples),
        seconds=time.perf_counter() - t0,
        drivers={k: top_drivers(drawn, v, dists) for k, v in cols.items()} if drawn else {},
        seed_given=seed_given,
    )


# --- `limits search --uncertainty`: one cluster-size search per draw ---------------------------------------------

SEARCH_INPUTS = {
    "months": "months",
    "peak-tflops": "peak_tflops",
    "hbm-tb-s": "hbm_tb_s",
    "memory-gb": "memory_gb",
}
SEARCH_OUTPUTS = ("n_gpus", "utilization", "months", "gpu_hours", "capital_cost_usd", "energy_kwh")
SCALINGS = ("default", "deepseek", "fixed")
MAX_SEARCH_DRAWS = 4096  # each draw is a search (≈ 5–50 ms): minutes at most
SEARCH_BLOCK = 64


def read_scaling(text: str) -> str | Distribution:
    """`--scaling`: one critical-batch law, or a choice among them (`choice:default,deepseek`)."""
    d = parse_text("--scaling", text)
    if d is not None:
        if d.kind != "choice" or any(v not in SCALINGS for v in d.params["values"]):
            raise ScenarioError(
                [("scaling", text, f"a distribution of laws is choice:LAW,LAW of {', '.join(SCALINGS)}")]
            )
        return d
    if text not in SCALINGS:
        raise ScenarioError([("scaling", text, f"must be {', '.join(SCALINGS)} or choice:LAW,LAW")])
    return text


def search_block(
    start: int,
    stop: int,
    compute: float,
    gpu: str,
    sparse: bool,
    memory: str,
    values: Mapping[str, Any],
    dists: Mapping[str, Distribution],
    seed: int,
) -> dict[str, Any]:
    """Draws start..stop−1: each draw's hardware (the chip values drawn), law and time limit, one
    cluster-size search each (models/limits/search.py: cluster_size); outputs NaN where none is found.
    Runs on whichever process gets it."""
    from dtsim.models.limits.curve import limits_point, shape_for_compute
    from dtsim.models.limits.hardware import custom, get
    from dtsim.models.limits.search import cluster_size

    n = stop - start
    drawn = draws(dists, n, seed, start=start) if dists else {}
    out = {k: np.full(n, np.nan) for k in SEARCH_OUTPUTS}
    base = get(gpu)
    for i in range(n):
        x = {k: (drawn[k][i] if k in drawn else v) for k, v in values.items()}
        chip = {k: (None if x[k] is None else float(x[k])) for k in ("peak_tflops", "hbm_tb_s", "memory_gb")}
        hw = custom(base, **chip) if any(v is not None for v in chip.values()) else base
        shape = shape_for_compute(compute, sparse, str(x["scaling"]))
        best = cluster_size(shape, hw, float(x["months"]), memory)
        if best is None:
            continue
        point = limits_point(shape, best, hw)
        for k in SEARCH_OUTPUTS:
            out[k][i] = float(getattr(point, k))
    return {"outputs": out, "inputs": drawn}


def search_monte_carlo(
    compute: float,
    values: Mapping[str, Any],
    gpu: str = "h100-sxm",
    sparse: bool = False,
    memory: str = "per-gpu",
    n: int = 256,
    seed: int | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    probs: Sequence[str] = (),
    progress: Any = None,
    scheduler: str | None = None,
    workers: int | None = None,
) -> MonteCarlo:
    """n draws (rounded up to 2^m, at most MAX_SEARCH_DRAWS) of `limits search`: `values` holds months,
    scaling and the chip's peak_tflops / hbm_tb_s / memory_gb, each a value (None: the GPU's own) or a
    distribution; every draw runs its own search, in blocks here or on Dask. `found` is the share of
    draws where some cluster trains the run in time; the other outputs are over those draws."""
    import secrets

    from dtsim.analysis.distributed import map_blocks

    t0 = time.perf_counter()
    samples = sample_count(n)
    if samples > MAX_SEARCH_DRAWS:
        raise ScenarioError(
            [("--uncertainty", n, f"limits search draws at most {MAX_SEARCH_DRAWS:,} (one search a draw)")]
        )
    check_seed(seed)
    seed_given = seed is not None
    if seed is None:
        seed = secrets.randbits(63)
    dists = {k: v for k, v in values.items() if isinstance(v, Distribution)}
    for k, d in dists.items():  # a draw outside what the input takes is an error before any search
        if d.kind == "choice":
            continue
        ends = d.ppf(np.asarray([1e-12, 1.0 - 1e-12]))
        flag = "scaling" if k == "scaling" else next(f for f, name in SEARCH_INPUTS.items() if name == k)
        if not (np.all(np.isfinite(ends)) and ends[0] > 0) or (k == "months" and ends[1] > MAX_MONTHS):
            raise ScenarioError(
                [
                    (
                        flag,
                        d.describe(),
                        f"can draw {ends[0]:g}…{ends[1]:g}: must stay > 0{' and ≤ 1200' if k == 'months' else ''}; "
                        "bound it (uniform, triangular) or truncate it with low/high",
                    )
                ]
            )
    cols = {k: np.empty(samples) for k in SEARCH_OUTPUTS}
    inputs: dict[str, np.ndarray] = {}
    blocks = [(a, min(samples, a + SEARCH_BLOCK)) for a in range(0, samples, SEARCH_BLOCK)]
    kwargs = {"compute": compute, "gpu": gpu, "sparse": sparse, "memory": memory}
    kwargs |= {"values": dict(values), "dists": dists, "seed": seed}
    for (start, stop), res in map_blocks(
        search_block, blocks, scheduler=scheduler, workers=workers, kwargs=kwargs
    ):
        for k, v in res["outputs"].items():
            cols[k][start:stop] = v
        for k, v in res["inputs"].items():
            kind = np.asarray(v).dtype.kind  # text (a choice of laws) as objects: no fixed width to cut
            inputs.setdefault(k, np.empty(samples, dtype=float if kind in "fiu" else object))[start:stop] = v
        if progress is not None:
            progress(stop, samples)
    found = np.isfinite(cols["n_gpus"])
    cols_all: dict[str, Any] = {**cols, "found": found}
    summary = {k: summarise(v, levels) for k, v in cols.items()}
    warnings = summary_warnings(summary, levels, samples)
    if not dists:
        warnings.append(
            "nothing varies: every draw is the point (give --months, --scaling or the chip as distributions)"
        )
    return MonteCarlo(
        samples=samples,
        requested=n,
        seed=seed,
        levels=tuple(levels),
        inputs={
            k: f"{d.describe()} (--{'scaling' if k == 'scaling' else next(f for f, m in SEARCH_INPUTS.items() if m == k)})"
            for k, d in sorted(dists.items())
        },
        outputs=summary,
        shares={"found": yes_no(found)},
        probabilities=[probability(p, cols_all) for p in probs],
        warnings=warnings,
        seconds=time.perf_counter() - t0,
        drivers={k: top_drivers(inputs, v, dists) for k, v in cols.items()} if inputs else {},
        seed_given=seed_given,
    )


__all__ = [
    "INPUTS",
    "SEARCH_INPUTS",
    "closed_form_monte_carlo",
    "closed_form_outputs",
    "point_inputs",
    "read_input",
    "read_scaling",
    "search_monte_carlo",
]
