"""Plausibility of a predicted MFU: the best MFU measured in dtsim's own records for the same GPU
generation and parallelism class is a ceiling a prediction should not pass without a warning.

The ceilings live in catalog/mfu_ceilings.yaml, generated from the measured datacenter runs by
`python -m dtsim.validation.mfu_ceilings` (each measurement converted to model-FLOP utilization with
the exact FLOP counts of its own workload; a test keeps the file current). They are citations, not
fitted constants: no model number depends on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, Field

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


MFU_DOUBT = "predicted MFU"  # every mfu_warning's message starts so
HFU_DOUBT = "HFU"  # and step's HFU-above-the-peak warnings' so


class LayoutWarning(BaseModel):
    """Why a layout's prediction may not hold, or what an option given did not do: a stable code and a
    message with the numbers, as `simulate`'s warnings are ({code, message})."""

    code: str = Field(description="A stable code (docs/datacenter.md lists them).")
    message: str


# The codes of the warnings that doubt a layout's MFU (an MFU above the best measured or unchecked, an
# MFU or HFU above the peak): the ones a table marks with ! beside the MFU. The others say what an option
# did or did not do.
MFU_DOUBTS = frozenset(
    {"MFU_ABOVE_MEASURED", "MFU_UNCHECKED", "MFU_COUNT_ABOVE_PEAK", "HFU_COUNT_ABOVE_PEAK", "HFU_ABOVE_PEAK"}
)


def warn(code: str, message: str) -> dict[str, str]:
    """A layout warning as the performance dicts hold it (LayoutWarning's fields)."""
    return {"code": code, "message": message}


def code_of(warning: Any) -> str:
    return warning["code"] if isinstance(warning, Mapping) else warning.code


def message_of(warning: Any) -> str:
    return warning["message"] if isinstance(warning, Mapping) else warning.message


def messages(warnings: list[Any]) -> list[str]:
    """The messages of a layout's warnings (dicts or LayoutWarnings), in order."""
    return [message_of(w) for w in warnings]


def doubts_mfu(warning: Any) -> bool:
    """Whether a layout's warning (a dict or a LayoutWarning) doubts its MFU rather than saying what an
    option did: the ones a table marks with ! beside the MFU."""
    return code_of(warning) in MFU_DOUBTS


def mfu_doubted(warnings: list[Any]) -> bool:
    """Whether any of a layout's warnings doubts its MFU."""
    return any(doubts_mfu(w) for w in warnings)


def warnings_by_rows(warnings_by_row: list[list[Any]], first: int = 0) -> list[tuple[str, str, bool]]:
    """Every warning of a table numbered from `first` once, as (the rows it is on — "every row" when it
    is on all of them, else "#2, #5" —, the warning, whether it doubts an MFU, marked ! in the table),
    those that doubt an MFU first. Each row's own doubt stays its own: the rows' MFUs, and the records
    or the counting they are doubted by, differ. The CLI and the web page list these under a table."""
    rows: dict[str, list[int]] = {}
    doubting: dict[str, bool] = {}
    for i, ws in enumerate(warnings_by_row, first):
        for w in ws:
            text = message_of(w)
            doubting[text] = doubts_mfu(w)
            if i not in rows.setdefault(text, []):
                rows[text].append(i)
    out = []
    for text, where in sorted(rows.items(), key=lambda item: not doubting[item[0]]):
        label = "every row" if len(where) == len(warnings_by_row) > 1 else ", ".join(f"#{i}" for i in where)
        out.append((label, text, doubting[text]))
    return out


def mfu_marked(mfu: float, warnings: list[Any]) -> str:
    """A table's MFU as the CLI and the pages show it: marked ! when one of its warnings doubts it."""
    return f"{mfu:.1%}" + ("!" if mfu_doubted(warnings) else "")


def mfu_warning(gpu: str, layout: dict[str, Any], mfu: float) -> dict[str, str] | None:
    """A warning (warn) when `mfu` is above the best measured for the GPU's generation and the layout's
    class (MFU_ABOVE_MEASURED), or when the records hold no run of that generation and class to check it
    against (MFU_UNCHECKED); None otherwise."""
    generation = catalog.gpus()[gpu].micro.generation
    chips = "chips" if generation.startswith("tpu") else "GPUs"
    cls = parallelism_class(int(layout["zero"]), int(layout["tp"]), int(layout["pp"]))
    known = ceilings().get(generation) or {}
    best = known.get(cls)
    if best is None:
        other = max(known.values(), key=lambda b: b["mfu"], default=None)
        if other is not None and mfu > other["mfu"]:  # above every class measured on this generation
            return warn(
                "MFU_ABOVE_MEASURED",
                f"{MFU_DOUBT} {mfu:.1%} is above the best measured in dtsim's records for {generation} "
                f"{chips} with any parallelism: {other['mfu']:.1%} ({other['record']}, {other['source']}); "
                f"none of them used {CLASSES[cls]}; treat it as optimistic",
            )
        if not known:  # no run of this generation at all: the best of any generation bounds it
            top = max(
                ((g, b) for g, by_class in ceilings().items() for b in by_class.values()),
                key=lambda gb: gb[1]["mfu"],
                default=None,
            )
            if top is not None and mfu > top[1]["mfu"]:
                g, b = top
                return warn(
                    "MFU_ABOVE_MEASURED",
                    f"{MFU_DOUBT} {mfu:.1%} is above the best measured on any accelerator in dtsim's "
                    f"records, {b['mfu']:.1%} ({g}, {b['record']}, {b['source']}), and dtsim's records hold "
                    f"no measured run of {generation} {chips}; treat it as optimistic",
                )
        return warn(
            "MFU_UNCHECKED",
            f"{MFU_DOUBT} {mfu:.1%} is unchecked: dtsim's records hold no measured run of {generation} "
            f"{chips} with {CLASSES[cls]}",
        )
    if mfu <= best["mfu"]:
        return None
    shown = ".1%" if f"{mfu:.1%}" != f"{best['mfu']:.1%}" else ".2%"  # never "56.3% is above 56.3%"
    return warn(
        "MFU_ABOVE_MEASURED",
        f"{MFU_DOUBT} {mfu:{shown}} is above the best measured in dtsim's records for {generation} "
        f"{chips} with {CLASSES[cls]}: {best['mfu']:{shown}} ({best['record']}, {best['source']}); treat it "
        "as optimistic",
    )
