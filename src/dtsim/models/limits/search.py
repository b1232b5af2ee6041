"""The parallelism search (Erdil & Schneider-Joseph 2024 §6.1 items 5–6), vectorized.

For N GPUs: N_EP = gcd(N, E); every factorization N/N_EP = N_TP × N_DP × N_PP with N_TP | d_model·d_ff,
N_DP | batch tokens, N_PP | L; every split N_TP = N_TP,ff × N_TP,model with √N_TP ≤ N_TP,ff ≤ 4√N_TP
(integer square root) that divides d_ff and d_model; both schedules — 1F1B interleaved with
v = L/N_PP and the fewest micro-batches m ≥ N_PP, and ZB-H2 with the fewest m ≥ 2·N_PP − 1 (m divides
the tokens per replica and expert); and every split of each degree across the network levels (each
level's size factored five ways; the top level takes the rest). All candidates are evaluated at once
(numpy); the fastest wins, ties broken by the least communication time. Memory is checked per GPU
(weights and their gradients on every GPU of a model replica, optimizer states sharded over all
GPUs); the reference implementation's aggregate check, and the per-GPU memory including stored
activations, are reported beside it.

The cluster-size search tries N = E·2^i from the smallest N that could finish at the GPU's
sustained rate, and returns the first that trains the run within the time limit (none at once when
the run's steps cannot fit the limit even at 6·L kernel latencies, the floor of any cluster's step).
"""

from __future__ import annotations

import bisect
import copy
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from dtsim.assumptions import Assumptions
from dtsim.models.limits.hardware import LimitsHardware
from dtsim.models.limits.model import (
    bubble_fraction,
    communication,
    gemm_time_per_step,
    step_time,
    utilization,
)
from dtsim.models.limits.scaling import Shape

_A = Assumptions()
SECONDS_PER_YEAR = _A.seconds_per_year  # the reference implementation's year
SECONDS_PER_MONTH = SECONDS_PER_YEAR / 12.0
OPTIMIZER_WORDS_PER_PARAM = _A.limits_optimizer_words_per_param  # sharded over all GPUs
DEGREES = ("dp", "tp_model", "tp_ff", "pp", "ep")


@cache
def divisors(n: int) -> tuple[int, ...]:
    n = int(n)
    if n < 1:
        return ()
    small, large = [], []
    i = 1
    # factor out powers of two fast (the numbers here are mostly f·2^k)
    twos = (n & -n).bit_length() - 1
    odd = n >> twos
    odd_divs = []
    while i * i <= odd:
        if odd % i == 0:
            small.append(i)
            if i != odd // i:
                large.append(odd // i)
        i += 2 if odd % 2 else 1
    odd_divs = small + large[::-1]
    return tuple(sorted(d << k for d in odd_divs for k in range(twos + 1)))


@cache
def _smallest_divisor_at_least(n: int, k: int) -> int | None:
    divs = divisors(n)
    i = bisect.bisect_left(divs, k)
    return divs[i] if i < len(divs) else None


@cache
def ordered_factorizations(n: int, count: int) -> tuple[tuple[int, ...], ...]:
    if count == 0:
        return ((),) if n == 1 else ()
    out = []
    for d in divisors(n):
        for rest in ordered_factorizations(n // d, count - 1):
            out.append((d, *rest))
    return tuple(out)


def adjusted_level_sizes(level_sizes: tuple[int, ...], n: int) -> tuple[int, ...]:
    """Level sizes cut down so their running product does not exceed N (reference behaviour)."""
    out = []
    running = 1
    for size in level_sizes:
        running *= size
        if running < n:
            out.append(size)
        else:
            out.append(n // (running // size))
            break
    return tuple(out) + (1,) * (len(level_sizes) - len(out))


@cache
def level_combos(level_sizes: tuple[int, ...]) -> np.ndarray:
    """All splits of the lower levels: array (C, H-1, 5) of per-level factors of the five degrees."""
    per_level = [ordered_factorizations(s, 5) for s in level_sizes]
    if not per_level:
        return np.ones((1, 0, 5), dtype=np.int64)
    grids = (
        np.array(np.meshgrid(*[np.arange(len(p)) for p in per_level], indexing="ij"))
        .reshape(len(per_level), -1)
        .T
    )
    arr = np.array([[per_level[h][i] for h, i in enumerate(row)] for row in grids], dtype=np.int64)
    return arr


@dataclass
class Candidates:
    """Base layouts (one row each) before the split across levels."""

    tp_model: np.ndarray
    tp_ff: np.ndarray
    dp: np.ndarray
    pp: np.ndarray
    ep: np.ndarray
    m: np.ndarray
    v: np.ndarray
    zero_bubble: np.ndarray

    def __len__(self) -> int:
        return len(self.dp)


def base_layouts(shape: Shape, n: int, schedules=("1f1b", "zero-bubble")) -> Candidates:
    e = shape.sparsity
    n_ep = math.gcd(n, e)
    rest = n // n_ep
    B = shape.batch_tokens
    dff = shape.d_model * shape.d_ff
    rows = []
    for tp in divisors(rest):
        if dff % tp:
            continue
        r = math.isqrt(tp)
        ffs = [x for x in divisors(tp) if r <= x <= 4 * r]
        for dp in divisors(rest // tp):
            if B % dp:
                continue
            pp = rest // (tp * dp)
            if shape.layers % pp:
                continue
            per_replica = B // (e * dp)
            for ff in ffs:
                tm = tp // ff
                if shape.d_model % tm or shape.d_ff % ff:
                    continue
                for sched in schedules:
                    zb = sched == "zero-bubble"
                    if zb and pp == 1:
                        continue  # without a pipeline the two schedules are the same
                    need = 2 * pp - 1 if zb else pp
                    m = _smallest_divisor_at_least(per_replica, need)
                    if m is None:
                        continue
                    v = shape.layers // pp if (not zb and pp > 1) else 1
                    rows.append((tm, ff, dp, pp, n_ep, m, v, zb))
    a = np.array(rows, dtype=np.int64).reshape(-1, 8)
    return Candidates(*(a[:, i] for i in range(7)), a[:, 7].astype(bool))


def memory_per_gpu(shape: Shape, hw: LimitsHardware, n, c: Candidates):
    """(model states per GPU, stored activations per GPU) in bytes."""
    by = hw.bytewidth
    replica_gpus = c.tp_model * c.tp_ff * c.pp * c.ep
    states = 2.0 * shape.params * by / replica_gpus + OPTIMIZER_WORDS_PER_PARAM * by * shape.params / n
    nano = shape.batch_tokens // (c.dp * c.m * shape.sparsity)
    in_flight = np.where(c.zero_bubble, 2 * c.pp - 1, c.pp)
    acts = (
        in_flight
        * nano
        * (shape.d_model / c.tp_model + shape.d_ff / c.tp_ff)
        * by
        * (shape.layers // c.pp)
        * (shape.sparsity // c.ep)
    )
    return states, acts.astype(float)


def aggregate_memory_ok(shape: Shape, hw: LimitsHardware, n, c: Candidates):
    """The reference implementation's check: N·memory ≥ weights × DP + optimizer states."""
    need = shape.params * hw.bytewidth * c.dp + shape.params * hw.bytewidth * OPTIMIZER_WORDS_PER_PARAM
    return n * hw.memory_bytes >= need


@dataclass
class Best:
    n_gpus: int
    step_s: float
    months: float
    utilization: float
    layout: dict[str, Any]
    levels: dict[str, list[int]]
    comm_s: dict[str, float]
    gemm_shape: tuple[int, int, int]
    memory: dict[str, Any]
    searched: int
    extra: dict[str, Any] = field(default_factory=dict)


def optimal_layout(
    shape: Shape,
    hw: LimitsHardware,
    n: int,
    memory: str = "per-gpu",
    schedules=("1f1b", "zero-bubble"),
    prune: bool = True,
    within_s: float = np.inf,
) -> Best | None:
    """The fastest layout of `shape` on `n` GPUs (ties: least communication), or None. With
    `prune=False` every layout and split is evaluated and their step times are kept in
    `Best.extra["all_step_s"]` (for checking the search). `within_s` starts the branch and bound at
    that step time: layouts that cannot beat it are not evaluated, so the answer is the same whenever
    the fastest step is shorter than `within_s`, and None or a slower layout otherwise (the cluster
    search asks only whether a cluster meets its time limit)."""
    c = base_layouts(shape, n, schedules)
    if len(c) == 0:
        return None
    states, acts = memory_per_gpu(shape, hw, n, c)
    agg_ok = aggregate_memory_ok(shape, hw, n, c)
    if memory == "aggregate":
        ok = agg_ok
    elif memory == "per-gpu":
        ok = states <= hw.memory_bytes
    elif memory == "per-gpu-activations":
        ok = states + acts <= hw.memory_bytes
    else:
        raise ValueError(memory)
    if not ok.any():
        return None
    sel = np.nonzero(ok)[0]
    c = Candidates(
        *(getattr(c, f)[sel] for f in ("tp_model", "tp_ff", "dp", "pp", "ep", "m", "v", "zero_bubble"))
    )
    states, acts, agg_ok = states[sel], acts[sel], agg_ok[sel]
    gemm_s, (f1, d1, b1) = gemm_time_per_step(shape, hw, c.tp_model, c.tp_ff, c.dp, c.pp, c.ep, c.m)
    fb = bubble_fraction(c.pp, c.m, c.v, c.zero_bubble)

    # splits across the network levels: lower levels from the combos, the top takes the rest
    sizes = adjusted_level_sizes(hw.level_sizes, n)
    combos = level_combos(sizes)  # (C, H-1, 5)
    degrees = np.stack([c.dp, c.tp_model, c.tp_ff, c.pp, c.ep], axis=-1)  # (K, 5)
    lower = (
        combos.prod(axis=1) if combos.shape[1] else np.ones((combos.shape[0], 5), dtype=np.int64)
    )  # (C, 5)

    # Branch and bound: a layout's step can never be shorter than its GEMM time (ZB) or GEMM time over
    # (1 − bubble) (1F1B), whatever its split; evaluate splits for the most promising layouts first and
    # then only for those whose bound does not exceed the best step found.
    bound = np.where(c.zero_bubble, gemm_s, gemm_s / (1.0 - fb))
    if not prune:
        bound = np.zeros_like(bound)
    ranked = np.argsort(bound, kind="stable")
    best_t = within_s if prune else np.inf
    found = []
    searched = 0
    start = 0
    while start < len(ranked):
        chunk = ranked[start : start + (64 if start == 0 else 512)]
        start += len(chunk)
        chunk = chunk[bound[chunk] <= best_t * (1 + 1e-12)]
        if len(chunk) == 0:
            break
        valid = (degrees[chunk, None, :] % lower[None, :, :] == 0).all(axis=-1)
        ki, cc = np.nonzero(valid)
        if len(ki) == 0:
            continue
        kk = chunk[ki]
        top = degrees[kk] // lower[cc]
        per_level = np.concatenate([combos[cc], top[:, None, :]], axis=1)  # (M, H, 5)
        levels = {name: per_level[..., q] for q, name in enumerate(DEGREES)}
        comm = communication(shape, hw, n, levels, c.v[kk])
        t = step_time(gemm_s[kk], comm, fb[kk], c.zero_bubble[kk])
        searched += len(t)
        best_t = min(best_t, float(t.min()))
        found.append((kk, levels, comm, t))
    if not found:
        return None
    kk = np.concatenate([f[0] for f in found])
    levels = {name: np.concatenate([f[1][name] for f in found]) for name in DEGREES}
    comm = {key: np.concatenate([f[2][key] for f in found]) for key in found[0][2]}
    t = np.concatenate([f[3] for f in found])
    total_comm = comm["tp_comm"] + comm["dp_comm"] + comm["pp_comm"]
    # the fastest; among equally fast the least communication; then the first (a stable sort's order)
    fastest = np.flatnonzero(t == t.min())
    i = int(fastest[np.argmin(total_comm[fastest])])
    k = int(kk[i])
    u = float(utilization(shape, hw, n, t[i]))
    months = float(t[i] * shape.steps / SECONDS_PER_MONTH)
    layout = {
        "dp": int(c.dp[k]),
        "tp_model": int(c.tp_model[k]),
        "tp_ff": int(c.tp_ff[k]),
        "pp": int(c.pp[k]),
        "ep": int(c.ep[k]),
        "pp_interleaving": int(c.v[k]),
        "microbatches": int(c.m[k]),
        "schedule": "zero-bubble" if bool(c.zero_bubble[k]) else "1f1b",
        "bubble_fraction": float(fb[k]),
    }
    lv = {name + "_per_level": [int(x) for x in levels[name][i]] for name in DEGREES}
    comm_s = {key: float(val[i]) for key, val in comm.items()}
    comm_s["gemm"] = float(gemm_s[k])
    return Best(
        n_gpus=n,
        step_s=float(t[i]),
        months=months,
        utilization=u,
        layout=layout,
        levels=lv,
        comm_s=comm_s,
        gemm_shape=(int(f1[k]), int(d1[k]), int(b1[k])),
        memory={
            "model_states_per_gpu_gb": float(states[k]) / 1e9,
            "activations_per_gpu_gb": float(acts[k]) / 1e9,
            "aggregate_check_ok": bool(agg_ok[k]),
            "per_gpu_states_ok": bool(states[k] <= hw.memory_bytes),
            "per_gpu_with_activations_ok": bool(states[k] + acts[k] <= hw.memory_bytes),
            "check_used": memory,
        },
        searched=len(c) * len(combos),
        extra={} if prune else {"all_step_s": t},
    )


# Layout searches already done, by (hardware, shape, N, memory check, schedules): a layout search does
# not depend on the time limit, so a curve or a search run again with another limit (the page's months
# field, a `limits search` whose months are a distribution) re-uses them. Each entry keeps the step time
# its branch and bound started from (`within_s`): the answer stands for any limit when it beat that
# time, and otherwise (nothing beat it) for any shorter step time.
_SEARCHED: OrderedDict[tuple[Any, ...], tuple[Best | None, float]] = OrderedDict()
_SEARCHED_LOCK = threading.Lock()
SEARCHES_KEPT = 4096  # entries (about 2 KB each)


def _searched(key: tuple[Any, ...], within_s: float, search: Callable[[], Best | None]) -> Best | None:
    """`search()` (an `optimal_layout` started at `within_s`), or a kept answer that says the same."""
    with _SEARCHED_LOCK:
        hit = _SEARCHED.get(key)
        if hit is not None:
            _SEARCHED.move_to_end(key)
    if hit is not None:
        best, used = hit
        if (best is not None and best.step_s < used) or within_s <= used:
            return copy.deepcopy(best)
    best = search()
    with _SEARCHED_LOCK:
        _SEARCHED[key] = (copy.deepcopy(best), within_s)
        while len(_SEARCHED) > SEARCHES_KEPT:
            _SEARCHED.popitem(last=False)
    return best


def behind_latency_wall(shape, hw, months: float) -> bool:
    """Whether no cluster can train `shape` within `months` whatever its size. Whatever the cluster, a
    step is at least 6·L kernel latencies: each GPU runs 6 GEMMs per layer it holds, per expert and per
    micro-batch (model.gemm_time_per_step), L/N_PP layers and m ≥ N_PP micro-batches, and each GEMM
    takes at least the kernel latency (physics.gemm). A run whose steps cannot fit the limit at that
    floor has no cluster: the latency wall (Erdil & Schneider-Joseph 2024 §4)."""
    return shape.steps * 6.0 * shape.layers * hw.matmul_latency_s >= months * SECONDS_PER_MONTH


def cluster_size(
    shape: Shape,
    hw: LimitsHardware,
    months: float = 3.0,
    memory: str = "per-gpu",
    schedules=("1f1b", "zero-bubble"),
    max_doublings: int = 60,
) -> Best | None:
    """The smallest N = E·2^i (divisible by every level it outgrows) that trains `shape` within
    `months`, with its best layout; None if no N up to E·2^max_doublings can."""
    limit_s = months * SECONDS_PER_MONTH
    min_n = shape.training_flop / (limit_s * hw.sustained_flop_s)
    if behind_latency_wall(shape, hw, months):
        return None
    within_s = limit_s / shape.steps
    hardware = repr(hw)  # every field of the hardware, mappings included: the kept searches' key
    for i in range(max_doublings):
        n = shape.sparsity * 2**i
        if n < min_n:
            continue
        running = 1
        fits_levels = True
        for size in hw.level_sizes:
            running *= size
            if n > running and n % running:
                fits_levels = False
        if not fits_levels:
            continue
        best = _searched(
            (hardware, shape, n, memory, tuple(schedules)),
            within_s,
            lambda n=n: optimal_layout(shape, hw, n, memory, schedules, within_s=within_s),
        )
        if best is not None and best.months < months:
            return best
    return None
