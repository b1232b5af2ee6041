"""The web views' software-stack choice without a browser: the select's choices are the catalog's
profiles, choosing one sets the inputs it sets (`with_tp` resolved for /step's TP, on for /plan), the
inputs count as given as `dtsim step`/`plan` counts a flag given, and the answer is the command's
`--software ID` answer for the same inputs, for every profile; an unknown id is named by its label."""

from __future__ import annotations

import json

import pytest

from dtsim import catalog
from dtsim.errors import ScenarioError
from dtsim.interfaces.web.formview import Field, argv, defaults, page_names
from dtsim.interfaces.web.views import plan as plan_view
from dtsim.interfaces.web.views import step as step_view


def cli(args: list[str]) -> dict:
    from typer.testing import CliRunner

    from dtsim.interfaces.cli.main import app

    out = CliRunner().invoke(app, [*args, "--json"])
    assert out.exit_code in (0, 1), out.output
    return json.loads(out.stdout)


def test_the_select_offers_each_profile_by_its_name():
    f = {x.name: x for x in step_view.fields()}["software"]
    profiles = catalog.software()
    assert f.options == tuple(profiles) and "llm-foundry" in f.options
    assert f.labels == tuple(p.name for p in profiles.values())
    assert f.optional and f.parse("") is None
    assert {x.name: x for x in plan_view.fields()}["software"] == f


def test_a_switch_with_an_off_form_gives_it_when_off():
    on_off = Field("sequence_parallel", "SP", "switch", False, off="--no-sequence-parallel")
    assert on_off.argv(True) == ["--sequence-parallel"]
    assert on_off.argv(False) == ["--no-sequence-parallel"]
    assert Field("x", "X", "switch", False).argv(False) == []


def test_choosing_a_profile_sets_its_inputs():
    v = defaults(step_view.fields()) | {"software": "llm-foundry"}
    assert step_view.linked("software", v) == {
        "zero": 3,
        "fp32_params": True,
        "no_overlap_grad_reduce": False,
        "no_flash_attention": False,
        "attention_kernel": "triton",
    }
    old = step_view.linked("software", v | {"software": "megatron-lm-2021"})
    assert old == {
        "no_flash_attention": True,
        "sequence_parallel": False,
        "no_overlap_grad_reduce": True,
        "recompute": "full",
    }
    # with_tp: on where the form's TP is above 1; NeMo's FP32 gradient setting has no input here
    nemo = v | {"software": "nemo-24.07"}
    assert step_view.linked("software", nemo | {"tp": 4})["sequence_parallel"] is True
    assert step_view.linked("software", nemo | {"tp": 1})["sequence_parallel"] is False
    assert "fp32_grad_accumulation" not in step_view.linked("software", nemo)
    # only the software input sets others, and a blank one sets nothing
    assert step_view.linked("zero", v) == {}
    assert step_view.linked("software", v | {"software": None}) == {}
    # /plan: the inputs it has; with_tp on (plan evaluates TP communication only where tp > 1)
    p = defaults(plan_view.fields()) | {"software": "megatron-bridge"}
    assert plan_view.linked("software", p) == {
        "no_flash_attention": False,
        "attention_kernel": "flash2",
        "overlap_tp_comm": True,
    }


def test_the_inputs_given_are_the_flags_the_cli_counts_given():
    form = step_view.fields()
    v = defaults(form)
    given = step_view.software_given(form, v)
    assert "attention_kernel" not in given  # blank: the profile's kernel, as without --attention-kernel
    assert {"zero", "recompute", "sequence_parallel", "flash_attention", "fp32_params"} <= given
    assert "attention_kernel" in step_view.software_given(form, v | {"attention_kernel": "triton"})
    assert step_view.software_given(plan_view.fields(), defaults(plan_view.fields())) == {
        "flash_attention",
        "overlap_tp_comm",
        "overlap_p2p_comm",
        "fp32_params",
    }


@pytest.mark.parametrize("software", tuple(catalog.software()))
def test_the_answer_is_the_cli_answer_for_every_profile(software):
    form = step_view.fields()
    v = defaults(form) | {"software": software}
    v |= step_view.linked("software", v)
    shown = step_view.compute(v)["step"]
    assert shown == cli(["step", *argv(form, v)]) and shown["software"] == software
    # an input changed after the choice wins over the profile, as its flag does
    changed = v | {"sequence_parallel": not v["sequence_parallel"], "zero": 2}
    again = step_view.compute(changed)["step"]
    assert again == cli(["step", *argv(form, changed)])
    assert again["layout"]["sequence_parallel"] is changed["sequence_parallel"]


def test_plan_answers_as_the_cli_with_the_profile():
    form = plan_view.fields()
    v = defaults(form) | {"software": "maxtext", "gbs": 64}
    v |= plan_view.linked("software", v)
    shown = plan_view.compute(v)
    got = cli(["plan", *argv(form, v)])
    assert {k: x for k, x in shown.items() if k != "seconds"} == {
        k: x for k, x in got.items() if k != "seconds"
    }
    assert shown["software"] == "maxtext" and all(r["layout"]["zero"] == 3 for r in shown["layouts"])


def test_an_unknown_profile_is_named_by_its_label():
    form = step_view.fields()
    with pytest.raises(ScenarioError) as exc:
        form_field = {f.name: f for f in form}["software"]
        form_field.parse("pytorch")
    assert "Software stack (blank: none)" in str(page_names(form, exc.value))
    with pytest.raises(ScenarioError) as exc:  # past the select (an API job's values): the catalog says
        step_view.compute(defaults(form) | {"software": "pytorch"})
    (problem,) = page_names(form, exc.value).problems
    assert problem[0] == "Software stack (blank: none)" and "llm-foundry" in problem[2]
