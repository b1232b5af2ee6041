"""The pipeline step shared by the PP strategies (MIRI simulator docs §3.3, §3.4)."""

from __future__ import annotations

from dtsim.models.decentralized.frame import Frame
from dtsim.physics.collectives import point_to_point_time
from dtsim.physics.pipeline import gpipe_step
from dtsim.physics.stragglers import straggler_factor


def pipeline_step(f: Frame) -> dict:
    """One GPipe step of a pipeline of S nodes.

    Each stage holds 1/S of the model, so one micro-batch on one stage takes T_comp / (M·S)
    (the original divided by M only: reference README defect 1). Hand-offs cross the pipeline's
    links (regional when the group sits in one region, else WAN) at the slower of the sender's
    upload and the receiver's download (defect 8: the original used upload only), and pay the
    link's RTT once per slot, scaled by the straggler factor f(S).
    """
    per_micro = f.step_s / (f.micro_batches * f.stages)
    transfer = point_to_point_time(f.handoff_bits, f.pp_bps)
    factor = straggler_factor(f.stages, f.straggler, f.asm, f.straggler_curve)
    parts = gpipe_step(f.micro_batches, f.stages, per_micro, transfer, f.pp_latency_s, factor)
    # Split the useful compute into matmul time and expert-parallel latency, as in flat DiLoCo.
    flop_share = f.step_flop_s / f.step_s
    parts["ep_latency"] = parts["compute"] * (1.0 - flop_share)
    parts["compute"] = parts["compute"] * flop_share
    slots = f.micro_batches + f.stages - 1.0
    parts["comm_with_straggler"] = slots * transfer * factor
    parts["latency_with_straggler"] = slots * f.pp_latency_s * factor
    parts["compute_slots"] = slots * per_micro
    return parts
