"""Errors dtsim raises for bad input. Each names the field, the value and what is allowed."""

from __future__ import annotations


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


def problem(field: str, value: object, message: str) -> ScenarioError:
    return ScenarioError([(field, value, message)])
