"""Target searches: the cheapest or fastest configuration that reaches a target within a time limit.

A *configuration* is a node (preset or capped build), a node count, a model size, H, a compression
ratio, a hierarchy (flat or regional groups of a given size) and, for models larger than one node, an
activation-compression ratio. Every configuration is simulated once by the batch path at a probe
token count; wall-clock time is linear in tokens (`tests/test_search.py` checks it), so each row gives
its token rate r (tokens/day), efficiency η, replica loss multiplier m and cost, and the time a run
needs to reach a target follows in closed form:

- local-equivalent compute X = C·η (MIRI simulator docs §6): D = X / (η·F), F the model FLOP per token;
- quality-adjusted compute X = C·η·χ = η·min(C, C*(L(P, D)·m)) (reference README; χ as in
  `physics.quality`): both C ≥ X/η and C*(L·m) ≥ X/η, the latter
  L(P, D)·m ≤ L_opt(N_X), N_X = √(X / (η·6·k)), i.e. D ≥ (B / (L_opt/m − E − A·P^−a))^(1/b);
- a model size and token count: D is given.

The run then takes t = D / r days. The search is exhaustive over the stated grid (`Space.size`);
for the cheapest objective the winner's node count (and that of every configuration whose grid
bracket could hold a cheaper run) is refined to the exact smallest integer, so the cost is optimal
over all integer node counts wherever reaching the target is monotone in N inside a grid step.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.analysis.distributed import block_ranges, map_blocks
from dtsim.analysis.targets import Target, metric_at, tokens_needed
from dtsim.assumptions import Assumptions, defaults
from dtsim.errors import ScenarioError
from dtsim.models.decentralized import decision
from dtsim.models.decentralized.engine import simulate_batch
from dtsim.models.decentralized.strategies import BY_ID
from dtsim.physics.memory import PRECISIONS, bytes_per_param
from dtsim.schema.fields import BOUNDS
from dtsim.schema.scenario import Scenario

PROBE_TOKENS_T = 1.0
# the fewest tokens a run may train (the scenario's tokens_t floor, in tokens): a configuration that
# reaches a target on fewer, or in less than one outer step, is not a run and is not an answer
MIN_RUN_TOKENS = BOUNDS["tokens_t"]["ge"] * 1e12
DEFAULT_DAYS = defaults().governance_run_days  # the original governance model's 1.5-year run


def check_days(days_limit: Any) -> None:
    """An error for a search's time limit outside governance_run_days' range in the assumptions table
    (below it a run is a few steps, above it longer than any plan)."""
    from dtsim.catalog import assumption_rows

    lo, hi = (float(x) for x in assumption_rows()["governance_run_days"]["range"])
    if isinstance(days_limit, bool) or not (isinstance(days_limit, int | float) and lo <= days_limit <= hi):
        raise ScenarioError([("--days", days_limit, f"must be a number of days from {lo:g} to {hi:g}")])


MODE_IDS = decision.MODE_IDS
INFEASIBLE = MODE_IDS.index("infeasible")
MODES = tuple(m for m in MODE_IDS if m != "infeasible")
MODE_LABEL = dict(zip(decision.MODE_IDS, decision.MODE_LABELS, strict=True))


# --- the space ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSpec:
    """One node: `count` accelerators of type `gpu`; peak PFLOP/s at its precision, memory, price."""

    id: str
    name: str
    gpu: str
    count: int
    pflops: float
    vram_gb: float
    precision: str
    price_usd: float
    h100_equivalents: float

    @classmethod
    def from_preset(cls, node_id: str, default_precision: str = "fp16") -> NodeSpec:
        node = catalog.nodes().get(node_id.strip().lower())
        if node is None:
            raise ScenarioError(
                [("--node", node_id, f"unknown node preset; known: {', '.join(catalog.nodes())}")]
            )
        gpu = catalog.gpus()[node.gpu]
        return cls(
            id=node.id,
            name=node.name,
            gpu=node.gpu,
            count=node.gpu_count,
            pflops=node.pflops,
            vram_gb=node.vram_gb,
            precision=node.precision or default_precision,
            price_usd=node.gpu_count * gpu.price_usd,
            h100_equivalents=node.h100_equivalents
            if node.h100_equivalents is not None
            else h100_equivalents(node.gpu, node.gpu_count),
        )

    @classmethod
    def build(cls, gpu_id: str, count: int, precision: str = "fp16") -> NodeSpec:
        """`count` accelerators of a catalog GPU, at their dense peak for `precision`."""
        gpu = catalog.gpus()[gpu_id]
        peak = gpu.peak_tflops(precision)
        if peak is None:
            raise ScenarioError([("precision", precision, f"gpu {gpu_id} has no datapath for it")])
        return cls(
            id=f"{count}x-{gpu_id}-{precision}",
            name=f"{count}× {gpu.name} ({precision.upper()})",
            gpu=gpu_id,
            count=count,
            pflops=count * peak / 1000.0,
            vram_gb=count * gpu.memory_gb,
            precision=precision,
            price_usd=count * gpu.price_usd,
            h100_equivalents=h100_equivalents(gpu_id, count),
        )

    @classmethod
    def from_scenario(cls, s: Scenario) -> NodeSpec:
        """The node a scenario runs on, with the figures the scenario gives it (a preset's, or its own
        gpu, gpus_per_node, pflops_per_node and vram_per_node_gb), as `simulate` reads them."""
        if s.gpu is None:
            raise ScenarioError(
                [
                    (
                        "gpu",
                        None,
                        "the base scenario names no gpu, so its node has no price; set gpu or give --node",
                    )
                ]
            )
        gpu = catalog.gpus()[s.gpu]
        precision = s.precision.value
        peak = gpu.peak_tflops(precision)
        catalog_pf = None if peak is None else s.gpus_per_node * peak / 1000.0
        # the base's own figures, not a node preset: said as such (an id like 16x-gh200-fp16 read as one
        # that --node would take), and a peak that is not the catalog's dense one for its precision named
        given = f"{s.pflops_per_node:g} PFLOP/s"
        if catalog_pf is not None and abs(s.pflops_per_node / catalog_pf - 1) > 0.01:
            given += (
                f" as the base gives it; the catalog's dense {precision.upper()} peak is {catalog_pf:.3g}"
            )
        return cls(
            id=s.node or f"the base's {s.gpus_per_node}× {s.gpu} ({s.pflops_per_node:g} PFLOP/s)",
            name=f"{s.gpus_per_node}× {gpu.name} ({precision.upper()}, {given})",
            gpu=s.gpu,
            count=s.gpus_per_node,
            pflops=s.pflops_per_node,
            vram_gb=s.vram_per_node_gb,
            precision=precision,
            price_usd=s.gpus_per_node * gpu.price_usd,
            h100_equivalents=h100_equivalents(s.gpu, s.gpus_per_node),
        )


def nodes_text(n: int) -> str:
    """`n` nodes in words: "1 node", "2,048 nodes"."""
    return f"{n:,} node" + ("" if n == 1 else "s")


def h100_equivalents(gpu_id: str, count: int, asm: Assumptions | None = None) -> float:
    """Dense FP16 compute in units of one H100 (the threshold unit of the original governance model)."""
    asm = asm or Assumptions()
    return count * catalog.gpus()[gpu_id].fp16_tflops / asm.h100_equivalent_tflops


def check_max_nodes(max_nodes: Any) -> None:
    """An error for a search's --max-nodes outside the scenario's num_nodes range (target, --solve
    num_nodes and governance alike: governance's grid had named a row past it, num_nodes[309])."""
    from dtsim.schema.fields import BOUNDS

    hi = BOUNDS["num_nodes"]["le"]
    if isinstance(max_nodes, bool) or not (isinstance(max_nodes, int | np.integer) and 1 <= max_nodes <= hi):
        raise ScenarioError(
            [("--max-nodes", max_nodes, f"must be a whole number of nodes from 1 to {hi:,.0f}")]
        )


def node_count_grid(max_nodes: int = 100_000, dense_to: int = 64, step: float = 1.05) -> np.ndarray:
    """Every integer to `dense_to`, then geometric steps of `step` up to `max_nodes` (inclusive)."""
    check_max_nodes(max_nodes)
    dense = np.arange(1, min(dense_to, max_nodes) + 1, dtype=float)
    if max_nodes <= dense_to:
        return dense
    k = math.ceil(math.log(max_nodes / dense_to) / math.log(step))
    geo = np.unique(np.round(dense_to * step ** np.arange(1, k + 1)))
    geo = geo[(geo > dense_to) & (geo < max_nodes)]
    return np.concatenate([dense, geo, [float(max_nodes)]])


# the option of `dtsim target`/`governance` that sets each list of the space (named in errors)
OPTION_OF = {
    "fractions": "--fractions",
    "pipeline_multiples": "--pipeline-multiples",
    "compressions": "--compression",
    "activation_compressions": "--activation-compression",
}


@dataclass
class Space:
    """The configurations a search visits (every combination; irrelevant ones are pruned)."""

    nodes: list[NodeSpec]
    node_counts: np.ndarray = field(default_factory=node_count_grid)
    fractions: Sequence[float] = (1.0, 0.75, 0.5, 0.25)  # of the largest dense model one node holds
    pipeline_multiples: Sequence[float] = (2, 4, 8, 16, 32)  # models this many nodes deep (modes B/C)
    inner_steps: Sequence[Any] = ("auto", 4, 16, 64)
    compressions: Sequence[float] = (1, 4, 16, 100, 150, 500)
    group_sizes: Sequence[int] = (0, 4, 8, 16, 32)  # 0: flat; else hierarchical with groups this size
    activation_compressions: Sequence[float] = (1, 2, 4, 10)
    params_b: float | None = None  # a fixed model size (model-and-tokens targets)

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ScenarioError([("--node", None, "the space holds no node")])
        for name, option in OPTION_OF.items():
            values = list(getattr(self, name))
            if any(not (isinstance(v, int | float) and math.isfinite(v) and v > 0) for v in values):
                raise ScenarioError([(option, values, "must be positive finite numbers")])
        if not list(self.compressions) or not list(self.inner_steps) or not list(self.group_sizes):
            raise ScenarioError(
                [("space", None, "compressions, inner steps and group sizes need ≥ 1 value each")]
            )

    def configs(self, asm: Assumptions) -> dict[str, np.ndarray]:
        """One row per configuration (everything but the node count)."""
        rows: dict[str, list] = {k: [] for k in ("node", "params_b", "pp", "act", "h", "comp", "group")}
        for i, node in enumerate(self.nodes):
            bpp = float(bytes_per_param(PRECISIONS.index(node.precision), asm))
            max_fit = node.vram_gb / bpp
            sizes: list[tuple[float, bool]] = []
            if self.params_b is not None:
                sizes.append((self.params_b, self.params_b * bpp > node.vram_gb))
            else:
                sizes += [(f * max_fit, False) for f in self.fractions if f <= 1]
                # a hair under m whole nodes, so the stage count is exactly m
                sizes += [(m * max_fit * (1 - 1e-9), True) for m in self.pipeline_multiples if m > 1]
            lo, hi = BOUNDS["parameters_b"]["ge"], BOUNDS["parameters_b"]["le"]
            for h in self.inner_steps:
                for p, pp in sizes:
                    if not lo <= p <= hi:
                        continue
                    for act in self.activation_compressions if pp else (1.0,):
                        for c in self.compressions:
                            for g in self.group_sizes:
                                rows["node"].append(i)
                                rows["params_b"].append(p)
                                rows["pp"].append(pp)
                                rows["act"].append(act)
                                rows["h"].append(str(h))
                                rows["comp"].append(c)
                                rows["group"].append(g)
        return {k: np.asarray(v) for k, v in rows.items()}

    def size(self, asm: Assumptions) -> tuple[int, int]:
        """(configurations, rows evaluated): rows are configuration × node count, less the pruned ones."""
        cfg = self.configs(asm)
        n = self.node_counts
        valid = (cfg["group"][:, None] == 0) | (n[None, :] >= 2 * cfg["group"][:, None])
        return len(cfg["node"]), int(valid.sum())


# --- the evaluation --------------------------------------------------------------------------------------


@dataclass
class Row:
    """One evaluated configuration at one node count."""

    node: NodeSpec
    num_nodes: int
    params_b: float
    inner_steps: str
    compression: float
    group: int
    activation_compression: float
    mode: str
    cost_usd: float
    days: float  # to reach the target (inf: never)
    reach: float  # the metric reached within the time limit
    tokens_t: float  # tokens the run needs (or processes in the limit when it never reaches)
    efficiency: float
    h_used: float

    def scenario_fields(self) -> dict[str, Any]:
        return configuration_fields(
            self.node,
            self.num_nodes,
            self.params_b,
            self.inner_steps,
            self.compression,
            self.group,
            self.activation_compression,
            self.mode,
        )


def configuration_fields(
    node: NodeSpec,
    num_nodes: int,
    params_b: float,
    inner_steps: str,
    compression: float,
    group: int,
    activation_compression: float,
    mode: str | None = None,
) -> dict[str, Any]:
    """A searched configuration (a target's winner, a governance cap's cheapest run) as scenario fields,
    without those its `mode` does not read: inner steps without DiLoCo, regional steps without a
    regional tier (the search gives every row some, and `simulate` would name them: FIELDS_IGNORED)."""
    f: dict[str, Any] = {
        "gpu": node.gpu,
        "gpus_per_node": node.count,
        "pflops_per_node": node.pflops,
        "vram_per_node_gb": node.vram_gb,
        "precision": node.precision,
        "num_nodes": num_nodes,
        "parameters_b": params_b,
        "inner_steps": inner_steps if inner_steps == "auto" else int(float(inner_steps)),
        "compression": compression,
        "activation_compression": activation_compression,
        "hierarchical": group > 0,
    }
    if group > 0:  # regional_steps as the search evaluates every configuration (_evaluate)
        f.update(nodes_per_group=group, regional_steps="auto")
    # what the answer's mode does not read (its strategy's traits), simulate would name: FIELDS_IGNORED
    strategy = BY_ID.get(mode) if mode is not None else None
    if strategy is not None and not strategy.diloco:
        del f["inner_steps"]
    if strategy is not None and not strategy.regional_tier:
        f.pop("regional_steps", None)
    return f


@dataclass
class SearchResult:
    target: Target | None
    objective: str
    days_limit: float
    budget: float | None
    winner: Row | None
    by_mode: dict[str, Row | None]
    closest: dict[str, Row | None]
    configurations: int
    rows: int
    refined_rows: int
    seconds: float
    space: Space
    modes_seen: set[str]
    explanation: dict[str, str] = field(default_factory=dict)
    not_a_run: int = 0  # rows evaluated that reach the target in less than one outer step: left out
    short_modes: set[str] = field(default_factory=set)  # the modes of those rows


def _pick(mask: np.ndarray, *keys: np.ndarray) -> int | None:
    """Index of the lexicographically smallest (keys...) among `mask` rows, or None: the first row of
    `np.lexsort` order (NaN after every number and equal to NaN, then the lowest index), found by
    narrowing to the rows at each key's minimum in turn instead of sorting (tests/test_target_solve.py)."""
    idx = np.flatnonzero(mask)
    for k in keys:
        if idx.size <= 1:
            break
        v = k[idx]
        nan = np.isnan(v)
        if nan.all():
            continue  # all tie on this key
        idx = idx[v == (v[~nan].min() if nan.any() else v.min())]
    return int(idx[0]) if idx.size else None


def search(
    base: Scenario,
    space: Space,
    target: Target | None,
    objective: str = "cost",
    days_limit: float | None = DEFAULT_DAYS,
    budget: float | None = None,
    reach_metric: str = "quality",
    progress: Callable[[int, int], None] | None = None,
    chunk_rows: int = 1 << 17,
    refine: bool = True,
    node_filter: Callable[[NodeSpec], bool] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
) -> SearchResult:
    """Search `space` on top of `base` (network, MFU, stragglers, ...), here or on Dask (`scheduler`,
    `workers`: analysis/distributed.py; the same result either way).

    objective "cost": cheapest capital cost reaching `target` within `days_limit` (and `budget`);
    "nodes": fewest nodes (then fastest, then cheapest), refined to the exact integer as "cost" is;
    "time": fastest, where `days_limit` None means no time limit; "reach": no target — the most
    `reach_metric` compute reachable within `days_limit` for at most `budget`.
    """
    if objective not in ("cost", "nodes", "time", "reach"):
        raise ScenarioError([("--objective", objective, "must be cost, time or reach")])
    if objective == "reach" and (budget is None or reach_metric not in ("local", "quality")):
        raise ScenarioError([("--budget", budget, "the reach query needs a budget in USD and a metric")])
    if objective != "reach" and target is None:
        raise ScenarioError(
            [("target", None, "give a target: --local-flop, --quality-flop or --params-b with --tokens-t")]
        )
    if days_limit is None and objective == "time":
        days_limit = math.inf  # the fastest run, however long
    else:
        check_days(days_limit)
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise ScenarioError([("--budget", budget, "must be a positive amount in USD")])
    if base.moe:
        raise ScenarioError([("moe", True, "target searches cover dense models; set moe=false")])
    started = time.perf_counter()
    asm = Assumptions(base.assumptions)
    cfg = space.configs(asm)
    n_grid = np.asarray(space.node_counts, dtype=float)
    n_cfg = len(cfg["node"])
    kind = target.kind if target is not None else reach_metric

    # rows to evaluate: configuration × N, pruned: a hierarchy needs two whole groups. Groups of
    # configurations share a node and an H, so those enter the batch as scalars; blocks of groups run
    # here or on Dask, each into its own state, merged in block order (the same winner either way).
    groups = config_groups(cfg, lambda i: node_filter is None or node_filter(space.nodes[i]))
    blocks = block_ranges(len(groups), scheduler, workers)
    state = _State(n_cfg, days_limit)
    total_rows = 0
    for (_, stop), (part, rows) in map_blocks(
        search_block,
        blocks,
        scheduler=scheduler,
        workers=workers,
        kwargs={
            "groups": groups,
            "base": base,
            "space": space,
            "cfg": cfg,
            "target": target,
            "kind": kind,
            "days_limit": days_limit,
            "objective": objective,
            "budget": budget,
            "chunk_rows": chunk_rows,
        },
    ):
        state.merge(part)
        total_rows += rows
        if progress is not None:
            progress(groups[stop - 1][1], n_cfg)

    refined = 0
    if refine and objective in ("cost", "nodes") and state.best is not None:
        refined = _refine(base, space, cfg, n_grid, state, target, kind, days_limit, asm, budget, objective)

    result = SearchResult(
        target=target,
        objective=objective,
        days_limit=days_limit,
        budget=budget,
        winner=None,
        by_mode={},
        closest={},
        configurations=n_cfg,
        rows=total_rows,
        refined_rows=refined,
        seconds=0.0,
        space=space,
        modes_seen=set(state.modes_seen),
        not_a_run=state.not_a_run,
        short_modes=set(state.short_modes),
    )
    result.winner = _row(space, cfg, state.best, kind, asm) if state.best is not None else None
    for mode in MODES:
        b = state.by_mode.get(mode)
        result.by_mode[mode] = _row(space, cfg, b, kind, asm) if b is not None else None
        cl = state.closest.get(mode)
        result.closest[mode] = _row(space, cfg, cl, kind, asm) if cl is not None else None
    result.explanation = explain_modes(result)
    result.seconds = time.perf_counter() - started
    return result


def config_groups(cfg: dict[str, np.ndarray], keep: Callable[[int], bool]) -> list[tuple[int, int]]:
    """The runs of configurations that share a node and an H (they enter a batch as scalars), as
    (first, stop) index pairs, for the nodes `keep(node index)` accepts."""
    if len(cfg["node"]) == 0:  # an empty space (e.g. a model no configuration can hold)
        return []
    key = np.char.add(cfg["node"].astype(str), np.char.add("|", cfg["h"]))
    cuts = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
    return [(int(b0), int(b1)) for b0, b1 in itertools.pairwise(cuts) if keep(int(cfg["node"][b0]))]


def search_block(
    start: int,
    stop: int,
    groups: list[tuple[int, int]],
    base: Scenario,
    space: Space,
    cfg: dict[str, np.ndarray],
    target: Target | None,
    kind: str,
    days_limit: float,
    objective: str,
    budget: float | None,
    chunk_rows: int,
) -> tuple[_State, int]:
    """Groups start..stop−1 of configurations (one node, one H each) at every grid node count, into a
    state of their own, and the rows evaluated. Runs on whichever process gets it."""
    asm = Assumptions(base.assumptions)
    n_grid = np.asarray(space.node_counts, dtype=float)
    state = _State(len(cfg["node"]), days_limit)
    rows = 0
    per = max(1, chunk_rows // len(n_grid))
    for b0, b1 in groups[start:stop]:
        for c0 in range(b0, b1, per):
            c1 = min(b1, c0 + per)
            ci = np.repeat(np.arange(c0, c1), len(n_grid))
            ni = np.tile(np.arange(len(n_grid)), c1 - c0)
            n = n_grid[ni]
            keep = (cfg["group"][ci] == 0) | (n >= 2 * cfg["group"][ci])
            ci, ni, n = ci[keep], ni[keep], n[keep]
            if ci.size:
                rows += ci.size
                ev = _evaluate(base, space, cfg, ci, n, target, kind, days_limit, asm, objective == "reach")
                state.absorb(ev, ci, ni, objective, budget)
    return state, rows


def not_a_run(days, outer_step_s, tokens):
    """Rows that reach a target in less than one outer step (the replicas never synchronize: simulate's
    LESS_THAN_ONE_OUTER_STEP) or on fewer tokens than a run may train (MIN_RUN_TOKENS): not a training
    run, so not an answer."""
    with np.errstate(invalid="ignore"):
        return (np.asarray(days) * 86400.0 < np.asarray(outer_step_s)) | (np.asarray(tokens) < MIN_RUN_TOKENS)


def _evaluate(base, space, cfg, ci, n, target, kind, days_limit, asm, want_reach) -> dict[str, np.ndarray]:
    """Simulate rows `ci` (configurations of one node and one H) at node counts `n`."""
    node = space.nodes[int(cfg["node"][ci[0]])]
    h = str(cfg["h"][ci[0]])
    scalar = {
        "node": None,
        "gpu": node.gpu,
        "gpus_per_node": node.count,
        "pflops_per_node": node.pflops,
        "vram_per_node_gb": node.vram_gb,
        "precision": node.precision,
        "inner_steps": h if h in ("auto", "auto-quality") else int(float(h)),
        "tokens_t": PROBE_TOKENS_T,
        "regional_steps": "auto",
    }
    fields = {
        "num_nodes": n,
        "parameters_b": cfg["params_b"][ci],
        "compression": cfg["comp"][ci].astype(float),
        "hierarchical": cfg["group"][ci] > 0,
        "nodes_per_group": np.where(cfg["group"][ci] > 0, cfg["group"][ci], 1).astype(float),
        "activation_compression": cfg["act"][ci].astype(float),
    }
    b = simulate_batch(base.replace(**scalar), **fields)
    rows = len(ci)
    mode = np.asarray(b.columns["mode_code"]) * np.ones(rows, dtype=np.int64)
    wall = np.asarray(b["wall_clock_days"], dtype=float)
    ok = (mode != INFEASIBLE) & np.isfinite(wall) & (wall > 0)
    probe = PROBE_TOKENS_T * 1e12
    rate = np.where(ok, probe / np.where(ok, wall, 1.0), 0.0)  # tokens per day
    fpt = np.asarray(b["model_flop"], dtype=float) / probe * np.ones(rows)
    eta = np.asarray(b["efficiency"], dtype=float) * np.ones(rows)
    mult = np.asarray(b["replica_loss_multiplier"], dtype=float) * np.ones(rows)
    params = np.asarray(b["parameters"], dtype=float) * np.ones(rows)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tokens_limit = np.where(ok, rate * days_limit, 0.0)  # days_limit may be inf (no limit): 0·inf
        if not want_reach:
            reach = np.full(rows, np.nan)  # computed for the few rows reported
        elif kind == "model":
            reach = np.where(ok, tokens_limit, 0.0)
        else:
            reach = np.where(
                ok, metric_at(kind, params, np.maximum(tokens_limit, 1.0), fpt, eta, mult, asm), 0.0
            )
        if target is not None:
            need = tokens_needed(target, params, fpt, eta, mult, asm)
            days = np.where(ok & (rate > 0), need / np.where(rate > 0, rate, 1.0), np.inf)
        else:
            need = tokens_limit
            days = np.full(rows, days_limit)
    days = np.where(np.isfinite(days), days, np.inf)
    outer = np.asarray(b["outer_step_s"], dtype=float) * np.ones(rows)
    short = np.zeros(rows, dtype=bool)
    if target is not None:
        short = ok & not_a_run(days, outer, need)
        ok = ok & ~short
        days = np.where(short, np.inf, days)
    return {
        "ok": ok,
        "short": short,
        "outer_s": outer,
        "mode": mode,
        "cost": np.asarray(b["cost_usd"], dtype=float) * np.ones(rows),
        "days": days,
        "reach": reach,
        "tokens": np.where(np.isfinite(need), need, tokens_limit),
        "limit_tokens": tokens_limit,
        "eta": eta,
        "mult": mult,
        "fpt": fpt,
        "params": params,
        "h_used": np.asarray(b["inner_steps_used"], dtype=float) * np.ones(rows),
        "n": n,
    }


class _State:
    def __init__(self, n_cfg: int, days_limit: float) -> None:
        self.limit = days_limit
        self.best: dict | None = None
        self.best_key: tuple | None = None
        self.by_mode: dict[str, dict] = {}
        self.by_mode_key: dict[str, tuple] = {}
        self.closest: dict[str, dict] = {}
        self.closest_key: dict[str, tuple] = {}
        self.modes_seen: set[str] = set()
        # cheapest objective: per configuration, the first grid index that reaches the target
        self.first_ok = np.full(n_cfg, -1, dtype=np.int64)
        self.not_a_run = 0  # rows that reach the target in less than one outer step (`_evaluate`)
        self.short_modes: set[str] = set()  # modes of those rows

    def absorb(self, ev, ci, ni, objective, budget, track_grid: bool = True) -> None:
        ok = ev["ok"]
        if track_grid:
            self.not_a_run += int(np.count_nonzero(ev["short"]))
        self.short_modes |= {MODE_IDS[m] for m in np.unique(ev["mode"][ev["short"]]).tolist()}
        modes = np.unique(ev["mode"][ok]).tolist()
        self.modes_seen |= {MODE_IDS[m] for m in modes}
        within_budget = np.ones(len(ci), dtype=bool) if budget is None else ev["cost"] <= budget * (1 + 1e-12)
        reaches = (
            ok & within_budget & (ev["days"] <= self.limit) if objective != "reach" else ok & within_budget
        )
        if objective == "cost":
            keys = (ev["cost"], ev["days"], ev["n"])
        elif objective == "nodes":
            keys = (ev["n"], ev["days"], ev["cost"])
        elif objective == "time":
            keys = (ev["days"], ev["cost"], ev["n"])
        else:
            keys = (-ev["reach"], ev["cost"], ev["n"])
        i = _pick(reaches, *keys)
        if i is not None:
            key = tuple(float(k[i]) for k in keys)
            if self.best_key is None or key < self.best_key:
                self.best_key, self.best = key, _take(ev, ci, ni, i)
        for code in modes:
            mode = MODE_IDS[code]
            in_mode = ev["mode"] == code
            j = _pick(reaches & in_mode, *keys)
            if j is not None:
                key = tuple(float(k[j]) for k in keys)
                if mode not in self.by_mode_key or key < self.by_mode_key[mode]:
                    self.by_mode_key[mode], self.by_mode[mode] = key, _take(ev, ci, ni, j)
            # closest: the fastest run of this mode (within the budget), reported when none reaches
            j = _pick(ok & within_budget & in_mode, ev["days"], ev["cost"]) if objective != "reach" else None
            if j is not None:
                key = (float(ev["days"][j]), float(ev["cost"][j]))
                if mode not in self.closest_key or key < self.closest_key[mode]:
                    self.closest_key[mode], self.closest[mode] = key, _take(ev, ci, ni, j)
        if objective in ("cost", "nodes") and track_grid:
            hit = np.flatnonzero(reaches)
            if hit.size:
                # per configuration, the smallest grid index reaching the target
                order = np.lexsort((ni[hit], ci[hit]))
                h = hit[order]
                first = np.ones(h.size, dtype=bool)
                first[1:] = ci[h][1:] != ci[h][:-1]
                for c, g in zip(ci[h][first], ni[h][first], strict=True):
                    if self.first_ok[c] < 0 or g < self.first_ok[c]:
                        self.first_ok[c] = g

    def merge(self, other: _State) -> None:
        """Absorb the state of a later block: a key replaces one only when strictly smaller, as within a
        block, so blocks merged in order keep the first best, exactly as one pass over them would."""
        self.not_a_run += other.not_a_run
        self.short_modes |= other.short_modes
        if other.best_key is not None and (self.best_key is None or other.best_key < self.best_key):
            self.best_key, self.best = other.best_key, other.best
        for mine, keys, theirs, their_keys in (
            (self.by_mode, self.by_mode_key, other.by_mode, other.by_mode_key),
            (self.closest, self.closest_key, other.closest, other.closest_key),
        ):
            for mode, k in their_keys.items():
                if mode not in keys or k < keys[mode]:
                    keys[mode], mine[mode] = k, theirs[mode]
        self.modes_seen |= other.modes_seen
        seen = other.first_ok >= 0
        self.first_ok = np.where(
            seen & ((self.first_ok < 0) | (other.first_ok < self.first_ok)), other.first_ok, self.first_ok
        )


def _take(ev, ci, ni, i) -> dict:
    return {
        "config": int(ci[i]),
        "n_index": int(ni[i]),
        **{k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in ev.items()},
    }


def _refine(
    base, space, cfg, n_grid, state: _State, target, kind, days_limit, asm, budget, objective="cost"
) -> int:
    """Evaluate every integer node count below each configuration's first reaching grid point, down
    to the previous grid point, where that could be cheaper (objective "cost") or fewer nodes
    ("nodes") than the best found."""
    best_cost = state.best_key[0]  # the cost, or the node count, of the best found
    price = np.array([nd.price_usd for nd in space.nodes])[cfg["node"]]
    if objective == "nodes":
        price = np.ones(len(cfg["node"]))  # a node count is priced at one a node
    cands = []
    for c in np.flatnonzero(state.first_ok >= 0):
        g = state.first_ok[c]
        lo = int(n_grid[g - 1]) + 1 if g > 0 else 1
        hi = int(n_grid[g]) - 1
        if hi >= lo and lo * price[c] < best_cost:
            cands.append((c, lo, hi))
    if not cands:
        return 0
    total = 0
    for c, lo, hi in cands:
        n = np.arange(lo, hi + 1, dtype=float)
        n = n[(cfg["group"][c] == 0) | (n >= 2 * cfg["group"][c])]
        if not n.size:
            continue
        part_c = np.full(n.size, c)
        ev = _evaluate(base, space, cfg, part_c, n, target, kind, days_limit, asm, False)
        total += n.size
        state.absorb(ev, part_c, np.full(n.size, -1), objective, budget, track_grid=False)
    return total


def _row(space: Space, cfg, rec: dict, kind: str, asm: Assumptions) -> Row:
    c = rec["config"]
    node = space.nodes[int(cfg["node"][c])]
    reach = float(rec["reach"])
    if not math.isfinite(reach):
        if kind == "model":
            reach = float(rec["limit_tokens"])
        else:
            reach = float(
                metric_at(
                    kind,
                    rec["params"],
                    max(rec["limit_tokens"], 1.0),
                    rec["fpt"],
                    rec["eta"],
                    rec["mult"],
                    asm,
                )
            )
    return Row(
        node=node,
        num_nodes=int(rec["n"]),
        params_b=float(cfg["params_b"][c]),
        inner_steps=str(cfg["h"][c]),
        compression=float(cfg["comp"][c]),
        group=int(cfg["group"][c]),
        activation_compression=float(cfg["act"][c]),
        mode=MODE_IDS[int(rec["mode"])],
        cost_usd=float(rec["cost"]),
        days=float(rec["days"]),
        reach=reach,
        tokens_t=float(rec["tokens"]) / 1e12,
        efficiency=float(rec["eta"]),
        h_used=float(rec["h_used"]),
    )


def explain_modes(r: SearchResult) -> dict[str, str]:
    """Why each mode lost (or won): one sentence per mode."""
    out: dict[str, str] = {}
    w = r.winner
    for mode in MODES:
        b = r.by_mode.get(mode)
        if w is not None and b is not None and b.mode == w.mode and _same(b, w):
            out[mode] = "winner"
            continue
        if b is not None and w is not None:
            if r.objective == "cost":
                out[mode] = f"also reaches it, at {b.cost_usd / w.cost_usd:.2f}× the winner's cost"
            elif r.objective == "nodes":
                out[mode] = f"also reaches it, with {b.num_nodes / w.num_nodes:.2f}× the winner's nodes"
            elif r.objective == "time":
                out[mode] = f"also reaches it, in {b.days / w.days:.2f}× the winner's time"
            else:
                out[mode] = f"reaches {b.reach / w.reach:.1%} of the winner's compute within the budget"
            continue
        cl = r.closest.get(mode)
        if cl is not None and r.target is not None:
            if r.target.kind == "model":
                what = f"at most {cl.reach / (r.target.tokens_t * 1e12):.1%} of the tokens"
            else:
                what = f"at most {cl.reach / r.target.flop:.1%} of the target"
            extra = " and budget" if r.budget is not None else ""
            out[mode] = f"never reaches it: {what} within the time limit{extra}"
        elif mode in r.short_modes and mode not in r.modes_seen:
            out[mode] = "reaches it only in less than one outer step (or on under 1M tokens): not a run"
        elif mode not in r.modes_seen:
            out[mode] = _absent_reason(mode, r)
        else:
            out[mode] = "no configuration of this mode fits the budget"
    return out


def not_a_run_note(r: SearchResult) -> str:
    """What a search without an answer adds when configurations reached the target too soon to be a run
    (`_evaluate`); empty otherwise."""
    if r.winner is not None or not r.not_a_run:
        return ""
    return (
        f"{r.not_a_run:,} pairs of a configuration and a node count reach it in less than one outer step or on fewer "
        f"than {MIN_RUN_TOKENS:,.0f} tokens, which is not a training run (the replicas never synchronize): "
        "the target is too small for a decentralized run; raise it"
    )


def _same(a: Row, b: Row) -> bool:
    return a.scenario_fields() == b.scenario_fields()


def _absent_reason(mode: str, r: SearchResult) -> str:
    if mode == "hierarchical-diloco":
        return "not in the space: no group size, or no model that fits one node with two whole groups"
    if mode == "pp-group-diloco":
        return "not in the space: needs a model larger than one node and at least two whole pipelines"
    if mode == "pp-over-wan":
        return "not in the space: pipeline over WAN arises only when fewer than two whole pipelines fit"
    return "not in the space: needs a model that fits one node"


# --- direct questions: the largest model, the fewest nodes, how long (issue 15 item 6) ----------------
#
# Each answer is a target search (above) over the configurations of one node kind: the fastest
# configuration of a model at a node count (objective "time"), or the fewest nodes that train it within
# the time limit (objective "nodes", refined to the exact integer as "cost" is). The largest model is
# the largest size whose fastest configuration finishes in time: a log grid of sizes over the fields
# table's range, then bisection between the largest grid size that finishes and the next. The limiting
# factor is read from `simulate` of the answer's configuration: the largest part of its outer step
# (simulate's bottleneck), or memory where the model does not fit.

SOLVABLE = ("parameters_b", "num_nodes", "days")
SIZE_GRID = 49  # log-spaced model sizes over the fields table's range, before the bisection
SIZE_RTOL = 1e-5  # the bisection stops when its bracket is this narrow (relative)
SIZE_DIGITS = 4  # the largest model is reported rounded down to this many significant figures

# simulate's bottleneck (the largest part of an outer step; memory when the model does not fit) →
# the limiting factor named to the user, and the part as a phrase
FACTOR = {
    "compute": "compute",
    "latency": "network/sync",
    "global_sync": "network/sync",
    "regional_sync": "network/sync",
    "pipeline_comm": "network/pipeline",
    "bubble": "pipeline bubble",
    "straggler": "stragglers",
    "memory": "memory",
    "failures": "failures",
}
PART = {
    "compute": "compute",
    "latency": "network latency (round trips)",
    "global_sync": "global sync over the WAN",
    "regional_sync": "regional sync",
    "pipeline_comm": "pipeline hand-offs over the network",
    "bubble": "the pipeline bubble",
    "straggler": "waiting on stragglers",
    "failures": "time lost to node failures (rejoins or restarts)",
}


@dataclass
class Limit:
    """What sets an answer: `factor` (compute, network/sync, network/pipeline, pipeline bubble,
    stragglers, memory, failures, or a bound of the question), simulate's `bottleneck` of the run it is
    read from and that part's `share` of an outer step's expected wall time (failures included), and
    `why` in a sentence."""

    factor: str
    bottleneck: str | None
    share: float | None
    why: str


@dataclass
class Solution:
    """The answer to `target --solve`: `value` is the largest model (B parameters), the fewest nodes or
    the days; `run` the fastest configuration at the answer; `beyond` the fastest run just past it (a
    slightly larger model of `beyond_value` B, or `beyond_value` = one node fewer; None where nothing
    runs there or nothing lies beyond)."""

    solve: str
    value: float
    node: NodeSpec
    num_nodes: int
    params_b: float
    tokens_t: float
    tokens_rule: str
    days_limit: float | None
    run: Row
    limit: Limit
    beyond: Row | None = None
    beyond_value: float | None = None
    searches: int = 0
    rows: int = 0
    seconds: float = 0.0


def tokens_for(params_b: float, tokens_t: float | None, asm: Assumptions) -> tuple[float, str]:
    """The tokens (T) a model trains on, and where the number comes from: `tokens_t`, or compute-optimal
    D = r·N (r the assumptions table's chinchilla_tokens_per_param, as in χ: `physics.quality`)."""
    if tokens_t is not None:
        return tokens_t, "given (--tokens-t)"
    r = asm.chinchilla_tokens_per_param
    return r * params_b / 1e3, f"compute-optimal: {r:g} per parameter, chinchilla_tokens_per_param"


def solve(
    base: Scenario,
    space: Space,
    what: str,
    node: NodeSpec,
    days_limit: float | None = DEFAULT_DAYS,
    params_b: float | None = None,
    tokens_t: float | None = None,
    max_nodes: int = 100_000,
) -> Solution:
    """Answer a direct question on one node kind `node`, ranging over `space`'s H, compression,
    hierarchy and activation compression (its nodes, node counts and model sizes are set here):

    - "parameters_b": the largest model whose fastest configuration on base.num_nodes nodes trains its
      tokens (`tokens_t`, else compute-optimal) within `days_limit`;
    - "num_nodes": the fewest nodes (≤ `max_nodes`) that train `params_b` within `days_limit`;
    - "days": how long the fastest configuration of `params_b` on base.num_nodes nodes takes.

    Raises ScenarioError, naming the limiting factor, where there is no answer."""
    if what not in SOLVABLE:
        raise ScenarioError([("--solve", what, "must be parameters_b, num_nodes or days")])
    started = time.perf_counter()
    asm = Assumptions(base.assumptions)
    lo_b, hi_b = BOUNDS["parameters_b"]["ge"], BOUNDS["parameters_b"]["le"]
    if what == "parameters_b":
        if params_b is not None:
            raise ScenarioError([("--params-b", params_b, "is the unknown of --solve parameters_b; drop it")])
    elif params_b is None or not (math.isfinite(params_b) and lo_b <= params_b <= hi_b):
        raise ScenarioError(
            [("--params-b", params_b, f"--solve {what} needs the model size: {lo_b:g}–{hi_b:g} B parameters")]
        )
    if tokens_t is not None:
        lo_t, hi_t = BOUNDS["tokens_t"]["ge"], BOUNDS["tokens_t"]["le"]
        if not (math.isfinite(tokens_t) and lo_t <= tokens_t <= hi_t):
            raise ScenarioError([("--tokens-t", tokens_t, f"must be {lo_t:g}–{hi_t:g} T tokens")])
    if what == "days":
        days_limit = None
    else:
        check_days(days_limit)
    if what == "num_nodes":
        check_max_nodes(max_nodes)
    count = _Count()
    if what == "parameters_b":
        sol = _largest_model(base, space, node, days_limit, tokens_t, asm, count)
    elif what == "num_nodes":
        sol = _fewest_nodes(base, space, node, days_limit, params_b, tokens_t, max_nodes, asm, count)
    else:
        sol = _how_long(base, space, node, params_b, tokens_t, asm, count)
    sol.searches, sol.rows, sol.seconds = count.searches, count.rows, time.perf_counter() - started
    return sol


class _Count:
    """Passes a search result through, counting the searches a solve runs and the rows they evaluate."""

    def __init__(self) -> None:
        self.searches = 0
        self.rows = 0

    def __call__(self, res: SearchResult) -> SearchResult:
        self.searches += 1
        self.rows += res.rows + res.refined_rows
        return res


def _fastest(base, space, node, n, params_b, tokens_t, days_limit, count, strict=True) -> SearchResult:
    """The fastest configuration of `params_b` on `n` nodes (within `days_limit`; None: however long).
    `strict`: an error where the space has no configuration for `n` nodes at all."""
    sp = replace(space, nodes=[node], node_counts=np.array([float(n)]), params_b=params_b)
    tgt = Target("model", params_b=params_b, tokens_t=tokens_t)
    res = count(search(base, sp, tgt, objective="time", days_limit=days_limit, refine=False))
    if strict and res.rows == 0:  # every configuration is a hierarchy needing two whole groups
        raise ScenarioError(
            [
                (
                    "--group-sizes",
                    list(space.group_sizes),
                    f"no configuration runs on {n:,} nodes: groups of g nodes need 2·g nodes; add 0 (flat)",
                )
            ]
        )
    return res


def _too_soon(res: SearchResult, n: int | None, node: NodeSpec, tokens_t: float) -> str:
    """Why a solve has no run when every configuration it saw trains the tokens too soon."""
    where = f"on {nodes_text(n)} of {node.id}" if n is not None else f"on every count of {node.id}"
    return (
        f"{where} every configuration trains {tokens_t:,.4g}T tokens in less than one outer step (or on "
        f"fewer than {MIN_RUN_TOKENS:,.0f} tokens), which is not a training run (the replicas never "
        "synchronize): more tokens, fewer nodes or fewer inner steps (--inner-steps)"
    )


def _quickest(res: SearchResult) -> Row | None:
    """The fastest run a search saw, within its time limit or not (None: no configuration runs)."""
    rows = [r for r in (res.winner, *res.closest.values()) if r is not None]
    return min(rows, key=lambda r: r.days) if rows else None


def _simulated(base: Scenario, fields: dict[str, Any], tokens_t: float):
    """`simulate` of a configuration on top of the base (what `dtsim simulate --set ...` runs)."""
    from dtsim.models.decentralized.engine import simulate

    return simulate(base.replace(node=None, **fields, tokens_t=tokens_t))


def _time_limit(base: Scenario, run: Row, tokens_t: float, lead: str) -> Limit:
    """The limit read from `run`'s outer step: `lead` (what goes over or under), then its largest part."""
    r = _simulated(base, run.scenario_fields(), tokens_t)
    part = f"{r.bottleneck_share:.0%} of each outer step's expected wall time is {PART.get(r.bottleneck, r.bottleneck)}"
    return Limit(FACTOR.get(r.bottleneck, r.bottleneck), r.bottleneck, r.bottleneck_share, f"{lead}; {part}")


def _past_limit(
    base: Scenario,
    run: Row,
    tokens_t: float,
    beyond: Row,
    beyond_tokens_t: float,
    what: str,
    days_limit: float,
) -> Limit:
    """Why the run just past the answer (`what`: "a 144.001B model", "a run on 3 nodes") misses the
    time limit that `run` meets: memory where it needs more pipeline stages (a model outgrowing a node
    is pipelined, and slower), else the largest part of the answer's outer step."""
    ra = _simulated(base, run.scenario_fields(), tokens_t)
    rb = _simulated(base, beyond.scenario_fields(), beyond_tokens_t)
    over = f"{what} takes {beyond.days:,.6g} days at best, over the {days_limit:,.6g}-day limit"
    if beyond.mode != run.mode:
        over += f" (as {beyond.mode}: {rb.mode_reason})"
    if rb.pp_stages > ra.pp_stages:
        why = f"{over}; it needs {rb.pp_stages} pipeline stages where the answer needs {ra.pp_stages}"
        return Limit("memory", "memory", None, why)
    part = f"{ra.bottleneck_share:.0%} of each outer step's expected wall time is {PART.get(ra.bottleneck, ra.bottleneck)}"
    return Limit(
        FACTOR.get(ra.bottleneck, ra.bottleneck),
        ra.bottleneck,
        ra.bottleneck_share,
        f"{over}; at the answer {part}",
    )


def _memory_limit(
    base: Scenario, node: NodeSpec, n: int, params_b: float, tokens_t: float, lead: str
) -> Limit:
    """Memory: `params_b` does not fit `n` nodes; the reason as simulate gives it."""
    r = _simulated(base, configuration_fields(node, n, params_b, "auto", 1.0, 0, 1.0), tokens_t)
    return Limit("memory", "memory", None, f"{lead}: {r.mode_reason}")


def _largest_model(base, space, node, days_limit, tokens_t, asm, count) -> Solution:
    n = int(base.num_nodes)
    where = f"on {n:,} × {node.id}"

    def run(p: float) -> SearchResult:
        return _fastest(base, space, node, n, p, tokens_for(p, tokens_t, asm)[0], days_limit, count)

    lo_b, hi_b = BOUNDS["parameters_b"]["ge"], BOUNDS["parameters_b"]["le"]
    grid = np.geomspace(lo_b, hi_b, SIZE_GRID)
    grid[0], grid[-1] = lo_b, hi_b
    found = [run(float(p)) for p in grid]
    fits = [i for i, r in enumerate(found) if r.winner is not None]
    if not fits:
        t0 = tokens_for(lo_b, tokens_t, asm)[0]
        q = _quickest(found[0])
        if q is None:
            lim = _memory_limit(base, node, n, lo_b, t0, f"even a {lo_b:g}B model does not fit {where}")
        else:
            lead = f"even a {lo_b:g}B model takes {q.days:,.4g} days {where} at best"
            lim = _time_limit(base, q, t0, lead)
        raise ScenarioError(
            [("--solve", "parameters_b", f"no model size trains within {days_limit:,.4g} days: {lim.why}")]
        )
    i = fits[-1]
    if i == len(grid) - 1:  # the largest size the fields table takes finishes in time
        value, at, beyond, hi = hi_b, found[i], None, None
        lim = Limit(
            "model size bound",
            None,
            None,
            f"the largest model dtsim takes, {hi_b:g}B, trains within {days_limit:,.4g} days {where}",
        )
    else:
        lo, hi, at, above = float(grid[i]), float(grid[i + 1]), found[i], found[i + 1]
        while hi / lo - 1 > SIZE_RTOL:
            mid = math.sqrt(lo * hi)
            res = run(mid)
            if res.winner is not None:
                lo, at = mid, res
            else:
                hi, above = mid, res
        value = _round_down(lo, SIZE_DIGITS)
        if value < lo:
            res = run(value)
            if res.winner is not None:
                at = res
            else:  # rounding down lost the answer: time is not monotone in size here
                value = lo
        beyond, t_hi = _quickest(above), tokens_for(hi, tokens_t, asm)[0]
        if beyond is None:
            lim = _memory_limit(base, node, n, hi, t_hi, f"a {hi:.6g}B model does not fit {where}")
        else:
            t_at = tokens_for(value, tokens_t, asm)[0]
            lim = _past_limit(base, at.winner, t_at, beyond, t_hi, f"a {hi:.6g}B model", days_limit)
    tok, rule = tokens_for(value, tokens_t, asm)
    return Solution(
        "parameters_b",
        value,
        node,
        n,
        value,
        tok,
        rule,
        days_limit,
        at.winner,
        lim,
        beyond=beyond,
        beyond_value=hi,
    )


def _round_down(x: float, digits: int) -> float:
    """x rounded down to `digits` significant figures (the nearest double to the decimal, never above x)."""
    e = math.floor(math.log10(x)) - digits + 1
    down = float(f"{math.floor(x / 10.0**e)}e{e}")
    return min(down, x)


def _fewest_nodes(base, space, node, days_limit, params_b, tokens_t, max_nodes, asm, count) -> Solution:
    tok, rule = tokens_for(params_b, tokens_t, asm)
    model = f"a {params_b:g}B model on {tok:,.4g}T tokens"
    sp = replace(space, nodes=[node], node_counts=node_count_grid(max_nodes), params_b=params_b)
    tgt = Target("model", params_b=params_b, tokens_t=tok)
    res = count(search(base, sp, tgt, objective="nodes", days_limit=days_limit))
    w = res.winner
    if w is None:
        q = _quickest(res)
        if q is None and res.not_a_run and not res.modes_seen:
            lim = Limit("run length", None, None, _too_soon(res, None, node, tok))
        elif q is None:
            lead = f"it does not fit {max_nodes:,} × {node.id}"
            lim = _memory_limit(base, node, max_nodes, params_b, tok, lead)
        else:
            lim = _time_limit(
                base, q, tok, f"the fastest, {q.num_nodes:,} × {node.id}, takes {q.days:,.4g} days"
            )
        raise ScenarioError(
            [
                (
                    "--solve",
                    "num_nodes",
                    f"no count of {node.id} nodes up to {max_nodes:,} (--max-nodes) trains {model} within "
                    f"{days_limit:,.4g} days: {lim.why}",
                )
            ]
        )
    beyond = None
    if w.num_nodes == 1:
        lim = _time_limit(base, w, tok, f"one node trains it in {w.days:,.4g} days")
    else:
        fewer = w.num_nodes - 1
        below = _fastest(base, space, node, fewer, params_b, tok, None, count, strict=False)
        beyond = below.winner
        if below.rows == 0:
            why = (
                f"on {nodes_text(fewer)} no configuration of the space runs: groups of g nodes need 2·g nodes"
            )
            lim = Limit("group size", None, None, why)
        elif beyond is None:
            lim = _memory_limit(base, node, fewer, params_b, tok, f"{nodes_text(fewer)} cannot hold {model}")
        else:
            lim = _past_limit(base, w, tok, beyond, tok, f"a run on {nodes_text(fewer)}", days_limit)
    return Solution(
        "num_nodes",
        float(w.num_nodes),
        node,
        w.num_nodes,
        params_b,
        tok,
        rule,
        days_limit,
        w,
        lim,
        beyond=beyond,
        beyond_value=float(w.num_nodes - 1) if w.num_nodes > 1 else None,
    )


def _how_long(base, space, node, params_b, tokens_t, asm, count) -> Solution:
    n = int(base.num_nodes)
    tok, rule = tokens_for(params_b, tokens_t, asm)
    res = _fastest(base, space, node, n, params_b, tok, None, count)
    w = res.winner
    if w is None and res.not_a_run:
        raise ScenarioError([("--solve", "days", f"no configuration runs: {_too_soon(res, n, node, tok)}")])
    if w is None:
        lim = _memory_limit(
            base, node, n, params_b, tok, f"a {params_b:g}B model does not fit {n:,} × {node.id}"
        )
        raise ScenarioError([("--solve", "days", f"no configuration runs: {lim.why}")])
    lim = _time_limit(base, w, tok, f"the fastest configuration takes {w.days:,.4g} days")
    return Solution("days", w.days, node, n, params_b, tok, rule, None, w, lim)
