"""Generated documentation: `python -m dtsim.interfaces.docs` rewrites docs/assumptions.md from the table."""

from __future__ import annotations

import sys
from pathlib import Path

from dtsim.assumptions import distributions, table


def _value(v) -> str:
    if isinstance(v, dict):
        lines = []
        for key, sub in v.items():
            if isinstance(sub, dict):
                lines.append(f"{key}: " + "; ".join(f"{k} {sv}" for k, sv in sub.items()))
            else:
                lines.append(f"{key} {sub}")
        return "<br>".join(lines)
    return str(v)


def assumptions_markdown() -> str:
    out = [
        "# Assumptions",
        "",
        "Every modelling constant dtsim uses, generated from `src/dtsim/catalog/assumptions.yaml` by",
        "`python -m dtsim.interfaces.docs` (a test fails when this page is stale). Override any of them per scenario:",
        "`assumptions: {straggler_coefficient: 0.08}` in a scenario file, or",
        "`dtsim simulate --set assumptions.straggler_coefficient=0.08`. `range` is what an override may be.",
        "",
        "`uncertainty` is the value's distribution and its basis — what `simulate --uncertainty` and",
        "`dtsim sensitivity` draw for the assumptions the model reads, unless `--fixed-assumptions` or the",
        "scenario sets the value — or `fixed` with the reason the value is not uncertain (a definition, a",
        "count, a configuration the run chooses, or a fit whose parameters are correlated). A scenario may",
        "give its own: `--set assumptions.pue=1.1..1.3`.",
        "",
        "| name | value | unit | range | uncertainty | section | description | source |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    dists = distributions()
    for row in table():
        rng = "" if row.range is None else f"{row.range[0]:g} – {row.range[1]:g}"
        u = row.uncertainty
        unc = f"fixed: {u['fixed']}" if "fixed" in u else f"{dists[row.name].describe()}: {u['basis']}"
        out.append(
            f"| `{row.name}` | {_value(row.value)} | {row.unit} | {rng} | {unc} | {row.seed} | {row.description} | {row.source} |"
        )
    out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    from dtsim.textfiles import write_generated

    return write_generated(
        argv, "docs/assumptions.md (the assumptions table)", Path("docs/assumptions.md"), assumptions_markdown
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv))
