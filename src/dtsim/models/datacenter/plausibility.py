"""Plausibility of a predicted MFU: the best MFU measured in dtsim's own records for the same GPU
generation and parallelism class is a ceiling a prediction should not pass without a warning.

The ceilings live in catalog/mfu_ceilings.yaml, generated from the measured datacenter runs by
`python -m dtsim.validation.mfu_ceilings` (each measurement converted to model-FLOP utilization with
the exact FLOP counts of its own workload; a test keeps the file current). They are citations, not
fitted constants: no model number depends on them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from dtsim import catalog

CLASSES = {
    "sharded-dp": "ZeRO-3/FSDP sharded data parallelism",
    "model-parallel": "tensor or pipeline parallelism",
    "data-parallel": "data parallelism only",
}


def parallelism_class(zero: int, tp: int, pp: int) -> str:
    """The class a layout's MFU is compared within."""
    if zero >= 3:
        return "sharded-dp"
    return "model-parallel" if tp > 1 or pp > 1 else "data-parallel"


@cache
def ceilings() -> dict[str, Any]:
    """generation → class → {mfu, record, source} (catalog/mfu_ceilings.yaml)."""
    return catalog.load_table("mfu_ceilings.yaml")


MFU_DOUBT = "predicted MFU"  # every mfu_warning starts so
HFU_DOUBT = "HFU"  # and step's HFU-above-the-peak warnings so


def doubts_mfu(warning: str) -> bool:
    """Whether a layout's warning doubts its MFU (mfu_warning, or an HFU above the peak) rather than
    saying what an option did: the ones a table marks with ! beside the MFU."""
    return warning.startswith((MFU_DOUBT + " ", HFU_DOUBT + " "))


def mfu_doubted(warnings: list[str]) -> bool:
    """Whether any of a layout's warnings doubts its MFU."""
    return any(doubts_mfu(w) for w in warnings)


def warnings_by_rows(warnings_by_row: list[list[str]], first: int = 0) -> list[tuple[str, str, bool]]:
    """Every warning of a table numbered from `first` once, as (the rows it is on — "every row" when it
    is on all of them, else "#2, #5" —, the warning, whether it doubts an MFU, marked ! in the table),
    those that doubt an MFU first. Each row's own doubt stays its own: the rows' MFUs, and the records
    or the counting they are doubted by, differ. The CLI and the web page list these under a table."""
    rows: dict[str, list[int]] = {}
    for i, ws in enumerate(warnings_by_row, first):
        for w in ws:
            if i not in rows.setdefault(w, []):
                rows[w].append(i)
    out = []
    for w, where in sorted(rows.items(), key=lambda item: not doubts_mfu(item[0])):
        label = "every row" if len(where) == len(warnings_by_row) > 1 else ", ".join(f"#{i}" for i in where)
        out.append((label, w, doubts_mfu(w)))
    return out


def mfu_marked(mfu: float, warnings: list[str]) -> str:
    """A table's MFU as the CLI and the pages show it: marked ! when one of its warnings doubts it."""
    return f"{mfu:.1%}" + ("!" if mfu_doubted(warnings) else "")


def mfu_warning(gpu: str, layout: dict[str, Any], mfu: float) -> str:
    """A warning when `mfu` is above the best measured for the GPU's generation and the layout's class,
    or when the records hold no run of that generation and class to check it against ('' otherwise)."""
    generation = catalog.gpus()[gpu].micro.generation
    chips = "chips" if generation.startswith("tpu") else "GPUs"
    cls = parallelism_class(int(layout["zero"]), int(layout["tp"]), int(layout["pp"]))
    known = ceilings().get(generation) or {}
    best = known.get(cls)
    if best is None:
        other = max(known.values(), key=lambda b: b["mfu"], default=None)
        if other is not None and mfu > other["mfu"]:  # above every class measured on this generation
            return (
                f"{MFU_DOUBT} {mfu:.1%} is above the best measured in dtsim's records for {generation} "
                f"{chips} with any parallelism: {other['mfu']:.1%} ({other['record']}, {other['source']}); "
                f"none of them used {CLASSES[cls]}; treat it as optimistic"
            )
        if not known:  # no run of this generation at all: the best of any generation bounds it
            top = max(
                ((g, b) for g, by_class in ceilings().items() for b in by_class.values()),
                key=lambda gb: gb[1]["mfu"],
                default=None,
            )
            if top is not None and mfu > top[1]["mfu"]:
                g, b = top
                return (
                    f"{MFU_DOUBT} {mfu:.1%} is above the best measured on any accelerator in dtsim's "
                    f"records, {b['mfu']:.1%} ({g}, {b['record']}, {b['source']}), and dtsim's records hold "
                    f"no measured run of {generation} {chips}; treat it as optimistic"
                )
        return (
            f"{MFU_DOUBT} {mfu:.1%} is unchecked: dtsim's records hold no measured run of {generation} "
            f"{chips} with {CLASSES[cls]}"
        )
    if mfu <= best["mfu"]:
        return ""
    shown = ".1%" if f"{mfu:.1%}" != f"{best['mfu']:.1%}" else ".2%"  # never "56.3% is above 56.3%"
    return (
        f"{MFU_DOUBT} {mfu:{shown}} is above the best measured in dtsim's records for {generation} "
        f"{chips} with {CLASSES[cls]}: {best['mfu']:{shown}} ({best['record']}, {best['source']}); treat it "
        "as optimistic"
    )
