"""`gcbench simulate` imports what a simulation needs when it needs it (start-up was 1.3 s, half scipy.stats)."""

import subprocess
import sys

import numpy as np
import pytest


def test_the_simulate_command_imports_no_scipy_linalg_or_stats():
    code = (
        "import sys, gcbench.cli, gcbench.cli.simulate, gcbench.sim.runner, gcbench.results.summary; "
        "print(sorted(m for m in ('scipy.stats', 'scipy.linalg') if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_the_help_imports_neither_pandas_nor_numpy():
    """`gcbench --help` loads the command package alone: every command imports what it needs when it runs."""
    loaded = "('pandas', 'numpy', 'scipy', 'gcbench.sim')"
    code = f"import sys, gcbench.cli; print(sorted(m for m in {loaded} if m in sys.modules))"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_the_t_quantile_is_scipy_stats_own():
    stats = pytest.importorskip("scipy.stats")
    from scipy.special import stdtrit

    for df in (1, 2, 4, 9, 29, 99):
        assert stdtrit(df, 0.975) == stats.t.ppf(0.975, df)
    assert np.isfinite(stdtrit(1, 0.975))
