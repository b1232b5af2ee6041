"""Transformer accounting: architecture spec, exact parameter counts, FLOPs per token (in every
convention of shared/reference/measured_runs.csv), and activation memory.

Parameter counts follow the architecture exactly; for a GPT with tied embeddings, learned positions,
LayerNorm and biases this is the familiar l·(12h² + 13h) + V·h + s·h + 2h (Narayanan et al. 2021 eq. 1
without the approximation). Variants: grouped-query attention (kv_heads < heads), SwiGLU (three FFN
matrices, no biases), RMSNorm, untied output embeddings, rotary/ALiBi positions (no parameters), MoE
(experts, top-k, shared experts, expert FFN size, leading dense layers), DeepSeek's multi-head latent
attention (MLA).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dtsim.errors import ScenarioError, validation_problems


class MoE(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    experts: int = Field(ge=1, le=100_000, description="Routed experts per MoE layer.")
    top_k: int = Field(ge=1, le=1000, description="Routed experts per token.")
    shared_experts: int = Field(0, ge=0, le=1000, description="Experts every token goes through.")
    expert_ffn: int | None = Field(None, ge=1, le=10_000_000, description="Expert FFN size (default: ffn).")
    dense_layers: int = Field(0, ge=0, description="Leading layers with a dense FFN instead of experts.")


class MLA(BaseModel):
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank query and joint key-value projections."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    q_lora_rank: int = Field(ge=1)
    kv_lora_rank: int = Field(ge=1)
    qk_nope_head_dim: int = Field(ge=1)
    qk_rope_head_dim: int = Field(ge=0)
    v_head_dim: int = Field(ge=1)


class Architecture(BaseModel):
    """A decoder-only transformer. Defaults are GPT-2/3's choices."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = "custom"
    hidden: int = Field(ge=1, le=1_000_000, description="Model width h.")
    layers: int = Field(ge=1, le=100_000, description="Transformer blocks l.")
    heads: int = Field(ge=1, le=100_000, description="Attention heads a.")
    kv_heads: int | None = Field(None, ge=1, description="Key/value heads (GQA/MQA); default: heads.")
    head_dim: int | None = Field(None, ge=1, description="Per-head size; default: hidden / heads.")
    ffn: int | None = Field(None, ge=1, description="FFN size; default 4·hidden.")
    ffn_type: Literal["gelu", "swiglu"] = "gelu"
    vocab: int = Field(ge=1, le=100_000_000)
    seq_len: int = Field(ge=1, le=100_000_000)
    tied_embeddings: bool = True
    positions: Literal["learned", "rotary", "alibi", "none"] = "learned"
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    bias: bool = True
    embedding_norm: bool = Field(False, description="A norm right after the embedding (BLOOM).")
    dropout: bool = Field(
        True,
        description="Dropout on the attention probabilities and on the attention and FFN outputs "
        "(Megatron-LM's default, 0.1): its masks are stored activations (Korthikanti et al. 2022 §4.1). "
        "false: trained without dropout (MPT, Llama).",
    )
    attention: Literal["standard", "mla"] = "standard"
    causal: bool = Field(
        True,
        description="Causal attention mask: each query attends to earlier keys only, and FlashAttention "
        "skips the masked half of the scores. false: every query attends to every key (bidirectional "
        "attention, or a kernel called with causal=False), twice the score and context work.",
    )
    mla: MLA | None = None
    moe: MoE | None = None
    published_params_b: float | None = None
    published_active_params_b: float | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Architecture:
        problems = []
        kv = self.kv_heads or self.heads
        if self.heads % kv:
            problems.append(("kv_heads", kv, f"must divide heads = {self.heads}"))
        if self.head_dim is None and self.hidden % self.heads:
            problems.append(("heads", self.heads, f"must divide hidden = {self.hidden} (or give head_dim)"))
        if self.attention == "mla" and self.mla is None:
            problems.append(("mla", None, "required when attention is mla"))
        if self.moe is not None:
            if self.moe.top_k > self.moe.experts:
                problems.append(("moe.top_k", self.moe.top_k, f"must be ≤ moe.experts = {self.moe.experts}"))
            if self.moe.dense_layers > self.layers:
                problems.append(
                    ("moe.dense_layers", self.moe.dense_layers, f"must be ≤ layers = {self.layers}")
                )
        if problems:
            raise ScenarioError(problems)
        return self

    # --- derived shapes ------------------------------------------------------------------------------
    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def n_kv(self) -> int:
        return self.kv_heads or self.heads

    @property
    def ffn_size(self) -> int:
        return self.ffn or 4 * self.hidden

    @property
    def ffn_matrices(self) -> int:
        return 3 if self.ffn_type == "swiglu" else 2

    @property
    def moe_layers(self) -> int:
        return 0 if self.moe is None else self.layers - self.moe.dense_layers


@dataclass(frozen=True)
class ParamCount:
    """Parameters by part. `total` counts every weight; `active` those one token uses (MoE: top-k
    routed plus shared experts); `matmul_active` those in matrix multiplications per token (the 6P of
    training FLOPs: no embedding lookup, no norms or biases, but the output projection)."""

    embedding: int
    positions: int
    attention_per_layer: int
    norms_per_layer: int
    dense_ffn_per_layer: int
    moe_ffn_per_layer: int
    moe_active_ffn_per_layer: int
    router_per_layer: int
    final_norm: int
    output: int
    total: int
    active: int
    matmul_active: int


def _linear(n_in: int, n_out: int, bias: bool) -> int:
    return n_in * n_out + (n_out if bias else 0)


def attention_params(a: Architecture) -> tuple[int, int]:
    """(all attention parameters of one layer, those in matmuls)."""
    h = a.hidden
    if a.attention == "mla":
        m = a.mla
        assert m is not None
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        mats = (
            h * m.q_lora_rank
            + m.q_lora_rank * a.heads * qk
            + h * (m.kv_lora_rank + m.qk_rope_head_dim)
            + m.kv_lora_rank * a.heads * (m.qk_nope_head_dim + m.v_head_dim)
            + a.heads * m.v_head_dim * h
        )
        norms = m.q_lora_rank + m.kv_lora_rank  # the two latent RMSNorms
        return mats + norms, mats
    q = a.heads * a.d_head
    kv = 2 * a.n_kv * a.d_head
    mats = h * q + h * kv + q * h
    biases = (q + kv + h) if a.bias else 0
    return mats + biases, mats


def ffn_params(a: Architecture, size: int) -> tuple[int, int]:
    """(parameters of one FFN of this size, those in matmuls)."""
    h = a.hidden
    mats = a.ffn_matrices * h * size
    biases = ((size + h) if a.ffn_type == "gelu" else 0) if a.bias else 0
    return mats + biases, mats


def at_sequence(a: Architecture, seq_len: int) -> Architecture:
    """`a` as trained at `seq_len`: a learned position table has a row per position of the sequence
    trained on, so it grows past the architecture's own length (llm-foundry's benchmark parameter
    counts grow by max_seq_len × d_model with the sequence); other architectures are unchanged."""
    if a.positions == "learned" and seq_len > a.seq_len:
        return a.model_copy(update={"seq_len": seq_len})
    return a


@lru_cache(maxsize=1024)
def count_params(a: Architecture) -> ParamCount:
    """Parameters of an architecture (cached: an Architecture is frozen, so hashable)."""
    h = a.hidden
    norm = 2 * h if a.norm == "layernorm" else h  # LayerNorm has a gain and a bias, RMSNorm a gain
    emb = a.vocab * h
    pos = a.seq_len * h if a.positions == "learned" else 0
    attn_all, attn_mats = attention_params(a)
    dense_all, dense_mats = ffn_params(a, a.ffn_size)
    moe_all = moe_active = moe_mats_active = router = 0
    if a.moe is not None:
        e_all, e_mats = ffn_params(a, a.moe.expert_ffn or a.ffn_size)
        router = h * a.moe.experts
        moe_all = (a.moe.experts + a.moe.shared_experts) * e_all
        moe_active = (a.moe.top_k + a.moe.shared_experts) * e_all
        moe_mats_active = (a.moe.top_k + a.moe.shared_experts) * e_mats + router
    dense_layers = a.layers - a.moe_layers
    per_layer_norms = 2 * norm
    output = 0 if a.tied_embeddings else a.vocab * h
    extra_norm = norm if a.embedding_norm else 0
    common = emb + pos + extra_norm + norm + output + a.layers * (attn_all + per_layer_norms)
    total = common + dense_layers * dense_all + a.moe_layers * (moe_all + router)
    active = common + dense_layers * dense_all + a.moe_layers * (moe_active + router)
    matmul_active = (
        a.layers * attn_mats + dense_layers * dense_mats + a.moe_layers * moe_mats_active + a.vocab * h
    )
    return ParamCount(
        embedding=emb,
        positions=pos,
        attention_per_layer=attn_all,
        norms_per_layer=per_layer_norms,
        dense_ffn_per_layer=dense_all,
        moe_ffn_per_layer=moe_all,
        moe_active_ffn_per_layer=moe_active,
        router_per_layer=router,
        final_norm=norm + extra_norm,
        output=output,
        total=total,
        active=active,
        matmul_active=matmul_active,
    )


# --- FLOPs per token and the conventions of measured_runs.csv ------------------------------------------

RECOMPUTE = ("none", "selective", "full")


def attention_flops_per_token(a: Architecture, seq_len: int | None = None) -> float:
    """Attention score and context matmuls, forward + backward: 12·l·(a·d_head)·s per token.

    Convention: the full s×s score matrix is counted (not the causal half), as in Megatron and PaLM's
    MFU (Narayanan et al. 2021; Chowdhery et al. 2022 appendix B).
    """
    s = seq_len or a.seq_len
    width = (
        a.heads * (a.mla.qk_nope_head_dim + a.mla.qk_rope_head_dim + a.mla.v_head_dim) / 2
        if (a.attention == "mla" and a.mla is not None)
        else a.heads * a.d_head
    )
    return 12.0 * a.layers * width * s


def model_flops_per_token(a: Architecture, seq_len: int | None = None) -> float:
    """Model FLOPs (PaLM MFU convention): 6 · matmul parameters + attention, no recomputation."""
    return 6.0 * count_params(a).matmul_active + attention_flops_per_token(a, seq_len)


def hardware_flops_per_token(a: Architecture, recompute: str = "none", seq_len: int | None = None) -> float:
    """Hardware FLOPs: model FLOPs plus what recomputation repeats.

    selective (Korthikanti et al. 2022): the attention core is recomputed, +1/3 of its FLOPs;
    full: the whole forward pass again, the 6 → 8 factor (2P + 4·l·h·s more per token).
    The output layer is never recomputed.
    """
    base = model_flops_per_token(a, seq_len)
    attn = attention_flops_per_token(a, seq_len)
    if recompute == "none":
        return base
    if recompute == "selective":
        return base + attn / 3.0
    if recompute == "full":
        p = count_params(a)
        return base + 2.0 * (p.matmul_active - a.vocab * a.hidden) + attn / 3.0
    raise ValueError(recompute)


def megatron2021_flops_per_iteration(
    a: Architecture, batch_sequences: float, seq_len: int | None = None
) -> float:
    """Narayanan et al. 2021 eq. 3 (what MEG21 TFLOP/s count, with full recomputation):
    F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))."""
    s = seq_len or a.seq_len
    h, n_layers, v = a.hidden, a.layers, a.vocab
    return 96.0 * batch_sequences * s * n_layers * h * h * (1 + s / (6 * h) + v / (16 * n_layers * h))


def bloom_hardware_flops_per_token(a: Architecture) -> float:
    """BLOOM-style hardware TFLOPs: 8 FLOP per parameter per token (4 passes × 2, with recompute)."""
    return 8.0 * count_params(a).total


def mpt_flops_per_token(a: Architecture, recompute: bool, seq_len: int | None = None) -> float:
    """MosaicML llm-foundry convention: forward = 2·N + 4·l·h·s per token; MFU counts 3 × forward,
    HFU 4 × forward when activation checkpointing is on."""
    s = seq_len or a.seq_len
    forward = 2.0 * count_params(a).total + 4.0 * a.layers * a.hidden * s
    return (4.0 if recompute else 3.0) * forward


def maxtext_flops_per_token(a: Architecture, seq_len: int | None = None) -> float:
    """MaxText's convention from November 2023 (maxtext_utils.calculate_tflops_training_per_device,
    after PaLM appendix B): 6 × every parameter + 12·l·a·d_head·s halved "due to causality in
    attention", per token; recomputation never counted."""
    s = seq_len or a.seq_len
    return 6.0 * count_params(a).total + 6.0 * a.layers * a.heads * a.d_head * s


# --- activation memory (Korthikanti et al. 2022) ---------------------------------------------------------


def activation_bytes_per_layer(
    a: Architecture,
    micro_batch: int,
    tp: int,
    sequence_parallel: bool,
    recompute: str,
    seq_len: int | None = None,
    fp8: bool | Any = False,
    flash: bool | Any = True,
):
    """Bytes of activations one transformer layer stores for one micro-batch on one GPU
    (Korthikanti et al. 2022, §4, 16-bit activations):

    no parallelism:          s·b·h·(34 + 5·a·s/h)
    tensor parallel t:       s·b·h·(10 + 24/t + 5·a·s/(h·t))
    tensor + sequence par.:  s·b·h/t·(34 + 5·a·s/h)
    selective recompute drops the 5·a·s/h attention term; full recompute keeps only the layer input
    (2·s·b·h, divided by t with sequence parallelism).

    Without dropout (`a.dropout` false) the two 1-byte masks of the attention and FFN output dropouts
    (s·b·h each, replicated across TP: 34 → 32, 10 → 8) and the attention-probability dropout's mask
    and output (a·s²·b and 2·a·s²·b: 5 → 2 in the attention term) are never stored (§4.1's
    itemisation of the 34 and the 5).

    FP8 (`fp8`, Transformer Engine): a linear layer keeps its input for the weight-gradient GEMM as the
    FP8 tensor it cast, one byte an element, not the 16-bit one (transformer_engine/pytorch/module/
    linear.py `saved_inputmat`, layernorm_linear.py `ln_out` cast to FP8, from v1.x to today). Of
    §4.1's items that is the QKV and first FFN inputs (2·s·b·h → s·b·h each, replicated across TP
    without sequence parallelism) and the second FFN's input, the activation output (8·s·b·h/t →
    4·s·b·h/t); the attention output, the output projection's input, is kept in FP8 too, and under
    FlashAttention (`flash`) also in 16 bits, as the kernel's backward needs it (2·s·b·h/t → 3 with
    FlashAttention, → 1 without). The layer input under full recomputation stays 16-bit."""
    import numpy as np

    s = seq_len or a.seq_len
    h = a.hidden
    sbh = s * np.asarray(micro_batch, dtype=float) * h
    tp = np.asarray(tp, dtype=float)
    masks = 2.0 if a.dropout else 0.0
    attn_term = (5.0 if a.dropout else 2.0) * a.heads * s / h
    sp = np.asarray(sequence_parallel, dtype=bool)
    if recompute == "full":
        return np.where(sp, 2.0 * sbh / tp, 2.0 * sbh)
    core = np.where(sp, sbh / tp * (32.0 + masks), sbh * (8.0 + masks + 24.0 / tp))
    # FP8-kept linear inputs: QKV and FFN-1 inputs (replicated without SP) −2, FFN-2 input −4, the
    # attention output +1 with FlashAttention (its 16-bit copy stays) or −1 without
    sharded_saving = 4.0 + np.where(np.asarray(flash, dtype=bool), -1.0, 1.0)
    saving = np.where(sp, sbh / tp * (2.0 + sharded_saving), sbh * 2.0 + sbh / tp * sharded_saving)
    core = core - np.where(np.asarray(fp8, dtype=bool), saving, 0.0)
    if recompute == "selective":
        return core
    return core + sbh * attn_term / tp


@cache
def architectures() -> dict[str, Architecture]:
    from dtsim.catalog import load_table

    return {k: Architecture(**v) for k, v in load_table("architectures.yaml").items()}


def get_architecture(name_or_fields: str | dict[str, Any]) -> Architecture:
    """A catalog architecture by id, or an Architecture from fields (with field-named errors)."""
    from pydantic import ValidationError

    if isinstance(name_or_fields, str):
        key = name_or_fields.strip().lower()
        catalog = architectures()
        if key not in catalog:
            import difflib

            close = difflib.get_close_matches(key, list(catalog), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ScenarioError(
                [("model", name_or_fields, f"unknown model{hint}; known: {', '.join(catalog)}")]
            )
        return catalog[key]
    try:
        return Architecture(**name_or_fields)
    except ScenarioError:
        raise
    except ValidationError as exc:
        raise ScenarioError(validation_problems(exc, name_or_fields)) from None


ArchitectureLike = Annotated[str | Architecture, "a catalog id or an Architecture"]
