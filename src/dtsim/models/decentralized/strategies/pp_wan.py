"""Mode B: pure pipeline parallelism over the WAN (MIRI simulator docs §3.3, Appendix A). Used only when fewer
than two whole pipelines fit: one pipeline of S nodes trains synchronously with no DiLoCo."""

from __future__ import annotations

import numpy as np

from dtsim.models.decentralized.frame import Frame
from dtsim.models.decentralized.strategies.pipeline_common import pipeline_step


class PPOverWAN:
    code = 3
    id = "pp-over-wan"
    label = "B: pipeline parallel over WAN"
    diloco = False  # one synchronous pipeline: no inner steps H, no outer sync
    pipelined = True
    regional_tier = False

    def nodes_used(self, f: Frame):
        """(pipelines, nodes used): one pipeline of S nodes."""
        return 1.0, f.stages

    def auto_inner_steps(self, f: Frame):
        return np.ones(np.shape(f.step_s))

    def evaluate(self, f: Frame, inner_steps):
        # One whole pipeline (the original counted N/S fractional pipelines: reference README
        # defect 2); no outer synchronization, so one "outer step" is one pipeline step and η_H = 1.
        pp = pipeline_step(f)
        outer = pp["total"]
        return {
            "inner_step_s": outer,
            "sync_s": 0.0,
            "regional_sync_s": 0.0,
            "outer_step_s": outer,
            "total_s": f.tokens / f.batch_tokens * outer,
            "h_eff": 1.0,
            "replicas": 1.0,
            "regional_steps_used": 0.0,
            "compute_block_s": pp["compute_slots"],
            "hidden_sync_s": 0.0,
            "hidden_regional_sync_s": 0.0,
            "pipeline_comm_s": pp["comm_with_straggler"],
            "pipeline_latency_s": pp["latency_with_straggler"],
            "compute": pp["compute"],
            "latency": pp["ep_latency"] + pp["latency"],
            "global_sync": 0.0,
            "regional_sync": 0.0,
            "pipeline_comm": pp["transfer"],
            "bubble": pp["bubble"],
            "straggler": pp["straggler"],
        }
