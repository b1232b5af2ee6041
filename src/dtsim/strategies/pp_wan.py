"""Mode B: pure pipeline parallelism over the WAN (seed 000 §3.3, Appendix A). Used only when fewer
than two whole pipelines fit: one pipeline of S nodes trains synchronously with no DiLoCo."""

from __future__ import annotations

import numpy as np

from dtsim.frame import Frame
from dtsim.strategies.pipeline_common import pipeline_step


class PPOverWAN:
    code = 3
    id = "pp-over-wan"
    label = "B: pipeline parallel over WAN"

    def auto_inner_steps(self, f: Frame):
        return np.ones(np.shape(f.step_s))

    def evaluate(self, f: Frame, inner_steps):
        # One whole pipeline (the original counted N/S fractional pipelines: reference README
        # defect 2); no outer synchronization, so one "outer step" is one pipeline step and η_H = 1.
        pp = pipeline_step(f)
        outer = pp["total"] + np.zeros(np.broadcast(inner_steps, pp["total"]).shape)
        zero = np.zeros_like(outer)
        one = zero + 1.0
        return {
            "inner_step_s": outer,
            "sync_s": zero,
            "regional_sync_s": zero,
            "outer_step_s": outer,
            "total_s": f.tokens / f.batch_tokens * outer,
            "h_eff": one,
            "replicas": one,
            "regional_steps_used": zero,
            "compute_block_s": pp["compute_slots"] + zero,
            "hidden_sync_s": zero,
            "pipeline_comm_s": pp["comm_with_straggler"] + zero,
            "pipeline_latency_s": pp["latency_with_straggler"] + zero,
            "compute": pp["compute"] + zero,
            "latency": pp["ep_latency"] + pp["latency"] + zero,
            "global_sync": zero,
            "regional_sync": zero,
            "pipeline_comm": pp["transfer"] + zero,
            "bubble": pp["bubble"] + zero,
            "straggler": pp["straggler"] + zero,
        }
