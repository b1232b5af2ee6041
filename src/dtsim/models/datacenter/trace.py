"""One training iteration of the datacenter model laid out in time (`dtsim step --trace FILE`).

`iteration_events` turns what `step` computes for one layout into timed events, one track per
pipeline stage; `chrome_trace` writes them in Google's "Trace Event Format" (the JSON that
chrome://tracing and Perfetto open: complete events `ph: "X"` with `ts` and `dur` in microseconds,
`pid` a process, `tid` a thread, `ph: "M"` metadata events naming them; "Trace Event Format",
Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).

Every duration comes from the numbers `step` computes, so the picture and the step time agree: the
last event ends at `step_time_s`. The model is lockstep — every stage runs at the pace of the slowest
one (`evaluate`: the stage slot is the larger of the last and the busiest middle stage) — so every
stage's micro-batch takes the same time here. What the breakdown gives only as a step total is spread
evenly over the micro-batches: forward, backward and recomputation compute (breakdown / micro-batches),
the exposed TP, CP and EP communication (one `tp_comm` event per pass; the forward passes' share is the
model's own, `tp_comm_forward`), ZeRO-3's exposed per-micro-batch gathers and reduce-scatters (its
forward and backward shares, `zero3_forward` / `zero3_backward`), and the pipeline hand-offs (the model
charges each pass one activation or gradient hand-off, pp_comm / passes each way).

The order of the passes is the schedule's:
- GPipe: all forwards, then all backwards (Huang et al. 2019, "GPipe");
- 1F1B: pp − s − 1 warm-up forwards on stage s, then one forward and one backward alternately, then the
  remaining backwards (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM", §2.2.1);
- interleaved: each stage holds vpp model chunks; micro-batches go in groups of pp through chunk 0, 1,
  …, warm-up (pp − s − 1)·2 + (vpp − 1)·pp passes (the same paper, §2.2.2; Megatron-LM's
  forward_backward_pipelining_with_interleaving).
Each pass starts when its stage is free and the pass it needs (the previous virtual stage's forward, the
next one's backward) has ended, hand-off included. With equal passes this reproduces the model's
pipeline time exactly: (m·vpp + pp − 1) pass pairs, i.e. (m + (pp − 1)/vpp) micro-batch slots and
m·vpp + pp − 1 hand-offs each way. The idle gaps are drawn as `bubble`: on each stage they are the
breakdown's bubble plus the pp − 1 fill-and-drain hand-offs it waits for (the breakdown counts those
in pp_comm; the stage's own `pp_comm` events are its m·vpp sends each way). With overlapped hand-offs
(`overlap_p2p_comm`) pp_comm holds only what is exposed (the fill and drain's pp − 1, and any excess
over a chunk's work), and the drawing spreads that total evenly over the passes as above: the step
still ends at the model's step time, but the fill and drain are not told apart.

The zero-bubble schedule (when m ≥ 2·pp − 1), DualPipe and DualPipeV, and the interleaved schedule with
a micro-batch count pp does not divide, are not timed pass by pass in the model: only their totals are.
They are drawn as those totals: each stage runs its passes back to back in 1F1B order, its share of the
bubble before (stage s: s/(pp − 1) of it, the fill) and the rest after (the drain), and the hand-offs
spread evenly over the passes.

After the pipeline, on every stage (each holds its own data-parallel group): the slowdown of compute
that overlapped communication (`overlap_interference`, which in reality is spread over the overlapped
passes), the exposed gradient reduction (reduce-scatter or all-reduce, and ZeRO-2's last buckets), the
optimizer step, and the exposed ZeRO-1/2 weight all-gather (split from the gradient reduction in
proportion to what each moves, `dp_gather_overlappable` of `dp_overlappable`). The once-per-step
data-parallel reduction (with ZeRO-2's per-micro-batch one) that hides under the passes is drawn on its
own track, ending where its exposed part begins; the TP, CP and ZeRO-3 communication hidden inside the
passes is not drawn (only its interference charge is).
"""

from __future__ import annotations

from typing import Any

from dtsim.catalog.calibration_file import calibration_in_use
from dtsim.errors import ScenarioError
from dtsim.models.datacenter.step import (
    PRECISION_BITS,
    StepResult,
    Workload,
    _prepared,
    evaluate,
    layout_arrays,
    step,
)

__all__ = ["MAX_PASSES", "chrome_trace", "iteration_events"]

# Input size limit: pipeline stages × micro-batches × virtual stages drawn. A pass makes about six
# events; 50,000 passes write a trace of about 70 MB, near what chrome://tracing and Perfetto load.
MAX_PASSES = 50_000

# Trace names of the stages' event categories (the breakdown's keys) and of the extra ones.
_LABELS = {
    "forward": "forward",
    "backward": "backward",
    "recompute": "recompute (forward again)",
    "tp_comm": "TP/CP/EP communication (exposed)",
    "pp_comm": "pipeline hand-off",
    "bubble": "bubble (idle)",
    "zero3": "ZeRO-3 all-gather / reduce-scatter (exposed)",
    "dp_grad": "gradient reduction (exposed)",
    "dp_gather": "weight all-gather (exposed)",
    "dp_hidden": "gradient reduction (overlapped with compute)",
    "overlap_interference": "compute slowed by overlapped communication",
    "optimizer": "optimizer step",
}


def _detail(workload: Workload, calibration) -> dict[str, float]:
    """`evaluate`'s outputs for the workload's one layout, as `step` computes them."""
    with calibration_in_use(calibration):
        a, asm, hw, seq = _prepared(workload, [workload.layout], True, "layout.")
        cols = layout_arrays(workload.layout, workload.cluster.n_gpus, workload.precision)
        out = evaluate(a, hw, cols, asm, seq, PRECISION_BITS[workload.precision])
    return {k: float(v.reshape(-1)[0]) for k, v in out.items()}


def _pass_order(stage: int, pp: int, m: int, v: int, schedule: str) -> list[tuple[str, int, int]]:
    """The passes of `stage` in the order its schedule runs them: (F or B, chunk, micro-batch)."""
    if schedule == "gpipe":
        return [("F", 0, i) for i in range(m)] + [("B", 0, i) for i in range(m)]
    groups = [range(g, min(g + pp, m)) for g in range(0, m, pp)]
    fwd = [(c, i) for grp in groups for c in range(v) for i in grp]
    bwd = [(c, i) for grp in groups for c in reversed(range(v)) for i in grp]
    total = m * v
    warm = min((pp - stage - 1) if v == 1 else (pp - stage - 1) * 2 + (v - 1) * pp, total)
    order = [("F", *x) for x in fwd[:warm]]
    for j in range(total - warm):
        order += [("F", *fwd[warm + j]), ("B", *bwd[j])]
    order += [("B", *x) for x in bwd[total - warm :]]
    return order


def _schedule_passes(pp: int, m: int, v: int, schedule: str, f: float, b: float):
    """Start time of every pass of every stage under its dependencies: {(kind, chunk, stage, mb): start}."""
    orders = [_pass_order(s, pp, m, v, schedule) for s in range(pp)]
    end: dict[tuple[str, int, int, int], float] = {}
    start: dict[tuple[str, int, int, int], float] = {}
    free, nxt = [0.0] * pp, [0] * pp
    left = sum(map(len, orders))
    while left:
        moved = False
        for s in range(pp):
            while nxt[s] < len(orders[s]):
                kind, c, i = orders[s][nxt[s]]
                if kind == "F":
                    dep = ("F", c, s - 1, i) if s > 0 else ("F", c - 1, pp - 1, i) if c > 0 else None
                elif s < pp - 1:
                    dep = ("B", c, s + 1, i)
                else:
                    dep = ("B", c + 1, 0, i) if c < v - 1 else ("F", c, s, i)
                if dep is not None and dep not in end:
                    break
                t = max(free[s], end[dep] if dep is not None else 0.0)
                key = (kind, c, s, i)
                start[key] = t
                end[key] = free[s] = t + (f if kind == "F" else b)
                nxt[s] += 1
                left -= 1
                moved = True
        if not moved:  # the orders above never wait on each other in a cycle; a guard, not a path
            raise RuntimeError(f"pipeline schedule {schedule} deadlocked at pp={pp}, m={m}, vpp={v}")
    return start


def iteration_events(
    workload: Workload, result: StepResult | None = None, calibration=None
) -> list[dict[str, Any]]:
    """One iteration of `workload`'s layout as timed events, in start order per track: dicts with
    track (a stage index, or "dp" for the overlapped data-parallel communication), name, category (a
    breakdown key, or dp_comm_overlapped), start_s, dur_s, and for the pieces of a pass its micro_batch,
    chunk (virtual stage, 0 without interleaving) and pass ("forward" or "backward"; else all None).
    `result`: the workload's `step` result if already computed (`calibration` as it was given)."""
    if result is None:
        result = step(workload, calibration=calibration)
    d = _detail(workload, calibration)
    if abs(d["step_time_s"] - result.step_time_s) > 1e-9 * result.step_time_s:
        raise ValueError("result is not the step of this workload (its step time differs)")
    lay = result.layout
    pp, schedule = int(lay["pp"]), str(lay["schedule"])
    v = int(lay["vpp"]) if schedule == "interleaved" else 1
    m = round(result.micro_batches)
    if pp * m * v > MAX_PASSES:
        raise ScenarioError(
            [
                (
                    "layout.gbs",
                    lay["gbs"],
                    f"a trace draws pp × micro-batches × vpp = {pp * m * v:,} passes; at most {MAX_PASSES:,} "
                    "(fewer micro-batches: a larger --mbs or a smaller --gbs)",
                )
            ]
        )
    bd = result.breakdown_s
    # per pass (one micro-batch through one chunk of a stage): its pieces in order
    f_parts = [
        ("zero3", "dp_comm_exposed", d["zero3_forward"]),
        ("forward", "forward", bd["forward"]),
        ("tp_comm", "tp_comm", d["tp_comm_forward"]),
    ]
    b_parts = [
        ("zero3", "dp_comm_exposed", d["zero3_backward"]),
        ("recompute", "recompute", bd["recompute"]),
        ("backward", "backward", bd["backward"]),
        ("tp_comm", "tp_comm", bd["tp_comm"] - d["tp_comm_forward"]),
    ]
    f_parts = [(n, c, x / (m * v)) for n, c, x in f_parts]
    b_parts = [(n, c, x / (m * v)) for n, c, x in b_parts]
    zero_bubble = schedule == "zero-bubble" and m >= 2 * pp - 1
    timed = schedule in ("gpipe", "1f1b", "interleaved", "zero-bubble") and not zero_bubble
    timed = timed and (v == 1 or m % pp == 0)
    passes = m * v + pp - 1 if timed else m * v
    handoff = bd["pp_comm"] / (2.0 * passes) if pp > 1 else 0.0
    f_parts.append(("pp_comm", "pp_comm", handoff))
    b_parts.append(("pp_comm", "pp_comm", handoff))
    f_len = sum(x for *_, x in f_parts)
    b_len = sum(x for *_, x in b_parts)
    post = bd["overlap_interference"] + bd["dp_comm_exposed"] - d["zero3_forward"] - d["zero3_backward"]
    post += bd["optimizer"]
    pipeline_end = result.step_time_s - post

    events: list[dict[str, Any]] = []
    # the same sums taken in two orders differ by rounding: a gap that short is no event
    shortest = 1e-12 * result.step_time_s

    def add(track, key, cat, t0, dur, mb=None, chunk=None, kind=None):
        if dur > shortest:
            events.append(
                {
                    "track": track,
                    "name": _LABELS[key],
                    "category": cat,
                    "start_s": t0,
                    "dur_s": dur,
                    "micro_batch": mb,
                    "chunk": chunk,
                    "pass": kind,
                }
            )

    def add_pass(s, kind, c, i, t):
        for key, cat, dur in f_parts if kind == "F" else b_parts:
            add(s, key, cat, t, dur, i, c, "forward" if kind == "F" else "backward")
            t += max(dur, 0.0)

    if timed:
        starts = _schedule_passes(pp, m, v, schedule, f_len, b_len)
        for s in range(pp):
            t = 0.0
            for kind, c, i in _pass_order(s, pp, m, v, schedule):
                t0 = starts[(kind, c, s, i)]
                add(s, "bubble", "bubble", t, t0 - t)
                add_pass(s, kind, c, i, t0)
                t = t0 + (f_len if kind == "F" else b_len)
            add(s, "bubble", "bubble", t, pipeline_end - t)
    else:
        for s in range(pp):
            fill = bd["bubble"] * (s / (pp - 1) if pp > 1 else 0.0)
            add(s, "bubble", "bubble", 0.0, fill)
            t = fill
            for kind, c, i in _pass_order(s, pp, m, v, "1f1b"):
                add_pass(s, kind, c, i, t)
                t += f_len if kind == "F" else b_len
            add(s, "bubble", "bubble", t, pipeline_end - t)

    reduce_exposed = bd["dp_comm_exposed"] - d["zero3_forward"] - d["zero3_backward"]
    share = d["dp_gather_overlappable"] / d["dp_overlappable"] if d["dp_overlappable"] > 0 else 0.0
    tail = [
        ("overlap_interference", "overlap_interference", bd["overlap_interference"]),
        ("dp_grad", "dp_comm_exposed", reduce_exposed * (1.0 - share)),
        ("optimizer", "optimizer", bd["optimizer"]),
        ("dp_gather", "dp_comm_exposed", reduce_exposed * share),
    ]
    for s in range(pp):
        t = pipeline_end
        for key, cat, dur in tail:
            add(s, key, cat, t, dur)
            t += dur
    hidden = d["dp_overlappable"] - reduce_exposed if lay["overlap_grad_reduce"] else 0.0
    reduce_start = pipeline_end + bd["overlap_interference"]
    add("dp", "dp_hidden", "dp_comm_overlapped", max(reduce_start - hidden, 0.0), min(hidden, reduce_start))
    return events


def chrome_trace(workload: Workload, result: StepResult | None = None, calibration=None) -> dict[str, Any]:
    """The iteration as a Trace Event Format document ("Trace Event Format", Google): one process (the
    job), one thread per pipeline stage plus one for the overlapped data-parallel communication,
    complete events (ph "X", ts and dur in microseconds) with the micro-batch, chunk and category in
    args, metadata events (ph "M") naming the process and threads. Open it in Perfetto
    (ui.perfetto.dev) or chrome://tracing."""
    if result is None:
        result = step(workload, calibration=calibration)
    events = iteration_events(workload, result, calibration)
    lay = result.layout
    pp = int(lay["pp"])
    pid = 1
    title = (
        f"{result.model} on {result.n_gpus} × {result.gpu}: dp {lay['dp']} tp {lay['tp']} pp {pp} "
        f"cp {lay['cp']} ep {lay['ep']}, {lay['schedule']}, ZeRO-{lay['zero']}, "
        f"step {result.step_time_s:.6g} s"
    )
    out: list[dict[str, Any]] = [
        {"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": title}}
    ]
    for s in range(pp):
        out.append({"ph": "M", "pid": pid, "tid": s, "name": "thread_name", "args": {"name": f"stage {s}"}})
        out.append({"ph": "M", "pid": pid, "tid": s, "name": "thread_sort_index", "args": {"sort_index": s}})
    dp_tid = pp
    out.append(
        {
            "ph": "M",
            "pid": pid,
            "tid": dp_tid,
            "name": "thread_name",
            "args": {"name": "data-parallel network"},
        }
    )
    out.append(
        {"ph": "M", "pid": pid, "tid": dp_tid, "name": "thread_sort_index", "args": {"sort_index": dp_tid}}
    )
    for e in events:
        args = {"category": e["category"]}
        if e["micro_batch"] is not None:
            args["micro_batch"] = e["micro_batch"]
            args["chunk"] = e["chunk"]
            args["pass"] = e["pass"]
        out.append(
            {
                "ph": "X",
                "pid": pid,
                "tid": dp_tid if e["track"] == "dp" else e["track"],
                "name": e["name"],
                "cat": e["category"],
                "ts": e["start_s"] * 1e6,
                "dur": e["dur_s"] * 1e6,
                "args": args,
            }
        )
    return {
        "traceEvents": out,
        "displayTimeUnit": "ms",
        "otherData": {"step_time_s": result.step_time_s, "breakdown_s": result.breakdown_s},
    }
