"""The cluster network every datacenter collective runs on, and network questions on their own: the
time of one collective, and the scale-across fabric a cluster spread over datacenters needs.

`ClusterNetwork` is the one network model of the datacenter model and of the validation of collective
measurements: NVLink inside an NVLink domain (a node, or a rack such as GB200 NVL72), the node's NICs
beyond it, shared fairly among the node's GPUs, and an oversubscribed tier above the leaf switches. `dtsim.collective` and `dtsim.fabric` (and the `dtsim collective` /
`dtsim fabric` commands, which only format these results) check their inputs and return typed results
with units in the field names.

Collectives: α-β forms of dtsim.physics.collectives (Data Parallelism from Associativity "data-parallel theory"; Camilli 2025 §3.5).
Fabric: Camilli 2025 ch. 3 (dtsim.physics.fabric.plan_fabric); a GB200 NVL72 rack has 18 compute trays of
4 ConnectX-7 ports at 400 Gbit/s (Camilli 2025 §3.4, eq. 3.15).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.physics import collectives as coll
from dtsim.physics.fabric import FabricPlan, plan_fabric

OPS = ("allreduce", "reduce-scatter", "all-gather", "broadcast", "p2p", "all-to-all")
# how each collective other than the all-reduce is timed (physics.collectives), as its result names it
OP_FORM = {
    "reduce-scatter": "ring",
    "all-gather": "ring",
    "broadcast": "tree",
    "p2p": "direct",
    "all-to-all": "pairwise",
}
ALLREDUCE_ALGORITHMS = ("ring", "ring-bidirectional", "tree", "nvls", "wan-ring")
DEFAULT_FABRIC = "nvlink3"  # the fabric whose bandwidth and latency apply when none is given
# GB200 NVL72 rack (Camilli 2025 §3.4, eq. 3.15): trays per rack, ConnectX-7 ports per tray, bit/s per port.
NVL72_TRAYS_PER_RACK = 18
NVL72_PORTS_PER_TRAY = 4
NVL72_PORT_BITS_S = 400e9


@dataclass(frozen=True)
class ClusterNetwork:
    """Bandwidths and latencies of a cluster's network (bus bandwidths: wire rate × NCCL efficiency).

    Ranks are numbered node by node in Megatron-LM's order (TP innermost, then CP, DP, PP), so the
    groups of one kind — `size` ranks `stride` apart — tile the job. A group runs on NVLink when it
    lies inside one NVLink domain (a node, or a rack such as GB200 NVL72). Otherwise it runs on the NICs
    of the GPUs it holds in each domain: each GPU has an equal share of its node's NICs, and NCCL gives
    each ring channel its own NIC, so a ring crosses a domain at (its ranks there) × one NIC share,
    capped by NVLink (Camilli 2025 §3.5 and the NCCL rows of the measured runs: 8 × 200 Gb/s HDR carry
    192 GB/s of bus bandwidth per DGX A100, 4 NICs 86 GB/s). The groups of one kind run in lockstep, so
    the group that straddles a domain boundary worst sets the pace; every group communicating at once
    gets its own NIC share — the contention of the groups that share a node's NICs. A group that
    straddles a leaf-switch boundary (`leaf_nodes` nodes) crosses the tier above it and runs at
    1/oversubscription of that.
    """

    gpus_per_node: int
    nvlink_domain: int  # GPUs joined by NVLink: the node, or more (72 in a GB200 NVL72 rack)
    nvlink_bw: float  # NVLink bus bandwidth per GPU, B/s (inf: one GPU per node, no NVLink)
    nvlink_alpha: float  # per-step latency of a ring inside the domain, s
    nic_bw_per_gpu: float  # one GPU's share of its node's NIC bus bandwidth, B/s
    nic_alpha: float  # per-step latency of a ring across domains, s
    n_gpus: float  # GPUs in the job: a job inside one domain or leaf never leaves it
    oversubscription: float = 1.0  # scale-out bandwidth ratio above the leaf switches (1: non-blocking)
    leaf_nodes: float = math.inf  # nodes one leaf switch (rail group) connects
    nvls_bw: float = 0.0  # NVLS all-reduce algorithm bandwidth per GPU inside the domain, B/s (0: no NVLS)
    nvls_alpha: float = 0.0  # NVLS all-reduce latency, s
    tree_factor: float = 0.46  # tree algorithm bandwidth / ring bus bandwidth (nccl_tree_bandwidth_factor)
    # A TPU slice: the domain is a torus of these axis lengths (innermost first; empty: an NVLink switch),
    # nvlink_bw one ICI link's one-way bus bandwidth and nvlink_alpha one hop's latency
    torus: tuple[int, ...] = ()
    torus_wrap: tuple[bool, ...] = ()  # whether each axis has its wraparound link

    def _fewest(self, size, stride, block):
        """The fewest ranks a group holds in one block of `block` consecutive ranks, over the job's
        groups (`size` itself when every group lies inside one block). In units of the group's own
        lane (every stride-th rank) a block holds L = ⌊block/stride⌋ of them and groups start at
        multiples of size, so a group that straddles a boundary can keep as few as gcd(size, L)."""
        lane = np.maximum(np.floor(block / stride), 1.0)
        inside = ((lane % size == 0) & (size <= lane)) | (self.n_gpus <= block)
        few = np.gcd(size.astype(np.int64), lane.astype(np.int64)).astype(float)
        return np.where(inside, size, few)

    def _span(self, size, stride):
        size = np.asarray(size, dtype=float)
        stride = np.asarray(stride, dtype=float)
        per_domain = self._fewest(size, stride, self.nvlink_domain)
        slow = 1.0
        if self.oversubscription != 1.0 and math.isfinite(self.leaf_nodes):
            leaf = self._fewest(size, stride, self.leaf_nodes * self.gpus_per_node)
            slow = np.where(leaf < size, self.oversubscription, 1.0)
        return per_domain, per_domain < size, slow

    def _torus_ring(self, size, stride):
        """(bus bandwidth, per-step α) of a ring collective over `size` ranks `stride` apart inside a TPU
        slice (Austin et al. 2025, "How to Scale Your Model", "Sharded Matrices": a collective over k
        mesh axes has k axes' links; an axis with its wraparound link carries a bidirectional ring, 2
        links' worth, one without a ring folded onto a line, one link; ≈1 hop latency per step).

        Ranks fill the torus axis by axis, innermost first (Megatron's order), so a group occupies the
        axes whose rank range [stride, stride·size) reaches; it uses an axis's wraparound only when it
        runs the axis's whole length, and the groups whose ranks interleave along an axis (stride
        inside the axis) share its links. The latency is the hops of the collective's phases — half of
        an axis's ranks with the wraparound, all but one without — spread over the ring's n − 1 steps."""
        bw = hops = 0.0
        below = 1.0  # ranks per step along this axis
        for length, wrap in zip(self.torus, self.torus_wrap, strict=True):
            above = below * length
            spanned = (stride < above) & (stride * size > below)
            step = np.maximum(stride, below)
            extent = np.clip(np.minimum(stride * size, above) / step, 1.0, length)
            both_ways = wrap & (stride * size >= above)
            share = np.where(stride > below, stride / below, 1.0)  # interleaved groups on these links
            bw = bw + np.where(spanned, self.nvlink_bw * np.where(both_ways, 2.0, 1.0) / share, 0.0)
            hops = hops + np.where(spanned, np.where(both_ways, np.floor(extent / 2.0), extent - 1.0), 0.0)
            below = above
        bw = np.where(bw > 0, bw, self.nvlink_bw)  # a group of one rank
        return bw, self.nvlink_alpha * hops / np.maximum(size - 1.0, 1.0)

    def ring_span(self, size, stride=1):
        """(bus bandwidth, α, ranks in the fewest-held domain, whether the group leaves its domain) of
        NCCL's ring over `size` ranks `stride` apart: `ring` and, passed on as `span`, `allreduce`.
        Inside a TPU slice the ring runs on the torus (`_torus_ring`)."""
        size = np.asarray(size, dtype=float)
        per_domain, cross, slow = self._span(size, stride)
        if self.torus:
            intra_bw, intra_alpha = self._torus_ring(per_domain, np.asarray(stride, dtype=float))
        else:
            intra_bw, intra_alpha = self.nvlink_bw, self.nvlink_alpha
        busbw = coll.nccl_ring_busbw(per_domain, size / per_domain, intra_bw, self.nic_bw_per_gpu / slow)
        return busbw, np.where(cross, self.nic_alpha, intra_alpha), per_domain, cross

    def ring(self, size, stride=1):
        """(bus bandwidth B/s, α s per step) of NCCL's ring over `size` ranks `stride` apart."""
        busbw, alpha, _, _ = self.ring_span(size, stride)
        return busbw, alpha

    def allreduce(self, size, nbytes, stride=1, span=None):
        """Time of an all-reduce of `nbytes` over `size` ranks `stride` apart, by the algorithm NCCL's
        tuner would pick: the one with the least modelled time, latency + bytes / algorithm bandwidth
        (NCCL src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime). The candidates:
        - ring: 2(n−1) steps of α plus 2(n−1)/n·S at the ring's bus bandwidth (`ring`);
        - tree, once the group leaves the NVLink domain: NCCL's double binary tree across domains with a
          chain inside each, 2·((ppn−1)·α_nvlink + ⌊log2 domains⌋·α_nic) of latency and an algorithm
          bandwidth of tree_factor (0.92 × ½, tuning.cc) × the ring's bus bandwidth;
        - NVLS, inside one NVLink domain whose switches reduce (NVLink SHARP): each GPU sends S once and
          receives the sum once, max(α_nvls, the ring's 2(n−1)·α) + S / nvls_bw (catalog/fabrics.yaml
          nvls_*; nvls_bw is fitted at 8 GPUs and taken as independent of the group size, as NCCL's
          tuner takes it).
        Each call is one NCCL call: the DP all-reduce is picked on the whole gradient, though DDP sends it
        in buckets of ddp_bucket_mb (the bucket latencies overlap the backward pass). `span`: this
        group's ring_span when the caller has it already.
        """
        size = np.asarray(size, dtype=float)
        nbytes = np.asarray(nbytes, dtype=float)
        busbw, alpha, per_domain, cross = self.ring_span(size, stride) if span is None else span
        t = coll.nccl_ring_time(size, nbytes, busbw, alpha, 2.0)
        if np.any(cross):
            hops = np.floor(np.log2(np.maximum(size / per_domain, 1.0)))  # NCCL's log2i rounds down
            tree_lat = 2.0 * ((per_domain - 1.0) * self.nvlink_alpha + hops * self.nic_alpha)
            tree = tree_lat + nbytes / (self.tree_factor * busbw)
            t = np.where(cross & (size > 1), np.minimum(t, tree), t)
        if self.nvls_bw > 0:
            # NVLS never wins a latency-bound all-reduce (the 32 KiB H200 row: 39.8 µs with NVLS there)
            nvls = coll.nvls_allreduce_time(size, nbytes, self.nvls_bw, self.nvls_alpha, self.nvlink_alpha)
            t = np.where(~cross, np.minimum(t, nvls), t)
        return t

    def per_rank(self, size, stride=1):
        """(bandwidth B/s, α s) of each rank when every rank of the group sends at once to others in it
        (pipeline hand-offs along a pipeline of `size` stages, all-to-all): one NIC share once any of
        its exchanges leaves the domain."""
        _, cross, slow = self._span(size, stride)
        bw = np.where(cross, np.minimum(self.nvlink_bw, self.nic_bw_per_gpu / slow), self.nvlink_bw)
        return bw, np.where(cross, self.nic_alpha, self.nvlink_alpha)


def default_torus(chips: int, ici: catalog.Fabric) -> tuple[int, ...]:
    """The slice a job of `chips` TPU chips runs on when no shape is given: the whole job when a slice
    of power-of-two axes within the pod's holds it, else halved until one does (slices joined by DCN);
    axes grown by doubling the shortest, innermost first (4x4x4 for 64 v5p chips, 16x16 for 256 v5e
    chips, two 16x16x16 for 8,192 v5p chips)."""
    dims, pod = ici.torus_dims or 1, sorted(ici.pod or ())
    # the largest slice of doubled axes: a pod whose axes are no powers of two (v5p's 16x20x28) holds
    # fewer chips so (16x16x16): 8,192 v5p chips are two such slices, not one
    largest = math.prod(2 ** int(math.log2(a)) for a in pod)
    per_slice = chips
    while per_slice > largest and per_slice % 2 == 0:
        per_slice //= 2
    shape = [1] * dims
    while math.prod(shape) < per_slice:
        grow = [i for i in range(dims) if shape[i] * 2 <= pod[i]]
        if not grow:
            break
        i = min(grow, key=lambda k: shape[k])
        shape[i] *= 2
    if math.prod(shape) != per_slice:
        example = "x".join(["4"] * dims)
        raise ScenarioError(
            [
                (
                    "torus",
                    "none given",
                    f"no default slice for {chips} chips (a default slice has power-of-two axes within the "
                    f"pod {'x'.join(map(str, ici.pod or ()))}); give the slice shape, whose axes multiply to "
                    f"the chips of one slice (e.g. --torus {example} for slices of {4**dims} chips)",
                )
            ]
        )
    return tuple(shape)


def parse_torus(text: str, ici: catalog.Fabric) -> tuple[int, ...]:
    """A TPU slice shape given as axis lengths joined by x ("4x4x4"), checked against the ICI's number
    of axes and its pod."""
    try:
        shape = tuple(int(x) for x in str(text).lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 1:
        raise ScenarioError([("torus", text, "must be axis lengths joined by x (each ≥ 1), e.g. 4x4x4")])
    allowed = f"{ici.torus_dims} axes of chips, each within the pod's {'x'.join(map(str, ici.pod))}"
    if len(shape) != ici.torus_dims or any(
        a > p for a, p in zip(sorted(shape), sorted(ici.pod or ()), strict=False)
    ):
        raise ScenarioError([("torus", text, f"must be {allowed} (e.g. {'x'.join(['4'] * ici.torus_dims)})")])
    return shape


def cluster_network(
    gpus_per_node: int,
    nvlink: catalog.Fabric | None,
    nic: catalog.Fabric | None,
    nics_per_node: float,
    nvlink_gbps: float | None = None,
    nic_gbps: float | None = None,
    nvlink_domain: int | None = None,
    oversubscription: float = 1.0,
    leaf_nodes: float = math.inf,
    n_gpus: float = math.inf,
    nvls: bool = True,
    tree_factor: float = 0.46,
    torus: tuple[int, ...] = (),
) -> ClusterNetwork:
    """A ClusterNetwork from link types (fabrics.yaml: wire rate, NCCL efficiency, α) and counts.

    `nvlink_gbps` / `nic_gbps` replace the link types' wire rates (Gbit/s: per GPU in one direction for
    NVLink, per NIC for the NICs) and keep their efficiency and latency. No NVLink (`nvlink` None) is a
    node of one GPU; no NIC (`nic` None) a cluster of one node. `nvls` False turns NVLink SHARP off
    (NCCL_NVLS_ENABLE=0) where the NVLink type has it. `torus`: a TPU slice's axis lengths when the
    NVLink type is an ICI torus (its wraparound rule: fabrics.yaml wrap_axis_multiple)."""

    def bus(link: catalog.Fabric | None, gbps: float | None, missing: float) -> tuple[float, float]:
        if link is None:
            return missing, 0.0
        wire = link.bandwidth_gb_s * 1e9 if gbps is None else gbps * 1e9 / 8.0
        return wire * link.efficiency, link.latency_s

    nvlink_bw, nvlink_alpha = bus(nvlink, nvlink_gbps, math.inf)
    nic_bw, nic_alpha = bus(nic, nic_gbps, 0.0)
    nvls_bw = nvls_alpha = 0.0
    if nvls and nvlink is not None and nvlink.nvls_efficiency is not None:
        wire = nvlink.bandwidth_gb_s * 1e9 if nvlink_gbps is None else nvlink_gbps * 1e9 / 8.0
        nvls_bw, nvls_alpha = wire * nvlink.nvls_efficiency, float(nvlink.nvls_latency_s or 0.0)
    wrap = ()
    if torus:
        # v5e/v6e: an axis of 16 wraps; v4/v5p (wrap_whole_slice): the optical wraparounds come with
        # whole 4x4x4 cubes, so every axis wraps when all are multiples of 4 and none otherwise
        multiple = (nvlink.wrap_axis_multiple if nvlink is not None else None) or 0
        wrap = tuple(bool(multiple) and axis % multiple == 0 for axis in torus)
        if nvlink is not None and nvlink.wrap_whole_slice:
            wrap = (all(wrap),) * len(torus)
        nvlink_domain = math.prod(torus)
    return ClusterNetwork(
        torus=tuple(torus),
        torus_wrap=wrap,
        gpus_per_node=gpus_per_node,
        nvlink_domain=nvlink_domain or gpus_per_node,
        nvlink_bw=nvlink_bw,
        nvlink_alpha=nvlink_alpha,
        nic_bw_per_gpu=nics_per_node * nic_bw / gpus_per_node,
        nic_alpha=nic_alpha,
        n_gpus=n_gpus,
        oversubscription=oversubscription,
        leaf_nodes=leaf_nodes,
        nvls_bw=nvls_bw,
        nvls_alpha=nvls_alpha,
        tree_factor=tree_factor,
    )


@dataclass(frozen=True)
class CollectiveResult:
    op: str
    algorithm: str
    ranks: int
    size_bytes: float
    time_s: float
    bytes_sent_per_rank: float
    algbw_gb_s: float | None  # size / time
    bus_bandwidth_gb_s: float  # the links' bus bandwidth β the time is computed at (an input)
    latency_s: float
    torus: str | None = None  # the TPU slice a ring collective on ICI ran on
    # nccl-tests' busbw of this result: algbw × nccl_bus_factor (what nccl-tests would print for the time)
    busbw_gb_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def nccl_bus_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus bandwidth over algorithm bandwidth (NVIDIA nccl-tests, doc/PERFORMANCE.md): an
    all-reduce 2(n−1)/n; a reduce-scatter, all-gather or all-to-all (n−1)/n; a broadcast or a
    point-to-point transfer 1. The bus bandwidth is what each rank's links carry, comparable across
    operations and rank counts and with the fabric's rated bus bandwidth."""
    n = float(ranks)
    if op == "allreduce":
        return 2.0 * (n - 1.0) / n
    if op in ("reduce-scatter", "all-gather", "all-to-all"):
        return (n - 1.0) / n
    return 1.0


def _words(values: tuple[str, ...]) -> str:
    return ", ".join(values[:-1]) + " or " + values[-1]


def _in_domain(ranks: int, fab, which: str) -> None:
    """Refuse more ranks than one NVLink domain of `fab` joins (its bus bandwidth holds inside it)."""
    if fab.max_domain is not None and ranks > fab.max_domain:
        raise ScenarioError(
            [
                (
                    "ranks",
                    ranks,
                    f"must be at most the {fab.max_domain} GPUs one {fab.id} domain joins "
                    f"({which}{fab.max_domain_source}); more ranks cross a NIC fabric (`dtsim step` times them)"
                    + ("; or give --bandwidth-gbs (and --latency-us) of your own network" if which else ""),
                )
            ]
        )


def collective(
    op: str = "allreduce",
    ranks: int = 8,
    size_bytes: float = 1e9,
    algorithm: str = "ring",
    fabric: str | None = None,
    bandwidth_bytes_s: float | None = None,
    latency_s: float | None = None,
    hop_km: float = 0.0,
    torus: str | None = None,
) -> CollectiveResult:
    """α-β time of one collective over `ranks` ranks of `size_bytes` each.

    On a TPU's ICI fabric the ranks fill a slice of shape `torus` ("4x4x4"; default: the smallest slice
    of `ranks` chips, `default_torus`) axis by axis, and the ring runs on the links of the axes it
    spans, both ways on an axis with its wraparound (`ClusterNetwork._torus_ring`, Austin et al. 2025).

    The bus bandwidth and per-step latency come from `fabric` (a catalog id), or from
    `bandwidth_bytes_s` / `latency_s`, each defaulting to the DEFAULT_FABRIC's. The `wan-ring`
    all-reduce is Camilli 2025 eq. 3.19, T = (N−1)·(T_prop + S/(N·BW)), a bidirectional ring whose every
    step pays the propagation delay of `hop_km` of fibre (5 µs/km, eq. 3.9) instead of α. The `nvls`
    all-reduce reduces in the NVLink switch (NVLink SHARP): coll.nvls_allreduce_time at the fabric's NVLS
    bandwidth and latency."""
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ScenarioError([("ranks", ranks, "must be an integer ≥ 1")])
    if not (isinstance(size_bytes, int | float) and math.isfinite(size_bytes) and size_bytes > 0):
        raise ScenarioError([("size_bytes", size_bytes, "must be a finite number > 0")])
    fabrics = catalog.fabrics()
    if fabric is not None and fabric not in fabrics:
        raise ScenarioError([("fabric", fabric, f"unknown fabric; known: {', '.join(fabrics)}")])
    if torus is not None and (fabric is None or not fabrics[fabric].torus_dims):
        ici = ", ".join(k for k, f in fabrics.items() if f.torus_dims)
        raise ScenarioError([("torus", torus, f"needs an ICI --fabric ({ici})")])
    if fabric is not None and (bandwidth_bytes_s is not None or latency_s is not None):
        raise ScenarioError(
            [
                (
                    "bandwidth_bytes_s/latency_s",
                    (bandwidth_bytes_s, latency_s),
                    f"come from --fabric {fabric}; give one or the other",
                )
            ]
        )
    shape: tuple[int, ...] = ()
    if fabric is not None:
        fab = fabrics[fabric]
        bw, alpha = fab.bus_bytes_per_s, fab.latency_s
        # a ring collective on a TPU's ICI runs on the torus links the ranks span; a point-to-point
        # transfer, a broadcast and an all-to-all are timed on one link (the torus's bisection for
        # all-to-all is not modelled)
        _in_domain(ranks, fab, "")
        if fab.torus_dims and op in ("allreduce", "reduce-scatter", "all-gather"):
            if op == "allreduce" and algorithm != "ring":
                raise ScenarioError(
                    [
                        (
                            "algorithm",
                            algorithm,
                            f"must be ring on {fab.id}: the torus runs rings over its axes",
                        )
                    ]
                )
            pod = math.prod(fab.pod or ())
            if torus is None and ranks > pod:
                raise ScenarioError([("ranks", ranks, f"must be at most the {pod} chips of a {fab.id} pod")])
            shape = default_torus(ranks, fab) if torus is None else parse_torus(torus, fab)
            if ranks > math.prod(shape):
                raise ScenarioError(
                    [
                        (
                            "ranks",
                            ranks,
                            f"must be at most the {math.prod(shape)} chips of the slice {'x'.join(map(str, shape))}",
                        )
                    ]
                )
            net = cluster_network(math.prod(shape), fab, None, 0.0, n_gpus=math.prod(shape), torus=shape)
            bw, alpha = (float(x) for x in net.ring(ranks))
    else:
        fab = fabrics[DEFAULT_FABRIC]
        if bandwidth_bytes_s is None:  # the default fabric's bandwidth: its ranks are those of its domain
            _in_domain(ranks, fab, "the default fabric; ")
        bw = fab.bus_bytes_per_s if bandwidth_bytes_s is None else bandwidth_bytes_s
        alpha = fab.latency_s if latency_s is None else latency_s
    if isinstance(hop_km, bool) or not isinstance(hop_km, int | float) or not 0 <= hop_km <= 40_075:
        raise ScenarioError([("hop_km", hop_km, "must be a distance in km between 0 and 40075")])
    problems = []
    if not (math.isfinite(bw) and bw > 0):
        problems.append(("bandwidth_bytes_s", bandwidth_bytes_s, "must be a finite bus bandwidth > 0 B/s"))
    if not (math.isfinite(alpha) and alpha >= 0):
        problems.append(("latency_s", latency_s, "must be a finite per-step latency ≥ 0 s"))
    if problems:
        raise ScenarioError(problems)
    if op == "allreduce" and algorithm in ("ring-bidirectional", "wan-ring") and bandwidth_bytes_s is None:
        # every catalog fabric a ring can take here is switched (NVSwitch, a NIC's switch port): a rank's
        # sends to both neighbours share its one port's egress, which the one-way ring already fills
        # (nccl-tests' bus bandwidth), so half the bytes each way cannot run at twice that rate
        src = fabric if fabric is not None else f"the default fabric, {DEFAULT_FABRIC}"
        raise ScenarioError(
            [
                (
                    "algorithm",
                    algorithm,
                    f"sends half the bytes each way, each direction at the bandwidth of one link of a "
                    f"point-to-point ring; {src} is switched: a rank's sends to both neighbours share its "
                    "port, which the one-way ring already fills, so it is no faster than ring there: give "
                    "the bandwidth of one link, or the ring algorithm",
                )
            ]
        )
    if op in OPS and op != "allreduce" and algorithm != "ring":
        raise ScenarioError(
            [("algorithm", algorithm, f"chooses the all-reduce's algorithm; {op} is timed as {OP_FORM[op]}")]
        )
    if algorithm == "wan-ring" and latency_s:  # 0 is what it uses without hop_km
        raise ScenarioError(
            [
                (
                    "latency_s",
                    latency_s,
                    "the wan-ring's per-step latency is the propagation delay of its fibre (hop_km, 5 µs/km): "
                    "give the distance instead",
                )
            ]
        )
    if hop_km and not (op == "allreduce" and algorithm == "wan-ring"):
        raise ScenarioError([("hop_km", hop_km, "is the fibre per step of the wan-ring all-reduce only")])
    size = float(size_bytes)
    others = {
        "reduce-scatter": coll.reduce_scatter_time,
        "all-gather": coll.all_gather_time,
        "all-to-all": coll.all_to_all_time,
        "broadcast": coll.broadcast_time,
    }
    if op == "allreduce":
        if algorithm not in ALLREDUCE_ALGORITHMS:
            raise ScenarioError([("algorithm", algorithm, f"must be {_words(ALLREDUCE_ALGORITHMS)}")])
        if algorithm == "wan-ring":
            alpha = float(coll.propagation_delay(hop_km))
            t = coll.thesis_ring_time(ranks, size, bw, alpha)
        elif algorithm == "nvls":
            with_nvls = ", ".join(k for k, f in fabrics.items() if f.nvls_efficiency is not None)
            if bandwidth_bytes_s is not None or latency_s is not None:
                raise ScenarioError(
                    [("algorithm", algorithm, f"takes its rate from a fabric ({with_nvls}), not a bandwidth")]
                )
            if fab.nvls_bytes_per_s is None:
                raise ScenarioError(
                    [
                        (
                            "fabric",
                            fab.id,
                            f"has no NVLink SHARP for --algorithm nvls; fabrics with it: {with_nvls}",
                        )
                    ]
                )
            # NVLink SHARP: each rank sends S once and receives the sum once (catalog/fabrics.yaml nvls_*)
            algbw, alpha = fab.nvls_bytes_per_s, float(fab.nvls_latency_s or 0.0)
            t = coll.nvls_allreduce_time(ranks, size, algbw, alpha, fab.latency_s)
            bw = algbw * 2.0 * (ranks - 1) / ranks  # reported as nccl-tests' bus bandwidth
        elif algorithm == "tree":
            t = coll.tree_allreduce_time(ranks, size, bw, alpha)
        else:
            t = coll.ring_allreduce_time(ranks, size, bw, alpha, algorithm == "ring-bidirectional")
        nvls_sent = size if ranks > 1 else 0.0
        per_rank = nvls_sent if algorithm == "nvls" else float(coll.allreduce_bytes_per_rank(ranks, size))
    elif op == "p2p":
        t, per_rank = coll.p2p_time(size, bw, alpha), size
    elif op in others:
        t = others[op](ranks, size, bw, alpha)
        per_rank = coll.shard_exchange_bytes_per_rank(ranks, size) if op != "broadcast" else size
    else:
        raise ScenarioError([("op", op, f"must be {_words(OPS)}")])
    t = float(t)
    return CollectiveResult(
        op=op,
        algorithm=algorithm if op == "allreduce" else OP_FORM[op],
        ranks=ranks,
        size_bytes=size,
        time_s=t,
        bytes_sent_per_rank=float(per_rank),
        algbw_gb_s=size / t / 1e9 if t > 0 else None,
        bus_bandwidth_gb_s=bw / 1e9,
        latency_s=alpha,
        torus="x".join(map(str, shape)) or None,
        busbw_gb_s=size / t / 1e9 * nccl_bus_factor(op, ranks) if t > 0 else None,
    )


THESIS_NETWORK_FRACTION = 0.05  # Camilli 2025 §3: the share of a step left to synchronization
THESIS_SYNC_BUDGET_S = 0.25  # Camilli 2025 §3: 0.05 × its 4.9 s batch time, rounded to 250 ms
# the inputs that set the thesis scenario's batch time (tokens in T, training days, B_crit = k·√tokens) at
# their defaults (Camilli 2025 ch. 3): only there does its rounded 250 ms stand in for 0.05 × the batch time
THESIS_BATCH_INPUTS = (2000.0, 100.0, 25.27)


# Upper ends far beyond any planet-scale cluster, so every product and quotient of the plan is a
# finite double (a critical_batch_k of 1e308 overflowed B_crit = k·√tokens to infinity).
FABRIC_MAX = {
    "cluster_power_w": 1e15,  # a petawatt
    "datacenters": 1e6,
    "pod_power_w": 1e12,
    "pod_peak_flop_s": 1e24,
    "parameters": 1e18,
    "tokens": 1e20,
    "bits_per_param": 64.0,
    "train_days": 36525.0,  # a century
    "critical_batch_k": 1e6,
    "ring_km": 1e6,  # 25 times round the equator
    "hop_latency_s": 1.0,
    "sync_budget_s": 1e9,
}


def fabric(
    cluster_power_w: float = 10e9,
    datacenters: int = 23,
    pod_power_w: float = 200e3,
    pod_peak_flop_s: float = 360e15,
    parameters: float = 72e12,
    tokens: float = 2000e12,
    bits_per_param: float = 16.0,
    train_days: float = 100.0,
    network_fraction: float = THESIS_NETWORK_FRACTION,
    sync_budget_s: float | None = THESIS_SYNC_BUDGET_S,
    ring_km: float = 4800.0,
    hop_latency_s: float = 28e-6,
    critical_batch_k: float = 25.27,
) -> FabricPlan:
    """Scale-across fabric dimensioning (Camilli 2025 ch. 3); the defaults are its 10 GW, 23-datacenter
    scenario (the thesis rounds its sync budget, 0.05 × 4.9 s, to 250 ms)."""
    positive = {
        "cluster_power_w": cluster_power_w,
        "datacenters": datacenters,
        "pod_power_w": pod_power_w,
        "pod_peak_flop_s": pod_peak_flop_s,
        "parameters": parameters,
        "tokens": tokens,
        "bits_per_param": bits_per_param,
        "train_days": train_days,
        "critical_batch_k": critical_batch_k,
    }
    problems = [
        (k, v, "must be a finite number > 0") for k, v in positive.items() if not _finite(v, 0, False)
    ]
    if not (_finite(network_fraction, 0, False) and network_fraction < 1):
        problems.append(
            ("network_fraction", network_fraction, "must be in (0, 1): the rest of each step computes")
        )
    if _finite(datacenters, 0, False) and datacenters < 2:
        problems.append(
            (
                "datacenters",
                datacenters,
                "must be at least 2: a scale-across fabric joins datacenters over a WAN",
            )
        )
    elif (
        _finite(datacenters, 0, False)
        and _finite(cluster_power_w, 0, False)
        and _finite(pod_power_w, 0, False)
        and cluster_power_w / datacenters < pod_power_w
    ):
        problems.append(
            (
                "pod_power_w",
                pod_power_w,
                "is more than each datacenter's share of the cluster's power "
                f"({cluster_power_w / datacenters / pod_power_w:.2g} pods per datacenter): each needs at least one",
            )
        )
    for k, v in (("ring_km", ring_km), ("hop_latency_s", hop_latency_s)):
        if not _finite(v, 0, True):
            problems.append((k, v, "must be a finite number ≥ 0"))
    if sync_budget_s is not None and not _finite(sync_budget_s, 0, False):
        problems.append(("sync_budget_s", sync_budget_s, "must be a finite number > 0"))
    given = {**positive, "network_fraction": network_fraction, "ring_km": ring_km}
    given |= {"hop_latency_s": hop_latency_s, "sync_budget_s": sync_budget_s}
    problems += [
        (k, given[k], f"must be ≤ {top:g}")
        for k, top in FABRIC_MAX.items()
        if given[k] is not None and k not in {p[0] for p in problems} and given[k] > top
    ]
    if problems:
        raise ScenarioError(problems)
    try:
        with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
            return plan_fabric(
                cluster_power_w,
                datacenters,
                pod_power_w,
                pod_peak_flop_s,
                parameters,
                tokens,
                bits_per_param,
                train_days,
                network_fraction,
                ring_km,
                hop_latency_s,
                critical_batch_k,
                NVL72_TRAYS_PER_RACK,
                NVL72_PORTS_PER_TRAY,
                NVL72_PORT_BITS_S,
                sync_budget_s,
                Assumptions({}).flops_per_param_token,
            )
    except (FloatingPointError, OverflowError, ZeroDivisionError):
        raise ScenarioError(
            [
                (
                    name,
                    given[name],
                    "with the other inputs, puts the plan beyond what a double can hold (a batch so small "
                    "or a run so short that the step count or a rate overflows)",
                )
                for name in ("critical_batch_k", "tokens", "train_days")
            ]
        ) from None


def _finite(x: Any, lo: float, closed: bool) -> bool:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return False
    return x >= lo if closed else x > lo
