"""Scenario fields → engine columns (SI units, integer codes), for one scenario or a batch.

`encode_scenario` encodes a validated scenario; `encode_batch` encodes a base scenario plus arrays of
any batch field, validating the arrays with the same bounds and words as the schema. Every field is
read the same way on both paths: the hardware fields (node, gpu, count, precision, peak, VRAM) are
resolved per distinct combination by the schema itself, so a batch row equals `simulate` of the same
fields (a property test draws every field to check it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.models.decentralized.frame import Frame
from dtsim.models.decentralized.groups import catalog_peak_flop_s, encode_groups, groups_spanning_regions
from dtsim.models.decentralized.inner_steps import AUTO, AUTO_QUALITY
from dtsim.physics import codec, efficiency, memory, runlength, stragglers
from dtsim.schema.fields import BOUNDS, INTEGER_FIELDS, bound_text
from dtsim.schema.scenario import Scenario, check_cross_fields, make_scenario, region_sizes

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
    "outer_overlap_steps": ("outer_overlap_steps", 1.0),
}
# Optional numeric fields: missing → NaN column.
OPTIONAL = {
    "active_parameters_b": ("active_parameters", 1e9),
    "hidden_size": ("hidden_size", 1.0),
    "max_run_days": ("max_run_days_in", 1.0),
    "gpus_per_node": ("gpus_per_node", 1.0),
    "tcp_streams": ("tcp_streams", 1.0),
    "loss_rate": ("loss_rate", 1.0),
    "node_mtbf_hours": ("node_mtbf_h", 1.0),
    "regional_compression": ("regional_compression", 1.0),  # NaN: the compression
}
# What node groups set for every row: a batch cannot vary these when the scenario has node_groups.
GROUP_SET_FIELDS = (
    "num_nodes",
    "node",
    "gpu",
    "gpus_per_node",
    "pflops_per_node",
    "vram_per_node_gb",
    "precision",
)
ENUMS = {
    "precision": ("precision", memory.PRECISIONS),
    "straggler_strategy": ("straggler", stragglers.STRATEGIES),
    "straggler_curve": ("straggler_curve", stragglers.CURVES),
    "expert_parallelism": ("ep_mode", memory.EP_MODES),
    "compression_scenario": ("compression_scenario", efficiency.COMPRESSION_SCENARIOS),
    "replica_penalty": ("replica_penalty", efficiency.REPLICA_PENALTIES),
    "codec": ("codec", codec.MODEL_CODECS),
    "codec_device": ("codec_device", codec.DEVICES),
}
BOOLS = {
    "moe": "moe",
    "streaming": "streaming",
    "hierarchical": "hierarchical",
    "error_feedback": "error_feedback",
    "pipeline_backward": "pipeline_backward",
    "outer_state_on_gpu": "outer_state_on_gpu",
}
GROWTH = ("hardware_growth", "software_growth", "investment_growth")
STEP_CODES = {"auto": AUTO, "auto-quality": AUTO_QUALITY}
# Derived per-scenario quantities that are returned with the outputs (as `details` in a Result).
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
# Fields a `node` preset sets (unless given): a grid hides their constant columns when node varies.
NODE_SET_FIELDS = ("gpu", "gpus_per_node", "pflops_per_node", "vram_per_node_gb", "precision")
# The hardware fields, resolved together as the scalar path resolves them (schema `_resolve`): a node
# preset fills gpu/count/peak/VRAM/precision; an explicit gpu fills peak and VRAM from its count and
# precision. A batch resolves each distinct combination of the varied ones with the same code.
HARDWARE_FIELDS = ("node", "gpu", "gpus_per_node", "precision", "pflops_per_node", "vram_per_node_gb")
HARDWARE_COLUMNS = (
    "gpu_price_usd",
    "gpu_power_w",
    "gpus_per_node",
    "peak_flop_s",
    "vram_bytes",
    "precision",
    "catalog_peak_flop_s",
    "catalog_vram_bytes",
)


def _enum_value(x: Any) -> str:
    return x.value if hasattr(x, "value") else x


# Fields that act only in some modes, tracked as given (a bit each in the frame's fields_given): a value
# the user chose that the run's mode does not read is the warning FIELDS_IGNORED.
TRACKED_GIVEN = (
    "nodes_per_group",
    "regional_bandwidth_mbps",
    "regional_latency_ms",
    "regional_steps",
    "inner_steps",
)


def given_bits(given: Any) -> np.int64:
    """The TRACKED_GIVEN fields among `given` (names), as bits."""
    return np.int64(sum(1 << k for k, name in enumerate(TRACKED_GIVEN) if name in given))


def chosen(s: Scenario) -> dict[str, Any]:
    """The fields the user set: given, less those whose value a preset supplied."""
    return {k: v for k, v in (s._given or {}).items() if k not in s._from_preset}


def regions_forgone(sizes: tuple | None, group_size_given: bool, hierarchical_given: bool) -> float:
    """The regions' count where nodes_per_group, given without hierarchical, keeps node groups in two or
    more regions (some with two nodes or more: `region_sizes`) from being weighed as the regional groups;
    NaN otherwise (FIELDS_IGNORED)."""
    forgone = sizes is not None and sizes[1] >= 2 and group_size_given and not hierarchical_given
    return float(sizes[0]) if forgone else np.nan


def _not_default(s: Scenario, name: str) -> bool:
    return getattr(s, name) != type(s).model_fields[name].default


def _differs(values: Any, default: Any) -> np.ndarray:
    """Row by row, whether a varied field's values differ from its default (numbers as numbers, words
    such as 'auto' as words)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf":
        return arr.astype(float) != float(default)
    return np.array([_not_equal(x, default) for x in arr.ravel()]).reshape(arr.shape)


def _not_equal(x: Any, default: Any) -> bool:
    try:
        return float(x) != float(default)
    except (TypeError, ValueError):
        return x != default


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
    # mfu: auto's layout sets MFU / HFU (its recomputation and attention) where its MFU is the run's and
    # no hfu_mfu_ratio is given (simulate_batch: nor drawn); its doubted MFU is MFU_AUTO_OPTIMISTIC where
    # some node uses it (not every group on an MFU or hardware of its own)
    ratio = s.planned_hfu_mfu_ratio
    given_ratio = "hfu_mfu_ratio" in (s.assumptions or {})
    cols["planned_hfu_mfu_ratio"] = (
        np.nan if ratio is None or s._groups is not None or given_ratio else float(ratio)
    )
    used = s._groups is None or any(g.mfu is None and not g.own_hardware for g in s._groups)
    cols["mfu_auto_doubted"] = bool(s.mfu_warning) and used
    cols["regional_steps"] = float(STEP_CODES.get(s.regional_steps, s.regional_steps))  # type: ignore[arg-type]
    # which of the fields that act only in some modes the user set (FIELDS_IGNORED names those the run's
    # mode does not use): given, at a value other than the default (an echoed scenario lists every field)
    mine = chosen(s)
    cols["fields_given"] = given_bits([f for f in TRACKED_GIVEN if f in mine and _not_default(s, f)])
    cols["regions_forgone"] = np.nan
    cols["group_size_given"] = "nodes_per_group" in mine  # at any value (HIERARCHY_FALLBACK)
    cols["replaced_given"] = np.int64(0)
    cols["growth_oom"] = sum(runlength.parse_growth(getattr(s, g)) for g in GROWTH)
    gpu = catalog.gpus().get(s.gpu) if s.gpu else None
    cols["gpu_price_usd"] = gpu.price_usd if gpu else np.nan
    cols["gpu_power_w"] = gpu.board_power_w if gpu else np.nan
    cols["catalog_peak_flop_s"] = catalog_peak_flop_s(s.gpu, _enum_value(s.precision), s.gpus_per_node)
    if gpu is None:
        cols["gpus_per_node"] = np.nan
    # what the node's GPUs hold (datasheet GB), the VRAM_NOT_CATALOG check of vram_per_node_gb
    cols["catalog_vram_bytes"] = gpu.memory_gb * 1e9 * s.gpus_per_node if gpu and s.gpus_per_node else np.nan
    if s._groups is not None:
        cols["groups"] = encode_groups(s, cols, lambda g: _group_mfu(s, g))
        given = s.given_fields()
        # groups in two or more regions form the regional tier of a hierarchy: where the scenario leaves
        # the hierarchy to the model, if it is faster (engine.run_frame_choosing); with hierarchical: true,
        # always (grouping nodes by their index would put continents in one "regional" group); only
        # nodes_per_group, a group size the user chose, groups nodes by index
        # ... and when some region has two nodes or more: regions of one node each have nobody to
        # average with inside, so a regional tier would only add syncs
        sizes = region_sizes(s._groups)
        by_region = sizes is not None and sizes[1] >= 2 and "nodes_per_group" not in given
        cols["region_count"] = float(sizes[0]) if by_region else np.nan
        cols["region_largest"] = float(sizes[1]) if by_region else np.nan
        cols["region_given"] = "hierarchical" in given  # the user chose: no comparison with flat
        # where nodes are grouped by index (nodes_per_group given, or its default where no region has
        # two nodes, or some group has no region): how many groups mix places (INDEX_GROUPS_SPAN_REGIONS)
        cols["index_groups_spanning"] = (
            0.0 if by_region else groups_spanning_regions(s._groups, s.nodes_per_group)
        )
        # fields a file or a request set that every group replaces (--set and sweeps refuse them:
        # unused_fields); FIELDS_UNUSED_WITH_GROUPS names them
        cols["replaced_given"] = replaced_bits(s, mine)
        cols["regions_forgone"] = regions_forgone(sizes, "nodes_per_group" in given, "hierarchical" in given)
        # the regional links the user gave (a preset's, such as governance's defaults, are not)
        cols["regional_given"] = "regional_bandwidth_mbps" in mine
        cols["regional_latency_given"] = "regional_latency_ms" in mine
    return cols


def encode_group_mfu(s: Scenario, values: Any, cols: dict[str, Any]) -> None:
    """A varied `mfu` with node groups: each group without an MFU of its own takes the row's, and the
    frame's MFU is recomputed from the groups for each distinct value (as the scalar path computes it)."""
    from dtsim.models.decentralized.groups import group_mfu

    checked: dict[str, Any] = {}
    encode_array("mfu", values, checked)  # bounds, with the row named
    if any(g.mfu is not None or (g.own_hardware and s.mfu_source is not None) for g in s._groups):
        raise ScenarioError(
            [("mfu", "array", "some node groups set their own MFU; vary theirs in separate runs")]
        )
    x = np.asarray(checked["mfu"], dtype=float)
    uniq, inverse = np.unique(x, return_inverse=True)
    frame = np.array([group_mfu(s, lambda g, m=m: float(m))[0] for m in uniq])
    cols["mfu"] = frame[inverse.reshape(-1)]


def _group_mfu(s: Scenario, g) -> float:
    """A group's MFU: its own; else, when the scenario's was planned ('auto') and the group has hardware
    of its own, planned for that hardware as the scenario's was; else the scenario's."""
    if g.mfu is not None:
        return g.mfu
    if s.mfu_source is None or not g.own_hardware:
        return float(s.mfu)
    from dtsim.models.datacenter.node_mfu import node_mfu

    value, *_ = node_mfu(
        s.parameters_b,
        g.gpu,
        None if g.gpus_per_node is None else int(g.gpus_per_node),
        s.precision.value,
        s.local_batch_tokens,
        g.pflops_per_node,
        s.moe,
        s.assumptions,
        g.nvlink_domain,
    )
    return float(value)


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
        "loss_rate": f.loss_rate,
        "tcp_streams": f.tcp_streams,
        "micro_batches": f.micro_batches,
        "local_batch_tokens": f.batch_tokens,
        "regions_form_groups": ~np.isnan(np.asarray(f.get("region_count", np.nan), dtype=float)),
    }


def _factorize(field: str, arr: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """Distinct values (as Python scalars; NaN → None for optional numbers) and each row's index."""
    if arr.dtype.kind in "iufb":
        uniq, inverse = np.unique(arr, return_inverse=True)
        values = [None if (isinstance(v, float) and np.isnan(v)) else v for v in uniq.tolist()]
        return values, inverse.reshape(-1)
    seen: dict[Any, int] = {}
    inverse = np.fromiter(
        (seen.setdefault(v, len(seen)) for v in arr.tolist()), dtype=np.int64, count=arr.size
    )
    return list(seen), inverse


def hardware_interacts(given: dict[str, Any], varied: list[str]) -> bool:
    """Whether the varied hardware fields change other hardware columns (so rows need resolving)."""
    if "node" in varied or "gpu" in varied or "gpus_per_node" in varied:
        return True  # (a GPU count without a GPU is not used: resolving decides)
    explicit = given.get("node") is not None or given.get("gpu") is not None
    return explicit and "precision" in varied


def encode_hardware(
    given: dict[str, Any], arrays: dict[str, Any], cols: dict[str, Any], stand_in: dict[str, Any]
) -> None:
    """Resolve each distinct combination of the varied hardware fields exactly as the scalar path does
    (`load_scenario(layers=[given, row])`) and write the hardware columns for every row."""
    names = list(arrays)
    values, codes = [], []
    for name in names:
        arr = np.asarray(arrays[name])
        if arr.ndim != 1:
            raise ScenarioError(
                [(name, f"array of shape {arr.shape}", "batch fields must be 1-D arrays or scalars")]
            )
        v, c = _factorize(name, arr)
        values.append(v)
        codes.append(c)
    combos, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    table = np.empty((len(combos), len(HARDWARE_COLUMNS)))
    for j, combo in enumerate(combos):
        row = {name: values[k][c] for k, (name, c) in enumerate(zip(names, combo, strict=True))}
        try:
            s = make_scenario(catalog.merge_layers(given, {**row, **stand_in}))
        except ScenarioError as exc:
            i = int(np.flatnonzero(inverse == j)[0])
            raise ScenarioError(
                [(f"{f}[{i}]" if f in row else f, v, m) for f, v, m in exc.problems]
            ) from None
        enc = encode_scenario(s)
        table[j] = [enc[c] for c in HARDWARE_COLUMNS]
    for k, col in enumerate(HARDWARE_COLUMNS):
        cols[col] = table[inverse, k]
    cols["precision"] = cols["precision"].astype(np.int8)


UNUSED_FIELD = "is not used in this scenario"  # the refusal below; uncertainty passes it on


_REPLACED = {  # what a group sets in place of the field, and where to set it instead
    "bandwidth_mbps": ("links", "the groups' links"),
    "bandwidth_up_mbps": ("bandwidth_up_mbps", "the groups' bandwidth_up_mbps"),
    "bandwidth_down_mbps": ("bandwidth_down_mbps", "the groups' bandwidth_down_mbps"),
    "latency_ms": ("latency_ms or a region (whose RTT it takes)", "the groups' latency_ms or regions"),
    "mfu": ("mfu", "the groups' mfu"),
    **{f: ("node (which sets its hardware)", "the groups' node") for f in catalog.HARDWARE_FIELDS},
}


REPLACED_ORDER = tuple(_REPLACED)  # the bits of the frame's replaced_given


def replaced(s: Scenario, given: Mapping[str, Any]) -> list[str]:
    """The fields in `given` that every node group replaces (NodeGroup.replaces)."""
    groups = s.node_groups or []
    return [f for f in _REPLACED if f in given and groups and all(f in g.replaces() for g in groups)]


def replaced_bits(s: Scenario, mine: Mapping[str, Any]) -> np.int64:
    """replaced(s, mine) (the fields the user set: `chosen`) at values other than the default (an echoed
    scenario lists every field), as bits in REPLACED_ORDER."""
    names = [f for f in replaced(s, mine) if _not_default(s, f)]
    return np.int64(sum(1 << k for k, f in enumerate(REPLACED_ORDER) if f in names))


def unused_fields(s: Scenario, given: Mapping[str, Any], varied: bool) -> list[tuple[str, Any, str]]:
    """The problem of a scenario field in `given` (--set values, or a batch's arrays when `varied`) that
    no node group uses, every group giving its own value (`NodeGroup.replaces`): a link, the latency,
    the MFU or, where every group names its node, the hardware. The run would not change with it."""
    unused = replaced(s, given)
    if not unused:
        return []
    name = unused[0]
    own, instead = _REPLACED[name]
    value = np.unique(np.asarray(given[name])).tolist()[:8] if varied else given[name]
    what = f"{UNUSED_FIELD}: every node group sets its own {own}"
    if varied:
        return [
            (
                name,
                value,
                f"{what}, so a sweep, a distribution or a search cannot vary it: vary {instead} "
                "(one scenario each), or leave a group on the scenario's",
            )
        ]
    return [(name, value, f"{what}, so this value changes nothing: set {instead} instead")]


def encode_batch(s: Scenario, arrays: dict[str, Any], n: int) -> Frame:
    """The frame of a batch: `s` (the shared fields) with each array field varied row by row.

    Row i equals the scalar scenario `load_scenario(layers=[s.given_fields(), row_i])`."""
    cols: dict[str, Any] = encode_scenario(s)
    given = s.given_fields()
    if isinstance(given.get("mfu"), str):  # 'auto', planned (or replaced per row) by the engine
        given["mfu"] = s.mfu
    if "bandwidth_mbps" in arrays:
        pair = [k for k in ("bandwidth_up_mbps", "bandwidth_down_mbps") if k in arrays]
        if pair:
            raise ScenarioError([(pair[0], "array", "give either bandwidth_mbps or the up/down pair")])
    if s._groups is not None:
        if "num_nodes" in arrays and np.all(np.asarray(arrays["num_nodes"]) == s.num_nodes):
            # every row at the groups' own total (a search holding the node count): nothing varies
            arrays = {k: v for k, v in arrays.items() if k != "num_nodes"}
        clash = [f for f in GROUP_SET_FIELDS if f in arrays]
        if clash:
            what = "the node groups' total count" if clash[0] == "num_nodes" else "set per node group"
            varied = np.unique(np.asarray(arrays[clash[0]])).tolist()
            raise ScenarioError(
                [
                    (
                        clash[0],
                        varied,
                        f"is {what} in this scenario (node_groups), so a sweep or a search (target, "
                        "governance) cannot vary it: use a scenario without node_groups, or change the "
                        "groups' counts and run each",
                    )
                ]
            )
        unused = unused_fields(s, arrays, varied=True)
        if unused:  # every row would be the same run: a sweep flat, a range of zero width, no word
            raise ScenarioError(unused)
        if "mfu" in arrays:
            arrays = dict(arrays)
            encode_group_mfu(s, arrays.pop("mfu"), cols)
    varied_hw = [f for f in HARDWARE_FIELDS if f in arrays]
    if varied_hw and hardware_interacts(given, varied_hw):
        # Peak and VRAM given row by row always win over what a node or gpu would derive, so they
        # are encoded directly; a valid value of each stands in while the other fields resolve.
        direct = {f: arrays[f] for f in ("pflops_per_node", "vram_per_node_gb") if f in arrays}
        checked: dict[str, Any] = {}
        for field, values in direct.items():
            encode_array(field, values, checked)
        stand_in = {f: float(np.asarray(v).flat[0]) for f, v in direct.items()}
        encode_hardware(given, {f: arrays[f] for f in varied_hw if f not in direct}, cols, stand_in)
        cols.update(checked)
        arrays = {k: v for k, v in arrays.items() if k not in varied_hw}
    if "mfu" in arrays:
        cols["planned_hfu_mfu_ratio"] = np.nan  # each row's own MFU, no planned layout's
        cols["mfu_auto_doubted"] = False
    bits = np.int64(cols["fields_given"])
    for k, name in enumerate(TRACKED_GIVEN):  # a varied field: row by row, where it is not the default
        if name in arrays:
            set_here = _differs(arrays[name], type(s).model_fields[name].default)
            bits = (bits & ~np.int64(1 << k)) | np.where(set_here, np.int64(1 << k), np.int64(0))
    cols["fields_given"] = bits
    if "nodes_per_group" in arrays:
        cols["group_size_given"] = True
    if "hierarchical" in arrays:
        cols["regions_forgone"] = np.nan  # each row says whether it has a hierarchy
    elif "nodes_per_group" in arrays and s._groups is not None:
        cols["regions_forgone"] = regions_forgone(region_sizes(s._groups), True, "hierarchical" in given)
    if "nodes_per_group" in arrays:
        cols["region_count"] = np.nan  # the rows set their group sizes themselves
        if s._groups is not None:
            cols["index_groups_spanning"] = groups_spanning_regions(s._groups, arrays["nodes_per_group"])
    elif "hierarchical" in arrays:
        cols["region_given"] = True  # each row says whether its regions form a hierarchy
    if "regional_bandwidth_mbps" in arrays:
        cols["regional_given"] = True  # each row gives its regional links
    if "regional_latency_ms" in arrays:
        cols["regional_latency_given"] = True
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
    if s.gpu and s._groups is None and not any(f in varied_hw for f in ("node", "gpu")):
        # the catalog's dense node peak follows a precision or GPU count varied row by row (the
        # hardware combinations above already carry it when the node or GPU itself varies; node
        # groups carry their own, groups.encode_groups: the scenario's gpu is not their hardware)
        one = np.array([catalog_peak_flop_s(s.gpu, p, 1.0) for p in memory.PRECISIONS])[
            np.asarray(cols["precision"])
        ]  # one GPU's peak at each row's precision, or NO_DATAPATH
        cols["catalog_peak_flop_s"] = np.where(one < 0, one, np.asarray(cols["gpus_per_node"]) * one)
    frame = Frame({k: np.asarray(v) for k, v in cols.items()}, n=n)
    check_cross_fields(_cross_field_row(frame), batch=True)
    return frame
