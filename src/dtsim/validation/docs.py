"""`python -m dtsim.validation.docs` rewrites docs/validation.md from a fresh `dtsim validate`: every
record, its prediction and error, each group's summary and bounds, what the model leaves out, and the
fitted constants. A test keeps the page equal to what the code produces."""

from __future__ import annotations

import sys
from pathlib import Path

from dtsim.validation import load_dataset, validate
from dtsim.validation.model_error import coverage_rows


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:,.4g}"


UNCERTAINTY = "### Model error and input uncertainty together (`step` and `plan --uncertainty N`)\n\n`--uncertainty N` draws two things jointly from one scrambled Sobol sequence\n(`analysis/datacenter_uncertainty.py`):\n\n- **The model's error.** The score ln(measured / predicted step time) of the check runs as a\n  distribution: its quantile function runs linearly through the conformal bounds above (each level's\n  bounds are its (1 − level)/2 and (1 + level)/2 quantiles, being order statistics of the scores) and\n  the scores' median (`median` in catalog/model_error.yaml: {median:+.4f}, the model {fast:.1%} fast on the\n  median check run), and is held at the 95 % bounds beyond them (the runs say nothing of the tails).\n  Each draw's step time is the model's times exp(score); MFU and tokens/s divide by it. With the table\n  held (`--fixed-assumptions`), P10 and P90 are the 80 % interval above (a test); the P50 is the point\n  × {factor:.3f}. A calibration file (`--calibration`) drops this term and says so, as for the intervals.\n- **The assumptions.** The table's distributions of what the datacenter step reads\n  (`models/datacenter/step.py: ASSUMPTIONS_READ`, kept equal to its reads by a test): HBM efficiency,\n  framework overhead, the overlap slowdown, the usable memory fraction, the FlashAttention backward\n  factor and PUE. Each draw's step runs with its own values through the vectorized step\n  (`step_draws`, equal draw by draw to `step` with those overrides: a test). Memory and the fit verdict\n  vary through these only. A draw where the layout\n  does not fit has no step time (its time is not an answer): the times and the chances built on them\n  are over the draws where it fits, and none when it never does. A drawn MFU above 100 % (the model\n  error's fast tail on a prediction near the peak) is flagged, and so are levels beyond P2.5/P97.5,\n  where the held tails understate the spread. The network's two constants (leaf switch size, NCCL's\n  tree factor) are read once per run and not drawn.\n\nThe scores were measured with the assumptions at their point values, so they already hold part of\nwhat the assumptions' spread stands for; drawing both is the cautious reading, wider than either.\nReported: P10/P50/P90 of step time, MFU, tokens/s, memory and, with `--tokens`, days, GPU-hours,\nenergy (and rental cost), P(fits), `--prob \"days<=90\"`, the drivers. `plan` (and `step --layouts`)\ndraws its ranked layouts together — one model-error draw shared by every layout of a draw (the\nmeasured error is one width for every layout and does not reorder them) — and adds each layout's\nrange, P(fits) and the chance it is the fastest of the listed layouts that fit (layouts the table does\nnot list, or that fit only on some draws, are not drawn; `layout_uncertainty` in JSON;\na tie goes to the layout listed first; `plan` draws at most its first 50 layouts and says so)."


def _uncertainty_section() -> list[str]:
    """How `step` and `plan --uncertainty` draw the model error with the assumptions (the median from
    catalog/model_error.yaml)."""
    import math

    from dtsim.models.datacenter.model_error import table

    median = table().get("median")
    if median is None:
        return []
    factor = math.exp(median)
    return [*UNCERTAINTY.format(median=median, fast=factor - 1.0, factor=factor).split("\n"), ""]


PIPE = "\\|"  # a | inside a Markdown table cell


def _type_text(annotation) -> str:
    """A field's type as a reader of a record file wants it: int, number, text, a choice of words."""
    import typing

    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, __import__("types").UnionType):
        return " or ".join(_type_text(a) for a in typing.get_args(annotation) if a is not type(None))
    if origin is typing.Annotated:
        return _type_text(typing.get_args(annotation)[0])
    names = {int: "integer", float: "number", str: "text", bool: "true/false", dict: "mapping"}
    if annotation in names:
        return names[annotation]
    if origin in (list, tuple):
        return "list"
    if origin is dict:
        return "mapping"
    return getattr(annotation, "__name__", str(annotation))


def _record_fields_section() -> list[str]:
    """Every field a record of each kind takes (from the record models themselves, so it cannot drift),
    and the unit each metric is compared in."""
    from pydantic_core import PydanticUndefined

    from dtsim.validation import records as rec

    out = [
        "## Record fields",
        "",
        "What a record file (`--runs DIR`) may hold, by `kind`, read from the record models",
        "(`validation/records.py`). A group's `defaults:` give any of these to all its records.",
        "",
        "| metric | unit it is compared in |",
        "| --- | --- |",
        *(f"| {m} | {' or '.join(repr(u) for u in units)} |" for m, units in rec.METRIC_UNITS.items()),
        "",
    ]
    models = (
        rec.DatacenterRecord,
        rec.CollectiveRecord,
        rec.GemmRecord,
        rec.TestbedRecord,
        rec.DecentralizedRecord,
        rec.ReferenceRecord,
    )
    for model in models:
        kind = _type_text(model.model_fields["kind"].annotation)
        out += [
            f"### kind: {kind}",
            "",
            "| field | type | required / default | what it is |",
            "| --- | --- | --- | --- |",
        ]
        for name, f in model.model_fields.items():
            if name == "kind":
                continue
            if f.is_required():
                need = "required"
            elif f.default is PydanticUndefined or f.default is None:
                need = "optional"
            else:
                need = f"default {f.default!r}"
            what = " ".join((f.description or "").split()).replace("|", PIPE)
            kinds = _type_text(f.annotation).replace("|", PIPE)
            out.append(f"| {name} | {kinds} | {need} | {what} |")
        out.append("")
    return out


def render() -> str:
    data = load_dataset()
    result = validate(data)
    out = [
        "# Validation against measured runs",
        "",
        "Generated by `python -m dtsim.validation.docs` from `dtsim validate` (do not edit by hand). Every",
        "bundled record of `src/dtsim/catalog/measured_runs/` is predicted by the model that fits it and stated in",
        "the record's own metric and FLOP convention. **calibration** rows were used to fit a constant",
        "(`dtsim calibrate`, listed at the end); **check** rows are predictions. Errors are",
        "predicted / measured − 1; for percentages the difference in points is given too.",
        "",
        "Run it yourself: `dtsim validate` (table), `dtsim validate --json`, `dtsim validate --plot",
        "scatter.png`; add your own runs with `--runs DIR` (one YAML file per set of records, the same",
        "schema as the bundled files). A record's `unit` must be the one its metric is compared in",
        "(`validation/records.METRIC_UNITS`: busbw_gb_s in GB/s, wall_clock_days in days, ...), and a",
        "rejected record makes `validate` and `calibrate` exit 1 (`calibrate` then writes nothing).",
        "A `--runs` folder is read as one set: a record may name a group another of its files defines.",
        "`dtsim calibrate --out FILE` keeps an existing FILE unless `--force`. A calibration file given",
        "with `--calibration` is laid over the packaged calibration: the constants it fits replace theirs,",
        "every other stays packaged (a fit of NCCL rows alone leaves the A100 clock derate as it was).",
        "In a calibration file each fitted entry lists `fitted_on` (its records), `rms_log_error` (the",
        "root mean square of log(predicted / measured) over them) and `residuals` (each record's",
        "predicted / measured − 1, the same error as the tables below, not a log).",
        "",
    ]
    pooled = result.datacenter_check
    if pooled["runs"]:
        out += [
            f"**Datacenter check runs pooled:** {pooled['runs']}, median |error| "
            f"{pooled['median_abs_error']:.1%} (issue 13 aims at 7 %).",
            "",
        ]
    out += [
        "**Fit verdicts.** Every measured training run here ran, so the right memory verdict for each is",
        f'"fits": {result.fit_verdicts_text()}.',
        "No recorded out-of-memory layout is bundled yet, so only this direction is checked.",
        "",
    ]
    coverage = result.interval_coverage
    if coverage["sources"]:
        levels = coverage["levels"]
        out += [
            "## Model-error intervals",
            "",
            "`dtsim step` and `dtsim plan` give every step time (and MFU, and days) an 80 % interval: the",
            "prediction times the split-conformal bounds of measured / predicted step time over the check",
            "runs below (`src/dtsim/catalog/model_error.yaml`, written by `python -m dtsim.validation.model_error`;",
            'Lei et al. 2018, "Distribution-Free Predictive Inference for Regression", §2.2, on the signed',
            "log ratio, each tail at half the miss rate). Runs of one publication share a stack and a way of",
            "measuring, so every source weighs the same in the bounds (each run 1 / its source's run count;",
            'weighted split conformal, Tibshirani et al. 2019, "Conformal Prediction Under Covariate Shift"),',
            "and the intervals are checked leaving a whole source out: the share of each source's",
            "runs inside the interval built from the other sources' check runs. Calibration sources are",
            "in-sample (the model's constants were fitted on them); records of `--runs` files are grouped by",
            "their groups' `source_set` (a group without one is a source of its own).",
            "",
            "| runs of | runs | " + " | ".join(f"{lv:.0%}" for lv in levels) + " |",
            "| --- | ---: | " + " | ".join("---:" for _ in levels) + " |",
        ]
        for name, runs, cells in coverage_rows(coverage):
            out.append(f"| {name} | {runs} | " + " | ".join(cells) + " |")
        out.append("")
        out += _uncertainty_section()
    summary = result.summary
    for name, entry in summary.items():
        group = data.groups.get(name)
        out.append(f"## {name}")
        out.append("")
        if group is not None and group.description:
            out.append(group.description + ".")
            out.append("")
        stats = []
        if entry.median_abs_error is not None:
            stats.append(f"median |error| {entry.median_abs_error:.1%}, max {entry.max_abs_error:.1%}")
        if entry.max_abs_points is not None:
            stats.append(f"max {entry.max_abs_points:.1f} points")
        if entry.spearman is not None:
            stats.append(f"rank correlation {entry.spearman:.2f}")
        for c in entry.bounds:
            limit = f"{c.limit:g} points" if c.bound == "max_abs_points" else f"{c.limit:.0%}"
            stats.append(
                f"bound {c.bound.replace('_', ' ')} ≤ {limit} on {c.metric}: {'met' if c.ok else 'NOT met'}"
            )
        out.append(
            f"Role: {', '.join(entry.roles)}; {entry.predicted} of {entry.runs} predicted. "
            + "; ".join(stats)
            + ("." if stats else "")
        )
        out.append("")
        rows = [r for r in result.runs if r.group == name]
        if rows and rows[0].role == "reference":
            out.append("| id | metric | as measured | source | why not predicted |")
            out.append("| --- | --- | --- | --- | --- |")
            for r in rows:
                out.append(f"| {r.id} | {r.metric} | {r.measured_text} | {r.source} | {r.reason} |")
        else:
            out.append("| id | role | metric (convention) | unit | measured | predicted | error | source |")
            out.append("| --- | --- | --- | --- | ---: | ---: | ---: | --- |")
            for r in rows:
                err = "—" if r.error is None else f"{r.error:+.1%}"
                if r.points is not None:
                    err += f" ({r.points:+.1f} pt)"
                conv = f"{r.metric} ({r.convention})" if r.convention else r.metric
                out.append(
                    f"| {r.id} | {r.role} | {conv} | {r.unit} | {_num(r.measured)} | "
                    f"{_num(r.predicted)} | {err} | {r.source} |"
                )
        out.append("")
        if group is not None and group.assumptions:
            out.append("Assumptions: " + "; ".join(group.assumptions) + ".")
            out.append("")
        if group is not None and group.leaves_out:
            out.append("What the model leaves out: " + group.leaves_out)
            out.append("")
        if entry.worst is not None and len(rows) > 1 and abs(entry.worst_error) >= 0.05:
            why = (entry.worst_why or "").split("leaves out:")[0].rstrip("; ")
            out.append(f"Worst run: {entry.worst} ({entry.worst_error:+.1%})" + (f"; {why}." if why else "."))
            out.append("")
    out += _record_fields_section()
    out.append("## Fitted constants")
    out.append("")
    subset = ", ".join(result.calibration_subset or [])
    out.append(f"Fitted on {subset} ({result.calibration_date}); `dtsim calibrate` refits them.")
    out.append("")
    out.append("| section | name | constant | value | fitted on | RMS log error |")
    out.append("| --- | --- | --- | ---: | --- | ---: |")
    for c in result.constants:
        out.append(
            f"| {c.section} | {c.name} | {c.constant} | {c.value:.4g} | {', '.join(c.fitted_on)} | "
            f"{'—' if c.rms_log_error is None else format(c.rms_log_error, '.4f')} |"
        )
    out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    from dtsim.textfiles import write_generated

    return write_generated(
        argv, "docs/validation.md (the measured-run tables)", Path("docs/validation.md"), render
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
