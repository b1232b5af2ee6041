"""A user's calibration file (what `dtsim calibrate --out FILE` writes), read and checked.

The packaged catalog/calibration.yaml is the default; `dtsim step|plan|validate --calibration FILE` and
`dtsim.step(..., calibration=FILE)` use a file like this instead. Every fitted constant is checked
against what the models accept, so a typo fails loudly (option, path, key and what is allowed) instead
of being ignored.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError

SECTIONS = ("about", "subset", "date", "method", "pinned", "generations", "fabrics", "testbed", "wan")
# section → {constant: (lowest, highest, whether the lowest is allowed)}
_ENTRY_CONSTANTS = {
    "generations": {"clock_derate": (0.0, 1.0, False)},
    "fabrics": {
        "efficiency": (0.0, 1.0, False),
        "latency_s": (0.0, 1.0, True),
        "nvls_efficiency": (0.0, 1.0, False),
    },
}
# what the models read from each entry without fail (catalog/calibration.yaml always has it)
_REQUIRED = {"generations": "clock_derate"}
# what `dtsim calibrate` records beside a fitted constant (provenance, read by `dtsim validate`)
_METADATA = ("fitted_on", "rms_log_error", "residuals", "method", "unit")
_VALUE_CONSTANTS = {
    "testbed": {"host_rate_per_core_bit_s": (0.0, math.inf, False)},
    "wan": {"tcp_window_bytes": (0.0, math.inf, False)},
}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _range_text(lo: float, hi: float, closed_lo: bool) -> str:
    left = "[" if closed_lo else "("
    return f"a number in {left}{lo:g}, {hi:g}]" if math.isfinite(hi) else f"a number > {lo:g}"


def check_calibration(doc: Any, known_generations: set[str], known_fabrics: set[str]) -> list[str]:
    """What is wrong with a calibration document, one line per problem (empty when it is usable)."""
    if not isinstance(doc, dict):
        return ["must be a mapping (a file written by `dtsim calibrate`)"]
    problems = [
        f"unknown section {key!r}; allowed: {', '.join(SECTIONS)}" for key in doc if key not in SECTIONS
    ]
    known = {"generations": known_generations, "fabrics": known_fabrics}
    for section, constants in {**_ENTRY_CONSTANTS, **_VALUE_CONSTANTS}.items():
        entries = doc.get(section)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            problems.append(f"{section}: must be a mapping, not {type(entries).__name__}")
            continue
        for name, entry in entries.items():
            where = f"{section}.{name}"
            if section in known:
                if name not in known[section]:
                    problems.append(f"{where}: unknown; known: {', '.join(sorted(known[section]))}")
                    continue
                if not isinstance(entry, dict):
                    problems.append(f"{where}: must be a mapping of constants")
                    continue
                allowed = (*constants, *_METADATA)
                required = _REQUIRED.get(section)
                if required is not None and required not in entry:
                    problems.append(f"{where}: missing {required}")
                values = {k: entry[k] for k in constants if k in entry}
            else:
                if name not in constants:
                    problems.append(f"{where}: unknown; allowed: {', '.join(constants)}")
                    continue
                allowed = ("value", *_METADATA)
                values = {name: entry.get("value") if isinstance(entry, dict) else entry}
            if isinstance(entry, dict):
                problems += [
                    f"{where}.{k}: unknown; allowed: {', '.join(allowed)}" for k in entry if k not in allowed
                ]
                fitted_on = entry.get("fitted_on", [])
                if not isinstance(fitted_on, list) or not all(isinstance(i, str) for i in fitted_on):
                    problems.append(f"{where}.fitted_on = {fitted_on!r}: must be a list of record ids")
            if (
                section == "fabrics"
                and "nvls_efficiency" in values
                and catalog.fabrics()[name].nvls_latency_s is None
            ):
                problems.append(f"{where}.nvls_efficiency: {name} has no NVLink SHARP (NVLS) to calibrate")
            if section not in known:
                where = section
            for key, raw in values.items():
                lo, hi, closed_lo = constants[key]
                x = _number(raw)
                if x is None or x > hi or x < lo or (x == lo and not closed_lo):
                    problems.append(f"{where}.{key} = {raw!r}: must be {_range_text(lo, hi, closed_lo)}")
    return problems


def _known_ids() -> tuple[set[str], set[str]]:
    """The GPU generations and fabric ids a calibration may name."""
    return {g.micro.generation for g in catalog.gpus().values() if g.micro is not None}, set(
        catalog.fabrics()
    )


def read_calibration(path: str | Path, option: str = "calibration") -> dict[str, Any]:
    """The calibration document in `path`, checked; a ScenarioError naming `option`, the path and what
    is wrong otherwise."""
    import yaml  # lazy: only commands that read a calibration pay for it (fast `dtsim --help`)

    from dtsim.textfiles import read_text_file

    p = Path(path)
    text = read_text_file(p, option)  # a FIFO, a device, a folder or over 1 MiB: refused before reading
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        what = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ScenarioError([(option, str(p), f"is not valid YAML: {what}{where}")]) from None
    problems = check_calibration(doc, *_known_ids())
    if problems:
        raise ScenarioError([(option, str(p), problem) for problem in problems])
    return doc


def calibration_in_use(calibration: str | Path | dict[str, Any] | None, option: str = "calibration"):
    """A context in which the models use `calibration` (a file or a document; None: the packaged
    catalog/calibration.yaml, unchanged)."""
    if calibration is None:
        return nullcontext()
    if isinstance(calibration, dict):
        problems = check_calibration(calibration, *_known_ids())
        if problems:
            raise ScenarioError([(option, "<document>", problem) for problem in problems])
        doc = calibration
    else:
        doc = read_calibration(calibration, option)
    return catalog.use_calibration(overlay(catalog.calibration_document(), doc))


FITTED = ("generations", "fabrics", "testbed", "wan")  # the sections of fitted constants


PROVENANCE = ("fitted_on", "residuals", "rms_log_error")  # what a fit records beside its constants


def _overlay_entry(base: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """One entry (a generation, a fabric, …) of a user's calibration over the packaged one: its
    constants replace theirs, the packaged constants it does not set stay, and the provenance follows
    the constants: the records the user's file names, plus the packaged ones only while a packaged
    constant of the entry is still in use (a hand-written clock_derate is fitted on nothing, so the
    packaged records it replaced become checks again); RMS and residuals are the user's only."""
    mine = {k: v for k, v in entry.items() if k not in PROVENANCE}
    kept = {k: v for k, v in base.items() if k not in PROVENANCE and k not in mine}
    out = {**kept, **mine}
    fitted = list(entry.get("fitted_on") or [])
    if kept:
        fitted += [r for r in base.get("fitted_on") or [] if r not in fitted]
    if fitted:
        out["fitted_on"] = fitted
    for k in ("residuals", "rms_log_error"):
        if k in entry:
            out[k] = entry[k]
    return out


def overlay(base: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """A user's calibration laid over the one in effect (the packaged one): each constant the document
    fits replaces that constant, every other stays as it was. A calibration on a subset (NCCL rows only)
    had replaced the whole packaged calibration, so constants it did not fit fell back to the catalog's
    uncalibrated values: the A100 clock derate went from 0.8374 to 0.85 for a fit of NVLink rows."""
    out = dict(doc)
    for section in FITTED:
        merged = {k: dict(v) if isinstance(v, dict) else v for k, v in (base.get(section) or {}).items()}
        for key, entry in (doc.get(section) or {}).items():
            if isinstance(entry, dict) and isinstance(merged.get(key), dict):
                merged[key] = _overlay_entry(merged[key], entry)
            else:
                merged[key] = entry
        if merged:
            out[section] = merged
    if base.get("date") is not None:
        out["laid_over"] = {"date": base.get("date"), "subset": base.get("subset")}
    return out
