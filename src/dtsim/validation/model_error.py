"""Model-error intervals for the datacenter model, from its residuals on the measured runs.

The score of a measured run is the log of measured over predicted step time, log(t_meas / t_pred); every
datacenter metric is a rate (TFLOP/s, tokens/s, MFU), so it is log(predicted / measured) of the metric.
A central interval at level 1 − α is split-conformal on the signed scores (Lei, G'Sell, Rinaldo,
Tibshirani & Wasserman 2018, "Distribution-Free Predictive Inference for Regression", JASA, §2.2, with
the lower and upper bound each at α/2, as Romano, Patterson & Candès 2019, "Conformalized Quantile
Regression", take the two tails): of n scores sorted, the ⌊(n + 1)·α/2⌋-th and the ⌈(n + 1)(1 − α/2)⌉-th
smallest. The signed scores keep the model's bias (a model that is fast on a source gets an interval
reaching further above the point).

Runs from one publication are not exchangeable with each other (one stack, one team, one way of
measuring), so every source weighs the same in the quantiles (each run 1 / its source's run count;
weighted split conformal, Tibshirani, Barber, Candès & Ramdas 2019, "Conformal Prediction Under
Covariate Shift": a new run is as likely to resemble any source, however many rows that source
published), and the intervals are checked leaving one source out (`source_set` of the record groups):
each source's runs are covered, or not, by the interval the other sources give. `dtsim validate`
reports that coverage; catalog/model_error.yaml, which `step` and `plan` read, holds the bounds from
every source.

    python -m dtsim.validation.model_error          # rewrite catalog/model_error.yaml
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

LEVELS = (0.5, 0.8, 0.9, 0.95)  # the intervals catalog/model_error.yaml holds
COVERAGE_LEVELS = (0.5, 0.8, 0.95)  # the levels `dtsim validate` checks


def score(predicted: float, measured: float) -> float:
    """log(t_measured / t_predicted) of a datacenter run whose metric is a rate."""
    return math.log(predicted / measured)


def conformal_bounds(
    scores: Sequence[float], level: float, weights: Sequence[float] | None = None
) -> tuple[float, float] | None:
    """The lower and upper score of a central `level` split-conformal interval: the ⌊(n+1)·α/2⌋-th and
    ⌈(n+1)(1−α/2)⌉-th smallest of the n scores (α = 1 − level). None when n is too small for the level
    (an index outside 1..n: the interval would be unbounded).

    With `weights`, the weighted version (Tibshirani, Barber, Candès & Ramdas 2019, "Conformal
    Prediction Under Covariate Shift", NeurIPS, §2): score i carries p_i = w_i / (Σw + w̄) and the new
    point's mass sits at ±∞; the upper bound is the smallest score whose cumulative p reaches 1 − α/2,
    the lower the largest whose cumulative p from the top does. The paper gives the new point its own
    weight; here it takes the mean weight w̄ — our choice, not the paper's: a run from a source of its
    own would weigh 1 and push more mass to ±∞, so the bounds are checked on sources left out
    (`leave_one_source_out`) rather than guaranteed. Equal weights give the order statistics above."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    order = np.argsort(np.asarray(scores, dtype=float), kind="stable")
    x = np.asarray(scores, dtype=float)[order]
    n = len(x)
    half = (1.0 - level) / 2.0
    if weights is None:
        lo = math.floor((n + 1) * half + 1e-9)
        hi = math.ceil((n + 1) * (1.0 - half) - 1e-9)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (n,) or np.any(w <= 0) or not np.all(np.isfinite(w)):
            raise ValueError("weights: one positive finite weight per score")
        if n == 0:
            return None
        w = w[order]
        p = w / (w.sum() + w.mean())
        up = np.cumsum(p)  # mass at or below each score
        down = np.cumsum(p[::-1])[::-1]  # mass at or above each score
        hi = int(np.searchsorted(up, 1.0 - half - 1e-12)) + 1  # first index reaching the level
        reach = np.nonzero(down >= 1.0 - half - 1e-12)[0]
        lo = int(reach[-1]) + 1 if len(reach) else 0
    if lo < 1 or hi > n:
        return None
    return float(x[lo - 1]), float(x[hi - 1])


def source_weights(sources: Sequence[str]) -> list[float]:
    """Each run's weight so that every source weighs the same in total (1 / its run count): a new run
    comes from a stack, team and way of measuring of its own, which any past source is as likely to
    resemble as another, however many rows that source published (llm-foundry's 216 would otherwise
    set the intervals alone)."""
    counts = Counter(sources)
    return [1.0 / counts[s] for s in sources]


def scored_runs(runs: Iterable[Any], source_of: dict[str, str]) -> list[tuple[Any, str, float]]:
    """(run, source set, score) of every datacenter training run with a prediction, calibration or
    check (`validate`'s rows); `source_of` maps a group to its source set."""
    out = []
    for r in runs:
        if r.kind == "datacenter" and r.role in ("calibration", "check") and r.predicted and r.measured:
            out.append((r, source_of.get(r.group, r.group), score(r.predicted, r.measured)))
    return out


def leave_one_source_out(
    runs: Iterable[Any], source_of: dict[str, str], levels: Sequence[float] = COVERAGE_LEVELS
) -> dict[str, Any]:
    """Coverage of the intervals on runs of a source they were not built from. Intervals are built
    from check runs only (a calibration run's residual is in-sample: a constant was fitted on it); for
    each source, the interval from the other sources' check runs, and the share of its own runs inside
    it. Calibration sources are covered too, but the model was fitted on them (`in_sample`). Pooled
    over the check runs and per source and group; None where too few scores are left for a level."""
    scored = scored_runs(runs, source_of)
    sources = sorted({s for _, s, _ in scored})
    by_group: dict[float, dict[str, list[bool]]] = {lv: {} for lv in levels}
    check_hits: dict[float, list[bool]] = {lv: [] for lv in levels}
    per_source: dict[str, dict[str, Any]] = {}
    for src in sources:
        own = [(r, x) for r, s, x in scored if s == src]
        rest_runs = [(s, x) for r, s, x in scored if s != src and r.role == "check"]
        rest = [x for _, x in rest_runs]
        rest_w = source_weights([s for s, _ in rest_runs])
        entry: dict[str, Any] = {
            "runs": len(own),
            "others": len(rest),
            "in_sample": any(r.role == "calibration" for r, _ in own),
            "bounds": {},
            "coverage": {},
        }
        for lv in levels:
            b = conformal_bounds(rest, lv, rest_w) if rest else None
            key = f"{lv:g}"
            entry["bounds"][key] = None if b is None else {"low": b[0], "high": b[1]}
            entry["coverage"][key] = None
            if b is None:
                continue
            hits = [b[0] <= x <= b[1] for _, x in own]
            entry["coverage"][key] = float(np.mean(hits))
            for (r, _), hit in zip(own, hits, strict=True):
                by_group[lv].setdefault(r.group, []).append(hit)
                if r.role == "check":
                    check_hits[lv].append(hit)
        per_source[src] = entry

    def pooled(hits: dict[float, list[bool]]) -> dict[str, Any]:
        cov = {f"{lv:g}": (float(np.mean(hits[lv])) if hits[lv] else None) for lv in levels}
        return {"runs": max((len(h) for h in hits.values()), default=0), "coverage": cov}

    groups = sorted({r.group for r, _, _ in scored})
    checked = [e for e in per_source.values() if not e["in_sample"]]
    means = {}
    for lv in levels:
        vals = [e["coverage"][f"{lv:g}"] for e in checked if e["coverage"][f"{lv:g}"] is not None]
        means[f"{lv:g}"] = float(np.mean(vals)) if vals else None
    return {
        "levels": [float(lv) for lv in levels],
        "score": "log(measured step time / predicted step time)",
        "check": pooled(check_hits),
        "sources": per_source,
        "sources_mean": {"runs": len(checked), "coverage": means},  # check sources weighted equally
        "groups": {
            g: {"source_set": source_of.get(g, g), **pooled({lv: by_group[lv].get(g, []) for lv in levels})}
            for g in groups
        },
    }


def coverage_rows(coverage: dict[str, Any]) -> list[tuple[str, int, list[str]]]:
    """(label, runs, cells) for each source, then pooled over the check runs and the mean of the check
    sources: the rows `dtsim validate` and docs/validation.md show; cells are percentages at each level
    of `coverage['levels']` ('—' where too few scores were left)."""
    entries = [
        *(
            (f"{name} (in-sample: constants fitted on it)" if e["in_sample"] else name, e)
            for name, e in coverage["sources"].items()
        ),
        ("check runs pooled", coverage["check"]),
        ("mean of the check sources", coverage["sources_mean"]),
    ]
    return [
        (
            name,
            e["runs"],
            [
                "—" if e["coverage"][f"{lv:g}"] is None else f"{e['coverage'][f'{lv:g}']:.0%}"
                for lv in coverage["levels"]
            ],
        )
        for name, e in entries
    ]


# --- the table step and plan read ------------------------------------------------------------------------

HEADER = """\
# Generated by `python -m dtsim.validation.model_error` from the datacenter model's predictions of the
# measured runs in catalog/measured_runs/datacenter.yaml — do not edit. Split-conformal bounds of
# score = log(measured step time / predicted step time) for central intervals at each level (Lei et al.
# 2018, §2.2), from every check run (calibration runs are in-sample and left out); `step` and `plan` multiply the predicted step time
# by exp(low) and exp(high); `--uncertainty` draws the score from the quantile function through the bounds
# and the median. `coverage_leave_one_source_out` is the share of check runs inside the
# interval built without their source (`dtsim validate` shows it per source and group).
"""


def compute() -> dict[str, Any]:
    """The bounds from every scored run of the bundled dataset, and their leave-one-source-out
    coverage on the check runs."""
    from dtsim.validation.predict import record_gpu
    from dtsim.validation.records import load_dataset
    from dtsim.validation.runner import validate

    data = load_dataset()
    names = [g for g in data.groups if any(r.group == g and r.kind == "datacenter" for r in data.records)]
    report = validate(data, names)
    source_of = {g: e.source_set for g, e in report.summary.items()}
    scored = [t for t in scored_runs(report.runs, source_of) if t[0].role == "check"]
    scores = [x for _, _, x in scored]
    sources = [s for _, s, _ in scored]
    counts = Counter(sources)
    bounds = {}
    weights = source_weights(sources)
    for lv in LEVELS:
        b = conformal_bounds(scores, lv, weights)
        bounds[f"{lv:g}"] = None if b is None else {"low": round(b[0], 4), "high": round(b[1], 4)}
    loso = report.interval_coverage
    by_id = {r.id: r for r in data.records}
    gpus = sorted({record_gpu(by_id[r.id]) for r, _, _ in scored})
    return {
        "runs": len(scores),
        "sources": dict(sorted(counts.items())),
        "gpus": gpus,
        "median": round(float(np.median(scores)), 4),
        "bounds": bounds,
        "coverage_leave_one_source_out": {
            k: (None if v is None else round(v, 3)) for k, v in loso["check"]["coverage"].items()
        },
        "coverage_by_source_80": {
            name: round(e["coverage"]["0.8"], 3)
            for name, e in loso["sources"].items()
            if not e["in_sample"] and e["coverage"].get("0.8") is not None
        },
    }


def render() -> str:
    return HEADER + "\n" + yaml.safe_dump(compute(), sort_keys=False, allow_unicode=True, width=110)


def target() -> Path:
    return Path(str(resources.files("dtsim.catalog").joinpath("model_error.yaml")))


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    import sys

    from dtsim.textfiles import write_generated

    sys.exit(
        write_generated(
            sys.argv, "the catalog's model_error.yaml (the model-error intervals)", target(), render
        )
    )
