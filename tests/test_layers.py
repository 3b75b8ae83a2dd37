"""The layers of DESIGN.md depend one way: checked on the source, so a stray import fails the build."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gcbench"

FORBIDDEN = {
    "coding": ("gcbench.sim", "gcbench.real", "gcbench.plot", "gcbench.scenario", "gcbench.results", "gcbench.cli"),
    "sim": ("gcbench.real", "gcbench.plot", "gcbench.cli"),
    "real": ("gcbench.sim", "gcbench.plot", "gcbench.cli"),
    "plot": ("gcbench.sim", "gcbench.real", "gcbench.cli", "gcbench.coding"),
    "models": ("gcbench.sim", "gcbench.real", "gcbench.plot", "gcbench.cli"),
    "policies": ("gcbench.sim", "gcbench.real", "gcbench.plot", "gcbench.cli"),
    "scenario": ("gcbench.sim", "gcbench.real", "gcbench.plot", "gcbench.cli"),
    "results": ("gcbench.sim", "gcbench.real", "gcbench.plot", "gcbench.cli"),
    # the one master and its protocol run on every clock: they name no engine and no backend
    "cluster": ("gcbench.sim", "gcbench.real", "gcbench.plot", "gcbench.cli", "simpy", "ray", "torch"),
    "master": ("gcbench.sim", "gcbench.real", "gcbench.plot", "gcbench.cli", "simpy", "ray", "torch"),
}


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_only_what_it_may(layer):
    for path in sorted((PACKAGE / layer).glob("*.py")):
        bad = [name for name in imports(path) for banned in FORBIDDEN[layer] if name.startswith(banned)]
        assert not bad, f"{path.relative_to(PACKAGE.parent)} imports {bad}"


def test_coding_needs_only_numpy_and_scipy_outside_gcbench():
    for path in sorted((PACKAGE / "coding").glob("*.py")):
        outside = {n.split(".")[0] for n in imports(path)} - {"gcbench", "numpy", "scipy", "__future__"}
        assert outside <= {"abc", "collections", "dataclasses", "typing", "itertools", "math", "functools"}, (
            f"{path.name} imports {outside}"
        )
