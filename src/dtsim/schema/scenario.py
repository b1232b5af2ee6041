"""The scenario schema: one pydantic model for files, the CLI, the Python API and (later) the HTTP API.

Field names follow MIRI simulator docs §9 in snake_case with their units. `BOUNDS` is the single table of
numeric limits: the pydantic fields are built from it and the vectorized batch validator
(`dtsim.models.decentralized.engine.validate_columns`) checks the same limits, so the scalar and batch paths reject the
same inputs with the same words.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    Strict,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from dtsim import catalog
from dtsim.errors import ScenarioError, format_problem, validation_problems
from dtsim.physics.runlength import GROWTH_FORMS, parse_growth
from dtsim.schema import inputs
from dtsim.schema.fields import (
    BOUNDS,
    GROWTH_PATTERN,
    STRAGGLER_ALIASES,
    Bool,
    Codec,
    CodecDevice,
    CompressionScenario,
    ExpertParallelism,
    Int,
    Lower,
    Num,
    Precision,
    ReplicaPenalty,
    StragglerCurve,
    StragglerStrategy,
    WorkAssignment,
    bound_text,
    bounded_int,
    ci_string_schema,
    enum_schema,
    lower_word,
    num_field,
    steps_schema,
    steps_value,
    straggler_word,
    words,
)
from dtsim.schema.groups import MAX_GROUPS, NodeGroup

RttMs = Annotated[float, Strict(), Field(**BOUNDS["latency_ms"])]


def auto_word(value: Any) -> Any:
    """'auto' in any case and with blanks around it is 'auto'; other values pass unchanged."""
    return "auto" if isinstance(value, str) and lower_word(value) == "auto" else value


class Scenario(BaseModel):
    """One training scenario. Defaults are MIRI simulator docs §9's (144B dense model, 12T tokens, 72 nodes of
    16× GH200 at 32 PFLOPS and 2304 GB, 100 Mbps and 100 ms WAN)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_default=False, frozen=True)

    # model and data
    parameters_b: Num = num_field("parameters_b", "Total parameters in billions (MoE: all experts).", 144.0)
    active_parameters_b: Num | None = Field(
        None,
        description="Active parameters per token in billions (MoE only; required when moe is true).",
        **BOUNDS["active_parameters_b"],
    )
    tokens_t: Num = num_field("tokens_t", "Training tokens in trillions.", 12.0)
    moe: Bool = Field(
        False, description="Mixture-of-experts model (compute uses active, memory total parameters)."
    )
    moe_layers: Int = num_field(
        "moe_layers", "MoE layers (two all-to-all latencies each per step with EP).", 32
    )
    expert_parallelism: Annotated[ExpertParallelism, Lower, enum_schema(words(ExpertParallelism))] = Field(
        ExpertParallelism.none,
        description="Shard experts over all nodes (global), a regional group, or not at all.",
    )
    hidden_size: bounded_int("hidden_size") | None = Field(
        None,
        description="Hidden size for pipeline activations; default 0.03·sqrt(P) (MIRI simulator docs §3.3).",
    )

    # hardware
    num_nodes: Int = num_field("num_nodes", "Nodes (geographically distributed training replicas).", 72)
    node: Annotated[
        str | None, WithJsonSchema({"anyOf": [ci_string_schema(tuple(catalog.nodes())), {"type": "null"}]})
    ] = Field(None, description="Node preset id (sets gpu, gpus_per_node, pflops and VRAM).")
    gpu: Annotated[
        str | None, WithJsonSchema({"anyOf": [ci_string_schema(tuple(catalog.gpus())), {"type": "null"}]})
    ] = Field("gh200", description="Accelerator id from the catalog (used for cost and energy).")
    gpus_per_node: bounded_int("gpus_per_node") | None = Field(16, description="Accelerators per node.")
    pflops_per_node: Num = num_field(
        "pflops_per_node", "Peak dense PFLOP/s per node at the training precision.", 32.0
    )
    vram_per_node_gb: Num = num_field("vram_per_node_gb", "Accelerator memory per node in GB.", 2304.0)
    mfu: Annotated[
        Num | Literal["auto"],
        BeforeValidator(auto_word),
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "number", "minimum": BOUNDS["mfu"]["ge"], "maximum": BOUNDS["mfu"]["le"]},
                    ci_string_schema(("auto",)),
                ]
            }
        ),
    ] = Field(
        0.4,
        description="Base model FLOP utilization per node (fraction), or 'auto': the datacenter model's "
        "MFU for a dense model of this size on one node of its GPUs.",
    )
    precision: Annotated[Precision, Lower, enum_schema(words(Precision))] = Field(
        Precision.fp16, description="Training precision."
    )

    # network
    bandwidth_mbps: Num | None = Field(
        None,
        description="Symmetric WAN bandwidth per node; sets both directions.",
        **BOUNDS["bandwidth_mbps"],
    )
    bandwidth_up_mbps: Num = num_field("bandwidth_up_mbps", "WAN upload bandwidth per node in Mbit/s.", 100.0)
    bandwidth_down_mbps: Num = num_field(
        "bandwidth_down_mbps", "WAN download bandwidth per node in Mbit/s.", 100.0
    )
    latency_ms: Num = num_field("latency_ms", "WAN round-trip time in ms.", 100.0)
    hierarchical: Bool = Field(
        False, description="Two-tier DiLoCo: regional groups inside the WAN (mode A′)."
    )
    nodes_per_group: Int = num_field("nodes_per_group", "Nodes per regional group.", 8)
    regional_bandwidth_mbps: Num = num_field(
        "regional_bandwidth_mbps",
        "Intra-group bandwidth in Mbit/s. With node groups the default is the groups' own links (the slowest "
        "direction of the slowest group), not 1000, in regions and in groups of nodes_per_group alike.",
        1000.0,
    )
    regional_latency_ms: Num = num_field(
        "regional_latency_ms",
        "Intra-group round-trip time in ms. Where node groups' regions are the regional groups, the default "
        "is the intra-region RTT (intra_region_rtt_ms), not 20.",
        20.0,
    )
    node_groups: list[NodeGroup] | None = Field(
        None,
        description="Heterogeneous nodes: groups of {count, node, region, bandwidth_up_mbps, "
        "bandwidth_down_mbps, latency_ms, …}; what a group omits comes from the scenario, and num_nodes is "
        "their total. The slowest link sets the sync, the work assignment the compute.",
        min_length=1,
        max_length=MAX_GROUPS,
    )
    region_rtt_ms: (
        dict[Annotated[str, Field(max_length=64)], dict[Annotated[str, Field(max_length=64)], RttMs]] | None
    ) = Field(
        None,
        description="Measured round-trip times between node groups' regions in ms ({a: {b: 80}}), "
        "replacing the geographic estimate for those pairs (either order).",
        max_length=MAX_GROUPS,
    )
    work_assignment: Annotated[WorkAssignment, Lower, enum_schema(words(WorkAssignment))] = Field(
        WorkAssignment.proportional,
        description="Node groups of unequal speed: tokens per replica in proportion to throughput "
        "(proportional), or the same batch everywhere, paced by the slowest group (slowest).",
    )
    tcp_streams: bounded_int("tcp_streams") | None = Field(
        None,
        description="Parallel TCP flows per WAN link: each carries at most one receive window per round trip "
        "(and the Mathis limit with loss_rate). Omitted: links carry their line rate.",
    )
    loss_rate: Num | None = Field(
        None,
        description="Packet loss rate of WAN flows (Mathis limit; needs tcp_streams).",
        **BOUNDS["loss_rate"],
    )

    # algorithm
    inner_steps: Annotated[
        Int | Literal["auto", "auto-quality"],
        BeforeValidator(steps_value),
        steps_schema("inner_steps", ("auto", "auto-quality")),
    ] = Field(
        128,
        description="Local steps between syncs H, or 'auto' (smallest H hiding the sync) or "
        "'auto-quality' (H maximising quality-adjusted compute per day).",
    )
    regional_steps: Annotated[
        Int | Literal["auto"], BeforeValidator(steps_value), steps_schema("regional_steps", ("auto",))
    ] = Field(16, description="Regional cycles per global sync (hierarchical), or 'auto'.")
    compression: Num = num_field(
        "compression", "Pseudo-gradient compression ratio on top of precision.", 16.0
    )
    regional_compression: Num | None = Field(
        None,
        description="Compression ratio of the regional tier of a hierarchy (default: compression); the lossier "
        "tier sets the compression quality.",
        **BOUNDS["regional_compression"],
    )
    codec: Annotated[Codec, Lower, enum_schema(words(Codec))] = Field(
        Codec.none,
        description="How pseudo-gradients are compressed, for its compute time: none (free), int8 (quantized "
        "ring all-reduce) or topk (top-k with error feedback); the ratio is `compression`.",
    )
    codec_device: Annotated[CodecDevice, Lower, enum_schema(words(CodecDevice))] = Field(
        CodecDevice.gpu,
        description="Where the codec runs: gpu (every GPU of a node in parallel) or cpu (one core).",
    )
    outer_state_on_gpu: Bool = Field(
        False,
        description="Keep streaming / overlapped DiLoCo's outer state (original weights, outer momentum) in "
        "accelerator memory, so it counts toward the stages; false: offloaded, a STREAMING_MEMORY warning only "
        "(the MIRI simulator docs' behaviour).",
    )
    compression_scenario: Annotated[CompressionScenario, Lower, enum_schema(words(CompressionScenario))] = (
        Field(CompressionScenario.expected, description="Which compression-quality table to use.")
    )
    error_feedback: Bool = Field(
        True, description="Compression with error feedback (selects the quality table)."
    )
    activation_compression: Num = num_field(
        "activation_compression", "Compression ratio of pipeline activations.", 1.0
    )
    local_batch_tokens: Int = num_field("local_batch_tokens", "Tokens per local step per replica.", 131072)
    micro_batches: Int = num_field("micro_batches", "Micro-batches per pipeline step.", 8)
    streaming: Bool = Field(True, description="Overlap sync with the next compute block (Streaming DiLoCo).")
    outer_overlap_steps: Int = num_field(
        "outer_overlap_steps",
        "Outer steps an overlapped outer update may arrive late (τ; 0: today's blocking or streaming sync). "
        "Up to τ syncs are in flight, so latency hides; the link still carries every payload.",
        0,
    )
    node_mtbf_hours: Num | None = Field(
        None,
        description="Mean time between failures of one node in hours (published large-run data: gpu_mtbf_hours "
        "/ GPUs per node, about 6,300 h for 8 GPUs); omitted: no failures (goodput 1).",
        **BOUNDS["node_mtbf_hours"],
    )
    pipeline_backward: Bool = Field(
        True,
        description="Count backward activation gradients in pipeline hand-offs (MIRI simulator docs §10 item 6).",
    )
    straggler_strategy: Annotated[
        StragglerStrategy,
        BeforeValidator(straggler_word),
        enum_schema(words(StragglerStrategy), tuple(STRAGGLER_ALIASES)),
    ] = Field(
        StragglerStrategy.none,
        description="Straggler mitigation: none, threshold, backup (workers) or relay.",
    )
    straggler_curve: Annotated[StragglerCurve, Lower, enum_schema(words(StragglerCurve))] = Field(
        StragglerCurve.closed_form,
        description="The straggler factor f(n): closed-form (1 + c·log2 n, the MIRI simulator's) or simulated "
        "(order statistics of a published per-node time distribution, for none, threshold and backup; "
        "docs/model.md §5).",
    )
    replica_penalty: Annotated[ReplicaPenalty, Lower, enum_schema(words(ReplicaPenalty))] = Field(
        ReplicaPenalty.h_scaled,
        description="Replica-count loss penalty in χ: h-scaled (default), fixed (original web app) or none.",
    )

    # run length
    hardware_growth: Annotated[str | float, WithJsonSchema({"type": "string", "pattern": GROWTH_PATTERN})] = (
        Field("1.37x/yr", description=f"Hardware efficiency growth; {GROWTH_FORMS}.")
    )
    software_growth: Annotated[str | float, WithJsonSchema({"type": "string", "pattern": GROWTH_PATTERN})] = (
        Field("3.0x/yr", description=f"Algorithmic efficiency growth; {GROWTH_FORMS}.")
    )
    investment_growth: Annotated[
        str | float, WithJsonSchema({"type": "string", "pattern": GROWTH_PATTERN})
    ] = Field("3.5x/yr", description=f"Investment growth; {GROWTH_FORMS}.")
    max_run_days: Num | None = Field(
        None, description="Override the computed maximum run length (days).", **BOUNDS["max_run_days"]
    )

    assumptions: Annotated[
        dict[str, Any],
        WithJsonSchema({"type": "object", "propertyNames": {"enum": list(catalog.assumption_rows())}}),
    ] = Field(default_factory=dict, description="Overrides of the assumptions table (name → value).")
    name: str | None = Field(None, description="Free-form label.")

    # The fields as given, before node/gpu presets filled in the rest (None: built another way).
    _given: dict[str, Any] | None = PrivateAttr(default=None)
    # the given fields whose value a preset supplied (no later layer set them): not what the user chose
    _from_preset: frozenset = PrivateAttr(default=frozenset())
    # The node groups with their hardware resolved (schema/group_resolve.py), when node_groups is given.
    _groups: Any = PrivateAttr(default=None)
    # Where `mfu: auto` took its value from, once the models layer has planned it (engine.resolve_mfu).
    _mfu_source: str | None = PrivateAttr(default=None)
    _mfu_warning: str | None = PrivateAttr(default=None)
    _planned_hfu_ratio: float | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if data.get("bandwidth_mbps") is not None:
            if "bandwidth_up_mbps" in data or "bandwidth_down_mbps" in data:
                raise ScenarioError(
                    [
                        (
                            "bandwidth_mbps",
                            data["bandwidth_mbps"],
                            "sets both directions; give either it or bandwidth_up_mbps/bandwidth_down_mbps",
                        )
                    ]
                )
            data["bandwidth_up_mbps"] = data["bandwidth_down_mbps"] = data["bandwidth_mbps"]
        for key in ("inner_steps", "regional_steps"):
            if key in data:
                data[key] = steps_value(data[key])
        rtt = data.get("region_rtt_ms")
        if isinstance(rtt, dict):  # region names in any case, as node_groups[].region takes them
            data["region_rtt_ms"] = {
                lower_word(a): ({lower_word(b): v for b, v in row.items()} if isinstance(row, dict) else row)
                for a, row in rtt.items()
            }
        total = _group_total(data.get("node_groups"))
        if total is not None:
            if "num_nodes" in data and data["num_nodes"] != total:
                raise ScenarioError(
                    [
                        (
                            "num_nodes",
                            data["num_nodes"],
                            f"must equal the node groups' total count ({total}), or be omitted",
                        )
                    ]
                )
            most = BOUNDS["num_nodes"]["le"]
            if total > most:  # num_nodes would be named, a field the user did not give
                raise ScenarioError(
                    [
                        (
                            "node_groups",
                            f"{total:,} nodes",
                            f"the groups' counts must total at most {most:,.0f} nodes",
                        )
                    ]
                )
            data["num_nodes"] = total
        node_id = data.get("node")
        if node_id is not None:
            node = catalog.nodes().get(lower_word(node_id)) if isinstance(node_id, str) else None
            if node is None:
                raise _unknown("node", node_id, catalog.nodes())
            data["node"] = node.id
            clash = []
            given_gpu = data.get("gpu")
            if isinstance(given_gpu, str) and node.gpu is not None and lower_word(given_gpu) != node.gpu:
                clash.append(
                    ("gpu", given_gpu, f"node {node.id} has {node.gpu} GPUs; give node or gpu, not both")
                )
            count = data.get("gpus_per_node")
            if (
                isinstance(count, int | float)
                and not isinstance(count, bool)
                and node.gpu_count is not None
                and count != node.gpu_count
            ):
                clash.append(
                    (
                        "gpus_per_node",
                        count,
                        f"node {node.id} has {node.gpu_count:g} GPUs; for another count give "
                        f"gpu: {node.gpu} and gpus_per_node instead of the node",
                    )
                )
            if clash:
                raise ScenarioError(clash)
            data.setdefault("gpu", node.gpu)
            data.setdefault("gpus_per_node", node.gpu_count)
            data.setdefault("pflops_per_node", node.pflops)
            data.setdefault("vram_per_node_gb", node.vram_gb)
            if node.precision is not None:
                data.setdefault("precision", node.precision)
        given = {k for k in catalog.NODE_SCALED if k in data}
        if node_id is None and data.get("gpu") is None and "gpus_per_node" in data:
            # another count of the default node's GPUs (16 GH200 at the MIRI simulator docs' figures):
            # its peak and memory scale with the count, as a scenario's own do (catalog.merge_layers)
            default = {k: cls.model_fields[k].default for k in catalog.NODE_SCALED}
            scaled = catalog.scaled_node(
                default, cls.model_fields["gpus_per_node"].default, data["gpus_per_node"]
            )
            data |= {k: v for k, v in scaled.items() if k not in given}
        gpu_id = data.get("gpu")
        if gpu_id is not None:
            gpu = catalog.gpus().get(lower_word(gpu_id)) if isinstance(gpu_id, str) else None
            if gpu is None:
                raise _unknown("gpu", gpu_id, catalog.gpus())
            data["gpu"] = gpu.id
            count = data.get("gpus_per_node", 16)
            if node_id is None and isinstance(count, int | float) and not isinstance(count, bool):
                # A GPU without explicit node figures: derive them from the catalog.
                if "pflops_per_node" not in data:
                    precision = lower_word(data.get("precision", "fp16"))
                    peak = gpu.peak_tflops(precision) if isinstance(precision, str) else gpu.fp16_tflops
                    if peak is None:
                        raise ScenarioError(
                            [
                                (
                                    "precision",
                                    precision,
                                    f"gpu {gpu.id} has no {precision.upper()} datapath; use "
                                    + ("fp16/bf16/fp8" if gpu.fp8_tflops else "fp16/bf16")
                                    + " or set pflops_per_node",
                                )
                            ]
                        )
                    data["pflops_per_node"] = count * peak / 1000.0
                data.setdefault("vram_per_node_gb", count * gpu.memory_gb)
        _check_derived(data, given)
        return data

    @model_validator(mode="after")
    def _cross_field(self) -> Scenario:
        problems: list[tuple[str, object, str]] = []
        if isinstance(self.inner_steps, int) and not (1 <= self.inner_steps <= BOUNDS["inner_steps"]["le"]):
            problems.append(
                ("inner_steps", self.inner_steps, bound_text("inner_steps") + ", 'auto' or 'auto-quality'")
            )
        if isinstance(self.mfu, float) and not BOUNDS["mfu"]["ge"] <= self.mfu <= BOUNDS["mfu"]["le"]:
            problems.append(("mfu", self.mfu, bound_text("mfu") + ", or 'auto'"))
        if isinstance(self.regional_steps, int) and not (
            1 <= self.regional_steps <= BOUNDS["regional_steps"]["le"]
        ):
            problems.append(
                ("regional_steps", self.regional_steps, bound_text("regional_steps") + " or 'auto'")
            )
        total = 0.0
        for key in ("hardware_growth", "software_growth", "investment_growth"):
            try:
                total += parse_growth(getattr(self, key))
            except ValueError as exc:
                problems.append((key, getattr(self, key), str(exc)))
        if problems:
            raise ScenarioError(problems)
        row = {
            "moe": self.moe,
            "active_parameters_b": float("nan")
            if self.active_parameters_b is None
            else self.active_parameters_b,
            "parameters_b": self.parameters_b,
            "hierarchical": self.hierarchical,
            "regional_ep": self.expert_parallelism == ExpertParallelism.regional,
            "nodes_per_group": self.nodes_per_group,
            "num_nodes": self.num_nodes,
            "growth_oom": total,
            "max_run_days": float("nan") if self.max_run_days is None else self.max_run_days,
            "loss_rate": float("nan") if self.loss_rate is None else self.loss_rate,
            "tcp_streams": float("nan") if self.tcp_streams is None else float(self.tcp_streams),
            "micro_batches": self.micro_batches,
            "local_batch_tokens": self.local_batch_tokens,
            **_region_tier(self.node_groups, "nodes_per_group" in self.model_fields_set),
        }
        check_cross_fields(row)
        from dtsim.assumptions import Assumptions

        # validates overrides (raises ScenarioError naming the entry) before the groups read them
        asm = Assumptions(self.assumptions)
        if self.node_groups is not None or self.region_rtt_ms is not None:
            from dtsim.schema.group_resolve import resolve_groups

            self._groups = resolve_groups(self, asm)
        check_alpha_domain(self.parameters_b * 1e9, asm)
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _keep_given(cls, data: Any, handler: Any) -> Scenario:
        scenario = handler(data)
        if isinstance(data, dict) and scenario._given is None:
            scenario._given = dict(data)
        return scenario

    def __eq__(self, other: object) -> bool:  # equal when the fields are, however they were given
        return isinstance(other, Scenario) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

    # --- helpers -----------------------------------------------------------------------------------
    def given_fields(self) -> dict[str, Any]:
        """The fields as the user gave them (a derived field such as the peak of a named gpu is left
        out, so that changing the gpu derives it again), or all fields when that is not known."""
        return dict(self._given) if self._given is not None else self.to_fields()

    def to_fields(self) -> dict[str, Any]:
        """The scenario as plain JSON-able fields (enums as their values, unset optionals dropped), which
        read back as the same run: with node groups, the LEFT_TO_MODEL fields the user did not give are
        left out, since written out they would be given and stop the model choosing them."""
        data = self.model_dump(mode="json", exclude_none=True)
        data.pop("bandwidth_mbps", None)
        if not data.get("assumptions"):
            data.pop("assumptions", None)
        if self.node_groups is not None and self._given is not None:
            for name in LEFT_TO_MODEL:
                if name not in self._given:
                    data.pop(name, None)
            # fields every group replaces (the default gh200 and 32 PFLOPS of a run on the groups' own
            # nodes, a latency_ms where every group has a region) are not the run's: left out, they read
            # back as the same run, and the file and the web page, which gives every field, echo alike
            for name in set.intersection(*(g.replaces() for g in self.node_groups)):
                data.pop(name, None)
            if self._mfu_source is not None and "mfu" in data:
                # a planned mfu: auto: groups with hardware of their own plan their own, so the number
                # planned for the scenario's hardware would not read back as this run; "auto" does
                data["mfu"] = "auto"
        return data

    @property
    def mfu_source(self) -> str | None:
        """Where a planned `mfu: auto` came from (None when the MFU was given as a number)."""
        return self._mfu_source

    @property
    def mfu_warning(self) -> str | None:
        """The plan's plausibility warning on the layout a planned `mfu: auto` came from (None: none)."""
        return self._mfu_warning

    @property
    def planned_hfu_mfu_ratio(self) -> float | None:
        """MFU / HFU of the layout a planned `mfu: auto` came from (None: the assumptions table's)."""
        return self._planned_hfu_ratio

    def with_planned_mfu(
        self, value: float, source: str | None, warning: str | None = None, hfu_mfu_ratio: float | None = None
    ) -> Scenario:
        """This scenario with `mfu: auto` replaced by the planned value (what was given stays 'auto');
        `source` None when the value only stands in for per-row MFUs of a batch; the plan's `warning` on
        the layout and its MFU / HFU (`hfu_mfu_ratio`) go with it."""
        out = self.model_copy(update={"mfu": value})
        out._mfu_source = source
        out._mfu_warning = warning
        out._planned_hfu_ratio = hfu_mfu_ratio
        return out

    def replace(self, **changes: Any) -> Scenario:
        """A new scenario: these fields over the given ones, layered as `--set` layers over a file."""
        new = load_scenario(layers=[self.given_fields(), changes])
        new._from_preset = self._from_preset - set(changes)
        return new


# Fields the model chooses for node groups when the scenario does not give them: groups in two or more
# regions form the regional tier of a hierarchy when that is faster (engine.run_frame_choosing), its
# groups the regions and its links the regions' own, at the intra-region RTT (models/decentralized/groups.py)
LEFT_TO_MODEL = ("hierarchical", "nodes_per_group", "regional_bandwidth_mbps", "regional_latency_ms")

# Rules that involve several fields, written once for a scalar scenario and for a batch: each
# predicate takes a row mapping whose values are scalars or equal-length arrays and returns where
# the rule is broken; the message is built from the values of the first broken row.
CROSS_FIELD_RULES = (
    (
        "loss_rate",
        lambda r: ~np.isnan(r["loss_rate"]) & np.isnan(r["tcp_streams"]),
        lambda r: "limits TCP flows: give tcp_streams (flows per link) too",
    ),
    (
        "active_parameters_b",
        lambda r: r["moe"] & np.isnan(r["active_parameters_b"]),
        lambda r: "required when moe is true (MIRI simulator docs §9 default: 24)",
    ),
    (
        "active_parameters_b",
        lambda r: r["moe"] & (r["active_parameters_b"] > r["parameters_b"]),
        lambda r: f"must be ≤ parameters_b = {r['parameters_b']:g} (active parameters are part of the total)",
    ),
    (
        "nodes_per_group",
        lambda r: r["hierarchical"] & (r["nodes_per_group"] < 2),
        lambda r: (
            "must be ≥ 2 when hierarchical is true: a regional group of one node has nobody to average "
            "with (hierarchical: false is that run, flat DiLoCo)"
        ),
    ),
    (
        "hierarchical",
        lambda r: (
            r["hierarchical"] & r.get("one_node_regions", False) & (r["nodes_per_group"] > r["num_nodes"])
        ),
        lambda r: (
            "is true, but every region of the node groups holds one node, so the regions form no regional "
            "tier (a group of one has nobody to average with): give nodes_per_group (≤ num_nodes = "
            f"{r['num_nodes']:g}) to group nodes by their order, or hierarchical: false"
        ),
    ),
    (
        "nodes_per_group",
        lambda r: (
            r["hierarchical"]
            & ~np.asarray(r.get("regions_form_groups", False))
            & ~np.asarray(r.get("one_node_regions", False))
            & (r["nodes_per_group"] > r["num_nodes"])
        ),
        lambda r: f"must be ≤ num_nodes = {r['num_nodes']:g} when hierarchical is true",
    ),
    (
        "nodes_per_group",
        lambda r: r["moe"] & r["regional_ep"] & (r["nodes_per_group"] > r["num_nodes"]),
        lambda r: f"must be ≤ num_nodes = {r['num_nodes']:g} with regional expert parallelism",
    ),
    (
        "micro_batches",
        lambda r: r["micro_batches"] > r["local_batch_tokens"],
        lambda r: (
            f"must be ≤ local_batch_tokens = {r['local_batch_tokens']:g} (a micro-batch holds a token at least)"
        ),
    ),
    (
        "hardware_growth + software_growth + investment_growth",
        lambda r: (r["growth_oom"] <= 0) & np.isnan(r["max_run_days"]),
        lambda r: "must be > 0 OOM/yr for a finite maximum run length (or set max_run_days)",
    ),
)
# The row value each rule reports (the field itself, except for the summed growth rates).
_RULE_VALUE = {"hardware_growth + software_growth + investment_growth": "growth_oom"}


def region_sizes(groups: Any) -> tuple[int, int] | None:
    """(regions, nodes in the largest) of node groups that each have a region, in two regions or more;
    None otherwise. Regions make the regional groups of a hierarchy where the largest holds two nodes or
    more and no nodes_per_group groups the nodes by their order (encode.encode_scenario)."""
    regions = [getattr(g, "region", None) for g in groups or ()]
    if not regions or None in regions or len(set(regions)) < 2:
        return None
    return len(set(regions)), max(sum(g.count for g in groups if g.region == r) for r in set(regions))


def _region_tier(groups: Any, size_given: bool) -> dict[str, bool]:
    """Whether node groups' regions make the regional groups (`region_sizes`), or have one node per region
    and so form no tier. The nodes_per_group rules do not apply to a size the regions replace."""
    sizes = None if size_given else region_sizes(groups)
    if sizes is None:
        return {}
    return {"regions_form_groups": sizes[1] >= 2, "one_node_regions": sizes[1] < 2}


def _group_total(groups: Any) -> int | None:
    """The node groups' total count, when every count is a whole number (else validation names it)."""
    if not isinstance(groups, list) or not groups:
        return None
    counts = [g.get("count") if isinstance(g, dict) else getattr(g, "count", None) for g in groups]
    if all(
        isinstance(c, int | float) and not isinstance(c, bool) and float(c).is_integer() and c >= 1
        for c in counts
    ):
        return int(sum(counts))
    return None


def check_cross_fields(row: dict[str, Any], batch: bool = False) -> None:
    """Raise ScenarioError for the first broken cross-field rule (naming the row in a batch)."""
    problems = []
    for field, broken, message in CROSS_FIELD_RULES:
        bad = np.asarray(broken(row))
        if not bad.any():
            continue
        i = int(np.flatnonzero(np.atleast_1d(bad))[0])
        at = {k: (np.atleast_1d(v)[i] if np.ndim(v) else v) for k, v in row.items()}
        value = at[_RULE_VALUE.get(field, field)]
        value = value.item() if hasattr(value, "item") else value
        if isinstance(value, float) and math.isnan(value):  # a field not given is NaN in a row
            value = None
        problems.append((f"{field}[{i}]" if batch else field, value, message(at)))
    if problems:
        raise ScenarioError(problems)


def check_alpha_domain(parameters, asm) -> None:
    """α = α_base / (1 + log10(P/10⁹)/divisor) is only a sensitivity for models above 10^(9 − divisor)
    parameters (MIRI simulator docs §4.3); below that its denominator turns negative and η_H would exceed 1."""
    import numpy as np

    p, divisor = np.broadcast_arrays(
        np.atleast_1d(np.asarray(parameters, dtype=float)), np.asarray(asm.alpha_size_divisor, dtype=float)
    )
    bad = 1.0 + np.log10(p / 1e9) / divisor <= 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        smallest = 10 ** (9 - divisor[i]) / 1e9
        raise ScenarioError(
            [
                (
                    "parameters_b",
                    p[i] / 1e9,
                    f"must be > {smallest:g} with alpha_size_divisor = "
                    f"{divisor[i]:g} (MIRI simulator docs §4.3's α is undefined below)",
                )
            ]
        )


def _unknown(field: str, value: Any, known: Any) -> ScenarioError:
    close = difflib.get_close_matches(str(value).lower(), list(known), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return ScenarioError([(field, value, f"unknown {field}{hint}; known: {', '.join(known)}")])


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema of a scenario file / request body."""
    return Scenario.model_json_schema()


# --- loading: files, presets, --set overrides -------------------------------------------------------

FIELD_NAMES = tuple(Scenario.model_fields)


_NUMBER = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)[eE][-+]?\d+\s*$")


_STRUCTURED = ("node_groups", "region_rtt_ms", "assumptions")  # fields whose value is a list or a table


def parse_set(assignments: list[str]) -> dict[str, Any]:
    """`field=value` strings from the CLI into a dict; values are parsed as YAML scalars
    (`true`, `12`, `1e3`, `auto`), dotted names set nested assumptions (`assumptions.pue=1.2`).
    Values are read as any user input is (schema/inputs.py: size, alias and type limits)."""
    out: dict[str, Any] = {}
    for item in assignments:
        if "=" not in item:
            raise ScenarioError([("--set", item, "expected field=value")])
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ScenarioError([("--set", item, "expected field=value (the field name is missing)")])
        try:
            value = inputs.parse_yaml(raw, key) if raw.strip() else raw
        except inputs.InputLimitError:
            raise
        except ScenarioError as exc:
            if key in _STRUCTURED and raw.strip()[:1] in "[{":  # a list or table field: why it does not read
                raise ScenarioError([(key, raw, why) for _, _, why in exc.problems]) from None
            value = raw  # not plain YAML: the text itself (the field's own check says what it allows)
        if isinstance(value, str) and key != "name" and _NUMBER.match(value):
            value = float(value)  # YAML 1.1 reads 1e3 as a string
        if key.startswith("assumptions."):
            table = out.setdefault("assumptions", {})
            if not isinstance(table, dict):
                raise ScenarioError(
                    [("assumptions", table, f"is not a table, so {key} cannot be set inside it")]
                )
            table[key.split(".", 1)[1]] = value
        else:
            if key == "assumptions" and not isinstance(value, dict):
                raise ScenarioError(
                    [
                        (
                            "assumptions",
                            value,
                            "must be a table of assumption names and values; set one with assumptions.NAME=VALUE",
                        )
                    ]
                )
            out[key] = value
    return out


def read_text_file(path: str | Path, field: str = "file") -> str:
    """A regular UTF-8 text file's contents, or a ScenarioError naming the file and why it cannot be
    read (schema/inputs.py: no FIFOs or devices, a size cap, the encoding named)."""
    return inputs.read_text_file(path, field)


def parse_data_text(text: str, path: str | Path) -> Any:
    """YAML or JSON text (by the file's suffix) as plain data (schema/inputs.py's checks)."""
    return inputs.parse_data(text, path, str(path))


def read_scenario_file(path: str | Path) -> dict[str, Any]:
    """Fields from a YAML or JSON scenario file (JSON is YAML, so one parser reads both)."""
    path = Path(path)
    data = parse_data_text(read_text_file(path), path)
    if data is None:  # an empty or comment-only document ran the default scenario silently
        raise ScenarioError(
            [("file", str(path), "holds no fields (empty, or comments only): give the fields it should set")]
        )
    if not isinstance(data, dict):
        raise ScenarioError([("file", str(path), "must hold a mapping of scenario fields")])
    if (
        "scenario" in data
        and isinstance(data["scenario"], dict)
        and set(data) <= {"scenario", "name", "description"}
    ):
        data = data["scenario"]
    return data


def load_scenario(
    file: str | Path | None = None,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    layers: list[dict[str, Any]] | None = None,
    file_fields: dict[str, Any] | None = None,
) -> Scenario:
    """Build a scenario from a preset, then a file, then overrides (later layers win). `file_fields`:
    the file's fields already read (and changed: distributions replaced by their point values)."""
    stack: list[dict[str, Any]] = []
    presets: list[int] = []  # which layers of the stack are presets
    if preset is not None:
        key = lower_word(preset)
        if not isinstance(key, str) or key not in catalog.scenario_presets():
            raise _unknown("preset", preset, catalog.scenario_presets())
        presets.append(len(stack))
        stack.append(catalog.preset_fields(key))
    if file_fields is None and file is not None:
        file_fields = read_scenario_file(file)
    if file_fields is not None:
        file_fields = dict(file_fields)
        if "preset" in file_fields:
            base = file_fields.pop("preset")
            key = lower_word(base)
            if not isinstance(key, str) or key not in catalog.scenario_presets():
                raise _unknown("preset", base, catalog.scenario_presets())
            if preset is not None and lower_word(preset) != key:
                # the file's base silently replaced the one asked for (its fields layered above it)
                raise ScenarioError(
                    [
                        (
                            "preset",
                            preset,
                            f"the file names another base preset ({base}): drop --preset, or the file's "
                            "`preset:` line",
                        )
                    ]
                )
            presets.append(len(stack))
            stack.append(catalog.preset_fields(key))
        stack.append(file_fields)
    if layers:
        stack.extend(layers)
    if overrides:
        stack.append(overrides)
    merged: dict[str, Any] = {}
    from_preset: set[str] = set()
    for i, layer in enumerate(stack):
        from_preset = (from_preset | set(layer)) if i in presets else (from_preset - set(layer))
        if "assumptions" in layer and "assumptions" in merged:
            layer = {**layer, "assumptions": {**merged["assumptions"], **layer["assumptions"]}}
        if layer.get("node_groups") and "num_nodes" not in layer:
            # groups given over a preset or file count their own nodes: the layer below's num_nodes
            # (intellect-1's 11) was refused as "must equal the groups' total", a value never written
            merged = {k: v for k, v in merged.items() if k != "num_nodes"}
        merged = catalog.merge_layers(merged, layer)
    scenario = make_scenario(merged)
    scenario._from_preset = frozenset(from_preset)
    return scenario


def base_preset(file: str | Path | None, preset: str | None, default: str) -> str | None:
    """The base preset of a command whose own default base is `default` (target's and governance's
    'governance'): the one given, else none where the file names its own (`preset:`), else `default`."""
    if preset is not None:
        return preset
    # read_scenario_file holds a mapping or raises (the loader reads the file again: a small text file)
    return None if file is not None and "preset" in read_scenario_file(file) else default


def _check_derived(data: dict[str, Any], given: set[str]) -> None:
    """A node's peak or memory derived from gpus_per_node (not given) past its field's bounds is an error
    naming gpus_per_node, the field the user gave, with the largest count that fits."""
    count = data.get("gpus_per_node")
    if not isinstance(count, int | float) or isinstance(count, bool) or count <= 0:
        return
    for key in ("pflops_per_node", "vram_per_node_gb"):
        value = data.get(key)
        if key in given or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        most = BOUNDS[key]["le"]
        if value > most:
            raise ScenarioError(
                [
                    (
                        "gpus_per_node",
                        count,
                        f"gives a node of {value:.4g} in {key} (at most {most:.4g}): at most "
                        f"{math.floor(count * most / value):,} GPUs per node of these",
                    )
                ]
            )


def make_scenario(fields: dict[str, Any]) -> Scenario:
    """Scenario(**fields), with pydantic's errors rewritten as 'field = value: what is allowed'."""
    unknown = [k for k in fields if k not in FIELD_NAMES]
    if unknown:
        problems = []
        for key in unknown:
            close = difflib.get_close_matches(key, FIELD_NAMES, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            problems.append((key, fields[key], f"unknown field; {hint}see `dtsim schema` for the fields"))
        # and the known fields' own problems, one line each (an unknown field hid them: a trial user fixed
        # one error to meet the next)
        known = {k: v for k, v in fields.items() if k not in unknown}
        try:
            Scenario(**known)
        except ScenarioError as exc:
            problems += exc.problems
        except ValidationError as exc:
            problems += validation_problems(exc, known, field_message)
        raise ScenarioError(problems)
    try:
        return Scenario(**fields)
    except ScenarioError:
        raise
    except ValidationError as exc:
        raise ScenarioError(validation_problems(exc, fields, field_message)) from None


_BOUND_ERRORS = frozenset(
    {
        "greater_than_equal",
        "greater_than",
        "less_than_equal",
        "less_than",
        "finite_number",
        "int_from_float",
        "int_parsing",
        "float_parsing",
        "int_type",
        "float_type",
    }
)


# optional fields whose absence means something: a bound error says so
OPTIONAL_MEANING = {
    "node_mtbf_hours": "leave it out for no failures",
    "tcp_streams": "leave it out for links at their line rate",
    "loss_rate": "leave it out for no loss",
}


def field_message(field: str, error_type: str) -> str | None:
    """What is allowed for a scenario field, in place of pydantic's wording (None: keep pydantic's); a
    node group's field of the wrong type (`node_groups.mfu`) is bounded as the scenario's ("Input should
    be a valid number" said neither the range nor that 'auto' is the scenario's)."""
    if field.startswith("node_groups."):
        name = field.removeprefix("node_groups.")
        name = {"count": "num_nodes"}.get(name, name)  # a group's count is bounded as num_nodes
        if name not in BOUNDS:
            return None
        return bound_text(name) + (
            "; mfu: auto is the scenario's (it plans every group's)" if name == "mfu" else ""
        )
    if field == "node_groups" and error_type == "too_short":
        return (
            "give at least one group ({count, node, region, …}), or leave node_groups out for identical nodes"
        )
    if error_type.startswith("bool_"):
        return "must be true or false"
    if field in OPTIONAL_MEANING and field in BOUNDS and error_type in _BOUND_ERRORS:
        return f"{bound_text(field)}; {OPTIONAL_MEANING[field]}"
    if field in ("inner_steps", "regional_steps", "mfu"):
        extra = "'auto' or 'auto-quality'" if field == "inner_steps" else "'auto'"
        return f"{bound_text(field)}, or {extra}"
    if field in BOUNDS and error_type in _BOUND_ERRORS:
        return bound_text(field)
    return None


def describe_problems(exc: ScenarioError) -> str:
    return "\n".join(format_problem(*p) for p in exc.problems)
