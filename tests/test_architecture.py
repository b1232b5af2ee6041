"""The import boundaries of docs/architecture.md, checked over the import graph of src/dtsim.

Layers, lowest first; a module may import its own layer or a lower one, never a higher one (lazy
imports inside functions count too), and no package imports another package's private `_names`:

    errors, distributions, assumptions, catalog  →  hardware  →  physics  →  schema  →  models
        →  analysis, validation, emulator  →  interfaces

The top-level facade (dtsim/__init__.py, __main__.py) may import anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dtsim"
LAYERS = (
    ("errors", "textfiles", "distributions", "assumptions", "catalog"),
    ("hardware",),
    ("physics",),
    ("schema",),
    ("models",),
    ("analysis", "validation", "emulator"),
    ("interfaces",),
)
LAYER = {pkg: i for i, group in enumerate(LAYERS) for pkg in group}
FACADE = ("dtsim", "dtsim.__main__", "dtsim._version")


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names used from it) for every import in a module, lazy ones included,
    plus `module._name` attribute reads through a name an import bound to a dtsim module."""
    tree = ast.parse(source)
    found, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.append((node.lineno, a.name, []))
                if a.asname:
                    bound[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "src/dtsim uses absolute imports only"
            found.append((node.lineno, node.module or "", [a.name for a in node.names]))
            for a in node.names:  # `from dtsim import catalog` binds a module
                bound[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append((node.lineno, bound[node.value.id], [node.attr]))
    return found


def top_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "dtsim" else None


def violations(modules: dict[str, str]) -> list[str]:
    """Every upward import and every import of another package's private name, as readable lines."""
    out = []
    for name, source in sorted(modules.items()):
        if name in FACADE:
            continue
        here = top_package(name)
        if here not in LAYER:
            out.append(f"{name}: package {here!r} is in no layer of tests/test_architecture.py")
            continue
        for line, target, names in imports(source):
            there = top_package(target)
            if there is None:
                continue
            if there not in LAYER:
                out.append(f"{name}:{line} imports {target}, which is in no layer")
            elif LAYER[there] > LAYER[here]:
                out.append(f"{name}:{line} imports {target} (layer {there} is above {here})")
            if there != here:
                private = [n for n in names if n.startswith("_")]
                private += [p for p in target.split(".")[2:] if p.startswith("_") and p != "__init__"]
                if private:
                    out.append(f"{name}:{line} imports private {', '.join(private)} from {target}")
    return out


def package_modules() -> dict[str, str]:
    return {module_name(p): p.read_text("utf-8") for p in sorted(SRC.rglob("*.py"))}


def test_no_import_crosses_a_layer_upward_or_reaches_a_private_name():
    assert violations(package_modules()) == []


def test_the_check_catches_a_physics_module_importing_an_interface():
    modules = package_modules()
    before = set(violations(modules))
    modules["dtsim.physics.bad"] = "def f():\n    from dtsim.interfaces.cli.main import app\n    return app\n"
    assert sorted(set(violations(modules)) - before) == [
        "dtsim.physics.bad:2 imports dtsim.interfaces.cli.main (layer interfaces is above physics)"
    ]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from dtsim.catalog import _load\n", "imports private _load from dtsim.catalog"),
        ("import dtsim.schema.scenario\n", "imports dtsim.schema.scenario (layer schema is above physics)"),
        (
            "from dtsim import catalog\n\ncatalog._cache.clear()\n",
            "imports private _cache from dtsim.catalog",
        ),
        ("from dtsim.physics import memory\n", None),
        ("from dtsim.errors import ScenarioError\n", None),
    ],
)
def test_the_check_reads_each_import_form(source, expected):
    found = violations({"dtsim.physics.probe": source})
    assert (found == []) if expected is None else (len(found) == 1 and expected in found[0])


def test_every_package_is_in_a_layer():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    packages |= {p.stem for p in SRC.glob("*.py") if p.stem not in ("__init__", "__main__", "_version")}
    assert packages <= set(LAYER), packages - set(LAYER)


def mode_code_tests(source: str) -> list[int]:
    """Lines that compare a mode (`mode`, `...["mode_code"]`) with an integer literal."""

    def is_mode(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in ("mode", "mode_code", "code")
        return isinstance(node, ast.Subscript) and getattr(node.slice, "value", None) == "mode_code"

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_mode(x) for x in sides) and any(
                isinstance(x, ast.Constant) and isinstance(x.value, int) for x in sides
            ):
                lines.append(node.lineno)
    return lines


def test_the_decentralized_model_asks_strategies_instead_of_testing_mode_codes():
    """Strategies own what they are (`diloco`, `pipelined`, `regional_tier`, `nodes_used`); the engine,
    the result and the warnings ask them through the registry."""
    package = SRC / "models" / "decentralized"
    found = {
        p.name: lines
        for p in sorted(package.glob("*.py"))
        if (lines := mode_code_tests(p.read_text("utf-8")))
    }
    assert found == {}
    assert mode_code_tests("if mode == 3:\n    pass\n") == [1]  # the check itself can fail


# The HTTP API, the web pages and the shared JSON builders do not import the command line (typer, rich):
# what the CLI shares with them lives in dtsim.interfaces.operations.
NO_CLI = ("dtsim.interfaces.api", "dtsim.interfaces.web", "dtsim.interfaces.operations")


def cli_imports(modules: dict[str, str]) -> list[str]:
    """Every import of dtsim.interfaces.cli (lazy ones included) by a module of NO_CLI."""
    return [
        f"{name}:{line} imports {target}"
        for name, source in sorted(modules.items())
        if name.startswith(NO_CLI)
        for line, target, names in imports(source)
        if any(is_cli(m) for m in (target, *(f"{target}.{n}" for n in names)))
    ]


def is_cli(module: str) -> bool:
    return module == "dtsim.interfaces.cli" or module.startswith("dtsim.interfaces.cli.")


def test_the_api_and_the_pages_do_not_import_the_cli():
    assert cli_imports(package_modules()) == []


@pytest.mark.parametrize(
    "source",
    [
        "def f():\n    from dtsim.interfaces.cli.datacenter import layout_label\n",
        "from dtsim.interfaces import cli\n",
        "import dtsim.interfaces.cli.common\n",
    ],
)
def test_the_cli_import_check_reads_each_import_form(source):
    assert len(cli_imports({"dtsim.interfaces.web.views.probe": source})) == 1
    assert cli_imports({"dtsim.interfaces.cli.probe": source}) == []  # the CLI may import itself
