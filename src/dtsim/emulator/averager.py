"""Averaging a flat tensor across ranks with compression that really shrinks the bytes on the wire.

- none: fp32 all-reduce (ring: 2(N−1)/N·4 bytes per value sent per rank);
- fp16: cast, all-reduce in fp16, cast back (2(N−1)/N·2 bytes per value);
- int8: a quantized ring all-reduce, as INTELLECT-1's (PRIME's `ring_allreduce`, src/zeroband/C/csrc/
  collectives.cpp: send/recv around the ring, each hand-off quantized to 8 bits, summed in fp32), with
  its pipelining: each rank's chunk goes as INT8_PIPELINE = 2 pieces (PRIME's BUFFER_COUNT), each
  quantized with its own scale, and a piece's hand-off is posted before the one before it is waited
  for. (N − 1)·2 reduce-scatter hand-offs each send one piece's running sum (int8 values and one fp32
  scale in one message) to the next rank and add the piece received; the owner averages and quantizes
  its two pieces once; (N − 1)·2 all-gather hand-offs forward those messages: 2(N−1)/N·1 byte per
  value (+ one scale per message). Until 2026-11-26 each hand-off was one message each way: under gloo
  that took 1.6× the wire time of its bytes at 1 Gbit/s (two pieces: 1.06×) and 2× at 200 Mbit/s
  (two pieces: 1.45×, eight 1.08×), `benchmarks/gloo_exchange.py`; before that the ring was gloo's
  all-to-all and all-gather with the scales in collectives of their own;
- topk:R: each rank keeps its k = ⌈n/R⌉ largest-magnitude entries (error feedback keeps the rest for
  the next round) and all-gathers indices (int32) and values (fp32): (N−1)·8·k bytes per rank.
"""

from __future__ import annotations

import math
import time

import torch
import torch.distributed as dist

from dtsim.emulator.compress import INT8_PIPELINE as PIPELINE
from dtsim.emulator.compress import parse


def _quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of x → int8 rows and one fp32 scale per row (symmetric, max-abs)."""
    scale = x.abs().amax(dim=-1).clamp_min(1e-30) / 127.0
    q = torch.round(x / scale[..., None]).clamp_(-127, 127).to(torch.int8)
    return q, scale.float()


def _pack(x: torch.Tensor) -> torch.Tensor:
    """One ring message: x quantized to int8 with its fp32 scale's 4 bytes appended."""
    q, scale = _quantize(x[None, :])
    return torch.cat([q[0], scale.view(torch.int8)])


def _unpack(m: torch.Tensor) -> torch.Tensor:
    return m[:-4].float() * m[-4:].clone().view(torch.float32)  # a copy: the scale's bytes may sit unaligned


class Exchange:
    """One ring hand-off in flight: a posted send and receive; `wait()` returns when both are done."""

    def __init__(self, requests: list) -> None:
        self.requests = requests

    def wait(self) -> None:
        for r in self.requests:
            r.wait()


class DistOps:
    """The collectives an Averager calls, on torch.distributed's default process group; `post` posts a
    ring hand-off's send and receive together and returns them in flight (an Exchange)."""

    get_world_size = staticmethod(dist.get_world_size)
    get_rank = staticmethod(dist.get_rank)
    all_reduce = staticmethod(dist.all_reduce)
    all_gather = staticmethod(dist.all_gather)

    @staticmethod
    def post(send: torch.Tensor, recv: torch.Tensor, dst: int, src: int, tag: int) -> Exchange:
        return Exchange([dist.isend(send, dst, tag=tag), dist.irecv(recv, src, tag=tag)])


class LocalOps:
    """Stand-ins for the collectives an Averager calls, for `world` ranks: they make the copies a
    collective hands back (of this rank's own data: the peers' are not there, so int8's result is not
    an average; top-k's, with every rank holding the same vector, is) and send nothing: an Averager on these does one sync's local work exactly
    (codec passes, padding, casts, sums, concatenation) with no communication, so it can be timed."""

    def __init__(self, world: int):
        self.world = world
        self.first_collective_at: float | None = None  # perf_counter() when the first stand-in ran

    def _mark(self) -> None:
        if self.first_collective_at is None:
            self.first_collective_at = time.perf_counter()

    def get_world_size(self) -> int:
        return self.world

    def get_rank(self) -> int:
        return 0

    def post(self, send: torch.Tensor, recv: torch.Tensor, dst: int, src: int, tag: int) -> Exchange:
        self._mark()
        recv.copy_(send)
        return Exchange([])

    def all_reduce(self, x: torch.Tensor) -> None:
        self._mark()
        x.mul_(1.0)  # the reduction's one pass over the vector; no peers to add

    def all_gather(self, outs: list[torch.Tensor], t: torch.Tensor) -> None:
        self._mark()
        for o in outs:
            o.copy_(t)


class Averager:
    """Averages a flat fp32 tensor over the process group with the chosen compression. Keeps the
    error-feedback residual for top-k. `ops` replaces torch.distributed (LocalOps: time the local work)."""

    def __init__(self, spec: str, numel: int, ops=None):
        self.kind, self.ratio = parse(spec)
        self.numel = numel
        self.residual = torch.zeros(numel) if self.kind == "topk" else None
        self.ops = DistOps() if ops is None else ops

    def __call__(self, flat: torch.Tensor) -> torch.Tensor:
        ops = self.ops  # the process group, or LocalOps
        n = ops.get_world_size()
        x = flat.float()
        if n == 1:
            return x
        if self.kind == "none":
            ops.all_reduce(x)
            return x / n
        if self.kind == "fp16":
            h = x.half()
            ops.all_reduce(h)
            return h.float() / n
        if self.kind == "int8":
            return self._int8_ring(ops, n, x)
        # top-k with error feedback
        v = x + self.residual
        k = max(1, math.ceil(self.numel / self.ratio))
        idx = torch.topk(v.abs(), k, sorted=False).indices.to(torch.int32)
        vals = v[idx.long()]
        self.residual = v
        self.residual[idx.long()] = 0.0
        all_idx = [torch.empty_like(idx) for _ in range(n)]
        all_val = [torch.empty_like(vals) for _ in range(n)]
        ops.all_gather(all_idx, idx)
        ops.all_gather(all_val, vals)
        out = torch.zeros(self.numel)
        for i, vv in zip(all_idx, all_val, strict=True):
            out.index_add_(0, i.long(), vv)
        return out / n

    def _int8_ring(self, ops, n: int, x: torch.Tensor) -> torch.Tensor:
        b = PIPELINE
        m = n * b
        rank = ops.get_rank()
        nxt, prv = (rank + 1) % n, (rank - 1) % n
        chunk = math.ceil(self.numel / m)
        padded = torch.zeros(chunk * m)
        padded[: self.numel] = x
        parts = padded.view(m, chunk)  # running fp32 sums, chunk by chunk
        recv = [torch.empty(chunk + 4, dtype=torch.int8) for _ in range(b)]
        pending: list[Exchange | None] = [None] * b
        # reduce-scatter: at step s send chunk rank·b − s; the hand-off received b steps earlier is
        # that same chunk's partial sum from the previous rank, added before it is sent on
        for step in range(1, m + 1):
            c, slot = (rank * b - step) % m, step % b
            if pending[slot] is not None:
                pending[slot].wait()
                parts[c] += _unpack(recv[slot])
            if step <= (n - 1) * b:
                pending[slot] = ops.post(_pack(parts[c]), recv[slot], nxt, prv, step)
        # chunks rank·b … rank·b + b − 1 are fully summed here: averaged and quantized once, so every
        # rank ends with the same values
        own = {}
        for j in range(b):
            c = rank * b + j
            own[c] = _pack(parts[c] / n)
            parts[c] = _unpack(own[c])
        # all-gather: forward each message received, as it came
        pending = [None] * b
        for step in range(1, m + 1):
            c, slot = (rank * b + b - step) % m, step % b
            if pending[slot] is not None:
                pending[slot].wait()
                msg = recv[slot]
                parts[c] = _unpack(msg)
                recv[slot] = torch.empty(chunk + 4, dtype=torch.int8)  # msg is sent on
            else:
                msg = own[c]
            if step <= (n - 1) * b:
                pending[slot] = ops.post(msg, recv[slot], nxt, prv, m + step)
        return padded[: self.numel]
