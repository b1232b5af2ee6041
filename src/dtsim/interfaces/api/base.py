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
            if isinstance(v, float) and v.is_integer() and abs(v) < 2**63 and _takes_int(f.annotation):
                out = dict(data) if out is None else out
                out[key] = int(v)
        return data if out is None else out
