"""`mfu: auto` — the MFU a decentralized scenario's node reaches, from the datacenter model.

A DiLoCo-family run trains one model replica per node (seed 000 §1.2), so the utilization of a node is
the datacenter model's answer for a model of the scenario's size on one node of its GPUs: the fastest
layout (`plan`) of the fastest shape near the parameter count (`plan_by_size`, Kaplan et al. 2020 §3.1:
shapes in the searched band are interchangeable for quality), at the scenario's precision, with
`local_batch_tokens` per step in sequences of `mfu_auto_seq_len`. The MFU it returns is

    6 · P_shape · tokens/s  /  (pflops_per_node · 10¹⁵)

so the simulated compute time of a step (6 · P · tokens / (peak · MFU), seed 000 §1.2) is the one the
datacenter model predicts, even when the scenario's `pflops_per_node` is not the GPUs' dense peak (the
explanation then says so). The decentralized days still differ from `plan`'s by what the decentralized
model adds: synchronization, stragglers and η.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError

PRECISIONS = ("bf16", "fp16", "fp8")


def node_mfu(
    parameters_b: float,
    gpu: str | None,
    gpus_per_node: int | None,
    precision: str,
    local_batch_tokens: int,
    pflops_per_node: float,
    moe: bool = False,
    assumptions: dict[str, Any] | None = None,
) -> tuple[float, str]:
    """(MFU, where it comes from) for `mfu: auto`; a ScenarioError names the field that prevents it."""
    from dtsim.assumptions import Assumptions

    asm = Assumptions(assumptions or {})
    key = (
        float(parameters_b),
        gpu,
        gpus_per_node,
        str(precision),
        int(local_batch_tokens),
        float(pflops_per_node),
        bool(moe),
        int(asm.mfu_auto_seq_len),
        int(asm.mfu_auto_vocab),
    )
    return _node_mfu(*key)


@lru_cache(maxsize=256)
def _node_mfu(
    parameters_b: float,
    gpu: str | None,
    gpus_per_node: int | None,
    precision: str,
    local_batch_tokens: int,
    pflops_per_node: float,
    moe: bool,
    seq_len: int,
    vocab: int,
) -> tuple[float, str]:
    from dtsim.models.datacenter.plan import PlanOptions, plan_by_size
    from dtsim.models.datacenter.workload import Cluster

    modelled = [k for k, g in catalog.gpus().items() if g.micro is not None]
    if moe:
        raise ScenarioError(
            [("mfu", "auto", "is planned for dense models only; give the MFU of this MoE model as a number")]
        )
    spec = catalog.gpus().get(gpu) if gpu else None
    if spec is None or spec.micro is None or not gpus_per_node:
        raise ScenarioError(
            [
                (
                    "mfu",
                    "auto",
                    f"needs a gpu the datacenter model covers and gpus_per_node; covered: {', '.join(modelled)}",
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
    cluster = Cluster(gpu=spec.id, nodes=1, gpus_per_node=int(gpus_per_node))
    rows, searched = plan_by_size(
        parameters_b * 1e9,
        cluster,
        PlanOptions(gbs=sequences, seq_len=seq_len, precision=precision),
        vocab,
        seq_len,
    )
    if not rows:
        raise ScenarioError(
            [
                (
                    "mfu",
                    "auto",
                    f"no layout of any of the {searched} shapes near {parameters_b:g}B fits one node of "
                    f"{gpus_per_node} × {spec.id} ({sequences} sequences of {seq_len:,} tokens a step); give "
                    "the MFU as a number",
                )
            ]
        )
    best = rows[0]
    tokens_per_s = best["tokens_per_s"]
    mfu = 6.0 * best["params_b"] * 1e9 * tokens_per_s / (pflops_per_node * 1e15)
    lay = best["layout"]
    parts = [f"tp {lay['tp']}", f"pp {lay['pp']}", f"dp {lay['dp']}", f"zero {lay['zero']}"]
    text = (
        f"MFU {mfu:.3f} from the datacenter model: the fastest layout ({', '.join(parts)}, recompute "
        f"{lay['recompute']}) of a {best['params_b']:.1f}B shape (hidden {best['hidden']}, {best['layers']} "
        f"layers) on one node of {gpus_per_node} × {spec.id} at {precision}, {sequences} sequences of "
        f"{seq_len:,} tokens a step: {tokens_per_s:,.0f} tokens/s, {best['model_tflops_per_gpu']:.0f} TFLOP/s "
        "per GPU"
    )
    if best["warnings"]:
        text += f". {best['warnings'][0]}"
    dense = gpus_per_node * (spec.peak_tflops(precision) or spec.fp16_tflops) / 1000.0
    if abs(pflops_per_node / dense - 1.0) > 0.01:
        text += (
            f". pflops_per_node {pflops_per_node:g} is {pflops_per_node / dense:.2f}× the node's dense peak "
            f"({dense:.2f} PFLOP/s), and this MFU is relative to it, so the step takes the time the datacenter "
            "model predicts"
        )
    return mfu, text
