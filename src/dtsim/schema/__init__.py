"""The scenario schema: fields, validation, JSON Schema, `--set` parsing and scenario files."""

from dtsim.schema.scenario import (
    FIELD_NAMES,
    Precision,
    Scenario,
    load_scenario,
    make_scenario,
    parse_set,
    read_scenario_file,
    scenario_json_schema,
)

__all__ = [
    "FIELD_NAMES",
    "Precision",
    "Scenario",
    "load_scenario",
    "make_scenario",
    "parse_set",
    "read_scenario_file",
    "scenario_json_schema",
]
