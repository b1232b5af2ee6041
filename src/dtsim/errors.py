"""Errors dtsim raises for bad input. Each names the field, the value and what is allowed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ScenarioError(ValueError):
    """One or more scenario fields are invalid.

    `problems` is a list of (field, value, message) triples; str() renders one line per problem in
    the form ``field = value: what is allowed``.
    """

    def __init__(self, problems: list[tuple[str, object, str]]):
        self.problems = problems
        super().__init__("\n".join(format_problem(f, v, m) for f, v, m in problems))


class MissingExtra(ScenarioError):
    """A feature needs an optional dependency this installation lacks (SALib for `sensitivity`): the
    request was right, the installation is not. The CLI says it as any problem (exit 2, the pip command);
    the HTTP API answers 501, not 422, since no change to the request would help."""


QUOTE_CHARS = 80  # the most of a value (and of a field name) an error message quotes


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """A value as an error message shows it: text in quotes, anything else as Python prints it,
    cut to `limit` characters (lists and mappings abbreviated first, so a huge or deeply nested value
    costs no more to show than a short one)."""
    import reprlib

    if isinstance(value, str):
        shown = repr(value[: limit + 1])
    elif not isinstance(value, list | tuple | dict | set | frozenset):
        try:
            shown = str(value)
        except Exception:  # a value whose str() fails still gets an error message
            shown = f"<{type(value).__name__}>"
    else:
        r = reprlib.Repr()
        r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxset = 3, 8, 8, 8, 8
        r.maxstring, r.maxother, r.maxlong = limit, limit, limit
        try:
            shown = r.repr(value)
        except Exception:  # a value whose repr fails still gets an error message
            shown = f"<{type(value).__name__}>"
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def format_problem(field: str, value: object, message: str) -> str:
    name = field if len(field) <= QUOTE_CHARS else field[: QUOTE_CHARS - 1] + "…"
    return f"{name} = {quote(value)}: {message}"


def check_folder(path: Any, option: str) -> None:
    """A clear error, naming `option`, when the folder a file is to be written in does not exist or
    the path is itself a folder (checked before the work that would write it)."""
    from pathlib import Path

    folder = Path(path).parent
    if not folder.is_dir():
        raise ScenarioError([(option, str(path), f"its folder does not exist ({folder})")])
    if Path(path).is_dir():
        raise ScenarioError([(option, str(path), "is a folder: give a file name in it")])


def write_text_file(path: Any, text: str, option: str) -> None:
    """Write `text` to `path` (UTF-8), or a clear error naming `option` when it cannot be written."""
    from pathlib import Path

    check_folder(path, option)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ScenarioError([(option, str(path), f"cannot be written ({exc.strerror or exc})")]) from None


def problem(field: str, value: object, message: str) -> ScenarioError:
    return ScenarioError([(field, value, message)])


# Fields whose value is a list or mapping of their own: their errors name the inner place.
NESTED_FIELDS = {
    "node_groups": "count, node, gpu, gpus_per_node, pflops_per_node, vram_per_node_gb, mfu, bandwidth_mbps, "
    "bandwidth_up_mbps, bandwidth_down_mbps, latency_ms, region",
    "region_rtt_ms": "region names mapping to region names and round-trip times in ms",
}


def validation_problems(
    exc: Any, fields: dict[str, Any], message: Callable[[str, str], str | None] | None = None
) -> list[tuple[str, object, str]]:
    """A pydantic ValidationError as (field, value, message) triples, one per field.

    `message(field, error_type)` may replace pydantic's wording with what the field allows."""
    problems: list[tuple[str, object, str]] = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err.get("loc", ()) if not str(p).startswith(("int", "literal", "function"))]
        field = ".".join(loc[:1]) if loc else "scenario"
        ctx_err = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_err, ScenarioError):
            if len(loc) > 1 and loc[0] in NESTED_FIELDS:  # raised inside a node group: name the group
                inner = loc[0] + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in loc[1:])
                problems.extend((f"{inner}.{f}", v, m) for f, v, m in ctx_err.problems)
                continue
            problems.extend(ctx_err.problems)
            continue
        value = fields.get(field, err.get("input")) if loc else err.get("input")
        msg = err.get("msg", "invalid")
        expected = (err.get("ctx") or {}).get("expected")
        if err.get("type") in ("literal_error", "enum") and expected:
            # pydantic: "Input should be 'fp16', 'bf16' or 'fp8'": in dtsim's words
            msg = "must be one of: " + choices_text(expected)
        if len(loc) > 1 and loc[0] in NESTED_FIELDS:  # node_groups[2].count, region_rtt_ms.a.b
            field = loc[0] + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in loc[1:])
            value = err.get("input")
            if err.get("type") == "extra_forbidden":
                msg = f"unknown field; allowed: {NESTED_FIELDS[loc[0]]}"
            elif err.get("type") == "missing":  # the value is the group around it: say what to give
                value = None
                allowed = message(f"{loc[0]}.{loc[-1]}", "missing") if message is not None else None
                msg = "is missing" + (f"; it {allowed}" if allowed else ": give it")
            elif message is not None and err.get("type", "").endswith(
                ("_parsing", "_type", "than", "_equal")
            ):
                # what the inner field allows, in the caller's words (schema.scenario.nested_message)
                msg = message(f"{loc[0]}.{loc[-1]}", err.get("type", "")) or msg
            problems.append((field, value, msg))
            continue
        better = message(field, err.get("type", "")) if message is not None else None
        if better is not None:
            msg = better
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        problems.append((field, value, msg))
    seen: set[str] = set()
    return [p for p in problems if not (p[0] in seen or seen.add(p[0]))]


def choices_text(expected: object) -> str:
    """pydantic's list of allowed values ("'a', 'b' or 'c'") as "a, b, c"."""
    import re

    return re.sub(r"'([^']*)'", r"\1", str(expected)).replace(" or ", ", ")


def _utf8(text: object) -> str:
    """Text safe to encode as UTF-8 (a lone surrogate from a key becomes a backslash escape such as \\udc80)."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def _shown(value: Any) -> Any:
    """A value as an error body quotes it: null, true/false, a number that JSON holds exactly and
    text of at most QUOTE_CHARS characters as they are; anything else (a list, a mapping, long text, a
    huge or non-finite number) as its first QUOTE_CHARS characters of text (quote), so an error never
    echoes a whole request back."""
    import math

    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) < 2**53:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, str) and len(value) <= QUOTE_CHARS:
        return _utf8(value)
    return _utf8(quote(value))


def problems_body(problems: list[tuple[str, Any, str]]) -> dict[str, Any]:
    """The HTTP API's error body, `{"detail": [{field, value, message}, ...]}`, one entry per problem
    (the same for an answer and for a failed job's record)."""
    return {"detail": [{"field": _utf8(f), "value": _shown(v), "message": _utf8(m)} for f, v, m in problems]}
