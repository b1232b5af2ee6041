"""Issue 15 items 6 and 7: the χ Newton iteration skips infeasible rows (bit for bit the same answers),
the direct questions of `dtsim target --solve` checked against direct `dtsim simulate` runs of their
answers, and the reproducers that crashed `dtsim target`."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from dtsim.analysis.search import NodeSpec, Space, search
from dtsim.analysis.targets import Target
from dtsim.assumptions import Assumptions
from dtsim.interfaces.cli.main import app
from dtsim.physics import quality
from dtsim.schema.scenario import load_scenario

runner = CliRunner()
ASM = Assumptions()
BASE = load_scenario(preset="governance")


# --- item 7: the χ Newton iteration ----------------------------------------------------------------


def every_row_newton(loss, asm):
    """The batch iteration before issue 15 item 7, kept as the reference: every row is stepped until
    all have converged (a NaN row never does, so such a batch ran all 60 steps)."""
    a, b = asm.chinchilla_alpha, asm.chinchilla_beta
    big_a = asm.chinchilla_a
    big_b = asm.chinchilla_b * asm.chinchilla_tokens_per_param ** (-b)
    k = np.asarray(loss, dtype=float) - asm.chinchilla_e
    with np.errstate(all="ignore"):
        x = np.maximum(np.log(big_a / k) / a, np.log(big_b / k) / b)
        done = np.zeros(x.shape, dtype=bool)
        for _ in range(60):
            step = quality._newton_step(x, k, a, b, big_a, big_b)
            x = np.where(done, x, x + step)
            done |= np.abs(step) <= 1e-15 * np.maximum(np.abs(x), 1.0)
            if done.all():
                break
        return np.exp(x)


def _losses(n: int, seed: int) -> np.ndarray:
    """Losses a batch meets: ordinary ones, NaN (infeasible rows), ±inf, the floor E and below it."""
    rng = np.random.default_rng(seed)
    loss = ASM.chinchilla_e + 10 ** rng.uniform(-4, 1, n)
    loss[rng.random(n) < 0.4] = np.nan
    loss[:6] = [np.nan, np.inf, -np.inf, ASM.chinchilla_e, ASM.chinchilla_e - 0.5, 0.0]
    return loss


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [20, 64, 5001])
def test_newton_skipping_nan_rows_is_bit_identical(n, seed):
    loss = _losses(n, seed)
    with np.errstate(all="ignore"):
        got = quality.compute_optimal_params(loss, ASM)
    want = every_row_newton(loss, ASM)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isfinite(got).sum() > 0  # the comparison covers converged rows, not only NaN ones
    # and in a 2-D batch (the shape comes back as it went in)
    with np.errstate(all="ignore"):
        two = quality.compute_optimal_params(loss[: n - n % 2].reshape(2, -1), ASM)
    assert np.array_equal(two.ravel(), want[: n - n % 2], equal_nan=True)


def test_one_row_path_agrees_with_the_batch_on_nan():
    with np.errstate(all="ignore"):
        for v in (np.nan, ASM.chinchilla_e, ASM.chinchilla_e - 1, 2.5):
            one = quality.compute_optimal_params(np.array([v]), ASM)
            assert np.array_equal(one, every_row_newton(np.array([v, v]), ASM)[:1], equal_nan=True)


def test_nan_rows_are_not_iterated(monkeypatch):
    """A batch with infeasible rows stops when its feasible rows converge, not after 60 steps."""
    calls = []
    step = quality._newton_step
    monkeypatch.setattr(quality, "_newton_step", lambda *a: calls.append(a[0].size) or step(*a))
    loss = np.full(1000, np.nan)
    loss[::2] = np.linspace(1.9, 3.5, 500)
    quality.compute_optimal_params(loss, ASM)
    assert 0 < len(calls) <= 12
    assert calls[0] == 500  # the NaN half is never stepped
    calls.clear()
    with np.errstate(all="ignore"):
        quality.compute_optimal_params(np.array([np.nan]), ASM)
    assert calls == []


def test_search_answers_unchanged_by_skipping(monkeypatch):
    """A target search whose batches hold infeasible rows gives the same answer, field by field, with
    the every-row iteration (the answers before the change)."""
    space = Space(
        nodes=[NodeSpec.from_preset("16x-h100-sxm"), NodeSpec.from_preset("dgx-h100")],
        node_counts=np.array([1.0, 2, 3, 5, 8, 13, 40, 200]),
        fractions=(1.0, 0.5),
        pipeline_multiples=(2, 8),
        inner_steps=("auto", 16),
        compressions=(16, 150),
        group_sizes=(0, 4),
        activation_compressions=(4,),
    )
    target = Target("quality", 3e24)
    now = search(BASE, space, target, objective="time")
    seen = []
    original = quality.compute_optimal_params

    def reference(loss, asm):
        seen.append(np.isnan(np.asarray(loss)).sum())
        return every_row_newton(loss, asm) if np.size(loss) > 1 else original(loss, asm)

    monkeypatch.setattr(quality, "compute_optimal_params", reference)
    before = search(BASE, space, target, objective="time")
    assert sum(seen) > 0  # the space has infeasible rows (pipelines deeper than the node count)
    rows = lambda r: repr([r.winner, *r.by_mode.values(), *r.closest.values()])  # noqa: E731
    assert rows(now) == rows(before)


# --- the reproducers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("--inner-steps", "inf", "integers 1–100000 or auto"),
        ("--inner-steps", "nan", "integers 1–100000 or auto"),
        ("--group-sizes", "nan", "0 (flat) or 2–100000"),
        ("--group-sizes", "inf", "0 (flat) or 2–100000"),
        ("--compression", "inf", "positive finite numbers"),
        ("--fractions", "nan", "positive finite numbers"),
    ],
)
def test_non_finite_space_values_exit_2(option, value, allowed):
    r = runner.invoke(app, ["target", "--params-b", "10", "--tokens-t", "1", option, value])
    assert r.exit_code == 2, r.output
    assert option in r.output and value in r.output and allowed in r.output
    assert "Traceback" not in r.output
    assert isinstance(r.exception, SystemExit)  # typer's exit, not an OverflowError or ValueError
