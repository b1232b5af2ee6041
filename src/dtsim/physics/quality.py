"""Quality-adjusted compute: the Chinchilla loss and χ, the compute-optimal equivalent of a run
(reference README; Besiroglu et al. 2024, arXiv:2404.10102; Hoffmann et al. 2022)."""

from __future__ import annotations

import numpy as np

from dtsim.physics.numeric import power


def chinchilla_loss(params, tokens, asm):
    """L(N, D) = E + A·N^−a + B·D^−b."""
    return (
        asm.chinchilla_e
        + asm.chinchilla_a * power(params, -asm.chinchilla_alpha)
        + asm.chinchilla_b * power(tokens, -asm.chinchilla_beta)
    )


def compute_optimal_params(loss, asm):
    """N* with L(N*, r·N*) = loss, r the compute-optimal tokens per parameter.

    Solved by Newton's method in x = ln N on g(x) = A·e^(−a·x) + B·r^(−b)·e^(−b·x) − (loss − E).
    g is convex and decreasing, and the start x₀ = max over the two terms of the x where that term
    alone equals loss − E has g(x₀) ≥ 0, so the iterates rise monotonically to the root without
    overshooting. Converges to machine precision in a handful of steps (tests/test_physics.py).
    """
    a, b = asm.chinchilla_alpha, asm.chinchilla_beta
    big_a = asm.chinchilla_a
    big_b = asm.chinchilla_b * asm.chinchilla_tokens_per_param ** (-b)  # a Python float: one path
    k = np.asarray(loss, dtype=float) - asm.chinchilla_e
    x = np.maximum(np.log(big_a / k) / a, np.log(big_b / k) / b)
    if x.size == 1:
        # One row: the same iteration on NumPy scalars (the same arithmetic, without array overhead or
        # the bookkeeping for rows that converge at other steps).
        shape, x, k = x.shape, x.reshape(()), k.reshape(())  # x has k's shape
        for _ in range(60):
            if x != x:  # NaN (an infeasible run's loss) stays NaN whatever the step: stop
                break
            step = _newton_step(x, k, a, b, big_a, big_b)
            x = x + step
            if abs(step) <= 1e-15 * max(abs(x), 1.0):
                break
        return np.exp(np.asarray(x)).reshape(shape)
    # Each element stops at its own convergence, so a row's result does not depend on the other rows
    # of its batch; the iteration runs on the rows still live only. A NaN row (an infeasible run's
    # loss is NaN) stays NaN whatever the step, so it is never iterated: before, such rows never met
    # the convergence test and kept every batch going for all 60 steps (issue 15 item 7). The
    # results are bit for bit those of iterating every row (tests/test_target_solve.py).
    out = x.reshape(-1).copy()
    live = np.flatnonzero(~np.isnan(out))
    xs, ks = out[live], k.reshape(-1)[live]
    for _ in range(60):
        if live.size == 0:
            break
        step = _newton_step(xs, ks, a, b, big_a, big_b)
        xs = xs + step
        stop = (np.abs(step) <= 1e-15 * np.maximum(np.abs(xs), 1.0)) | np.isnan(xs)
        if stop.any():
            out[live[stop]] = xs[stop]
            keep = ~stop
            live, xs, ks = live[keep], xs[keep], ks[keep]
    out[live] = xs  # rows still moving after 60 steps (none in practice) keep their last iterate
    return np.exp(out.reshape(x.shape))


def _newton_step(x, k, a, b, big_a, big_b):
    """−g(x)/g′(x) for g(x) = A·e^(−a·x) + B′·e^(−b·x) − k (compute_optimal_params)."""
    ea = big_a * np.exp(-a * x)
    eb = big_b * np.exp(-b * x)
    return (ea + eb - k) / (a * ea + b * eb)


def chi(params, tokens, compute, loss_multiplier, asm):
    """χ = C*(L) / C ≤ 1: the compute a compute-optimal run needs to reach this run's loss (times the
    replica loss multiplier), over the compute this run spends. C* = 6·r·N*² (reference README)."""
    target = chinchilla_loss(params, tokens, asm) * loss_multiplier
    n_star = compute_optimal_params(target, asm)
    c_star = asm.flops_per_param_token * asm.chinchilla_tokens_per_param * n_star * n_star
    return np.minimum(1.0, c_star / compute)
