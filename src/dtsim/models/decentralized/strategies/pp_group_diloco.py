"""Mode C: PP-group DiLoCo (MIRI simulator docs §3.4). The model is split into S pipeline stages; the nodes
form G = ⌊N_eff / S⌋ pipelines that each train on their own data and sync by DiLoCo every H steps."""

from __future__ import annotations

import numpy as np

from dtsim.models.decentralized.frame import Frame
from dtsim.models.decentralized.strategies.base import (
    exposed_parts,
    hidden_part,
    overlapped,
    smallest_hiding_steps,
    to_hide,
)
from dtsim.models.decentralized.strategies.pipeline_common import pipeline_step
from dtsim.physics.collectives import wan_exchange_time
from dtsim.physics.stragglers import straggler_factor


class PPGroupDiLoCo:
    code = 2
    id = "pp-group-diloco"
    label = "C: PP-group DiLoCo"
    diloco = True
    pipelined = True
    regional_tier = False

    def nodes_used(self, f: Frame):
        """(pipelines, nodes used): G = ⌊N_eff / S⌋ whole pipelines of S nodes."""
        pipelines = np.floor(f.n_eff / f.stages)
        return pipelines, pipelines * f.stages

    def sync(self, f: Frame):
        """Stage s of every pipeline syncs with stage s of the others over its own WAN link, so each
        node sends the 1/S of the model it holds; the exchange waits for G groups
        (MIRI simulator docs §3.4 "Inter-Group DiLoCo")."""
        groups = np.floor(f.n_eff / f.stages)
        base = wan_exchange_time(f.payload_bits, f.up_bps, f.down_bps, f.latency_s) + f.codec_s
        return base, straggler_factor(groups, f.straggler, f.asm, f.straggler_curve), groups

    def auto_inner_steps(self, f: Frame):
        base, factor, _ = self.sync(f)
        hide = to_hide(f, base * factor, (base - f.latency_s) * factor)
        return smallest_hiding_steps(hide, pipeline_step(f)["total"])

    def evaluate(self, f: Frame, inner_steps):
        base, factor, groups = self.sync(f)
        sync = base * factor
        pp = pipeline_step(f)
        block = inner_steps * pp["total"]
        outer = overlapped(f, block, sync, (base - f.latency_s) * factor)
        exposed = outer - block
        bw, lat, strag = exposed_parts(exposed, base - f.latency_s, f.latency_s, factor)
        return {
            "inner_step_s": pp["total"],
            "sync_s": sync,
            "regional_sync_s": 0.0,
            "outer_step_s": outer,
            "total_s": f.tokens / (f.batch_tokens * groups * inner_steps) * outer,
            "h_eff": inner_steps,
            "replicas": groups,
            "regional_steps_used": 0.0,
            "compute_block_s": block,
            # with τ > 0 one sync spans several outer steps: per step, at most the step is hidden
            "hidden_sync_s": np.minimum(outer, hidden_part(sync, exposed)),
            "hidden_regional_sync_s": 0.0,
            "pipeline_comm_s": pp["comm_with_straggler"],
            "pipeline_latency_s": pp["latency_with_straggler"],
            "compute": inner_steps * pp["compute"],
            "latency": inner_steps * (pp["ep_latency"] + pp["latency"]) + lat,
            "global_sync": bw,
            "regional_sync": 0.0,
            "pipeline_comm": inner_steps * pp["transfer"],
            "bubble": inner_steps * pp["bubble"],
            "straggler": inner_steps * pp["straggler"] + strag,
        }
