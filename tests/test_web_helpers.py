"""The UI's pure helpers: share links, widget values, CSV export, uploaded files (no browser needed)."""

from __future__ import annotations

import csv
import io
import string
from urllib.parse import parse_qsl

import pytest

import dtsim
from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces.web.fields import (
    GROUPS,
    INPUTS,
    default_values,
    join_growth,
    parse_query,
    scenario_to_values,
    share_query,
    split_growth,
    unit,
    values_to_fields,
)
from dtsim.interfaces.web.page import scenario_from_data
from dtsim.interfaces.web.results import result_csv
from dtsim.interfaces.web.viewkit import problems_text, read_upload
from dtsim.interfaces.web.widgets import InputWidgets, make_widget
from dtsim.schema.fields import BOUNDS
from dtsim.schema.scenario import Scenario, load_scenario, scenario_json_schema


def test_default_widgets_are_the_default_scenario():
    assert load_scenario(layers=[values_to_fields(default_values())]) == dtsim.Scenario()
    assert share_query(default_values()) == ""


@pytest.mark.parametrize("preset", list(catalog.scenario_presets()))
def test_share_link_round_trips_every_preset(preset):
    scenario = load_scenario(preset=preset)
    values = scenario_to_values(scenario)
    query = share_query(values)
    restored = load_scenario(layers=[parse_query(dict(parse_qsl(query)))])
    assert dtsim.simulate(restored).model_dump(exclude={"scenario"}) == dtsim.simulate(scenario).model_dump(
        exclude={"scenario"}
    )


def test_share_link_holds_only_changed_fields():
    values = default_values() | {"num_nodes": 500, "streaming": False, "inner_steps": "auto"}
    assert dict(parse_qsl(share_query(values))) == {
        "num_nodes": "500",
        "streaming": "false",
        "inner_steps": "auto",
    }


def test_every_scenario_field_a_user_sets_has_a_widget():
    # node groups are edited in the Node groups card (web/groups_card.py); their measured RTTs in a
    # scenario file, uploaded
    settable = set(dtsim.Scenario.model_fields) - {
        "node",
        "bandwidth_mbps",
        "assumptions",
        "name",
        "node_groups",
        "region_rtt_ms",
    }
    assert settable <= set(INPUTS)
    assert all(INPUTS[name].tip for name in INPUTS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1.37x/yr", (1.37, "x/yr")), ("37%/yr", (37.0, "%/yr")), ("0.137 OOM/yr", (0.137, "OOM/yr"))],
)
def test_growth_split(text, expected):
    assert split_growth(text) == expected
    number, unit_name = expected
    assert split_growth(join_growth(number, unit_name)) == expected


def test_result_csv():
    r = dtsim.simulate(num_nodes=8)
    rows = dict(csv.reader(io.StringIO(result_csv(r))))
    assert float(rows["wall_clock_days"]) == r.wall_clock_days
    assert rows["mode"] == "flat-diloco"
    assert any(k.startswith("warning.") for k in rows)


# --- the inputs agree with the schema ------------------------------------------------------------------

NUMERIC = ("number", "int", "optional", "steps")


def _field_limits(name: str) -> tuple[float | None, float | None]:
    """The limits the pydantic field validates (its Ge/Gt/Le metadata), else the published JSON Schema's
    numeric branch (the step fields and mfu, whose limits the schema checks beside the 'auto' words)."""
    lo = hi = None
    for m in Scenario.model_fields[name].metadata:
        lo = getattr(m, "ge", getattr(m, "gt", lo))
        hi = getattr(m, "le", hi)
    if lo is None and hi is None:
        prop = scenario_json_schema()["properties"][name]
        (branch,) = [b for b in prop.get("anyOf", [prop]) if b.get("type") in ("integer", "number")]
        lo, hi = branch["minimum"], branch["maximum"]
    return lo, hi


def test_every_numeric_input_has_the_schema_limits():
    numeric = [
        spec for spec in INPUTS.values() if spec.kind in NUMERIC and spec.name in Scenario.model_fields
    ]
    assert len(numeric) >= 20
    for spec in numeric:
        bounds = BOUNDS[spec.name]
        assert (spec.min, spec.max) == (bounds.get("ge", bounds.get("gt")), bounds["le"]), spec.name
        assert (spec.min, spec.max) == _field_limits(spec.name), spec.name
        # a step-count field is an integer or its 'auto' words; mfu (also with 'auto') is a fraction
        schema_type = {"int": "integer", "steps": "integer" if spec.step == 1 else "number"}.get(spec.kind)
        if schema_type:
            prop = scenario_json_schema()["properties"][spec.name]
            assert schema_type in {b.get("type") for b in prop.get("anyOf", [prop])}, spec.name


def test_every_choice_input_offers_what_the_schema_accepts():
    props = scenario_json_schema()["properties"]
    selects = [spec for spec in INPUTS.values() if spec.kind == "select"]
    assert {s.name for s in selects} >= {"precision", "straggler_strategy", "replica_penalty", "gpu"}
    for spec in selects:
        enums = [b["enum"] for b in props[spec.name].get("anyOf", []) if "enum" in b]
        expected = enums[0] if enums else list(catalog.gpus())
        assert list(spec.options) == expected, spec.name
    for spec in (s for s in INPUTS.values() if s.kind == "steps"):
        assert spec.options[0] == "fixed"
        for word in spec.options[1:]:
            assert getattr(load_scenario(layers=[{spec.name: word}]), spec.name) == word
        with pytest.raises(dtsim.ScenarioError):
            load_scenario(layers=[{spec.name: "fixed"}])
    for spec in (s for s in INPUTS.values() if s.kind == "switch"):
        assert isinstance(getattr(Scenario(), spec.name), bool), spec.name


def test_labels_carry_the_unit_of_the_field_name():
    assert INPUTS["bandwidth_up_mbps"].label == "Upload (Mbit/s)"
    assert INPUTS["max_run_days"].label == "Maximum run (days; blank: computed)"
    for spec in INPUTS.values():
        if unit(spec.name):
            assert f"({unit(spec.name)}" in spec.label, spec.name
    assert [title for title, _ in GROUPS][:3] == ["Model and data", "Infrastructure", "Network"]


class _FakeControl:
    """Stands in for a NiceGUI element: records its constructor arguments, chains like one."""

    def __init__(self, kind: str, *args, **kwargs):
        self.kind, self.args, self.kwargs = kind, args, kwargs
        self.value = kwargs.get("value")
        self.enabled = True
        self.handlers = []

    def props(self, *a):
        self.prop_text = " ".join([getattr(self, "prop_text", ""), *map(str, a)])
        return self

    def classes(self, *_a):
        return self

    style = tooltip = classes

    def on_value_change(self, handler):
        self.handlers.append(handler)

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        return False


class _FakeUI:
    def __init__(self):
        self.made: list[_FakeControl] = []

    def __getattr__(self, kind):
        def make(*args, **kwargs):
            control = _FakeControl(kind, *args, **kwargs)
            self.made.append(control)
            return control

        return make


def test_widgets_get_the_schema_limits_and_choices():
    ui, widgets, changes = _FakeUI(), InputWidgets(), []
    values = default_values()
    for spec in INPUTS.values():
        make_widget(ui, spec, values.get(spec.name), widgets, lambda name, v: changes.append((name, v)))
    for name, w in widgets.main.items():
        spec = INPUTS[name]
        if spec.kind in NUMERIC:
            # the bounds are the input's HTML min/max, never NiceGUI's, which clamp on blur (silently)
            assert "min" not in w.kwargs and "max" not in w.kwargs, name
            for key, bound in (("min", spec.min), ("max", spec.max)):
                assert bound is None or f" {key}={bound}" in w.prop_text, (name, w.prop_text)
        if spec.kind == "select":
            assert w.args[0] == list(spec.options), name
    for name, mode in widgets.mode.items():
        assert mode.args[0] == list(INPUTS[name].options)
    # A change flows back as a field value of the right type.
    num = widgets.main["num_nodes"]
    num.kwargs["on_change"](type("E", (), {"value": 500.0})())
    assert changes[-1] == ("num_nodes", 500) and isinstance(changes[-1][1], int)


def test_tooltips_quote_the_assumptions_table():
    from dtsim.interfaces.web.fields import HINTS, tip_text, tip_values

    quoted = {
        name
        for _, hints in HINTS
        for h in hints
        for text in (h.tip, h.blank or "")
        for _, name, _, _ in string.Formatter().parse(text)
        if name
    }
    assert {"hidden_size_coefficient", "straggler_coefficient", "bytes_per_param_fp16"} <= quoted
    assert quoted <= set(tip_values())
    assert "0.03·√P" in INPUTS["hidden_size"].label
    values = tip_values() | {"straggler_coefficient": 0.07, "replica_beta_exponent": -0.25}
    assert tip_text("1 + {straggler_coefficient}·log2 n, P^{replica_beta_exponent}", values) == (
        "1 + 0.07·log2 n, P^−0.25"
    )


# --- uploaded scenario files (issue 15: a 426-byte upload took 23 s; a bad one failed silently) -----------


def scenario_from_upload(name: str, raw: bytes):
    """What the page does with an uploaded scenario file: its share card reads it (ShareCard.import_file:
    read_upload with the card's kind and holds, as page.py makes it) and import_scenario loads the
    mapping (scenario_from_data)."""
    return scenario_from_data(read_upload(name, raw, "scenario", "scenario fields"))


def test_upload_alias_bomb_is_refused_within_1_s_and_100_mb():
    from tests.abuse import alias_bomb, timed_and_traced

    for name, text in (("bomb.yaml", "num_nodes: " + alias_bomb()), ("bomb.yaml", alias_bomb(7, 6))):
        raw = text.encode()
        assert len(raw) < 1024

        def refuse(raw=raw, name=name):
            with pytest.raises(ScenarioError) as info:
                scenario_from_upload(name, raw)
            return info.value

        exc, seconds, peak = timed_and_traced(refuse)
        assert seconds < 1.0 and peak < 100e6, (seconds, peak)
        assert "200,000 values" in str(exc) or "must hold a mapping" in str(exc), exc


@pytest.mark.parametrize(
    ("name", "raw", "field", "words"),
    [
        ("s.yaml", "num_nodes: 5\n".encode("utf-16"), "file", "UTF-16"),
        ("s.yaml", b"num_nodes: \xff\n", "file", "not UTF-8"),
        ("s.yaml", b"\x00\x01", "file", "NUL"),
        ("s.yaml", b"- 1\n", "file", "must hold a mapping"),
        ("s.yaml", b"{1: 2}", "file", "keys must be text"),
        ("s.yaml", b"when: 2024-01-01", "file.when", "date values are not accepted"),
        ("s.yaml", b"num_nodes: [", "file", "malformed YAML"),
        ("s.json", b"num_nodes: 5", "file", "malformed JSON"),
        ("s.json", b'{"name": "\\ud800"}', "file.name", "lone surrogate"),
        ("s.json", b'{"num_nodes": NaN}', "file", "NaN is not a JSON number"),
        ("s.txt", b"num_nodes: 5", "file", "must be a .yaml, .yml or .json"),
        ("s.yaml", b"#" * 500_001, "file", "at most 500,000"),
        ("s.yaml", b"num_nodes: -5", "num_nodes", "must be an integer"),
        ("s.yaml", b"preset: nope", "preset", "nope"),
        # node groups load into the Node groups card; a bad one names its place
        (
            "s.yaml",
            b"node_groups: [{count: 0, region: uk}]",
            "node_groups[0].count",
            "must be an integer ≥ 1",
        ),
    ],
)
def test_upload_errors_name_the_place(name, raw, field, words):
    with pytest.raises(ScenarioError) as info:
        scenario_from_upload(name, raw)
    assert any(f == field and words in f"{v} {m}" for f, v, m in info.value.problems), info.value.problems


def test_upload_says_every_problem_of_the_file():
    """The scenario reader stops at its first stage (an unknown key before the values, one range
    before another): the page said one problem of a file holding several."""
    for raw, fields in (
        (b"mfu: 5\nbandwidth_mbps: -1\n", {"mfu", "bandwidth_mbps"}),
        (b"nope: 1\nmfu: 5\n", {"nope", "mfu"}),
        (b"preset: zz\nlatency_ms: -4\nnode_groups: [{count: 0, region: uk}]\n", {"preset", "latency_ms"}),
    ):
        with pytest.raises(ScenarioError) as info:
            scenario_from_upload("two.yaml", raw)
        named = {f for f, _v, _m in info.value.problems}
        assert fields <= named, info.value.problems
    # a file's problems only: what leaving a bad key out causes is not said
    with pytest.raises(ScenarioError) as info:
        scenario_from_upload("one.yaml", b"num_nodes: 0\n")
    assert [p[0] for p in info.value.problems] == ["num_nodes"]


def test_upload_reads_yaml_json_and_a_preset():
    assert scenario_from_upload("a.YML", b"\xef\xbb\xbfnum_nodes: 7\n").num_nodes == 7
    assert scenario_from_upload("a.json", b'{"num_nodes": 9}').num_nodes == 9
    s = scenario_from_upload("a.yaml", b"preset: intellect-1\nnum_nodes: 3\n")
    assert s.num_nodes == 3 and s.parameters_b == load_scenario(preset="intellect-1").parameters_b


def test_problems_text_quotes_at_most_80_characters():
    exc = ScenarioError([("name", "x" * 10_000, "too long"), ("num_nodes", list(range(10_000)), "bad")])
    lines = problems_text(exc, "\n").splitlines()
    assert len(lines) == 2 and all(len(line) < 120 for line in lines), lines


@pytest.mark.parametrize("preset", list(catalog.scenario_presets()))
def test_preset_menu_names_a_preset_the_inputs_equal(preset):
    """The preset menu shows a preset whose inputs equal the page's (a preset identical to an earlier one
    shows the earlier name); a changed input shows none."""
    from dtsim.interfaces.web.page import matching_preset

    values = scenario_to_values(load_scenario(preset=preset))
    shown = matching_preset(values)
    assert shown is not None and scenario_to_values(load_scenario(preset=shown)) == values
    changed = dict(values, num_nodes=values["num_nodes"] + 1)
    assert matching_preset(changed) is None


def test_node_menu_names_the_node_whose_hardware_the_inputs_hold():
    from dtsim.interfaces.web.page import matching_node

    for key, node in catalog.nodes().items():
        values = dict(
            default_values(),
            gpu=node.gpu,
            gpus_per_node=node.gpu_count,
            pflops_per_node=node.pflops,
            vram_per_node_gb=node.vram_gb,
        )
        shown = matching_node(values)
        other = catalog.nodes()[shown]
        assert (other.gpu, other.gpu_count, other.pflops, other.vram_gb) == (
            node.gpu,
            node.gpu_count,
            node.pflops,
            node.vram_gb,
        ), key
    assert matching_node(dict(default_values(), vram_per_node_gb=1.5)) is None


def test_chart_legends_are_not_paged():
    from dtsim.interfaces.web.charts import breakdown_chart, sweep_chart

    assert breakdown_chart(dtsim.simulate())["legend"].get("type", "plain") == "plain"
    assert (
        sweep_chart("num_nodes", [1, 2], [1.0, 2.0], [0.4, 0.4], 1)["legend"].get("type", "plain") == "plain"
    )


def test_every_chart_keeps_its_axis_names_inside():
    """ECharts 6 keeps axis names and labels inside `grid.outerBounds` when given one: without it the
    titles above a y axis ("days", "utilization", "PP") were cut at the chart's top edge (the browser
    tests check the drawn charts). Every chart's options come through charts.framed."""
    from dtsim.interfaces.web.charts import breakdown_chart, framed, sweep_chart
    from dtsim.interfaces.web.views import limits, network, validation

    plain = framed({"grid": {"left": 60}, "legend": {"bottom": 0}})
    assert plain["grid"] == {
        "left": 60,
        "outerBounds": {"left": 4, "right": 10, "top": 4, "bottom": 4},
        "outerBoundsContain": "all",
    }
    # a legend or title at the top keeps its row: the axis names stay below it
    assert framed({"legend": {"top": 0}})["grid"]["outerBounds"]["top"] == 30
    assert framed({"title": {"text": "x"}})["grid"]["outerBounds"]["top"] == 30

    values = {f.name: f.default for f in network.fields()}
    charts = [
        breakdown_chart(dtsim.simulate()),
        sweep_chart("num_nodes", [1, 2], [1.0, 2.0], [0.4, 0.4], 1),
        limits.chart(None),
        validation.scatter_chart(None),
        validation.residual_chart(None),
        network.busbw_chart(network.busbw_curve(values), 100.0, "allreduce"),
    ]
    for options in charts:
        assert options["grid"]["outerBoundsContain"] == "all"
        assert set(options["grid"]["outerBounds"]) == {"left", "right", "top", "bottom"}


def test_the_datacenter_views_shared_keys_become_scenario_fields():
    """The navigation carries model / nodes / tokens from the datacenter views; the decentralized page
    reads them as the model's parameter counts and hidden size, num_nodes and tokens_t."""
    from dtsim.errors import ScenarioError
    from dtsim.interfaces.web.fields import from_shared
    from dtsim.physics.transformer import count_params, get_architecture

    got = from_shared({"model": "llama3.1-8b", "nodes": "4", "tokens": "15e12", "active_parameters_b": "3"})
    n = count_params(get_architecture("llama3.1-8b"))
    assert got == {
        "parameters_b": repr(n.total / 1e9),
        "hidden_size": "4096",
        "moe": "false",
        "num_nodes": "4",
        "tokens_t": "15.0",
    }
    assert from_shared({"num_nodes": "7", "gpu": "h100-sxm"}) == {"num_nodes": "7", "gpu": "h100-sxm"}
    # with node groups the groups' counts are the node count: a carried `nodes` does not override them
    groups = '[{"count": 100}, {"count": 200}]'
    assert from_shared({"node_groups": groups, "nodes": "16"}) == {"node_groups": groups}
    for bad, field in (
        ({"model": "nope", "tokens": "many"}, ["tokens", "model"]),
        ({"nodes": "abc", "tokens": "-1"}, ["nodes", "tokens"]),
        ({"nodes": "0", "tokens": "nan"}, ["nodes", "tokens"]),
        ({"tokens": "1e400"}, ["tokens"]),
    ):
        try:
            from_shared(bad)
        except ScenarioError as exc:
            assert [f for f, _v, _m in exc.problems] == field
            assert [v for _f, v, _m in exc.problems] == [bad[f] for f in field]
        else:
            raise AssertionError(f"bad shared keys were accepted: {bad}")


def test_navigation_links_carry_the_shared_keys_a_view_holds_at_their_current_values():
    """A view's links carry every shared key it holds, defaults included (a key set back to its
    default must replace the value the target view remembers), and name the ones it holds blank in
    data-clear; the address bar keeps the short query. A view that holds none passes on what it was
    given."""
    from types import SimpleNamespace

    from dtsim.interfaces.web.views import Shell

    class Link(SimpleNamespace):
        def update(self) -> None:
            pass

    scripts: list[str] = []
    ui = SimpleNamespace(run_javascript=scripts.append)
    shell = Shell(ui, "/plan", links={p: Link(_props={}) for p in ("/plan", "/step", "/validation", "/")})
    full = {"model": "llama3.1-8b", "nodes": "2", "gpu": None, "tokens": "", "gbs": "512"}
    assert shell.share({"gbs": "384"}, links=full) == "/plan?gbs=384"
    assert "/plan?gbs=384" in scripts[-1]
    step = shell.links["/step"]._props
    assert step["href"] == "/step?model=llama3.1-8b&nodes=2"
    assert step["data-clear"] == "gpu,tokens"
    assert shell.links["/plan"]._props == {}  # the current view's own link is left alone
    # the decentralized page reads shared keys into its own fields: only what the view changed
    shell.share({"nodes": "8"}, links=full | {"nodes": "8"})
    assert shell.links["/"]._props == {"href": "/?nodes=8", "data-clear": ""}
    assert shell.links["/step"]._props["href"] == "/step?model=llama3.1-8b&nodes=8"
    passing = Shell(ui, "/validation", links={"/step": Link(_props={})})
    passing.share({"model": "mixtral-8x7b", "tokens": "", "subset": "a"})
    assert passing.links["/step"]._props == {"href": "/step?model=mixtral-8x7b", "data-clear": ""}


def test_page_errors_never_show_python_values_and_name_inputs_by_label():
    """A blank input is said as blank (no `= None`, no `(0.0, None)`), and an input is named by its
    label with its key, the key kept whole however long the label (messages quote 80 characters)."""
    from dtsim.interfaces.web.page import HINT_LABELS
    from dtsim.interfaces.web.viewkit import labelled

    text = problems_text(
        ScenarioError(
            [
                ("Nodes (count)", None, "must be given"),
                ("Bus bandwidth / latency", (0.0, None), "must be > 0"),
            ]
        )
    )
    assert "None" not in text and "Nodes (count): must be given" in text and "0 / blank" in text
    named = labelled(ScenarioError([("num_nodes", 2.5, "must be an integer")]), HINT_LABELS)
    assert problems_text(named) == "Nodes [num_nodes] = 2.5: must be an integer"
    long = labelled(ScenarioError([("--level-bandwidth", "x", "bad")]), {"level_bandwidth": "L" * 200})
    assert "[level_bandwidth] = 'x'" in problems_text(long)


def test_an_input_held_blank_where_its_default_is_not_stays_in_the_share_link():
    """/target's Question left blank means a search; its link says so (`solve=`), so opening the link
    gives the search again and not the default question."""
    from types import SimpleNamespace

    from dtsim.interfaces.web.formview import defaults, from_query, to_query
    from dtsim.interfaces.web.views import Shell
    from dtsim.interfaces.web.views import target as target_view

    fs = target_view.fields()
    values = defaults(fs) | {"solve": None, "tokens_t": 2.0}
    shell = Shell(SimpleNamespace(run_javascript=lambda _: None), "/target", links={})
    path = shell.share(to_query(fs, values))
    assert path == "/target?solve=&tokens_t=2"
    back, problems = from_query(fs, dict(parse_qsl(path.split("?")[1], keep_blank_values=True)))
    assert back["solve"] is None and back["tokens_t"] == 2.0 and not problems


def test_a_share_link_with_a_gpu_reads_back_as_the_page_computed_it():
    """On / the accelerator prices the run and PFLOPS/VRAM stay as given; a gpu read from a link
    re-derives them, so the link names them too (at their defaults): the link's answer is the page's
    (2.4 days for 70B/2T on 500 nodes, not the 3.1 of the re-derived dense H100 peak)."""
    from dtsim.interfaces.web.fields import values_to_fields

    values = default_values() | {"num_nodes": 500, "parameters_b": 70, "tokens_t": 2, "gpu": "h100-sxm"}
    page = dtsim.simulate(dtsim.load_scenario(layers=[values_to_fields(values)]))
    query = share_query(values)
    assert "pflops_per_node=32" in query and "vram_per_node_gb=2304" in query
    linked = dtsim.simulate(dtsim.load_scenario(layers=[parse_query(dict(parse_qsl(query)))]))
    assert linked.wall_clock_days == page.wall_clock_days


def test_a_share_link_with_another_gpu_count_reads_back_as_the_page_computed():
    """A review's case: the page ran 8 GPUs at the shown 32 PFLOPS and 2,304 GB, and its link held only
    gpus_per_node=8, which reads back at 16 PFLOPS and 1,152 GB (a count scales the node): 433 days on
    the page, 16,923 from its link. The link now names the node's peak and memory with the count."""
    values = default_values() | {"gpus_per_node": 8}
    query = dict(parse_qsl(share_query(values)))
    assert query["gpus_per_node"] == "8" and query["pflops_per_node"] == "32"
    restored = load_scenario(layers=[parse_query(query)])
    assert restored.pflops_per_node == 32.0 and restored.vram_per_node_gb == 2304.0
