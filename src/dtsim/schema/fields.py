"""The scenario fields' limits, types and words: `BOUNDS` (the single table of numeric limits, in the
units of each field's name), the integer fields, the enums (built from the names the physics modules
declare), the lenient input parsers and the JSON Schema each type publishes.

The pydantic model (schema/scenario.py) and the vectorized batch encoder
(models/decentralized/encode.py) both read these, so the scalar and batch paths reject the same
inputs with the same words.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, Strict, WithJsonSchema

from dtsim.physics import codec, efficiency, memory, stragglers

# --- numeric limits (pydantic keywords ge/gt/le), in the units of each field's name ----------------
# Wide enough for any real or hypothetical run, narrow enough that every output stays finite.
BOUNDS: dict[str, dict[str, Any]] = {
    "parameters_b": {"ge": 0.001, "le": 1e5},
    "active_parameters_b": {"ge": 0.001, "le": 1e5},
    "tokens_t": {"ge": 1e-6, "le": 1e4},
    "num_nodes": {"ge": 1, "le": 10_000_000},
    "gpus_per_node": {"ge": 1, "le": 10_000_000},
    "pflops_per_node": {"ge": 1e-6, "le": 1e7},
    "vram_per_node_gb": {"ge": 0.001, "le": 1e9},
    # up to 100 Pbit/s: a scale-across fabric between datacenters (Camilli 2025 eq. 3.14 needs 5.1 Pbit/s)
    "bandwidth_mbps": {"ge": 0.001, "le": 1e11},
    "bandwidth_up_mbps": {"ge": 0.001, "le": 1e11},
    "bandwidth_down_mbps": {"ge": 0.001, "le": 1e11},
    "latency_ms": {"ge": 0, "le": 1e6},
    "mfu": {"ge": 0.001, "le": 1},
    "inner_steps": {"ge": 1, "le": 10_000_000},
    "regional_steps": {"ge": 1, "le": 10_000_000},
    "compression": {"ge": 1, "le": 1e6},
    "regional_compression": {"ge": 1, "le": 1e6},
    "local_batch_tokens": {"ge": 1, "le": 1e10},
    "micro_batches": {"ge": 1, "le": 1_000_000},
    "nodes_per_group": {"ge": 1, "le": 10_000_000},
    "regional_bandwidth_mbps": {"ge": 0.001, "le": 1e11},
    "regional_latency_ms": {"ge": 0, "le": 1e6},
    "moe_layers": {"ge": 0, "le": 100_000},
    "activation_compression": {"ge": 1, "le": 1e6},
    "hidden_size": {"ge": 1, "le": 10_000_000},
    "max_run_days": {"gt": 0, "le": 1e7},
    "tcp_streams": {"ge": 1, "le": 1_000_000},
    "loss_rate": {"ge": 0, "le": 0.5},
    "outer_overlap_steps": {"ge": 0, "le": 1000},
    "node_mtbf_hours": {"ge": 0.01, "le": 1e9},
}
INTEGER_FIELDS = (
    "num_nodes",
    "gpus_per_node",
    "inner_steps",
    "regional_steps",
    "local_batch_tokens",
    "micro_batches",
    "nodes_per_group",
    "moe_layers",
    "hidden_size",
    "tcp_streams",
    "outer_overlap_steps",
)


def bound_text(name: str) -> str:
    b = BOUNDS[name]
    lo = f"≥ {b['ge']:g}" if "ge" in b else f"> {b['gt']:g}"
    kind = "an integer" if name in INTEGER_FIELDS else "a number"
    return f"must be {kind} {lo} and ≤ {b['le']:g}"


def lower_word(value: Any) -> Any:
    return value.strip().lower().replace("_", "-") if isinstance(value, str) else value


def _word_enum(name: str, words: tuple[str, ...]) -> type[StrEnum]:
    """A string enum whose values are `words` (the tuple the physics module declares: one list of
    names); members are the words with '-' as '_' ('global' → global_)."""
    members = [(w.replace("-", "_") + ("_" if w == "global" else ""), w) for w in words]
    return StrEnum(name, members)  # type: ignore[return-value]


Precision = _word_enum("Precision", memory.PRECISIONS)
StragglerStrategy = _word_enum("StragglerStrategy", stragglers.STRATEGIES)
StragglerCurve = _word_enum("StragglerCurve", stragglers.CURVES)
ExpertParallelism = _word_enum("ExpertParallelism", memory.EP_MODES)
CompressionScenario = _word_enum("CompressionScenario", efficiency.COMPRESSION_SCENARIOS)
ReplicaPenalty = _word_enum("ReplicaPenalty", efficiency.REPLICA_PENALTIES)
# How node groups of unequal speed share the work (models/decentralized/groups.py).
WORK_ASSIGNMENTS = ("proportional", "slowest")
WorkAssignment = _word_enum("WorkAssignment", WORK_ASSIGNMENTS)
Codec = _word_enum("Codec", codec.MODEL_CODECS)
CodecDevice = _word_enum("CodecDevice", codec.DEVICES)
STRAGGLER_ALIASES = stragglers.STRATEGY_ALIASES


def straggler_word(value: Any) -> Any:
    value = lower_word(value)
    return STRAGGLER_ALIASES.get(value, value) if isinstance(value, str) else value


def steps_value(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return lower_word(value) if isinstance(value, str) else value


def _intlike(value: Any) -> Any:
    """An integral float (72.0) is an integer, as JSON Schema's `integer` says; nothing else converts."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _boolish(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def ci_pattern(*words: str) -> str:
    """A JSON Schema pattern matching any of `words` case-insensitively, with '-' or '_' and optional
    surrounding blanks — exactly what the enum validators accept."""

    def one(word: str) -> str:
        out = []
        for ch in word:
            if ch.isalpha():
                out.append(f"[{ch.lower()}{ch.upper()}]")
            elif ch in "-_":
                out.append("[-_]")
            else:
                out.append(re.escape(ch))
        return "".join(out)

    return r"^\s*(" + "|".join(one(w) for w in words) + r")\s*$"


def words(enum: type[StrEnum]) -> tuple[str, ...]:
    """The values of a string enum, in order."""
    return tuple(m.value for m in enum)


def enum_schema(values: tuple[str, ...], aliases: tuple[str, ...] = ()) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "enum": list(values)},
                {"type": "string", "pattern": ci_pattern(*values, *aliases)},
            ]
        }
    )


def ci_string_schema(values: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "string", "pattern": ci_pattern(*values)}


# Field types: numbers reject strings and booleans; integers take integral floats; booleans take
# true/false (any case); enums any case. The JSON Schema of each says exactly that.
Num = Annotated[float, Strict()]
Int = Annotated[int, BeforeValidator(_intlike), Strict()]


def bounded_int(name: str) -> Any:
    """An integer field with the limits of BOUNDS[name], written so that the JSON Schema shows them as
    minimum/maximum also inside `int | None` (constraints before the lenient validator)."""
    return Annotated[int, Field(**BOUNDS[name]), BeforeValidator(_intlike), Strict()]


Bool = Annotated[
    bool,
    BeforeValidator(_boolish),
    Strict(),
    WithJsonSchema(
        {"anyOf": [{"type": "boolean"}, {"type": "string", "pattern": ci_pattern("true", "false")}]}
    ),
]
Lower = BeforeValidator(lower_word)
GROWTH_PATTERN = (
    r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*(%|[xX]|×|[oO][oO][mM])\s*"
    r"(/\s*([yY][rR]|[yY][eE][aA][rR]|[yY]))?\s*$"
)


def steps_schema(field: str, words: tuple[str, ...]) -> WithJsonSchema:
    b = BOUNDS[field]
    return WithJsonSchema(
        {"anyOf": [{"type": "integer", "minimum": b["ge"], "maximum": b["le"]}, ci_string_schema(words)]}
    )


def num_field(name: str, description: str, default: Any) -> Any:
    return Field(default, description=description, **BOUNDS[name])
