"""The registry of backends (gcbench/cluster/_registry.py): lazy entries, and the only place that tells
backends apart by name; every backend decision of a real run asks the registered class."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from gcbench.cluster import available_clusters, backend_class, backend_entry, cluster_class, real_backends
from gcbench.policies import POLICIES

PACKAGE = Path(__file__).resolve().parents[1] / "gcbench"
REGISTRY = PACKAGE / "cluster" / "_registry.py"


def test_listing_the_backends_and_their_classes_imports_neither_ray_nor_torch():
    """Listing them (and `gcbench run --help`, built from the list) imports no backend at all; even importing
    every backend's class, to ask what it declares, imports neither ray nor torch."""
    probe = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from gcbench.cli import app\n"
        "from gcbench.cluster import available_clusters, real_backends\n"
        "names = available_clusters() + [entry.name for entry in real_backends()]\n"
        "assert CliRunner().invoke(app, ['run', '--help']).exit_code == 0\n"
        "listed = sorted(m for m in sys.modules if m.startswith(('gcbench.real.', 'gcbench.sim.')))\n"
        "from gcbench.cluster import backend_class\n"
        "[backend_class(name) for name in names]\n"
        "print(listed, sorted(m for m in ('ray', 'torch') if m in sys.modules))\n"
    )
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[] []", found.stdout


def test_the_lists_come_from_the_entries():
    assert available_clusters() == ["ray", "simpy", "torch"]
    assert [entry.name for entry in real_backends()] == ["ray", "torch", "local"]
    assert backend_entry("simpy").clock == "virtual" and not backend_entry("local").protocol
    with pytest.raises(KeyError, match="unknown backend 'mpi'"):
        backend_class("mpi")
    with pytest.raises(KeyError, match="runs without the cluster protocol"):
        cluster_class("local")


def test_every_real_backend_is_a_folder_of_gcbench_real():
    for entry in real_backends():
        module = entry.location.split(":")[0]
        assert module.startswith(f"gcbench.real.{entry.name}."), entry
        assert (PACKAGE / "real" / entry.name / "__init__.py").is_file()


def test_every_real_backend_declares_what_a_run_asks_of_it():
    from gcbench.cluster import Cluster
    from gcbench.real.backend import RealBackend

    for entry in real_backends():
        found = backend_class(entry.name)
        assert issubclass(found, RealBackend) and found.name == entry.name
        assert issubclass(found, Cluster) == entry.protocol
    assert [entry.name for entry in real_backends() if backend_class(entry.name).keeps_caches] == ["ray"]


def test_every_policy_declares_whether_the_master_runs_it():
    declared = {cls.model_fields["name"].default: cls.needs_master for cls in POLICIES.classes()}
    assert all(isinstance(value, bool) for value in declared.values())
    assert [name for name, needs in declared.items() if not needs] == ["allreduce"]


def test_a_variant_s_run_class_follows_its_policy():
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.real.ddp.ddp_run import DDPRun
    from gcbench.real.run.standalone import run_class
    from gcbench.real.run.variant_run import VariantRun

    from realhelpers import scenario

    policies = ("wait_all", {"name": "k_async", "k": 2}, "allreduce")
    variants = [scenario({"scheme": "uncoded", "policy": policy}).variants[0] for policy in policies]
    assert [run_class(v) for v in variants] == [VariantRun, VariantRun, DDPRun]


def backend_name_comparisons(path: Path, names: set[str]) -> list[str]:
    """Comparisons of something named like a backend with a registered backend's name (``backend == "torch"``,
    ``meta["backend"] in ("ray", ...)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        constants = [
            e
            for operand in operands
            for e in (operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand])
            if isinstance(e, ast.Constant) and e.value in names
        ]
        if constants and any("backend" in ast.unparse(operand) for operand in operands):
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_compares_backend_names_outside_the_registry(tmp_path):
    names = set(available_clusters()) | {entry.name for entry in real_backends()}
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != REGISTRY
        for line in backend_name_comparisons(path, names)
    ]
    assert not found, "ask the backend's registered class instead: " + "; ".join(found)
    bad = tmp_path / "bad.py"
    bad.write_text('if backend == "torch" or run["backend"] not in ("ray", "local"):\n    pass\n')
    assert len(backend_name_comparisons(bad, names)) == 2
