"""The base of every API request body: a whole-number float (48.0) where an integer is asked is that
integer, as JSON Schema's `integer` type allows and as /api/simulate already took it (a client in
Python or JavaScript often sends 48.0 for 48); 48.5 is still refused, and strictness otherwise stays
each model's own (true is not 1, "2" is not 2)."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, model_validator


def _takes_int(annotation: Any) -> bool:
    """Whether a field's type is an integer (or an optional one) and not also a float."""
    if annotation is int:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _takes_int(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        return any(_takes_int(a) for a in args) and float not in args
    return False


def _takes_int_list(annotation: Any) -> bool:
    """Whether a field's type is a list of integers (or an optional one)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _takes_int_list(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_takes_int_list(a) for a in typing.get_args(annotation))
    return origin in (list, tuple) and all(
        _takes_int(a) for a in typing.get_args(annotation) if a is not Ellipsis
    )


def _whole(v: Any) -> Any:
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**63 else v


class ApiRequest(BaseModel):
    @model_validator(mode="before")
    @classmethod
    def _whole_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = None
        for name, f in cls.model_fields.items():
            key = f.alias or name
            v = data.get(key)
            if isinstance(v, float) and _takes_int(f.annotation) and _whole(v) is not v:
                out = dict(data) if out is None else out
                out[key] = _whole(v)
            elif isinstance(v, list) and _takes_int_list(f.annotation) and any(_whole(x) is not x for x in v):
                out = dict(data) if out is None else out
                out[key] = [_whole(x) for x in v]
        return data if out is None else out


def distribution_fields(fields: dict[str, Any]) -> list[tuple[str, Any]]:
    """(field, value) of each scenario field (or assumption) given as a distribution object."""
    out = [(k, v) for k, v in fields.items() if isinstance(v, dict) and "dist" in v]
    assumptions = fields.get("assumptions")
    if isinstance(assumptions, dict):
        out += [
            (f"assumptions.{k}", v) for k, v in assumptions.items() if isinstance(v, dict) and "dist" in v
        ]
    return out


def distributions_refused(
    fields: dict[str, Any], operation: str, prefix: str = ""
) -> list[tuple[str, Any, str]]:
    """The problems of scenario fields given as distributions to an operation that runs points."""
    return [
        (
            f"{prefix}{name}",
            value,
            f"is a distribution; {operation} runs points: give a number (POST /api/sensitivity "
            "draws a distribution; dtsim simulate and /api/target run it at its median)",
        )
        for name, value in distribution_fields(fields)
    ]


def preset_conflict(fields: dict[str, Any], preset: Any, prefix: str = "") -> list[tuple[str, Any, str]]:
    """A body naming another base preset than the query's (compared as presets are looked up, in lower
    case)."""
    given = fields.get("preset")
    if given is None or preset is None or str(given).lower() == str(preset).lower():
        return []
    return [
        (
            f"{prefix}preset",
            given,
            f"the body names another base preset than ?preset={preset}: give one of them",
        )
    ]
