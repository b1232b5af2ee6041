"""The datacenter model against measured runs (issue 4 item 2).

    python benchmarks/datacenter_validation.py [--refit]

Prints, for every MEG21-*, KOR22-* and MCORE24-* row of shared/reference/measured_runs.csv (as
transcribed in src/dtsim/measured_runs/datacenter.yaml), the measured and predicted TFLOP/s per GPU in
the row's own convention, first with the catalogue constants alone (seed 002's sustained-clock derates)
and then with the one constant fitted per GPU generation on the calibration groups (KOR22 + MEG21).
MCORE24 (H100) is a check group: nothing is fitted on it. `--refit` re-runs the fit instead of reading
catalog/calibration.yaml. Exits 1 if the median absolute error on MEG21 or MCORE24 exceeds 10%.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from dtsim.analysis import dc_validation as val


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refit", action="store_true", help="fit the derate now instead of reading the catalog")
    args = ap.parse_args()
    t0 = time.perf_counter()
    runs = val.load_runs()
    fitted: dict[str, float] = {}
    for gen in sorted({val.generation(r) for r in runs if r.role == "calibration"}):
        if args.refit:
            fitted[gen], rms = val.fit_clock_derate(runs, gen)
            print(f"fit  {gen}: clock_derate {fitted[gen]:.4f} (RMS log error {rms:.4f})")
        else:
            from dtsim.datacenter import calibrated_derate

            fitted[gen] = calibrated_derate(gen)
            print(f"calibration.yaml {gen}: clock_derate {fitted[gen]:.4f}")
    print(
        f"\n{'run':16s} {'role':12s} {'convention':13s} {'measured':>9s} {'catalog':>9s} {'err':>7s} {'fitted':>9s} {'err':>7s}"
    )
    groups: dict[str, list[float]] = {}
    raw_groups: dict[str, list[float]] = {}
    for r in runs:
        raw = val.predict(r, calibrated=False)
        gen = val.generation(r)
        fit = val.predict(r, clock_derate=fitted.get(gen), calibrated=False)
        e_raw, e_fit = raw / r.measured - 1, fit / r.measured - 1
        groups.setdefault(r.group, []).append(abs(e_fit))
        raw_groups.setdefault(r.group, []).append(abs(e_raw))
        print(
            f"{r.id:16s} {r.role:12s} {r.convention:13s} {r.measured:9.1f} {raw:9.1f} {e_raw:+7.1%} {fit:9.1f} {e_fit:+7.1%}"
        )
    print()
    ok = True
    for g, errs in groups.items():
        role = next(r.role for r in runs if r.group == g)
        med = statistics.median(errs)
        print(
            f"{g:8s} ({role}, {len(errs)} runs): median |error| {med:.1%} (catalogue only {statistics.median(raw_groups[g]):.1%}), max {max(errs):.1%}"
        )
        if g in ("MEG21", "MCORE24") and med > 0.10:
            ok = False
    print(
        f"\n{time.perf_counter() - t0:.1f} s; target median |error| ≤ 10% on MEG21 and MCORE24: {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
