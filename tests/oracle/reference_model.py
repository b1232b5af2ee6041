"""A scalar re-implementation of the original MIRI web simulator's calculate(), with each dtsim
deviation switchable (test-only code).

With no fixes it must reproduce tests/data/miri/*.json (vendored from shared/reference) to 1e-9 (tests/test_oracle.py);
with every fix on it must equal dtsim's vectorized engine. Turning on one fix at a time shows exactly
which outputs each deviation changes, which is how the oracle test decides what it may compare.

The deviations (docs/deviations.md):
  D1  pipeline compute per micro-batch is T/(M·S), not T/M                      (original defect 1)
  D2  pure PP counts whole pipelines; fewer nodes than stages is infeasible       (defect 2)
  D3  hierarchical groups are whole (G = ⌊N/N_group⌋), else fall back to flat     (defect 3)
  D4  regional EP pays the regional RTT with or without the hierarchy            (defect 4)
  D5  χ uses active parameters for the loss of an MoE model                       (defect 5)
  D8a pipeline hand-offs run at min(upload, download)                             (defect 8)
  D8b the sync payload is the parameters a node holds (its expert shard)          (defect 8)
  D9  straggler factors are 1 for n ≤ 1 (never a speed-up)                        (defect 9)
  M1  in PP-group DiLoCo each stage node syncs only its 1/S of the model          (modelling choice)
  M2  pure PP has no DiLoCo loop: H_eff = 1 and one replica                       (modelling choice)
  M3  the MoE hidden-size heuristic uses active parameters                        (modelling choice)
  M4  hierarchical pipelines use regional links only if a group holds S stages   (modelling choice)
  M5  PP-group DiLoCo with the hierarchy has no regional tier, so H_eff = H       (modelling choice)
  M6  expert parallelism's all-to-all buffers count in a node's memory           (issue 16)
"""

from __future__ import annotations

import itertools
import math

ALL_FIXES = frozenset({"D1", "D2", "D3", "D4", "D5", "D8a", "D8b", "D9", "M1", "M2", "M3", "M4", "M5", "M6"})
NAN = float("nan")

CQ = {  # compression quality, 'expected' scenario (the web app's only table)
    True: {1: 1.0, 4: 1.0, 16: 1.0, 100: 0.99, 150: 0.99, 500: 0.96},
    False: {1: 1.0, 4: 1.0, 16: 0.99, 100: 0.98, 150: 0.96, 500: 0.95},
}
AQ = {1: 1.0, 2: 1.0, 4: 0.995, 10: 0.98}


def _interp(table, r):
    ks = sorted(table)
    if r <= ks[0]:
        return table[ks[0]]
    if r >= ks[-1]:
        return table[ks[-1]]
    for a, b in itertools.pairwise(ks):
        if a <= r <= b:
            t = (math.log(r) - math.log(a)) / (math.log(b) - math.log(a))
            return table[a] + t * (table[b] - table[a])
    raise AssertionError


def _straggler(n, strategy, fixes=frozenset()):
    if "D9" in fixes and n <= 1:
        n = 1
    base = 1 + 0.05 * math.log2(n) if n > 0 else NAN
    if strategy == "threshold":
        return 1.0
    if strategy == "redundancy":
        return 1 + 0.3 * (base - 1)
    return base


def _loss(n, d):
    return 1.8172 + 482.01 * n**-0.3478 + 2085.43 * d**-0.3658


def _chi(n, d, c, mult):
    target = _loss(n, d) * mult
    lo, hi = 1.0, 1e30
    for _ in range(
        120
    ):  # bisection in log space (machine precision after ~70): independent of dtsim's Newton
        mid = math.sqrt(lo * hi)
        if _loss(mid, 25.6 * mid) > target:
            lo = mid
        else:
            hi = mid
    n_star = math.sqrt(lo * hi)
    return min(1.0, 153.6 * n_star * n_star / c)


def calc(i: dict, fixes: frozenset = frozenset()) -> dict:
    fx = fixes.__contains__
    p, d, moe, pa = i["parameters"], i["tokens"], i["isMoE"], i["activeParams"]
    prec = i["precision"]
    bpp = {"FP16": 16, "FP8": 14, "FP4": 13}[prec]
    bpv = {"FP16": 2, "FP8": 1, "FP4": 0.5}[prec]
    o: dict = {"bytesPerParam": bpp, "bytesPerValue": bpv}
    ep = i["expertParallelism"]
    expert = p - pa if moe else 0
    shared = pa if moe else p
    epd = (
        i["numNodes"] if (moe and ep == "global") else i["nodesPerGroup"] if (moe and ep == "regional") else 1
    )
    o.update(expertParams=expert, sharedParams=shared, epDegree=epd)
    held = shared + expert / epd
    mem = held * bpp
    if fx("M6") and moe and ep != "none":  # dispatch + combine, send + receive: 4 · tokens · k · cf · h
        hidden = 0.03 * math.sqrt(pa if fx("M3") else p)
        mem += 4 * (i["localBatch"] / i["microBatches"]) * 2 * 1.25 * hidden * bpv
    vram = i["vramPerNode"] * 1e9
    sharded = mem > vram
    stages = math.ceil(mem / vram) if sharded else 1
    o.update(perNodeParams=held, memoryBytes=mem, isSharded=sharded, ppStages=stages)
    strat = i["stragglerStrategy"]
    n = i["numNodes"]
    neff = n / 1.1 if strat == "redundancy" else n
    cp = pa if moe else p
    b = i["localBatch"]
    fps = 6 * cp * b
    ncp = i["pflopsPerNode"] * 1e15 * i["mfu"]
    o.update(effectiveNodes=neff, computeParams=cp, flopsPerStep=fps, nodeComputePower=ncp)
    hier = i["useHierarchy"]
    lat, rlat = i["latencyMs"] / 1000, i["regionalLatency"] / 1000
    epl = 0.0
    if moe and ep == "global":
        epl = 2 * lat * i["moeLayers"]
    elif moe and ep == "regional" and (hier or fx("D4")):
        epl = 2 * rlat * i["moeLayers"]
    t = fps / ncp + epl
    o.update(epLatencySec=epl, computeTimePerStep=t)
    h, hr = i["innerSteps"], i["regionalSteps"]
    heff = h * math.sqrt(hr) if hier else h
    alpha = 0.08 / (1 + math.log10(p / 1e9) / 5)
    pen = 1.15 if strat == "threshold" else 1
    eta_c = _interp(CQ[i["errorFeedback"]], i["compression"])
    up, dn, rbw = i["bandwidthUpMbps"] * 1e6, i["bandwidthDownMbps"] * 1e6, i["regionalBandwidth"] * 1e6
    sync_params = held if fx("D8b") else p
    m = i["microBatches"]
    comb = max if i["streamingEnabled"] else (lambda x, y: x + y)
    glob = reg = block = latpen = 0.0
    ngroups, ppg = 0, False
    replicas = neff
    if not sharded:
        payload = sync_params * bpv * 8 / i["compression"]
        glob = payload / up + payload / dn + lat
        use_hier = hier
        if hier and fx("D3"):
            groups = math.floor(n / i["nodesPerGroup"])
            use_hier = groups >= 2
        if use_hier:
            mode = "hierarchical-diloco"
            if fx("D3"):
                group_size = math.ceil(n / groups)
            else:
                groups, group_size = neff / i["nodesPerGroup"], i["nodesPerGroup"]
            glob *= _straggler(groups, strat, fixes)
            reg = (2 * payload / rbw + rlat) * _straggler(group_size, strat, fixes)
            rc = comb(h * t, reg)
            gc = comb(hr * rc, glob)
            total = (d / (b * neff)) / (h * hr) * gc
            block = h * hr * t
        else:
            mode = "flat-diloco"
            heff = h
            glob *= _straggler(neff, strat, fixes)
            block = h * t
            total = (d / (b * neff)) / h * comb(block, glob)
    else:
        hidden = 0.03 * math.sqrt(pa if (moe and fx("M3")) else p)
        act = b * hidden * bpv * 8 / i["ppCompression"]
        ngroups = math.floor(neff / stages)
        pp_regional = hier and (stages <= i["nodesPerGroup"] if fx("M4") else True)
        pbw = rbw if pp_regional else (min(up, dn) if fx("D8a") else up)
        plat = rlat if pp_regional else lat
        cpm = 2 * act / m / pbw
        tmc = t / m / (stages if fx("D1") else 1)
        slots = m + stages - 1
        fs = _straggler(stages, strat, fixes)
        if ngroups >= 2:
            ppg = True
            mode = "pp-group-diloco"
            if hier and fx("M5"):
                heff = h
            step = slots * (tmc + (cpm + plat) * fs)
            payload = (sync_params / (stages if fx("M1") else 1)) * bpv * 8 / i["compression"]
            glob = (payload / up + payload / dn + lat) * _straggler(ngroups, strat, fixes)
            block = h * step
            total = d / (b * ngroups * h) * comb(block, glob)
            replicas = ngroups
        else:
            mode = "pp-over-wan"
            glob = slots * cpm * fs
            latpen = slots * plat * fs
            block = slots * tmc
            pipelines = (1 if ngroups >= 1 else NAN) if fx("D2") else max(1, neff / stages)
            total = d / (b * pipelines) * (block + glob + latpen)
            ngroups = 1 if ngroups >= 1 else 0
            if fx("M2"):
                heff, replicas = 1, 1
            if fx("D2") and ngroups == 0:
                mode = "infeasible"
                total = heff = replicas = glob = latpen = block = reg = NAN
    eta_h = max(0.4, (1 - alpha * math.log10(heff)) / pen) if heff == heff else NAN
    o.update(effectiveH=heff, baseAlpha=alpha, strategyPenalty=pen, etaH=eta_h, etaCompression=eta_c)
    o.update(
        totalTimeSeconds=total,
        mode=mode,
        globalCommSec=glob,
        regionalCommSec=reg,
        computeBlockSec=block,
        latencyPenaltySec=latpen,
        numPPGroupsForReplica=ngroups,
        replicaCount=replicas,
    )
    beta = 1.0923 * p**-0.2342
    rlm = replicas**beta if replicas > 1 else (1.0 if replicas == replicas else NAN)
    ae = eta_h * eta_c
    eta_a = _interp(AQ, i["ppCompression"]) ** (2 * (stages - 1)) if sharded else 1.0
    te = ae * eta_a
    o.update(replicaLossMult=rlm, algorithmicEfficiency=ae, etaActivation=eta_a, totalEfficiency=te)
    o.update(totalTimeDays=total / 86400, effectiveDays=total / 86400 / te, effectiveSeconds=total / te)
    theo = 6 * cp * d
    hw = n * i["pflopsPerNode"] * 1e15 * (total / te)
    o.update(theoreticalFlops=theo, hardwareMaxFlops=hw, globalMfu=theo / hw, globalHfu=theo / hw / 0.8)
    chi = _chi(pa if (moe and fx("D5")) else p, d, theo, rlm) if rlm == rlm else NAN
    o.update(chi=chi, cQuality=theo * te * chi)
    g = i["hwGrowth"] + i["swGrowth"] + i["investGrowth"]
    o.update(combinedGrowth=g, computedMaxDays=365 / (g * math.log(10)))
    o["maxDays"] = i["manualMaxDaysValue"] if i["manualMaxDays"] else o["computedMaxDays"]
    for name, bytes_ in (("FP16", 16), ("FP8", 14), ("FP4", 13)):
        o["maxParams" + name] = vram / bytes_
    o.update(numPPGroups=ngroups, ppGroupMode=ppg)
    o["epReducedMemory"] = bool(moe and ep != "none" and not sharded and p * bpp > vram)
    return o


ORIGINAL_MODE = {
    "Data Parallel (DiLoCo)": "flat-diloco",
    "MoE": "flat-diloco",
    "Hierarchical DiLoCo": "hierarchical-diloco",
    "Hierarchical MoE": "hierarchical-diloco",
}


def original_mode_id(label: str) -> str:
    if label in ORIGINAL_MODE:
        return ORIGINAL_MODE[label]
    if label.startswith("PP-Group DiLoCo"):
        return "pp-group-diloco"
    if label.startswith("PP over WAN"):
        return "pp-over-wan"
    raise ValueError(label)
