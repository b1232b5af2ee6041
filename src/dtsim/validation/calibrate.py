"""`dtsim calibrate`: fit the few documented efficiency constants on a named calibration subset.

The constants, each fitted by golden-section search of Σ log²(predicted / measured) over the subset's
records that constrain it, in this order (each later fit uses the earlier ones):

1. fabrics — per fabric, the achievable bus-bandwidth fraction on its large-message NCCL/gloo ring rows,
   the per-step latency α on its small-message rows (a record constrains the fabric that limits it:
   NVLink inside a node, the NICs when a ring spans nodes and they are the slower path) and, for an
   NVLink whose switch reduces, the NVLS all-reduce bandwidth fraction on its NVLS rows;
2. testbed — the host-limited all-reduce rate per CPU core of the thesis testbed (its uncapped
   calibration rows; a rank's rate is this times the cores it has, `physics.hostbound`);
3. wan — the TCP window of single-stream WAN transfers (decentralized rows marked window-limited);
4. generations — the sustained-clock derate of each GPU generation (datacenter rows).

Nothing is fitted per run. The result names, for every constant, the records it was fitted on, its
RMS log error and each record's residual, and the date; `dtsim validate` marks those records as
calibration so a fit is never mistaken for a prediction.
"""

from __future__ import annotations

import copy
import datetime as _dt
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from dtsim import catalog
from dtsim.validation.predict import predict, record_gpu
from dtsim.validation.records import Dataset

DEFAULT_OUT = Path("calibration.yaml")  # the working directory, never the package
METHOD = "golden-section search of Σ log²(predicted/measured) over the records listed in fitted_on"


def _golden(loss: Callable[[float], float], lo: float, hi: float, log: bool, iterations: int = 60) -> float:
    f = (lambda u: loss(math.exp(u))) if log else loss
    a, b = (math.log(lo), math.log(hi)) if log else (lo, hi)
    phi = (math.sqrt(5) - 1) / 2
    c, d = b - phi * (b - a), a + phi * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iterations):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - phi * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + phi * (b - a)
            fd = f(d)
    x = (a + b) / 2
    return math.exp(x) if log else x


def _loss(records: list[Any], doc: dict[str, Any]) -> float:
    with catalog.use_calibration(doc):
        total = 0.0
        for r in records:
            value, _ = predict(r)
            total += math.log(value / r.measured) ** 2
    return total


def _residuals(records: list[Any], doc: dict[str, Any]) -> tuple[float, dict[str, float]]:
    with catalog.use_calibration(doc):
        res = {r.id: round(predict(r)[0] / r.measured - 1.0, 5) for r in records}
    rms = math.sqrt(sum(math.log(1 + e) ** 2 for e in res.values()) / len(res))
    return rms, res


def _limiting_fabric(rec) -> str | None:
    """The fabric whose bandwidth (busbw rows) or latency (time rows) a collective record measures."""
    fabrics = catalog.fabrics()
    nodes = math.ceil(rec.ranks / rec.gpus_per_node)
    if nodes <= 1:
        return rec.intra_fabric
    if rec.metric != "busbw_gb_s" or rec.intra_fabric is None:
        return rec.inter_fabric
    per_node = min(rec.ranks, rec.gpus_per_node)
    nics = rec.nics_per_node if rec.nics_per_node is not None else per_node
    nic = fabrics[rec.inter_fabric].bus_bytes_per_s * nics
    return rec.inter_fabric if nic < fabrics[rec.intra_fabric].bus_bytes_per_s else rec.intra_fabric


def _bandwidth_bound(rec) -> bool:
    """Whether a collective row measures bandwidth (large message) rather than latency."""
    limit = 1e8 if rec.metric == "busbw_gb_s" else 1e7
    return rec.size_bytes >= limit


GOLDEN_ITERATIONS = 60  # golden-section steps per constant: the bracket shrinks by 0.618^60 ≈ 3e-13


class _Meter:
    """Counts record predictions for a progress callback(done, total)."""

    def __init__(self, progress: Callable[[int, int], None] | None) -> None:
        self.progress, self.done, self.total = progress, 0, 1

    def add(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(min(self.done, self.total), self.total)


# The record kinds this fits constants on; a calibration group of another kind (MAMF-FP8's GEMM rows)
# sets catalog constants by hand, and its rows stay calibration whatever file is in use (runner).
FITTED_KINDS = frozenset({"collective", "testbed", "decentralized", "datacenter"})


def calibrate(
    dataset: Dataset, subset: list[str] | None = None, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Fit every constant the subset constrains; return the calibration document. `progress(done,
    total)` is called as record predictions are made (the golden-section searches make them all)."""
    meter = _Meter(progress)
    names = subset or [
        g.name
        for g in dataset.groups.values()
        if g.role == "calibration" and any(r.kind in FITTED_KINDS for r in dataset.subset([g.name]))
    ]
    records = [r for r in dataset.subset(names) if r.kind != "reference"]
    doc: dict[str, Any] = {
        "about": "Efficiency constants fitted by `dtsim calibrate` on the calibration subset below; every "
        "other record is a prediction. Regenerate with `dtsim calibrate`.",
        "subset": list(names),
        "date": _dt.date.today().isoformat(),
        "method": METHOD,
        "generations": {},
        "fabrics": {},
        "testbed": {},
        "wan": {},
    }

    # 1. fabrics: latency from latency-bound rows, efficiency from bandwidth-bound rows (two passes)
    coll_recs = [r for r in records if r.kind == "collective"]
    by_fabric: dict[str, list[Any]] = {}
    with catalog.use_calibration(doc):
        for r in coll_recs:
            fid = _limiting_fabric(r)
            if fid is not None:
                by_fabric.setdefault(fid, []).append(r)
    tb = [r for r in records if r.kind == "testbed" and r.metric == "allreduce_s"]
    wan = [r for r in records if r.kind == "decentralized" and r.network.get("window_limited")]
    dc = [r for r in records if r.kind == "datacenter"]
    fabric_fits = sum(
        len([r for r in recs if r.algorithm in ("ring", "nvls")]) for recs in by_fabric.values()
    )
    meter.total = (GOLDEN_ITERATIONS + 2) * (2 * fabric_fits + len(tb) + len(wan) + len(dc))
    for _ in range(2):
        for fid, recs in by_fabric.items():
            lat = [r for r in recs if not _bandwidth_bound(r) and r.algorithm == "ring"]
            bw = [r for r in recs if _bandwidth_bound(r) and r.algorithm == "ring"]
            nvls = [r for r in recs if _bandwidth_bound(r) and r.algorithm == "nvls"]
            entry = doc["fabrics"].setdefault(fid, {})
            if bw:
                entry["efficiency"] = round(
                    _fit(doc, bw, ("fabrics", fid, "efficiency"), 0.02, 1.0, False, meter, keep_entry=True), 4
                )
            if lat:
                value = _fit(
                    doc, lat, ("fabrics", fid, "latency_s"), 1e-8, 1e-2, True, meter, keep_entry=True
                )
                entry["latency_s"] = float(f"{value:.4g}")
            if nvls:  # NVLink SHARP's bandwidth (its latency is NCCL's own figure, fabrics.yaml)
                entry["nvls_efficiency"] = round(
                    _fit(
                        doc,
                        nvls,
                        ("fabrics", fid, "nvls_efficiency"),
                        0.02,
                        1.0,
                        False,
                        meter,
                        keep_entry=True,
                    ),
                    4,
                )
    for fid, recs in by_fabric.items():
        entry = doc["fabrics"][fid]
        entry["fitted_on"] = [r.id for r in recs]
        entry["rms_log_error"], entry["residuals"] = _residuals(recs, doc)
        entry["rms_log_error"] = round(entry["rms_log_error"], 5)

    # 2. the thesis testbed's host-limited all-reduce rate per core
    if tb:
        value = _fit(doc, tb, ("testbed", "host_rate_per_core_bit_s", "value"), 1e5, 1e11, True, meter)
        doc["testbed"]["host_rate_per_core_bit_s"] = {
            "value": float(f"{value:.5g}"),
            "unit": "bit/s per core",
        }
        _record_fit(doc["testbed"]["host_rate_per_core_bit_s"], tb, doc)

    # 3. the TCP window of single-stream WAN transfers
    if wan:
        value = _fit(doc, wan, ("wan", "tcp_window_bytes", "value"), 1e4, 1e10, True, meter)
        doc["wan"]["tcp_window_bytes"] = {"value": float(f"{value:.5g}"), "unit": "bytes"}
        _record_fit(doc["wan"]["tcp_window_bytes"], wan, doc)

    # 4. the sustained-clock derate of each GPU generation
    gens: dict[str, list[Any]] = {}
    for r in dc:
        gpu = catalog.gpus()[record_gpu(r)]
        gens.setdefault(gpu.micro.generation, []).append(r)
    for gen, recs in sorted(gens.items()):
        value = _fit(doc, recs, ("generations", gen, "clock_derate"), 0.3, 1.0, False, meter)
        doc["generations"][gen] = {"clock_derate": round(value, 4)}
        _record_fit(doc["generations"][gen], recs, doc)
    meter.add(meter.total)  # done (a fabric row that is neither kind made the total an upper bound)
    pinned = doc.pop("pinned", {})
    if pinned:
        doc["pinned"] = list(pinned.values())
    return doc


def _fit(
    doc: dict[str, Any],
    recs: list[Any],
    path: tuple[str, str, str],
    lo: float,
    hi: float,
    log: bool,
    meter: _Meter | None = None,
    keep_entry: bool = False,
) -> float:
    """The value of doc[section][name][key] in [lo, hi] that minimises Σ log²(predicted / measured) over
    `recs`, by golden-section search (the rest of the document as it stands). The trial entry is
    {key: x} alone, or, with `keep_entry`, the entry's other constants with `key` set to x."""
    section, name, key = path

    def loss(x: float) -> float:
        trial = copy.deepcopy(doc)
        entry = trial[section].get(name, {}) if keep_entry else {}
        trial[section][name] = {**entry, key: x}
        if meter is not None:
            meter.add(len(recs))
        return _loss(recs, trial)

    value = _golden(loss, lo, hi, log=log, iterations=GOLDEN_ITERATIONS)
    span = (math.log(hi) - math.log(lo)) if log else (hi - lo)
    where = f"{section}.{name}.{key}"
    doc.get("pinned", {}).pop(where, None)  # a later pass of the same constant replaces the verdict
    for end, bound in (("lower", lo), ("upper", hi)):
        gap = abs(math.log(value / bound)) if log else abs(value - bound)
        if gap <= 1e-6 * span:  # the search ran into an end of its range: the records ask for more
            doc.setdefault("pinned", {})[where] = (
                f"{where} = {value:.4g} sits at the {end} end of its search range "
                f"[{lo:g}, {hi:g}] (fitted on {', '.join(r.id for r in recs[:3])}"
                + (" …" if len(recs) > 3 else "")
                + "): the records ask for a value the model does not allow; check their units "
                "(per GPU or per node, GB/s or Gbit/s)"
            )
    return value


def _record_fit(entry: dict[str, Any], recs: list[Any], doc: dict[str, Any]) -> None:
    """Add what a fitted constant was fitted on and how well it fits to its entry."""
    rms, res = _residuals(recs, doc)
    entry.update(fitted_on=[r.id for r in recs], rms_log_error=round(rms, 5), residuals=res)


def existing_calibration(path: Path) -> str:
    """Why `calibrate` will not write over `path`: what it holds (a calibration's date and subset, or
    another file) and how to go on. Read through the input guard: a FIFO, a device or a huge file is
    never opened in full."""
    from dtsim.errors import ScenarioError
    from dtsim.textfiles import read_text_file

    if path.is_dir():
        return "is a folder; give a file name"
    if not path.is_file():
        return "is not a regular file (a pipe, device or socket); give a file name"
    what = "exists"
    try:
        old = yaml.safe_load(read_text_file(path, "--out"))
    except (ScenarioError, yaml.YAMLError):
        old = None
    if isinstance(old, dict) and "subset" in old:
        subset = old.get("subset")
        subset = ", ".join(map(str, subset)) if isinstance(subset, list) else subset
        what = f"holds a calibration of {old.get('date', 'an unknown date')} fitted on {subset}"
    return f"{what}; pass --force to replace it, or another --out"


def write(doc: dict[str, Any], path: str | Path = DEFAULT_OUT) -> Path:
    """Write a calibration document to `path` (default ./calibration.yaml; JSON when the name ends in
    .json), never into the installed package; `--calibration FILE` (or `dtsim.step(..., calibration=FILE)`) puts it in use."""
    target = Path(path)
    if target.suffix.lower() == ".json":  # what the name says; --calibration reads either
        import json

        text = json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
    else:
        text = yaml.safe_dump(doc, sort_keys=False, width=110, allow_unicode=True)
    target.write_text(text, encoding="utf-8")
    return target
