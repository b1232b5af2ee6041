"""The threshold analysis: what per-node caps on compute (H100-equivalents) or accelerator memory leave
an actor who trains over the internet with many small, unregistered nodes, and whom they catch.

For every cap: the largest node of each accelerator that stays under it; the cheapest way to reach
each compute target with such nodes (the target search of `analysis.search`, over one space shared by
every cap, so a looser cap can only add configurations: its cheapest cost is never higher); and the
legitimate systems from `catalog/systems.yaml` the cap would catch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.analysis.distributed import block_ranges, map_blocks
from dtsim.analysis.search import (
    DEFAULT_DAYS,
    MIN_RUN_TOKENS,
    MODE_IDS,
    NodeSpec,
    Space,
    _evaluate,
    check_days,
    config_groups,
    configuration_fields,
    node_count_grid,
    not_a_run,
)
from dtsim.analysis.targets import Target, tokens_needed
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.schema.scenario import Scenario

DEFAULT_COMPUTE_CAPS = (16.0, 8.0, 4.0, 2.0, 1.0)
DEFAULT_MEMORY_CAPS = (2048.0, 1280.0, 1024.0, 512.0, 256.0)
DEFAULT_TARGETS = (1e24, 1e25, 1e26)
# A cap limits one node. The largest catalogued system, a GB200 NVL72 rack, is ~180 H100-equivalents
# and 13.8 TB; caps well beyond it (4–5×) are still accepted, larger ones are not per-node caps, and a
# cap of 1e9 made the search visit every count up to 10^6 GPUs (it ran for hours).
MAX_COMPUTE_CAP = 1024.0  # H100-equivalents per node
MAX_MEMORY_CAP_GB = 65536.0
# The search visits every node count up to EVERY_COUNT (every default cap's largest V100 node, 126, is
# under it), then counts COUNT_STEP apart up to the loosest cap's largest, and each cap's largest exactly.
EVERY_COUNT = 128
COUNT_STEP = 2**0.25


@dataclass(frozen=True)
class Cap:
    """A per-node cap: compute in H100-equivalents and/or accelerator memory in GB (None: no cap)."""

    h100_equivalents: float | None = None
    memory_gb: float | None = None

    def __post_init__(self) -> None:
        for name, v, top, unit in (
            ("compute cap", self.h100_equivalents, MAX_COMPUTE_CAP, "H100-equivalents"),
            ("memory cap", self.memory_gb, MAX_MEMORY_CAP_GB, "GB"),
        ):
            if v is not None and not (math.isfinite(v) and 0 < v <= top):
                raise ScenarioError(
                    [(name, v, f"must be a positive number of {unit} per node, at most {top:,.0f}")]
                )

    def label(self) -> str:
        parts = []
        if self.h100_equivalents is not None:
            parts.append(f"≤ {self.h100_equivalents:g} H100-eq")
        if self.memory_gb is not None:
            parts.append(f"≤ {self.memory_gb:,.0f} GB")
        return ", ".join(parts) or "no cap"

    def allows(self, h100_eq: float, memory_gb: float) -> bool:
        tol = 1e-9
        if self.h100_equivalents is not None and h100_eq > self.h100_equivalents * (1 + tol):
            return False
        return not (self.memory_gb is not None and memory_gb > self.memory_gb * (1 + tol))

    def contains(self, other: Cap) -> bool:
        """Every node `other` allows, this cap allows too."""

        def looser(a: float | None, b: float | None) -> bool:
            return a is None or (b is not None and b <= a)

        return looser(self.h100_equivalents, other.h100_equivalents) and looser(
            self.memory_gb, other.memory_gb
        )


@dataclass(frozen=True)
class System:
    id: str
    name: str
    category: str
    count: int
    tflops: float  # dense FP16, whole system
    memory_gb: float
    source: str

    def h100_equivalents(self, asm: Assumptions) -> float:
        return self.tflops / asm.h100_equivalent_tflops


def systems() -> list[System]:
    out = []
    for sid, row in catalog.load_table("systems.yaml").items():
        count = int(row["count"])
        if "gpu" in row:
            gpu = catalog.gpus()[row["gpu"]]
            tflops, mem = gpu.fp16_tflops, gpu.memory_gb
        else:
            tflops, mem = float(row["tflops_per_gpu"]), float(row["memory_gb_per_gpu"])
        out.append(
            System(sid, row["name"], row["category"], count, count * tflops, count * mem, row["source"])
        )
    return out


def largest_count(gpu_id: str, cap: Cap, asm: Assumptions) -> int:
    """The most accelerators of one kind a node may hold under `cap` (0: not even one)."""
    gpu = catalog.gpus()[gpu_id]
    k = 10**6
    if cap.h100_equivalents is not None:
        k = min(k, math.floor(cap.h100_equivalents * asm.h100_equivalent_tflops / gpu.fp16_tflops + 1e-9))
    if cap.memory_gb is not None:
        k = min(k, math.floor(cap.memory_gb / gpu.memory_gb + 1e-9))
    return max(k, 0)


def largest_nodes(cap: Cap, asm: Assumptions, gpus: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The largest node of each accelerator under `cap`, with its compute, memory, model and price."""
    out = []
    for gid in gpus or catalog.gpus():
        gpu = catalog.gpus()[gid]
        k = largest_count(gid, cap, asm)
        out.append(
            {
                "gpu": gid,
                "name": gpu.name,
                "count": k,
                "h100_equivalents": k * gpu.fp16_tflops / asm.h100_equivalent_tflops,
                "pflops_fp16": k * gpu.fp16_tflops / 1000,
                "memory_gb": k * gpu.memory_gb,
                "largest_dense_model_b": k * gpu.memory_gb / asm.bytes_per_param_fp16,
                "price_usd": k * gpu.price_usd,
            }
        )
    return out


def candidate_nodes(
    caps: Sequence[Cap],
    asm: Assumptions,
    gpus: Sequence[str] | None = None,
    precisions: Sequence[str] = ("fp16", "fp8"),
) -> list[NodeSpec]:
    """Nodes the search visits, shared by every cap: for each accelerator (and training precision it
    supports), `node_sizes` up to the most the loosest cap allows. A looser cap allows a superset of
    them (its cheapest cost is never higher), and every cap's largest node is among them."""
    out = []
    for gid in gpus or catalog.gpus():
        largest = {largest_count(gid, c, asm) for c in caps}
        gpu = catalog.gpus()[gid]
        for prec in precisions:
            if gpu.peak_tflops(prec) is None:
                continue
            for k in node_sizes(largest):
                out.append(NodeSpec.build(gid, k, prec))
    return out


def node_sizes(largest: set[int]) -> list[int]:
    """Accelerator counts per node the search visits: every count from one to EVERY_COUNT, then counts
    COUNT_STEP (19 %) apart, and each cap's `largest` count exactly, up to the largest of them."""
    top = max(largest, default=0)
    sizes = set(range(1, min(top, EVERY_COUNT) + 1)) | {k for k in largest if k > 0}
    k = float(EVERY_COUNT)
    while k * COUNT_STEP < top:
        k *= COUNT_STEP
        sizes.add(round(k))
    return sorted(sizes)


def governance_space(nodes: list[NodeSpec], max_nodes: int = 100_000) -> Space:
    """The default governance space (smaller than `dtsim target`'s, since it spans every cap's nodes)."""
    return Space(
        nodes=nodes,
        node_counts=node_count_grid(max_nodes),
        fractions=(1.0, 0.5, 0.25),
        pipeline_multiples=(2, 4, 8),
        inner_steps=("auto", 16),
        compressions=(16, 150, 500),
        group_sizes=(0, 8),
        activation_compressions=(4, 10),
    )


@dataclass
class CapResult:
    cap: Cap
    largest: list[dict[str, Any]]
    cheapest: dict[float, dict[str, Any] | None]  # target FLOP → winning configuration
    caught: list[System]
    # targets with no answer under the cap that its nodes reach only in less than one outer step
    not_a_run: set[float] = field(default_factory=set)


@dataclass
class GovernanceResult:
    caps: list[CapResult]
    targets: tuple[float, ...]
    metric: str
    days_limit: float
    configurations: int
    rows: int
    seconds: float
    space: Space
    systems: list[System] = field(default_factory=list)


def analyse(
    base: Scenario,
    caps: Sequence[Cap],
    targets: Sequence[float] = DEFAULT_TARGETS,
    metric: str = "quality",
    days_limit: float = DEFAULT_DAYS,
    space: Space | None = None,
    gpus: Sequence[str] | None = None,
    precisions: Sequence[str] = ("fp16", "fp8"),
    progress: Callable[[int, int], None] | None = None,
    max_nodes: int = 100_000,
    scheduler: str | None = None,
    workers: int | None = None,
) -> GovernanceResult:
    """The threshold analysis for `caps` (see the module docstring)."""
    if not caps:
        raise ScenarioError([("caps", None, "give at least one compute or memory cap")])
    if metric not in ("local", "quality"):
        raise ScenarioError([("--metric", metric, "must be local or quality")])
    if not targets:
        raise ScenarioError([("--targets", None, "give at least one target")])
    for t in targets:
        if not (math.isfinite(t) and t > 0):
            raise ScenarioError([("--targets", t, "must be positive FLOP counts")])
    check_days(days_limit)
    for g in gpus or ():
        if g not in catalog.gpus():
            raise ScenarioError([("--gpu", g, f"unknown accelerator; known: {', '.join(catalog.gpus())}")])
    started = time.perf_counter()
    asm = Assumptions(base.assumptions)
    nodes = candidate_nodes(caps, asm, gpus, precisions)
    if not nodes:
        raise ScenarioError([("caps", [c.label() for c in caps], "no accelerator fits under any cap")])
    if space is None:
        space = governance_space(nodes, max_nodes)
    else:
        space.nodes = nodes
    cfg = space.configs(asm)
    legal = np.array([[c.allows(nd.h100_equivalents, nd.vram_gb) for nd in nodes] for c in caps])
    groups = config_groups(cfg, lambda i: bool(legal[:, i].any()))
    blocks = block_ranges(len(groups), scheduler, workers)
    best: dict[tuple[int, int], tuple[tuple, dict]] = {}
    rows = 0
    n_cfg = len(cfg["node"])
    too_soon: set[tuple[int, int]] = set()
    for (_, stop), (part, part_rows, part_soon) in map_blocks(
        governance_block,
        blocks,
        scheduler=scheduler,
        workers=workers,
        kwargs={
            "groups": groups,
            "base": base,
            "space": space,
            "cfg": cfg,
            "legal": legal,
            "targets": tuple(float(x) for x in targets),
            "metric": metric,
            "days_limit": days_limit,
        },
    ):
        rows += part_rows
        too_soon |= part_soon
        for k, v in part.items():  # a later block's record replaces one only when strictly better
            if k not in best or v[0] < best[k][0]:
                best[k] = v
        if progress is not None:
            progress(groups[stop - 1][1], n_cfg)
    small = [
        x
        for ti, x in enumerate(targets)
        if not any((c, ti) in best for c in range(len(caps)))
        and any((c, ti) in too_soon for c in range(len(caps)))
    ]
    if small:
        raise ScenarioError(
            [
                (
                    "--targets",
                    f"{x:g}",
                    f"every configuration under every cap that reaches it does so in less than one outer step "
                    f"or on fewer than {MIN_RUN_TOKENS:,.0f} tokens, which is not a training run: give a larger target",
                )
                for x in small
            ]
        )
    all_systems = systems()
    results = []
    for c, cap in enumerate(caps):
        cheapest = {}
        for ti, x in enumerate(targets):
            got = best.get((c, ti))
            cheapest[x] = _describe(got[1], space, cfg) if got else None
        caught = [s for s in all_systems if not cap.allows(s.h100_equivalents(asm), s.memory_gb)]
        soon = {x for ti, x in enumerate(targets) if (c, ti) in too_soon and (c, ti) not in best}
        results.append(CapResult(cap, largest_nodes(cap, asm, gpus), cheapest, caught, soon))
    return GovernanceResult(
        caps=results,
        targets=tuple(targets),
        metric=metric,
        days_limit=days_limit,
        configurations=len(cfg["node"]),
        rows=rows,
        seconds=time.perf_counter() - started,
        space=space,
        systems=all_systems,
    )


def governance_block(
    start: int,
    stop: int,
    groups: list[tuple[int, int]],
    base: Scenario,
    space: Space,
    cfg: dict[str, np.ndarray],
    legal: np.ndarray,
    targets: tuple[float, ...],
    metric: str,
    days_limit: float,
) -> tuple[dict[tuple[int, int], tuple[tuple, dict]], int]:
    """Groups start..stop−1 of configurations (one node, one H) at every grid node count: by (cap,
    target), the cheapest (then fastest) record that reaches the target within the limit among them,
    and the rows evaluated. Runs on whichever process gets it."""
    asm = Assumptions(base.assumptions)
    n_grid = np.asarray(space.node_counts, dtype=float)
    tgts = [Target(metric, x) for x in targets]
    best: dict[tuple[int, int], tuple[tuple, dict]] = {}
    too_soon: set[tuple[int, int]] = set()  # (cap, target) reached by some row in < 1 outer step
    rows = 0
    for b0, b1 in groups[start:stop]:
        node_i = int(cfg["node"][b0])
        ci = np.repeat(np.arange(b0, b1), len(n_grid))
        n = np.tile(n_grid, b1 - b0)
        keep = (cfg["group"][ci] == 0) | (n >= 2 * cfg["group"][ci])
        ci, n = ci[keep], n[keep]
        if not ci.size:
            continue
        rows += ci.size
        ev = _evaluate(base, space, cfg, ci, n, None, metric, days_limit, asm, False)
        ok = ev["ok"]
        rate = np.where(ok, ev["limit_tokens"] / days_limit, 0.0)
        for ti, tgt in enumerate(tgts):
            need = tokens_needed(tgt, ev["params"], ev["fpt"], ev["eta"], ev["mult"], asm)
            with np.errstate(divide="ignore", invalid="ignore"):
                days = np.where(ok & (rate > 0), need / np.where(rate > 0, rate, 1.0), np.inf)
            short = ok & (days <= days_limit) & not_a_run(days, ev["outer_s"], need)
            reaches = ok & (days <= days_limit) & ~short
            if short.any():  # the caps whose nodes reach it only too soon to be a run
                for c in np.flatnonzero(legal[:, node_i]):
                    too_soon.add((int(c), ti))
            idx = np.flatnonzero(reaches)
            if not idx.size:
                continue
            j = idx[np.lexsort((days[idx], ev["cost"][idx]))[0]]
            k = (float(ev["cost"][j]), float(days[j]))
            rec = {
                "config": int(ci[j]),
                "num_nodes": int(n[j]),
                "mode": MODE_IDS[int(ev["mode"][j])],
                "cost_usd": float(ev["cost"][j]),
                "days": float(days[j]),
                "tokens_t": float(need[j]) / 1e12,
                "efficiency": float(ev["eta"][j]),
                "h_used": float(ev["h_used"][j]),
            }
            for c in range(len(legal)):
                if legal[c, node_i] and ((c, ti) not in best or k < best[(c, ti)][0]):
                    best[(c, ti)] = (k, rec)
    return best, rows, too_soon


def _describe(rec: dict[str, Any], space: Space, cfg) -> dict[str, Any]:
    c = rec["config"]
    node = space.nodes[int(cfg["node"][c])]
    return {
        **rec,
        "node": node.id,
        "node_name": node.name,
        "gpu": node.gpu,
        "gpus_per_node": node.count,
        "precision": node.precision,
        "h100_equivalents_per_node": node.h100_equivalents,
        "memory_gb_per_node": node.vram_gb,
        "parameters_b": float(cfg["params_b"][c]),
        "inner_steps": str(cfg["h"][c]),
        "compression": float(cfg["comp"][c]),
        "nodes_per_group": int(cfg["group"][c]) or None,
        "activation_compression": float(cfg["act"][c]),
        "total_gpus": rec["num_nodes"] * node.count,
    }


def scenario_fields(res: GovernanceResult, rec: dict[str, Any]) -> dict[str, Any]:
    """A cap's cheapest configuration (a `cheapest` record of the result) as scenario fields."""
    node = next(n for n in res.space.nodes if n.id == rec["node"])
    return configuration_fields(
        node,
        rec["num_nodes"],
        rec["parameters_b"],
        rec["inner_steps"],
        rec["compression"],
        rec["nodes_per_group"] or 0,
        rec["activation_compression"],
        rec.get("mode"),
    )


def answers_held(
    res: GovernanceResult,
    base: Scenario,
    dists: Any,
    n: int,
    days_limit: float,
    seed: int | None = None,
    levels: Sequence[float] = (0.1, 0.5, 0.9),
    scheduler: str | None = None,
    workers: int | None = None,
) -> dict[tuple[int, float], dict[str, Any]]:
    """How sure each cap's cheapest answer is (`governance --uncertainty`): by (cap index, target), the
    chance the configuration trains the tokens the target needs within the time limit, with its standard
    error, and its days at `levels`, over n draws (analysis/uncertainty.py: answer_monte_carlo; one seed
    for every answer, drawn once when not given)."""
    import secrets

    from dtsim.analysis.uncertainty import answer_monte_carlo, check_seed

    check_seed(seed)
    if seed is None:
        seed = secrets.randbits(63)
    out = {}
    for ci, cr in enumerate(res.caps):
        for x, rec in cr.cheapest.items():
            if rec is None:
                continue
            mc = answer_monte_carlo(
                base,
                scenario_fields(res, rec),
                rec["tokens_t"],
                dists,
                n,
                days_limit,
                seed,
                levels,
                scheduler,
                workers,
            )
            p = mc.probabilities[0]
            days = mc.outputs["wall_clock_days"]
            out[(ci, x)] = {
                "p_within_limit": p["p"],
                "se": p["se"],
                "days": {k: days[k] for k in days if k.startswith("p")},
                "samples": mc.samples,
                "seed": mc.seed,
                "inputs": list(mc.inputs),
                "warnings": mc.warnings,
            }
    return out


__all__ = [
    "Cap",
    "GovernanceResult",
    "System",
    "analyse",
    "answers_held",
    "candidate_nodes",
    "largest_count",
    "largest_nodes",
    "systems",
]
