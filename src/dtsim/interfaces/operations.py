"""The analysis operations the CLI and the HTTP API share: each checks its inputs, runs the model and
builds the JSON that `dtsim … --json` prints and the API returns — written once, here.

- `limits_curve` / `curve_payload`, `limits_search`: `dtsim limits curve|search` (Erdil &
  Schneider-Joseph 2024, "Data Movement Limits to Frontier Model Training");
- `validation_report`: `dtsim validate` (the measured runs against dtsim's predictions);
- `target_search`, `target_solve`: `dtsim target` and its `--solve` questions;
- `governance_analysis`: `dtsim governance` (the threshold analysis of the MIRI simulator docs);
- `grid_columns`: a `dtsim sweep` grid's columns as JSON values;
- `model_architecture`, `step_layouts`, `target_size_payload`, `collective_result`, `fabric_plan` /
  `fabric_json`: `dtsim step`, `plan`, `collective` and `fabric` (POST /api/step, /plan, /collective,
  /fabric and the /step, /plan and /network views).

Errors are ScenarioError naming the CLI's option (`--subset`, `--node`, …); the API names the body field
(api/analysis.py maps `--inner-steps` to `inner_steps`). A `progress(done, total)` callback, where a
function takes one, is called as the work proceeds (the CLI's progress bar; the API's jobs).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from dtsim.errors import ScenarioError

Progress = Callable[[int, int], None] | None

# --- dtsim limits ------------------------------------------------------------------------------------------

SCALING_LAWS = ("default", "deepseek", "fixed")
MEMORY_CHECKS = ("per-gpu", "aggregate", "per-gpu-activations")
MAX_MONTHS = 1200.0
MIN_COMPUTE_FLOP, MAX_COMPUTE_FLOP = 1e18, 1e40


def check_limits_common(months: float, scaling: str, memory: str) -> None:
    """The time limit, the critical-batch law and the memory check of every `limits` operation."""
    problems = []
    if not (months > 0 and math.isfinite(months)) or months > MAX_MONTHS:
        problems.append(("months", months, f"must be > 0 and ≤ {MAX_MONTHS:g}"))
    if scaling not in SCALING_LAWS:
        problems.append(("scaling", scaling, "must be default, deepseek or fixed"))
    if memory not in MEMORY_CHECKS:
        problems.append(("memory", memory, "must be per-gpu, aggregate or per-gpu-activations"))
    if problems:
        raise ScenarioError(problems)


def limits_hardware(
    names: list[str] | None,
    bandwidth: list[float] | None = None,
    latency_s: list[float] | None = None,
    peak_tflops: float | None = None,
    hbm_tb_s: float | None = None,
    memory_gb: float | None = None,
) -> list:
    """The limits model's hardware for each name (default h100-sxm), with the per-level network
    (bytes/s, seconds) and the chip's peak, HBM bandwidth and memory replaced where given."""
    from dtsim.models.limits.hardware import custom, get

    chip = {"peak_tflops": peak_tflops, "hbm_tb_s": hbm_tb_s, "memory_gb": memory_gb}
    given = any(v is not None for v in (bandwidth, latency_s, *chip.values()))
    out = []
    for name in names or ["h100-sxm"]:
        hw = get(name)
        levels = len(hw.bandwidth)
        sizes = ", ".join(f"{n:,} GPUs" for n in hw.level_sizes)
        wrong = [
            (field, values if field == "level_bandwidth" else [x * 1e6 for x in values])
            for field, values in (("level_bandwidth", bandwidth), ("level_latency_us", latency_s))
            if values is not None and len(values) != levels
        ]
        if wrong:
            raise ScenarioError(
                [
                    (
                        field,
                        ",".join(f"{x:g}" for x in values),
                        f"{name}'s network has {levels} level{'s' if levels != 1 else ''} "
                        f"({sizes + ', then ' if sizes else ''}the whole cluster): give {levels} value"
                        f"{'s' if levels != 1 else ''}, one per level",
                    )
                    for field, values in wrong
                ]
            )
        if given:
            hw = custom(hw, bandwidth=bandwidth, latency=latency_s, **chip)
        out.append(hw)
    return out


def limits_curve(
    gpu: list[str] | None = None,
    sparse: bool = False,
    scaling: str = "default",
    months: float = 3.0,
    memory: str = "per-gpu",
    level_bandwidth: list[float] | None = None,
    level_latency_us: list[float] | None = None,
    peak_tflops: float | None = None,
    hbm_tb_s: float | None = None,
    memory_gb: float | None = None,
    progress: Progress = None,
) -> tuple[list, list]:
    """(hardware, [(name, points)]): utilization against training compute of compute-optimal runs
    within `months` on each hardware (models/limits/curve.py; Erdil & Schneider-Joseph 2024 §6)."""
    from dtsim.models.limits.curve import curve
    from dtsim.models.limits.scaling import d_model_grid

    check_limits_common(months, scaling, memory)
    latency = None if level_latency_us is None else [x * 1e-6 for x in level_latency_us]
    hws = limits_hardware(gpu, level_bandwidth, latency, peak_tflops, hbm_tb_s, memory_gb)
    series = []
    for i, hw in enumerate(hws):
        series.append((hw.name, curve(hw, sparse=sparse, batch_law=scaling, months=months, memory=memory)))
        if progress is not None:
            progress(i + 1, len(hws))
    empty = [name for name, pts in series if not pts]
    if empty:
        raise ScenarioError(
            [
                (
                    "gpu",
                    empty[0],
                    f"trains not even the grid's smallest model (d_model {d_model_grid()[0]}) within "
                    f"{months:g} months: its memory, bandwidth or peak is too small",
                )
            ]
        )
    return hws, series


def curve_payload(series: list) -> Any:
    """`limits curve --json`: the list of points, or {hardware: points} when several."""
    dicts = [(name, [p.as_dict() for p in pts]) for name, pts in series]
    return dicts[0][1] if len(dicts) == 1 else dict(dicts)


@dataclass
class LimitsSearch:
    shape: Any
    hw: Any
    point: Any  # LimitsPoint, or None where no cluster trains the run in time
    payload: dict[str, Any]


def limits_search(
    compute: float,
    months: float = 3.0,
    gpu: str = "h100-sxm",
    sparse: bool = False,
    scaling: str = "default",
    memory: str = "per-gpu",
    peak_tflops: float | None = None,
    hbm_tb_s: float | None = None,
    memory_gb: float | None = None,
) -> LimitsSearch:
    """The smallest cluster that trains a compute-optimal run of `compute` FLOP within `months`, and its
    layout (models/limits/search.py; Erdil & Schneider-Joseph 2024 §6), with `limits search --json`."""
    from dtsim.analysis.limits_uncertainty import read_input
    from dtsim.models.limits.curve import limits_point, shape_for_compute
    from dtsim.models.limits.search import cluster_size

    chip = {"months": months, "peak-tflops": peak_tflops, "hbm-tb-s": hbm_tb_s, "memory-gb": memory_gb}
    for flag, value in chip.items():  # the ranges `limits search` reads them in (≥ 45 minutes, …)
        if value is not None:
            read_input(flag, value)
    check_limits_common(months, scaling, memory)
    if not (math.isfinite(compute) and MIN_COMPUTE_FLOP <= compute <= MAX_COMPUTE_FLOP):
        raise ScenarioError([("compute", compute, "must be between 1e18 and 1e40 FLOP")])
    (hw,) = limits_hardware([gpu], None, None, peak_tflops, hbm_tb_s, memory_gb)
    try:
        shape = shape_for_compute(compute, sparse, scaling)
    except ValueError as exc:
        raise ScenarioError([("compute", compute, str(exc))]) from None
    best = cluster_size(shape, hw, months, memory)
    point = None if best is None else limits_point(shape, best, hw)
    if point is None:
        from dtsim.models.limits.search import SECONDS_PER_MONTH, behind_latency_wall

        per_step = months * SECONDS_PER_MONTH / shape.steps
        why = (
            "the latency wall: its kernel latencies alone outlast the time"
            if behind_latency_wall(shape, hw, months)
            else f"none of the cluster sizes searched reaches the {per_step:.3g} s per step its "
            f"{shape.steps:,.0f} steps allow"
        )
        payload = {
            "found": False,
            "d_model": shape.d_model,
            "training_flop": shape.training_flop,
            "reason": f"no cluster trains it within {months:g} months ({why})",
        }
    else:
        payload = {"found": True, **point.as_dict()}
    return LimitsSearch(shape, hw, point, payload)


# --- dtsim validate -----------------------------------------------------------------------------------------


def validation_subset(
    names: list[str] | None, known: set[str], field: str = "--subset", data: Any = None
) -> list[str] | None:
    """The named groups / record ids (None: all), or an error naming the first unknown one, the groups
    there are (`data`'s, when given) and, when records of the user's runs were rejected, the first of
    them (a misspelt record is why its group is unknown)."""
    if not names:
        return None
    unknown = [n for n in names if n not in known]
    if unknown:
        groups = (
            sorted(data.groups) if data is not None else sorted(g for g in known if g.isupper() or "-" in g)
        )
        shown = ", ".join(groups[:60]) + (f" and {len(groups) - 60} more" if len(groups) > 60 else "")
        rejected = list(getattr(data, "problems", ()))
        why = (
            f" ({len(rejected)} records of --runs were rejected; the first: {rejected[0]})"
            if rejected
            else ""
        )
        raise ScenarioError([(field, unknown[0], f"not a group or record id{why}; groups: {shown}")])
    return names


def validation_report(
    subset: list[str] | None = None, runs: Any = None, calibration: Any = None, field: str = "--subset"
) -> tuple[Any, Any]:
    """(dataset, report): every bundled measured run (and those in the directory `runs`) predicted by
    dtsim, or the named groups / records only; its `as_dict()` is `dtsim validate --json`."""
    from dtsim.validation import load_dataset
    from dtsim.validation import validate as run_validation

    data = load_dataset(runs)
    names = validation_subset(subset, set(data.groups) | {r.id for r in data.records}, field, data)
    return data, run_validation(data, names, calibration=calibration)


# --- dtsim target -------------------------------------------------------------------------------------------


def group_bounds_text(report: Any, group: str) -> str:
    """A group's bounds as the validation table shows them (bound_text), each naming its metric when the
    group's runs have more than one (`✓mfu pt≤3` beside a compute-utilization row the bound leaves out)."""
    metrics = {r.metric for r in report.runs if r.group == group}
    return " ".join(bound_text(c, len(metrics) > 1) for c in report.summary[group].bounds)


def bound_text(c: Any, named: bool = False) -> str:
    """A group's error bound (validation.report.BoundCheck) as the validation table shows it: ✓ or ✗,
    (its metric, when `named`), then `med≤15%`, `max≤30%` or `pt≤5` (its median_abs_error,
    max_abs_error or max_abs_points)."""
    mark = "✓" if c.ok else "✗"
    of = f"{c.metric} " if named and c.metric else ""
    if c.bound == "max_abs_points":
        return f"{mark}{of}pt≤{c.limit:g}"
    short = "med" if c.bound == "median_abs_error" else "max"
    return f"{mark}{of}{short}≤{c.limit:.0%}"


def row_dict(row) -> dict[str, Any] | None:
    """One configuration of a target search as JSON (null for a value its mode does not have)."""
    if row is None:
        return None
    out = {
        "node": row.node.id,
        "node_name": row.node.name,
        "gpus_per_node": row.node.count,
        "num_nodes": row.num_nodes,
        "total_gpus": row.num_nodes * row.node.count,
        "parameters_b": row.params_b,
        "inner_steps": row.inner_steps,
        "inner_steps_used": row.h_used,
        "compression": row.compression,
        "nodes_per_group": row.group or None,
        "activation_compression": row.activation_compression,
        "mode": row.mode,
        "cost_usd": row.cost_usd,
        "days": row.days if math.isfinite(row.days) else None,
        "reach_within_limit": row.reach,
        "tokens_t": row.tokens_t,
        "efficiency": row.efficiency,
    }
    # JSON has no NaN: a value a mode does not have (inner steps of a pipeline over the WAN) is null
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


@dataclass
class TargetAnswer:
    res: Any  # analysis.search.SearchResult
    target: Any  # analysis.search.Target, None for a --reach query
    objective: str
    days: float
    notes: list[dict[str, str]]
    mc: Any
    payload: dict[str, Any]


# Scenario fields a search sets itself, and what to give instead (analysis/search.py _evaluate and
# configuration_fields): a base value of one of them would be replaced without a word
_NODE_FIELDS = ("node", "gpu", "gpus_per_node", "pflops_per_node", "vram_per_node_gb")
_GRID_FIELDS = ("inner_steps", "compression", "hierarchical", "nodes_per_group", "activation_compression")
SEARCHED_FIELDS = {
    "target": {
        **dict.fromkeys(_NODE_FIELDS, "--node"),
        "num_nodes": "--max-nodes or --min-nodes",
        "parameters_b": "--params-b",
        "tokens_t": "--tokens-t",
        "inner_steps": "--inner-steps",
        "compression": "--compression",
        "hierarchical": "--group-sizes (0 is flat)",
        "nodes_per_group": "--group-sizes",
        "activation_compression": "--activation-compression",
        "regional_steps": "nothing: the search sets it to auto",
    },
    "governance": {
        **dict.fromkeys(_NODE_FIELDS, "--gpu"),
        "precision": "--precisions",
        "num_nodes": "--max-nodes",
        "parameters_b": "--targets (the search sizes the model)",
        "tokens_t": "--targets (the search sizes the run)",
        **dict.fromkeys(_GRID_FIELDS, "nothing: the search grid sets it"),
        "regional_steps": "nothing: the search sets it to auto",
    },
}


def set_keys(items: list[str] | None) -> dict[str, str]:
    """The field names of --set FIELD=VALUE items, each with its item (a malformed one is left to
    parse_set's error)."""
    return {item.split("=", 1)[0].strip(): item for item in items or () if "=" in item}


def refuse_searched(
    given: dict[str, Any],
    command: str,
    solve: str | None = None,
    where: str = "--set",
    node_given: bool = False,
) -> None:
    """An error naming each base field of `given` (field → what the user wrote: a --set item, an API
    scenario field's value) that `command`'s search replaces, and what to give instead. `--solve` keeps
    the base's node (unless --node is given: `node_given`) and node count (it solves for one of
    parameters_b, num_nodes or days) and searches the grid fields only. The base's precision stays:
    a node preset without its own takes it."""
    hints = SEARCHED_FIELDS[command]
    if solve is not None:
        # parameters_b is --params-b's (days, num_nodes) or the answer (parameters_b): never the base's
        kept = (
            *_GRID_FIELDS,
            "regional_steps",
            "tokens_t",
            "parameters_b",
            solve,
            *(_NODE_FIELDS if node_given else ()),
        )
        hints = {k: v for k, v in hints.items() if k in kept}
        if solve in hints:
            hints[solve] = f"nothing: --solve {solve} finds it"
    problems = [
        (
            where if where in ("--set", "set") else f"{where}.{k}",
            v,
            f"{command}'s search sets {k} itself, so this value would be ignored; use {hints[k]}",
        )
        for k, v in given.items()
        if k in hints
    ]
    if problems:
        raise ScenarioError(problems)


def target_search(
    base,
    dists,
    *,
    local_flop: float | None = None,
    quality_flop: float | None = None,
    params_b: float | None = None,
    tokens_t: float | None = None,
    objective: str | None = None,
    days: float | None = None,
    budget: float | None = None,
    reach: str | None = None,
    min_nodes: bool = False,
    node: list[str] | None = None,
    max_nodes: int | None = None,
    compression: str | None = None,
    inner_steps: str | None = None,
    group_sizes: str | None = None,
    fractions: str | None = None,
    pipeline_multiples: str | None = None,
    activation_compression: str | None = None,
    uncertainty: int | None = None,
    seed: int | None = None,
    levels: str | None = None,
    prob: list[str] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Progress = None,
) -> TargetAnswer:
    """`dtsim target` without --solve: the cheapest or fastest configuration that reaches a target
    within the time limit (analysis/search.py), or the inverse queries (--min-nodes, --reach), with the
    answer's warnings and, with `uncertainty`, its Monte Carlo; `payload` is `dtsim target --json`."""
    from dtsim.analysis.search import DEFAULT_DAYS, Target, search

    refuse_node_groups(base, None)
    from dtsim.analysis.space_options import space_from_options
    from dtsim.analysis.uncertainty import answer_monte_carlo, answer_warnings, parse_levels

    days = DEFAULT_DAYS if days is None else days
    max_nodes = 100_000 if max_nodes is None else max_nodes
    if objective is not None and (reach is not None or min_nodes):
        query = "--reach" if reach is not None else "--min-nodes"
        what = "the most compute a budget buys" if reach is not None else "the fewest nodes"
        raise ScenarioError([("--objective", objective, f"does not apply to {query}: it asks for {what}")])
    objective = "cost" if objective is None else objective
    given = [x is not None for x in (local_flop, quality_flop)] + [
        params_b is not None or tokens_t is not None
    ]
    named = [
        flag
        for flag, on in zip(("--local-flop", "--quality-flop", "--params-b/--tokens-t"), given, strict=True)
        if on
    ]
    if reach is not None:
        if any(given):
            raise ScenarioError([("--reach", reach, "is a query without a target; drop the target options")])
        if reach not in ("local", "quality"):
            raise ScenarioError([("--reach", reach, "must be local or quality")])
        if budget is None:
            raise ScenarioError([("--budget", None, "the --reach query needs a budget in USD")])
        if uncertainty is not None:
            raise ScenarioError(
                [("--uncertainty", uncertainty, "needs a target (it checks the answer to a target)")]
            )
        tgt, obj = None, "reach"
    else:
        if sum(given) != 1:
            raise ScenarioError(
                [
                    (
                        "target",
                        " and ".join(named) or "none given",
                        "give exactly one: --local-flop X, --quality-flop X, or --params-b P --tokens-t D",
                    )
                ]
            )
        if local_flop is not None:
            tgt = Target("local", local_flop)
        elif quality_flop is not None:
            tgt = Target("quality", quality_flop)
        else:
            tgt = Target("model", params_b=params_b, tokens_t=tokens_t)
        if objective not in ("cost", "time"):
            raise ScenarioError([("--objective", objective, "must be cost or time")])
        obj = objective
    if min_nodes:
        if not node or len(node) != 1:
            raise ScenarioError([("--node", node, "--min-nodes needs exactly one node preset")])
        if tgt is None:
            raise ScenarioError([("--min-nodes", True, "needs a target")])
        obj = "cost"  # one preset: the cheapest run is the one with the fewest nodes
    space = space_from_options(
        node,
        max_nodes,
        compression,
        inner_steps,
        group_sizes,
        fractions,
        pipeline_multiples,
        activation_compression,
        tgt.params_b if tgt is not None and tgt.kind == "model" else None,
        base.precision.value,
    )
    res = search(
        base,
        space,
        tgt,
        objective=obj,
        days_limit=days,
        budget=budget,
        reach_metric=reach or "quality",
        progress=progress,
        scheduler=scheduler,
        workers=workers,
    )
    mc = None
    if uncertainty is not None and res.winner is not None:
        w = res.winner
        mc = answer_monte_carlo(
            base,
            w.scenario_fields(),
            w.tokens_t,
            dists,
            uncertainty,
            days,
            seed,
            parse_levels(levels),
            scheduler=scheduler,
            workers=workers,
            probs=prob or [],
        )
    w = res.winner
    notes = [] if w is None else answer_warnings(base, w.scenario_fields(), w.tokens_t)
    payload = {
        "target": tgt.describe() if tgt else None,
        "objective": obj,
        "days_limit": days,
        "budget_usd": budget,
        # what each configuration's reach_within_limit counts: the target's own measure
        "reach_unit": {
            "model": "tokens",
            "local": "local-equivalent FLOP",
            "quality": "quality-adjusted FLOP",
        }[tgt.kind if tgt else str(reach)],
        "search": {
            "kind": "exhaustive over the grid; cheapest: node count refined to the smallest integer",
            "configurations": res.configurations,
            "node_counts": len(res.space.node_counts),
            "rows_evaluated": res.rows,
            "refined_rows": res.refined_rows,
            # rows that reach the target in less than one outer step (or on under 1M tokens): not runs
            "not_a_run_rows": res.not_a_run,
            "seconds": res.seconds,
        },
        "winner": row_dict(w),
        "winner_warnings": notes,
        "modes": {
            m: {"best": row_dict(res.by_mode.get(m) or res.closest.get(m)), "verdict": why}
            for m, why in res.explanation.items()
        },
    }
    if min_nodes and w is not None:
        payload["min_nodes"] = w.num_nodes
    if mc is not None:
        payload |= mc.json_parts()
    payload |= at_point(dists, uncertainty)
    return TargetAnswer(res, tgt, obj, days, notes, mc, payload)


def at_point(dists, uncertainty) -> dict[str, Any]:
    """`distributions_at_point` of a searched answer's JSON (as simulate's): inputs given as
    distributions without `uncertainty` ran at their medians, which the JSON says (the CLI's text says it
    on stderr; the API's answer had said nothing)."""
    if uncertainty is not None or not dists:
        return {}
    return {"distributions_at_point": {k: v.describe() for k, v in dists.items()}}


@dataclass
class SolveAnswer:
    sol: Any  # analysis.search.Solution
    question: str
    notes: list[dict[str, str]]
    in_time: float
    mc: Any
    payload: dict[str, Any]


def refuse_node_groups(base, solve: str | None) -> None:
    """`target` searches configurations of one node kind (analysis.search.NodeSpec). Node groups that all
    run the base's node (groups that differ in region and links only) are that kind: `--solve days` and
    `--solve parameters_b` hold their count and run them. Anything else would describe and price the
    base's own node, not the groups' (a trial user saw 12 × 16× GH200, 192 GPUs, for groups of H100 and
    B200 nodes), or vary the count the groups fix: it is refused, naming what answers it."""
    groups = getattr(base, "_groups", None)
    if groups is None:
        return
    mine = (base.gpu, base.gpus_per_node, base.pflops_per_node, base.vram_per_node_gb)
    own = [(g.gpu, g.gpus_per_node, g.pflops_per_node, g.vram_per_node_gb) == mine for g in groups]
    if solve in ("days", "parameters_b") and all(own):
        return
    what = (
        "its node count is the node groups' total"
        if all(own)
        else "the node groups run other hardware than the base's node, which target would describe and price"
    )
    raise ScenarioError(
        [
            (
                "node_groups",
                f"{len(groups)} groups",
                f"target {'--solve ' + solve if solve else 'searches'} configurations of one node kind, and {what}: "
                "ask `dtsim simulate` for the groups' days, `dtsim sweep --vary inner_steps=… --vary "
                "compression=…` for what target's search varies"
                + (
                    ", or `target --solve days|parameters_b` where every group runs the base's node"
                    if solve != "days" or not all(own)
                    else ""
                ),
            )
        ]
    )


def solve_question(sol) -> str:
    """A `target --solve` answer as a sentence."""
    hw = f"{sol.num_nodes:,} × {sol.node.id}"
    model = f"{sol.params_b:,.4g}B parameters on {sol.tokens_t:,.4g}T tokens"
    if sol.solve == "parameters_b":
        return f"{sol.value:,.4g}B parameters ({sol.tokens_t:,.4g}T tokens) within {sol.days_limit:,.4g} days on {hw}"
    if sol.solve == "num_nodes":
        return f"{hw} train {model} within {sol.days_limit:,.4g} days (it takes {sol.run.days:,.4g} days)"
    return f"{sol.value:,.4g} days to train {model} on {hw}"


def target_solve(
    base,
    dists,
    solve: str,
    *,
    params_b: float | None = None,
    tokens_t: float | None = None,
    days: float | None = None,
    node: list[str] | None = None,
    max_nodes: int | None = None,
    others: dict[str, Any] | None = None,
    compression: str | None = None,
    inner_steps: str | None = None,
    group_sizes: str | None = None,
    activation_compression: str | None = None,
    uncertainty: int | None = None,
    seed: int | None = None,
    levels: str | None = None,
    prob: list[str] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
) -> SolveAnswer:
    """`target --solve`: one direct question (analysis.search.solve) on one node kind — the largest
    model, the fewest nodes or the days — its answer, the configuration that gives it and the limiting
    factor; `others` (option → value) are the options that do not go with it. `payload` is the
    `--json` output."""
    from dtsim.analysis.search import DEFAULT_DAYS, SOLVABLE, NodeSpec
    from dtsim.analysis.search import solve as solve_for
    from dtsim.analysis.space_options import space_from_options
    from dtsim.analysis.uncertainty import (
        answer_fields,
        answer_monte_carlo,
        answer_scenario,
        answer_warnings,
        parse_levels,
    )

    if solve not in SOLVABLE:
        raise ScenarioError([("--solve", solve, "must be parameters_b, num_nodes or days")])
    refuse_node_groups(base, solve)
    for option, value in (others or {}).items():
        if value is not None:
            raise ScenarioError(
                [
                    (
                        option,
                        value,
                        f"does not go with --solve {solve}; drop it (--solve asks one question of one node kind: "
                        "no compute target, budget, objective or model-size grid)",
                    )
                ]
            )
    if solve == "days" and days is not None:
        raise ScenarioError([("--days", days, "is the answer of --solve days; drop it")])
    if solve != "num_nodes" and max_nodes is not None:
        raise ScenarioError(
            [
                (
                    "--max-nodes",
                    max_nodes,
                    f"bounds --solve num_nodes only; --solve {solve} runs on the base's "
                    "num_nodes (--set num_nodes=N)",
                )
            ]
        )
    if node is not None and len(node) != 1:
        raise ScenarioError([("--node", node, "--solve takes one node preset (default: the base's node)")])
    space = space_from_options(  # H, compression, hierarchy; solve() sets the node, counts and sizes
        nodes=node,
        max_nodes=1,
        compression=compression,
        inner_steps=inner_steps,
        group_sizes=group_sizes,
        fractions=None,
        pipeline_multiples=None,
        activation_compression=activation_compression,
        params_b=None,
        precision=base.precision.value,
    )
    spec = space.nodes[0] if node else NodeSpec.from_scenario(base)
    limit = DEFAULT_DAYS if days is None and solve != "days" else days
    sol = solve_for(
        base,
        space,
        solve,
        spec,
        days_limit=limit,
        params_b=params_b,
        tokens_t=tokens_t,
        max_nodes=100_000 if max_nodes is None else max_nodes,
    )
    mc = None
    # --solve days has no limit: the chance is of finishing by the answer itself, with a relative 1e-9
    # so that draws that do not move the days (std 3e-15) count as in time, not half of them by noise
    in_time = sol.days_limit if sol.days_limit is not None else sol.run.days * (1.0 + 1e-9)
    if uncertainty is not None:
        mc = answer_monte_carlo(
            base,
            sol.run.scenario_fields(),
            sol.tokens_t,
            dists,
            uncertainty,
            in_time,
            seed,
            parse_levels(levels),
            scheduler=scheduler,
            workers=workers,
            probs=prob or [],
        )
    question = solve_question(sol)
    answer = answer_scenario(
        base, sol.run.scenario_fields(), sol.tokens_t
    )  # once, for its warnings and fields
    notes = answer_warnings(base, sol.run.scenario_fields(), sol.tokens_t, answer)
    payload = {
        "solve": sol.solve,
        "question": question,
        "answer": int(sol.value) if sol.solve == "num_nodes" else sol.value,
        "limiting_factor": sol.limit.factor,
        "limit": {
            "factor": sol.limit.factor,
            "bottleneck": sol.limit.bottleneck,
            "bottleneck_share": sol.limit.share,
            "why": sol.limit.why,
        },
        "node": sol.node.id,
        "node_name": sol.node.name,
        "num_nodes": sol.num_nodes,
        "parameters_b": sol.params_b,
        "tokens_t": sol.tokens_t,
        "tokens": sol.tokens_rule,
        "days_limit": sol.days_limit,
        "configuration": row_dict(sol.run),
        "scenario_fields": answer_fields(answer),
        "warnings": notes,
        "beyond": None
        if sol.beyond_value is None
        else {
            # the run just past the answer: a slightly larger model, or one node fewer
            "parameters_b": sol.beyond_value if sol.solve == "parameters_b" else sol.params_b,
            "num_nodes": int(sol.beyond_value) if sol.solve == "num_nodes" else sol.num_nodes,
            "days": sol.beyond.days if sol.beyond is not None else None,
            "runs": sol.beyond is not None,
        },
        "search": {
            "kind": "target searches over H, compression and hierarchy on one node kind",
            "searches": sol.searches,
            "rows_evaluated": sol.rows,
            "seconds": sol.seconds,
        },
    }
    if mc is not None:
        payload |= mc.json_parts()
    payload |= at_point(dists, uncertainty)
    return SolveAnswer(sol, question, notes, in_time, mc, payload)


# --- dtsim governance ---------------------------------------------------------------------------------------


@dataclass
class GovernanceAnswer:
    res: Any  # analysis.governance.GovernanceResult
    held: dict[tuple[int, float], dict[str, Any]]
    payload: dict[str, Any]


def governance_analysis(
    base,
    dists,
    *,
    compute_cap: str = "16,8,4,2,1",
    memory_cap: str | None = "2048,1280,1024,512,256",
    base_compute_cap: float = 16.0,
    targets: str = "1e24,1e25,1e26",
    metric: str = "quality",
    days: float | None = None,
    gpu: list[str] | None = None,
    precisions: str = "fp16,fp8",
    max_nodes: int = 100_000,
    uncertainty: int | None = None,
    seed: int | None = None,
    levels: str | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Progress = None,
) -> GovernanceAnswer:
    """`dtsim governance`: for each per-node cap, the largest node of each accelerator under it, the
    cheapest way to reach each target with such nodes and the legitimate systems it catches
    (analysis/governance.py); with `uncertainty`, how sure each cheapest run is. `payload` is `--json`."""
    from dtsim import catalog
    from dtsim.analysis.governance import analyse, answers_held
    from dtsim.analysis.search import DEFAULT_DAYS
    from dtsim.analysis.space_options import caps_from_options, parse_values
    from dtsim.analysis.uncertainty import parse_levels
    from dtsim.assumptions import Assumptions
    from dtsim.physics.memory import PRECISIONS

    days = DEFAULT_DAYS if days is None else days
    for flag, text in (("--compute-cap", compute_cap), ("--memory-cap", memory_cap), ("--targets", targets)):
        # an empty or `none` cap list means no such caps (caps_from_options), as before
        if flag == "--targets" or (text and text.strip().lower() != "none"):
            values = parse_values(flag, text, ())
            for v in values:  # numbers only: `auto` is for search spaces
                if isinstance(v, str):
                    raise ScenarioError([(flag, text, f"{v!r} is not a number")])
            # a repeated cap ran twice, side by side; a repeated target was already refused
            counts = collections.Counter(float(x) for x in values)
            repeated = sorted(x for x, n in counts.items() if n > 1)
            if repeated:
                raise ScenarioError(
                    [(flag, text, f"repeats {', '.join(f'{x:g}' for x in repeated)}; give each once")]
                )
    caps = caps_from_options(compute_cap, memory_cap, base_compute_cap)
    tgts = tuple(float(x) for x in parse_values("--targets", targets, ()))
    precs = tuple(p.strip().lower() for p in precisions.split(",") if p.strip())
    allowed = f"{', '.join(PRECISIONS[:-1])} or {PRECISIONS[-1]}"
    if not precs:
        raise ScenarioError([("--precisions", precisions, f"give at least one: {allowed}")])
    for p in precs:
        if p in PRECISIONS and all(g in catalog.gpus() for g in gpu or ()):  # an unknown --gpu: named below
            searched = gpu or list(catalog.gpus())
            able = [g for g in catalog.gpus() if catalog.gpus()[g].peak_tflops(p) is not None]
            if not set(searched) & set(able):
                raise ScenarioError(
                    [
                        (
                            "--precisions",
                            precisions,
                            f"{p}: none of {', '.join(searched)} has an {p.upper()} datapath "
                            f"({', '.join(able)} do)",
                        )
                    ]
                )
        if p not in PRECISIONS:
            raise ScenarioError(
                [
                    (
                        "--precisions",
                        precisions,
                        f"each must be {', '.join(PRECISIONS[:-1])} or {PRECISIONS[-1]}",
                    )
                ]
            )
    res = analyse(
        base,
        caps,
        tgts,
        metric,
        days,
        gpus=gpu,
        precisions=precs,
        max_nodes=max_nodes,
        progress=progress,
        scheduler=scheduler,
        workers=workers,
    )
    held: dict[tuple[int, float], dict[str, Any]] = {}
    if uncertainty is not None:
        held = answers_held(
            res, base, dists, uncertainty, days, seed, parse_levels(levels), scheduler, workers
        )
    # what simulate says of each cap's cheapest run (an answer shown without its own warnings hid a node
    # that cannot hold streaming's state, a run past the useful length: target gives its winner's)
    from dtsim.analysis.governance import scenario_fields as cell_fields
    from dtsim.analysis.uncertainty import answer_warnings

    said = {
        (ci, k): [w["code"] for w in answer_warnings(base, cell_fields(res, v), v["tokens_t"])]
        for ci, cr in enumerate(res.caps)
        for k, v in cr.cheapest.items()
        if v is not None
    }

    def cell(ci: int, k: float, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return None
        return {**v, "warnings": said[(ci, k)], **({"uncertainty": held[(ci, k)]} if (ci, k) in held else {})}

    payload = {
        "metric": res.metric,
        "days_limit": res.days_limit,
        "search": {
            "kind": "exhaustive over one grid shared by every cap",
            "configurations": res.configurations,
            "rows_evaluated": res.rows,
            "seconds": res.seconds,
        },
        "caps": [
            {
                "cap": {"h100_equivalents": cr.cap.h100_equivalents, "memory_gb": cr.cap.memory_gb},
                "largest_nodes": cr.largest,
                "cheapest": {f"{k:g}": cell(ci, k, v) for k, v in cr.cheapest.items()},
                # targets (no cheapest run) its nodes reach only in less than one outer step: not a run
                "not_a_run": [f"{k:g}" for k in cr.cheapest if k in cr.not_a_run],
                "caught": [s.id for s in cr.caught],
            }
            for ci, cr in enumerate(res.caps)
        ],
        "systems": [
            {
                "id": s.id,
                "name": s.name,
                "h100_equivalents": s.h100_equivalents(Assumptions()),
                "memory_gb": s.memory_gb,
            }
            for s in res.systems
        ],
    }
    payload |= at_point(dists, uncertainty)
    return GovernanceAnswer(res, held, payload)


# --- dtsim sweep --------------------------------------------------------------------------------------------


def grid_columns(result, names: list[str] | None = None) -> dict[str, list[Any]]:
    """A grid's columns (all, or `names`) as JSON values: numbers as Python numbers, an undefined value
    (NaN: no run defined at a point) as null, never NaN; with warning_bits, `warnings`: each point's
    warning codes (its warning_bits decoded, as simulate names them). A count (a scenario's integer field, or an
    integer of simulate's result: inner_steps_used, auto_inner_steps, ...) is an integer, as simulate
    writes it, and regional_steps_used is null where the point's mode has no regional tier, as there."""
    import numpy as np

    from dtsim.models.decentralized.result import NOT_APPLICABLE, Result
    from dtsim.models.decentralized.strategies import MODE_IDS
    from dtsim.schema.fields import INTEGER_FIELDS

    counts = set(INTEGER_FIELDS) | {
        k for k, f in Result.model_fields.items() if f.annotation in (int, int | None)
    }
    out = {}
    if "warning_bits" in result.columns and (
        names is None or "warning_bits" in names
    ):  # as simulate names them
        from dtsim.models.decentralized.warning_rules import codes_of

        bits = np.asarray(result.columns["warning_bits"], dtype=np.int64).tolist()
        out["warnings"] = codes_of(bits)
    # the columns NOT_APPLICABLE reads: the grid keeps each point's mode by name
    frame = {**result.columns}
    if "mode" in frame:
        frame["mode_code"] = np.asarray([MODE_IDS.index(m) for m in frame["mode"]])
    for k in result.columns if names is None else names:
        v = np.asarray(result.columns[k])
        applies = ~NOT_APPLICABLE[k](frame) if k in NOT_APPLICABLE and "mode" in frame else True
        if v.dtype.kind not in "fi" or (v.dtype.kind == "i" and k not in NOT_APPLICABLE):
            out[k] = v.tolist()
            continue
        finite = np.isfinite(v) & applies
        if k in counts and np.all(v[finite] == np.round(v[finite])):
            out[k] = [int(x) if f else None for x, f in zip(v.tolist(), finite.tolist(), strict=True)]
        else:
            out[k] = np.where(finite, v, None).tolist()
    return out


def json_ready(x: Any) -> Any:
    """`x` as the JSON an API answer holds, in one walk: a NumPy scalar as its Python value, a non-finite
    number as null (JSON has no NaN or infinity), tuples as lists, anything else json.dumps cannot write
    as json_default writes it; the CLI's `--json` (cli/common.json_text) gives the same document."""
    if isinstance(x, bool | int | str) or x is None:
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_ready(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_ready(v) for v in x]
    value = json_default(x)
    return value if isinstance(value, str) else json_ready(value)


_NOT_FINITE = object()


def json_text(
    payload: Any,
    indent: int | None = 2,
    default: Callable[[Any], Any] | None = None,
    not_finite: list[str] | None = None,
) -> str:
    """`payload` as strict JSON: a value that is not finite (NaN, ±Infinity: an undefined or unbounded
    quantity) is written as null and its place (`a.b[2]`) appended to `not_finite` when given, so the
    text parses with any JSON reader (RFC 8259 has no NaN or Infinity). `dtsim … --json` names those
    places on stderr (cli/common.json_text); the pages' JSON is this text."""
    import json

    loose = json.dumps(payload, indent=indent, default=default)  # once; again only if not finite
    if "NaN" not in loose and "Infinity" not in loose:
        return loose
    data = json.loads(loose, parse_constant=lambda _: _NOT_FINITE)
    where = [] if not_finite is None else not_finite

    def clean(value: Any, path: str) -> Any:
        if value is _NOT_FINITE:
            where.append(path or "(the value)")
            return None
        if isinstance(value, dict):
            return {k: clean(v, f"{path}.{k}" if path else k) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    return json.dumps(clean(data, ""), indent=indent, allow_nan=False)


def json_default(x: Any) -> Any:
    """json.dumps's fallback of the analysis payloads: a NumPy scalar as its Python value, else text."""
    import numpy as np  # lazy (fast --help); loaded already whenever a numpy value is serialised

    if isinstance(x, np.generic):
        return x.item()
    return str(x)


# --- the --uncertainty options (sweep, target, governance, step, plan, limits) -----------------------------


def uncertainty_flags_alone(uncertainty: int | None, **flags: Any) -> None:
    """An --uncertainty companion flag (`--seed`, `--levels`, … by name) given without --uncertainty is
    an error naming it; with --uncertainty, a bad count, `--seed` or `--levels` fails here, before any
    search, grid or model runs."""
    given = [(k, v) for k, v in flags.items() if not (v is None or v is False or v == [])]  # 0 is given
    if uncertainty is None:
        if given:
            raise ScenarioError([(given[0][0], given[0][1], "needs --uncertainty N")])
        return
    from dtsim.analysis.uncertainty import check_seed, parse_levels, sample_count

    sample_count(uncertainty)
    check_seed(flags.get("--seed"))
    parse_levels(flags.get("--levels"))


def uncertain_base(file, preset, set_, uncertainty, seed, levels, fixed_assumptions, corr):
    """The base scenario and its distributions (load_uncertain_scenario; the assumptions table's only
    when drawing), after checking the --uncertainty options (uncertainty_flags_alone). Without
    --uncertainty the distributions given run at their medians (the CLI says so on stderr)."""
    from dtsim.analysis.uncertainty import load_uncertain_scenario

    uncertainty_flags_alone(
        uncertainty,
        **{"--seed": seed, "--levels": levels, "--fixed-assumptions": fixed_assumptions, "--corr": corr},
    )
    return load_uncertain_scenario(
        file,
        preset,
        set_ or [],
        fixed_assumptions=fixed_assumptions or uncertainty is None,
        corr_texts=corr or [],
    )


# --- dtsim step, plan, collective, fabric (the datacenter commands) ----------------------------------------


def check_attention_kernel(kernel: str | None, no_flash: bool) -> str:
    """The attention kernel a command runs (FlashAttention-2 unless given); refuses an unknown one and
    one given beside --no-flash-attention, which runs no FlashAttention kernel."""
    from dtsim.models.datacenter.workload import attention_kernel_problems

    if kernel is None:
        return "flash2"
    problems = attention_kernel_problems(kernel, name="--attention-kernel")
    if not problems and no_flash:
        problems = [("--attention-kernel", kernel, "needs FlashAttention: drop --no-flash-attention")]
    if problems:
        raise ScenarioError(problems)
    return kernel


# The cluster's and the model shape's inputs, named as the CLI's flags are (with underscores) and as the
# API's body fields and the /step and /plan views' inputs are
CLUSTER_FLAGS = (
    "gpu",
    "nodes",
    "gpus_per_node",
    "fabric",
    "nics_per_node",
    "nic_gbps",
    "nvlink_gbps",
    "nvlink_domain",
    "torus",
    "oversubscription",
    "nvls",
)
SHAPE_FLAGS = ("hidden", "layers", "heads", "kv_heads", "ffn", "ffn_type", "vocab", "seq_len")


def model_architecture(
    model: str | dict[str, Any] | None,
    shape: dict[str, Any],
    name=lambda field: "--" + field.replace("_", "-"),
):
    """The Architecture of a catalog id or of an architecture's fields (a file's contents), the shape
    fields given (not None) overriding it; without a model, of the shape fields alone. Never reads a
    file (the HTTP API's way in); `name` shows a shape field in the message when one is missing."""
    from dtsim.models.datacenter.workload import build  # lazy: pydantic models (fast `dtsim --help`)
    from dtsim.physics.transformer import Architecture, get_architecture

    given = {k: v for k, v in shape.items() if v is not None}
    if isinstance(model, dict):
        return build(Architecture, {**model, **given}, "model.")
    if model is not None:
        arch = get_architecture(model)
        if given:
            fields = arch.model_dump(exclude_none=True)
            # a changed shape is no longer the catalog's model: its name says what changed (the
            # sequence length is the run's, not the model's)
            changed = {k: v for k, v in given.items() if k != "seq_len" and fields.get(k) != v}
            if changed:
                edits = ", ".join(f"{k} {v}" for k, v in changed.items())
                fields["name"] = f"{arch.name} modified ({edits})"
            return build(Architecture, {**fields, **given}, "model.")
        return arch
    missing = [k for k in ("hidden", "layers", "heads", "vocab", "seq_len") if k not in given]
    if missing:
        raise ScenarioError(
            [
                (
                    "model",
                    None,
                    f"give {name('model')} or the shape fields; missing: "
                    + ", ".join(name(m) for m in missing),
                )
            ]
        )
    return build(Architecture, {"name": "custom", **given}, "model.")


def step_layouts(
    rows: list[dict[str, Any]],
    base: dict[str, Any],
    run: dict[str, Any],
    doc,
    software: str | None = None,
    explicit: Collection[str] = (),
    name: str = "software",
):
    """Each row's layout (the flags filling what it leaves out) stepped; every bad row is reported,
    named `layouts[i].field`. A software profile (`software`, or a row's own `software` column) gives
    the defaults of the fields neither the row nor an `explicit` flag sets, with its rules resolved for
    the row's tp (an unknown profile is named `name`, or `layouts[i].software`). A row's `name` (text of
    at most 80 characters) labels its result. Returns (result, profile id or None, name or None) per
    row."""
    from dtsim.models.datacenter.software import apply_software
    from dtsim.models.datacenter.step import layout_problems, steps
    from dtsim.models.datacenter.workload import Layout, Workload, build

    built, problems, profiles, labels = {}, [], {}, {}
    switches = {n for n, f in Layout.model_fields.items() if f.annotation in (bool, bool | None)}
    for i, row in enumerate(rows):
        row = dict(row)
        own = row.pop("software", None)
        profiles[i] = own if own is not None else software
        label = row.pop("name", None)
        try:
            if label is not None:
                if isinstance(label, bool) or not isinstance(label, str | int | float):
                    raise ScenarioError(
                        [(f"layouts[{i}].name", label, "must be text: a label for the row's result")]
                    )
                label = str(label).strip() or None
                if label is not None and len(label) > 80:
                    raise ScenarioError([(f"layouts[{i}].name", label[:40] + "…", "at most 80 characters")])
            labels[i] = label
            wrong = [
                (f"layouts[{i}].{k}", v) for k, v in row.items() if isinstance(v, bool) and k not in switches
            ]
            if wrong:  # a file's true/false is not a count (pydantic would read true as 1)
                raise ScenarioError(
                    [
                        (k, str(v).lower(), "must be a number; true/false are for the switches")
                        for k, v in wrong
                    ]
                )
            fields = {**base, **row}
            if profiles[i] is not None:
                where = f"layouts[{i}].software" if own is not None else name
                fields = apply_software(profiles[i], fields, {*explicit, *row}, where)
            built[i] = build(Layout, fields, f"layouts[{i}].")
        except ScenarioError as exc:
            problems += exc.problems
    if not built:
        raise ScenarioError(problems)
    try:
        workload = build(Workload, {**run, "layout": next(iter(built.values()))})
    except ScenarioError as exc:  # a bad run flag: reported with every bad row
        raise ScenarioError(exc.problems + problems) from None
    if problems:  # every bad row at once: the rules the rows that did build break, too
        prefixes = [f"layouts[{i}]." for i in built]
        raise ScenarioError(problems + layout_problems(workload, list(built.values()), prefixes))
    # all rows in one vectorized evaluation; steps() names a row's broken rule layouts[i].field
    results = steps(workload, list(built.values()), calibration=doc)
    return [(r, profiles[i], labels[i]) for i, r in zip(built, results, strict=True)]


def with_software(payload: dict[str, Any], software: str | None, gpu: str | None = None) -> dict[str, Any]:
    """An answer (step, plan, target-size) naming the software profile its layouts took their defaults
    from, when one did (`software`), as the CLI's --json, the API and the pages give it, and
    `software_note` when the stack does not run on the answer's accelerator (a CUDA stack on a TPU)."""
    if software is not None:
        from dtsim.models.datacenter.software import accelerator_note

        payload["software"] = software
        note = accelerator_note(software, gpu or payload.get("gpu"))  # a target-size answer names no gpu
        if note:
            payload["software_note"] = note
    return payload


def step_payload(result: Any, software: str | None, name: str | None = None) -> dict[str, Any]:
    """A step result as JSON (`dtsim step --json`, /api/step) with its software profile and, for a
    row of a batch that names itself, its `name`."""
    payload = with_software(result.model_dump(mode="json"), software)
    if name is not None:
        payload["name"] = name
    return payload


def layout_label(lay: dict[str, Any]) -> str:
    """A compact one-line layout: dp·tp·pp(·vpp) with the switches that differ from the defaults."""
    parts = [f"dp{lay['dp']} tp{lay['tp']} pp{lay['pp']}" + (f" v{lay['vpp']}" if lay["vpp"] > 1 else "")]
    if lay.get("cp", 1) > 1:
        parts.append(f"cp{lay['cp']}")
    if lay.get("ep", 1) > 1:
        parts.append(f"ep{lay['ep']}")
    parts.append(f"mbs{lay['mbs']} zero{lay['zero']} rc:{lay['recompute']}")
    if lay.get("shard_group"):
        parts.append(f"shard{lay['shard_group']}")
    if lay.get("pp_layers"):
        parts.append("layers " + "/".join(map(str, lay["pp_layers"])))
    if lay["sequence_parallel"]:
        parts.append("sp")
    parts.append(lay["schedule"])
    if lay["embedding_stages"] == "balanced":
        parts.append("emb-balanced")
    return " ".join(parts)


# plan --target-params-b's shapes unless given: GPT-2's vocabulary, GPT-3's 2,048-token sequence
TARGET_VOCAB, TARGET_SEQ_LEN = 50257, 2048


def target_shape_conflicts(given: dict[str, Any], names: dict[str, str] | None = None) -> None:
    """Refuse, with the target search, a model or shape field the search would not use (it chooses the
    shape; only vocab and seq_len are kept): `given` holds the fields the user gave, by field name;
    `names` how each is shown (the CLI's flags)."""
    chosen = ("model", *(f for f in SHAPE_FLAGS if f not in ("vocab", "seq_len")))
    names = names or {}
    problems = [
        (
            names.get(f, f),
            given[f],
            "the target search chooses the shape (it keeps vocab and seq_len only); not with a target size",
        )
        for f in chosen
        if given.get(f) is not None
    ]
    if problems:
        raise ScenarioError(problems)


def target_size_payload(
    target_params_b: float, cluster, opt, vocab: int | None, seq_len: int | None, top: int, doc
) -> dict[str, Any]:
    """The JSON of `dtsim plan --target-params-b --json` (and of POST /api/plan with target_params_b):
    the `top` fastest model shapes near the target, each with its best layout (plan_by_size; a GPT-2
    vocabulary and a 2,048-token sequence unless given)."""
    from dtsim.models.datacenter.plan import plan_by_size

    rows, searched = plan_by_size(
        target_params_b * 1e9, cluster, opt, vocab or TARGET_VOCAB, seq_len or TARGET_SEQ_LEN, calibration=doc
    )
    return {"target_params_b": target_params_b, "shapes_searched": searched, "shapes": rows[:top]}


MAX_RANKS = 10**9  # ranks a collective may span (CLI, page and POST /api/collective alike)


MAX_MESSAGE_MB = 1e9  # a petabyte: beyond any model's gradients (1e15 bytes), and times stay readable


def collective_result(
    op: str,
    algorithm: str,
    ranks: int,
    size_mb: float,
    fabric: str | None,
    bandwidth_gbs: float | None,
    latency_us: float | None,
    hop_km: float,
    torus: str | None,
):
    """`dtsim.collective` at the CLI's units (MB, GB/s, µs): the result whose as_dict() is the JSON of
    `dtsim collective --json` and of POST /api/collective; a problem names the input as these
    arguments do (size_mb, not the library's size_bytes)."""
    from dtsim.models.network import collective as run_collective

    if not 1 <= ranks <= MAX_RANKS:
        raise ScenarioError([("ranks", ranks, f"must be an integer between 1 and {MAX_RANKS:,}")])
    if not 0 < size_mb <= MAX_MESSAGE_MB:
        raise ScenarioError([("size_mb", size_mb, f"must be > 0 and ≤ {MAX_MESSAGE_MB:g} (a petabyte)")])
    # each named alone (the pair "(0.0, None): must be > 0 and ≥ 0" left a user to guess which)
    problems = []
    # bounds as dataparallel's: 1e308 GB/s overflowed to inf B/s, 1e-320 GB/s to an infinite time
    if bandwidth_gbs is not None and not (1e-9 < bandwidth_gbs <= 1e9):
        problems.append(("bandwidth_gbs", bandwidth_gbs, "must be a bus bandwidth > 1e-9 and ≤ 1e9 GB/s"))
    if latency_us is not None and not (0 <= latency_us <= 1e9):
        problems.append(("latency_us", latency_us, "must be a per-step latency ≥ 0 and ≤ 1e9 µs"))
    if problems:
        raise ScenarioError(problems)
    try:
        return run_collective(
            op,
            ranks,
            size_mb * 1e6,
            algorithm,
            fabric,
            None if bandwidth_gbs is None else bandwidth_gbs * 1e9,
            None if latency_us is None else latency_us * 1e-6,
            hop_km,
            torus,
        )
    except ScenarioError as exc:
        names = {"size_bytes": ("size_mb", size_mb)}
        names["bandwidth_bytes_s/latency_s"] = ("bandwidth_gbs/latency_us", (bandwidth_gbs, latency_us))
        names["bandwidth_bytes_s"] = ("bandwidth_gbs", bandwidth_gbs)
        names["latency_s"] = ("latency_us", latency_us)
        raise ScenarioError([(*names.get(f, (f, v)), m) for f, v, m in exc.problems]) from None


# `dtsim.fabric`'s argument → (the CLI's input, named as its flag with underscores, and the factor from
# that input's unit to the argument's SI unit)
FABRIC_INPUTS: dict[str, tuple[str, float]] = {
    "cluster_power_w": ("cluster_power_gw", 1e9),
    "datacenters": ("datacenters", 1),
    "pod_power_w": ("pod_power_kw", 1e3),
    "pod_peak_flop_s": ("pod_pflops", 1e15),
    "parameters": ("params_t", 1e12),
    "tokens": ("tokens_t", 1e12),
    "bits_per_param": ("bits", 1),
    "train_days": ("train_days", 1),
    "network_fraction": ("network_fraction", 1),
    "sync_budget_s": ("sync_budget_ms", 1e-3),
    "ring_km": ("ring_km", 1),
    "hop_latency_s": ("hop_us", 1e-6),
    "critical_batch_k": ("critical_batch_k", 1),
}


def fabric_plan(values: dict[str, Any]):
    """`dtsim.fabric` of the CLI's inputs at its units (`values` keyed as FABRIC_INPUTS names them: GW,
    kW, PFLOP/s, trillions, ms, µs); a problem names the input that way, with the value given. Without a
    sync budget it is network_fraction × the batch time, except at the thesis's own batch and fraction,
    where it is the thesis's rounded 250 ms (CLI, API and page alike: the 250 ms had stood beside a
    0.24 µs batch)."""
    from dtsim.models.network import (
        FABRIC_MAX,
        THESIS_BATCH_INPUTS,
        THESIS_NETWORK_FRACTION,
        THESIS_SYNC_BUDGET_S,
    )
    from dtsim.models.network import fabric as plan

    values = {**values}
    if values.get("network_fraction") is None:
        values["network_fraction"] = THESIS_NETWORK_FRACTION
    batch = (values["tokens_t"], values["train_days"], values["critical_batch_k"])
    if (
        values.get("sync_budget_ms") is None
        and values["network_fraction"] == THESIS_NETWORK_FRACTION
        and batch == THESIS_BATCH_INPUTS
    ):
        values["sync_budget_ms"] = THESIS_SYNC_BUDGET_S * 1e3

    args = {
        k: (None if values[name] is None else values[name] * factor)
        for k, (name, factor) in FABRIC_INPUTS.items()
    }
    beyond = [  # the limits at the inputs' own units (a GW value past 1e300 overflowed to 'not finite')
        (name, values[name], f"must be ≤ {FABRIC_MAX[k] / factor:g}")
        for k, (name, factor) in FABRIC_INPUTS.items()
        if k in FABRIC_MAX
        and isinstance(values[name], int | float)
        and math.isfinite(values[name])
        and values[name] * factor > FABRIC_MAX[k]
    ]
    if beyond:
        raise ScenarioError(beyond)
    try:
        return plan(**args)
    except ScenarioError as exc:
        shown = {k: (name, values[name]) for k, (name, _) in FABRIC_INPUTS.items()}
        raise ScenarioError([(*shown.get(f, (f, v)), m) for f, v, m in exc.problems]) from None


def fabric_json(p) -> dict[str, Any]:
    """The JSON of `dtsim fabric --json` and of POST /api/fabric: the plan's fields, an unbounded
    bandwidth (no room left in the sync budget) as null, and `warnings` ({code, message}) saying what
    the text and the page say of a plan that does not hold."""
    out: dict[str, Any] = {k: (None if v == float("inf") else v) for k, v in p.__dict__.items()}
    return out | {"warnings": fabric_warnings(p)}


def mfu_text(need: float) -> str:
    """The MFU a fabric's schedule needs, in words: a percentage, or a multiple of the peak once past
    10× (a 1e-300 PFLOPS pod would print 300 digits)."""
    return f"{need:.1%}" if need <= 10 else f"{need:.3g}× the peak"


def fabric_warnings(p) -> list[dict[str, str]]:
    """A fabric plan that does not hold, in words: no bandwidth meets the sync budget (latency spends it)
    or the compute needs more than the cluster's peak (shared by the CLI, the API and the page)."""
    from dtsim.models.dataparallel import latency_spends_budget

    out = []
    if p.min_bandwidth_bits_s == float("inf"):
        why = latency_spends_budget(p.sync_budget_s, p.propagation_s, p.hop_s)
        out.append({"code": "NO_BANDWIDTH_SUFFICES", "message": why[0].upper() + why[1:] + "."})
    need = p.required_mfu
    if need > 1:
        shown = mfu_text(need)
        out.append(
            {
                "code": "SCHEDULE_NOT_MET",
                "message": f"Compute needs an MFU of {shown} over the compute share of the schedule: more "
                "than the cluster's peak, so the schedule cannot be met.",
            }
        )
    return out
