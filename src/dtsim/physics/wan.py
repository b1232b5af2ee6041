"""Wide-area links as a decentralized run meets them: the round-trip time between two places, and what
one TCP flow can carry over a long, lossy path.

- RTT from geography: great-circle distance × a route-inflation factor, at the speed of light in fiber
  (Bozkurt et al. 2018, "Dissecting Latency in the Internet's Fiber Infrastructure", arXiv:1811.10737:
  "multiply line-of-sight distance by 2.1, then divide by the speed of light in fiber").
- A flow's window limit: at most one receive window per round trip (the bandwidth-delay product).
- Its loss limit: MSS / RTT · C / √p (Mathis, Semke, Mahdavi & Ott 1997, "The Macroscopic Behavior of the
  TCP Congestion Avoidance Algorithm", CCR 27(3), eq. 3, C = √(3/2)).

A link carries min(line rate, streams × per-flow limit): several parallel flows (DiLoCo implementations
open one per peer or per bucket) multiply the per-flow ceiling until the line rate binds.
"""

from __future__ import annotations

import numpy as np

EARTH_RADIUS_M = 6_371_008.8  # mean Earth radius (IUGG), the usual haversine constant
SPEED_OF_LIGHT_M_S = 299_792_458.0  # exact, by definition of the metre


def great_circle_m(lat1, lon1, lat2, lon2):
    """Haversine distance in metres between points given in degrees (spherical Earth, mean radius)."""
    p1, p2 = np.radians(lat1), np.radians(lat2)
    dp, dl = p2 - p1, np.radians(np.asarray(lon2) - np.asarray(lon1))
    h = np.sin(dp / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    return 2.0 * EARTH_RADIUS_M * np.arcsin(np.minimum(1.0, np.sqrt(h)))


def fiber_rtt_s(route_m, group_index):
    """Round trip over `route_m` of fiber: 2 · route / (c / n_fiber), n_fiber the fiber's group index."""
    return 2.0 * np.asarray(route_m, dtype=float) / (SPEED_OF_LIGHT_M_S / group_index)


def geographic_rtt_s(distance_m, asm):
    """Round trip over fiber along an inflated route: 2 · d · inflation / (c / n_fiber) (Bozkurt et al.
    2018's rule of thumb; n_fiber the fiber's group index). Two places in one region are
    `intra_region_rtt_ms` apart at least (switching and metro fiber)."""
    rtt = fiber_rtt_s(np.asarray(distance_m, dtype=float) * asm.route_inflation, asm.fiber_group_index)
    return np.maximum(rtt, asm.intra_region_rtt_ms * 1e-3)


def window_limit_bps(rtt_s, window_bytes):
    """One TCP flow's ceiling from its receive window: window / RTT (bits/s; unbounded at RTT 0)."""
    rtt = np.asarray(rtt_s, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(rtt > 0, 8.0 * window_bytes / np.where(rtt > 0, rtt, 1.0), np.inf)


def mathis_limit_bps(rtt_s, loss_rate, mss_bytes, constant):
    """One TCP flow's ceiling under random loss p: MSS/RTT · C/√p (Mathis et al. 1997, eq. 3);
    unbounded without loss or at RTT 0."""
    rtt = np.asarray(rtt_s, dtype=float)
    p = np.asarray(loss_rate, dtype=float)
    ok = (rtt > 0) & (p > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        limit = 8.0 * mss_bytes * constant / (np.where(ok, rtt, 1.0) * np.sqrt(np.where(ok, p, 1.0)))
    return np.where(ok, limit, np.inf)


def link_rate_bps(line_bps, rtt_s, streams, loss_rate, asm):
    """What a link carries with `streams` parallel TCP flows: min(line rate, streams × the lower of the
    window and loss ceilings of one flow). `streams` NaN means the caller models no TCP limit (the
    link carries its line rate, as the MIRI simulator docs assume)."""
    per_flow = np.minimum(
        window_limit_bps(rtt_s, asm.linux_tcp_window_bytes),
        mathis_limit_bps(rtt_s, loss_rate, asm.tcp_mss_bytes, asm.mathis_constant),
    )
    s = np.asarray(streams, dtype=float)
    capped = np.minimum(line_bps, np.where(np.isnan(s), np.inf, s) * per_flow)
    return np.where(np.isnan(s), line_bps, capped)
