"""Measured-run records: the schema every record must satisfy, and loading from the bundled dataset
(`dtsim/catalog/measured_runs/*.yaml`) and from users' directories.

A file holds `groups:` (shared defaults, description and assumptions) and `records:`. A record takes
its group's defaults (nested mappings merged) — `software: ID` among them gives the layout a software
profile's fields (catalog/software.yaml) under every layout key the group or the record gives — then is
validated against the schema of its `kind`:

- datacenter: a model, a cluster and a parallel layout, predicted by the datacenter step model;
- collective: one NCCL/gloo collective benchmark, predicted by the α-β collectives;
- gemm: a maximum-achievable-matmul benchmark, predicted by the GEMM model;
- testbed: the thesis's DDP/gloo testbed (Camilli 2025 ch. 5), predicted by the α-β-γ ring;
- decentralized: a DiLoCo-family run over the internet, predicted by the decentralized model (one round's
  MFU, utilization or communication, or the whole run's duration in days);
- reference: a row kept for completeness that dtsim cannot predict (the reason is stated).

A malformed record is reported with its file, its id (or position), the field and the reason; the
other records still load.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from dtsim.errors import ScenarioError, quote
from dtsim.schema import inputs

CERTAINTY = Literal["P", "P*", "S", "D", "user"]


# the unit each metric is compared in (what its `measured` must be written in): a record in another unit
# (Gb/s for GB/s, hours for days) would be compared as if it were in this one
METRIC_UNITS: dict[str, tuple[str, ...]] = {
    "tflops_per_gpu": ("TFLOP/s per GPU", "TFLOP/s per chip", "TFLOP/s"),
    "tflops": ("TFLOP/s",),
    "mfu": ("% MFU", "%"),
    "hfu": ("% HFU", "%"),
    "tokens_per_s_per_gpu": ("tokens/s per GPU", "tokens/s per chip", "tokens/s"),
    "step_time_s": ("s",),
    "busbw_gb_s": ("GB/s",),
    "time_us": ("µs", "us"),
    "time_ms": ("ms",),
    "bytes_per_event_mb": ("MB",),
    "bytes_per_flow_mb": ("MB",),
    "allreduce_s": ("s",),
    "comm_per_round_s": ("s",),
    "compute_utilization": ("%",),
    "wall_clock_days": ("days",),
}


class _Base(BaseModel):
    # no infinite or NaN number in any field (a size_bytes of .inf was predicted as NaN and skipped in a
    # calibration; an added_delay_ms of .inf raised a ZeroDivisionError)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    id: str = Field(
        min_length=1, max_length=120, description="Unique across every file read (bundled ones too)."
    )
    group: str = Field(
        min_length=1,
        max_length=60,
        description="A group defined in `groups:` of any file read (or a bundled one); its defaults apply.",
    )
    source: str = Field(min_length=1, description="Where the number comes from.")
    certainty: CERTAINTY = Field(
        description="P primary, P* verbatim transcription, S secondary, D derived (measured_runs.csv tags)."
    )
    measured: float = Field(gt=0, allow_inf_nan=False, description="The measured value, in `unit`.")
    unit: str = Field(
        min_length=1, description="The unit of `measured`: the one its metric is compared in (above)."
    )
    assumptions: tuple[str, ...] = Field(
        (), description="What the record assumes that its source does not state."
    )
    notes: str = Field("", description="Free text.")

    @model_validator(mode="after")
    def _unit_of_metric(self):
        import unicodedata

        allowed = METRIC_UNITS.get(getattr(self, "metric", ""), ())
        same = lambda u: unicodedata.normalize("NFKC", " ".join(u.split()))  # noqa: E731 (µ micro sign = μ)
        if allowed and same(self.unit) not in {same(u) for u in allowed}:
            raise PydanticCustomError(
                "unit_mismatch",
                "unit: {unit} is not how metric {metric} is compared; write measured in {allowed}",
                {
                    "unit": repr(self.unit),
                    "metric": self.metric,
                    "allowed": " or ".join(repr(u) for u in allowed),
                },
            )
        if getattr(self, "metric", "") in ("mfu", "hfu", "compute_utilization") and self.measured > 100:
            # a share of the peak (or of the wall clock) over 100 % is no measurement: a unit slip
            raise PydanticCustomError(
                "over_peak",
                "measured: {measured} % is over 100 %: {metric} is a share of the whole; was it per node "
                "instead of per GPU, or another unit?",
                {"measured": f"{self.measured:g}", "metric": self.metric},
            )
        return self


class DatacenterRecord(_Base):
    kind: Literal["datacenter"]
    metric: Literal["tflops_per_gpu", "mfu", "hfu", "tokens_per_s_per_gpu", "step_time_s"] = Field(
        description="What was measured: a FLOP rate per GPU, MFU or HFU (each in its `convention`), "
        "training throughput in tokens per second per GPU, or the time of one optimizer step of the "
        "layout's global batch in seconds (neither needs a FLOP convention)."
    )
    convention: Literal["megatron2021", "model", "hardware", "mpt", "maxtext"] | None = Field(
        None,
        description="How the FLOPs behind the number were counted (reference README); required for the "
        "FLOP metrics.",
    )
    model: str | dict[str, Any] = Field(
        description="A catalog model id (`dtsim step --help` lists them) or an architecture's fields."
    )
    seq_len: int | None = Field(None, ge=1, description="Training sequence length (default: the model's).")
    precision: Literal["bf16", "fp16", "fp8"] = "bf16"
    peak_precision: Literal["bf16", "fp16", "fp8"] | None = Field(
        None, description="The precision whose peak the reported MFU divides by (default: precision)."
    )
    cluster: dict[str, Any] = Field(
        description="The cluster as `dtsim step` takes it: gpu, nodes, gpus_per_node, fabric, nics_per_node, …"
    )
    layout: dict[str, Any] = Field(
        description="The parallel layout as `dtsim step` takes it: tp, pp, dp, gbs, mbs, zero, recompute, …"
    )
    software: str | None = Field(
        None,
        description="Software profile (catalog/software.yaml) whose fields the layout took as defaults, "
        "under its own keys (the loader expands it).",
    )

    @model_validator(mode="after")
    def _convention_for_flops(self):
        if self.metric not in ("tokens_per_s_per_gpu", "step_time_s") and self.convention is None:
            raise PydanticCustomError(
                "convention_missing",
                "convention: needed for metric {metric} (megatron2021, model, hardware, mpt or maxtext)",
                {"metric": self.metric},
            )
        return self


class CollectiveRecord(_Base):
    kind: Literal["collective"]
    metric: Literal["busbw_gb_s", "time_us", "time_ms"]
    op: Literal["allreduce"] = "allreduce"
    ranks: int = Field(ge=2)
    gpus_per_node: int = Field(ge=1)
    size_bytes: float = Field(gt=0, le=1e15, description="Message size in bytes (at most a petabyte).")
    intra_fabric: str | None = None
    inter_fabric: str | None = None
    nics_per_node: float | None = Field(None, gt=0, description="NICs per node (default: one per GPU).")
    algorithm: Literal["ring", "nvls"] = Field(
        "ring", description="NCCL algorithm the benchmark ran (NCCL_ALGO): ring, or NVLS (NVLink SHARP)."
    )
    convention: Literal["nccl-busbw", "time"] = "time"

    @model_validator(mode="after")
    def _links_named(self) -> CollectiveRecord:
        """The links the ranks use, named (a record without them was accepted, then not predicted, and a
        calibration on it wrote an empty fit): intra_fabric when a node holds several ranks,
        inter_fabric when the ranks span nodes."""
        if self.gpus_per_node > 1 and self.intra_fabric is None:
            raise ValueError("intra_fabric is required when a node holds several ranks (gpus_per_node > 1)")
        if self.ranks > self.gpus_per_node and self.inter_fabric is None:
            raise ValueError(
                f"inter_fabric is required when the {self.ranks} ranks span nodes of {self.gpus_per_node}"
            )
        return self


class GemmRecord(_Base):
    kind: Literal["gemm"]
    metric: Literal["tflops"]
    gpu: str
    precision: Literal["bf16", "fp16", "fp8"] = "bf16"
    min_size: int = Field(1024, ge=16, le=1_000_000, description="Smallest square GEMM size swept.")
    max_size: int = Field(16384, ge=16, le=1_000_000, description="Largest square GEMM size swept.")
    size_step: int = Field(256, ge=1, description="Step of the sweep; the best rate is reported.")
    convention: Literal["achieved"] = "achieved"


class TestbedRecord(_Base):
    """Camilli 2025 ch. 5: DistilGPT2 under PyTorch DDP with the gloo backend, ranks in containers on one
    host joined by a Linux bridge; `tc` shapes one link of the ring."""

    kind: Literal["testbed"]
    metric: Literal["bytes_per_event_mb", "bytes_per_flow_mb", "allreduce_s"]
    ranks: int = Field(ge=2)
    model: str = "distilgpt2"
    bytes_per_param: float = Field(gt=0)
    link_cap_mbps: float | None = Field(None, gt=0, le=1e9, description="tc bandwidth cap on one ring link.")
    added_delay_ms: float = Field(
        0.0, ge=0, le=3.6e6, description="Delay injected on one ring link (at most an hour)."
    )
    host_cores: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        description="CPU cores of the one host the ranks share (the all-reduce is host-bound: each rank "
        "moves bytes at the per-core rate × host_cores / ranks); required for metric allreduce_s.",
    )
    statistic: str = "median"
    convention: Literal["bytes", "seconds"] = "seconds"


class DecentralizedRecord(_Base):
    """A DiLoCo-family run. `scenario` is a dtsim scenario (the decentralized model's inputs);
    `compute` says how long the inner steps of one round take; `network` how fast each node's link is."""

    kind: Literal["decentralized"]
    metric: Literal["mfu", "compute_utilization", "comm_per_round_s", "wall_clock_days"] = Field(
        description="MFU, compute utilization or communication per round; or wall_clock_days, the "
        "whole run's duration (dtsim.simulate's wall-clock time to process the tokens, not η-adjusted)."
    )
    convention: Literal["palm", "wall-clock-share", "seconds", "days"]
    scenario: dict[str, Any]
    compute: dict[str, Any] = Field(
        description="{base_mfu, architecture} (compute from the architecture's model FLOPs at the "
        "measured no-communication MFU) or {round_s} (the stated compute time per round)."
    )
    network: dict[str, Any] = Field(
        description="{rtt_ms, up_mbps, down_mbps, window_limited}: when window_limited, each stream is "
        "capped at the calibrated TCP window / RTT."
    )


class ReferenceRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["reference"]
    id: str
    group: str
    source: str
    certainty: CERTAINTY
    metric: str
    measured_text: str = Field(description="The measurement as the source states it.")
    reason: str = Field(min_length=1, description="Why dtsim does not predict it.")
    notes: str = ""
    assumptions: tuple[str, ...] = ()


Record = Annotated[
    DatacenterRecord | CollectiveRecord | GemmRecord | TestbedRecord | DecentralizedRecord | ReferenceRecord,
    Field(discriminator="kind"),
]
_ADAPTER: TypeAdapter = TypeAdapter(Record)
KINDS = ("datacenter", "collective", "gemm", "testbed", "decentralized", "reference")


@dataclass(frozen=True)
class Group:
    name: str
    description: str
    role: Literal["calibration", "check", "reference"]
    assumptions: tuple[str, ...] = ()
    compares_layouts: bool = False
    bounds: dict[str, dict[str, float]] = field(default_factory=dict)
    leaves_out: str = ""
    # the publication (or benchmark table) the group's records come from; groups from one source share
    # it, so model-error intervals are checked leaving a whole source out (validation/model_error.py);
    # empty: the group is a source of its own
    source_set: str = ""

    def bounds_for(self, metric: str) -> dict[str, float]:
        return {**self.bounds.get("*", {}), **self.bounds.get(metric, {})}


@dataclass(frozen=True)
class RecordProblem:
    file: str
    record: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: record {self.record}: {self.field}: {self.reason}"


@dataclass
class Dataset:
    records: list[Any] = field(default_factory=list)
    groups: dict[str, Group] = field(default_factory=dict)
    problems: list[RecordProblem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # each group's record defaults, whichever file defined it (a record in another file takes them)
    defaults: dict[str, dict] = field(default_factory=dict)
    # files in --runs that are not YAML, so were not read (named in the report, not silently passed over)
    skipped: list[str] = field(default_factory=list)

    def subset(self, names: list[str] | None) -> list[Any]:
        if not names:
            return list(self.records)
        wanted = set(names)
        return [r for r in self.records if r.group in wanted or r.id in wanted]


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


BOUND_NAMES = ("median_abs_error", "max_abs_error", "max_abs_points")


def _parse_bounds(raw: Any) -> dict[str, dict[str, float]] | str:
    """{bound: value} for every metric, or {metric: {bound: value}}; returns {metric or '*': {...}}
    or an error message. Errors are fractions (0.1 = 10%); points are percentage points."""
    if not isinstance(raw, dict):
        return "must be a mapping"
    flat = {k: v for k, v in raw.items() if k in BOUND_NAMES}
    nested = {k: v for k, v in raw.items() if k not in BOUND_NAMES}
    out: dict[str, dict[str, float]] = {}
    for metric, spec in [("*", flat), *nested.items()]:
        if not isinstance(spec, dict):
            return f"{metric}: must map {', '.join(BOUND_NAMES)} to numbers"
        entry = {}
        for k, v in spec.items():
            if k not in BOUND_NAMES:
                return f"{metric}.{k}: unknown bound; allowed: {', '.join(BOUND_NAMES)}"
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                return f"{metric}.{k} = {v!r}: must be a number > 0"
            entry[k] = float(v)
        if entry:
            out[metric] = entry
    return out


def _field_path(err: dict) -> str:
    loc = [str(p) for p in err.get("loc", ())]
    # drop the discriminator tag pydantic puts first for tagged unions
    if loc and loc[0] in ("datacenter", "collective", "gemm", "testbed", "decentralized", "reference"):
        loc = loc[1:]
    return ".".join(loc) or "record"


def _load_text(text: str, name: str, data: Dataset, trusted: bool = False) -> None:
    """Records and groups of one file into `data` (load_dataset reads every file's groups before any
    file's records, so a record may name a group another file defines)."""
    doc = _read_doc(text, name, data, trusted)
    if doc is not None:
        _load_groups(doc, name, data)
        _load_records(doc, name, data)


def _read_doc(text: str, name: str, data: Dataset, trusted: bool = False) -> dict | None:
    """One file's document, or None with its problem in `data`; a user's file (not `trusted`) is read as
    any user input is (schema/inputs.py: alias budget, plain types, depth), and every shape it could get
    wrong is a RecordProblem naming the place."""
    if trusted:
        doc = yaml.safe_load(text)
    else:
        try:
            doc = inputs.parse_yaml(text, "file", nan_ok=True)  # a NaN rejects its own record (below)
        except ScenarioError as exc:
            for field, value, why in exc.problems:
                data.problems.append(RecordProblem(name, "-", field, f"{quote(value)}: {why}"))
            return None
    if not isinstance(doc, dict) or not isinstance(doc.get("records", []), list):
        data.problems.append(
            RecordProblem(
                name, "-", "file", "must be a mapping with a `records:` list (and optional `groups:`)"
            )
        )
        return None
    unknown = sorted(str(k) for k in doc if k not in ("records", "groups"))
    if unknown:  # `runs:` for `records:` read as a file of no records, with no word
        data.problems.append(
            RecordProblem(
                name,
                "-",
                unknown[0],
                f"unknown top-level key ({', '.join(unknown)}): give `records:` and `groups:`",
            )
        )
    data.files.append(name)
    return doc


def _load_groups(doc: dict, name: str, data: Dataset) -> None:
    groups = doc.get("groups") or {}
    if not isinstance(groups, dict):
        data.problems.append(RecordProblem(name, "-", "groups", "must be a mapping of group names to groups"))
        groups = {}
    for gname, g in groups.items():
        if not isinstance(g, dict):
            data.problems.append(RecordProblem(name, "-", f"groups.{gname}", "must be a mapping"))
            continue
        shape = [
            (key, why)
            for key, kind, why in (
                ("defaults", dict, "must be a mapping of record fields"),
                ("assumptions", list, "must be a list of assumptions (text)"),
                ("bounds", dict, "must be a mapping of metric to bounds"),
            )
            if g.get(key) is not None and not isinstance(g.get(key), kind)
        ]
        if isinstance(g.get("assumptions"), list) and not all(isinstance(a, str) for a in g["assumptions"]):
            shape.append(("assumptions", "must be a list of assumptions (text)"))
        if shape:
            data.problems.extend(RecordProblem(name, "-", f"groups.{gname}.{k}", why) for k, why in shape)
            continue
        role = g.get("role", "check")
        if role not in ("calibration", "check", "reference"):
            data.problems.append(
                RecordProblem(
                    name, "-", f"groups.{gname}.role", f"{role!r}: must be calibration, check or reference"
                )
            )
            continue
        if gname in data.groups:
            data.problems.append(
                RecordProblem(name, "-", f"groups.{gname}", "is already defined (pick a new name)")
            )
            continue
        bounds = _parse_bounds(g.get("bounds") or {})
        if isinstance(bounds, str):
            data.problems.append(RecordProblem(name, "-", f"groups.{gname}.bounds", bounds))
            continue
        data.groups[gname] = Group(
            gname,
            str(g.get("description", "")),
            role,
            tuple(g.get("assumptions") or ()),
            bool(g.get("compares_layouts", False)),
            bounds,
            str(g.get("leaves_out", "")),
            str(g.get("source_set") or ""),
        )
        data.defaults[gname] = g.get("defaults") or {}


def _load_records(doc: dict, name: str, data: Dataset) -> None:
    seen = {r.id for r in data.records}
    for i, raw in enumerate(doc.get("records") or []):
        label = raw.get("id", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
        if not isinstance(raw, dict):
            data.problems.append(RecordProblem(name, label, "record", "must be a mapping"))
            continue
        gname = raw.get("group")
        if gname is not None and not isinstance(gname, str):
            data.problems.append(
                RecordProblem(name, str(label), "group", f"{quote(gname)}: must be a group name")
            )
            continue
        label = label if isinstance(label, str | int | float) else f"#{i + 1}"
        defaults = data.defaults.get(gname, {})
        if gname is not None and gname not in data.groups:
            data.problems.append(
                RecordProblem(
                    name, label, "group", f"{gname!r} is not defined in any file read or the bundled dataset"
                )
            )
            continue
        merged = _merge(defaults, raw)
        try:  # a NaN anywhere, even in a field the model reads no further (the file parser let it by)
            inputs.check_plain(merged, "record")
        except ScenarioError as exc:
            data.problems.extend(
                RecordProblem(name, label, f.removeprefix("record."), f"{quote(v)}: {m}")
                for f, v, m in exc.problems
            )
            continue
        if "kind" not in merged:
            kinds = ", ".join(KINDS)
            data.problems.append(
                RecordProblem(
                    name,
                    label,
                    "kind",
                    f"missing: give one of {kinds} (on the record or in its group's defaults)",
                )
            )
            continue
        if merged.get("software") is not None and isinstance(merged.get("layout", {}), dict):
            from dtsim.models.datacenter.software import apply_software

            try:  # the profile's fields under the group's and the record's own layout keys
                layout = merged.get("layout", {})
                merged["layout"] = apply_software(merged["software"], layout, explicit=set(layout))
            except ScenarioError as exc:
                data.problems.extend(
                    RecordProblem(name, label, f, f"{quote(v)}: {m}") for f, v, m in exc.problems
                )
                continue
        group = data.groups.get(gname)
        if group is not None and group.assumptions:
            merged["assumptions"] = [*group.assumptions, *merged.get("assumptions", [])]
        try:
            rec = _ADAPTER.validate_python(merged)
        except ValidationError as exc:
            for e in exc.errors(include_url=False):
                data.problems.append(RecordProblem(name, label, _field_path(e), _record_message(e)))
            continue
        found = _check_record(rec)
        if found:
            data.problems.extend(RecordProblem(name, label, f, why) for f, why in found)
            continue
        if rec.id in seen:
            data.problems.append(RecordProblem(name, label, "id", "duplicates an id already loaded"))
            continue
        seen.add(rec.id)
        data.records.append(rec)


def _check_record(rec) -> list[tuple[str, str]]:
    """Deeper checks that need the catalogs (models, GPUs, layouts, scenarios): [(field, reason)]."""
    from dtsim.errors import ScenarioError

    try:
        if rec.kind == "datacenter":
            from dtsim.validation.predict import datacenter_workload

            datacenter_workload(rec)
        elif rec.kind == "decentralized":
            from dtsim.validation.predict import decentralized_inputs

            decentralized_inputs(rec, window_bytes=1e6)  # any window: checks the fields
        elif rec.kind == "gemm":
            from dtsim import catalog

            g = catalog.gpus().get(rec.gpu)
            if g is None or g.micro is None:
                return [("gpu", f"{rec.gpu!r} has no micro-architecture constants in the catalog")]
        elif rec.kind == "collective":
            from dtsim import catalog

            for f in ("intra_fabric", "inter_fabric"):
                v = getattr(rec, f)
                if v is not None and v not in catalog.fabrics():
                    return [(f, f"{v!r} is not a catalog fabric ({', '.join(catalog.fabrics())})")]
            if rec.algorithm == "nvls":
                intra = catalog.fabrics().get(rec.intra_fabric or "")
                if rec.ranks > rec.gpus_per_node or intra is None or intra.nvls_efficiency is None:
                    return [
                        ("algorithm", "nvls needs the ranks in one node on an intra_fabric with NVLink SHARP")
                    ]
        elif rec.kind == "testbed":
            from dtsim.physics.transformer import get_architecture

            get_architecture(rec.model)
            if rec.metric == "allreduce_s" and rec.host_cores is None:
                return [
                    ("host_cores", "required for metric allreduce_s (the cores of the host the ranks share)")
                ]
    except ScenarioError as exc:
        return [(f, f"{v!r}: {m}" if v is not None else m) for f, v, m in exc.problems]
    except ValidationError as exc:
        return [(_field_path(e), _record_message(e)) for e in exc.errors(include_url=False)]
    return []


def _record_message(e: dict[str, Any]) -> str:
    """pydantic's message for one field of a record (a validator's own words without pydantic's prefix),
    with the value where it is the problem (a NaN or an infinity: "nan: must be a finite number")."""
    if e.get("type") == "finite_number":
        return f"{e.get('input')!r}: must be a finite number"
    return str(e.get("msg", "invalid")).removeprefix("Value error, ")  # a validator's own words


def bundled_files() -> list[Any]:
    root = resources.files("dtsim.catalog.measured_runs")
    return sorted((p for p in root.iterdir() if p.name.endswith((".yaml", ".yml"))), key=lambda p: p.name)


def _runs_entries(runs_dir: str | Path | None) -> tuple[list[Path], list[Path]]:
    """(Every entry of --runs, its record files: *.yaml, *.yml), or a ScenarioError when it names no folder of them: a
    bad argument (it used to print the bundled records' whole report and exit 1, as if one record had
    failed)."""
    if runs_dir is None:
        return [], []
    if not str(runs_dir).strip():  # Path("") is ".": not what was meant
        raise ScenarioError([("--runs", "", "is empty: give a directory of record files")])
    root = Path(runs_dir)
    if not root.is_dir():
        why = "is not a directory" if root.exists() else "does not exist"
        raise ScenarioError([("--runs", str(root), f"{why}: give a directory of record files")])
    entries = sorted(root.iterdir())
    files = [p for p in entries if p.suffix.lower() in (".yaml", ".yml")]
    if not files:
        raise ScenarioError([("--runs", str(root), "holds no .yaml or .yml files")])
    return entries, files


def load_dataset(runs_dir: str | Path | None = None, bundled: bool = True) -> Dataset:
    """The bundled records, plus every *.yaml / *.yml file in `runs_dir`. Every file's groups are read
    before any file's records, so a record may name a group of another file (or a bundled one) and takes
    its defaults, whatever the files' order."""
    data = Dataset()
    docs: list[tuple[dict, str]] = []
    entries, files = _runs_entries(runs_dir)  # a bad --runs is refused before any record is read
    if bundled:
        for p in bundled_files():
            name = f"dtsim/catalog/measured_runs/{p.name}"
            doc = _read_doc(p.read_text("utf-8"), name, data, trusted=True)
            if doc is not None:
                docs.append((doc, name))
    if runs_dir is not None:
        for p in files:
            try:
                text = inputs.read_text_file(p)
            except ScenarioError as exc:
                data.problems.extend(RecordProblem(str(p), "-", "file", why) for _, _, why in exc.problems)
                continue
            doc = _read_doc(text, str(p), data)
            if doc is not None:
                docs.append((doc, str(p)))
        data.skipped = [
            str(p) for p in entries if p.is_file() and p not in files and not p.name.startswith(".")
        ]
    for doc, name in docs:
        _load_groups(doc, name, data)
    for doc, name in docs:
        _load_records(doc, name, data)
    return data
