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


def format_problem(field: str, value: object, message: str) -> str:
    shown = repr(value) if isinstance(value, str) else value
    return f"{field} = {shown}: {message}"


def check_folder(path: Any, option: str) -> None:
    """A clear error, naming `option`, when the folder a file is to be written in does not exist
    (checked before the work that would write it)."""
    from pathlib import Path

    folder = Path(path).parent
    if not folder.is_dir():
        raise ScenarioError([(option, str(path), f"its folder does not exist ({folder})")])


def problem(field: str, value: object, message: str) -> ScenarioError:
    return ScenarioError([(field, value, message)])


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
            problems.extend(ctx_err.problems)
            continue
        value = fields.get(field, err.get("input")) if loc else err.get("input")
        msg = err.get("msg", "invalid")
        better = message(field, err.get("type", "")) if message is not None else None
        if better is not None:
            msg = better
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        problems.append((field, value, msg))
    seen: set[str] = set()
    return [p for p in problems if not (p[0] in seen or seen.add(p[0]))]
