"""A small GPT in PyTorch for the emulator: token and position embeddings, pre-norm transformer blocks
(causal self-attention, 4× GeLU MLP), final LayerNorm, output head tied to the token embedding —
GPT-2's layout, so `distilgpt2` (6 layers, width 768, vocabulary 50,257, context 1,024) has exactly
DistilGPT2's 81,912,576 parameters (Camilli 2025 §5.1.1)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch
from torch import nn

from dtsim.errors import ScenarioError


@dataclass(frozen=True)
class GPTConfig:
    layers: int
    width: int
    heads: int
    vocab: int
    context: int

    @property
    def params(self) -> int:
        h, v, s, n_layers = self.width, self.vocab, self.context, self.layers
        return n_layers * (12 * h * h + 13 * h) + v * h + s * h + 2 * h


PRESETS = {
    "nano": GPTConfig(layers=2, width=128, heads=4, vocab=512, context=128),  # ~0.48M, learns in seconds
    "tiny": GPTConfig(layers=4, width=128, heads=4, vocab=4096, context=128),  # ~1.3M
    "mini": GPTConfig(layers=4, width=256, heads=4, vocab=4096, context=128),  # ~4.2M
    "small": GPTConfig(layers=6, width=384, heads=6, vocab=8192, context=256),  # ~13.9M
    "medium": GPTConfig(layers=6, width=512, heads=8, vocab=8192, context=256),  # ~23.2M
    "distilgpt2": GPTConfig(layers=6, width=768, heads=12, vocab=50257, context=1024),  # 81,912,576
}


def config_for(spec: str) -> GPTConfig:
    """A preset name, or a parameter count like `20M` (6 layers, vocabulary 8,192, context 256, the
    width — a multiple of 64 — whose count is closest)."""
    key = str(spec).strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([mk]?)", key)
    if not m:
        raise ScenarioError([("model", spec, f"a preset ({', '.join(PRESETS)}) or a size like 20M")])
    target = float(m.group(1)) * {"m": 1e6, "k": 1e3, "": 1.0}[m.group(2)]
    if not 1e5 <= target <= 2e8:
        raise ScenarioError([("model", spec, "size must be between 0.1M and 200M parameters")])
    best = min(
        (GPTConfig(6, w, max(1, w // 64), 8192, 256) for w in range(64, 4097, 64)),
        key=lambda c: abs(c.params - target),
    )
    return best


class Block(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(c.width)
        self.attn = nn.Linear(c.width, 3 * c.width)
        self.proj = nn.Linear(c.width, c.width)
        self.ln2 = nn.LayerNorm(c.width)
        self.fc = nn.Linear(c.width, 4 * c.width)
        self.out = nn.Linear(4 * c.width, c.width)
        self.heads = c.heads

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.attn(self.ln1(x)).split(h, dim=2)
        q, k, v = (z.view(b, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, h))
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.config = c
        self.tok = nn.Embedding(c.vocab, c.width)
        self.pos = nn.Embedding(c.context, c.width)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.ln = nn.LayerNorm(c.width)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.ln(x) @ self.tok.weight.t()  # tied output head
        if targets is None:
            return logits
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def loss_floor(vocab: int) -> float:
    return math.log(vocab)
