"""The page's inputs: which group each scenario field sits in, in what order, with which label and
tooltip — and nothing the schema already says. A widget's kind, its limits, its choices and its
default come from the `Scenario` model (its annotations, `BOUNDS` and defaults); the unit in a label
comes from the field's name. Also the conversions between widget values, scenario fields and share
links.
"""

from __future__ import annotations

import math
import string
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

from pydantic import WithJsonSchema
from pydantic.fields import FieldInfo

from dtsim import catalog
from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.physics.runlength import parse_growth
from dtsim.schema.fields import BOUNDS, GROWTH_PATTERN
from dtsim.schema.scenario import Scenario, parse_set

ASSUMPTION_PREFIX = "assumptions."
GROWTH_UNITS = ("x/yr", "%/yr", "OOM/yr")
# The unit a field's name ends in (MIRI simulator docs §9 names carry their units), as a label shows it.
UNIT_SUFFIXES = {
    "_b": "B",
    "_t": "T",
    "_gb": "GB",
    "_mbps": "Mbit/s",
    "_ms": "ms",
    "_days": "days",
    "_tokens": "tokens",
}


class _TipFormatter(string.Formatter):
    """Fills a tooltip's `{name}` places with the assumptions table's values (`g` unless a spec is
    given, a minus written as −), so a tooltip quotes the number the model uses."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return super().format_field(value, format_spec or "g").replace("-", "−")


def tip_values() -> dict[str, Any]:
    """The numbers a tooltip may quote: the assumptions table's values, and the share of the straggler
    delay that backup workers remove (1 − the residual the model keeps)."""
    values = {k: row["value"] for k, row in catalog.assumption_rows().items()}
    values["backup_delay_removed"] = 1 - values["backup_straggler_residual"]
    return values


def tip_text(template: str, values: dict[str, Any] | None = None) -> str:
    """A tooltip or label template with its `{assumption}` places filled in."""
    return _TipFormatter().vformat(template, (), tip_values() if values is None else values)


@dataclass(frozen=True)
class Hint:
    """The web-only facts about one input: its label (without the unit), its tooltip, and widget hints.
    `tip` and `blank` may quote an assumption as `{name}` (see `tip_text`)."""

    name: str
    label: str
    tip: str
    step: float | None = None  # the number widget's arrow step, when not 1 (integers) or free
    blank: str | None = None  # what an empty optional field means, shown in the label
    choices: Callable[[], Any] | None = None  # catalog-backed choices of a free-text field


@dataclass(frozen=True)
class Input:
    """One widget, as the page builds it."""

    name: str
    label: str
    kind: str  # number | int | optional | select | switch | steps | growth
    tip: str
    options: tuple = ()
    step: float | None = None
    min: float | None = None
    max: float | None = None


HINTS: tuple[tuple[str, tuple[Hint, ...]], ...] = (
    (
        "Model and data",
        (
            Hint(
                "parameters_b",
                "Parameters",
                "Total parameters P, all experts for MoE. Model-state memory M = P·β with β = {bytes_per_param_fp16}/{bytes_per_param_fp8}/{bytes_per_param_fp4} bytes "
                "for FP16/FP8/FP4 (MIRI simulator docs §2.1; ZeRO, Rajbhandari et al. 2019).",
            ),
            Hint(
                "tokens_t",
                "Tokens",
                "Training tokens D. Compute C = {flops_per_param_token}·P_active·D (MIRI simulator docs §1.1; Kaplan et al. 2020).",
            ),
            Hint(
                "moe",
                "Mixture of experts",
                "MoE: compute uses active parameters, memory total parameters (MIRI simulator docs §1.4, §2.3).",
            ),
            Hint(
                "active_parameters_b",
                "Active parameters",
                "Parameters active per token (MoE). Also the shared parameters of the EP memory model "
                "(MIRI simulator docs §2.4).",
            ),
            Hint(
                "moe_layers",
                "MoE layers",
                "Each MoE layer costs two latency-bound all-to-alls per step with EP: T_EP = {ep_all_to_all_per_layer}·RTT·L_MoE "
                "(MIRI simulator docs §1.5; GShard, Tutel).",
            ),
            Hint(
                "expert_parallelism",
                "Expert parallelism",
                "Shard experts over all nodes (global) or a regional group: M_node = (P_shared + "
                "P_experts/N_EP)·β (MIRI simulator docs §2.4; SPES, GShard, DeepSeek-V2).",
            ),
            Hint(
                "hidden_size",
                "Hidden size",
                "Hidden size h for pipeline activations; default h ≈ {hidden_size_coefficient}·√P_active, within ~20% of "
                "LLaMA-2 70B, GPT-3 and LLaMA-3.1 405B (MIRI simulator docs §3.3).",
                blank="{hidden_size_coefficient}·√P",
            ),
        ),
    ),
    (
        "Infrastructure",
        (
            Hint(
                "num_nodes",
                "Nodes",
                "Geographically distributed nodes, each a training replica (MIRI simulator docs §9).",
            ),
            Hint(
                "pflops_per_node",
                "Peak PFLOPS per node",
                "Dense peak at the training precision, e.g. 16×GH200 (MIRI simulator docs §9); catalog/gpus.yaml cites "
                "every accelerator's datasheet.",
            ),
            Hint(
                "vram_per_node_gb",
                "VRAM per node",
                "Accelerator memory per node; the model is pipelined over S = ⌈M/VRAM⌉ nodes when it does not "
                "fit (MIRI simulator docs §2.2).",
            ),
            Hint(
                "mfu",
                "Base MFU",
                "Model FLOP utilization per node: PaLM 46%, LLaMA-3.1 38–43%, INTELLECT-1 36–43% "
                "(MIRI simulator docs §1.3). Warning above {mfu_warning_threshold:.0%}. 'auto' takes the datacenter "
                "model's MFU for this model on one node (dense models).",
                step=0.01,
            ),
            Hint(
                "precision",
                "Precision",
                "Sets β ({bytes_per_param_fp16}/{bytes_per_param_fp8}/{bytes_per_param_fp4} B per parameter) and bytes per "
                "communicated value ({bytes_per_value_fp16}/{bytes_per_value_fp8}/{bytes_per_value_fp4}) "
                "(MIRI simulator docs §2.1, §8.1).",
            ),
            Hint(
                "gpu",
                "Accelerator (cost, energy)",
                "Catalog accelerator for price and board power (catalog/gpus.yaml, a source per number).",
                choices=catalog.gpus,
            ),
            Hint("gpus_per_node", "Accelerators per node", "GPUs per node: GPU count = nodes × this."),
        ),
    ),
    (
        "Network",
        (
            Hint(
                "bandwidth_up_mbps",
                "Upload",
                "Per-node WAN upload. A sync takes V/BW_up + V/BW_down + RTT (MIRI simulator docs §3.1; asymmetric "
                "links per the original's later model).",
            ),
            Hint("bandwidth_down_mbps", "Download", "Per-node WAN download."),
            Hint(
                "latency_ms",
                "RTT",
                "WAN round trip, paid once per sync and once per pipeline micro-batch slot (MIRI simulator docs §3.1, "
                "§3.3; SWARM).",
            ),
            Hint(
                "tcp_streams",
                "TCP flows per link",
                "Each flow carries at most one receive window ({linux_tcp_window_bytes:.0f} bytes) per round trip, and "
                "MSS/RTT·C/√p with loss (Mathis et al. 1997).",
                blank="line rate",
            ),
            Hint(
                "loss_rate",
                "Packet loss rate",
                "Random loss of WAN flows (Mathis limit; needs TCP flows).",
                blank="none",
            ),
            Hint(
                "node_mtbf_hours",
                "Node MTBF",
                "Mean time between failures of one node; published large-run data: {gpu_mtbf_hours:.0f} GPU-hours "
                "(Llama 3 §3.3.4) / GPUs per node. DiLoCo replicas drop out and rejoin; a synchronous pipeline "
                "restarts from a checkpoint.",
                blank="no failures",
            ),
        ),
    ),
    (
        "Hierarchy",
        (
            Hint(
                "hierarchical",
                "Hierarchical DiLoCo",
                "Regional groups sync every H steps, group leaders over the WAN every H·H_regional; "
                "H_eff = H·H_regional^{hierarchical_h_exponent} (MIRI simulator docs §3.2, §4.4; SPES, INTELLECT-1).",
            ),
            Hint(
                "nodes_per_group",
                "Nodes per group",
                "Regional group size; groups are whole (⌊N/N_group⌋), fewer than two fall back to flat.",
            ),
            Hint("regional_bandwidth_mbps", "Regional bandwidth", "Intra-group bandwidth."),
            Hint("regional_latency_ms", "Regional RTT", "Intra-group round trip."),
            Hint(
                "regional_compression",
                "Regional compression (×)",
                "The regional tier's ratio; the lossier tier sets the compression quality.",
                blank="as global",
            ),
            Hint(
                "regional_steps",
                "Regional cycles per global sync",
                "H_regional, or auto: the smallest that hides the global sync.",
            ),
        ),
    ),
    (
        "Algorithm",
        (
            Hint(
                "inner_steps",
                "Inner steps H",
                "Local steps between syncs. auto: the smallest H whose compute hides the sync; auto-quality: "
                "the H maximising quality-adjusted compute per day. η_H = max({efficiency_floor}, 1 − α·log10 H) "
                "(MIRI simulator docs §4; Douillard et al. 2023, Charles et al. 2025).",
            ),
            Hint(
                "compression",
                "Pseudo-gradient compression (×)",
                "On top of precision; quality from the table by ratio (original simulator; Streaming DiLoCo, "
                "MuLoCo, SparseLoCo, INTELLECT-1).",
            ),
            Hint(
                "compression_scenario",
                "Compression quality table",
                "Optimistic, expected or conservative quality factors (MIRI Compression_Quality.md).",
            ),
            Hint(
                "error_feedback",
                "Error feedback",
                "Selects the with/without error-feedback table (Karimireddy et al. 2019).",
            ),
            Hint(
                "activation_compression",
                "Activation compression (×)",
                "Pipeline hand-offs; quality q^(2·(S−1)) (original simulator; COAT, SWARM, TAH-Quant).",
            ),
            Hint(
                "local_batch_tokens",
                "Local batch",
                "Tokens per local step per replica = sequences × sequence length (MIRI simulator docs §3.3).",
            ),
            Hint(
                "micro_batches",
                "Micro-batches",
                "GPipe step (M + S − 1)·(T/(M·S) + (A/BW + RTT)·f(S)) (MIRI simulator docs §3.3; Huang et al. 2019).",
            ),
            Hint(
                "streaming",
                "Streaming (overlap sync)",
                "Outer step = max(H·T, T_sync) with streaming, else the sum (MIRI simulator docs §3.1; Streaming DiLoCo).",
            ),
            Hint(
                "codec",
                "Codec (its compute time)",
                "none: free; int8: the quantized ring all-reduce (INTELLECT-1); topk: top-k with error feedback. "
                "Time = passes × fp32 bytes ÷ throughput (measured on CPU; published GPU kernels).",
            ),
            Hint("codec_device", "Codec runs on", "gpu: every GPU of a node in parallel; cpu: one core."),
            Hint(
                "outer_state_on_gpu",
                "Outer state on the GPUs",
                "Streaming / overlapped DiLoCo's original weights and outer momentum (+{streaming_memory_overhead:.0%} "
                "of model state) count toward the pipeline stages; off: offloaded, a warning only.",
            ),
            Hint(
                "outer_overlap_steps",
                "Outer updates late by (τ)",
                "Up to τ syncs in flight: outer step = max(H·T, link time, T_sync/τ); η × "
                "{staleness_efficiency_per_outer_step}^(τ−1) (Streaming DiLoCo; Kale et al. 2025, eager updates).",
            ),
            Hint(
                "work_assignment",
                "Work across node groups",
                "proportional: tokens per replica in proportion to its throughput; slowest: equal batches, "
                "paced by the slowest group.",
            ),
            Hint(
                "pipeline_backward",
                "Count backward activation gradients",
                "Forward-only undercounts pipeline traffic about 2× (MIRI simulator docs §10 item 6).",
            ),
            Hint(
                "replica_penalty",
                "Replica penalty",
                "Loss multiplier M^β in χ, β = {replica_beta_coefficient}·P^{replica_beta_exponent}: scaled by ln H/ln {replica_h_reference} (h-scaled), unscaled "
                "(fixed, the original web app) or none.",
            ),
            Hint(
                "straggler_strategy",
                "Straggler mitigation",
                "none: f(n) = 1 + {straggler_coefficient}·log2 n; threshold: no wait, η/{threshold_efficiency_penalty}; "
                "backup: {backup_worker_fraction:.0%} extra nodes, {backup_delay_removed:.0%} less "
                "delay; relay: 1 + {relay_straggler_coefficient}·log2 n (MIRI simulator docs §5).",
            ),
            Hint(
                "straggler_curve",
                "Straggler curve",
                "closed-form: the factors above; simulated: none, threshold and backup take f(n) from order "
                "statistics of the one published per-node time distribution (Dean & Barroso 2013, a shared "
                "service's request latency: an upper reference, several times the closed form at 72 nodes).",
            ),
        ),
    ),
    (
        "Run length and assumptions",
        (
            Hint(
                "hardware_growth",
                "Hardware growth",
                "Maximum useful run L = 1/((g_H + g_S + g_I)·ln 10) years (MIRI simulator docs §7; Epoch AI, The Longest "
                "Training Run).",
            ),
            Hint(
                "software_growth",
                "Software growth",
                "Algorithmic efficiency growth (MIRI simulator docs §7.2).",
            ),
            Hint("investment_growth", "Investment growth", "Spending growth (MIRI simulator docs §7.2)."),
            Hint("max_run_days", "Maximum run", "Override L.", blank="computed"),
            Hint(
                ASSUMPTION_PREFIX + "hfu_mfu_ratio",
                "MFU/HFU ratio",
                "MFU as a fraction of HFU: {hfu_mfu_ratio} with selective recomputation (PaLM 46.2%/57.8%), 1.0 without, "
                "0.75 (6/8) with full recomputation (MIRI simulator docs §6.2; Korthikanti et al. 2022).",
                step=0.01,
            ),
        ),
    ),
)


# --- what the schema says about a field --------------------------------------------------------------


def _strip(t: Any) -> Any:
    """The type inside `Annotated[...]`."""
    while typing.get_origin(t) is typing.Annotated:
        t = typing.get_args(t)[0]
    return t


def _members(t: Any) -> tuple[Any, ...]:
    """The members of a union (a plain type is a union of one)."""
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        return tuple(_strip(a) for a in typing.get_args(t))
    return (_strip(t),)


def _is_growth(info: FieldInfo) -> bool:
    return any(
        isinstance(m, WithJsonSchema) and m.json_schema.get("pattern") == GROWTH_PATTERN
        for m in info.metadata
    )


def unit(name: str) -> str | None:
    """The unit a field's name ends in ('latency_ms' → 'ms'), or None."""
    return next((u for suffix, u in UNIT_SUFFIXES.items() if name.endswith(suffix)), None)


def _label(hint: Hint) -> str:
    parts = [p for p in (unit(hint.name), hint.blank and f"blank: {tip_text(hint.blank)}") if p]
    return f"{hint.label} ({'; '.join(parts)})" if parts else hint.label


def _limits(name: str) -> tuple[float | None, float | None]:
    """A number widget's limits: the schema's BOUNDS (an exclusive lower limit shows as the minimum)."""
    b = BOUNDS.get(name, {})
    return b.get("ge", b.get("gt")), b.get("le")


def _kind(name: str, info: FieldInfo, hint: Hint) -> tuple[str, tuple]:
    """The widget kind and choices of a scenario field, from its annotation, metadata and default."""
    members = _members(info.annotation)
    nullable = type(None) in members
    members = tuple(m for m in members if m is not type(None))
    literals = tuple(a for m in members if typing.get_origin(m) is typing.Literal for a in typing.get_args(m))
    if literals:
        return "steps", ("fixed", *literals)
    if _is_growth(info):
        return "growth", ()
    (base,) = members
    if isinstance(base, type) and issubclass(base, StrEnum):
        return "select", tuple(m.value for m in base)
    if base is str and hint.choices is not None:
        return "select", tuple(hint.choices())
    if base is bool:
        return "switch", ()
    if base in (int, float):
        if nullable and info.default is None:
            return "optional", ()
        return ("int" if base is int else "number"), ()
    raise TypeError(f"no widget for scenario field {name} of type {info.annotation}")


def make_input(hint: Hint) -> Input:
    """One widget's spec: the hint's words, the schema's kind, choices and limits."""
    tip = tip_text(hint.tip)
    if hint.name.startswith(ASSUMPTION_PREFIX):
        return Input(hint.name, _label(hint), "number", tip, step=hint.step)
    kind, options = _kind(hint.name, Scenario.model_fields[hint.name], hint)
    lo, hi = _limits(hint.name) if kind in ("number", "int", "optional", "steps") else (None, None)
    step = hint.step or (1 if kind in ("int", "steps") else None)
    return Input(hint.name, _label(hint), kind, tip, options, step, lo, hi)


GROUPS: tuple[tuple[str, tuple[Input, ...]], ...] = tuple(
    (title, tuple(make_input(h) for h in hints)) for title, hints in HINTS
)
INPUTS = {i.name: i for _, group in GROUPS for i in group}


# --- widget values ↔ scenario fields ↔ share links -----------------------------------------------------


def default_values() -> dict[str, Any]:
    """Widget values for the default scenario."""
    return scenario_to_values(Scenario())


def scenario_to_values(s: Scenario) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in INPUTS:
        if name.startswith(ASSUMPTION_PREFIX):
            values[name] = Assumptions(s.assumptions).as_dict()[name.removeprefix(ASSUMPTION_PREFIX)]
            continue
        v = getattr(s, name)
        values[name] = v.value if hasattr(v, "value") else v
    return values


def values_to_fields(values: dict[str, Any]) -> dict[str, Any]:
    """Widget values → scenario fields (None means 'not set')."""
    fields: dict[str, Any] = {}
    for name, value in values.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if name.startswith(ASSUMPTION_PREFIX):
            key = name.removeprefix(ASSUMPTION_PREFIX)
            if value != catalog.assumption_rows()[key]["value"]:  # only real overrides
                fields.setdefault("assumptions", {})[key] = value
        else:
            fields[name] = value
    return fields


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return str(v)


# A gpu read from a link re-derives these from the catalog (schema/scenario.py: `gpu` in a layer drops the
# hardware fields under it), so a link that names the gpu names them too, even at their defaults
GPU_DERIVED = ("gpus_per_node", "pflops_per_node", "vram_per_node_gb")


def share_query(values: dict[str, Any]) -> str:
    """The query string of a scenario: the fields that differ from the defaults (order fixed), and with
    a gpu the hardware it would otherwise re-derive, so the link reads back as the page computed it."""
    defaults = default_values()
    # a gpu re-derives the hardware under it, and a count alone scales it (catalog.merge_layers): either way
    # the link names the page's peak and memory
    with_gpu = any(
        values.get(k) is not None and values.get(k) != defaults.get(k) for k in ("gpu", "gpus_per_node")
    )
    pairs = [
        (k, _query_value(v))
        for k, v in values.items()
        if v is not None and (v != defaults.get(k) or (with_gpu and k in GPU_DERIVED))
    ]
    return urlencode(pairs)


def from_shared(params: dict[str, str]) -> dict[str, str]:
    """A query that came from another view, in this scenario's fields: the navigation carries the
    keys every view shares (views.SHARED_KEYS), and three of them are named for the datacenter views:
    `model` (a catalog model: its parameters, active parameters when MoE, and hidden size), `nodes`
    (num_nodes) and `tokens` (tokens_t, in trillions). They take the place of the scenario's own
    fields, as the other shared keys do. A bad value is a ScenarioError naming the shared key."""
    from dtsim.physics.transformer import count_params, get_architecture

    out = dict(params)
    problems = []
    if "nodes" in out:
        text = out.pop("nodes")
        if not text.strip().isdigit() or int(text) < 1:
            problems.append(("nodes", text, "must be a whole number of nodes ≥ 1"))
        elif "node_groups" not in out:  # with node groups, the groups' counts are the node count
            out["num_nodes"] = text.strip()
    if "tokens" in out:
        text = out.pop("tokens")
        try:
            tokens = float(text)
        except ValueError:
            tokens = math.nan
        if not (math.isfinite(tokens) and tokens > 0):
            problems.append(("tokens", text, "must be a positive number of training tokens, e.g. 1e12"))
        else:
            out["tokens_t"] = repr(tokens / 1e12)
    if "model" in out:
        name = out.pop("model")
        try:
            arch = get_architecture(name)
        except ScenarioError as exc:
            problems += [("model", name, m) for _f, _v, m in exc.problems]
        else:
            n = count_params(arch)
            out["parameters_b"] = repr(n.total / 1e9)
            out["hidden_size"] = str(arch.hidden)
            out["moe"] = "true" if arch.moe else "false"
            if arch.moe:
                out["active_parameters_b"] = repr(n.active / 1e9)
            else:
                out.pop("active_parameters_b", None)
    if problems:
        raise ScenarioError(problems)
    return out


def parse_query(params: dict[str, str]) -> dict[str, Any]:
    """A share URL's query parameters → scenario fields (parsed as `--set` values are)."""
    return parse_set([f"{k}={v}" for k, v in params.items()])


def split_growth(text: Any) -> tuple[float, str]:
    """'1.37x/yr' → (1.37, 'x/yr'); other forms keep their own unit."""
    t = str(text).strip()
    for unit_name, suffixes in (
        ("%/yr", ("%/yr", "%")),
        ("OOM/yr", ("oom/yr", "oom")),
        ("x/yr", ("x/yr", "×/yr", "x")),
    ):
        for suffix in suffixes:
            if t.lower().endswith(suffix):
                return float(t[: -len(suffix)].strip()), unit_name
    return 10 ** parse_growth(t), "x/yr"


def join_growth(number: float, unit_name: str) -> str:
    """A growth widget's number and unit → the scenario's growth text."""
    return f"{number:g}{unit_name}" if unit_name != "OOM/yr" else f"{number:g} OOM/yr"


def to_number(value: Any, kind: str) -> Any:
    """A number widget's value → the field value (integers stay integers)."""
    if value is None:
        return None
    if kind == "int" and float(value) == int(value):
        return int(value)
    return float(value)
