"""N-dimensional sweeps: a grid over one or more scenario fields, run by the batch path.

`dtsim sweep --vary num_nodes=8:4096:10:log --vary bandwidth_mbps=10:10000:31:log` builds the
Cartesian product of the axes, simulates every point with `simulate_batch` (in chunks, so memory stays
bounded and a progress bar can follow), and returns a tidy table: one row per point, one column per
input field and per output.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dtsim import catalog
from dtsim.analysis.distributed import map_blocks
from dtsim.errors import ScenarioError, check_folder
from dtsim.models.decentralized.encode import BATCH_FIELDS, NODE_SET_FIELDS, NUMERIC, OPTIONAL
from dtsim.models.decentralized.engine import TEXT_OUTPUTS, simulate_batch
from dtsim.schema.fields import INTEGER_FIELDS
from dtsim.schema.scenario import Scenario

MAX_GRID = 5_000_000
CHUNK = 1 << 16
# Numeric axes may be given as start:stop:num[:log]; these fields take lists only.
NUMERIC_AXES = (*NUMERIC, *OPTIONAL, "bandwidth_mbps", "inner_steps", "regional_steps")
VARYABLE = BATCH_FIELDS
# Batch outputs that are internal codes; the table carries their decoded names instead.
_CODES = (*(code for code, _ in TEXT_OUTPUTS.values()), "reason_code")


@dataclass
class Axis:
    field: str
    values: np.ndarray
    spec: str
    log: bool = False
    numeric: bool = True
    asked: int | None = None  # points a start:stop:num range asked for, where rounding merged some

    def __len__(self) -> int:
        return len(self.values)

    def note(self) -> str | None:
        """What rounding a whole-number range did, in words (None where every asked point is its own)."""
        return None if self.asked is None else merged_note(self.field, self.asked, len(self.values))


def merged_note(field_name: str, asked: int, distinct: int) -> str | None:
    """A whole-number range whose rounding merged points, in words (None where none merged): the grid's
    axes and the one-field sweep say it alike."""
    if asked == distinct:
        return None
    return (
        f"{field_name}: {asked:,} points asked, {distinct:,} distinct whole numbers "
        "(the others rounded onto them and were run once)"
    )


def _number(field_name: str, text: str, spec: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise ScenarioError([(field_name, spec, f"{text!r} is not a number")]) from None
    if not math.isfinite(x):
        raise ScenarioError([(field_name, spec, f"{text!r} is not a finite number")])
    return x


def parse_vary(spec: str) -> Axis:
    """`field=start:stop:num[:log]` (numeric fields) or `field=v1,v2,...` (any varyable field)."""
    if "=" not in spec:
        raise ScenarioError([("--vary", spec, "write field=start:stop:num[:log] or field=v1,v2,...")])
    name, _, rhs = spec.partition("=")
    name, rhs = name.strip(), rhs.strip()
    if name not in VARYABLE:
        raise ScenarioError([("--vary", name, f"cannot vary; fields that can: {', '.join(VARYABLE)}")])
    if not rhs:
        raise ScenarioError([(name, spec, "empty range: give start:stop:num[:log] or a list v1,v2,...")])
    if ":" in rhs:
        parts = rhs.split(":")
        if name not in NUMERIC_AXES:
            raise ScenarioError([(name, spec, "is not numeric; give a list of values v1,v2,...")])
        if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3].strip().lower() not in ("log", "lin")):
            raise ScenarioError([(name, spec, "write start:stop:num or start:stop:num:log")])
        start, stop = _number(name, parts[0], spec), _number(name, parts[1], spec)
        num_f = _number(name, parts[2], spec)
        if num_f != int(num_f) or num_f < 1:
            raise ScenarioError([(name, spec, f"empty range: num = {parts[2]} must be an integer ≥ 1")])
        num = int(num_f)
        if num > MAX_GRID:
            raise ScenarioError([(name, spec, f"num must be ≤ {MAX_GRID:,}")])
        log = len(parts) == 4 and parts[3].strip().lower() == "log"
        if num > 1 and start == stop:
            raise ScenarioError(
                [(name, spec, "empty range: start equals stop; give num = 1 or two different ends")]
            )
        if log:
            if start <= 0 or stop <= 0:
                raise ScenarioError([(name, spec, "a log range needs start > 0 and stop > 0")])
            values = np.geomspace(start, stop, num)
        else:
            values = np.linspace(start, stop, num)
        if name in INTEGER_FIELDS or name in ("inner_steps", "regional_steps"):
            rounded = np.round(values)
            _, first = np.unique(rounded, return_index=True)
            values = rounded[np.sort(first)]
            return Axis(name, values, spec, log=log, asked=num)
        return Axis(name, values, spec, log=log)
    items = [v.strip() for v in rhs.split(",")]
    if any(not v for v in items):
        raise ScenarioError([(name, spec, "empty value in the list")])
    if name in NUMERIC_AXES and name not in ("inner_steps", "regional_steps"):
        return Axis(name, np.asarray([_number(name, v, spec) for v in items]), spec)
    if name in ("inner_steps", "regional_steps") and all(_is_number(v) for v in items):
        return Axis(name, np.asarray([float(v) for v in items]), spec)
    return Axis(name, np.asarray(items, dtype=object), spec, numeric=False)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass
class GridResult:
    axes: list[Axis]
    columns: dict[str, np.ndarray]
    n: int
    seconds: float
    constants: dict[str, Any] = field(default_factory=dict)
    bands: Any = None  # Bands, when `add_bands` gave the outputs their quantiles over draws

    def __len__(self) -> int:
        return self.n


def grid_size(axes: list[Axis]) -> int:
    return math.prod(len(a) for a in axes)


def grid_fields(axes: list[Axis], start: int, stop: int) -> dict[str, np.ndarray]:
    """The axis values of grid points start..stop−1 (the product in C order: the last axis fastest)."""
    return grid_points(axes, np.arange(start, stop))


def grid_points(axes: list[Axis], points: np.ndarray) -> dict[str, np.ndarray]:
    """The axis values of the grid points numbered `points` (grid_fields' order)."""
    idx = np.unravel_index(points, tuple(len(a) for a in axes))
    return {a.field: a.values[i] for a, i in zip(axes, idx, strict=True)}


def _batch_fields(fields: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: (v.astype(str) if v.dtype == object else v) for k, v in fields.items()}


def _at_point(problem: tuple[str, Any, str], fields: dict[str, np.ndarray]) -> tuple[str, Any, str]:
    """A batch problem `field[i]` as the grid point i is: its field, with the varied values there."""
    import re

    field, value, message = problem
    m = re.fullmatch(r"(\w+)\[(\d+)\]", field)
    if not m:
        return problem
    i = int(m.group(2))
    point = ", ".join(f"{k}={_shown(v[i])}" for k, v in fields.items())
    return (m.group(1), value, f"{message} (at the grid point {point}; every point must be a valid scenario)")


def _shown(v: Any) -> str:
    return (
        f"{v:g}"
        if isinstance(v, float | np.floating)
        else str(v).lower()
        if isinstance(v, bool | np.bool_)
        else str(v)
    )


def grid_block(start: int, stop: int, base: Scenario, axes: list[Axis]) -> dict[str, Any]:
    """Grid points start..stop−1 through the batch path: their axis values and every output (codes
    decoded to mode, bottleneck and recovery). Runs on whichever process gets it."""
    fields = grid_fields(axes, start, stop)
    try:
        batch = simulate_batch(base, **_batch_fields(fields))
    except ScenarioError as exc:  # a row's rule: name the grid point it is, not the block's row index
        raise ScenarioError([_at_point(p, fields) for p in exc.problems]) from None
    part = {k: np.asarray(v) for k, v in batch.columns.items() if k not in _CODES}
    for name in TEXT_OUTPUTS:
        part[name] = batch[name]
    return {"inputs": fields, "outputs": part}


def check_axes(axes: list[Axis]) -> int:
    """The number of grid points, or an error naming what is wrong with the axes."""
    if not axes:
        raise ScenarioError([("--vary", None, "give at least one field to vary")])
    names = [a.field for a in axes]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ScenarioError([("--vary", sorted(dupes)[0], "is varied twice; give each field once")])
    if "bandwidth_mbps" in names and ({"bandwidth_up_mbps", "bandwidth_down_mbps"} & set(names)):
        raise ScenarioError([("--vary", "bandwidth_mbps", "vary either it or bandwidth_up/down_mbps")])
    n = grid_size(axes)
    if n > MAX_GRID:
        raise ScenarioError([("--vary", f"{n:,} points", f"the grid may hold at most {MAX_GRID:,} points")])
    return n


# The fields a varied field sets at every point besides itself (schema `_resolve`, as simulate resolves
# them): a node preset its hardware, a GPU its node's peak and memory, bandwidth_mbps both directions
SET_BY_VARIED: dict[str, tuple[str, ...]] = {
    "node": NODE_SET_FIELDS,
    "gpu": ("node", "pflops_per_node", "vram_per_node_gb"),
    "bandwidth_mbps": ("bandwidth_up_mbps", "bandwidth_down_mbps"),
}
# ... and the fields a varied field changes without replacing them: a count of GPUs scales the node's
# peak and memory (catalog.merge_layers), so each row's are its own columns, not the base's
IMPLIED_BY_VARIED: dict[str, tuple[str, ...]] = {
    **SET_BY_VARIED,
    "gpus_per_node": catalog.NODE_SCALED,
}


def set_and_varied(given: dict[str, Any], axes: list[Axis], where: str = "--set") -> None:
    """An error for each base field given explicitly (`given`: field → what was written, a --set item or
    an API scenario field's value) that a varied field replaces at every point: the same field, or
    bandwidth_mbps beside a varied direction (and the reverse), as simulate refuses both together."""
    from dtsim import catalog

    replaced = {}
    for a in axes:
        replaced[a.field] = "is varied, so this value would be replaced at every point"
        sets = SET_BY_VARIED.get(a.field, ())
        if a.field == "node" and not any(  # a preset without a precision of its own keeps the base's
            catalog.nodes()[str(v)].precision for v in a.values if str(v) in catalog.nodes()
        ):
            sets = tuple(k for k in sets if k != "precision")
        if a.field in ("bandwidth_up_mbps", "bandwidth_down_mbps"):
            sets = ("bandwidth_mbps",)
        for k in sets:
            replaced.setdefault(
                k,
                f"and the varied {a.field} would both set a link direction: give each direction once (vary "
                "bandwidth_up_mbps and set bandwidth_down_mbps, or the reverse)"
                if "bandwidth" in a.field
                else f"is set by the varied {a.field} at every point, so this value would be replaced",
            )
    problems = [
        (where if where in ("--set", "set") else f"{where}.{k}", v, f"{k} {replaced[k]}")
        for k, v in given.items()
        if k in replaced
    ]
    if problems:
        raise ScenarioError(problems)


def run_grid(
    base: Scenario,
    axes: list[Axis],
    progress: Callable[[int, int], None] | None = None,
    chunk: int = CHUNK,
    scheduler: str | None = None,
    workers: int | None = None,
) -> GridResult:
    """Simulate every point of the Cartesian product of `axes` on top of `base`, in blocks of `chunk`
    points, here or on Dask (analysis/distributed.py: the same numbers either way)."""
    n = check_axes(axes)
    started = time.perf_counter()
    out: dict[str, np.ndarray] = {}
    inputs: dict[str, np.ndarray] = {a.field: np.empty(n, dtype=a.values.dtype) for a in axes}
    blocks = [(a, min(n, a + chunk)) for a in range(0, n, chunk)]
    for (start, stop), res in map_blocks(
        grid_block, blocks, scheduler=scheduler, workers=workers, kwargs={"base": base, "axes": axes}
    ):
        for name, vals in res["inputs"].items():
            inputs[name][start:stop] = vals
        if not out:
            out = {k: np.empty(n, dtype=v.dtype) for k, v in res["outputs"].items()}
        for k, v in res["outputs"].items():
            out[k][start:stop] = v
        if progress is not None:
            progress(stop, n)
    hidden = set(inputs).union(*(IMPLIED_BY_VARIED.get(f, ()) for f in inputs))
    constants = {k: v for k, v in base.to_fields().items() if k not in hidden and not isinstance(v, dict)}
    columns: dict[str, np.ndarray] = {}
    for k, v in constants.items():
        # a list (node_groups) is one JSON text per row, so a CSV or JSON reader gets it back as data
        text = json.dumps(v, separators=(",", ":")) if isinstance(v, list) else v
        columns[k] = np.broadcast_to(np.asarray(text), (n,))
    columns.update(inputs)
    for k, v in out.items():
        columns[k if k not in columns else f"out_{k}"] = v
    columns.update(_implied_inputs(base, axes, n))
    return GridResult(axes, columns, n, time.perf_counter() - started, constants)


def _scalar(field: str, v: Any) -> Any:
    """An axis value as a scenario field takes it (an integer field's 8.0 as 8)."""
    from dtsim.schema.fields import INTEGER_FIELDS

    v = v.item() if hasattr(v, "item") else v
    return int(v) if field in INTEGER_FIELDS and isinstance(v, float) and v == int(v) else v


def _implied_inputs(base: Scenario, axes: list[Axis], n: int) -> dict[str, np.ndarray]:
    """The input fields a varied field sets at each point, so every row says what it ran: a node
    preset's or GPU's count, peak, memory and precision, both directions of bandwidth_mbps. Each
    combination of the varied hardware and link fields is resolved once as simulate resolves it
    (Scenario.replace); a field that is itself varied keeps its axis' column."""
    setting = ("node", *NODE_SET_FIELDS, "bandwidth_mbps")  # the fields that decide the implied ones
    implied = (*NODE_SET_FIELDS, *SET_BY_VARIED["bandwidth_mbps"])
    varied = {a.field for a in axes}
    if not varied & set(IMPLIED_BY_VARIED):
        return {}
    sizes = tuple(len(a) for a in axes)
    idx = np.unravel_index(np.arange(n), sizes)
    rel = [k for k, a in enumerate(axes) if a.field in setting]
    combo = np.ravel_multi_index(tuple(idx[k] for k in rel), tuple(sizes[k] for k in rel))
    keys = [k for k in implied if k not in varied]
    table: dict[str, list[Any]] = {k: [] for k in keys}
    for c in range(math.prod(sizes[k] for k in rel)):
        pos = np.unravel_index(c, tuple(sizes[k] for k in rel))
        point = {
            axes[k].field: _scalar(axes[k].field, axes[k].values[p]) for k, p in zip(rel, pos, strict=True)
        }
        s = base.replace(**point).to_fields()
        for k in keys:
            table[k].append(s.get(k))
    out = {}
    for k, vals in table.items():
        if all(v is None for v in vals):
            continue
        col = np.asarray([np.nan if v is None else v for v in vals], dtype=object)
        col = col if any(isinstance(v, str) for v in vals) else col.astype(float)
        out[k] = col[combo]
    return out


# --- uncertainty bands ---------------------------------------------------------------------------------------

MAX_DRAWS_PER_POINT = 1 << 16
# Grid points the unread-assumption screen visits (2 × 22 × 1,024 rows, ~0.2 s: a cost setting, not a
# model assumption); a larger grid is screened at this many points spread over it
SCREEN_GRID_POINTS = 1024


def band_block(
    start: int,
    stop: int,
    base: Scenario,
    axes: list[Axis],
    dists: dict[str, Any],
    draws_per_point: int,
    seed: int,
    levels: tuple[float, ...],
    outputs: tuple[str, ...],
    correlations: tuple = (),
) -> dict[str, Any]:
    """Grid points start..stop−1, each with the same `draws_per_point` draws of `dists` (common random
    numbers: the sampling error is shared by neighbouring points, so a band's shape across the grid is
    not jagged by noise, though its level still carries that error): per output the
    quantiles at `levels` over each point's draws where the output is defined, and the share of
    feasible draws; or {"problems"} when a draw is not a value its field takes."""
    import warnings

    from dtsim.analysis.uncertainty import draws, evaluate_rows, level_name

    g, n = stop - start, draws_per_point
    values = {k: np.repeat(v, n) for k, v in _batch_fields(grid_fields(axes, start, stop)).items()}
    for k, v in draws(dists, n, seed, INTEGER_FIELDS, correlations=correlations).items():
        values[k] = np.tile(v, g)
    res = evaluate_rows(base, values, [*outputs, "feasible"], dists)
    if "problems" in res:
        return res
    out: dict[str, np.ndarray] = {}
    for o in outputs:
        if o not in res["columns"]:  # an input or a constant of the table: no band
            continue
        x = np.asarray(res["columns"][o], dtype=float).reshape(g, n)
        x = np.where(np.isfinite(x), x, np.nan)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="All-NaN slice")  # no draw defined: NaN, shown as —
            q = np.nanquantile(x, levels, axis=1)
        for lev, row in zip(levels, q, strict=True):
            out[f"{o}_{level_name(lev)}"] = row
    out["feasible_share"] = np.asarray(res["columns"]["feasible"], dtype=float).reshape(g, n).mean(axis=1)
    return {"outputs": out}


@dataclass
class Bands:
    """What `sweep --uncertainty` adds: the draws per point, the seed, the levels, the inputs drawn and
    the outputs given bands (columns OUTPUT_pNN and feasible_share)."""

    draws_per_point: int
    requested: int
    seed: int
    seed_given: bool
    levels: tuple[float, ...]
    inputs: dict[str, str]
    outputs: tuple[str, ...]
    correlations: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # table assumptions held: none changes an output

    def as_dict(self) -> dict[str, Any]:
        return {
            "draws_per_point": self.draws_per_point,
            "requested": self.requested,
            "seed": self.seed,
            "seed_drawn": not self.seed_given,
            "levels": list(self.levels),
            "inputs": dict(self.inputs),
            "outputs": list(self.outputs),
            "correlations": self.correlations,
            "warnings": list(self.warnings),
            "unread": list(self.unread),
            "sampler": "scrambled Sobol (scipy.stats.qmc.Sobol), the same draws at every grid point",
        }


def add_bands(
    result: GridResult,
    base: Scenario,
    dists: Any,
    n: int,
    seed: int | None = None,
    levels: tuple[float, ...] = (0.1, 0.5, 0.9),
    outputs: tuple[str, ...] | None = None,
    progress: Callable[[int, int], None] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
) -> Bands:
    """Add to a grid's table, for each output, its quantiles over n draws (rounded up to 2^m) of the
    uncertain inputs at every grid point (columns OUTPUT_p10, …, feasible_share), in blocks of grid
    points, here or on Dask. A field both varied and drawn is an error naming it."""
    import secrets

    from dtsim.analysis.uncertainty import (
        HEADLINE,
        batch_columns,
        check_seed,
        correlation_factor,
        level_name,
        sample_count,
        unread_assumptions,
        without,
    )

    samples = sample_count(n)
    check_seed(seed)
    if samples > MAX_DRAWS_PER_POINT:
        raise ScenarioError(
            [("--uncertainty", n, f"a sweep draws at most {MAX_DRAWS_PER_POINT:,} per grid point")]
        )
    if samples * result.n > MAX_GRID * 4:
        raise ScenarioError(
            [
                (
                    "--uncertainty",
                    n,
                    f"{samples:,} draws × {result.n:,} grid points exceeds {MAX_GRID * 4:,} simulations",
                )
            ]
        )
    both = [a.field for a in result.axes if a.field in dists]
    if both:
        raise ScenarioError(
            [("--vary", both[0], "is also given as a distribution: vary it or draw it, not both")]
        )
    correlations = tuple(getattr(dists, "correlations", ()))
    correlation_factor(sorted(dists), correlations)
    # the table's assumptions that change no output at the grid's points are held (screened at up to
    # SCREEN_GRID_POINTS points spread over the grid: every point of most grids)
    picked = np.unique(np.linspace(0, result.n - 1, min(result.n, SCREEN_GRID_POINTS)).round().astype(int))
    at = _batch_fields(grid_points(result.axes, picked))
    unread = unread_assumptions(dists, batch_columns(base), at, INTEGER_FIELDS)
    dists = without(dists, unread)
    seed_given = seed is not None
    if seed is None:
        seed = secrets.randbits(63)
    outputs = tuple(outputs or HEADLINE)
    per = max(1, CHUNK // samples)
    blocks = [(a, min(result.n, a + per)) for a in range(0, result.n, per)]
    for (start, stop), res in map_blocks(
        band_block,
        blocks,
        scheduler=scheduler,
        workers=workers,
        kwargs={
            "base": base,
            "axes": result.axes,
            "dists": dict(dists),
            "draws_per_point": samples,
            "seed": seed,
            "levels": tuple(levels),
            "outputs": outputs,
            "correlations": correlations,
        },
    ):
        if "problems" in res:
            raise ScenarioError(res["problems"])
        for k, v in res["outputs"].items():
            if k not in result.columns:
                result.columns[k] = np.empty(result.n)
            result.columns[k][start:stop] = v
        if progress is not None:
            progress(stop, result.n)
    bands = Bands(
        draws_per_point=samples,
        requested=n,
        seed=seed,
        seed_given=seed_given,
        levels=tuple(levels),
        inputs={
            k: d.describe() + (f" ({d.origin})" if d.origin != "scenario" else "")
            for k, d in sorted(dists.items())
        },
        outputs=tuple(o for o in outputs if f"{o}_{level_name(levels[0])}" in result.columns),
        correlations=[{"fields": [c.a, c.b], "rho": c.rho} for c in correlations],
        warnings=[f"only {samples} draws a point: the bands' ends are rough; use --uncertainty 256 or more"]
        if samples < 128
        else [],
        unread=unread,
    )
    result.bands = bands
    return bands


# --- output ----------------------------------------------------------------------------------------------------


def check_out(path: Path) -> str:
    """The table file's kind (.csv or .parquet), or an error naming --out (a wrong kind, a missing folder)."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ScenarioError([("--out", str(path), "must end in .csv or .parquet")])
    check_folder(path, "--out")
    return suffix


def write_table(result: GridResult, path: Path) -> None:
    """CSV or Parquet by the file's extension; Parquet (and fast CSV) use pyarrow (`dtsim[table]`)."""
    suffix = check_out(path)
    try:
        import pyarrow as pa
    except ImportError:
        pa = None
    if suffix == ".parquet":
        if pa is None:
            raise ScenarioError(
                [("--out", str(path), "writing Parquet needs pyarrow: pip install 'dtsim[table]'")]
            )
        import pyarrow.parquet as pq

        pq.write_table(_arrow_table(result, pa), path)
        return
    if pa is not None:
        import pyarrow.csv as pacsv

        pacsv.write_csv(_arrow_table(result, pa), path)
        return
    _write_csv_numpy(result, path)


def _arrow_table(result: GridResult, pa):
    arrays = {}
    for k, v in result.columns.items():
        v = np.ascontiguousarray(v)
        arrays[k] = pa.array(v.astype(str) if v.dtype == object else v)
    return pa.table(arrays)


def _write_csv_numpy(result: GridResult, path: Path) -> None:
    names = list(result.columns)
    with path.open("w", encoding="utf-8") as fh:
        fh.write(",".join(names) + "\n")
        for start in range(0, result.n, CHUNK):
            stop = min(result.n, start + CHUNK)
            cols = []
            for k in names:
                v = np.asarray(result.columns[k][start:stop])
                if v.dtype.kind == "f":
                    cols.append(np.char.mod("%.12g", v))
                else:
                    cols.append(v.astype(str))
            fh.writelines(",".join(row) + "\n" for row in zip(*cols, strict=True))


def metric_names(result: GridResult) -> list[str]:
    return [
        k
        for k, v in result.columns.items()
        if np.asarray(v).dtype.kind in "fiub" and k not in result.constants
    ]
