"""Catalog data shipped with dtsim: accelerators, node presets, scenario presets, assumptions.

Everything here is data read from the YAML files beside this module; each number in them carries
its source. Loading is cached, and the returned objects are read-only views.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any


def load_table(name: str) -> dict[str, Any]:
    """One catalog YAML file (a mapping of id → row) as shipped in the package."""
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    import yaml  # lazy: only commands that read the catalog pay for it (fast `dtsim --help`)

    # libyaml's C parser when installed (about 10x faster); same resolver and constructor as SafeLoader
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(data, dict):  # pragma: no cover - guards the shipped files
        raise RuntimeError(f"catalog file {name} is not a mapping")
    return data


@dataclass(frozen=True)
class Micro:
    """Micro-architecture constants for the GEMM model: a GPU's for Erdil & Schneider-Joseph 2024 §8.1.1 (SMs, register file,
    L2), or a TPU's systolic matrix units (`mxu_dim` > 0: the MXU edge, and the datasheet peaks)."""

    generation: str
    hbm_bytes_per_s: float
    clock_derate: float  # sustained fraction of the peak on long runs of large matmuls
    matmul_latency_s: float
    nvlink: str  # the scale-up link type (NVLink; ICI on a TPU)
    nic: str  # the scale-out link type (the NICs; DCN on a TPU)
    nics_per_gpu: float
    source: str
    # GPU (Erdil & Schneider-Joseph 2024 §8.1.1): zero / empty on a TPU
    num_sms: int = 0
    max_clock_hz: float = 0.0
    flop_per_clock_per_thread: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    register_bytes_per_block: int = 0  # per processing block; four blocks per SM
    l2_bytes: float = 0.0
    l2_bytes_per_s: float = 0.0
    distributed_shared_memory: bool = False
    # Blackwell (tcgen05): the tensor cores accumulate in Tensor Memory, 128 lanes × 512 columns of 32-bit
    # cells per SM (256 KiB), not in the register file, and a pair of SMs can run one MMA together
    # (cta_group::2), each holding half the accumulator and reading its half of the shared operand
    # (NVIDIA PTX ISA, "Tensor Memory" and "tcgen05.mma"); 0 / False before Blackwell
    tensor_memory_bytes: int = 0
    mma_cta_pair: bool = False
    # The sustained share of the FP8 tensor peak relative to the 16-bit one's (FP8 GEMMs run twice the
    # arithmetic per clock, draw more power and lose more of their peak): mamf-finder's FP8 / BF16
    # efficiency on the GPU (gpus.yaml sources); it scales clock_derate for 8-bit GEMMs. 1: the same share
    fp8_sustained_ratio: float = 1.0
    l1_bytes_per_sm: float | None = (
        None  # combined L1 / shared memory per SM (SRAM totals, Erdil & Schneider-Joseph 2024 Table 2)
    )
    # FlashAttention as measured on this generation (attention_kernels.yaml, named by gpus.yaml
    # `flash_attention`): the share of the dense 16-bit tensor peak each kernel ("flash2", "flash1",
    # "triton") reaches forward + backward, causal, by head dimension (64, 128) at the sequence lengths
    # `flash_attention_seq`; empty where no measurement is published
    flash_attention: str = ""
    # whether any FlashAttention kernel runs on this generation (none on Volta: gpus.yaml sources);
    # where none does, a layout's flash_attention is timed and sized as materialized attention
    flash_attention_runs: bool = True
    flash_attention_seq: tuple[float, ...] = ()
    flash_attention_efficiency: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    # TPU: the systolic array's edge (128, or 256 on v6e) and the datasheet's dense peak by operand width
    mxu_dim: int = 0
    chips_per_host: int = 0  # a TPU host's chips: the default gpus_per_node
    peak_tflops: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    @property
    def systolic(self) -> bool:
        """A TPU: matmuls on systolic MXUs (dtsim.physics.gemm.systolic_gemm_time)."""
        return self.mxu_dim > 0

    def sustained_share(self, bits: int, derate=None):
        """The share of the `bits`-wide tensor peak sustained on long runs of large GEMMs: the clock derate
        (or `derate`, a calibrated one), × fp8_sustained_ratio for 8-bit operands."""
        d = self.clock_derate if derate is None else derate
        return d * self.fp8_sustained_ratio if bits == 8 else d

    def peak_flop_s(self, bits: int) -> float:
        if self.systolic:
            return self.peak_tflops[bits] * 1e12
        return self.flop_per_clock_per_thread[bits] * 128 * self.num_sms * self.max_clock_hz


@dataclass(frozen=True)
class Fabric:
    id: str
    name: str
    bandwidth_gb_s: float
    latency_s: float
    efficiency: float
    source: str
    # NVLink SHARP (NCCL's NVLS all-reduce, reduced in the NVSwitch): the all-reduce's algorithm bandwidth
    # per GPU as a fraction of `bandwidth_gb_s`, and its latency; None where the switch cannot reduce
    nvls_efficiency: float | None = None
    nvls_latency_s: float | None = None
    nvls_source: str | None = None
    # the most GPUs one NVLink domain of this generation joins (its largest NVSwitch system); None for NICs
    max_domain: int | None = None
    max_domain_source: str | None = None
    # A TPU's inter-chip interconnect (ICI): chips joined point to point in a torus of `torus_dims` axes
    # (bandwidth_gb_s is then one link's one-way rate, latency_s one hop's); an axis has a wraparound
    # link when its length is a multiple of `wrap_axis_multiple` — with `wrap_whole_slice`, only when
    # every axis is (optical wraparounds come with whole cubes); `pod` is the largest slice's shape
    torus_dims: int | None = None
    wrap_axis_multiple: int | None = None
    wrap_whole_slice: bool = False
    pod: tuple[int, ...] | None = None
    torus_source: str | None = None

    @property
    def bus_bytes_per_s(self) -> float:
        """Achievable unidirectional bandwidth per GPU (or NIC): wire rate × NCCL bus efficiency."""
        return self.bandwidth_gb_s * 1e9 * self.efficiency

    @property
    def nvls_bytes_per_s(self) -> float | None:
        """NVLS all-reduce algorithm bandwidth per GPU (bytes reduced per second), None without NVLS."""
        return None if self.nvls_efficiency is None else self.bandwidth_gb_s * 1e9 * self.nvls_efficiency


@dataclass(frozen=True)
class GPU:
    """One accelerator: dense peak rates, memory, board power and price, each with a source."""

    id: str
    name: str
    vendor: str
    year: int
    fp16_tflops: float
    fp8_tflops: float | None
    memory_gb: float
    board_power_w: float
    price_usd: float
    sources: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    micro: Micro | None = None
    memory_mib: float | None = None  # the device memory the runtime reports (nvidia-smi memory.total)
    # dense FP4 tensor-core peak where the GPU has an FP4 datapath (Blackwell); None where it has none
    fp4_tflops: float | None = None

    @property
    def memory_bytes(self) -> float:
        """Device memory a training job sees: the runtime's total (`memory_mib`, binary) where the catalog
        has it, else the datasheet's `memory_gb` read as decimal gigabytes. HBM stacks come in binary
        sizes, so an "80 GB" part reports 80 GiB (nvidia-smi 81559 MiB on an H100 SXM5 = 85.5 GB)."""
        return self.memory_mib * 2**20 if self.memory_mib else self.memory_gb * 1e9

    def peak_tflops(self, precision: str) -> float | None:
        """Dense peak TFLOP/s a training precision is timed at, None where the GPU has no datapath for
        it. fp4 is timed at the FP8 rate on a GPU with an FP4 datapath (`fp4_tflops`): no published
        end-to-end FP4 pretraining throughput gives its speed-up over FP8, so FP4 there shrinks model
        state and traffic only; a GPU without one (Hopper and older) has no fp4."""
        if precision in ("fp16", "bf16"):
            return self.fp16_tflops
        if precision == "fp4" and self.fp4_tflops is None:
            return None
        return self.fp8_tflops


@dataclass(frozen=True)
class NodePreset:
    id: str
    name: str
    kind: str
    gpu: str
    gpu_count: int
    pflops: float
    vram_gb: float
    source: str
    precision: str | None = None
    h100_equivalents: float | None = None
    # GPUs one NVLink domain joins in this node, where it is more than a server's (a GB200 NVL72 rack: 72)
    nvlink_domain: int | None = None


@dataclass(frozen=True)
class ScenarioPreset:
    id: str
    description: str
    source: str
    scenario: MappingProxyType
    extends: str | None = None


@cache  # one parse of attention_kernels.yaml per set, however many GPUs name it
def _flash_attention(name: str | None) -> dict[str, Any]:
    """The Micro fields of a measured FlashAttention set (attention_kernels.yaml): its sequence lengths
    and, per kernel and head dimension, the measured TFLOP/s as a share of the measuring GPU's peak."""
    if not name:
        return {}
    row = load_table("attention_kernels.yaml")[name]
    peak = float(row["peak_tflops"])
    return {
        "flash_attention": name,
        "flash_attention_seq": tuple(float(s) for s in row["seq_len"]),
        "flash_attention_efficiency": MappingProxyType(
            {
                kernel: MappingProxyType({int(d): tuple(float(t) / peak for t in v) for d, v in dims.items()})
                for kernel, dims in row["tflops"].items()
            }
        ),
    }


@cache
def gpus() -> MappingProxyType:
    """All accelerators by id (`h100-sxm`, `tpu-v5p`, ...)."""
    out = {}
    for gid, row in load_table("gpus.yaml").items():
        micro = row.get("micro")
        if micro is not None:
            # PyYAML reads 1.41e9 (no exponent sign) as a string, so numbers are converted here.
            numeric = (
                "l2_bytes",
                "l2_bytes_per_s",
                "hbm_bytes_per_s",
                "max_clock_hz",
                "clock_derate",
                "matmul_latency_s",
                "nics_per_gpu",
                "fp8_sustained_ratio",
            )
            micro = Micro(
                **{
                    **micro,
                    **{k: float(micro[k]) for k in numeric if k in micro},
                    "flop_per_clock_per_thread": MappingProxyType(
                        {int(k): float(v) for k, v in (micro.get("flop_per_clock_per_thread") or {}).items()}
                    ),
                    **_flash_attention(micro.get("flash_attention")),
                    "peak_tflops": MappingProxyType(
                        {int(k): float(v) for k, v in (micro.get("peak_tflops") or {}).items()}
                    ),
                }
            )
        out[gid] = GPU(
            id=gid, **{**row, "sources": MappingProxyType(dict(row.get("sources", {}))), "micro": micro}
        )
    return MappingProxyType(out)


@cache
def fabrics() -> MappingProxyType:
    """Interconnects by id (`nvlink3`, `ib-hdr`, ...). Efficiency and latency fitted by `dtsim
    calibrate` (calibration.yaml `fabrics:`) replace the values of fabrics.yaml."""
    fitted = calibration_document().get("fabrics") or {}
    out = {}
    for fid, row in load_table("fabrics.yaml").items():
        row = dict(row)
        fitted_id = row.pop("calibrated_as", fid)  # a link that shares another's measured behaviour
        for key in ("efficiency", "latency_s", "nvls_efficiency"):
            if key in (fitted.get(fitted_id) or {}) and (key != "nvls_efficiency" or "nvls_latency_s" in row):
                row[key] = fitted[fitted_id][key]
        floats = ("bandwidth_gb_s", "latency_s", "efficiency", "nvls_efficiency", "nvls_latency_s")
        if "pod" in row:
            row["pod"] = tuple(int(x) for x in row["pod"])
        out[fid] = Fabric(id=fid, **{**row, **{k: float(row[k]) for k in floats if k in row}})
    return MappingProxyType(out)


@dataclass(frozen=True)
class ClusterFabric:
    """How a datacenter cluster's GPUs are wired (cluster_fabrics.yaml)."""

    id: str
    name: str
    gpu: str
    gpus_per_node: int
    nvlink: str
    nvlink_domain: int
    nic: str
    nics_per_node: int
    oversubscription: float
    source: str


@cache
def cluster_fabrics() -> MappingProxyType:
    """Cluster fabrics by id (`dgx-h100-ndr`, `gb200-nvl72`, ...): NVLink domain, NICs per node, link
    types (ids in fabrics.yaml) and oversubscription."""
    links = fabrics()
    out = {}
    for cid, row in load_table("cluster_fabrics.yaml").items():
        fab = ClusterFabric(id=cid, **{**row, "oversubscription": float(row["oversubscription"])})
        for link in (fab.nvlink, fab.nic):
            if link not in links:  # pragma: no cover - guards the shipped files
                raise RuntimeError(f"cluster fabric {cid} names unknown link type {link}")
        if fab.gpu not in gpus():  # pragma: no cover - guards the shipped files
            raise RuntimeError(f"cluster fabric {cid} names unknown gpu {fab.gpu}")
        out[cid] = fab
    return MappingProxyType(out)


@cache
def nodes() -> MappingProxyType:
    """All node presets by id."""
    out = {}
    for nid, row in load_table("nodes.yaml").items():
        node = NodePreset(id=nid, **row)
        if node.gpu not in gpus():  # pragma: no cover - guards the shipped files
            raise RuntimeError(f"node preset {nid} names unknown gpu {node.gpu}")
        out[nid] = node
    return MappingProxyType(out)


@dataclass(frozen=True)
class SoftwareProfile:
    """A training stack's layout settings (software.yaml): Layout fields by name, each with the source
    copied from the measured-run groups (`records`) that ran the stack. A value `with_tp` is a rule: on
    where tensor parallelism is (tp > 1)."""

    id: str
    name: str
    description: str
    records: tuple[str, ...]
    layout: MappingProxyType
    sources: MappingProxyType
    accelerators: tuple[str, ...] = ("gpu",)  # the kinds its records ran on: gpu, tpu


# The Layout fields a profile may set (software.yaml): a stack's kernels, overlaps, sharding and
# recomputation, never the parallel degrees or batch of a run.
SOFTWARE_FIELDS = (
    "zero",
    "fp32_params",
    "flash_attention",
    "attention_kernel",
    "overlap_grad_reduce",
    "overlap_tp_comm",
    "overlap_p2p_comm",
    "fp32_grad_accumulation",
    "schedule",
    "recompute",
    "embedding_stages",
    "sequence_parallel",
)
# Fields that may take the rule `with_tp` (on where tp > 1) instead of a value.
RULE_FIELDS = ("sequence_parallel", "overlap_tp_comm")


@cache
def software() -> MappingProxyType:
    """Software profiles by id (`megatron-lm-2021`, `llm-foundry`, ...): the Layout fields each stack
    sets, with a source per field."""
    out = {}
    for sid, row in load_table("software.yaml").items():
        layout, sources = dict(row.get("layout") or {}), dict(row.get("sources") or {})
        if set(layout) != set(sources):  # pragma: no cover - guards the shipped file
            raise RuntimeError(f"software profile {sid}: every layout field needs a source, and only those")
        unknown = set(layout) - set(SOFTWARE_FIELDS)
        ruled = {k for k, v in layout.items() if v == "with_tp"} - set(RULE_FIELDS)
        if unknown or ruled:  # pragma: no cover - guards the shipped file
            raise RuntimeError(f"software profile {sid}: fields it may not set {sorted(unknown | ruled)}")
        kinds = tuple(row.get("accelerators") or ())
        if not kinds or set(kinds) - {"gpu", "tpu"}:  # pragma: no cover - guards the shipped file
            raise RuntimeError(f"software profile {sid}: accelerators (gpu, tpu) are required")
        out[sid] = SoftwareProfile(
            id=sid,
            name=row["name"],
            description=row["description"],
            records=tuple(row.get("records") or ()),
            layout=MappingProxyType(layout),
            sources=MappingProxyType(sources),
            accelerators=kinds,
        )
    return MappingProxyType(out)


@dataclass(frozen=True)
class Region:
    """A place node groups can sit: a name and the metro area's coordinates (catalog/regions.yaml)."""

    id: str
    name: str
    lat: float
    lon: float
    hosts: str


@cache
def regions() -> MappingProxyType:
    """All regions by id."""
    return MappingProxyType({rid: Region(id=rid, **row) for rid, row in load_table("regions.yaml").items()})


@cache
def scenario_presets() -> MappingProxyType:
    """All scenario presets by id."""
    out = {}
    for pid, row in load_table("presets.yaml").items():
        out[pid] = ScenarioPreset(
            id=pid,
            description=row["description"],
            source=row["source"],
            scenario=MappingProxyType(dict(row.get("scenario") or {})),
            extends=row.get("extends"),
        )
    return MappingProxyType(out)


def preset_fields(preset_id: str) -> dict[str, Any]:
    """The scenario fields a preset sets, with `extends` chains resolved (base first)."""
    presets = scenario_presets()
    chain: list[str] = []
    current: str | None = preset_id
    while current is not None:
        if current in chain:  # pragma: no cover - guards the shipped files
            raise RuntimeError(f"preset cycle through {current}")
        chain.append(current)
        current = presets[current].extends
    fields: dict[str, Any] = {}
    for pid in reversed(chain):
        fields = merge_layers(fields, dict(presets[pid].scenario))
    return fields


@cache
def assumption_rows() -> MappingProxyType:
    """The raw assumptions table (name → {value, unit, range, description, source, seed})."""
    return MappingProxyType(load_table("assumptions.yaml"))


# Fields that describe the node hardware. A layer that names a node preset or a GPU replaces these
# from lower layers, so `--set node=16x-h100-sxm` on top of a preset does not keep stale FLOP/s.
HARDWARE_FIELDS = ("node", "gpu", "gpus_per_node", "pflops_per_node", "vram_per_node_gb")
BANDWIDTH_PAIR = ("bandwidth_up_mbps", "bandwidth_down_mbps")


# A node's figures that scale with its count of GPUs (the same GPUs, more or fewer of them)
NODE_SCALED = ("pflops_per_node", "vram_per_node_gb")


def scaled_node(fields: dict[str, Any], old: Any, new: Any) -> dict[str, Any]:
    """`fields`' NODE_SCALED figures for `new` GPUs a node where they were given for `old` (those that
    are numbers; none when either count is not a positive number). One rule for a layer over another
    (merge_layers), a count over the default node (schema.scenario) and the web page's count input."""
    if not all(isinstance(x, int | float) and not isinstance(x, bool) and x > 0 for x in (old, new)):
        return {}
    return {
        k: fields[k] * new / old
        for k in NODE_SCALED
        if isinstance(fields.get(k), int | float) and not isinstance(fields.get(k), bool)
    }


def merge_layers(lower: dict[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    """Overlay scenario field dicts: `upper` wins; hardware and bandwidth groups replace as a unit.

    - `bandwidth_mbps` in `upper` drops `bandwidth_up_mbps`/`bandwidth_down_mbps` from `lower`, because a
      single bandwidth sets both directions; one direction in `upper` over a `bandwidth_mbps` in `lower`
      replaces that direction only (the other keeps the symmetric value).
    - `node` or `gpu` in `upper` drops every hardware field from `lower` that `upper` does not set
      (and the precision, when the node preset fixes one, e.g. the FP8 node variants), except that a
      `gpu` without a count keeps `lower`'s GPUs per node (a node preset's count): intellect-1's nodes
      of 8 H100s given `gpu: b200` are nodes of 8 B200s, not the default scenario's 16.
    - `gpus_per_node` alone in `upper` scales `lower`'s pflops_per_node and vram_per_node_gb with it
      (the same GPUs, more or fewer of them); over a node preset it is refused where the scenario
      resolves it (the preset fixes its count).
    """
    merged = dict(lower)
    if "bandwidth_mbps" in upper:
        for key in BANDWIDTH_PAIR:
            merged.pop(key, None)
    if any(key in upper for key in BANDWIDTH_PAIR) and "bandwidth_mbps" in merged:
        symmetric = merged.pop("bandwidth_mbps")
        if symmetric is not None:  # the direction `upper` leaves alone keeps the symmetric value
            for key in BANDWIDTH_PAIR:
                merged.setdefault(key, symmetric)
    if "node" in upper or "gpu" in upper:
        count = None
        if "node" not in upper and "gpus_per_node" not in upper:
            below = nodes().get(merged.get("node")) if isinstance(merged.get("node"), str) else None
            count = merged.get("gpus_per_node", below.gpu_count if below is not None else None)
        for key in HARDWARE_FIELDS:
            if key not in upper:
                merged.pop(key, None)
        if count is not None:
            merged["gpus_per_node"] = count
        node_id = upper.get("node")
        node = nodes().get(node_id) if isinstance(node_id, str) else None
        if node is not None and node.precision is not None and "precision" not in upper:
            merged.pop("precision", None)
    elif "gpus_per_node" in upper and "node" not in merged:
        merged |= scaled_node(
            merged, merged.get("gpus_per_node"), upper["gpus_per_node"]
        )  # upper's win below
    merged.update(upper)
    return merged


def catalog_payload() -> dict[str, Any]:
    """Scenario presets (with their resolved fields), node presets, accelerators and the regions node
    groups can sit in as plain JSON (what `dtsim presets --json` prints and `GET /api/presets` returns)."""
    return {
        "scenarios": {
            k: {"description": p.description, "source": p.source, "fields": preset_fields(k)}
            for k, p in scenario_presets().items()
        },
        "nodes": {
            k: {
                "name": n.name,
                "kind": n.kind,
                "gpu": n.gpu,
                "gpu_count": n.gpu_count,
                "pflops": n.pflops,
                "vram_gb": n.vram_gb,
                "precision": n.precision,
                "source": n.source,
            }
            for k, n in nodes().items()
        },
        "gpus": {
            k: {
                "name": g.name,
                "fp16_tflops": g.fp16_tflops,
                "fp8_tflops": g.fp8_tflops,
                "fp4_tflops": g.fp4_tflops,
                "memory_gb": g.memory_gb,
                "memory_runtime_gb": g.memory_bytes / 1e9,
                "board_power_w": g.board_power_w,
                "price_usd": g.price_usd,
                "sources": dict(g.sources),
            }
            for k, g in gpus().items()
        },
        "regions": {
            k: {"name": r.name, "lat": r.lat, "lon": r.lon, "hosts": r.hosts} for k, r in regions().items()
        },
    }


_CALIBRATION_OVERRIDE: list[dict[str, Any]] = []


@cache
def calibration_document() -> dict[str, Any]:
    """The fitted constants in use: catalog/calibration.yaml, or the document installed by
    `use_calibration` (how `dtsim calibrate` fits one constant while the others are in effect, and
    how `dtsim validate --calibration FILE` runs with a user's file)."""
    if _CALIBRATION_OVERRIDE:
        return _CALIBRATION_OVERRIDE[-1]
    try:
        data = load_table("calibration.yaml")
    except FileNotFoundError:
        return {}
    return data if isinstance(data, dict) else {}


def calibration_overridden() -> bool:
    """Whether a document other than catalog/calibration.yaml is in use (`use_calibration`)."""
    return bool(_CALIBRATION_OVERRIDE)


def calibration() -> dict[str, Any]:
    """Fitted efficiency constants by GPU generation (the `generations:` section)."""
    return calibration_document().get("generations") or {}


class use_calibration:
    """Context manager: predictions inside use `doc` as the calibration document."""

    def __init__(self, doc: dict[str, Any]):
        self.doc = doc

    def __enter__(self):
        _CALIBRATION_OVERRIDE.append(self.doc)
        _clear_calibrated_caches()
        return self.doc

    def __exit__(self, *exc):
        _CALIBRATION_OVERRIDE.pop()
        _clear_calibrated_caches()
        return False


def _clear_calibrated_caches() -> None:
    calibration_document.cache_clear()
    fabrics.cache_clear()
