"""Measured datacenter runs against the datacenter model, and the calibration of the sustained-clock
derate per GPU generation (fitted on the calibration groups only).

    python -m dtsim.analysis.dc_validation          # print the table, errors per group
    python -m dtsim.analysis.dc_validation --fit    # refit and rewrite catalog/calibration.yaml
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import statistics
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from dtsim import catalog
from dtsim.datacenter import Cluster, Layout, Workload, step


@dataclass(frozen=True)
class Run:
    id: str
    group: str
    role: str  # calibration | check
    workload: Workload
    convention: str
    measured: float
    source: str
    assumptions: tuple[str, ...] = field(default_factory=tuple)


def load_runs() -> list[Run]:
    data = yaml.safe_load(
        resources.files("dtsim.measured_runs").joinpath("datacenter.yaml").read_text("utf-8")
    )
    runs = []
    for row in data["runs"]:
        g = data["groups"][row["group"]]
        layout = dict(g["layout"])
        for key in ("mbs", "vpp", "schedule"):
            if key in row:
                layout[key] = row[key]
        if g.get("sequence_parallel_when_tp"):
            layout["sequence_parallel"] = row["tp"] > 1
        layout.update(dp=row["dp"], tp=row["tp"], pp=row["pp"], gbs=row["gbs"])
        gpn = 8
        workload = Workload(
            model=row["model"],
            seq_len=row["seq_len"],
            precision=g["precision"],
            cluster=Cluster(
                gpu=g["gpu"], nodes=max(1, row["n_gpus"] // gpn), gpus_per_node=min(gpn, row["n_gpus"])
            ),
            layout=Layout(**layout),
        )
        runs.append(
            Run(
                row["id"],
                row["group"],
                g["role"],
                workload,
                row["convention"],
                float(row["measured"]),
                row["source"],
                tuple(g["assumptions"]),
            )
        )
    return runs


def predict(run: Run, clock_derate: float | None = None, calibrated: bool = True) -> float:
    """Predicted TFLOP/s per GPU in the run's own convention."""
    r = step(run.workload, clock_derate=clock_derate, calibrated=calibrated)
    if run.convention == "megatron2021":
        return r.megatron2021_flop_per_step / r.step_time_s / r.n_gpus / 1e12
    if run.convention == "model":
        return r.model_tflops_per_gpu
    if run.convention == "hardware":
        return r.hardware_tflops_per_gpu
    raise ValueError(run.convention)


def generation(run: Run) -> str:
    return catalog.gpus()[run.workload.cluster.gpu].micro.generation


def fit_clock_derate(runs: list[Run], gen: str) -> tuple[float, float]:
    """The derate minimising Σ log²(predicted/measured) over the calibration runs of a generation
    (golden-section search on [0.4, 1.0]); returns (derate, RMS log error)."""
    rows = [r for r in runs if r.role == "calibration" and generation(r) == gen]
    if not rows:
        raise ValueError(f"no calibration runs for {gen}")

    def loss(d: float) -> float:
        return sum(math.log(predict(r, clock_derate=d) / r.measured) ** 2 for r in rows)

    lo, hi = 0.4, 1.0
    phi = (math.sqrt(5) - 1) / 2
    a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
    fa, fb = loss(a), loss(b)
    for _ in range(40):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - phi * (hi - lo)
            fa = loss(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + phi * (hi - lo)
            fb = loss(b)
    best = (lo + hi) / 2
    return best, math.sqrt(loss(best) / len(rows))


def results(runs: list[Run] | None = None) -> list[dict]:
    runs = runs if runs is not None else load_runs()
    out = []
    for r in runs:
        p = predict(r)
        out.append(
            {
                "id": r.id,
                "group": r.group,
                "role": r.role,
                "convention": r.convention,
                "measured": r.measured,
                "predicted": p,
                "error": p / r.measured - 1.0,
            }
        )
    return out


def summary(rows: list[dict]) -> dict[str, dict]:
    groups: dict[str, dict] = {}
    for g in dict.fromkeys(r["group"] for r in rows):
        errs = [abs(r["error"]) for r in rows if r["group"] == g]
        groups[g] = {
            "role": next(r["role"] for r in rows if r["group"] == g),
            "runs": len(errs),
            "median_abs_error": statistics.median(errs),
            "max_abs_error": max(errs),
        }
    return groups


def write_calibration(path: Path | None = None) -> dict:
    runs = load_runs()
    gens = sorted({generation(r) for r in runs if r.role == "calibration"})
    entries = {}
    for gen in gens:
        value, rms = fit_clock_derate(runs, gen)
        entries[gen] = {
            "clock_derate": round(value, 4),
            "fitted_on": [r.id for r in runs if r.role == "calibration" and generation(r) == gen],
            "rms_log_error": round(rms, 4),
            "method": "golden-section search of Σ log²(predicted/measured TFLOP/s per GPU) over [0.4, 1.0]",
            "date": _dt.date.today().isoformat(),
        }
    doc = {
        "about": "Efficiency constants fitted on the calibration groups of dtsim/measured_runs "
        "(python -m dtsim.analysis.dc_validation --fit). Check groups are never fitted.",
        "generations": entries,
    }
    target = path or Path(str(resources.files("dtsim.catalog").joinpath("calibration.yaml")))
    target.write_text(yaml.safe_dump(doc, sort_keys=False, width=110), encoding="utf-8")
    catalog.calibration.cache_clear()
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit and rewrite catalog/calibration.yaml")
    args = ap.parse_args()
    if args.fit:
        doc = write_calibration()
        for gen, e in doc["generations"].items():
            print(
                f"fitted {gen}: clock_derate = {e['clock_derate']} (RMS log error {e['rms_log_error']}) "
                f"on {', '.join(e['fitted_on'])}"
            )
    rows = results()
    print(f"{'run':16s} {'role':12s} {'convention':13s} {'measured':>9s} {'predicted':>9s} {'error':>8s}")
    for r in rows:
        print(
            f"{r['id']:16s} {r['role']:12s} {r['convention']:13s} {r['measured']:9.1f} {r['predicted']:9.1f} "
            f"{r['error']:+8.1%}"
        )
    for g, s in summary(rows).items():
        print(
            f"{g:8s} ({s['role']}, {s['runs']} runs): median |error| {s['median_abs_error']:.1%}, "
            f"max {s['max_abs_error']:.1%}"
        )
    for gen, e in catalog.calibration().items():
        print(
            f"calibration in use: {gen} clock_derate {e['clock_derate']} fitted on {len(e['fitted_on'])} runs"
        )


if __name__ == "__main__":
    main()
