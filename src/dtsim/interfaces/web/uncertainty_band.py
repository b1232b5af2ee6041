"""The decentralized page's "Show uncertainty" switch: the P10–P90 range of the headline days beside them.

The range is `dtsim simulate --uncertainty SAMPLES --seed SEED`'s: the same `load_uncertain_scenario`
(the assumptions table's distributions for every assumption the scenario does not set, the scenario's
own distributions) and `run_monte_carlo` (scrambled Sobol draws through the batch path,
analysis/uncertainty.py), with a small fixed sample count and seed so that it answers in well under a
second and the same inputs always show the same range. It runs off the event loop
(`nicegui.run.io_bound`); an answer for inputs that have changed since is dropped.

Only the headline: the sweep chart has no band (41 points × the draws would be one Monte Carlo run per
point, about 41 × the headline's time on every input change).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from dtsim.errors import ScenarioError, format_problem

log = logging.getLogger("dtsim.web")
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
    return f"P10–P90: {p10:,.1f} – {p90:,.1f} days"


class UncertaintyBand:
    """The switch, one range label per headline output (`label_parent[key]` is where it goes), and a
    hidden `uncertainty-json` element with what the labels show."""

    def __init__(self, ui: Any, fields_of: Callable[[], dict[str, Any] | None], on: bool = False) -> None:
        self.ui = ui
        self.fields_of = fields_of
        self.version = 0
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

    def update(self) -> None:
        """Recompute the range for the current inputs (nothing when the switch is off)."""
        self.version += 1
        if not self.on:
            self._clear()
            return
        fields = self.fields_of()
        if fields is None:  # the inputs do not make a scenario: their error is shown already
            self._clear()
            return
        from nicegui import background_tasks

        self.status.text = "drawing…"
        background_tasks.create(self._run(self.version, fields), name="uncertainty")

    async def _run(self, version: int, fields: dict[str, Any]) -> None:
        from nicegui import run

        try:
            bands = await run.io_bound(headline_bands, fields)
        except ScenarioError as exc:
            if version == self.version:
                self._clear("Uncertainty: " + "; ".join(format_problem(f, v, m) for f, v, m in exc.problems))
            return
        except Exception:
            log.exception("uncertainty draws failed")
            if version == self.version:
                self._clear("Uncertainty: internal error; the details are in the server's log")
            return
        if version != self.version:  # the inputs changed while drawing
            return
        for key, lab in self.labels.items():
            lab.text = band_text(bands[key])
            lab.props(f"data-p10={bands[key].get('p10')} data-p90={bands[key].get('p90')}")
        self.status.text = f"{SAMPLES} draws, seed {SEED}"
        self.json.text = json.dumps(_finite(bands), sort_keys=True, allow_nan=False)


def _finite(x: Any) -> Any:
    """NaN and infinities as null (strict JSON), through nested mappings."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return None
    return x
