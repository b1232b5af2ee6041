"""Heterogeneous node groups in the engine: what `node_groups` does to the frame's columns.

The decentralized formulas (MIRI simulator docs §3) are written for identical nodes. Groups change three
things, each reduced to the columns those formulas read, so every strategy, the batch path and the
warnings work unchanged — and a scenario whose groups are all alike gives exactly the homogeneous columns:

- **Compute.** `proportional` (default): each replica's tokens per inner step are in proportion to its
  sustained FLOP/s, so every replica takes the same time per step and the run processes Σ nᵢ·Fᵢ·MFUᵢ
  FLOP/s — the frame's node is the count-weighted mean peak with the throughput-weighted MFU.
  `slowest`: every replica takes the same batch, so the slowest group's sustained FLOP/s paces all.
- **Memory.** A replica (or pipeline stage) must fit on every node: the smallest node's memory.
- **Links.** A synchronization waits for its slowest member: the group with the largest
  payload/up + payload/down (the MIRI simulator docs' asymmetric exchange time, per node) sets the
  bandwidth terms, and the largest round-trip time of any group sets the latency term. A group's RTT is
  its `latency_ms`, else the farthest region among the groups (physics/wan.py: great-circle distance ×
  route inflation at the speed of light in fiber, or `region_rtt_ms`), else the scenario's latency_ms.
  With `tcp_streams`, each link carries at most streams × the window (and Mathis loss) limit of one flow
  at its RTT (physics/wan.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dtsim import catalog
from dtsim.physics import wan

# catalog_peak_flop_s of a node whose catalog GPU has no datapath for the training precision
NO_DATAPATH = -1.0


@dataclass(frozen=True)
class GroupTable:
    """Per-group arrays (length G) the engine needs after encoding. NaN: take the scenario's (row's)."""

    count: np.ndarray
    sustained_flop_s: np.ndarray  # per node: peak · MFU
    up_bps: np.ndarray
    down_bps: np.ndarray
    latency_s: np.ndarray  # a group's own latency_ms
    region_distance_m: np.ndarray  # to the farthest other region in the run (NaN: no region)
    region_measured_s: np.ndarray  # the largest measured RTT to another group's region (NaN: none)
    vram_bytes: np.ndarray  # per node


def _same_or(values: np.ndarray, reduce) -> float:
    """`values[0]` when every group has the same value (so identical groups give the homogeneous
    column bit for bit), else `reduce(values)`."""
    return float(values[0]) if np.all(values == values[0]) else float(reduce(values))


def group_mfu(s, mfu_of) -> tuple[float, np.ndarray]:
    """(The frame's MFU, each group's sustained FLOP/s per node): the MFU that makes the frame's node
    (the count-weighted mean peak) sustain what the groups do together — the throughput-weighted MFU
    (proportional work) or the slowest group's rate (equal batches)."""
    groups = s._groups
    count = np.array([g.count for g in groups], dtype=float)
    peak = np.array([g.pflops_per_node for g in groups]) * 1e15
    mfu = np.array([mfu_of(g) for g in groups], dtype=float)
    sustained = peak * mfu
    n = count.sum()
    mean_peak = _same_or(peak, lambda p: float(np.dot(count, p) / n))
    same_peak = bool(np.all(peak == peak[0]))
    if s.work_assignment.value == "slowest":
        return (float(mfu.min()) if same_peak else float(sustained.min() / mean_peak)), sustained
    if same_peak:
        return _same_or(mfu, lambda m: float(np.dot(count, m) / n)), sustained
    return float(np.dot(count, sustained) / np.dot(count, peak)), sustained


def encode_groups(s, cols: dict, mfu_of) -> GroupTable:
    """Write the compute, memory and cost columns node groups imply into `cols`; return the table the
    link resolution reads. `mfu_of(group)` gives a group's MFU (its own, the scenario's or planned)."""
    groups = s._groups
    count = np.array([g.count for g in groups], dtype=float)
    peak = np.array([g.pflops_per_node for g in groups]) * 1e15
    n = count.sum()
    cols["num_nodes"] = float(n)
    cols["peak_flop_s"] = _same_or(peak, lambda p: float(np.dot(count, p) / n))
    cols["mfu"], sustained = group_mfu(s, mfu_of)
    cols["vram_bytes"] = float(min(g.vram_per_node_gb for g in groups)) * 1e9
    gpn = np.array([np.nan if g.gpus_per_node is None else g.gpus_per_node for g in groups])
    cols["gpus_per_node"] = (
        _same_or(gpn, lambda x: float(np.dot(count, x) / n)) if not np.isnan(gpn).any() else np.nan
    )
    gpus = count * np.nan_to_num(gpn)
    for col, attr in (("gpu_price_usd", "price_usd"), ("gpu_power_w", "board_power_w")):
        vals = np.array([_gpu_attr(g.gpu, attr) for g in groups])
        cols[col] = (
            _same_or(vals, lambda v: float(np.dot(gpus, v) / gpus.sum()))
            if not np.isnan(vals).any()
            else np.nan
        )
    # VRAM_NOT_CATALOG: the group whose vram_per_node_gb most exceeds what its GPUs hold sets the ratio
    # vram_bytes / catalog_vram_bytes the rule reads
    held = np.array([_gpu_attr(g.gpu, "memory_gb") * (g.gpus_per_node or np.nan) for g in groups])
    ratio = np.array([g.vram_per_node_gb for g in groups]) / held
    cols["catalog_vram_bytes"] = (
        cols["vram_bytes"] / float(np.nanmax(ratio)) if not np.isnan(ratio).all() else np.nan
    )
    cat = np.array([catalog_peak_flop_s(g.gpu, s.precision.value, g.gpus_per_node) for g in groups])
    cols["catalog_peak_flop_s"] = (
        _same_or(cat, lambda c: float(np.dot(count, c) / n)) if not np.isnan(cat).any() else np.nan
    )
    if (cat == NO_DATAPATH).any():  # a group's GPU lacks the precision: the warning, no cross-check
        cols["catalog_peak_flop_s"] = NO_DATAPATH

    distance, measured = _region_terms(s)
    return GroupTable(
        count=count,
        sustained_flop_s=sustained,
        up_bps=np.array(
            [np.nan if g.bandwidth_up_mbps is None else g.bandwidth_up_mbps * 1e6 for g in groups]
        ),
        down_bps=np.array(
            [np.nan if g.bandwidth_down_mbps is None else g.bandwidth_down_mbps * 1e6 for g in groups]
        ),
        latency_s=np.array([np.nan if g.latency_ms is None else g.latency_ms * 1e-3 for g in groups]),
        region_distance_m=distance,
        region_measured_s=measured,
        vram_bytes=np.array([g.vram_per_node_gb for g in groups]) * 1e9,
    )


def _gpu_attr(gpu_id, attr) -> float:
    gpu = catalog.gpus().get(gpu_id) if gpu_id else None
    return float(getattr(gpu, attr)) if gpu is not None else np.nan


def catalog_peak_flop_s(gpu_id: str | None, precision: str, count: float | None) -> float:
    """The catalog's dense peak of `count` GPUs of `gpu_id` at a training precision, to cross-check a
    node's pflops_per_node (NaN: no GPU or no count); NO_DATAPATH where the GPU has no datapath for the
    precision (FP8 before Hopper, FP4 before Blackwell: the NO_PRECISION_DATAPATH warning)."""
    gpu = catalog.gpus().get(gpu_id) if gpu_id else None
    dense = gpu.peak_tflops(precision) if gpu else None
    if gpu is not None and dense is None:
        return NO_DATAPATH
    return np.nan if dense is None or count is None else count * dense * 1e12


def groups_spanning_regions(groups, nodes_per_group) -> np.ndarray:
    """How many of the regional groups that `nodes_per_group` = m makes, taken in `node_groups` order,
    hold nodes of two or more regions (a group without a region counts as a place of its own). As
    strategies/hierarchical_diloco.group_layout forms them: G = ⌊N/m⌋ groups, the leftover nodes joining
    them, so they are G consecutive runs of ⌊N/G⌋ or ⌈N/G⌉ nodes. One value per m."""
    counts = [int(g.count) for g in groups]
    n = sum(counts)
    ends = np.cumsum(counts)
    cuts = [int(ends[i]) for i in range(len(groups) - 1) if groups[i].region != groups[i + 1].region]
    m = np.asarray(nodes_per_group, dtype=float)
    out = np.zeros(m.shape)
    for size in np.unique(m):
        g = int(n // size) if size >= 1 else 0  # not a group size: the field's own check names it
        if g < 2 or not cuts:  # one group (or none) is no hierarchy
            continue
        q, r = divmod(n, g)
        bounds = [i * q + min(i, r) for i in range(g + 1)]  # group i holds nodes bounds[i] … bounds[i+1] − 1
        inside = {int(np.searchsorted(bounds, c, side="right")) - 1 for c in cuts if c not in bounds}
        out[m == size] = len(inside)
    return out


def _region_terms(s) -> tuple[np.ndarray, np.ndarray]:
    """Per group: the great-circle distance to the farthest region among the groups that is not measured
    in region_rtt_ms (0 for its own), and the largest measured RTT to one (NaN: none / no region)."""
    regions = catalog.regions()
    rtt = s.region_rtt_ms or {}
    measured = {}
    for a, row in rtt.items():
        for b, ms in row.items():
            measured[frozenset((a, b))] = ms * 1e-3
    names = [g.region for g in s._groups]
    present = sorted({r for r in names if r is not None})
    dist, meas = [], []
    for r in names:
        if r is None:
            dist.append(np.nan)
            meas.append(np.nan)
            continue
        d, m = 0.0, np.nan
        for other in present:
            if other == r:
                continue
            pair = frozenset((r, other))
            if pair in measured:
                m = measured[pair] if np.isnan(m) else max(m, measured[pair])
            else:
                a, b = regions[r], regions[other]
                d = max(d, float(wan.great_circle_m(a.lat, a.lon, b.lat, b.lon)))
        dist.append(d)
        meas.append(m)
    return np.array(dist), np.array(meas)


def _col(x):
    """A frame column or assumption as an array that broadcasts against a trailing group axis."""
    return np.asarray(x, dtype=float)[..., None]


def group_rtt_s(t: GroupTable, scenario_latency_s, asm):
    """Each group's RTT (…, G): its own latency_ms, else its regions' (geographic or measured), else
    the scenario's."""
    geo = wan.geographic_rtt_s(np.nan_to_num(t.region_distance_m), _GroupAxis(asm))
    region = np.fmax(geo, np.nan_to_num(t.region_measured_s, nan=-np.inf))
    by_region = np.where(np.isnan(t.region_distance_m), _col(scenario_latency_s), region)
    return np.where(np.isnan(t.latency_s), by_region, t.latency_s)


class _GroupAxis:
    """The assumptions as seen beside (…, G) group arrays: each value shaped to broadcast over the
    trailing group axis (a per-row Monte Carlo value becomes a column)."""

    def __init__(self, asm):
        self._asm = asm

    def __getattr__(self, name: str):
        return _col(getattr(self._asm, name))


def groups_of(f) -> GroupTable | None:
    """The frame's group table (the frame holds it as a 0-d object array), or None."""
    t = f.get("groups")
    return t.item() if isinstance(t, np.ndarray) else t


def resolve_links(f) -> None:
    """Set the frame's WAN columns (up_bps, down_bps, latency_s) from its node groups and TCP limits,
    and record `link_group` and `rtt_group` (which group sets the bandwidth and the latency terms)."""
    asm = f.asm
    streams = f.tcp_streams
    loss = f.loss_rate
    t = groups_of(f)
    if t is None:
        f["by_region"] = np.asarray(False)
        if np.isnan(streams).all():  # no TCP limits: links carry their line rates (no work)
            return
        rtt = f.latency_s
        f["line_up_bps"], f["line_down_bps"] = f.up_bps, f.down_bps  # before TCP's limits (TCP_LIMITED)
        f["up_bps"] = wan.link_rate_bps(f.up_bps, rtt, streams, loss, asm)
        f["down_bps"] = wan.link_rate_bps(f.down_bps, rtt, streams, loss, asm)
        f["regional_bps"] = wan.link_rate_bps(f.regional_bps, f.regional_latency_s, streams, loss, asm)
        return
    rtt = group_rtt_s(t, f.latency_s, asm)
    up = np.where(np.isnan(t.up_bps), _col(f.up_bps), t.up_bps)
    down = np.where(np.isnan(t.down_bps), _col(f.down_bps), t.down_bps)
    line = np.min(np.minimum(up, down), axis=-1)  # the slowest line rate, before any WAN TCP limit
    line_up, line_down = up, down
    up = wan.link_rate_bps(up, rtt, _col(streams), _col(loss), _GroupAxis(asm))
    down = wan.link_rate_bps(down, rtt, _col(streams), _col(loss), _GroupAxis(asm))
    up, down, rtt, line_up, line_down = np.broadcast_arrays(up, down, rtt, line_up, line_down)
    slowness = 1.0 / up + 1.0 / down
    link = np.argmax(slowness, axis=-1)  # first group on ties
    far = np.argmax(rtt, axis=-1)
    f["up_bps"] = np.take_along_axis(up, link[..., None], axis=-1)[..., 0]
    f["down_bps"] = np.take_along_axis(down, link[..., None], axis=-1)[..., 0]
    # the limiting group's line rates, before TCP's limits (TCP_LIMITED)
    f["line_up_bps"] = np.take_along_axis(line_up, link[..., None], axis=-1)[..., 0]
    f["line_down_bps"] = np.take_along_axis(line_down, link[..., None], axis=-1)[..., 0]
    f["latency_s"] = np.take_along_axis(rtt, far[..., None], axis=-1)[..., 0]
    by_region = np.asarray(f.get("by_region", False)) & ~np.isnan(np.asarray(f.get("region_count", np.nan)))
    if by_region.any():
        # the regions are the regional groups: G = R groups, the largest region's nodes the largest group
        # (strategies/hierarchical_diloco.group_layout), at the intra-region RTT unless the scenario gives
        # regional_latency_ms (their link: below)
        intra = asm.intra_region_rtt_ms * 1e-3
        f["hierarchical"] = f.hierarchical | by_region
        f["hier_groups"] = np.where(by_region, f.region_count, np.nan)
        f["nodes_per_group"] = np.where(by_region, f.region_largest, f.nodes_per_group)
        latency_given = np.asarray(f.get("regional_latency_given", False))
        f["regional_latency_s"] = np.where(by_region & ~latency_given, intra, f.regional_latency_s)
    # the regional link is the nodes' own (the slowest direction of the slowest group), unless the scenario
    # gives regional_bandwidth_mbps: in regions and in groups of nodes by their order alike (a trial
    # user's case: by order, the default 1,000 Mbit/s synced 100 Mbit/s nodes 10× faster than the same
    # groups formed by region)
    regional = np.where(np.asarray(f.get("regional_given", False)), f.regional_bps, line)
    f["by_region"] = by_region
    f["regional_bps"] = wan.link_rate_bps(regional, f.regional_latency_s, streams, loss, asm)
    f["link_group"] = link
    f["rtt_group"] = far
    f["compute_group"] = np.asarray(np.argmin(t.sustained_flop_s))
