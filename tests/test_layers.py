"""The layers of DESIGN.md depend one way: checked on the source, so a stray import fails the build.

Every package under gcbench/ and every top-level module (errors, stops) has a rule saying which parts of gcbench it
may import (the command package, gcbench/cli/, may call any layer and no layer calls it); imports inside functions
count too, since they run when the function does. The rules only point down (a layer may import what its allowed
layers may), so no chain of imports runs back up a layer either. Within and across layers, no modules import each
other (no cycle, whatever the imports' place), and a private module (``_x``) is imported only by modules of its own
package.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gcbench"

_BELOW_MASTER = {"errors", "stops", "coding", "compression", "models", "policies", "scenario", "results"}
MAY_IMPORT = {
    "errors": set(),
    "stops": set(),  # the stop reasons' vocabulary: policies give them, results hold them, plots read them
    "coding": {"errors"},  # schemes and decoding: nothing above them
    "models": {"errors"},  # a leaf: latency, straggling, failure, network and trace models
    # compressors of workers' messages, beside coding: the registry and config base are the models layer's
    # (docs/architecture.md, "Layers")
    "compression": {"errors", "models"},
    "policies": {"errors", "stops", "coding", "models"},
    "scenario": {
        "errors",
        "stops",
        "coding",
        "compression",
        "models",
        "policies",
    },  # schema, loading, sweeps, the run's draws
    "results": {"errors", "stops"},  # plotting reads it, so it stays below what plotting may not import
    "cluster": _BELOW_MASTER,  # the one master and the cluster protocol: no engine, no backend
    "master": _BELOW_MASTER | {"cluster"},
    "training": _BELOW_MASTER,  # torch models, data and gradients, for real mode and the simulator
    # the conformance suites, and reference implementations (the SGC authors'-rules replay)
    "testing": _BELOW_MASTER | {"cluster", "master"},
    "sim": _BELOW_MASTER | {"cluster", "master", "training"},  # never real
    "real": _BELOW_MASTER | {"cluster", "master", "training"},  # never sim
    "plot": {"errors", "stops", "results"},  # reads results files only: no engine, no scheme, no policy
    # the bridge from real to simulated: reads real runs' results, simulates the calibrated scenario, replays
    # sequential rounds with the master's bookkeeping, draws its report in plotting's style; never a real backend
    # (docs/architecture.md, "Layers", gives the reason for master and plot)
    "twin": _BELOW_MASTER | {"cluster", "master", "training", "sim", "plot"},
}
CLI = "cli"  # gcbench/cli/ (and __main__): thin, it may call any layer, and no layer calls it
CLI_PACKAGE = PACKAGE / "cli"
# what the commands share, a module per job (the console; the summary table; a real run's progress; a simulation
# from the command line; a registry's listing); gcbench/cli/__init__.py assembles the commands
CLI_SHARED = {f"gcbench.cli.{name}" for name in ("console", "summary", "progress", "simulation", "configs")}
HEAVY = {"torch", "torchvision", "ray", "matplotlib", "seaborn"}
HEAVY_AT_IMPORT = {"real", "training", "plot"}  # the modes that need them; elsewhere only inside functions


REAL = PACKAGE / "real"
# gcbench/real (docs/architecture.md, "Real mode's layout"): at its top only backend.py, the contract between a run
# and its backends; then a folder for a run's life (run/), one for the wall-clock cluster the Ray and torch backends
# share (wallclock/), one for worker processes on torch.distributed channels (processes/: torch/ and ddp/ share it),
# a folder per backend (ray/, torch/, local/) and for the DDP baseline (ddp/), and the emulated cluster (emulation/:
# nodes as network namespaces, shaped links), which every folder may use to run in a node and none is part of
REAL_TOP = {"__init__.py", "backend.py"}
REAL_BACKENDS = {"ray", "torch", "local", "ddp"}
# what each folder of gcbench/real may import of the others (its own modules and backend.py always)
REAL_REACHES = {
    "emulation": set(),  # knows no run, no backend (and, below, no scenario or scheme)
    "wallclock": {"emulation"},  # knows no run and no backend
    "processes": {"emulation"},
    "run": {"wallclock", "emulation"},  # backends only through the cluster registry, save REAL_RUN_NAMES
    "ray": {"wallclock", "processes", "emulation"},
    "torch": {"wallclock", "processes", "emulation"},
    "ddp": {"wallclock", "processes", "run", "emulation"},  # run classes: they declare run/'s interface
    "local": {"run"},
}
EMULATION_IMPORTS = {"gcbench.errors"}  # of gcbench outside its own folder: the emulated cluster knows no scenario
# the modules of run/ a backend's run class may import: the interface it declares and the checkpoints it keeps
REAL_RUN_INTERFACE = {"gcbench.real.run.training_run", "gcbench.real.run.checkpoint"}
# the one place run/ names a backend's folder: which run trains a variant (ddp/: a policy that runs without the
# master); every other way to a backend goes through the cluster registry, by name
REAL_RUN_NAMES = {"standalone.py": {"ddp"}}


# what only tests import: the test suite's own modules (helpers such as simhelpers) and its tools
TEST_MODULES = {"tests", "conftest", "pytest", "_pytest", "hypothesis"} | {
    p.stem for p in Path(__file__).parent.glob("*.py")
}


def layer_of(name: str) -> str | None:
    """The layer of a gcbench module name (gcbench.sim.runner -> sim, gcbench.cli.run -> cli), None outside."""
    parts = name.split(".")
    if parts[0] != "gcbench":
        return None
    if len(parts) == 1:
        return "gcbench"
    return CLI if parts[1] in ("cli", "__main__") else parts[1]  # python -m gcbench: the CLI


def source_files() -> list[tuple[str, Path]]:
    """(layer, file) for every module of gcbench but the package root's __init__.py (tested on its own)."""
    files = [(layer_of(f"gcbench.{p.stem}"), p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    files += [(p.parent.relative_to(PACKAGE).parts[0], p) for p in PACKAGE.glob("*/**/*.py")]
    return sorted(files)


def imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at import time) for each absolute import the file runs; relative imports are refused below.

    Imports under ``if TYPE_CHECKING:`` never run, so they are left out: a layer may name a type from above it.
    """
    found = []
    for node, at_import in _run_nodes(ast.parse(path.read_text()), True):
        if isinstance(node, ast.Import):
            found += [(alias.name, at_import) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.relative_to(PACKAGE.parent)}: use absolute imports, so layers can be read"
            found.append((node.module, at_import))
    return found


def _run_nodes(tree: ast.AST, at_import: bool):
    """(node, whether it runs when the module is imported), leaving out ``if TYPE_CHECKING:`` blocks."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for orelse in child.orelse:
                yield orelse, at_import
                yield from _run_nodes(orelse, at_import)
            continue
        yield child, at_import
        inside = at_import and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _run_nodes(child, inside)


def cli_import_problems(path: Path) -> list[str]:
    """What a module of gcbench/cli/ may not import: a test module, anywhere; and at import time (every command's
    start, and `gcbench --help`) a heavy library or a layer that imports one at its own import (real, training,
    plot)."""
    problems = []
    for name, at_import in imports(path):
        top = name.split(".")[0]
        if top in TEST_MODULES:
            problems.append(f"{name} (a test module)")
        elif at_import and (top in HEAVY or layer_of(name) in HEAVY_AT_IMPORT):
            problems.append(f"{name} (heavy, at import time: import it inside the command that needs it)")
    return problems


def test_the_cli_rule_catches_heavy_and_test_imports(tmp_path):
    path = tmp_path / "cli_bad.py"
    path.write_text(
        "import torch\nfrom gcbench.plot.make import plot_runs\nfrom gcbench.sim.runner import engines\n"
        "import simhelpers\n\n\ndef plot():\n    import matplotlib\n    from gcbench.real import ray_cluster\n"
        "    from hypothesis import given\n"
    )
    assert [problem.split()[0] for problem in cli_import_problems(path)] == [
        "torch", "gcbench.plot.make", "simhelpers", "hypothesis"
    ]  # fmt: skip


def test_every_package_and_module_has_a_rule():
    unruled = {layer for layer, _ in source_files()} - set(MAY_IMPORT) - {CLI}
    assert not unruled, f"no layer rule for {sorted(unruled)}: add it to MAY_IMPORT as DESIGN.md places it"


def test_the_rules_point_down():
    """What a layer may import may import only what the layer may, so a chain of imports never climbs."""
    for layer, allowed in MAY_IMPORT.items():
        for lower in allowed:
            assert MAY_IMPORT[lower] <= allowed, f"{layer} may import {lower}, which may import more than {layer}"
        assert layer not in allowed and CLI not in allowed


@pytest.mark.parametrize("layer", sorted({layer for layer, _ in source_files()}))
def test_layer_imports_only_what_it_may(layer):
    for found, path in source_files():
        if found != layer:
            continue
        if layer == CLI:  # it may call any layer; what it may not import is cli_import_problems' rule
            problems = cli_import_problems(path)
            assert not problems, f"{path.relative_to(PACKAGE.parent)} imports {problems}"
            continue
        names = {layer_of(name) for name, _ in imports(path)} - {None, layer, "gcbench"}  # the root: its version
        bad = names - MAY_IMPORT[layer]
        assert not bad, f"{path.relative_to(PACKAGE.parent)} imports {sorted(bad)}; {layer} may import only " + (
            f"{sorted(MAY_IMPORT[layer])}" if MAY_IMPORT[layer] else "nothing of gcbench"
        )


def test_the_package_root_imports_nothing():
    """``import gcbench`` (every command's first step) stays free."""
    assert not [name for name, _ in imports(PACKAGE / "__init__.py") if layer_of(name)]


@pytest.mark.parametrize("layer", sorted({layer for layer, _ in source_files()} - HEAVY_AT_IMPORT))
def test_heavy_imports_wait_for_the_mode_that_needs_them(layer):
    for found, path in source_files():
        if found == layer:
            heavy = [name for name, at_import in imports(path) if at_import and name.split(".")[0] in HEAVY]
            assert not heavy, f"{path.relative_to(PACKAGE.parent)} imports {heavy} at import time"


@pytest.mark.parametrize("layer", ["cluster", "master"])
def test_the_master_and_its_protocol_name_no_engine(layer):
    """They run on every clock: SimPy's virtual one and Ray's wall time alike."""
    for found, path in source_files():
        if found == layer:
            engines = [name for name, _ in imports(path) if name.split(".")[0] in {"simpy", "ray", "torch"}]
            assert not engines, f"{path.relative_to(PACKAGE.parent)} imports {engines}"


def test_coding_needs_only_numpy_and_scipy_outside_gcbench():
    stdlib = {"abc", "collections", "contextlib", "dataclasses", "typing", "itertools", "math", "functools", "sys"}
    stdlib |= {"__future__", "numbers", "operator"}
    optional = {"threadpoolctl"}  # used when installed (gcbench/coding/_threads.py; tests/test_coding_threads.py)
    for layer, path in source_files():
        if layer == "coding":
            outside = {name.split(".")[0] for name, _ in imports(path)} - {"gcbench", "numpy", "scipy"} - optional
            assert outside <= stdlib, f"{path.name} imports {outside - stdlib}"


def test_gcbench_starts_without_torch_ray_or_matplotlib():
    clis = ", ".join(module_name(p) for p in sorted((PACKAGE / "cli").glob("*.py")))  # every command's module
    probe = f"import sys, {clis}, gcbench.sim.runner; print(sorted(m for m in {sorted(HEAVY)!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", f"importing the commands' modules loads {loaded.strip()}"


def test_command_modules_import_no_other_command_only_the_shared_modules():
    """A command is one module (simulate, run, plot, schemes, policies): it imports no other command's module, only
    the shared ones; a shared module imports no command; the package's __init__ assembles them."""
    commands = sorted(p for p in CLI_PACKAGE.glob("*.py") if p.stem != "__init__")
    assert {"console", "simulate", "run", "plot", "schemes", "policies"} <= {p.stem for p in commands}
    for path in commands:
        others = {name for name in gcbench_imports(path) if layer_of(name) == CLI} - CLI_SHARED
        assert not others, f"{path.relative_to(PACKAGE.parent)} imports {sorted(others)}"


# -- no import cycles, no private module of another package -------------------------------------------------------


def module_name(path: Path, root: Path = PACKAGE.parent) -> str:
    """gcbench/sim/runner.py -> gcbench.sim.runner; a package's __init__.py -> the package."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(path: Path, root: Path = PACKAGE.parent) -> str:
    """The package a file's module belongs to: its folder's (a package's __init__.py belongs to the package)."""
    return ".".join(path.relative_to(root).parent.parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def gcbench_imports(path: Path, modules: dict[str, Path] = MODULES, root: Path = PACKAGE.parent) -> set[str]:
    """The gcbench modules a file imports anywhere: at module level, inside a function, or under ``if
    TYPE_CHECKING:`` (a name for a type still ties the two modules together). ``from a import b`` imports the
    module a.b when there is one, else a."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [name if name in modules else node.module for name in names]
        else:
            continue
        found |= {name for name in names if name in modules}
    return found - {module_name(path, root)}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm): each is a cycle or several."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def private_import_problems(path: Path, modules: dict[str, Path] = MODULES, root: Path = PACKAGE.parent) -> list[str]:
    """Imports of a private module (``_x``) of another package: only the package that holds it may import it.
    What others need of it is made public there (re-exported by the package's __init__ or a public module)."""
    problems = []
    for name in sorted(gcbench_imports(path, modules, root)):
        parts = name.split(".")
        for i, part in enumerate(parts):
            owner = ".".join(parts[:i])
            if part.startswith("_") and not part.startswith("__") and owner != package_of(path, root):
                problems.append(f"{name} (private to {owner})")
                break
    return problems


def test_the_cycle_rule_finds_mutual_and_longer_cycles():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert import_cycles(graph) == [["c", "d", "e"], ["a", "b"]]


def test_the_private_rule_allows_only_the_package_that_holds_the_module(tmp_path):
    folder = tmp_path / "gcbench" / "policies"
    folder.mkdir(parents=True)
    path = folder / "bad.py"
    path.write_text(
        "from gcbench.coding._base import kth_smallest\nfrom gcbench.policies._base import Policy\n\n\n"
        "def f():\n    from gcbench.models import _config\n    from gcbench.coding import Scheme\n"
    )
    names = {"gcbench.coding", "gcbench.coding._base", "gcbench.policies._base", "gcbench.models._config"}
    problems = private_import_problems(path, {name: tmp_path / name for name in names}, tmp_path)
    assert [problem.split()[0] for problem in problems] == ["gcbench.coding._base", "gcbench.models._config"]


def test_no_import_cycles():
    """No two modules import each other, directly or through others: a module can be read (and moved) with what
    it imports below it. What two modules both need lives where it belongs, below both."""
    cycles = import_cycles({name: gcbench_imports(path) for name, path in MODULES.items()})
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(group) for group in cycles)


def test_no_module_imports_another_packages_private_module():
    problems = [f"{path.relative_to(PACKAGE.parent)} imports {problem}" for path in MODULES.values()
                for problem in private_import_problems(path)]  # fmt: skip
    assert not problems, "\n".join(problems)


def real_folder(name: str) -> str | None:
    """The folder of gcbench/real a module is in (gcbench.real.ray.cluster -> ray); None for backend.py at the top
    and anything outside gcbench/real."""
    parts = name.split(".")
    if parts[:2] != ["gcbench", "real"] or len(parts) < 3 or not (REAL / parts[2] / "__init__.py").is_file():
        return None
    return parts[2]


def test_the_top_of_gcbench_real_holds_only_the_backend_contract():
    """A real run's modules live in folders that say what they are part of; a new module at the top fails here."""
    assert {path.name for path in REAL.glob("*.py")} == REAL_TOP
    assert {path.parent.name for path in REAL.glob("*/__init__.py")} == set(REAL_REACHES)
    assert REAL_BACKENDS <= set(REAL_REACHES)


def test_each_real_folder_imports_only_the_folders_its_rule_allows():
    """wallclock/ knows no run and no backend; a backend imports no other backend; run/ reaches a backend only
    through the registry (save where a variant's run class is decided)."""
    for path in sorted(REAL.glob("*/*.py")):
        own = path.parent.name
        reached = {real_folder(name) for name, _ in imports(path)} - {None, own}
        allowed = REAL_REACHES[own] | (REAL_RUN_NAMES.get(path.name, set()) if own == "run" else set())
        where = path.relative_to(PACKAGE.parent)
        assert reached <= allowed, f"{where} imports gcbench/real/{sorted(reached - allowed)}/"


def test_the_emulated_cluster_knows_no_scenario_scheme_or_run():
    """gcbench/real/emulation builds, runs in and tears down namespaces: of gcbench it imports only the errors."""
    for path in sorted((REAL / "emulation").glob("*.py")):
        outside = {name for name, _ in imports(path) if layer_of(name) and real_folder(name) != "emulation"}
        assert outside <= EMULATION_IMPORTS, f"{path.relative_to(PACKAGE.parent)} imports {sorted(outside)}"


def test_a_backends_run_class_imports_only_the_run_interface():
    """ddp/ and local/ declare run/'s interface (TrainingRun) and keep its checkpoints; nothing else of a run's
    life (the session, the setup, the one master's run) is theirs to import."""
    for path in sorted(REAL.glob("*/*.py")):
        if path.parent.name not in REAL_BACKENDS:
            continue
        of_run = {name for name, _ in imports(path) if real_folder(name) == "run"}
        where = path.relative_to(PACKAGE.parent)
        assert of_run <= REAL_RUN_INTERFACE, f"{where} imports {sorted(of_run - REAL_RUN_INTERFACE)}"
