"""Software profiles (catalog/software.yaml) applied to a layout: a stack's settings become the
layout's defaults, under every field given explicitly (a flag, a request field, a `--layouts` column,
a measured run's own layout key). Used by `dtsim step`/`plan`, /api/step and /api/plan, and the
measured-run loader (a group's `defaults: {software: ID}`)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError

# The Layout fields a profile may set, and those that may take the rule `with_tp`: the catalog's
# schema of software.yaml (checked when it loads)
SOFTWARE_FIELDS = catalog.SOFTWARE_FIELDS
RULE_FIELDS = catalog.RULE_FIELDS
# What `plan` searches whatever the profile says (the profiles' values are the recorded runs' choice).
PLAN_SEARCHED = ("recompute", "schedule", "embedding_stages")


def software_ids() -> tuple[str, ...]:
    return tuple(catalog.software())


def profile(software_id: Any, name: str = "software") -> catalog.SoftwareProfile:
    """The catalog profile `software_id`; a ScenarioError naming `name`, the value and the known ids
    otherwise."""
    found = catalog.software().get(software_id) if isinstance(software_id, str) else None
    if found is None:
        raise ScenarioError(
            [(name, software_id, f"unknown software profile; known: {', '.join(software_ids())}")]
        )
    return found


def resolved(software_id: Any, tp: Any, name: str = "software") -> dict[str, Any]:
    """The profile's Layout fields for a layout of tensor parallelism `tp` (rules resolved)."""
    try:  # an int, or a --layouts CSV cell's text; anything else is Layout's to refuse
        on = not isinstance(tp, bool) and int(tp) > 1
    except (TypeError, ValueError):
        on = False
    return {k: (on if v == "with_tp" else v) for k, v in profile(software_id, name).layout.items()}


def _given(explicit: Collection[str]) -> set[str]:
    """The fields a profile must leave alone: those given, and FlashAttention when a kernel for it was
    (`--attention-kernel flash2` asks for FlashAttention; a profile without it must not drop it)."""
    given = set(explicit)
    if "attention_kernel" in given:
        given.add("flash_attention")
    return given


def accelerator_note(software_id: Any, gpu: Any) -> str | None:
    """What an answer says when a profile is given for a kind of accelerator its records never ran on
    (a stack measured on GPUs, given for a TPU): its settings are still the layout's defaults, as
    settings, not as a stack measured there."""
    if not isinstance(software_id, str) or software_id not in catalog.software():
        return None
    chip = catalog.gpus().get(gpu) if isinstance(gpu, str) else None
    if chip is None:
        return None
    kind = "tpu" if chip.micro is not None and chip.micro.systolic else "gpu"
    p = catalog.software()[software_id]
    if kind in p.accelerators:
        return None
    others = [k for k, q in catalog.software().items() if kind in q.accelerators]
    ran = " and ".join(a.upper() + "s" for a in p.accelerators)
    return (
        f"software {software_id}'s settings come from runs on {ran} (its records {', '.join(p.records)}), "
        f"and {gpu} is a {kind.upper()}: they are taken as the layout's defaults (a ZeRO stage, kernels, "
        f"overlaps), not as a stack measured on {kind.upper()}s"
        + (f"; measured on {kind.upper()}s: {', '.join(others)}" if others else "")
    )


def apply_software(
    software_id: Any, fields: dict[str, Any], explicit: Collection[str], name: str = "software"
) -> dict[str, Any]:
    """`fields` (a layout's) with the profile's value for every field it sets that is not `explicit`."""
    defaults = resolved(software_id, fields.get("tp", 1), name)
    given = _given(explicit)
    return {**fields, **{k: v for k, v in defaults.items() if k not in given}}


def plan_settings(software_id: Any, explicit: Collection[str], name: str = "software") -> dict[str, Any]:
    """PlanOptions fields for a profile: the options plan holds over its whole search (FlashAttention
    and its kernel, the overlaps, FP32 gradients and parameters) take the profile's value unless
    `explicit`; its ZeRO stage and sequence-parallel setting narrow the search (`with_tp`: on wherever
    plan uses TP); PLAN_SEARCHED fields are searched as without a profile."""
    out: dict[str, Any] = {}
    given = _given(explicit)
    for k, v in profile(software_id, name).layout.items():
        if k in given or k in PLAN_SEARCHED:
            continue
        if k == "zero":
            out["zero_choices"] = (v,)
        else:
            out[k] = True if v == "with_tp" else v  # plan evaluates TP comm only where tp > 1
    return out


def taken_fields(
    software_id: Any, given: Collection[str], searched: Collection[str] = (), name: str = "software"
) -> dict[str, Any]:
    """The profile's fields it set itself: those no flag or input gives (and, in `plan`, not searched
    whatever the profile says), as the answers name them (`dtsim step`'s Software row, the pages' note)."""
    return {
        k: v for k, v in profile(software_id, name).layout.items() if k not in given and k not in searched
    }
