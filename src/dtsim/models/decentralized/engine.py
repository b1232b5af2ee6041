"""The simulation engine: scenarios → columns → decision tree → strategies → outputs.

There is one code path. `simulate(scenario)` encodes one scenario as a batch of one; `simulate_batch`
encodes arrays of any field. Both run `run_frame`, which derives the shared quantities (memory,
stages, step time, payloads), asks the decision tree for each row's mode, evaluates each strategy on
its own rows only (so a batch of flat-DiLoCo scenarios never pays for the pipeline formulas), and
then computes efficiency, χ, utilization, run length, cost and warnings for every row at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.models.decentralized import decision
from dtsim.models.decentralized.frame import Frame, scatter
from dtsim.models.decentralized.inner_steps import AUTO, AUTO_QUALITY, best_quality_steps
from dtsim.models.decentralized.strategies import REGISTRY
from dtsim.models.decentralized.strategies.base import BREAKDOWN_KEYS
from dtsim.physics import (
    collectives,
    compute,
    cost,
    efficiency,
    memory,
    pipeline,
    quality,
    runlength,
    stragglers,
)
from dtsim.physics.numeric import select
from dtsim.schema.scenario import (
    BOUNDS,
    INTEGER_FIELDS,
    Scenario,
    bound_text,
    check_alpha_domain,
    check_cross_fields,
    make_scenario,
)

# --- encoding -----------------------------------------------------------------------------------------

# Plain numeric fields: scenario field → (column, factor to SI).
NUMERIC = {
    "parameters_b": ("parameters", 1e9),
    "tokens_t": ("tokens", 1e12),
    "num_nodes": ("num_nodes", 1.0),
    "pflops_per_node": ("peak_flop_s", 1e15),
    "vram_per_node_gb": ("vram_bytes", 1e9),
    "bandwidth_up_mbps": ("up_bps", 1e6),
    "bandwidth_down_mbps": ("down_bps", 1e6),
    "latency_ms": ("latency_s", 1e-3),
    "mfu": ("mfu", 1.0),
    "compression": ("compression", 1.0),
    "activation_compression": ("activation_compression", 1.0),
    "local_batch_tokens": ("batch_tokens", 1.0),
    "micro_batches": ("micro_batches", 1.0),
    "nodes_per_group": ("nodes_per_group", 1.0),
    "regional_bandwidth_mbps": ("regional_bps", 1e6),
    "regional_latency_ms": ("regional_latency_s", 1e-3),
    "moe_layers": ("moe_layers", 1.0),
}
# Optional numeric fields: missing → NaN column.
OPTIONAL = {
    "active_parameters_b": ("active_parameters", 1e9),
    "hidden_size": ("hidden_size", 1.0),
    "max_run_days": ("max_run_days_in", 1.0),
    "gpus_per_node": ("gpus_per_node", 1.0),
}
ENUMS = {
    "precision": ("precision", memory.PRECISIONS),
    "straggler_strategy": ("straggler", stragglers.STRATEGIES),
    "expert_parallelism": ("ep_mode", memory.EP_MODES),
    "compression_scenario": ("compression_scenario", efficiency.COMPRESSION_SCENARIOS),
    "replica_penalty": ("replica_penalty", efficiency.REPLICA_PENALTIES),
}
BOOLS = {
    "moe": "moe",
    "streaming": "streaming",
    "hierarchical": "hierarchical",
    "error_feedback": "error_feedback",
    "pipeline_backward": "pipeline_backward",
}
GROWTH = ("hardware_growth", "software_growth", "investment_growth")
STEP_CODES = {"auto": AUTO, "auto-quality": AUTO_QUALITY}
# Derived per-scenario quantities that are returned with the outputs (as `details` in a Result).
FRAME_OUTPUTS = (
    "parameters",
    "compute_parameters",
    "shared_parameters",
    "expert_parameters",
    "ep_degree",
    "parameters_held",
    "memory_bytes",
    "stages",
    "n_eff",
    "step_flop",
    "step_flop_s",
    "ep_latency_s",
    "step_s",
    "payload_bits",
    "hidden",
    "handoff_bits",
    "pp_regional",
    "bytes_per_param",
    "bytes_per_value",
    "growth_oom",
)
BATCH_FIELDS = (
    *NUMERIC,
    *OPTIONAL,
    *ENUMS,
    *BOOLS,
    *GROWTH,
    "inner_steps",
    "regional_steps",
    "gpu",
    "node",
    "bandwidth_mbps",
)
# Fields a `node` array sets itself; varying them beside it would be ambiguous.
NODE_SET_FIELDS = ("gpu", "gpus_per_node", "pflops_per_node", "vram_per_node_gb", "precision")


def _enum_value(x: Any) -> str:
    return x.value if hasattr(x, "value") else x


def encode_scenario(s: Scenario) -> dict[str, Any]:
    """One scenario as scalar columns in SI units and integer codes."""
    cols: dict[str, Any] = {}
    for field, (col, factor) in NUMERIC.items():
        cols[col] = float(getattr(s, field)) * factor
    for field, (col, factor) in OPTIONAL.items():
        value = getattr(s, field)
        cols[col] = np.nan if value is None else float(value) * factor
    for field, (col, names) in ENUMS.items():
        cols[col] = names.index(_enum_value(getattr(s, field)))
    for field, col in BOOLS.items():
        cols[col] = bool(getattr(s, field))
    cols["inner_steps_in"] = float(STEP_CODES.get(s.inner_steps, s.inner_steps))  # type: ignore[arg-type]
    cols["regional_steps"] = float(STEP_CODES.get(s.regional_steps, s.regional_steps))  # type: ignore[arg-type]
    cols["growth_oom"] = sum(runlength.parse_growth(getattr(s, g)) for g in GROWTH)
    gpu = catalog.gpus().get(s.gpu) if s.gpu else None
    cols["gpu_price_usd"] = gpu.price_usd if gpu else np.nan
    cols["gpu_power_w"] = gpu.board_power_w if gpu else np.nan
    if gpu is None:
        cols["gpus_per_node"] = np.nan
    return cols


def _first_bad(field: str, values: np.ndarray, bad: np.ndarray, message: str) -> ScenarioError:
    i = int(np.flatnonzero(bad)[0])
    return ScenarioError(
        [(f"{field}[{i}]", values.flat[i].item() if values.ndim else values.item(), message)]
    )


def _map_strings(field: str, arr: np.ndarray, mapper) -> np.ndarray:
    """Apply a scalar mapper to each distinct value (fast for the few distinct values of enums)."""
    uniq, inverse = np.unique(arr.astype(str) if arr.dtype.kind in "OUS" else arr, return_inverse=True)
    mapped = []
    for i, u in enumerate(uniq):
        try:
            mapped.append(mapper(u.item() if hasattr(u, "item") else u))
        except ValueError as exc:
            raise _first_bad(field, arr, inverse == i, str(exc)) from None
    return np.asarray(mapped)[inverse]


def encode_array(field: str, values: Any, cols: dict[str, Any]) -> None:
    """Validate one batch field (an array) and write its columns into `cols`."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ScenarioError(
            [(field, f"array of shape {arr.shape}", "batch fields must be 1-D arrays or scalars")]
        )
    if field == "bandwidth_mbps":
        encode_array("bandwidth_up_mbps", arr, cols)
        encode_array("bandwidth_down_mbps", arr, cols)
        return
    if field in NUMERIC or field in OPTIONAL:
        col, factor = NUMERIC.get(field) or OPTIONAL[field]
        if arr.dtype.kind not in "iuf":
            raise ScenarioError([(field, f"array of {arr.dtype}", "must be numbers")])
        x = arr.astype(float)
        b = BOUNDS[field]
        ok = np.isfinite(x)
        if field in OPTIONAL:
            ok |= np.isnan(x)
        lo_ok = (x >= b["ge"]) if "ge" in b else (x > b["gt"])
        in_range = lo_ok & (x <= b["le"])
        if field in INTEGER_FIELDS:
            in_range &= x == np.floor(x)
        bad = ~(ok & (in_range | (np.isnan(x) & (field in OPTIONAL))))
        if bad.any():
            raise _first_bad(field, x, bad, bound_text(field))
        cols[col] = x * factor
    elif field in ENUMS:
        col, names = ENUMS[field]
        allowed = ", ".join(names)

        def to_code(v: Any) -> int:
            try:
                value = make_scenario({field: v}).__getattribute__(field)
            except ScenarioError:
                raise ValueError(f"must be one of {allowed}") from None
            return names.index(_enum_value(value))

        cols[col] = _map_strings(field, arr, to_code).astype(np.int8)
    elif field in BOOLS:
        if arr.dtype == bool:
            cols[BOOLS[field]] = arr
        else:
            cols[BOOLS[field]] = _map_strings(field, arr, _to_bool)
    elif field in ("inner_steps", "regional_steps"):
        extra = "'auto' or 'auto-quality'" if field == "inner_steps" else "'auto'"

        def to_steps(v: Any) -> float:
            if (
                isinstance(v, str)
                and v.strip().lower() in STEP_CODES
                and (field == "inner_steps" or v.strip().lower() == "auto")
            ):
                return STEP_CODES[v.strip().lower()]
            try:
                x = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"{bound_text(field)}, or {extra}") from None
            if not (x == np.floor(x) and 1 <= x <= BOUNDS[field]["le"]):
                raise ValueError(f"{bound_text(field)}, or {extra}")
            return x

        if arr.dtype.kind in "iuf":
            x = arr.astype(float)
            bad = ~(np.isfinite(x) & (x >= 1) & (x <= BOUNDS[field]["le"]) & (x == np.floor(x)))
            if bad.any():
                raise _first_bad(field, x, bad, f"{bound_text(field)}, or {extra}")
        else:
            x = _map_strings(field, arr, to_steps).astype(float)
        cols["inner_steps_in" if field == "inner_steps" else "regional_steps"] = x
    elif field in GROWTH:
        oom = _map_strings(field, arr, runlength.parse_growth).astype(float)
        cols.setdefault("_growth_parts", {})[field] = oom
    elif field == "node":

        def node_row(v: Any) -> tuple[float, ...]:
            node = catalog.nodes().get(str(v).strip().lower())
            if node is None:
                raise ValueError(f"unknown node preset; known: {', '.join(catalog.nodes())}")
            gpu = catalog.gpus()[node.gpu]
            prec = memory.PRECISIONS.index(node.precision) if node.precision else -1
            return (
                gpu.price_usd,
                gpu.board_power_w,
                node.gpu_count,
                node.pflops * 1e15,
                node.vram_gb * 1e9,
                prec,
            )

        rows = _map_strings(field, arr, node_row)
        cols["gpu_price_usd"] = rows[:, 0].astype(float)
        cols["gpu_power_w"] = rows[:, 1].astype(float)
        cols["gpus_per_node"] = rows[:, 2].astype(float)
        cols["peak_flop_s"] = rows[:, 3].astype(float)
        cols["vram_bytes"] = rows[:, 4].astype(float)
        prec = rows[:, 5].astype(int)
        cols["precision"] = np.where(prec >= 0, prec, cols["precision"]).astype(np.int8)
    elif field == "gpu":

        def lookup(v: Any) -> tuple[float, float]:
            gpu = catalog.gpus().get(str(v).strip().lower())
            if gpu is None:
                raise ValueError(f"unknown gpu; known: {', '.join(catalog.gpus())}")
            return (gpu.price_usd, gpu.board_power_w)

        pairs = _map_strings(field, arr, lookup)
        cols["gpu_price_usd"] = pairs[:, 0].astype(float)
        cols["gpu_power_w"] = pairs[:, 1].astype(float)
    else:
        raise ScenarioError(
            [(field, "array", f"cannot vary in a batch; batch fields: {', '.join(BATCH_FIELDS)}")]
        )


def _to_bool(v: Any) -> bool:
    if isinstance(v, bool | np.bool_):
        return bool(v)
    text = str(v).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _cross_field_row(f: Frame) -> dict[str, Any]:
    """The columns the cross-field rules read, in the units of the scenario fields."""
    return {
        "moe": f.moe,
        "active_parameters_b": f.active_parameters / 1e9,
        "parameters_b": f.parameters / 1e9,
        "hierarchical": f.hierarchical,
        "regional_ep": f.ep_mode == 1,
        "nodes_per_group": f.nodes_per_group,
        "num_nodes": f.num_nodes,
        "growth_oom": f.growth_oom,
        "max_run_days": f.max_run_days_in,
    }


# --- the run ------------------------------------------------------------------------------------------


def derive(f: Frame, asm: Assumptions) -> None:
    """Quantities every mode needs, added to the frame in place."""
    f["asm"] = asm
    moe = f.moe
    active = select(moe, f.active_parameters, f.parameters)
    f["compute_parameters"] = active
    f["bytes_per_param"] = memory.bytes_per_param(f.precision, asm)
    f["bytes_per_value"] = memory.bytes_per_value(f.precision, asm)
    shared, experts = memory.expert_split(f.parameters, active, moe)
    f["shared_parameters"], f["expert_parameters"] = shared, experts
    f["ep_degree"] = memory.ep_degree(f.ep_mode, moe, f.num_nodes, f.nodes_per_group)
    held = memory.params_held(shared, experts, f.ep_degree)
    f["parameters_held"] = held
    f["memory_bytes"] = held * f.bytes_per_param
    f["full_memory_bytes"] = f.parameters * f.bytes_per_param
    f["stages"] = memory.pipeline_stages(f.memory_bytes, f.vram_bytes)
    f["n_eff"] = stragglers.effective_nodes(f.num_nodes, f.straggler, asm)
    f["step_flop"] = compute.step_flop(active, f.batch_tokens, asm.flops_per_param_token)
    f["step_flop_s"] = compute.step_compute_time(f.step_flop, f.peak_flop_s, f.mfu)
    # Regional EP sits inside a regional group, so it pays the regional RTT whether or not the sync
    # is hierarchical (the original charged nothing without the hierarchy: reference README defect 4).
    ep_rtt = select(f.ep_mode == 2, f.latency_s, f.regional_latency_s)
    f["ep_latency_s"] = select(
        moe & (f.ep_mode > 0), compute.ep_latency(ep_rtt, f.moe_layers, asm.ep_all_to_all_per_layer), 0.0
    )
    f["step_s"] = f.step_flop_s + f.ep_latency_s
    # Each node syncs the parameters it holds: its expert shard with EP (defect 8), its stage with PP.
    f["payload_bits"] = collectives.payload_bits(held / f.stages, f.bytes_per_value, f.compression)
    f["hidden"] = select(
        np.isnan(f.hidden_size), pipeline.hidden_size(active, asm.hidden_size_coefficient), f.hidden_size
    )
    f["handoff_bits"] = pipeline.handoff_bits(
        f.batch_tokens,
        f.micro_batches,
        f.hidden,
        f.bytes_per_value,
        f.activation_compression,
        select(f.pipeline_backward, 2.0, 1.0),
    )
    # Hierarchical pipelines sit inside one region when a group can hold all S stages; otherwise a
    # hand-off crosses the WAN, and the slowest hop sets the pace.
    f["pp_regional"] = f.hierarchical & (f.stages <= f.nodes_per_group)
    f["pp_bps"] = select(f.pp_regional, f.regional_bps, np.minimum(f.up_bps, f.down_bps))
    f["pp_latency_s"] = select(f.pp_regional, f.regional_latency_s, f.latency_s)


def quality_terms(f: Frame, timing: Mapping[str, Any]) -> dict[str, Any]:
    """η, χ and the replica multiplier for a timing (used for outputs and by auto-quality)."""
    asm = f.asm
    alpha = efficiency.alpha(f.parameters, asm)
    penalty = stragglers.strategy_penalty(f.straggler, asm)
    eta_h = efficiency.eta_h(timing["h_eff"], alpha, penalty, asm.efficiency_floor)
    eta_c = efficiency.compression_quality(f.compression, f.error_feedback, f.compression_scenario, asm)
    eta_a = efficiency.activation_quality(f.activation_compression, f.stages, f.compression_scenario, asm)
    eta = eta_h * eta_c * eta_a
    model_flop = compute.model_flop(f.compute_parameters, f.tokens, asm.flops_per_param_token)
    mult = efficiency.replica_loss_multiplier(
        timing["replicas"], f.parameters, timing["h_eff"], f.replica_penalty, asm
    )
    # χ uses the active parameters on both sides: the loss of an N_active-parameter model trained on
    # D tokens against the 6·N_active·D it costs (the original mixed total and active: defect 5).
    chi = quality.chi(f.compute_parameters, f.tokens, model_flop, mult, asm)
    return {
        "alpha": alpha,
        "strategy_penalty": penalty,
        "efficiency_h": eta_h,
        "efficiency_compression": eta_c,
        "efficiency_activation": eta_a,
        "efficiency": eta,
        "model_flop": model_flop,
        "replica_loss_multiplier": mult,
        "chi": chi,
    }


def _quality_objective(f: Frame, timing: Mapping[str, Any], _h: Any):
    q = quality_terms(f, timing)
    return q["efficiency"] * q["chi"] / timing["total_s"]


def run_frame(f: Frame, asm: Assumptions) -> dict[str, np.ndarray]:
    """All outputs for every row of a frame (columns of length f.n)."""
    n = f.n
    derive(f, asm)
    mode, reason, ep_saved = decision.decide(f)
    mode = np.broadcast_to(mode, (n,))
    out: dict[str, np.ndarray] = {
        "mode_code": mode.astype(np.int8),
        "reason_code": np.broadcast_to(reason, (n,)).astype(np.int8),
        "ep_saved_memory": np.broadcast_to(ep_saved, (n,)).copy(),
    }
    inner = np.broadcast_to(np.asarray(f.inner_steps_in, dtype=float), (n,)).copy()
    auto_h = np.full(n, np.nan)
    for code, strategy in REGISTRY.items():
        idx = np.flatnonzero(mode == code)
        if idx.size == 0:
            continue
        sub = f.take(idx)
        hide = strategy.auto_inner_steps(sub)
        auto_h[idx] = hide
        if code == 3:  # pure PP has no DiLoCo loop, so no H
            h = np.full(idx.size, np.nan)
        else:
            h = np.where(inner[idx] == AUTO, hide, inner[idx])
            aq = np.flatnonzero(h == AUTO_QUALITY)
            if aq.size:
                h[aq] = best_quality_steps(strategy, sub.take(aq), _quality_objective)
        inner[idx] = h
        timing = strategy.evaluate(sub, np.where(np.isnan(h), 1.0, h))
        scatter(out, idx, timing, n)
    inner[mode == decision.INFEASIBLE] = np.nan
    out["inner_steps_used"] = inner
    out["auto_inner_steps"] = auto_h
    for key in (
        "outer_step_s",
        "total_s",
        "h_eff",
        "replicas",
        "sync_s",
        "regional_sync_s",
        "inner_step_s",
        "compute_block_s",
        "hidden_sync_s",
        "regional_steps_used",
        *BREAKDOWN_KEYS,
    ):
        if key not in out:
            out[key] = np.full(n, np.nan)
    diloco_only = (mode == 0) | (mode == 1)
    for key in ("pipeline_comm_s", "pipeline_latency_s"):
        if key not in out:
            out[key] = np.asarray(0.0) if diloco_only.all() else np.where(diloco_only, 0.0, np.nan)
        elif diloco_only.any():
            out[key][diloco_only] = 0.0

    q = quality_terms(f, out)
    out.update({k: np.asarray(v) for k, v in q.items()})
    eta = out["efficiency"]
    wall = out["total_s"]
    effective = wall / eta
    out["wall_clock_days"] = wall / 86400.0
    out["effective_days"] = effective / 86400.0
    peak_capacity = f.num_nodes * f.peak_flop_s * effective
    out["peak_flop_capacity"] = np.asarray(peak_capacity)
    out["global_mfu"] = out["model_flop"] / peak_capacity
    out["global_hfu"] = out["global_mfu"] / asm.hfu_mfu_ratio
    out["hardware_flop"] = out["model_flop"] / asm.hfu_mfu_ratio
    out["quality_adjusted_flop"] = out["model_flop"] * eta * out["chi"]

    computed_max = runlength.max_run_days(f.growth_oom, asm.days_per_year)
    out["computed_max_days"] = np.asarray(computed_max)
    out["max_days"] = select(np.isnan(f.max_run_days_in), computed_max, f.max_run_days_in)
    out["feasible"] = out["effective_days"] <= out["max_days"]

    stages = np.broadcast_to(f.stages, (n,))
    pipelines = np.floor(f.n_eff / f.stages)
    out["pp_groups"] = np.where(mode == 2, pipelines, np.where(mode == 3, 1.0, 0.0))
    used = np.where(mode == 2, pipelines * stages, np.where(mode == 3, stages, np.floor(f.n_eff)))
    out["idle_nodes"] = np.where(mode == decision.INFEASIBLE, 0.0, np.maximum(0.0, np.floor(f.n_eff) - used))
    out["memory_per_node_gb"] = np.asarray(f.memory_bytes / f.stages / 1e9)
    out["model_state_memory_gb"] = np.asarray(f.memory_bytes / 1e9)
    for prec, col in (
        ("fp16", "max_parameters_b_fp16"),
        ("fp8", "max_parameters_b_fp8"),
        ("fp4", "max_parameters_b_fp4"),
    ):
        bpp = getattr(asm, f"bytes_per_param_{prec}")
        out[col] = np.asarray(memory.max_params_fitting(f.vram_bytes, bpp) / 1e9)

    gpus = f.num_nodes * f.gpus_per_node
    out["gpu_count"] = np.asarray(gpus, dtype=float)
    out["gpu_hours"] = np.asarray(cost.gpu_hours(gpus, wall))
    out["cost_usd"] = np.asarray(cost.capital_cost(gpus, f.gpu_price_usd))
    out["energy_kwh"] = np.asarray(cost.energy_kwh(gpus, f.gpu_power_w, wall, asm.pue))

    # The bottleneck is the largest part of an outer step (first one wins ties; compute is first).
    largest = out[BREAKDOWN_KEYS[0]]
    code = np.zeros(n, dtype=np.int8)
    for k, key in enumerate(BREAKDOWN_KEYS[1:], start=1):
        part = out[key]
        bigger = part > largest
        code[bigger] = k
        largest = np.where(bigger, part, largest)
    code[mode == decision.INFEASIBLE] = len(BREAKDOWN_KEYS)
    out["bottleneck_code"] = code
    out["bottleneck_share"] = largest / out["outer_step_s"]

    for col in FRAME_OUTPUTS:
        out[col] = np.asarray(f[col])
    out["node_sustained_flop_s"] = np.asarray(f.peak_flop_s * f.mfu)

    from dtsim.models.decentralized.warning_rules import evaluate_warnings

    out["warning_bits"] = evaluate_warnings(f, out)
    return out


# --- public entry points -------------------------------------------------------------------------------


def simulate(scenario: Scenario | Mapping[str, Any] | None = None, **fields: Any):
    """Simulate one scenario and return a `Result`.

    `simulate(Scenario(...))`, `simulate({"num_nodes": 8})` or `simulate(num_nodes=8)`.
    """
    from dtsim.models.decentralized.result import build_result

    s = _as_scenario(scenario, fields)
    asm = Assumptions(s.assumptions)
    frame = Frame({k: np.asarray(v) for k, v in encode_scenario(s).items()}, n=1)
    out = run_frame(frame, asm)
    return build_result(out, 0, scenario=s, asm=asm, frame=frame)


def _as_scenario(scenario: Any, fields: Mapping[str, Any]) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario.replace(**fields) if fields else scenario
    base = dict(scenario or {})
    base.update(fields)
    return make_scenario(base)


class BatchResult:
    """Outputs of a batch: `columns[name]` is an array with one value per scenario.

    Time-dependent columns are NaN exactly where `mode` is 'infeasible' (the model cannot be held by
    the available nodes); `result(i)` gives row i as a `Result` with warnings decoded.
    """

    def __init__(self, columns: dict[str, np.ndarray], n: int, asm: Assumptions, frame: Frame):
        # Outputs shared by all rows are stored once and shown as read-only broadcast views.
        self.columns = {k: np.broadcast_to(v, (n,)) for k, v in columns.items()}
        self.n = n
        self._asm = asm
        self._frame = frame  # the encoded inputs

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, name: str) -> np.ndarray:
        if name == "mode":
            return np.asarray(decision.MODE_IDS)[self.columns["mode_code"]]
        if name == "bottleneck":
            return np.asarray((*BREAKDOWN_KEYS, "memory"))[self.columns["bottleneck_code"]]
        return self.columns[name]

    def result(self, i: int):
        """Row i as a Result (re-run as a batch of one: the same code, with its derived columns)."""
        from dtsim.models.decentralized.result import build_result

        if not 0 <= i < self.n:
            raise IndexError(i)
        frame = self._frame.rows(i, i + 1)
        out = run_frame(frame, self._asm)
        return build_result(out, 0, scenario=None, asm=self._asm, frame=frame)


def simulate_batch(base: Scenario | Mapping[str, Any] | None = None, **fields: Any) -> BatchResult:
    """Simulate many scenarios at once.

    `base` gives the shared fields (a Scenario, a dict, or the defaults); each keyword is a field
    whose value is a scalar or a 1-D array. Arrays must share one length n; the result has n rows,
    computed by the same code as `simulate` (a scalar run is a batch of one).
    """
    arrays = {k: v for k, v in fields.items() if np.ndim(v) > 0}
    scalars = {k: v for k, v in fields.items() if np.ndim(v) == 0}
    s = _as_scenario(
        base, {k: (v.item() if isinstance(v, np.generic | np.ndarray) else v) for k, v in scalars.items()}
    )
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ScenarioError([("batch", lengths, "all array fields must have the same length")])
    n = next(iter(lengths.values()), 1)
    if n == 0:
        raise ScenarioError([("batch", 0, "arrays must not be empty")])
    cols: dict[str, Any] = encode_scenario(s)
    for key in ("bandwidth_up_mbps", "bandwidth_down_mbps"):
        if key in arrays and "bandwidth_mbps" in arrays:
            raise ScenarioError([(key, "array", "give either bandwidth_mbps or the up/down pair")])
    if "node" in arrays:
        clash = [f for f in NODE_SET_FIELDS if f in arrays]
        if clash:
            raise ScenarioError(
                [
                    (
                        clash[0],
                        "array",
                        "a node array sets gpu, gpus_per_node, pflops, VRAM and precision; vary one or the other",
                    )
                ]
            )
    for field, values in arrays.items():
        if field not in BATCH_FIELDS:
            raise ScenarioError(
                [(field, "array", f"not a batch field; batch fields: {', '.join(BATCH_FIELDS)}")]
            )
        encode_array(field, values, cols)
    parts = cols.pop("_growth_parts", None)
    if parts:
        cols["growth_oom"] = sum(
            parts.get(g, np.full(n, runlength.parse_growth(getattr(s, g)))) for g in GROWTH
        )
    if "gpu" in arrays and "gpus_per_node" not in arrays:
        if s.gpus_per_node is None:
            raise ScenarioError([("gpus_per_node", None, "required when gpu varies in a batch")])
        cols["gpus_per_node"] = float(s.gpus_per_node)
    frame = Frame({k: np.asarray(v) for k, v in cols.items()}, n=n)
    check_cross_fields(_cross_field_row(frame), batch=True)
    asm = Assumptions(s.assumptions)
    check_alpha_domain(frame.parameters, asm)
    return BatchResult(run_chunked(frame, asm), n, asm, frame)


CHUNK_ROWS = 1 << 17


def run_chunked(frame: Frame, asm: Assumptions, chunk: int = CHUNK_ROWS) -> dict[str, np.ndarray]:
    """run_frame over slices of at most `chunk` rows, written into full-length outputs.

    Same results as one call (every formula is row-wise); the work arrays stay small, which keeps
    them in cache and avoids page-faulting fresh memory for each of the ~200 temporaries.
    """
    n = frame.n
    if n <= chunk:
        return run_frame(Frame(frame, n=n), asm)
    out: dict[str, np.ndarray] = {}
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        part = run_frame(frame.rows(start, stop), asm)
        if not out:
            # Outputs shared by every row (shape ()) are the same in every chunk: keep one copy.
            out = {k: (v if np.ndim(v) == 0 else np.empty(n, dtype=v.dtype)) for k, v in part.items()}
        for key, value in part.items():
            if np.ndim(value):
                out[key][start:stop] = value
    return out
