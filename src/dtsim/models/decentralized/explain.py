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
            "MIRI simulator docs §1.4",
        ),
        Step(
            "β",
            "bytes of model state per parameter at this precision",
            f"{d['bytes_per_param']:g} B",
            "MIRI simulator docs §2.1",
        ),
        Step(
            "M_node",
            "(P_shared + P_experts / N_EP) · β [× (1 + outer state) kept on GPUs] [+ EP buffers]",
            f"({d['shared_parameters']:.4g} + {d['expert_parameters']:.4g} / {d['ep_degree']:g}) · {d['bytes_per_param']:g} "
            + (
                f"× {r.model_state_memory_gb * 1e9 / ((d['shared_parameters'] + d['expert_parameters'] / d['ep_degree']) * d['bytes_per_param']):.4g} "
                if abs(
                    r.model_state_memory_gb * 1e9
                    - (d["shared_parameters"] + d["expert_parameters"] / d["ep_degree"])
                    * d["bytes_per_param"]
                )
                > 1
                else ""
            )
            + (f"+ {d['ep_buffer_bytes'] / 1e9:,.4g} GB " if d["ep_buffer_bytes"] else "")
            + f"= {d['memory_bytes'] / 1e9:,.1f} GB",
            "MIRI simulator docs §2.4",
        ),
        Step("S", "⌈M_node / VRAM⌉ if M_node > VRAM else 1", f"{r.pp_stages}", "MIRI simulator docs §2.2"),
        Step("mode", r.mode_reason, r.mode_label, "MIRI simulator docs Appendix A"),
        Step(
            "T_comp",
            "6 · P_active · B / (peak · MFU) + T_EP",
            f"{d['step_flop']:.4g} / {d['node_sustained_flop_s']:.4g} + {d['ep_latency_s']:.4g} = {_s(r.compute_step_s)}",
            "MIRI simulator docs §1.2, §1.5",
        ),
    ]
    if r.mode in ("pp-group-diloco", "pp-over-wan"):
        steps += [
            Step(
                "h",
                "hidden size (0.03·√P_active unless given)",
                f"{d['hidden']:,.0f}",
                "MIRI simulator docs §3.3",
            ),
            Step(
                "A",
                "(B/M) · h · bytes · 8 / C_act, ×2 with backward gradients",
                f"{d['handoff_bits'] / 8e6:,.4g} MB per hand-off",
                "MIRI simulator docs §3.3, §10 item 6",
            ),
            Step(
                "T_PP",
                "(M + S − 1) · (T_comp/(M·S) + (A/BW + RTT) · f(S))",
                _s(r.inner_step_s),
                "MIRI simulator docs §3.3 (GPipe)",
            ),
        ]
    if r.mode != "pp-over-wan" and r.mode != "infeasible":
        steps.append(
            Step(
                "V",
                "payload per node per sync: params held · 8·bytes / C_r",
                f"{d['payload_bits'] / 8e9:,.4g} GB",
                "MIRI simulator docs §3.1, §8",
            )
        )
        steps.append(
            Step(
                "BW_up, BW_down, RTT",
                "the slowest node group's links (under the TCP window and loss limits), the farthest RTT",
                f"{d['up_bps'] / 1e6:,.4g} / {d['down_bps'] / 1e6:,.4g} Mbit/s, {d['latency_s'] * 1e3:,.4g} ms",
                "docs/model.md §8a; Mathis et al. 1997; Bozkurt et al. 2018",
            )
        )
        steps.append(
            Step(
                "T_sync",
                "(V/BW_up + V/BW_down + RTT + T_codec) · f(n)",
                _s(r.sync_s) + (f" (codec {_s(d['codec_s'])})" if d["codec_s"] else ""),
                "MIRI simulator docs §3.1, §5; physics/codec.py",
            )
        )
    if r.mode == "hierarchical-diloco":
        steps.append(
            Step(
                "T_regional",
                "(2V/BW_regional + RTT_regional) · f(N_group)",
                _s(r.regional_sync_s),
                "MIRI simulator docs §3.2",
            )
        )
    steps += [
        Step(
            "T_outer",
            "max(H·T, T_sync) streaming, else the sum (per tier when hierarchical)",
            _s(r.outer_step_s),
            "MIRI simulator docs §3.1–3.4",
        ),
    ]
    if r.recovery != "none":
        rejoin, restart = d["rejoin_goodput"], d["restart_goodput"]
        steps.append(
            Step(
                "goodput",
                "rejoin: E⌊X/T⌋ / E⌈(X + R)/T⌉, T the round since the tier's last sync; restart: "
                "τ / ((M + R)·(e^{(τ+δ)/M} − 1)) at Daly's τ; the larger (DiLoCo) — physics/failures.py",
                (
                    f"rejoin: T = {d['failure_round_s']:,.4g} s, R = {d['rejoin_s']:,.4g} s → {rejoin:.4g}; "
                    if rejoin is not None
                    else ""
                )
                + f"restart: δ = {d['checkpoint_s']:,.4g} s, τ = {d['checkpoint_interval_s']:,.4g} s, "
                f"M = {d['job_mtbf_s']:,.4g} s → {restart:.4g}; {r.recovery}, {r.goodput:.4g}",
                "Daly 2006 §3; renewal-reward (docs/model.md §8a)",
            )
        )
    steps += [
        Step(
            "T_wall",
            "D / (B · replicas · H) · T_outer / goodput",
            _s(r.wall_clock_days, "days")
            + (f" (goodput {r.goodput:.4g})" if r.goodput not in (None, 1.0) else ""),
            "MIRI simulator docs §3.1, §3.4; Daly 2006",
        ),
        Step(
            "η_H",
            "max(0.4, (1 − α·log10 H_eff) / P_strategy)",
            f"α = {d['alpha']:.4g}, H_eff = {d['h_eff'] if d['h_eff'] is not None else float('nan'):,.4g} → "
            f"{r.efficiency_h if r.efficiency_h is not None else float('nan'):.4f}",
            "MIRI simulator docs §4.1–4.5",
        ),
        Step(
            "η_C",
            "compression quality table (log-interpolated)",
            f"{r.efficiency_compression:.4f}",
            "reference README",
        ),
        Step("η_act", "q(C_act)^(2·(S−1))", f"{r.efficiency_activation:.4f}", "reference README"),
        Step(
            "η_stale",
            "staleness_efficiency_per_outer_step^(τ − 1), τ = outer_overlap_steps ≥ 1",
            f"{r.efficiency_staleness:.4f}",
            "Kale et al. 2025; Douillard et al. 2025",
        ),
        Step(
            "η",
            "η_H · η_C · η_act · η_stale",
            f"{r.efficiency if r.efficiency is not None else float('nan'):.4f}",
            "MIRI simulator docs §4.1",
        ),
        Step(
            "T_effective",
            "T_wall / η (time to equivalent quality)",
            _s(r.effective_days, "days"),
            "MIRI simulator docs §4.1, §6.1",
        ),
        Step(
            "global MFU",
            "6 · P_active · D / (N · peak · T_effective)",
            f"{r.global_mfu:.2%}" if r.global_mfu is not None else "—",
            "MIRI simulator docs §6.1",
        ),
        Step(
            "HFU",
            "MFU / hfu_mfu_ratio (model over hardware FLOPs, MFU/HFU)",
            f"{r.global_hfu:.2%}" if r.global_hfu is not None else "—",
            "MIRI simulator docs §6.2",
        ),
        Step(
            "χ",
            "compute-optimal FLOPs for this loss (× replica multiplier) / FLOPs spent",
            f"{r.chi:.4f}" if r.chi is not None else "—",
            "reference README (Chinchilla)",
        ),
        Step(
            "L_max",
            "1 / ((g_H + g_S + g_I) · ln 10) years",
            _s(r.max_days, "days"),
            "MIRI simulator docs §7.1",
        ),
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
