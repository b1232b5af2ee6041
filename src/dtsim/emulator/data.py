"""Seeded synthetic token streams with learnable structure (no downloads).

A fixed random "language": each token's successor is drawn from a sparse, Zipf-weighted set of
`fanout` candidates chosen per token by a generator seeded with `language_seed`. Every worker draws
its own stream (seeded by rank) from the same language, so data parallelism sees i.i.d. shards; the
loss of a perfect model is the chain's entropy rate, well below log(vocab), so training curves mean
something.
"""

from __future__ import annotations

import math

import torch


class BigramLanguage:
    def __init__(self, vocab: int, fanout: int = 16, zipf: float = 1.1, language_seed: int = 1234):
        g = torch.Generator().manual_seed(language_seed)
        self.vocab = vocab
        self.next_tokens = torch.randint(0, vocab, (vocab, fanout), generator=g)
        w = 1.0 / torch.arange(1, fanout + 1, dtype=torch.float64) ** zipf
        self.probs = (w / w.sum()).float()
        self.cum = torch.cumsum(self.probs, 0)

    @property
    def entropy_rate(self) -> float:
        p = self.probs.double()
        return float(-(p * p.log()).sum())

    def batch(self, batch: int, length: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets), each batch × length."""
        seq = torch.empty(batch, length + 1, dtype=torch.long)
        seq[:, 0] = torch.randint(0, self.vocab, (batch,), generator=g)
        u = torch.rand(batch, length, generator=g)
        choice = torch.searchsorted(self.cum, u.contiguous()).clamp_max(self.next_tokens.shape[1] - 1)
        for t in range(length):
            seq[:, t + 1] = self.next_tokens[seq[:, t], choice[:, t]]
        return seq[:, :-1], seq[:, 1:]


def uniform_loss(vocab: int) -> float:
    return math.log(vocab)
