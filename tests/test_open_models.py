"""Catalog entries for current open models (issue 15 item 6): dtsim's exact parameter accounting of each
shape against the size its publisher states, and each entry's source named with an address."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dtsim.interfaces.cli.main import app
from dtsim.physics.transformer import architectures, count_params, get_architecture

OPEN_MODELS = {
    # id: (published total B, published active B or None), as the model card, paper or announcement states
    "llama3.1-8b": (8.03, None),
    "llama3.1-70b": (70.6, None),
    "llama3.2-1b": (1.23, None),
    "llama3.2-3b": (3.21, None),
    "qwen2.5-7b": (7.61, None),
    "qwen2.5-72b": (72.7, None),
    "qwen3-8b": (8.2, None),
    "qwen3-32b": (32.8, None),
    "qwen3-235b-a22b": (235, 22),
    "mistral-7b": (7.24, None),
    "mixtral-8x22b": (141, 39),
    "gemma2-9b": (9.24, None),
    "gemma2-27b": (27.23, None),
}


@pytest.mark.parametrize("name", sorted(OPEN_MODELS))
def test_parameter_count_matches_the_published_size(name):
    a = get_architecture(name)
    total, active = OPEN_MODELS[name]
    assert a.published_params_b == total and a.published_active_params_b == active
    c = count_params(a)
    assert c.total / 1e9 == pytest.approx(total, rel=0.01), (name, c.total)
    if active is not None:
        assert a.moe is not None
        assert c.active / 1e9 == pytest.approx(active, rel=0.01), (name, c.active)
        assert c.active < c.total / 3  # a sparse model: few of its experts per token
    else:
        assert a.moe is None and c.active == c.total


@pytest.mark.parametrize("name", sorted(OPEN_MODELS))
def test_each_entry_cites_its_source_with_an_address(name):
    a = architectures()[name]
    assert a.source and "https://" in a.source
    assert any(word in a.source for word in ("config", "arXiv", "sku_list")), a.source


def test_shapes_the_schema_must_keep():
    # Qwen3 32B's attention is wider than its hidden size (64 heads of 128 against 5,120)
    q = get_architecture("qwen3-32b")
    assert q.d_head * q.heads == 8192 != q.hidden
    # Llama 3.2 ties its embeddings: the untied count would be 0.26B more than the published 1.23B
    small = get_architecture("llama3.2-1b")
    untied = count_params(small.model_copy(update={"tied_embeddings": False})).total / 1e9
    assert untied > 1.23 * 1.2 and count_params(small).total / 1e9 == pytest.approx(1.23, rel=0.01)
    # Qwen3 235B-A22B: every layer routes to 8 of 128 experts of 1,536
    moe = get_architecture("qwen3-235b-a22b").moe
    assert (moe.experts, moe.top_k, moe.expert_ffn, moe.dense_layers) == (128, 8, 1536, 0)


@pytest.mark.parametrize("name", ["qwen3-32b", "qwen3-235b-a22b", "gemma2-9b"])
def test_the_datacenter_model_runs_them(name):
    r = CliRunner().invoke(app, ["step", "--model", name, "--gpu", "h100-sxm", "--nodes", "8", "--json"])
    assert r.exit_code == 0, r.output
    assert "step_time_s" in r.stdout
