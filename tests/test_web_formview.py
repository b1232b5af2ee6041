"""The form views' helpers without a browser (web/formview.py, web/views/network.py): reading inputs
from a share link and an inputs file, writing them back as a link and as CLI options, and the
nccl-tests bus bandwidth convention of the network view's chart."""

from __future__ import annotations

import json

import pytest

from dtsim.errors import ScenarioError
from dtsim.interfaces.web import formview as fv
from dtsim.interfaces.web.viewkit import MAX_UPLOAD_BYTES, problems_text, read_upload
from dtsim.interfaces.web.views import governance, network, plan, sensitivity, step, target

FIELDS = (
    fv.Field("ranks", "Ranks", "int", 8),
    fv.Field("size", "Size", "number", 1.5, optional=True),
    fv.Field("op", "Op", "select", "a", options=("a", "b")),
    fv.Field("cap", "Cap", "text", "16,8", blank="none"),
    fv.Field("set", "Set", "lines", None),
    fv.Field("fixed", "Fixed", "switch", False),
)


def test_link_round_trip_and_cli_options():
    values = {
        "ranks": 64,
        "size": None,
        "op": "b",
        "cap": "none",
        "set": ["mfu=0.3..0.5", "tokens_t=2"],
        "fixed": True,
    }
    query = fv.to_query(FIELDS, values)
    assert query == {
        "ranks": "64",
        "size": "",
        "op": "b",
        "cap": "none",
        "set": "mfu=0.3..0.5\ntokens_t=2",
        "fixed": "true",
    }
    assert fv.from_query(FIELDS, query) == (values, [])
    assert fv.to_query(FIELDS, fv.defaults(FIELDS)) == {}  # the defaults make a bare link
    assert fv.argv(FIELDS, values) == [
        "--ranks", "64", "--op", "b", "--cap", "none", "--set", "mfu=0.3..0.5", "--set", "tokens_t=2", "--fixed",
    ]  # fmt: skip


def test_bad_link_values_are_named_and_keep_their_defaults():
    values, problems = fv.from_query(FIELDS, {"ranks": "2.5", "op": "c", "size": "inf", "nodes": "3"})
    assert values == fv.defaults(FIELDS)  # `nodes` (another view's shared key) is left alone
    text = " ".join(problems)  # each named by its label and its key in the link
    assert "Ranks [ranks] = '2.5': must be a whole number" in text
    assert "Op [op] = 'c': must be one of a, b" in text
    assert "Size [size] = 'inf': must be a finite number" in text


def imported(name: str, raw: bytes, current: dict) -> dict:
    """What a form view does with an uploaded inputs file: its share card reads it (ShareCard.import_file:
    read_upload) and FormView.import_inputs takes the mapping over the current inputs (from_mapping)."""
    return fv.from_mapping(FIELDS, read_upload(name, raw), current)


def test_inputs_file():
    current = fv.defaults(FIELDS)
    got = imported("in.yaml", b"ranks: 16\nset: [mfu=0.4]\n", current)
    assert got == {**current, "ranks": 16, "set": ["mfu=0.4"]}
    assert imported("in.json", json.dumps({"fixed": True}).encode(), current)["fixed"] is True
    for name, raw, words in (
        ("in.txt", b"ranks: 1", "must be a .yaml, .yml or .json"),
        ("in.yaml", b"- 1\n", "must hold a mapping"),
        ("in.yaml", b"nodes: 3\n", "is not an input of this view; allowed: ranks, size"),
        ("in.yaml", b"ranks: true\n", "ranks = True: must be a number"),
        ("in.yaml", b"fixed: maybe\n", "fixed = 'maybe': must be true or false"),
        ("in.yaml", b"# " * (MAX_UPLOAD_BYTES // 2 + 1), f"bytes; at most {MAX_UPLOAD_BYTES:,}"),
    ):
        with pytest.raises(ScenarioError) as exc:
            imported(name, raw, current)
        assert words in problems_text(exc.value)


def test_an_inputs_file_says_every_problem():
    """An unknown key hid the file's bad values (only the first kind of problem was said)."""
    with pytest.raises(ScenarioError) as exc:
        imported("in.yaml", b"nodes: 3\nranks: many\nop: c\n", fv.defaults(FIELDS))
    assert [p[0] for p in exc.value.problems] == ["nodes", "ranks", "op"]


FORM_VIEWS = (network, target, governance, sensitivity, step, plan)


def test_page_errors_name_inputs_by_their_labels():
    """A problem's field given as the input's name or CLI option, and an option in its message, are
    said as the page labels the input; other names are left alone."""
    fields = sensitivity.fields()
    exc = ScenarioError(
        [
            ("--base", 1, "must be between 2 and 1,024"),
            ("seed", "x", "must be a number"),
            ("mfu", "abc", "must be a number"),  # a scenario field of a `name=value` line
            ("target", None, "give --base or --seed, not --nope"),
        ]
    )
    assert fv.page_names(fields, exc).problems == [
        ("Base samples (N)", 1, "must be between 2 and 1,024"),
        ("Seed (sampling and bootstrap)", "x", "must be a number"),
        ("mfu", "abc", "must be a number"),
        ("target", None, "give “Base samples (N)” or “Seed (sampling and bootstrap)”, not --nope"),
    ]
    assert fv.page_names(fields, exc, keys=True).problems[0][0] == "Base samples (N) [base]"
    pair = ScenarioError([("bandwidth_gbs/latency_us", (-1, None), "must be > 0 and ≥ 0")])
    assert (
        fv.page_names(network.fields(), pair).problems[0][0] == "Bus bandwidth (GB/s) / Per-step latency (µs)"
    )


@pytest.mark.parametrize(
    ("view", "change", "label"),
    [
        (sensitivity, {"base": 1}, "Base samples (N)"),
        (
            governance,
            {"precisions": "fp3", "targets": "1e24", "max_nodes": 10},
            "Precisions an actor may use",
        ),
        (target, {"days": -3.0}, "Time limit (days; blank: 547.875)"),
        (network, {"size_mb": -1.0}, "Message size (MB, 10^6 bytes)"),
        (step, {"nodes": 0}, "Nodes (count)"),
    ],
)
def test_a_refused_answer_names_the_input_by_its_label(view, change, label):
    """The views' computations name inputs as the CLI does (`--base`, `size_mb`); the page says them
    by the labels the user sees (FormView.show_error)."""
    fields = view.fields()
    with pytest.raises(ScenarioError) as exc:
        view.compute(fv.defaults(fields) | change)
    shown = problems_text(fv.page_names(fields, exc.value))
    assert shown.startswith(label + " = "), shown
    assert not fv.FLAG.search(shown), shown


def test_sensitivity_says_a_bad_base_and_a_bad_scenario_together():
    values = fv.defaults(sensitivity.fields()) | {"base": 1, "set": ["mfu=abc"]}
    with pytest.raises(ScenarioError) as exc:
        sensitivity.compute(values)
    assert [p[0] for p in exc.value.problems] == ["--base", "mfu"]


def test_every_view_has_distinct_fields_with_valid_defaults():
    for view in FORM_VIEWS:
        fields = view.fields()
        names = [f.name for f in fields]
        assert len(names) == len(set(names)), view.PATH
        labels = [f.label for f in fields]  # an error names the input by its label: one input each
        assert len(labels) == len(set(labels)), view.PATH
        assert not any(fv.FLAG.search(f.label) for f in fields), view.PATH
        for f in fields:
            if f.kind == "select" and f.default is not None:
                assert f.default in f.options, (view.PATH, f.name)
            if f.default is not None:  # the default survives a share link
                assert f.parse(f.text(f.default)) == f.default, (view.PATH, f.name)


def test_nccl_bus_factor_turns_algorithm_into_bus_bandwidth():
    # nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n; others 1
    from dtsim.models import network as network_model

    assert network_model.nccl_bus_factor("allreduce", 8) == pytest.approx(1.75)
    assert network_model.nccl_bus_factor("all-gather", 8) == pytest.approx(0.875)
    assert network_model.nccl_bus_factor("broadcast", 8) == 1.0
    # a large ring all-reduce's busbw approaches the links' bus bandwidth, a tiny one is latency-bound
    values = {f.name: f.default for f in network.fields()}
    curve = network.busbw_curve(values)
    link = network.run_collective(values)["bus_bandwidth_gb_s"]
    assert curve[-1]["busbw_gb_s"] == pytest.approx(link, rel=0.01)
    assert curve[0]["busbw_gb_s"] < 0.01 * link
    # the collective's own answer carries the same nccl-tests busbw, beside the links' bus bandwidth
    r = network.run_collective(values)
    assert r["busbw_gb_s"] == pytest.approx(
        r["algbw_gb_s"] * network_model.nccl_bus_factor(r["op"], r["ranks"])
    )
    assert r["busbw_gb_s"] < r["bus_bandwidth_gb_s"]  # α costs something at every size


def test_network_errors_name_the_view_fields():
    values = {f.name: f.default for f in network.fields()} | {"datacenters": 0, "size_mb": -1.0}
    with pytest.raises(ScenarioError) as exc:
        network.compute(values)
    fields = [p[0] for p in exc.value.problems]
    assert "datacenters" in fields and "size_mb" in fields


def test_sensitivity_view_refuses_the_base_the_api_refuses():
    """The page ran any N in the server (N = 99,999: millions of runs nothing could stop); it now has
    POST /api/sensitivity's bound."""
    from dtsim.errors import ScenarioError
    from dtsim.interfaces.api.app import MAX_SENSITIVITY_BASE
    from dtsim.interfaces.web.views.sensitivity import compute

    values = {
        "preset": "default",
        "set": [],
        "fixed_assumptions": False,
        "output": "wall_clock_days",
        "seed": 1,
    }
    with pytest.raises(ScenarioError, match=f"between 2 and {MAX_SENSITIVITY_BASE:,}"):
        compute(values | {"base": 99_999})
