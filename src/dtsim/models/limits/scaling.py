"""The toy model's scaling relations (Erdil & Schneider-Joseph 2024 §2 and §8.1.4): from d_model to the model's shape, its
compute-optimal dataset and training compute, and its critical batch size.

Following the reference implementation, layer count, sparsity and batch size are rounded to the
nearest number of the form f·2^i with f ∈ {1, 3, 5, 7, 9} (ties to the smaller), so that the
divisibility conditions of the parallelism search are easy to satisfy on power-of-two clusters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dtsim.assumptions import Assumptions

_A = Assumptions()
ROUNDING = np.array(sorted(f * 2**i for f in (1, 3, 5, 7, 9) for i in range(60)), dtype=float)
BATCH_LAWS = ("default", "deepseek", "fixed")

# Erdil & Schneider-Joseph 2024 §8.1.4 constants (docs/assumptions.md)
LAYER_COEF, LAYER_EXP = _A.limits_layer_coefficient, _A.limits_layer_exponent
SPARSITY_AT_GPT4 = _A.limits_sparsity_at_gpt4
BATCH_TOKENS_AT_GPT3 = float(_A.limits_batch_tokens_reference)
GPT3_FLOP = float(_A.limits_batch_reference_flop)
DEEPSEEK_COEF, DEEPSEEK_EXP = _A.limits_deepseek_batch_coefficient, _A.limits_deepseek_batch_exponent
TOKENS_PER_PARAM = _A.limits_tokens_per_param  # Chinchilla: D = 20·N_p


def take_closest(x):
    """The nearest element of ROUNDING (the smaller one on a tie)."""
    x = np.asarray(x, dtype=float)
    pos = np.clip(np.searchsorted(ROUNDING, x), 1, len(ROUNDING) - 1)
    before, after = ROUNDING[pos - 1], ROUNDING[pos]
    out = np.where(after - x < x - before, after, before)
    return np.where(x <= ROUNDING[0], ROUNDING[0], out)


def layer_count(d_model, d_ff):
    return take_closest(LAYER_COEF * (np.asarray(d_model, float) * d_ff) ** LAYER_EXP)


def sparsity_factor(d_model, d_ff):
    return take_closest(SPARSITY_AT_GPT4 * (np.asarray(d_model, float) * d_ff / (4 * 12288.0**2)) ** 0.5)


def critical_batch_sequences(compute_flop, seq_len: int, sparsity, law: str = "default"):
    """Batch size in sequences: default b ∝ E^½·T^⅙ from 4 Mi tokens at 3e23 FLOP; DeepSeek
    b = 0.2920·C^0.3271 tokens (× E^½); fixed 2²² tokens."""
    e = np.asarray(sparsity, dtype=float)
    if law == "fixed":
        return np.floor(BATCH_TOKENS_AT_GPT3 / seq_len) + 0 * e
    if law == "deepseek":
        bs = e**0.5 * DEEPSEEK_COEF * np.asarray(compute_flop, float) ** DEEPSEEK_EXP / seq_len
    elif law == "default":
        bs = (
            e**0.5 * (np.asarray(compute_flop, float) / GPT3_FLOP) ** (1 / 6) * BATCH_TOKENS_AT_GPT3 / seq_len
        )
    else:
        raise ValueError(law)
    return e * take_closest(bs / e)


@dataclass(frozen=True)
class Shape:
    """One compute-optimal run of the toy model (stacked sparse MLP blocks)."""

    d_model: int
    d_ff: int
    layers: int
    sparsity: int
    seq_len: int
    batch_sequences: int

    @property
    def params(self) -> float:
        return (
            2.0 * self.d_model * self.d_ff * self.layers * self.sparsity
        )  # Erdil & Schneider-Joseph 2024 eq. 1

    @property
    def active_params(self) -> float:
        return self.params / self.sparsity

    @property
    def dataset_tokens(self) -> float:
        return TOKENS_PER_PARAM * self.params

    @property
    def training_flop(self) -> float:
        return 6.0 * self.active_params * self.dataset_tokens

    @property
    def batch_tokens(self) -> int:
        return self.batch_sequences * self.seq_len

    @property
    def steps(self) -> float:
        return self.dataset_tokens / self.batch_tokens


def shape_for(
    d_model: int,
    sparse: bool = False,
    batch_law: Literal["default", "deepseek", "fixed"] = "default",
    seq_len: int = 2048,
    ff_ratio: int = 4,
    layers: int | None = None,
    sparsity: int | None = None,
) -> Shape:
    d_ff = ff_ratio * d_model
    n_layers = int(layers if layers is not None else layer_count(d_model, d_ff))
    e = int(sparsity if sparsity is not None else (sparsity_factor(d_model, d_ff) if sparse else 1))
    params = 2.0 * d_model * d_ff * n_layers * e
    compute = 6.0 * params / e * TOKENS_PER_PARAM * params
    batch = int(critical_batch_sequences(compute, seq_len, e, batch_law))
    return Shape(d_model, d_ff, n_layers, e, seq_len, batch)


def d_model_grid(lo: int = 12288, hi: int = 128 * 12288, min_power: int = 11) -> list[int]:
    """The reference curves' widths: every f·2^i (f odd, 1–15; i ≥ 11) in [lo, hi]."""
    return sorted({f * 2**i for f in range(1, 17, 2) for i in range(min_power, 40) if lo <= f * 2**i <= hi})
