"""The typed result of `dtsim emulate` (`dtsim.emulate`): what was measured on the shaped links beside
what dtsim predicts for the same run. `as_dict()` is the JSON of `dtsim emulate --report FILE`;
`headline()` the shorter JSON of `dtsim emulate --json` (no per-event rows or raw worker records)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class SyncEvent:
    """One measured synchronisation (a DDP step, a DiLoCo outer step), over every rank."""

    # DiLoCo: the last rank's entry to the last rank's exit; DDP: the slowest rank's span of bucket all-reduces
    sync_s: float
    step_s: float  # the slowest rank's whole step
    tx_bytes: list[int]  # bytes each rank's interface sent (headers included)
    tx_packets: list[int]
    rx_bytes: list[int]
    buckets: int  # DDP gradient buckets (1 for DiLoCo)
    arrival_skew_s: float | None = None  # DiLoCo: the last rank's entry into the sync less the first rank's


@dataclass(frozen=True)
class RunInfo:
    """How the run was made, so it can be repeated: the command, the options, the versions, the machine."""

    command: str
    options: dict[str, Any]
    run_id: str
    netem: bool  # links delayed by netem (else latency, if any, was applied inside the workers)
    wall_s: float
    versions: dict[str, str]
    machine: dict[str, Any]


@dataclass(frozen=True)
class EmulationSummary:
    algorithm: str
    workers: int
    params: int
    value_bytes: int
    gradient_bytes: int
    sync_events: int
    buckets_per_sync: int
    bytes_sent_per_rank_per_sync: float | None
    payload_bytes_per_rank_per_sync: float | None  # sent minus protocol headers
    protocol_overhead_bytes_per_rank_per_sync: float | None
    expected_bytes_per_rank_per_sync: float  # the collectives model's bytes per rank
    bytes_error: float | None  # payload / expected − 1
    # forward_s, backward_s, optimizer_s (communication off); DiLoCo also the codec's work and the
    # measured rounds' compute inputs (launcher._round_compute: per-rank lists among them)
    measured_compute_s: dict[str, Any]
    measured_sync_s: float | None
    predicted_sync_s: float
    sync_error: float | None
    measured_step_s: float | None
    predicted_step_s: float
    step_error: float | None
    tokens_per_s: float | None
    predicted_tokens_per_s: float
    overhead_fraction: float | None  # measured sync / measured step
    loss_first: float | None
    loss_last: float | None
    evals: list[dict[str, float]]  # held-out loss against tokens: {tokens, loss, ...}
    latency_approximate: bool  # latency applied inside the workers (no netem on this kernel)
    events: list[SyncEvent]
    # DiLoCo: median wait of the first rank into a sync for the last (compute imbalance; not in measured_sync_s)
    measured_arrival_skew_s: float | None = None
    # whether any link was shaped to a rate (launcher.links_shaped): only then is the sync time predicted
    links_shaped: bool = True
    run: RunInfo | None = None
    records: list[dict[str, Any]] = field(default_factory=list)  # every worker's raw measurements

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def headline(self) -> dict[str, Any]:
        """The summary without the per-event rows, the evals and the raw worker records."""
        skip = {"value_bytes", "evals", "events", "records"}
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        out["run"] = asdict(self.run) if self.run is not None else None
        return out
