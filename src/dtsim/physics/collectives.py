"""Communication primitives for wide-area links (seed 000 §3; reference README "asymmetric links").

The datacenter collectives (ring, tree, hierarchical all-reduce) join this module with the
datacenter model; the WAN exchange here is the parameter-server-style pattern the decentralized
simulator assumes: every node uploads its payload and downloads the aggregate.
"""

from __future__ import annotations

import numpy as np


def payload_bits(params, bytes_per_value, compression):
    """Bits one node sends per synchronization: P · 8·bytes_per_value / C_r (seed 000 §3.1, §8)."""
    return np.asarray(params, dtype=float) * (8.0 * bytes_per_value) / compression


def wan_exchange_time(bits, up_bps, down_bps, latency_s):
    """Upload the payload, download the aggregate, pay one round trip.

    T = V/BW_up + V/BW_down + RTT. With a symmetric link this is seed 000 §3.1's 2·V/BW + Latency;
    the asymmetric form is the original simulator's later model (shared/reference/README.md).
    """
    return bits / up_bps + bits / down_bps + latency_s


def point_to_point_time(bits, bandwidth_bps):
    """Serialization time of a point-to-point transfer: bits / bandwidth."""
    return np.asarray(bits, dtype=float) / bandwidth_bps
