"""The one way dtsim opens matplotlib: check the output file's kind, then load pyplot headless."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dtsim.analysis.grid import Axis, GridResult, metric_names
from dtsim.errors import ScenarioError, check_folder

FORMATS = (".png", ".svg", ".pdf")


def pyplot(path: Path, option: str = "--plot"):
    """matplotlib.pyplot on the Agg backend, for writing `path`; a clear error for another file kind or
    when matplotlib (the `plot` extra) is missing."""
    if Path(path).suffix.lower() not in FORMATS:
        raise ScenarioError([(option, str(path), "must end in .png, .svg or .pdf")])
    check_folder(path, option)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ScenarioError(
            [(option, str(path), "needs matplotlib: python3 -m pip install 'dtsim[plot]'")]
        ) from None
    return plt


# Units of dtsim's unit-suffixed names (DESIGN: units in every public name at the edges)
UNITS = (
    ("_mbps", "Mbit/s"),
    ("_gbps", "Gbit/s"),
    ("_ms", "ms"),
    ("_days", "days"),
    ("_s", "s"),
    ("_gb", "GB"),
    ("_usd", "USD"),
    ("_kwh", "kWh"),
    ("_flop", "FLOP"),
    ("_b", "billions"),
    ("_t", "trillions"),
    ("_w", "W"),
)
WORDS = {
    "num": "number of",
    "mfu": "MFU",
    "hfu": "HFU",
    "pflops": "PFLOPS",
    "vram": "VRAM",
    "ep": "EP",
    "pp": "PP",
    "gpu": "GPU",
}


def axis_label(name: str) -> str:
    """A field or output name as an axis label with its unit: 'bandwidth_up_mbps' → 'bandwidth up
    (Mbit/s)', 'wall_clock_days' → 'wall clock (days)', 'global_mfu_p50' → 'global MFU, P50'."""
    level = ""
    head, _, tail = name.rpartition("_")
    if head and tail[:1] == "p" and tail[1:].replace(".", "", 1).isdigit():
        name, level = head, f", {tail.upper()}"
    suffix, unit = next(((s, u) for s, u in UNITS if name.endswith(s) and len(name) > len(s)), ("", None))
    name = name.removesuffix(suffix)
    words = " ".join(WORDS.get(w, w) for w in name.split("_"))
    return f"{words}{level}" + (f" ({unit})" if unit else "")


def plot_grid(result: GridResult, metric: str, path: Path) -> dict[str, str]:
    """One varied field: the metric against it (log axis for log ranges). Two: a heat map."""
    if metric not in result.columns or np.asarray(result.columns[metric]).dtype.kind not in "fiub":
        known = ", ".join(m for m in metric_names(result) if m not in {a.field for a in result.axes})
        raise ScenarioError([("--metric", metric, f"is not a numeric output; choose one of {known}")])
    if len(result.axes) > 2:
        raise ScenarioError(
            [("--plot", str(path), "plots one or two varied fields; use --out for larger grids")]
        )
    plt = pyplot(path)
    z = np.asarray(result.columns[metric], dtype=float)
    bands = result.bands
    from dtsim.analysis.uncertainty import level_name

    names = [f"{metric}_{level_name(q)}" for q in bands.levels] if bands else []
    names = [k for k in names if k in result.columns]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if len(result.axes) == 1:
        a = result.axes[0]
        x = a.values if a.numeric else np.arange(len(a))
        ax.plot(x, z, marker="o" if len(a) <= 40 else None, label="point")
        if len(names) >= 2:  # the band between the outermost levels, the middle level dashed
            lo, hi = (np.asarray(result.columns[names[i]], dtype=float) for i in (0, -1))
            ends = f"P{100 * bands.levels[0]:g}–P{100 * bands.levels[-1]:g}"
            ax.fill_between(x, lo, hi, alpha=0.25, label=f"{ends} ({bands.draws_per_point:,} draws)")
            if len(names) >= 3:
                mid = names[len(names) // 2]
                ax.plot(x, result.columns[mid], linestyle="--", label=mid.rsplit("_", 1)[1].upper())
            ax.legend()
        if not a.numeric:
            ax.set_xticks(x, [str(v) for v in a.values], rotation=30, ha="right")
        if a.log:
            ax.set_xscale("log")
        if np.nanmin(z) > 0 and np.nanmax(z) / max(np.nanmin(z), 1e-300) > 1e3:
            ax.set_yscale("log")
        ax.set_xlabel(axis_label(a.field))
        ax.set_ylabel(axis_label(metric))
    else:
        a, b = result.axes
        middle = next((k for k in names if k.endswith("_p50")), None)
        label = axis_label(metric)
        if middle is not None:  # with bands a heat map shows the median over the draws
            z = np.asarray(result.columns[middle], dtype=float)
            label = f"P50 of {label} ({bands.draws_per_point:,} draws a point)"
        grid = z.reshape(len(a), len(b))
        positive = np.isfinite(grid) & (grid > 0)
        use_log = positive.any() and np.nanmax(grid[positive]) / np.nanmin(grid[positive]) > 1e3
        shown = np.log10(np.where(positive, grid, np.nan)) if use_log else grid
        im = ax.imshow(shown, origin="lower", aspect="auto", interpolation="nearest")
        ax.set_yticks(*_ticks(a))
        ax.set_xticks(*_ticks(b), rotation=30, ha="right")  # slanted: long labels never overlap
        ax.set_ylabel(axis_label(a.field))
        ax.set_xlabel(axis_label(b.field))
        fig.colorbar(im, ax=ax, label=f"log10 of {label}" if use_log else label)
        metric = label
    ax.set_title(f"{axis_label(metric) if len(result.axes) == 1 else metric} ({result.n:,} points)")
    fig.tight_layout()
    labels = {"x": ax.get_xlabel(), "y": ax.get_ylabel(), "title": ax.get_title()}
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return labels


def _ticks(a: Axis) -> tuple[np.ndarray, list[str]]:
    """At most 8 ticks, values in 3 significant figures."""
    k = max(1, -(-len(a) // 8))
    pos = np.arange(0, len(a), k)
    labels = [_short(a.values[i]) if a.numeric else str(a.values[i]) for i in pos]
    return pos, labels


def _short(v: float) -> str:
    """A tick value in at most 3 significant figures, in plain digits up to 99,900 (5340, not 5.34e+03)."""
    v = float(f"{float(v):.3g}")
    return f"{v:,.0f}" if 1 <= abs(v) < 1e5 and v == round(v) else f"{v:.3g}"


def plot_sensitivity(res, path: Path) -> None:
    """Two panels: the tornado (each input's P10–P90 swing of the output around the point) and the
    Sobol indices (S1 and ST with their 95 % intervals), inputs ranked by ST, largest on top."""
    plt = pyplot(path)
    rows = res.indices[::-1]  # barh draws bottom-up
    names = [r["input"].removeprefix("assumptions.") for r in rows]
    y = np.arange(len(rows))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.45 * len(rows) + 1.8), sharey=True)
    for i, r in enumerate(rows):
        lo, hi = sorted((r["low"], r["high"]))
        left.barh(i, hi - lo, left=lo, color="#4c72b0" if r["high"] >= r["low"] else "#dd8452")
    left.axvline(res.point, color="black", linewidth=1)
    left.set_yticks(y, names)
    left.set_xlabel(f"{res.output} (input at P10 → P90, others at median)")
    left.set_title("Tornado")
    h = 0.38
    right.barh(y + h / 2, [r["ST"] for r in rows], h, xerr=[r["ST_conf"] for r in rows], label="ST (total)")
    right.barh(
        y - h / 2, [r["S1"] for r in rows], h, xerr=[r["S1_conf"] for r in rows], label="S1 (first order)"
    )
    right.set_xlim(0, 1.05)
    right.set_xlabel("share of the variance")
    right.set_title("Sobol indices")
    right.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
