"""Run the predictions of a dataset and summarise their distance from the measurements.

Every row states whether its record was used to fit a constant of the calibration in use
(`calibration`), is a prediction (`check`), or is kept only for reference; summaries are per group,
with each group's bounds checked and, for groups that compare layouts, the rank correlation of
predicted and measured values.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.catalog.calibration_file import calibration_in_use
from dtsim.errors import ScenarioError
from dtsim.validation.calibrate import FITTED_KINDS
from dtsim.validation.predict import predict
from dtsim.validation.records import Dataset
from dtsim.validation.report import (
    BoundCheck,
    FittedConstant,
    GroupSummary,
    RunPrediction,
    ValidationReport,
)


def fitted_ids(doc: dict[str, Any] | None = None) -> set[str]:
    """Ids of the records any constant of the calibration document was fitted on."""
    doc = catalog.calibration_document() if doc is None else doc
    ids: set[str] = set()
    for section in ("generations", "fabrics", "testbed", "wan"):
        for entry in (doc.get(section) or {}).values():
            if isinstance(entry, dict):
                ids.update(entry.get("fitted_on") or ())
    return ids


def _is_percent(unit: str) -> bool:
    return unit.strip().startswith("%")


def run_records(
    records: list[Any], groups: dict, predicted: Mapping[str, RunPrediction] | None = None
) -> list[RunPrediction]:
    """One row per record: its prediction, or why there is none. A record whose id is in `predicted`
    takes that row instead of being predicted again."""
    fitted = fitted_ids()
    rows = []
    for rec in records:
        if predicted is not None and rec.id in predicted:
            rows.append(predicted[rec.id])
            continue
        group = groups.get(rec.group)
        common = {
            "id": rec.id,
            "group": rec.group,
            "kind": rec.kind,
            "metric": rec.metric,
            "convention": getattr(rec, "convention", None),
            "unit": getattr(rec, "unit", None),
            "source": rec.source,
            "certainty": rec.certainty,
            "assumptions": list(rec.assumptions),
        }
        if rec.kind == "reference":
            rows.append(
                RunPrediction(
                    **common,
                    role="reference",
                    measured=None,
                    measured_text=rec.measured_text,
                    reason=rec.reason,
                )
            )
            continue
        # calibration: fitted by the calibration file in use, or a row of a calibration group of a kind
        # `dtsim calibrate` does not fit, which set catalog constants by hand (MAMF-FP8: each GPU's
        # fp8_sustained_ratio)
        hand_set = group is not None and group.role == "calibration" and rec.kind not in FITTED_KINDS
        role = (
            "calibration"
            if rec.id in fitted or hand_set
            else ("reference" if group and group.role == "reference" else "check")
        )
        try:
            value, details = predict(rec)
        except ScenarioError as exc:
            rows.append(RunPrediction(**common, role=role, measured=rec.measured, reason=str(exc)))
            continue
        value = float(value)
        if not math.isfinite(value) or value <= 0:
            rows.append(
                RunPrediction(**common, role=role, measured=rec.measured, reason=f"the model gives {value}")
            )
            continue
        rows.append(
            RunPrediction(
                **common,
                role=role,
                measured=rec.measured,
                predicted=value,
                error=value / rec.measured - 1.0,
                points=value - rec.measured if _is_percent(rec.unit) else None,
                details=_jsonable(details),
            )
        )
    return rows


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = _jsonable(v)
        elif isinstance(v, (np.floating, np.integer)):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def spearman(x: list[float], y: list[float]) -> float | None:
    """Spearman rank correlation (average ranks for ties); None for fewer than 3 pairs or no spread."""
    if len(x) < 3:
        return None

    def ranks(v):
        v = np.asarray(v, dtype=float)
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(1, len(v) + 1)
        for val in np.unique(v):
            idx = v == val
            r[idx] = r[idx].mean()
        return r

    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def summarise(rows: list[RunPrediction], groups: dict) -> dict[str, GroupSummary]:
    out: dict[str, GroupSummary] = {}
    for name in dict.fromkeys(r.group for r in rows):
        grp = groups.get(name)
        members = [r for r in rows if r.group == name]
        scored = [r for r in members if r.error is not None]
        stats: dict[str, Any] = {}
        if scored:
            errs = [abs(r.error) for r in scored]
            stats["median_abs_error"] = statistics.median(errs)
            stats["max_abs_error"] = max(errs)
            points = [abs(r.points) for r in scored if r.points is not None]
            if points:
                stats["max_abs_points"] = max(points)
            metrics = {r.metric for r in scored}
            if grp is not None and grp.compares_layouts and len(metrics) == 1:
                stats["spearman"] = spearman([r.measured for r in scored], [r.predicted for r in scored])
            worst = max(scored, key=lambda r: abs(r.error))
            stats["worst"], stats["worst_error"] = worst.id, worst.error
            stats["worst_why"] = _why(worst, grp)
        checks = []
        if grp is not None and grp.bounds:
            for metric in sorted({r.metric for r in scored}):
                sel = [r for r in scored if r.metric == metric]
                for bound, limit in grp.bounds_for(metric).items():
                    if bound == "median_abs_error":
                        value = statistics.median(abs(r.error) for r in sel)
                    elif bound == "max_abs_error":
                        value = max(abs(r.error) for r in sel)
                    else:
                        value = max(abs(r.points) for r in sel if r.points is not None)
                    checks.append(BoundCheck(metric, bound, limit, value, value <= limit))
            if not scored:
                checks.append(BoundCheck("*", "predicted", 1, 0, False))
        out[name] = GroupSummary(
            description=grp.description if grp else "",
            roles=sorted({r.role for r in members}),
            runs=len(members),
            predicted=len(scored),
            bounds=checks,
            source_set=(grp.source_set or name) if grp else name,
            **stats,
        )
    return out


def _why(run: RunPrediction, grp) -> str:
    """What may explain a run's error: the largest parts of its predicted step beyond compute
    (datacenter runs), where a mechanism's error would show, and what the group's model leaves out."""
    parts = []
    breakdown = (run.details or {}).get("breakdown_s") or {}
    total = sum(breakdown.values())
    if total > 0:
        compute = ("forward", "backward", "recompute")
        rest = sorted(((v, k) for k, v in breakdown.items() if k not in compute), reverse=True)[:2]
        shares = [f"{k} {100 * v / total:.0f}%" for v, k in rest if v > 0.01 * total]
        parts.append("predicted step beyond compute: " + (", ".join(shares) if shares else "under 1%"))
    if grp is not None and grp.leaves_out:
        parts.append("leaves out: " + grp.leaves_out)
    return "; ".join(parts)


def validate(
    dataset: Dataset,
    subset: list[str] | None = None,
    calibration: str | Path | dict[str, Any] | None = None,
    predicted: Mapping[str, RunPrediction] | None = None,
) -> ValidationReport:
    """Predict every record (or those of the named groups / ids) and summarise; `calibration` (a file
    written by `dtsim calibrate --out`, or its document) replaces catalog/calibration.yaml.
    `predicted`: the rows, by record id, of an earlier report on the same dataset under the same
    calibration, used instead of predicting those records again (the page filters one dataset)."""
    with calibration_in_use(calibration):
        return _validate(dataset, subset, predicted)


def _validate(
    dataset: Dataset, subset: list[str] | None, predicted: Mapping[str, RunPrediction] | None = None
) -> ValidationReport:
    t0 = time.perf_counter()
    records = dataset.subset(subset)
    rows = run_records(records, dataset.groups, predicted)
    summary = summarise(rows, dataset.groups)
    doc = catalog.calibration_document()
    return ValidationReport(
        runs=rows,
        summary=summary,
        calibration_date=doc.get("date"),
        # a user's file laid over the packaged calibration names both (calibration_file.overlay)
        calibration_laid_over=doc.get("laid_over"),
        calibration_subset=doc.get("subset"),
        constants=constants_table(doc),
        problems=[p.__dict__ for p in dataset.problems],
        files=dataset.files,
        skipped_files=list(dataset.skipped),
        seconds=time.perf_counter() - t0,
    )


def constants_table(doc: dict[str, Any]) -> list[FittedConstant]:
    """The fitted constants as rows: section, name, value, fitted_on, RMS log error."""
    out = []
    for section in ("generations", "fabrics", "testbed", "wan"):
        for name, entry in (doc.get(section) or {}).items():
            if not isinstance(entry, dict):
                continue
            for key, value in entry.items():
                if key in ("fitted_on", "rms_log_error", "residuals", "method", "unit"):
                    continue
                out.append(
                    FittedConstant(
                        section=section,
                        name=name,
                        constant=key,
                        value=value,
                        fitted_on=list(entry.get("fitted_on") or ()),
                        rms_log_error=entry.get("rms_log_error"),
                    )
                )
    return out
