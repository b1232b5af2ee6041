"""`mfu: auto` — the MFU a decentralized scenario's node reaches, from the datacenter model.

A DiLoCo-family run trains one model replica per node (MIRI simulator docs §1.2), so the utilization of a node is
the datacenter model's answer for a model of the scenario's size on one node of its GPUs, wired as
NVLink servers of `mfu_auto_server_gpus`: `plan_by_size` (the shapes of `dtsim plan --target-params-b`)
at the scenario's precision and assumptions, `local_batch_tokens` a step in sequences of
`mfu_auto_seq_len`, keeping the shapes within `mfu_auto_size_tolerance` of the parameter count and
taking the best utilization among them. The MFU it returns is

    6 · P_shape · tokens/s  /  (pflops_per_node · 10¹⁵)

so a step of the scenario's model (6 · P · tokens / (peak · MFU), MIRI simulator docs §1.2) runs at the utilization
the datacenter model predicts for a model of nearly its size, even when `pflops_per_node` is not the
GPUs' dense peak (the explanation then says so). The decentralized days still differ from `plan`'s by
what the decentralized model adds: synchronization, stragglers and η.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, NamedTuple

from pydantic import ValidationError

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.models.datacenter.plausibility import doubts_mfu, message_of

PRECISIONS = ("bf16", "fp16", "fp8")


class PlannedMFU(NamedTuple):
    """`mfu: auto` as planned: the MFU (6·P model FLOPs over pflops_per_node), where it comes from, the
    plan's plausibility warning on that layout (None: none), and the layout's model FLOPs over its
    hardware FLOPs (attention and recomputation counted), the run's MFU / HFU."""

    mfu: float
    source: str
    warning: str | None
    hfu_mfu_ratio: float


def node_mfu(
    parameters_b: float,
    gpu: str | None,
    gpus_per_node: int | None,
    precision: str,
    local_batch_tokens: int,
    pflops_per_node: float,
    moe: bool = False,
    assumptions: dict[str, Any] | None = None,
    nvlink_domain: int | None = None,
) -> PlannedMFU:
    """(MFU, where it comes from, …: `PlannedMFU`) for `mfu: auto`; a ScenarioError names the field that prevents it.
    `assumptions` (the scenario's overrides, possibly tables) reach the datacenter model too; they enter
    the cache key as JSON. `nvlink_domain`: the node's own NVLink domain where a node preset gives one
    (a GB200 NVL72 rack: 72), instead of servers of `mfu_auto_server_gpus`."""
    key = (
        parameters_b,
        gpu,
        gpus_per_node,
        precision,
        local_batch_tokens,
        pflops_per_node,
        moe,
        nvlink_domain,
    )
    return _planned(key, json.dumps(assumptions or {}, sort_keys=True, default=str))


def nvlink_node(count: int, server_gpus: int) -> int:
    """GPUs per NVLink domain of a decentralized node of `count` GPUs: the largest divisor of the count
    up to `server_gpus` (a DGX-style server; a 1,120-GPU pod is 140 servers, not one NVLink domain)."""
    return max(d for d in range(1, min(count, server_gpus) + 1) if count % d == 0)


@lru_cache(maxsize=256)
def _planned(key: tuple, overrides: str) -> PlannedMFU:
    from dtsim.assumptions import Assumptions
    from dtsim.models.datacenter.plan import PlanOptions, plan_by_size
    from dtsim.models.datacenter.step import resolve_hardware
    from dtsim.models.datacenter.workload import Cluster

    parameters_b, gpu, gpus_per_node, precision, local_batch_tokens, pflops_per_node, moe, domain = key
    assumptions = json.loads(overrides)
    asm = Assumptions(assumptions)
    seq_len, vocab, tolerance = (
        int(asm.mfu_auto_seq_len),
        int(asm.mfu_auto_vocab),
        asm.mfu_auto_size_tolerance,
    )
    # GPU nodes: a node of TPU chips is a torus slice, which these presets' chip counts do not form
    modelled = [k for k, g in catalog.gpus().items() if g.micro is not None and not g.micro.systolic]
    if moe:
        raise ScenarioError(
            [("mfu", "auto", "is planned for dense models only; give the MFU of this MoE model as a number")]
        )
    spec = catalog.gpus().get(gpu) if gpu else None
    if spec is None or spec.id not in modelled or not gpus_per_node:
        raise ScenarioError(
            [
                (
                    "mfu",
                    "auto",
                    f"needs a gpu the datacenter model covers and gpus_per_node; covered: {', '.join(modelled)} "
                    "(a TPU node is a torus slice: time it with `dtsim step --gpu tpu-… --torus …`)",
                )
            ]
        )
    if precision not in PRECISIONS:
        raise ScenarioError(
            [
                (
                    "mfu",
                    "auto",
                    f"is planned at {', '.join(PRECISIONS)} only; this scenario trains in {precision}",
                )
            ]
        )
    sequences = local_batch_tokens // seq_len
    if sequences < 1:
        raise ScenarioError(
            [
                (
                    "mfu",
                    "auto",
                    f"local_batch_tokens {local_batch_tokens:,} is under one sequence of mfu_auto_seq_len "
                    f"{seq_len:,} tokens",
                )
            ]
        )
    count = int(gpus_per_node)
    per_domain = (
        domain if domain and count % domain == 0 else nvlink_node(count, int(asm.mfu_auto_server_gpus))
    )
    try:
        cluster = Cluster(gpu=spec.id, nodes=count // per_domain, gpus_per_node=per_domain)
    except ValidationError:  # more NVLink domains than the datacenter model plans (was an HTTP 500)
        raise ScenarioError(
            [
                (
                    "mfu",
                    "auto",
                    f"cannot be planned for one node of {count:,} GPUs ({count // per_domain:,} NVLink "
                    f"domains of {per_domain}); give the MFU as a number",
                )
            ]
        ) from None
    opt = PlanOptions(gbs=sequences, seq_len=seq_len, precision=precision, assumptions=assumptions)
    rows, searched = plan_by_size(parameters_b * 1e9, cluster, opt, vocab, seq_len)
    near = [r for r in rows if abs(r["params_b"] / parameters_b - 1.0) <= tolerance]
    where = f"one node of {count} × {spec.id} ({sequences} sequences of {seq_len:,} tokens a step)"
    if not near:
        if rows:  # shapes fit, none of them near enough (a trial's 1B: its one shape has 1.081B)
            nearest = min(rows, key=lambda r: abs(r["params_b"] / parameters_b - 1.0))
            found = (
                f"the nearest model shape to {parameters_b:g}B that fits {where} has "
                f"{nearest['params_b']:.3g}B ({nearest['params_b'] / parameters_b - 1.0:+.1%}: hidden "
                f"{nearest['hidden']}, {nearest['layers']} layers), outside ±{tolerance:.0%} "
                "(mfu_auto_size_tolerance)"
            )
        elif searched:
            found = f"none of the {searched} shapes within ±{tolerance:.0%} of {parameters_b:g}B fits {where}"
        else:
            found = f"no model shape exists near {parameters_b:g}B (heads of 128, layers a multiple of 4)"
        raise ScenarioError([("mfu", "auto", f"{found}; give the MFU as a number")])
    # utilization carries over between shapes of nearly one size; the best layout of the best shape
    best = max(near, key=lambda r: r["params_b"] * r["tokens_per_s"])
    tokens_per_s = best["tokens_per_s"]
    mfu = 6.0 * best["params_b"] * 1e9 * tokens_per_s / (pflops_per_node * 1e15)
    lay = best["layout"]
    parts = [f"tp {lay['tp']}", f"pp {lay['pp']}", f"dp {lay['dp']}", f"zero {lay['zero']}"]
    text = (
        f"MFU {mfu:.3f} from the datacenter model: the fastest layout ({', '.join(parts)}, recompute "
        f"{lay['recompute']}) of a {best['params_b']:.1f}B shape (hidden {best['hidden']}, {best['layers']} "
        f"layers) on {where}, in NVLink domains of {per_domain}: {tokens_per_s:,.0f} tokens/s, "
        f"{best['model_tflops_per_gpu']:.0f} TFLOP/s per GPU"
    )
    # the layout's model FLOPs (6·P, as the decentralized model counts them) over its hardware FLOPs
    ratio = min(
        1.0, 6.0 * best["params_b"] * 1e9 * tokens_per_s / (best["hardware_tflops_per_gpu"] * 1e12 * count)
    )
    if best["warnings"]:
        # the plan's own warning speaks of its MFU, which counts attention (PaLM convention); the MFU above
        # is 6·P only, as the decentralized model counts a step: say which is which
        text += (
            f". That layout's MFU with attention counted (the datacenter model's convention) is "
            f"{best['mfu']:.1%}: {message_of(best['warnings'][0])}"
        )
    dense = count * resolve_hardware(cluster, precision).peak_flop_s / 1e15
    if abs(pflops_per_node / dense - 1.0) > 0.01:
        text += (
            f". pflops_per_node {pflops_per_node:g} is {pflops_per_node / dense:.2f}× the node's dense peak "
            f"({dense:.2f} PFLOP/s) and this MFU is relative to it, so the node computes at the rate the "
            "datacenter model predicts"
        )
    # the doubt's message (not a note on an option): the scenario's MFU_AUTO_OPTIMISTIC quotes it
    doubt = next((message_of(w) for w in best["warnings"] if doubts_mfu(w)), None)
    return PlannedMFU(mfu, text, doubt, ratio)
