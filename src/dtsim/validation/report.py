"""The typed result of `dtsim validate`: one `RunPrediction` per record, one `GroupSummary` per group
with its `BoundCheck`s, the `FittedConstant`s of the calibration in use, gathered in a
`ValidationReport`. The CLI, the docs page and the tests read these; `as_dict()` gives the JSON of
`dtsim validate --json` (every key present, null where it does not apply)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

Role = Literal["calibration", "check", "reference"]


@dataclass(frozen=True)
class RunPrediction:
    """One measured record and the model's prediction of it, in the record's own metric and unit."""

    id: str
    group: str
    kind: str
    metric: str
    convention: str | None
    unit: str | None
    source: str
    certainty: str
    assumptions: list[str]
    role: Role  # calibration: a constant was fitted on it; check: a prediction; reference: not predicted
    measured: float | None
    predicted: float | None = None
    error: float | None = None  # predicted / measured − 1
    points: float | None = None  # predicted − measured, for metrics in percent
    measured_text: str | None = None  # the measurement as the source states it (reference rows)
    reason: str | None = None  # why there is no prediction
    details: dict[str, Any] | None = None  # the prediction's intermediate values


@dataclass(frozen=True)
class BoundCheck:
    """One bound of a group on one metric: `value` ≤ `limit`?"""

    metric: str
    bound: str  # median_abs_error, max_abs_error, max_abs_points, or "predicted" (no run predicted)
    limit: float
    value: float
    ok: bool


@dataclass(frozen=True)
class GroupSummary:
    description: str
    roles: list[str]
    runs: int
    predicted: int
    median_abs_error: float | None = None
    max_abs_error: float | None = None
    max_abs_points: float | None = None
    spearman: float | None = None  # rank correlation, for groups that compare layouts on one metric
    bounds: list[BoundCheck] = field(default_factory=list)
    worst: str | None = None  # the run with the largest |error|
    worst_error: float | None = None
    worst_why: str | None = None  # the largest part of its predicted step, and what the group leaves out
    source_set: str = ""  # the publication the group's records come from (groups of one source share it)


@dataclass(frozen=True)
class FittedConstant:
    section: str
    name: str
    constant: str
    value: Any
    fitted_on: list[str]
    rms_log_error: float | None


@dataclass(frozen=True)
class ValidationReport:
    runs: list[RunPrediction]
    summary: dict[str, GroupSummary]
    calibration_date: Any
    calibration_subset: list[str] | None
    constants: list[FittedConstant]
    problems: list[dict[str, Any]]  # records the schema rejected: file, record, field, reason
    files: list[str]
    seconds: float
    skipped_files: list[str] = field(default_factory=list)  # in --runs, not YAML: not read
    calibration_laid_over: dict[str, Any] | None = None  # a user's file: the calibration it lies over

    @property
    def bounds_ok(self) -> bool:
        """Every bound of every group met."""
        return all(c.ok for g in self.summary.values() for c in g.bounds)

    @property
    def predicted_runs(self) -> list[RunPrediction]:
        return [r for r in self.runs if r.predicted is not None]

    @property
    def fit_verdicts(self) -> dict[str, Any]:
        """Memory verdicts on measured training runs: each ran, so the model should say it fits.
        `runs` judged, `right` of them, and the ones it calls out of memory (need/usable GB)."""
        judged = [r for r in self.runs if r.details is not None and r.details.get("fits") is not None]
        wrong = [
            {
                "id": r.id,
                "memory_per_gpu_gb": r.details["memory_per_gpu_gb"],
                "usable_memory_gb": r.details["usable_memory_gb"],
            }
            for r in judged
            if not r.details["fits"]
        ]
        return {"runs": len(judged), "right": len(judged) - len(wrong), "wrong": wrong}

    @property
    def datacenter_check(self) -> dict[str, Any]:
        """All check-role datacenter training runs pooled across groups: how many and their median
        |error| (issue 13's target for the check groups together is 7 %)."""
        errs = [
            abs(r.error)
            for r in self.runs
            if r.role == "check" and r.kind == "datacenter" and r.error is not None
        ]
        return {"runs": len(errs), "median_abs_error": float(np.median(errs)) if errs else None}

    @property
    def interval_coverage(self) -> dict[str, Any]:
        """How often the datacenter model's intervals held on runs of a source they were not built from
        (validation/model_error.py: leave one source out, at 50, 80 and 95 %), pooled over check runs,
        over all runs, and per source set and group."""
        from dtsim.validation.model_error import leave_one_source_out

        source_of = {g: s.source_set for g, s in self.summary.items()}
        return leave_one_source_out(self.runs, source_of)

    def fit_verdicts_text(self) -> str:
        """One sentence for the CLI and the docs page ('' when no training run was judged)."""
        fv = self.fit_verdicts
        if not fv["runs"]:
            return ""
        wrong = "; ".join(
            f"{x['id']} ({x['memory_per_gpu_gb']:.0f} of {x['usable_memory_gb']:.0f} GB)" for x in fv["wrong"]
        )
        return (
            f"{fv['right']} of {fv['runs']} measured training runs (every one ran) are predicted to fit"
            + (f"; called out of memory: {wrong}" if wrong else "")
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": [asdict(r) for r in self.runs],
            "summary": {name: asdict(s) for name, s in self.summary.items()},
            "calibration": {
                "date": self.calibration_date,
                "laid_over": self.calibration_laid_over,
                "subset": self.calibration_subset,
                "constants": [asdict(c) for c in self.constants],
            },
            "problems": list(self.problems),
            "files": list(self.files),
            "skipped_files": list(self.skipped_files),
            "seconds": self.seconds,
            "bounds_ok": self.bounds_ok,
            "fit_verdicts": self.fit_verdicts,
            "datacenter_check": self.datacenter_check,
            "interval_coverage": self.interval_coverage,
        }
