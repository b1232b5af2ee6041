"""The input widgets: one NiceGUI control (or a control and its unit/mode selector) per `Input`.

`ui` is NiceGUI's module, passed in by the page so that importing this module stays cheap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dtsim.interfaces.web.fields import GROWTH_UNITS, INPUTS, Input, join_growth, split_growth, to_number


@dataclass
class InputWidgets:
    """The page's input controls by field name: the main control, the unit selector of growth fields
    and the fixed/auto selector of step fields."""

    main: dict[str, Any] = field(default_factory=dict)
    unit: dict[str, Any] = field(default_factory=dict)
    mode: dict[str, Any] = field(default_factory=dict)

    def show(self, values: dict[str, Any]) -> None:
        """Put `values` into the controls (the caller silences their change handlers)."""
        for name, widget in self.main.items():
            kind = INPUTS[name].kind
            value = values.get(name)
            if kind == "steps":
                is_auto = isinstance(value, str)
                self.mode[name].value = value if is_auto else "fixed"
                widget.value = None if is_auto else value
                widget.enabled = not is_auto
            elif kind == "growth":
                number, unit = split_growth(value)
                widget.value = number
                self.unit[name].value = unit
            else:
                widget.value = value


def _number(ui, spec: Input, value: Any, set_value: Callable[[Any], None]) -> Any:
    w = ui.number(
        spec.label,
        value=value,
        step=spec.step,
        on_change=lambda e: set_value(to_number(e.value, spec.kind)),
    )
    w.props(
        f"dense data-testid={spec.name}{limits_props(spec)}"
        + (" clearable" if spec.kind == "optional" else "")
    ).classes("w-full")
    return w


def limits_props(spec: Input) -> str:
    """The schema's bounds as the input's HTML min/max (its spinner stops there), not as NiceGUI's
    min/max, which clamp a typed value when the field loses focus: a value out of range stays as typed
    and the model's error names it (no silent clamp)."""
    return "".join(f" {k}={v}" for k, v in (("min", spec.min), ("max", spec.max)) if v is not None)


def _select(ui, spec: Input, value: Any, set_value: Callable[[Any], None]) -> Any:
    w = ui.select(list(spec.options), label=spec.label, value=value, on_change=lambda e: set_value(e.value))
    w.props(f"dense data-testid={spec.name}").classes("w-full")
    return w


def _switch(ui, spec: Input, value: Any, set_value: Callable[[Any], None]) -> Any:
    w = ui.switch(spec.label, value=bool(value), on_change=lambda e: set_value(bool(e.value)))
    w.props(f"dense data-testid={spec.name}")
    return w


def _steps(ui, spec: Input, value: Any, set_value: Callable[[Any], None], widgets: InputWidgets) -> Any:
    """A step count or one of the schema's automatic choices ('auto', 'auto-quality')."""
    with ui.row().classes("w-full no-wrap gap-2"):
        w = (
            ui.number(spec.label, value=None if isinstance(value, str) else value, step=spec.step)
            .classes("flex-1")
            .props(f"dense data-testid={spec.name}{limits_props(spec)}")
        )
        mode = (
            ui.select(list(spec.options), value=value if isinstance(value, str) else "fixed")
            .props(f"dense data-testid={spec.name}-mode")
            .style("min-width: 120px")
        )

    def on_steps(_e: Any = None) -> None:
        w.enabled = mode.value == "fixed"
        if mode.value == "fixed":
            if w.value is None:
                return
            set_value(to_number(w.value, "int"))
        else:
            set_value(mode.value)

    w.on_value_change(on_steps)
    mode.on_value_change(on_steps)
    widgets.mode[spec.name] = mode
    return w


def _growth(ui, spec: Input, value: Any, set_value: Callable[[Any], None], widgets: InputWidgets) -> Any:
    """A growth rate as a number and a unit (x/yr, %/yr, OOM/yr)."""
    number, unit = split_growth(value)
    with ui.row().classes("w-full no-wrap gap-2"):
        w = ui.number(spec.label, value=number).classes("flex-1").props(f"dense data-testid={spec.name}")
        u = (
            ui.select(list(GROWTH_UNITS), value=unit)
            .props(f"dense data-testid={spec.name}-unit")
            .style("min-width: 90px")
        )

    def on_growth(_e: Any = None) -> None:
        if w.value is None:
            return
        set_value(join_growth(w.value, u.value))

    w.on_value_change(on_growth)
    u.on_value_change(on_growth)
    widgets.unit[spec.name] = u
    return w


def make_widget(
    ui, spec: Input, value: Any, widgets: InputWidgets, on_change: Callable[[str, Any], None]
) -> None:
    """Build the control of one input showing `value`; a change calls `on_change(name, new value)`."""

    def set_value(v: Any) -> None:
        on_change(spec.name, v)

    if spec.kind in ("number", "int", "optional"):
        w = _number(ui, spec, value, set_value)
    elif spec.kind == "select":
        w = _select(ui, spec, value, set_value)
    elif spec.kind == "switch":
        w = _switch(ui, spec, value, set_value)
    elif spec.kind == "steps":
        w = _steps(ui, spec, value, set_value, widgets)
    elif spec.kind == "growth":
        w = _growth(ui, spec, value, set_value, widgets)
    else:  # pragma: no cover - fields.make_input only makes the kinds above
        raise ValueError(spec.kind)
    w.tooltip(spec.tip)
    widgets.main[spec.name] = w
