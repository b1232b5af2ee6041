"""Node groups resolved against the scenario: each group's hardware as the scalar path resolves a node or
GPU (`make_scenario` of the scenario's hardware with the group's on top), its links, and its region
checked against the regions table and `region_rtt_ms`. Errors name `node_groups[i].field`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dtsim import catalog
from dtsim.errors import ScenarioError

HARDWARE = ("node", "gpu", "gpus_per_node", "pflops_per_node", "vram_per_node_gb", "precision")


@dataclass(frozen=True)
class ResolvedGroup:
    count: int
    gpu: str | None
    gpus_per_node: float | None
    pflops_per_node: float
    vram_per_node_gb: float
    mfu: float | None  # None: the scenario's (planned per group when the scenario's is 'auto')
    own_hardware: bool  # the group names hardware of its own
    bandwidth_up_mbps: float | None  # None: the scenario's (each batch row's)
    bandwidth_down_mbps: float | None
    latency_ms: float | None  # None: from the regions, else the scenario's
    region: str | None
    nvlink_domain: int | None = None  # its node preset's own (a GB200 NVL72 rack's 72), for mfu: auto


def _light_in_fiber_ms(a: str, b: str, fiber_group_index: float) -> float | None:
    """The least RTT between two regions of the table: 2·d / (c / n_fiber) over their great-circle
    distance d (physics.wan.fiber_rtt_s: no route inflation; Bozkurt et al. 2018); None when
    either is a region of the user's own (no coordinates)."""
    from dtsim.physics import wan

    regions = catalog.regions()
    if a not in regions or b not in regions:
        return None
    d = wan.great_circle_m(regions[a].lat, regions[a].lon, regions[b].lat, regions[b].lon)
    return float(wan.fiber_rtt_s(d, fiber_group_index)) * 1e3


def node_nvlink_domain(s: Any) -> int | None:
    """The node preset's own NVLink domain (nodes.yaml `nvlink_domain`, a GB200 NVL72 rack's 72) while
    the scenario (or a node group's hardware) keeps that preset's GPU and count; None otherwise."""
    node = catalog.nodes().get(s.node) if isinstance(s.node, str) else None
    if node is None or node.nvlink_domain is None or (s.gpu, s.gpus_per_node) != (node.gpu, node.gpu_count):
        return None
    return node.nvlink_domain


def resolve_groups(s: Any, asm: Any) -> tuple[ResolvedGroup, ...] | None:
    from dtsim.schema.scenario import make_scenario

    rtt = s.region_rtt_ms or {}
    if s.node_groups is None:
        if rtt:
            raise ScenarioError([("region_rtt_ms", rtt, "applies to node_groups' regions: give node_groups")])
        return None
    present = sorted({g.region for g in s.node_groups if g.region is not None})
    seen: dict[frozenset, float] = {}
    for a, row in rtt.items():
        for b, ms in row.items():
            where = f"region_rtt_ms.{a}.{b}"
            if a == b:
                raise ScenarioError(
                    [(where, ms, "a region's own RTT is intra_region_rtt_ms (an assumption)")]
                )
            for name in (a, b):
                if name not in present:
                    groups = ", ".join(present) or "none"
                    raise ScenarioError(
                        [(where, ms, f"no node group is in region {name}; the groups' regions: {groups}")]
                    )
            floor = _light_in_fiber_ms(a, b, asm.fiber_group_index)
            if floor is not None and ms < floor:
                raise ScenarioError(
                    [
                        (
                            where,
                            ms,
                            f"is faster than light in fiber: a round trip between {a} and {b} along the great "
                            f"circle takes {floor:,.1f} ms at the fiber's group index (fiber_group_index), "
                            "before any route inflation",
                        )
                    ]
                )
            pair = frozenset((a, b))
            if pair in seen and seen[pair] != ms:
                raise ScenarioError(
                    [(where, ms, f"contradicts region_rtt_ms.{b}.{a} = {seen[pair]:g}; give the pair once")]
                )
            seen[pair] = ms
    given = s.given_fields()
    base = {k: given[k] for k in HARDWARE if k in given}
    measured = {frozenset((a, b)) for a, row in rtt.items() for b in row}
    regions = catalog.regions()
    named = [g.region for g in s.node_groups if g.region is not None]
    own_regions = {name for pair in measured for name in pair}
    for i, g in enumerate(s.node_groups):
        if g.region is not None and g.region not in regions and g.region not in own_regions:
            # a region of the user's own exists only through its RTTs: a misspelt one is not taken
            # for a region of its own (with one region it would silently get the intra-region RTT)
            others = sorted(set(named) - {g.region})
            example = (
                f"region_rtt_ms: {{{g.region}: {{{others[0]}: MS}}}}"
                if others
                else "region_rtt_ms and a second region"
            )
            raise ScenarioError(
                [
                    (
                        f"node_groups[{i}].region",
                        g.region,
                        f"unknown region; known: {', '.join(regions)} (a region of your own needs its RTT "
                        f"to each other region in {example})",
                    )
                ]
            )
    for i, g in enumerate(s.node_groups):
        # a group's own RTT between catalogued regions is held to light in fiber, as region_rtt_ms is (a
        # trial's case: 1 ms between us-east and australia ran, where region_rtt_ms refuses under 153.5)
        if g.latency_ms is None or g.region is None:
            continue
        floors = [(f, o) for o in named if (f := _light_in_fiber_ms(g.region, o, asm.fiber_group_index))]
        if floors and g.latency_ms < max(floors)[0]:
            floor, other = max(floors)
            raise ScenarioError(
                [
                    (
                        f"node_groups[{i}].latency_ms",
                        g.latency_ms,
                        f"is faster than light in fiber: the group in {g.region} exchanges with a group in "
                        f"{other}, a round trip that takes {floor:,.1f} ms along the great circle at the "
                        "fiber's group index (fiber_group_index), before any route inflation",
                    )
                ]
            )
    out = []
    for i, g in enumerate(s.node_groups):
        where = f"node_groups[{i}]"
        own = g.hardware()
        if own:
            try:
                hw = make_scenario(catalog.merge_layers(base, own))
            except ScenarioError as exc:
                raise ScenarioError([(f"{where}.{f}", v, m) for f, v, m in exc.problems]) from None
            if hw.precision != s.precision:
                raise ScenarioError(
                    [
                        (
                            f"{where}.node",
                            g.node,
                            f"trains at {hw.precision.value}; every group trains at the scenario's precision ({s.precision.value})",
                        )
                    ]
                )
        else:
            hw = s
        if g.region is not None:
            for other in named:
                if other == g.region:
                    continue
                pair = frozenset((g.region, other))
                if pair not in measured and not (g.region in regions and other in regions):
                    unknown = g.region if g.region not in regions else other
                    raise ScenarioError(
                        [
                            (
                                f"{where}.region",
                                g.region,
                                f"no RTT to {other}: {unknown} is not in the regions table "
                                f"({', '.join(regions)}); give it as region_rtt_ms: "
                                f"{{{g.region}: {{{other}: MS}}}}",
                            )
                        ]
                    )
        out.append(
            ResolvedGroup(
                count=g.count,
                gpu=hw.gpu,
                gpus_per_node=None if hw.gpus_per_node is None else float(hw.gpus_per_node),
                pflops_per_node=float(hw.pflops_per_node),
                vram_per_node_gb=float(hw.vram_per_node_gb),
                mfu=g.mfu,
                own_hardware=bool(own),
                bandwidth_up_mbps=g.bandwidth_up_mbps,
                bandwidth_down_mbps=g.bandwidth_down_mbps,
                latency_ms=g.latency_ms,
                region=g.region,
                nvlink_domain=node_nvlink_domain(hw),
            )
        )
    return tuple(out)
