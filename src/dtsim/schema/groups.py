"""Heterogeneous node groups: the `node_groups` entries of a scenario.

A group is `count` nodes of one kind behind one kind of link, in one place. Whatever a group leaves out
it takes from the scenario (its node hardware, MFU, up/down bandwidth, round-trip time), so a scenario
whose groups are all the scenario's own nodes equals the homogeneous scenario exactly.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.schema.fields import BOUNDS, Int, Num, bounded_int, ci_string_schema, lower_word

MAX_GROUPS = 64


class NodeGroup(BaseModel):
    """`count` nodes of one kind, link and place. Omitted fields come from the scenario."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    count: Int = Field(description="Nodes in this group.", **BOUNDS["num_nodes"])
    node: Annotated[
        str | None, WithJsonSchema({"anyOf": [ci_string_schema(tuple(catalog.nodes())), {"type": "null"}]})
    ] = Field(None, description="Node preset id (sets gpu, gpus_per_node, pflops and VRAM).")
    gpu: Annotated[
        str | None, WithJsonSchema({"anyOf": [ci_string_schema(tuple(catalog.gpus())), {"type": "null"}]})
    ] = Field(None, description="Accelerator id (with gpus_per_node: peak and VRAM from the catalog).")
    gpus_per_node: bounded_int("gpus_per_node") | None = Field(None, description="Accelerators per node.")
    pflops_per_node: Num | None = Field(
        None,
        description="Peak dense PFLOP/s per node at the training precision.",
        **BOUNDS["pflops_per_node"],
    )
    vram_per_node_gb: Num | None = Field(
        None, description="Accelerator memory per node in GB.", **BOUNDS["vram_per_node_gb"]
    )
    mfu: Num | None = Field(None, description="This group's model FLOP utilization.", **BOUNDS["mfu"])
    bandwidth_up_mbps: Num | None = Field(
        None, description="Upload bandwidth per node in Mbit/s.", **BOUNDS["bandwidth_up_mbps"]
    )
    bandwidth_down_mbps: Num | None = Field(
        None, description="Download bandwidth per node in Mbit/s.", **BOUNDS["bandwidth_down_mbps"]
    )
    latency_ms: Num | None = Field(
        None,
        description="Round-trip time to the farthest other group in ms (default: from the regions, "
        "else the scenario's latency_ms).",
        **BOUNDS["latency_ms"],
    )
    region: Annotated[
        str | None,
        BeforeValidator(lower_word),
        WithJsonSchema({"anyOf": [{"type": "string", "maxLength": 64}, {"type": "null"}]}),
    ] = Field(
        None,
        description="A region id from the regions table (`dtsim presets`), or a name that region_rtt_ms "
        "gives round-trip times for.",
        max_length=64,
    )

    @model_validator(mode="before")
    @classmethod
    def _symmetric(cls, data: Any) -> Any:
        """`bandwidth_mbps` sets both directions, as it does for the scenario."""
        if isinstance(data, dict) and "bandwidth_mbps" in data:
            data = dict(data)
            both = data.pop("bandwidth_mbps")
            if "bandwidth_up_mbps" in data or "bandwidth_down_mbps" in data:
                raise ScenarioError(
                    [
                        (
                            "bandwidth_mbps",
                            both,
                            "sets both directions; give either it or bandwidth_up/down_mbps",
                        )
                    ]
                )
            data["bandwidth_up_mbps"] = data["bandwidth_down_mbps"] = both
        return data

    def links(self) -> set[str]:
        """The scenario link fields this group's own values replace ("bandwidth_mbps" when it sets both
        directions)."""
        own = {k for k in ("bandwidth_up_mbps", "bandwidth_down_mbps") if getattr(self, k) is not None}
        return own | ({"bandwidth_mbps"} if len(own) == 2 else set())

    def replaces(self) -> set[str]:
        """The scenario fields this group's own values replace: its links (`links`), `latency_ms` (its
        own, or its region's RTT, decentralized.groups.group_rtt_s), `mfu`, and with a `node` of its own
        the scenario's hardware (the node sets accelerator, count, peak and memory, group_resolve)."""
        own = self.links()
        if self.node is not None:
            own |= set(catalog.HARDWARE_FIELDS)
        if self.latency_ms is not None or self.region is not None:
            own.add("latency_ms")
        if self.mfu is not None:
            own.add("mfu")
        return own

    def hardware(self) -> dict[str, Any]:
        """The hardware fields this group sets (a scenario layer)."""
        return {k: getattr(self, k) for k in catalog.HARDWARE_FIELDS if getattr(self, k) is not None}
