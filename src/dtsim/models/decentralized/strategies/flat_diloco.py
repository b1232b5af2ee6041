"""Mode A: flat DiLoCo (MIRI simulator docs §3.1). Every node holds the model, trains H inner steps, then all
nodes exchange pseudo-gradients over the WAN."""

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
from dtsim.physics.collectives import wan_exchange_time
from dtsim.physics.stragglers import straggler_factor


class FlatDiLoCo:
    code = 0
    id = "flat-diloco"
    label = "A: flat DiLoCo"
    diloco = True  # an outer loop every H inner steps
    pipelined = False
    regional_tier = False

    def nodes_used(self, f: Frame):
        """(pipelines, nodes used): every whole node is a replica."""
        return 0.0, np.floor(f.n_eff)

    def sync(self, f: Frame):
        """T_sync = (V/BW_up + V/BW_down + RTT) · f(N_eff) (MIRI simulator docs §3.1, asymmetric per reference README)."""
        base = wan_exchange_time(f.payload_bits, f.up_bps, f.down_bps, f.latency_s) + f.codec_s
        factor = straggler_factor(f.n_eff, f.straggler, f.asm, f.straggler_curve)
        return base, factor

    def auto_inner_steps(self, f: Frame):
        base, factor = self.sync(f)
        return smallest_hiding_steps(to_hide(f, base * factor, (base - f.latency_s) * factor), f.step_s)

    def evaluate(self, f: Frame, inner_steps):
        base, factor = self.sync(f)
        sync = base * factor
        block = inner_steps * f.step_s
        outer = overlapped(f, block, sync, (base - f.latency_s) * factor)
        exposed = outer - block
        bw, lat, strag = exposed_parts(exposed, base - f.latency_s, f.latency_s, factor)
        return {
            "inner_step_s": f.step_s,
            "sync_s": sync,
            "regional_sync_s": 0.0,
            "outer_step_s": outer,
            "total_s": f.tokens / (f.batch_tokens * f.n_eff * inner_steps) * outer,
            "h_eff": inner_steps,
            "replicas": f.n_eff,
            "regional_steps_used": 0.0,
            "compute_block_s": block,
            # with τ > 0 one sync spans several outer steps: per step, at most the step is hidden
            "hidden_sync_s": np.minimum(outer, hidden_part(sync, exposed)),
            "hidden_regional_sync_s": 0.0,
            "compute": inner_steps * f.step_flop_s,
            "latency": inner_steps * f.ep_latency_s + lat,
            "global_sync": bw,
            "regional_sync": 0.0,
            "pipeline_comm": 0.0,
            "bubble": 0.0,
            "straggler": strag,
        }
