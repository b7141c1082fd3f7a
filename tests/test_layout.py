"""The package's imports run one way, down the layers README's development section draws."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "localagent"

# Lowest first; a module may import its own layer and those before it, never one after it.
LAYERS: list[set[str]] = [
    {"errors", "schema_grammar", "__version__"},
    {"core"},
    {"tools", "mcp_servers"},
    {"evidence"},
    {"turn"},
    {"formats", "models"},
    {"settings"},
    {"backends"},
    {"loop"},
    {"agent"},
    {"serve", "evaluation", "grammar_checks"},
    {"testing", "cli", "__init__", "__main__"},
]
ROOT_MODULES = {"__init__", "__main__", "agent", "settings", "errors", "testing"}


def unit_of(module: str) -> str:
    """The top-level part of `localagent` a dotted module name belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path) -> set[str]:
    """The localagent modules a file imports, leaving out those imported only for type checking."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for child in ast.walk(statement)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("localagent"):
            if node.module == "localagent":
                found.update(f"localagent.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("localagent."))
    return found


def layer_of(unit: str) -> int:
    return next(index for index, layer in enumerate(LAYERS) if unit in layer)


def test_every_import_runs_down_the_layers() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        source = unit_of(module.removesuffix(".__init__"))
        for imported in imports_of(path):
            if layer_of(unit_of(imported)) > layer_of(source):
                upward.append(f"{path.relative_to(PACKAGE.parent)} imports {imported}")
    assert upward == []


def test_every_part_of_the_package_has_a_layer_and_each_package_says_its_job() -> None:
    parts = {path.stem for path in PACKAGE.glob("*.py")} | {
        path.parent.name for path in PACKAGE.glob("*/__init__.py")
    }
    assert parts - {"__version__"} <= set().union(*LAYERS)
    assert {path.stem for path in PACKAGE.glob("*.py")} == ROOT_MODULES
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent != PACKAGE:
            docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
            assert docstring, f"{init.relative_to(PACKAGE.parent)} has no docstring saying its job"


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "sample.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from localagent.loop.runner import Runner\n"
        "if TYPE_CHECKING:\n"
        "    from localagent.agent import Agent\n"
    )
    assert imports_of(module) == {"localagent.loop.runner"}
    assert layer_of(unit_of("localagent.loop.runner")) > layer_of("tools")
