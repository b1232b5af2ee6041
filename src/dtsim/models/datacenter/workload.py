"""The inputs of the datacenter model: a cluster, a parallel layout and the workload that joins them
with a model, the columns `evaluate` reads from a layout, Megatron-LM's divisibility rules, and `build`,
which turns a field mapping into one of these inputs with field-named errors (used by the CLI and by
validation alike)."""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dtsim import catalog
from dtsim.errors import ScenarioError, validation_problems
from dtsim.models.datacenter.plausibility import warn
from dtsim.models.network import default_torus, parse_torus
from dtsim.physics.transformer import Architecture

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero-bubble", "dualpipe", "dualpipev")
RECOMPUTES = ("none", "selective", "full")
PRECISION_BITS = {"bf16": 16, "fp16": 16, "fp8": 8}


class Cluster(BaseModel):
    """GPUs and the network that joins them. A cluster fabric (`fabric`, catalog/cluster_fabrics.yaml)
    gives GPUs per node, NVLink domain, link types, NICs per node and oversubscription at once; each
    field given explicitly overrides it, and without a fabric the GPU's own link types apply."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    gpu: str = Field(
        "a100-80gb",
        description="Catalog GPU with micro-architecture constants (default: the fabric's, else this).",
    )
    nodes: int = Field(1, ge=1, le=1_000_000)
    gpus_per_node: int = Field(
        8, ge=1, le=100_000, description="GPUs per node (default: the fabric's, else 8)."
    )
    fabric: str | None = Field(None, description="Cluster fabric id (catalog/cluster_fabrics.yaml).")
    intra_fabric: str | None = Field(
        None, description="NVLink link type (default: the fabric's, else the GPU's)."
    )
    inter_fabric: str | None = Field(
        None, description="NIC link type (default: the fabric's, else the GPU's)."
    )
    nics_per_node: float | None = Field(
        None,
        gt=0,
        le=256,
        description="Scale-out NICs per node (default: the fabric's, else one per GPU's share).",
    )
    nic_gbps: float | None = Field(
        None,
        ge=0.01,  # 10 Mbit/s: below it no datacenter NIC exists and step times overflow
        le=100_000,
        allow_inf_nan=False,
        description="Line rate of one NIC in Gbit/s (default: the NIC link type's).",
    )
    nvlink_gbps: float | None = Field(
        None,
        ge=1,  # 1 Gbit/s: far below any NVLink or PCIe generation
        le=1_000_000,
        allow_inf_nan=False,
        description="NVLink bandwidth per GPU, one direction, in Gbit/s (default: the NVLink link type's).",
    )
    nvlink_domain: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="GPUs one NVLink domain joins, a multiple of gpus_per_node (default: the fabric's, else a node).",
    )
    oversubscription: float | None = Field(
        None,
        ge=1,
        le=64,
        allow_inf_nan=False,
        description="Scale-out oversubscription above the leaf switches (default: the fabric's, else 1).",
    )
    torus: str | None = Field(
        None,
        max_length=40,
        description="TPU slice shape in chips, e.g. 4x4x4 (v4/v5p: 3 axes; v5e/v6e: 2); the job is one slice or "
        "several joined by DCN (default: the job's chips in as few slices as the pod allows, axes as equal as "
        "powers of two make them).",
    )
    nvls: bool = Field(
        True,
        description="NCCL's NVLS all-reduce (NVLink SHARP, reduced in the NVSwitch) where the NVLink type has it "
        "(NVLink 4 and 5); false as with NCCL_NVLS_ENABLE=0.",
    )

    @model_validator(mode="before")
    @classmethod
    def _fabric_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("fabric") is not None:
            fab = catalog.cluster_fabrics().get(data["fabric"])
            if fab is not None:
                data = dict(data)
                for key in ("gpu", "gpus_per_node"):  # a fabric's GPU and node size unless given
                    if data.get(key) is None:
                        data[key] = getattr(fab, key)
        if isinstance(data, dict) and data.get("gpus_per_node") is None and isinstance(data.get("gpu"), str):
            gpu = catalog.gpus().get(data["gpu"])
            if gpu is not None and gpu.micro is not None and gpu.micro.chips_per_host:
                data = {**data, "gpus_per_node": gpu.micro.chips_per_host}  # a TPU host's chips
        return data

    @model_validator(mode="after")
    def _check(self) -> Cluster:
        gpu = catalog.gpus().get(self.gpu)
        if gpu is None or gpu.micro is None:
            modelled = [k for k, g in catalog.gpus().items() if g.micro is not None]
            raise ScenarioError(
                [("gpu", self.gpu, f"needs micro-architecture constants; modelled: {', '.join(modelled)}")]
            )
        if self.fabric is not None:
            fab = catalog.cluster_fabrics().get(self.fabric)
            if fab is None:
                known = ", ".join(catalog.cluster_fabrics())
                raise ScenarioError([("fabric", self.fabric, f"unknown cluster fabric; known: {known}")])
            built_for = catalog.gpus()[fab.gpu].micro.generation
            if gpu.micro.generation != built_for:
                raise ScenarioError(
                    [
                        (
                            "gpu",
                            self.gpu,
                            f"fabric {self.fabric} is built for {built_for} GPUs ({fab.gpu}); give a GPU of that generation, "
                            "or describe this cluster's network with --nics-per-node, --nic-gbps, "
                            "--nvlink-gbps and --nvlink-domain instead of a fabric",
                        )
                    ]
                )
        for field in ("intra_fabric", "inter_fabric"):
            value = getattr(self, field)
            if value is not None and value not in catalog.fabrics():
                raise ScenarioError(
                    [(field, value, f"unknown fabric; known: {', '.join(catalog.fabrics())}")]
                )
        self._check_torus()
        net = self.network_fields()
        domain = net["nvlink_domain"]
        most = catalog.fabrics()[net["nvlink"]].max_domain
        if most is not None and domain > most:
            field = "nvlink_domain" if self.nvlink_domain is not None else "gpus_per_node"
            raise ScenarioError(
                [
                    (
                        field,
                        getattr(self, field),
                        f"an NVLink domain of {domain} GPUs: {net['nvlink']} joins at most {most} "
                        f"({catalog.fabrics()[net['nvlink']].max_domain_source})",
                    )
                ]
            )
        if domain % self.gpus_per_node:
            raise ScenarioError(
                [("nvlink_domain", domain, f"must be a multiple of gpus_per_node ({self.gpus_per_node})")]
            )
        return self

    def _link_ids(self) -> tuple[str, str]:
        """(scale-up, scale-out) link type ids: explicit, else the cluster fabric's, else the GPU's own."""
        fab = catalog.cluster_fabrics().get(self.fabric) if self.fabric else None
        micro = catalog.gpus()[self.gpu].micro
        nvlink = fab.nvlink if fab and not self._own_nvlink_slower() else micro.nvlink
        return self.intra_fabric or nvlink, self.inter_fabric or (fab.nic if fab else micro.nic)

    def _own_nvlink_slower(self) -> bool:
        """Whether a cluster fabric built for another GPU has faster NVLink than this GPU's own (H800 in a
        DGX H100 fabric: the chip carries 400 GB/s, not the H100's 900): the chip's links are used."""
        fab = catalog.cluster_fabrics().get(self.fabric) if self.fabric else None
        if fab is None or fab.gpu == self.gpu:
            return False
        links, own = catalog.fabrics(), catalog.gpus()[self.gpu].micro.nvlink
        return links[own].bandwidth_gb_s < links[fab.nvlink].bandwidth_gb_s

    def _ici(self) -> catalog.Fabric | None:
        """The scale-up link type when it is a TPU's ICI torus, else None."""
        link = catalog.fabrics()[self._link_ids()[0]]
        return link if link.torus_dims else None

    def _check_torus(self) -> None:
        ici = self._ici()
        if ici is None:
            if self.torus is not None:
                raise ScenarioError(
                    [
                        (
                            "torus",
                            self.torus,
                            f"needs a TPU (a torus interconnect); {self.gpu} has an NVLink switch",
                        )
                    ]
                )
            return
        if self.nvlink_domain is not None:
            raise ScenarioError(
                [
                    (
                        "nvlink_domain",
                        self.nvlink_domain,
                        "does not apply to a TPU: give the slice shape as --torus",
                    )
                ]
            )
        shape = self.torus_shape()
        slice_chips = math.prod(shape)
        if self.n_gpus % slice_chips or slice_chips % self.gpus_per_node:
            raise ScenarioError(
                [
                    (
                        "torus",
                        "x".join(map(str, shape)),
                        f"a slice of {slice_chips} chips must hold whole hosts ({self.gpus_per_node} chips) and "
                        f"divide the job's {self.n_gpus} chips into equal slices",
                    )
                ]
            )

    def torus_shape(self) -> tuple[int, ...]:
        """A TPU slice's axis lengths: `torus` as given, else the default (see the field)."""
        ici = self._ici()
        if ici is None:
            return ()
        if self.torus is not None:
            return parse_torus(self.torus, ici)
        return default_torus(self.n_gpus, ici)

    def network_fields(self) -> dict[str, Any]:
        """The network as resolved: explicit fields, else the cluster fabric's, else the GPU's own
        (link types by id, wire rates in Gbit/s: NVLink per GPU in one direction, per NIC)."""
        micro = catalog.gpus()[self.gpu].micro
        links = catalog.fabrics()
        fab = catalog.cluster_fabrics().get(self.fabric) if self.fabric else None
        nvlink, nic = self._link_ids()
        torus = self.torus_shape()
        return {
            "fabric": self.fabric,
            "nvlink": nvlink,
            "nvlink_gbps": self.nvlink_gbps or links[nvlink].bandwidth_gb_s * 8.0,
            # a fabric whose NVLink domain is one node keeps it one node when gpus_per_node is changed
            "nvlink_domain": (math.prod(torus) if torus else None)
            or self.nvlink_domain
            or (fab.nvlink_domain if fab and fab.nvlink_domain != fab.gpus_per_node else self.gpus_per_node),
            "nic": nic,
            # NICs per GPU stay the fabric's (or the GPU's) when gpus_per_node is changed
            "nics_per_node": self.nics_per_node
            or (fab.nics_per_node / fab.gpus_per_node if fab else micro.nics_per_gpu) * self.gpus_per_node,
            "nic_gbps": self.nic_gbps or links[nic].bandwidth_gb_s * 8.0,
            "oversubscription": self.oversubscription or (fab.oversubscription if fab else 1.0),
            # NVLS needs an NVLink switch that reduces and more than one GPU behind it
            "nvls": self.nvls and links[nvlink].nvls_efficiency is not None and self.gpus_per_node > 1,
            "torus": torus,
        }

    @property
    def n_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def ignored_fields(self, leaf_nodes: float | None = None) -> list[dict[str, str]]:
        """A warning for each network field given where it has nothing to act on, so a cluster never
        takes one silently: NVLS switched off on a link type without it, scale-out fields on a job
        that never leaves one NVLink domain (or TPU slice), oversubscription on a job under one leaf
        switch (`leaf_nodes`, the assumptions table's leaf_switch_nodes); and a fabric's NVLink this
        GPU cannot carry."""
        net = self.network_fields()
        notes = []
        if self.intra_fabric is None and self._own_nvlink_slower():
            fab = catalog.cluster_fabrics()[self.fabric]
            links = catalog.fabrics()
            notes.append(
                warn(
                    "FABRIC_NVLINK_NOT_CARRIED",
                    f"fabric {self.fabric}: its {fab.nvlink} ({links[fab.nvlink].bandwidth_gb_s:g} GB/s a direction, "
                    f"built for {fab.gpu}) is faster than {self.gpu}'s own NVLink; the {self.gpu}'s "
                    f"{net['nvlink']} ({links[net['nvlink']].bandwidth_gb_s:g} GB/s) is used",
                )
            )
        if (
            self.oversubscription is not None
            and leaf_nodes is not None
            and self.nodes <= leaf_nodes
            and self.n_gpus > net["nvlink_domain"]
        ):
            notes.append(
                warn(
                    "OVERSUBSCRIPTION_IGNORED",
                    f"oversubscription {self.oversubscription:g}: the job's {self.nodes} nodes sit under one leaf "
                    f"switch ({leaf_nodes:g} nodes, leaf_switch_nodes), so no traffic crosses the tier above it: "
                    "ignored",
                )
            )
        if not self.nvls and catalog.fabrics()[net["nvlink"]].nvls_efficiency is None:
            notes.append(
                warn(
                    "NVLS_IGNORED",
                    f"nvls false: the {net['nvlink']} links have no NVLink SHARP to turn off (NVLink 4 and 5 "
                    "switches only): ignored",
                )
            )
        scale_out = [
            f"{name} {getattr(self, name):g}"
            if name != "inter_fabric"
            else f"inter_fabric {self.inter_fabric}"
            for name in ("nics_per_node", "nic_gbps", "oversubscription", "inter_fabric")
            if getattr(self, name) is not None
        ]
        domain = net["nvlink_domain"]
        if scale_out and self.n_gpus <= domain:
            where = "one TPU slice" if net["torus"] else f"one NVLink domain of {domain} GPUs"
            notes.append(
                warn(
                    "SCALE_OUT_IGNORED",
                    f"{', '.join(scale_out)}: the job's {self.n_gpus} {'chips' if net['torus'] else 'GPUs'} sit in {where}, so no traffic "
                    "crosses the scale-out network: ignored",
                )
            )
        return notes


AttentionKernel = Literal["flash2", "flash1", "triton"]
ATTENTION_KERNELS: tuple[str, ...] = get_args(AttentionKernel)  # as the "attn_kernel" column: an index


class Layout(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    dp: int | None = Field(None, ge=1, description="Data-parallel degree (default: GPUs / (tp·pp·cp)).")
    tp: int = Field(1, ge=1, le=4096)
    pp: int = Field(1, ge=1, le=100_000)
    vpp: int = Field(1, ge=1, le=1000, description="Virtual (interleaved) stages per pipeline stage.")
    cp: int = Field(1, ge=1, le=4096, description="Context parallelism (splits the sequence).")
    ep: int = Field(1, ge=1, le=100_000, description="Expert parallelism (MoE).")
    sequence_parallel: bool = False
    mbs: int = Field(1, ge=1, le=1_000_000, description="Micro-batch size in sequences.")
    gbs: int = Field(ge=1, le=1_000_000_000, description="Global batch size in sequences.")
    zero: int = Field(1, ge=0, le=3, description="ZeRO stage over the data-parallel group.")
    shard_group: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="HSDP: ZeRO-3 shards over groups of this many data-parallel ranks and replicates across "
        "them (default: the whole dp·cp group).",
    )
    recompute: Literal["none", "selective", "full"] = "selective"
    schedule: Literal["gpipe", "1f1b", "interleaved", "zero-bubble", "dualpipe", "dualpipev"] = "1f1b"
    overlap_grad_reduce: bool = Field(
        True, description="Overlap the gradient reduction with the backward pass."
    )
    overlap_tp_comm: bool = Field(False, description="Overlap tensor-parallel collectives with GEMMs.")
    overlap_p2p_comm: bool = Field(
        False,
        description="Overlap the pipeline's sends and receives with the model chunks' compute (Megatron's "
        "overlap_p2p_comm); the interleaved schedule only, as Megatron turns it off for the others.",
    )
    flash_attention: bool = True
    attention_kernel: AttentionKernel = Field(
        "flash2",
        description="Which FlashAttention runs when flash_attention is on: flash2 (FlashAttention-2: "
        "flash-attn ≥ 2, PyTorch ≥ 2.2 SDPA), flash1 (flash-attn 1.x) or triton (the Triton implementation, "
        "e.g. llm-foundry's attn_impl: triton); each at its measured speed by sequence length and head "
        "dimension (attention_kernels.yaml).",
    )
    embedding_stages: Literal["first-last", "balanced"] = Field(
        "first-last",
        description="Embedding and output layer on the first/last stages, or as their own slots.",
    )
    pp_layers: tuple[int, ...] | None = Field(
        None,
        description="Transformer layers of each pipeline stage, first to last (default: as even as possible).",
    )
    fp32_grad_accumulation: bool | None = Field(
        None,
        description="Accumulate and reduce gradients in FP32 (default: on for bf16 and fp8, off for fp16, as "
        "Megatron-LM does).",
    )
    fp32_params: bool = Field(
        False,
        description="Parameters kept in FP32 only, the optimizer's master weights, as PyTorch FSDP's "
        "MixedPrecision and JAX (MaxText) keep them: under ZeRO-3 sharding no 16-bit shard is kept, the "
        "16-bit weights existing only in the gathered units; without it (ZeRO 0–2, SHARD_GRAD_OP) the "
        "16-bit copy is held from forward to backward all the same. Off: a 16-bit copy beside the FP32 "
        "master, as Megatron-LM and DeepSpeed keep it.",
    )
    moe_capacity_factor: float | None = Field(
        None,
        ge=1,
        le=64,
        allow_inf_nan=False,
        description="MoE expert capacity as a multiple of the mean load (GShard; Switch Transformer): every "
        "expert computes and exchanges buffers of that many tokens, padded, and drops what overflows. "
        "Default: dropless (Megatron-Core's default), which runs at moe_imbalance. Below 1 even a balanced "
        "router drops tokens, which dtsim does not model.",
    )
    moe_imbalance: float = Field(
        1.0,
        ge=1,
        le=64,
        allow_inf_nan=False,
        description="Dropless MoE: routed tokens on the busiest expert-parallel rank over the mean (1: "
        "perfectly balanced). Every rank waits for it in the all-to-all, so its expert GEMMs, its all-to-all "
        "and its buffers set the pace and the memory. Without expert parallelism (ep = 1) every rank holds "
        "every expert and gets the mean, so it has no effect there.",
    )

    @model_validator(mode="before")
    @classmethod
    def _virtual_stages_interleave(cls, data: Any) -> Any:
        """Megatron-LM's 1F1B with virtual stages is its interleaved schedule: a layout with vpp > 1 and
        the 1F1B schedule is that schedule, and is reported as `interleaved`."""
        if isinstance(data, dict) and data.get("schedule", "1f1b") == "1f1b":
            try:
                vpp = int(data.get("vpp", 1))
            except (TypeError, ValueError):
                return data  # the field's own check names it
            if vpp > 1:
                return {**data, "schedule": "interleaved"}
        return data

    @model_validator(mode="after")
    def _kernel_needs_flash(self) -> Layout:
        problems = attention_kernel_problems(self.attention_kernel, self.flash_attention)
        if problems:
            raise ScenarioError(problems)
        return self


class Workload(BaseModel):
    """A model on a cluster with a layout: the input of `dtsim step`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str | Architecture
    seq_len: int | None = Field(None, ge=1, description="Training sequence length (default: the model's).")
    precision: Literal["bf16", "fp16", "fp8"] = "bf16"
    cluster: Cluster = Field(default_factory=Cluster)
    layout: Layout
    tokens: float | None = Field(None, description="Training tokens: report days, cost and energy.")
    usd_per_gpu_hour: float | None = Field(None, description="Rental price per GPU-hour (for the run cost).")
    assumptions: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _run_budget(self) -> Workload:
        problems = run_budget_problems(self.tokens, self.usd_per_gpu_hour)
        if problems:
            raise ScenarioError(problems)
        return self


def p2p_overlap_applies(schedule: str, vpp: int) -> bool:
    """Whether Megatron's overlap_p2p_comm acts on a layout: the interleaved schedule with virtual stages
    only (Megatron turns it off for the others). step.evaluate applies the same rule to schedule codes."""
    return schedule == "interleaved" and vpp > 1


def run_budget_problems(tokens: float | None, usd_per_gpu_hour: float | None) -> list[tuple[str, Any, str]]:
    """What is wrong with a token budget and a price per GPU-hour (`step` and `plan` alike)."""
    problems = [
        (name, value, f"must be a finite number > 0 and ≤ {limit:g}")
        for name, value, limit in (("tokens", tokens, 1e18), ("usd_per_gpu_hour", usd_per_gpu_hour, 1e4))
        if value is not None and not (isinstance(value, int | float) and 0 < value <= limit)
    ]
    if usd_per_gpu_hour is not None and tokens is None:
        problems.append(
            (
                "usd_per_gpu_hour",
                usd_per_gpu_hour,
                "needs tokens, the run's training tokens: the price is for a run",
            )
        )
    return problems


def attention_kernel_problems(
    kernel: str, flash: bool = True, name: str = "attention_kernel", flash_name: str = "flash_attention"
) -> list[tuple[str, Any, str]]:
    """What is wrong with an attention kernel given as `name` (Layout, `plan` and the CLI alike): an
    unknown one, or one other than the default beside materialised attention (`flash` off, given as
    `flash_name`)."""
    if kernel not in ATTENTION_KERNELS:
        return [(name, kernel, f"must be one of {', '.join(ATTENTION_KERNELS)}")]
    if not flash and kernel != "flash2":
        return [(name, kernel, f"needs {flash_name} (materialised attention runs no FlashAttention kernel)")]
    return []


def fp32_grads(flag: bool | None, precision: str) -> bool:
    """Whether gradients are accumulated and reduced in FP32. Megatron-LM's default: bf16 training
    forces it ("bfloat16 requires gradient accumulation and all-reduce to be done in fp32",
    megatron/training/arguments.py); fp16 keeps gradients in fp16 unless
    --accumulate-allreduce-grads-in-fp32 is given."""
    return flag if flag is not None else precision != "fp16"


def layout_arrays(layout: Layout, n_gpus: int, precision: str = "bf16") -> dict[str, Any]:
    """One Layout as the scalar columns `evaluate` reads (`precision` settles the gradient width)."""
    model_par = layout.tp * layout.pp * layout.cp
    dp = layout.dp if layout.dp is not None else n_gpus // model_par
    schedule = layout.schedule  # 1F1B with vpp > 1 is already `interleaved` (Layout)
    return {
        "dp": dp,
        "tp": layout.tp,
        "pp": layout.pp,
        "vpp": layout.vpp,
        "cp": layout.cp,
        "ep": layout.ep,
        "sp": layout.sequence_parallel,
        "mbs": layout.mbs,
        "gbs": layout.gbs,
        "zero": layout.zero,
        "shard": layout.shard_group or 0,  # 0: the whole dp·cp group
        "recompute": RECOMPUTES.index(layout.recompute),
        "schedule": SCHEDULES.index(schedule),
        "overlap_grad": layout.overlap_grad_reduce,
        "overlap_tp": layout.overlap_tp_comm,
        "overlap_p2p": layout.overlap_p2p_comm,
        "flash": layout.flash_attention,
        "attn_kernel": ATTENTION_KERNELS.index(layout.attention_kernel),
        "balanced": layout.embedding_stages == "balanced",
        "fp32_grads": fp32_grads(layout.fp32_grad_accumulation, precision),
        "fp32_params": layout.fp32_params,
        "moe_cf": layout.moe_capacity_factor or 0.0,  # 0: dropless
        "moe_imb": layout.moe_imbalance,
    } | _stage_split(layout)


def moe_load(capacity_factor, imbalance, ep):
    """Routed tokens the busiest expert-parallel rank computes and receives, over the mean (arrays
    broadcast; capacity_factor 0 means dropless): the capacity factor when experts run at a fixed
    capacity (padded buffers; GShard, Lepikhin et al. 2020 §2.2; Switch Transformer, Fedus et al. 2022
    §2.2), else the dropless imbalance, which needs expert parallelism (with ep = 1 every rank holds
    every expert and gets the mean)."""
    return np.where(capacity_factor > 0, capacity_factor, np.where(ep > 1, imbalance, 1.0))


def moe_problems(
    a: Architecture, capacity_factor: float | None, imbalance: float, prefix: str = ""
) -> list[tuple[str, Any, str]]:
    """What is wrong with an expert capacity factor and a load imbalance (`step` and `plan` alike):
    Layout's own ranges, and both need an MoE model."""
    try:
        Layout(gbs=1, moe_capacity_factor=capacity_factor, moe_imbalance=imbalance)
    except ValidationError as exc:
        fields = {"moe_capacity_factor": capacity_factor, "moe_imbalance": imbalance}
        return [(prefix + f, v, m) for f, v, m in validation_problems(exc, fields, _bound_message(exc))]
    given = [("moe_capacity_factor", capacity_factor)] if capacity_factor is not None else []
    given += [("moe_imbalance", imbalance)] if imbalance != 1.0 else []
    if a.moe is None:
        return [(prefix + f, v, "needs an MoE model (one with moe: experts and top_k)") for f, v in given]
    return []


def moe_dropped_fraction(capacity_factor: float | None, imbalance: float, ep: int) -> float:
    """Routed tokens a capacity drops at least, on the busiest rank (0 when dropless, without expert
    parallelism, or when capacity covers the imbalance): 1 − capacity / load."""
    if capacity_factor is None or ep <= 1:
        return 0.0
    return max(0.0, 1.0 - capacity_factor / imbalance)


def _stage_split(layout: Layout) -> dict[str, int]:
    """The columns of an explicit `pp_layers`: the first, the busiest non-last and the last stage."""
    split = layout.pp_layers
    if not split or len(split) != layout.pp:
        return {}
    return {"first_layers": split[0], "mid_layers": max(split[:-1] or split), "last_layers": split[-1]}


def check_layout(a: Architecture, layout: Layout, cluster: Cluster, seq_len: int | None = None) -> None:
    """The divisibility rules of Megatron-LM, with the field, value and rule of the first broken one."""
    n = cluster.n_gpus
    col = layout_arrays(layout, n)
    dp, tp, pp, cp = col["dp"], layout.tp, layout.pp, layout.cp
    problems = []
    dp_ok = True  # the rules below that read dp are checked only with a dp that holds
    if layout.dp is None and n % (tp * pp * cp):  # dp is derived: name the degree the user gave
        dp_ok = False
        # the degree that does not divide the GPUs itself, else (only their product fails) the pipeline's
        fallback = ("pp", pp) if pp > 1 else ("tp", tp)
        name, value = next(((f, v) for f, v in (("tp", tp), ("pp", pp), ("cp", cp)) if n % v), fallback)
        problems.append(
            (
                f"layout.{name}",
                value,
                f"tp·pp·cp = {tp * pp * cp} must divide the GPU count {n} (tp={tp}, pp={pp}, cp={cp}; dp is "
                "the GPUs over it)",
            )
        )
    elif dp * tp * pp * cp != n:
        dp_ok = False
        problems.append(
            ("layout.dp", dp, f"dp·tp·pp·cp must equal the GPU count {n} (tp={tp}, pp={pp}, cp={cp})")
        )
    if a.heads % tp or a.n_kv % tp:
        problems.append(("layout.tp", tp, f"must divide heads = {a.heads} and kv_heads = {a.n_kv}"))
    slots = a.layers + (2 if layout.embedding_stages == "balanced" else 0)
    if layout.pp_layers is not None:
        split = layout.pp_layers
        if len(split) != pp or sum(split) != a.layers or min(split) < 1:
            problems.append(
                (
                    "layout.pp_layers",
                    ",".join(map(str, split)),
                    f"must give pp = {pp} stage sizes, each ≥ 1, summing to the {a.layers} layers",
                )
            )
        if layout.embedding_stages == "balanced" or layout.vpp > 1:
            problems.append(
                ("layout.pp_layers", ",".join(map(str, split)), "needs embedding_stages first-last and vpp 1")
            )
    elif layout.vpp > 1 and slots % (pp * layout.vpp):
        problems.append(
            (
                "layout.vpp",
                layout.vpp,
                f"pp·vpp = {pp * layout.vpp} must divide {slots} layer slots (pp = {pp})",
            )
        )
    elif pp > slots:
        problems.append(("layout.pp", pp, f"must be ≤ the {slots} layer slots (each stage needs one)"))
    if layout.vpp > 1 and layout.schedule != "interleaved":
        problems.append(("layout.vpp", layout.vpp, "virtual stages need the interleaved schedule"))
    if dp_ok and layout.gbs % (dp * layout.mbs):
        problems.append(("layout.gbs", layout.gbs, f"must be a multiple of dp·mbs = {dp * layout.mbs}"))
    if layout.schedule in ("dualpipe", "dualpipev"):
        problems += dualpipe_problems(layout.schedule, pp, layout.gbs, dp * layout.mbs if dp_ok else None)
    if layout.ep > 1 and (a.moe is None or a.moe.experts % layout.ep):
        problems.append(("layout.ep", layout.ep, "needs an MoE model whose expert count it divides"))
    if dp_ok and layout.ep > dp * cp:
        problems.append(
            (
                "layout.ep",
                layout.ep,
                f"must be ≤ dp·cp = {dp * cp} (experts are sharded over data-parallel ranks)",
            )
        )
    problems += moe_problems(a, layout.moe_capacity_factor, layout.moe_imbalance, "layout.")
    if layout.shard_group is not None:
        if layout.zero != 3:
            problems.append(("layout.shard_group", layout.shard_group, "needs zero = 3 (HSDP shards ZeRO-3)"))
        elif dp_ok and (dp * cp) % layout.shard_group:
            problems.append(("layout.shard_group", layout.shard_group, f"must divide dp·cp = {dp * cp}"))
    seq = seq_len or a.seq_len
    if layout.cp > 1 and seq % (2 * layout.cp):
        problems.append(("layout.cp", layout.cp, f"2·cp must divide the sequence length {seq}"))
    if problems:
        raise ScenarioError(problems)


def dualpipe_problems(schedule: str, pp: int, gbs: int, dp_mbs: int | None) -> list[tuple[str, Any, str]]:
    """DualPipe's requirements (deepseek-ai/DualPipe, dualpipe.py and dualpipev.py `step`): a pipeline
    (DualPipe: an even number of ranks), at least two micro-batches per rank (DualPipe: an even count,
    half fed from each end). The micro-batch rule is checked once the batch divides into micro-batches
    (otherwise check_layout names that); dp_mbs is None where no data-parallel degree is valid."""
    if pp < 2 or (schedule == "dualpipe" and pp % 2):
        need = "an even pp ≥ 2" if schedule == "dualpipe" else "pp ≥ 2"
        return [("layout.schedule", schedule, f"needs {need} (pp = {pp})")]
    if dp_mbs is None:  # no valid data-parallel degree: check_layout names that
        return []
    m = gbs // dp_mbs
    if not gbs % dp_mbs and (m < 2 * pp or (schedule == "dualpipe" and m % 2)):
        even = ", an even number" if schedule == "dualpipe" else ""
        return [
            (
                "layout.gbs",
                gbs,
                f"{schedule} needs at least 2·pp = {2 * pp} micro-batches per step{even}; gbs / (dp·mbs) = {m}",
            )
        ]
    return []


def _bound_message(exc: ValidationError):
    """What a bound of these models allows, from pydantic's own limit (the scenario fields' wording
    would name the scenario's bounds: gpus_per_node ≤ 1e7 where a Cluster allows 100,000)."""
    limits = {
        ".".join(str(p) for p in e.get("loc", ())): e.get("ctx") or {} for e in exc.errors(include_url=False)
    }
    words = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}

    def message(field: str, error_type: str) -> str | None:
        ctx = limits.get(field, {})
        bound = [f"{words[k]} {ctx[k]:,}" for k in words if isinstance(ctx.get(k), int | float)]
        return f"must be {' and '.join(bound)}" if bound else None

    return message


def build(cls, fields: dict[str, Any], prefix: str = ""):
    """`cls(**fields)` (a Cluster, Layout, Workload or Architecture), with every problem reported as a
    ScenarioError whose field names carry `prefix` ("cluster.", "layout.", "model.")."""
    try:
        return cls(**fields)
    except ScenarioError as exc:
        raise ScenarioError([(prefix + f, v, m) for f, v, m in exc.problems]) from None
    except ValidationError as exc:
        allowed = ", ".join(cls.model_fields)
        raise ScenarioError(
            [
                # pydantic's "Extra inputs are not permitted" named no field that is
                (
                    prefix + f,
                    v,
                    f"unknown field; allowed: {allowed}" if m == "Extra inputs are not permitted" else m,
                )
                for f, v, m in validation_problems(exc, fields, _bound_message(exc))
            ]
        ) from None
