"""The decentralized page's "Show uncertainty" switch: the P10–P90 range of the headline days beside them.

The range is `dtsim simulate --uncertainty SAMPLES --seed SEED`'s: the same `load_uncertain_scenario`
(the assumptions table's distributions for every assumption the scenario does not set, the scenario's
own distributions) and `run_monte_carlo` (scrambled Sobol draws through the batch path,
analysis/uncertainty.py), with a small fixed sample count and seed so that it answers in well under a
second and the same inputs always show the same range. It runs off the event loop
through viewkit.Latest (newest inputs win: a burst of changes costs one run after the current one).

Only the headline: the sweep chart has no band (41 points × the draws would be one Monte Carlo run per
point, about 41 × the headline's time on every input change).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dtsim.errors import ScenarioError, format_problem
from dtsim.interfaces.formats import days_text
from dtsim.interfaces.operations import json_ready
from dtsim.interfaces.web.viewkit import Latest

# Not model constants: how many draws the page makes (a power of two: Sobol points balance at 2^m) and
# their seed, so that a range can be reproduced with the CLI.
SAMPLES = 64
SEED = 1
HEADLINE = ("wall_clock_days", "effective_days")


def headline_bands(fields: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The `uncertainty` part of `dtsim simulate --uncertainty SAMPLES --seed SEED --json` for the
    headline outputs of a scenario given as fields."""
    from dtsim.analysis.uncertainty import load_uncertain_scenario, run_monte_carlo

    scenario, dists = load_uncertain_scenario(fields=fields)
    mc = run_monte_carlo(scenario, dists, SAMPLES, SEED)
    parts = mc.json_parts()["uncertainty"]
    return {k: parts[k] for k in HEADLINE}


def band_text(summary: dict[str, Any]) -> str:
    p10, p90 = summary.get("p10"), summary.get("p90")
    if p10 is None or p90 is None or p10 != p10 or p90 != p90:
        return "P10–P90: no finite range"
    return f"P10–P90: {days_text(p10)} – {days_text(p90)}"


class UncertaintyBand:
    """The switch, one range label per headline output (`label_parent[key]` is where it goes), and a
    hidden `uncertainty-json` element with what the labels show."""

    def __init__(self, ui: Any, fields_of: Callable[[], dict[str, Any] | None], on: bool = False) -> None:
        self.ui = ui
        self.fields_of = fields_of
        self.labels: dict[str, Any] = {}
        self.switch = (
            ui.switch("Show uncertainty", value=on, on_change=lambda _e: self.update())
            .props("dense data-testid=uncertainty-switch")
            .tooltip(
                f"P10–P90 of the headline days over {SAMPLES} draws (seed {SEED}) of the assumptions "
                "table's distributions: dtsim simulate --uncertainty "
                f"{SAMPLES} --seed {SEED}."
            )
        )
        self.status = ui.label().classes("text-caption text-grey-8").props("data-testid=uncertainty-status")
        self.json = ui.label().props("data-testid=uncertainty-json").style("display: none")
        self.latest = Latest(draw, lambda: (self.wanted(),), self._show, self._fail)

    def add_label(self, key: str) -> None:
        """The range label of one headline output, placed where the caller's layout is."""
        self.labels[key] = self.ui.label().classes("text-caption").props(f"data-testid=band-{key}")

    @property
    def on(self) -> bool:
        return bool(self.switch.value)

    def _clear(self, status: str = "") -> None:
        for lab in self.labels.values():
            lab.text = ""
        self.json.text = ""
        self.status.text = status

    def wanted(self) -> dict[str, Any] | None:
        """The fields to draw for now: None while the switch is off or the inputs make no scenario."""
        return self.fields_of() if self.on else None

    def update(self) -> None:
        """Recompute the range for the current inputs (cleared when the switch is off). The draws run
        off the event loop through viewkit.Latest, as the other views' work does: a change while they
        run is noted and drawn once they end, so a burst of keystrokes costs one run after the
        current one (each change started its own run), and only the newest inputs' range is shown."""
        if self.wanted() is None:  # off, or the inputs' error is shown already
            self._clear()
            self.latest.drop_running()  # the run in flight is for inputs no longer wanted
            return
        from nicegui import background_tasks

        self.status.text = "drawing…"
        background_tasks.create(self.latest(), name="uncertainty")

    def _show(self, drawn: tuple[dict[str, Any], ...]) -> None:
        if not drawn:  # switched off (or the scenario failed) since the change that asked for it
            self._clear()
            return
        bands = drawn[0]
        for key, lab in self.labels.items():
            lab.text = band_text(bands[key])
            lab.props(f"data-p10={bands[key].get('p10')} data-p90={bands[key].get('p90')}")
        self.status.text = f"{SAMPLES} draws, seed {SEED}"
        self.json.text = json.dumps(json_ready(bands), sort_keys=True, allow_nan=False)

    def _fail(self, exc: ScenarioError | str) -> None:
        text = exc if isinstance(exc, str) else "; ".join(format_problem(f, v, m) for f, v, m in exc.problems)
        self._clear("Uncertainty: " + text)


def draw(fields: dict[str, Any] | None) -> tuple[dict[str, Any], ...]:
    """The headline bands of `fields` as a one-item tuple, or () for no fields (never None: Latest
    takes None for a server that is stopping)."""
    return () if fields is None else (headline_bands(fields),)
