"""Choosing H, the inner steps between synchronizations.

- `auto`: the smallest H whose compute block hides the sync, ⌈T_sync / T_step⌉ (reference README
  "Automatic H"; for hierarchical DiLoCo the regional sync is the one H must hide).
- `auto-quality`: the H that maximises quality-adjusted compute per day, C·η·χ / T_wall, T_wall
  the failure-free time over the goodput. It trades the η and replica penalties of a large H (and,
  with failures, the longer round a failed replica loses) against the exposed sync of a small one. The search is
  exhaustive over every integer H in [1, 4096] and then a geometric grid (ratio 1.01) up to 10⁷, so
  it is bounded and deterministic.
"""

from __future__ import annotations

import numpy as np

AUTO = -1.0
AUTO_QUALITY = -2.0


def quality_candidates() -> np.ndarray:
    dense = np.arange(1.0, 4097.0)
    sparse = np.unique(np.round(4096.0 * 1.01 ** np.arange(1, int(np.log(1e7 / 4096) / np.log(1.01)) + 1)))
    return np.concatenate([dense, sparse[sparse > 4096]])


def best_quality_steps(strategy, f, objective) -> np.ndarray:
    """argmax over candidate H of objective(frame, timing, H, strategy) for the rows of one strategy.

    Rows are processed in chunks so the (rows × candidates) work arrays stay small.
    """
    candidates = quality_candidates()
    out = np.empty(f.n)
    chunk = max(1, 2_000_000 // len(candidates))
    for start in range(0, f.n, chunk):
        idx = np.arange(start, min(f.n, start + chunk))
        sub = f.take(idx).as_column()
        h = candidates[None, :]
        timing = strategy.evaluate(sub, h)
        score = np.broadcast_to(objective(sub, timing, h, strategy), (idx.size, candidates.size))
        score = np.where(np.isfinite(score), score, -np.inf)
        out[idx] = candidates[np.argmax(score, axis=1)]
    return out
