"""The assumptions table: every modelling constant, its source, and per-scenario overrides.

The table lives in `catalog/assumptions.yaml`; this module turns it into an `Assumptions` object
whose attributes are the values formulas use (`asm.straggler_coefficient`), validates overrides
against each entry's range, and renders the table for docs and the CLI.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dtsim.catalog import assumption_rows
from dtsim.errors import ScenarioError

SCENARIOS = ("optimistic", "expected", "conservative")
TABLE_NAMES = ("compression_quality", "activation_quality")
KEY_NAMES = ("compression_quality_keys", "activation_quality_keys")


@dataclass(frozen=True)
class AssumptionInfo:
    name: str
    value: Any
    unit: str
    description: str
    source: str
    seed: str
    range: tuple[float, float] | None
    # {dist, <params>, basis} for an uncertain value (what `--uncertainty` draws unless
    # --fixed-assumptions), or {fixed: why it is not uncertain}
    uncertainty: dict[str, Any]


# The specification documents an assumption's `seed` entry points into, by the names users know them by
SPEC_DOCUMENTS = {
    "000": "MIRI simulator docs",
    "001": "Camilli 2025",
    "002": "Erdil & Schneider-Joseph 2024",
    "003": "Data Parallelism from Associativity",
}


def spec_section(entry: str) -> str:
    """'000 §1.1' → 'MIRI simulator docs §1.1' (the document's name, not its spec-file label)."""
    head, _, rest = entry.partition(" ")
    return f"{SPEC_DOCUMENTS[head]} {rest}".strip() if head in SPEC_DOCUMENTS else entry


def table() -> list[AssumptionInfo]:
    """Every assumption with its default value, in file order."""
    rows = []
    for name, row in assumption_rows().items():
        rng = row.get("range")
        rows.append(
            AssumptionInfo(
                name=name,
                value=row["value"],
                unit=row["unit"],
                description=row["description"],
                source=row["source"],
                seed=spec_section(str(row["seed"])),
                range=(float(rng[0]), float(rng[1])) if rng else None,
                uncertainty=dict(row["uncertainty"]),
            )
        )
    return rows


def distributions(names: Any = None) -> dict[str, Any]:
    """The table's distributions (`uncertainty: {dist: ...}`) by assumption name, for `names` (all if
    None); an assumption whose value is fixed (a definition, a count, a choice the run makes) has none."""
    from dtsim.distributions import make_distribution

    out = {}
    for name, row in assumption_rows().items():
        spec = row["uncertainty"]
        if "dist" in spec and (names is None or name in names):
            out[name] = make_distribution(
                f"assumptions.{name}", {k: v for k, v in spec.items() if k != "basis"}
            )
    return out


def _is_number(x: Any) -> bool:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    try:
        return bool(np.isfinite(float(x)))
    except OverflowError:  # an integer too large for a float (a TypeError in np.isfinite, an HTTP 500)
        return False


class Assumptions:
    """Resolved assumption values: the table's defaults with a scenario's overrides applied."""

    def __init__(self, overrides: Mapping[str, Any] | None = None):
        rows = assumption_rows()
        values = {name: row["value"] for name, row in rows.items()}
        overrides = dict(overrides or {})
        problems: list[tuple[str, object, str]] = []
        for name, value in overrides.items():
            field = f"assumptions.{name}"
            if name not in rows:
                import difflib

                close = difflib.get_close_matches(str(name), list(rows), n=3)
                hint = f"did you mean {', '.join(close)}? " if close else ""
                problems.append(
                    (field, value, f"unknown assumption; {hint}`dtsim assumptions` lists all {len(rows)}")
                )
                continue
            rng = rows[name].get("range")
            if rng is not None:
                if not _is_number(value):
                    problems.append((field, value, "must be a finite number"))
                elif not (rng[0] <= value <= rng[1]):
                    problems.append((field, value, f"must be between {rng[0]} and {rng[1]}"))
                else:
                    values[name] = float(value)
            else:
                values[name] = value
        if not problems:
            problems.extend(_check_tables(values, overrides))
        if problems:
            raise ScenarioError(problems)
        self._values = values
        self.overridden = {k: values[k] for k in overrides}
        # Tables as arrays, in the layout formulas index: [error_feedback, scenario, key].
        ef = values["compression_quality"]
        self.compression_keys = np.asarray(values["compression_quality_keys"], dtype=float)
        self.compression_table = np.array(
            [[ef["no_error_feedback"][s] for s in SCENARIOS], [ef["error_feedback"][s] for s in SCENARIOS]],
            dtype=float,
        )
        self.activation_keys = np.asarray(values["activation_quality_keys"], dtype=float)
        self.activation_table = np.array([values["activation_quality"][s] for s in SCENARIOS], dtype=float)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    # --- per-row values (Monte Carlo over assumptions) ------------------------------------------------------

    def with_rows(self, arrays: Mapping[str, Any]) -> Assumptions:
        """A copy whose named scalar assumptions hold one value per batch row (1-D arrays of the batch's
        length); every formula reading them is row-wise, so each row sees its own value."""
        new = object.__new__(Assumptions)
        new.__dict__.update(self.__dict__)
        new._values = {**self._values, **{k: np.asarray(v, dtype=float) for k, v in arrays.items()}}
        new.varied = tuple(arrays)
        return new

    def rows(self, start: int, stop: int) -> Assumptions:
        """The per-row values of rows start..stop (itself when nothing varies per row)."""
        varied = self.__dict__.get("varied", ())
        if not varied:
            return self
        return self.with_rows({k: self._values[k][start:stop] for k in varied})

    def take(self, idx: np.ndarray) -> Assumptions:
        """The per-row values of rows `idx` (a strategy's rows: Frame.take)."""
        varied = self.__dict__.get("varied", ())
        return self.with_rows({k: self._values[k][idx] for k in varied}) if varied else self

    def as_column(self) -> Assumptions:
        """Per-row values as (n, 1) columns, beside a frame's (Frame.as_column)."""
        varied = self.__dict__.get("varied", ())
        if not varied:
            return self
        new = self.with_rows({})
        new.varied = varied
        new._values = {**self._values, **{k: self._values[k][:, None] for k in varied}}
        return new

    def at(self, i: int) -> Assumptions:
        """Row i's values as plain numbers (for a one-row result and its messages)."""
        varied = self.__dict__.get("varied", ())
        if not varied:
            return self
        new = self.with_rows({})
        new._values = {**self._values, **{k: float(self._values[k][i]) for k in varied}}
        return new


def _check_tables(values: dict[str, Any], overrides: Mapping[str, Any]) -> list[tuple[str, object, str]]:
    """Shape and range checks for the quality tables (only reached when a table is overridden)."""
    problems: list[tuple[str, object, str]] = []
    if not any(k in overrides for k in (*TABLE_NAMES, *KEY_NAMES)):
        return problems
    # Quality factors are penalties near 1; the lower limits keep the product over the deepest
    # pipeline (q^(2·(S−1)) with S ≤ 1000) far from floating-point underflow.
    for keys_name, table_name, nested, lowest in (
        ("compression_quality_keys", "compression_quality", True, 0.1),
        ("activation_quality_keys", "activation_quality", False, 0.9),
    ):
        keys = values[keys_name]
        field = f"assumptions.{keys_name}"
        if (
            not isinstance(keys, list)
            or len(keys) < 2
            or not all(_is_number(k) and k >= 1 for k in keys)
            or any(b <= a for a, b in itertools.pairwise(keys))
        ):
            problems.append((field, keys, "must be a list of at least two increasing ratios ≥ 1"))
            continue
        tbl = values[table_name]
        groups = ("error_feedback", "no_error_feedback") if nested else (None,)
        for group in groups:
            sub = tbl.get(group) if (nested and isinstance(tbl, dict)) else tbl
            where = f"assumptions.{table_name}" + (f".{group}" if group else "")
            if not isinstance(sub, dict) or set(sub) != set(SCENARIOS):
                problems.append((where, sub, f"must map each of {', '.join(SCENARIOS)} to a list"))
                continue
            for scen in SCENARIOS:
                row = sub[scen]
                if (
                    not isinstance(row, list)
                    or len(row) != len(keys)
                    or not all(_is_number(q) and lowest <= q <= 1 for q in row)
                ):
                    problems.append(
                        (
                            f"{where}.{scen}",
                            row,
                            f"must be {len(keys)} quality factors in [{lowest}, 1], one per key",
                        )
                    )
    return problems


DEFAULT = None


def defaults() -> Assumptions:
    """The table's defaults (cached)."""
    global DEFAULT
    if DEFAULT is None:
        DEFAULT = Assumptions()
    return DEFAULT
