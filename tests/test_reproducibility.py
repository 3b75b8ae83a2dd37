"""The reproducibility promise, as tests compare tables (gcbench/testing/tables.py): exact columns bit for bit,
kernel-dependent ones within a derived tolerance against another machine's; and every test reading a golden file
is marked ``blas``, so .ci/run runs it again under other BLAS kernels."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gcbench.coding import make_scheme
from gcbench.results.schema import ITERATION_COLUMNS, KERNEL_DEPENDENT_COLUMNS, TRAINED_COLUMNS
from gcbench.testing.tables import EPS, Decodes, assert_tables_equal, decodes_of

TESTS = Path(__file__).resolve().parent


def _reads_golden(node: ast.AST, names: set[str]) -> bool:
    """Whether the code names one of ``names`` or spells a path into tests/golden."""
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id in names:
            return True
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            if child.value == "golden" or "golden/" in child.value:
                return True
    return False


def _is_blas(expression: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "blas" for n in ast.walk(expression))


def golden_tests(path: Path) -> tuple[list[str], list[str]]:
    """The test functions of a module that read a golden file (directly, through a module-level name or helper),
    and those of them that are not marked blas (by decorator or the module's pytestmark)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    marked_module = False
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            ids = {t.id for t in targets if isinstance(t, ast.Name)}
            if "pytestmark" in ids and _is_blas(node.value):
                marked_module = True
            if node.value is not None and _reads_golden(node.value, names):
                names |= ids
    helpers = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("test_")]
    grew = True
    while grew:  # helpers that read a golden file, through other helpers too
        grew = False
        for helper in helpers:
            if helper.name not in names and _reads_golden(helper, names):
                names.add(helper.name)
                grew = True
    readers, unmarked = [], []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") and _reads_golden(node, names):
            readers.append(node.name)
            if not marked_module and not any(_is_blas(d) for d in node.decorator_list):
                unmarked.append(node.name)
    return readers, unmarked


def test_every_test_that_reads_a_golden_file_is_marked_blas():
    """A golden file holds floats another machine computed: such a test must pass under every BLAS kernel, which
    .ci/run checks for the tests marked blas (`pytest -m blas` under OPENBLAS_CORETYPE=Haswell and Prescott)."""
    readers, unmarked = {}, {}
    for path in sorted(set(TESTS.glob("test_*.py")) - {Path(__file__).resolve()}):  # not this checker's own
        read, missing = golden_tests(path)
        if read:
            readers[path.name] = read
        if missing:
            unmarked[path.name] = missing
    assert {"test_results_stream.py", "test_shipped_scenarios.py"} <= set(readers)  # the check sees them
    assert unmarked == {}, f"read a golden file without @pytest.mark.blas: {unmarked}"


def test_the_check_catches_an_unmarked_golden_test(tmp_path):
    path = tmp_path / "test_example.py"
    path.write_text(
        "import pytest\nGOLDEN = ROOT / 'golden'\n\ndef load():\n    return read(GOLDEN)\n\n"
        "def test_a():\n    assert load()\n\n@pytest.mark.blas\ndef test_b():\n    assert load()\n\n"
        "def test_c():\n    assert read('tests/golden/x.csv')\n\ndef test_d():\n    assert True\n"
    )
    assert golden_tests(path) == (["test_a", "test_b", "test_c"], ["test_a", "test_c"])
    path.write_text(path.read_text().replace("import pytest\n", "import pytest\npytestmark = pytest.mark.blas\n"))
    assert golden_tests(path)[1] == []


def frame(residual: list[float], **columns) -> pd.DataFrame:
    return pd.DataFrame({"iteration": np.arange(len(residual)), "exact": [r == 0 for r in residual],
                         "end": np.linspace(0.1, 0.3, len(residual)), "residual": residual, **columns})  # fmt: skip


def test_tables_compare_exact_columns_bit_for_bit_and_the_residual_within_its_tolerance():
    decodes = Decodes(condition=30.0, size=12)
    golden = frame([0.0, 1.0, np.inf])
    nudged = frame([0.0, 1.0 + 3 * EPS, np.inf])  # three ulp: another kernel
    assert_tables_equal(nudged, golden, decodes)
    with pytest.raises(AssertionError):
        assert_tables_equal(nudged, golden)  # on one machine: bit for bit
    with pytest.raises(AssertionError):
        assert_tables_equal(frame([0.0, 1.0 + 1e-9, np.inf]), golden, decodes)  # a real change
    later = frame([0.0, 1.0, np.inf])
    later["end"] = np.nextafter(later["end"], 1.0)
    with pytest.raises(AssertionError, match="end"):
        assert_tables_equal(later, golden, decodes)  # times are exact on any machine
    with pytest.raises(ValueError, match="no tolerance across machines"):
        assert_tables_equal(frame([0.0], loss=[1.0]), frame([0.0], loss=[1.0]), decodes)


def test_the_residual_tolerance_grows_with_the_worst_decode():
    fr, cr = make_scheme("fr", n=6, s=1), make_scheme("cr", n=6, s=2, seed=0)
    assert decodes_of([fr]).condition == pytest.approx(np.sqrt(2))  # two rows of one group, one of another: 2 / sqrt(2)
    worst = decodes_of([fr, cr])
    assert worst.condition > decodes_of([fr]).condition and worst.size == 6
    assert worst.residual_tolerance < 1e-11  # against residuals of order one: a change shows
    assert decodes_of([make_scheme("cr", n=13, s=1)]).condition == 1e10  # too many sets: the truncation's bound


def test_the_kernel_dependent_columns_are_results_columns():
    assert set(KERNEL_DEPENDENT_COLUMNS) <= set(ITERATION_COLUMNS) | set(TRAINED_COLUMNS)
