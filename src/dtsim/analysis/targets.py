"""What a target search aims at: a compute target (local-equivalent or quality-adjusted) or a model
size and token count, and the closed forms for the tokens a run needs to reach it (see the module
docstring of `dtsim.analysis.search` for the derivation; MIRI simulator docs §6 and the reference README)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dtsim.assumptions import Assumptions
from dtsim.errors import ScenarioError
from dtsim.physics import quality
from dtsim.schema.fields import BOUNDS


@dataclass(frozen=True)
class Target:
    kind: str  # "local" | "quality" | "model"
    flop: float | None = None
    params_b: float | None = None
    tokens_t: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("local", "quality", "model"):
            raise ScenarioError([("target", self.kind, "must be local, quality or model")])
        if self.kind == "model":
            for name in ("params_b", "tokens_t"):
                v = getattr(self, name)
                if v is None or not (math.isfinite(v) and v > 0):
                    # named as the option the user gives (tokens_t = None did not say which)
                    flag = "--" + name.replace("_", "-")
                    why = "a model target needs a positive size (--params-b) and token count (--tokens-t)"
                    raise ScenarioError([(flag, v, why)])
                # the scenario fields' own range (parameters_b, tokens_t): a run simulate can evaluate
                b = BOUNDS["parameters_b" if name == "params_b" else name]
                if not b["ge"] <= v <= b["le"]:
                    flag = "--" + name.replace("_", "-")
                    raise ScenarioError([(flag, v, f"must be between {b['ge']:g} and {b['le']:g}")])
        elif self.flop is None or not (math.isfinite(self.flop) and self.flop > 0):
            raise ScenarioError([(f"--{self.kind}-flop", self.flop, "must be a positive number of FLOP")])

    def describe(self) -> str:
        if self.kind == "model":
            return f"train {self.params_b:g}B parameters on {self.tokens_t:g}T tokens"
        word = "local-equivalent" if self.kind == "local" else "quality-adjusted"
        return f"{self.flop:.3g} FLOP {word} compute"


def loss_optimal(n, asm: Assumptions):
    """L_opt(N) = L(N, k·N): the loss of the compute-optimal run with N parameters."""
    return quality.chinchilla_loss(n, asm.chinchilla_tokens_per_param * np.asarray(n, dtype=float), asm)


def tokens_needed(target: Target, params, flop_per_token, eta, mult, asm: Assumptions):
    """Tokens a run needs to reach `target` (inf where it never can); see the module docstring."""
    params = np.asarray(params, dtype=float)
    if target.kind == "model":
        return np.full(params.shape, target.tokens_t * 1e12)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        need_c = target.flop / (eta * flop_per_token)
        if target.kind == "local":
            return need_c
        n_x = np.sqrt(target.flop / (eta * asm.flops_per_param_token * asm.chinchilla_tokens_per_param))
        room = (
            loss_optimal(n_x, asm) / mult
            - asm.chinchilla_e
            - asm.chinchilla_a * params ** (-asm.chinchilla_alpha)
        )
        d_q = np.where(room > 0, (asm.chinchilla_b / room) ** (1.0 / asm.chinchilla_beta), np.inf)
        return np.where(eta > 0, np.maximum(need_c, d_q), np.inf)


def metric_at(target_kind: str, params, tokens, flop_per_token, eta, mult, asm: Assumptions):
    """Local-equivalent or quality-adjusted compute of a run of `tokens` tokens."""
    c = flop_per_token * tokens
    if target_kind == "local":
        return c * eta
    chi = quality.chi(params, tokens, c, mult, asm)
    return c * eta * chi
