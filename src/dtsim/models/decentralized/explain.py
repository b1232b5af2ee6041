"""`--explain`: the derivation of a result, one formula per line with its numbers and its source."""

from __future__ import annotations

from dataclasses import dataclass

from dtsim.models.decentralized.result import Result


@dataclass(frozen=True)
class Step:
    quantity: str
    formula: str
    value: str
    source: str


def _s(x: float | None, unit: str = "s") -> str:
    if x is None:
        return "—"
    return f"{x:,.4g} {unit}".strip()


def derivation(r: Result) -> list[Step]:
    d = r.details
    sc = r.scenario or {}
    steps = [
        Step(
            "P_active",
            "compute parameters (active for MoE, MIRI simulator docs §1.4)",
            f"{d['compute_parameters']:.4g}",
            "000 §1.4",
        ),
        Step(
            "β",
            "bytes of model state per parameter at this precision",
            f"{d['bytes_per_param']:g} B",
            "000 §2.1",
        ),
        Step(
            "M_node",
            "(P_shared + P_experts / N_EP) · β",
            f"({d['shared_parameters']:.4g} + {d['expert_parameters']:.4g} / {d['ep_degree']:g}) · {d['bytes_per_param']:g} "
            f"= {d['memory_bytes'] / 1e9:,.1f} GB",
            "000 §2.4",
        ),
        Step("S", "⌈M_node / VRAM⌉ if M_node > VRAM else 1", f"{r.pp_stages}", "000 §2.2"),
        Step("mode", r.mode_reason, r.mode_label, "000 Appendix A"),
        Step(
            "T_comp",
            "6 · P_active · B / (peak · MFU) + T_EP",
            f"{d['step_flop']:.4g} / {d['node_sustained_flop_s']:.4g} + {d['ep_latency_s']:.4g} = {_s(r.compute_step_s)}",
            "000 §1.2, §1.5",
        ),
    ]
    if r.mode in ("pp-group-diloco", "pp-over-wan"):
        steps += [
            Step("h", "hidden size (0.03·√P_active unless given)", f"{d['hidden']:,.0f}", "000 §3.3"),
            Step(
                "A",
                "(B/M) · h · bytes · 8 / C_act, ×2 with backward gradients",
                f"{d['handoff_bits'] / 8e6:,.4g} MB per hand-off",
                "000 §3.3, §10 item 6",
            ),
            Step(
                "T_PP",
                "(M + S − 1) · (T_comp/(M·S) + (A/BW + RTT) · f(S))",
                _s(r.inner_step_s),
                "000 §3.3 (GPipe)",
            ),
        ]
    if r.mode != "pp-over-wan" and r.mode != "infeasible":
        steps.append(
            Step(
                "V",
                "payload per node per sync: params held · 8·bytes / C_r",
                f"{d['payload_bits'] / 8e9:,.4g} GB",
                "000 §3.1, §8",
            )
        )
        steps.append(Step("T_sync", "(V/BW_up + V/BW_down + RTT) · f(n)", _s(r.sync_s), "000 §3.1, §5"))
    if r.mode == "hierarchical-diloco":
        steps.append(
            Step(
                "T_regional",
                "(2V/BW_regional + RTT_regional) · f(N_group)",
                _s(r.regional_sync_s),
                "000 §3.2",
            )
        )
    steps += [
        Step(
            "T_outer",
            "max(H·T, T_sync) streaming, else the sum (per tier when hierarchical)",
            _s(r.outer_step_s),
            "000 §3.1–3.4",
        ),
        Step("T_wall", "D / (B · replicas · H) · T_outer", _s(r.wall_clock_days, "days"), "000 §3.1, §3.4"),
        Step(
            "η_H",
            "max(0.4, (1 − α·log10 H_eff) / P_strategy)",
            f"α = {d['alpha']:.4g}, H_eff = {d['h_eff'] if d['h_eff'] is not None else float('nan'):,.4g} → "
            f"{r.efficiency_h if r.efficiency_h is not None else float('nan'):.4f}",
            "000 §4.1–4.5",
        ),
        Step(
            "η_C",
            "compression quality table (log-interpolated)",
            f"{r.efficiency_compression:.4f}",
            "reference README",
        ),
        Step("η_act", "q(C_act)^(2·(S−1))", f"{r.efficiency_activation:.4f}", "reference README"),
        Step(
            "η",
            "η_H · η_C · η_act",
            f"{r.efficiency if r.efficiency is not None else float('nan'):.4f}",
            "000 §4.1",
        ),
        Step(
            "T_effective",
            "T_wall / η (time to equivalent quality)",
            _s(r.effective_days, "days"),
            "000 §4.1, §6.1",
        ),
        Step(
            "global MFU",
            "6 · P_active · D / (N · peak · T_effective)",
            f"{r.global_mfu:.2%}" if r.global_mfu is not None else "—",
            "000 §6.1",
        ),
        Step(
            "HFU",
            "MFU / (HFU/MFU ratio)",
            f"{r.global_hfu:.2%}" if r.global_hfu is not None else "—",
            "000 §6.2",
        ),
        Step(
            "χ",
            "compute-optimal FLOPs for this loss (× replica multiplier) / FLOPs spent",
            f"{r.chi:.4f}" if r.chi is not None else "—",
            "reference README (Chinchilla)",
        ),
        Step("L_max", "1 / ((g_H + g_S + g_I) · ln 10) years", _s(r.max_days, "days"), "000 §7.1"),
    ]
    if sc.get("gpu"):
        steps.append(
            Step(
                "cost",
                "N · GPUs/node · price",
                f"${r.cost_usd:,.0f}" if r.cost_usd else "—",
                "catalog/gpus.yaml",
            )
        )
    return steps
