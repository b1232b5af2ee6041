"""Search spaces from option values: the rules for which inner steps, group sizes, compressions and
node lists a target search or a governance analysis may range over (shared by the CLI and the API)."""

from __future__ import annotations

from typing import Any

from dtsim import catalog
from dtsim.analysis.governance import Cap
from dtsim.analysis.search import NodeSpec, Space, check_max_nodes, node_count_grid
from dtsim.errors import ScenarioError


def parse_values(name: str, text: str | None, default: tuple) -> tuple:
    """A comma-separated list of numbers (or `auto`, `auto-quality`); `default` when not given."""
    if text is None:
        return default
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ScenarioError([(name, text, "empty value in the list")])
        if part in ("auto", "auto-quality"):
            out.append(part)
            continue
        try:
            out.append(float(part))
        except ValueError:
            raise ScenarioError([(name, text, f"{part!r} is not a number")]) from None
    return tuple(out)


def space_from_options(
    nodes: list[str] | None,
    max_nodes: int,
    compression: str | None,
    inner_steps: str | None,
    group_sizes: str | None,
    fractions: str | None,
    pipeline_multiples: str | None,
    activation_compression: str | None,
    params_b: float | None,
    precision: str,
):
    """The search space of `dtsim target`/`governance` from comma-separated option values; a value not
    given keeps `Space`'s default."""
    check_max_nodes(max_nodes)  # before the node presets are read
    ids = nodes or list(catalog.nodes())
    specs = [NodeSpec.from_preset(i, precision) for i in ids]
    d = Space(nodes=specs)
    steps = parse_values("--inner-steps", inner_steps, tuple(d.inner_steps))
    for h in steps:
        # bounds before int(): int() of inf or NaN raises (issue 15 reproducers)
        if h != "auto" and not (isinstance(h, int | float) and 1 <= h <= 100000 and h == int(h)):
            raise ScenarioError([("--inner-steps", inner_steps, "integers 1–100000 or auto")])
    groups = parse_values("--group-sizes", group_sizes, tuple(d.group_sizes))
    for g in groups:
        if not (isinstance(g, float | int) and (g == 0 or 2 <= g <= 100000) and g == int(g)):
            raise ScenarioError(
                [("--group-sizes", group_sizes, "integers: 0 (flat) or 2–100000 nodes per group")]
            )
    return Space(
        nodes=specs,
        node_counts=node_count_grid(max_nodes),
        fractions=parse_values("--fractions", fractions, tuple(d.fractions)),
        pipeline_multiples=parse_values(
            "--pipeline-multiples", pipeline_multiples, tuple(d.pipeline_multiples)
        ),
        inner_steps=tuple(h if h == "auto" else int(h) for h in steps),
        compressions=parse_values("--compression", compression, tuple(d.compressions)),
        group_sizes=tuple(int(g) for g in groups),
        activation_compressions=parse_values(
            "--activation-compression", activation_compression, tuple(d.activation_compressions)
        ),
        params_b=params_b,
    )


def caps_from_options(compute: str, memory: str | None, base_compute: float | None) -> list[Cap]:
    """Governance caps from `--compute-cap` (H100-equivalents per node, `none` for no compute cap) and
    `--memory-cap` (GB per node, at the compute cap `base_compute`)."""
    caps = []

    def cap(flag: str, text: Any, **kw: float | None) -> Cap:
        try:
            return Cap(**kw)
        except ScenarioError as exc:  # named as the flag the value came from
            raise ScenarioError([(flag, text, m) for _f, _v, m in exc.problems]) from None

    if base_compute is not None:  # checked whether or not memory caps use it (inf passed with none)
        cap("--base-compute-cap", base_compute, h100_equivalents=base_compute)
    for v in parse_values("--compute-cap", compute, ()) if compute.strip().lower() != "none" else ():
        caps.append(cap("--compute-cap", compute, h100_equivalents=float(v)))
    if memory and memory.strip().lower() != "none":
        for v in parse_values("--memory-cap", memory, ()):
            cap("--memory-cap", memory, memory_gb=float(v))  # the memory first, then the compute beside it
            caps.append(
                cap("--base-compute-cap", base_compute, h100_equivalents=base_compute, memory_gb=float(v))
            )
    if not caps:
        raise ScenarioError(
            [
                (
                    "--compute-cap",
                    compute,
                    "with --memory-cap none, give at least one compute cap (H100-equivalents)",
                )
            ]
        )
    return caps
