"""The emulator's model shapes: GPT-2-style configurations, the presets and `--model 20M`-style sizes,
in plain Python (no torch), so `--model` is checked without the `emulator` extra. The model itself is
`emulator/model.py`."""

from __future__ import annotations

import re
from dataclasses import dataclass

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
