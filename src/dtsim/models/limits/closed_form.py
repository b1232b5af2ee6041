"""Closed-form limits of Erdil & Schneider-Joseph 2024 §5 and appendix 8.3.

Units: C is arithmetic throughput in MAC/s, bandwidths in 16-bit words/s, t in seconds; results in
FLOP (2 FLOP per MAC). "Node as a GPU" (Table 2): the node's arithmetic, its unidirectional network
bandwidth to other nodes, its DRAM bandwidth (half the total, "unidirectional") and its SRAM (L2 +
register files + L1/shared memory of all its GPUs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dtsim.assumptions import Assumptions
from dtsim.models.limits.hardware import LimitsHardware, get
from dtsim.models.limits.search import SECONDS_PER_YEAR

_A = Assumptions()
WORD_BYTES = 2.0
B_PRIME_SRAM = (
    _A.limits_sram_nanobatch
)  # Erdil & Schneider-Joseph 2024 §5.1.2: tensor-core inputs ≥ 8, double buffered
SRAM_FIT_RATIO = _A.limits_sram_fit_ratio  # weights and gradients fit in SRAM when S/d′² ≥ 4


def d_prime(mac_per_s: float, net_words_per_s: float) -> float:
    """Eq. 16: the weight sub-matrix side at which TP all-reduces balance arithmetic, d′ = 4C/(3B)."""
    return 4.0 * mac_per_s / (3.0 * net_words_per_s)


def b_prime(mac_per_s: float, dram_words_per_s: float, sram_words: float, d: float) -> tuple[float, bool]:
    """Critical nano-batch: 16 if weights and their gradients fit in SRAM (S/d′² ≥ 4), else the DRAM
    balance C/B_DRAM (§5.1.2). Returns (b′, weights_in_sram)."""
    in_sram = sram_words / d**2 >= SRAM_FIT_RATIO
    return (float(B_PRIME_SRAM) if in_sram else mac_per_s / dram_words_per_s), in_sram


def t_critical(mac_per_s, d, b, batch_tokens=4e6, layers=100, months=3.0, sparsity=1.0) -> float:
    """Eq. 13 (FLOP): T = 2 · (1/(960·E)) · ((b/L) · C·t / (d′²·b′))²."""
    t = months / 12.0 * SECONDS_PER_YEAR
    return 2.0 / (960.0 * sparsity) * (batch_tokens / layers * mac_per_s * t / (d**2 * b)) ** 2


def t_critical_latency(t_latency=9e-6, batch_tokens=4e6, layers=100, months=3.0, sparsity=1.0) -> float:
    """Eq. 14/15 (FLOP): the latency-bounded utilization cliff, 2 · (1/(960·E)) · ((b/L)·t/t_L)²."""
    t = months / 12.0 * SECONDS_PER_YEAR
    return 2.0 / (960.0 * sparsity) * (batch_tokens / layers * t / t_latency) ** 2


def t_limit(t_latency=9e-6, batch_tokens=4e6, layers=100, months=3.0, sparsity=1.0) -> float:
    """Eq. 18 (FLOP): the absolute latency limit, 2 · (3/(320·E)) · ((b/L)·t/t_L)²."""
    t = months / 12.0 * SECONDS_PER_YEAR
    return 2.0 * 3.0 / (320.0 * sparsity) * (batch_tokens / layers * t / t_latency) ** 2


def params_at_limit(t_latency=9e-6, batch_tokens=4e6, layers=100, months=3.0) -> float:
    """Eq. 17: N_p = (b/L) · t / (80·t_L)."""
    t = months / 12.0 * SECONDS_PER_YEAR
    return batch_tokens / layers * t / (80.0 * t_latency)


def generalized(
    kind: str,
    alpha_b: float,
    alpha_l: float,
    b0=4e6,
    l0=100,
    t0=3e23,
    months=3.0,
    sparsity=1.0,
    t_latency=9e-6,
    mac_per_s=None,
    d=None,
    b=None,
) -> float:
    """Appendix 8.3: with b = b0·(T/T0)^α_b and L = L0·(T/T0)^α_L, α = α_b − α_L,
    T = [k·((b0/L0)·T0^-α·X)²]^(1/(1−2α)) with k = 1/(960E), X = C·t/(d′²b′) (critical) or
    k = 3/(320E), X = t/t_L (limit). Computed in MAC and returned in FLOP."""
    alpha = alpha_b - alpha_l
    if not alpha < 0.5:
        raise ValueError("alpha_b - alpha_l must be < 0.5 for a finite limit")
    t = months / 12.0 * SECONDS_PER_YEAR
    t0_mac = t0 / 2.0
    if kind == "critical":
        k, x = 1.0 / (960.0 * sparsity), mac_per_s * t / (d**2 * b)
    elif kind == "limit":
        k, x = 3.0 / (320.0 * sparsity), t / t_latency
    else:
        raise ValueError(kind)
    mac = (k * (b0 / l0 * t0_mac ** (-alpha) * x) ** 2) ** (1.0 / (1.0 - 2.0 * alpha))
    return 2.0 * mac


@dataclass(frozen=True)
class NodeSpecs:
    name: str
    mac_per_s: float
    net_words_per_s: float
    dram_words_per_s: float
    sram_words: float
    d_prime: float
    b_prime: float
    weights_in_sram: bool
    t_critical_flop: float

    def as_dict(self) -> dict:
        return asdict(self)


def node_specs(
    hw: LimitsHardware, gpus_per_node: int = 8, net_level: int | None = None, name=None, **kw
) -> NodeSpecs:
    """Table 2's row for a node of `hw` treated as one GPU; the network is the first level above the
    node (or `net_level`)."""
    m = hw.micro
    mac = gpus_per_node * hw.peak_flop_s / 2.0
    level = net_level if net_level is not None else min(1, hw.levels - 1)
    net = gpus_per_node * hw.bandwidth[level] / 2.0 / WORD_BYTES
    dram = gpus_per_node * m.hbm_bytes_per_s / 2.0 / WORD_BYTES
    l1 = m.l1_bytes_per_sm or 0.0
    # on-chip SRAM: L2, and per SM the register file, L1 / shared memory and (Blackwell) Tensor Memory
    regs = 4 * m.register_bytes_per_block + m.tensor_memory_bytes
    sram = gpus_per_node * (m.l2_bytes + m.num_sms * (regs + l1)) / WORD_BYTES
    d = d_prime(mac, net)
    b, in_sram = b_prime(mac, dram, sram, d)
    return NodeSpecs(name or hw.name, mac, net, dram, sram, d, b, in_sram, t_critical(mac, d, b, **kw))


def table2(**kw) -> list[NodeSpecs]:
    """Erdil & Schneider-Joseph 2024 Table 2: DGX-1, DGX A100, DGX H100, and DGX H100 in a SuperPOD (NVLink network)."""
    return [
        node_specs(get("v100-sxm"), name="DGX-1 (V100)", **kw),
        node_specs(get("a100-sxm"), name="DGX A100", **kw),
        node_specs(get("h100-sxm"), name="DGX H100", **kw),
        node_specs(get("h100-sxm-superpod"), name="DGX H100 in SuperPOD", net_level=1, **kw),
    ]
