"""Every scenario in scenarios/ validates and runs; the main one keeps a golden summary."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from gcbench.results import summarize
from gcbench.scenario import load_scenario
from gcbench.scenario.loading import SweepPoint
from gcbench.sim.runner import simulate_points

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
GOLDEN = ROOT / "tests" / "golden" / "stragglers_summary.csv"
TRAINED = {
    "trained_sweep",
    "approximate_codes",
    "scheme_family",
    "compression",
}  # they train in the simulator: seconds each


def shortened(points, iterations=20):
    return [SweepPoint(p.values, p.scenario.model_copy(update={"iterations": iterations})) for p in points]


def test_the_expected_scenarios_ship():
    names = {p.stem for p in SCENARIOS}
    assert {"stragglers", "heavy_tail", "persistent_stragglers", "crash_failures", "shared_link"} <= names
    assert {"trace_replay", "delay_models", "asynchronous", "model_b"} | TRAINED <= names
    assert "cifar10_scheme_family" in names and "sequential" in names


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if p.stem in TRAINED else p for p in SCENARIOS],
    ids=lambda p: p.stem,
)
def test_scenario_validates_and_runs(path):
    points = load_scenario(path)
    iterations, _ = simulate_points(shortened(points), with_workers=False)
    assert iterations["duration"].notna().all()


@pytest.mark.blas  # a golden file
def test_main_scenario_matches_its_golden_summary():
    """A change in simulated numbers must be a visible, explained diff of tests/golden/."""
    points = shortened(load_scenario(ROOT / "scenarios" / "stragglers.yaml"), iterations=60)
    iterations, _ = simulate_points(points, with_workers=False)
    summary = summarize(iterations, ["straggling.slowdown"])
    columns = ["point", "variant", "straggling.slowdown", "mean", "p50", "p99", "speedup", "exact_share"]
    if os.environ.get("GCBENCH_UPDATE_GOLDEN"):  # after an intended change: rewrite, review the diff, commit
        summary[columns].to_csv(GOLDEN, index=False, float_format="%.12g")
    golden = pd.read_csv(GOLDEN)
    # times and the share of exact decodes only (no kernel-dependent column: results/schema.py), bit for bit on any
    # machine; the file keeps 12 significant digits, hence rtol 1e-9
    pd.testing.assert_frame_equal(summary[columns].reset_index(drop=True), golden, check_dtype=False, rtol=1e-9)
