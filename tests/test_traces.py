"""Trace replay: the stated missing/duplicate policy, and exact reproduction of an independent computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gcbench.errors import GcbenchError
from gcbench.models.traces import trace_matrix
from gcbench.sim.runner import simulate_points

from simhelpers import point

ROOT = Path(__file__).resolve().parents[1]


def frame(rows):
    return pd.DataFrame(rows, columns=["worker", "iteration", "time"]).astype({"time": float})


CLEAN = [(0, 0, 1.0), (1, 0, 2.0), (0, 1, 3.0), (1, 1, 4.0)]


def test_a_clean_trace_pivots_to_iterations_by_workers():
    assert trace_matrix(frame(CLEAN), 2, "mean", "error").tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_duplicates_mean_first_or_error():
    rows = CLEAN + [(1, 1, 8.0)]
    assert trace_matrix(frame(rows), 2, "mean", "error")[1, 1] == 6.0
    assert trace_matrix(frame(rows), 2, "first", "error")[1, 1] == 4.0
    with pytest.raises(GcbenchError, match="duplicated entry for iteration 1, worker 1"):
        trace_matrix(frame(rows), 2, "error", "error")


def test_missing_worker_median_drop_or_error():
    rows = CLEAN[:3] + [(0, 2, 5.0), (1, 2, 6.0)]  # worker 1 misses iteration 1
    filled = trace_matrix(frame(rows), 2, "mean", "worker_median")
    assert filled[1, 1] == 4.0  # median of worker 1's 2.0 and 6.0
    assert trace_matrix(frame(rows), 2, "mean", "drop_iteration").tolist() == [[1.0, 2.0], [5.0, 6.0]]
    with pytest.raises(GcbenchError, match="no entry for iteration 1, worker 1"):
        trace_matrix(frame(rows), 2, "mean", "error")


def test_non_numeric_and_negative_times_count_as_missing():
    rows = CLEAN[:3] + [(1, 1, float("nan")), (1, 2, -1.0), (0, 2, 1.0)]
    table = trace_matrix(frame(rows), 2, "mean", "worker_median")
    assert np.isfinite(table).all() and table[1, 1] == 2.0 and table[2, 1] == 2.0


def test_too_few_workers_is_a_clear_error():
    with pytest.raises(GcbenchError, match="the trace has 2 workers, the scenario needs 3"):
        trace_matrix(frame(CLEAN), 3, "mean", "error")


def independent_wait_all(path: Path, columns: dict, scale: float, workers: int, iterations: int) -> np.ndarray:
    """The same replay computed directly with pandas: max over workers of each iteration's time."""
    raw = pd.read_csv(path)
    raw = raw.rename(columns={v: k for k, v in columns.items()})
    table = raw.groupby(["iteration", "worker"])["time"].mean().unstack()
    table = table[sorted(table.columns)[:workers]]
    table = table.fillna(table.median())
    times = table.to_numpy() * scale
    return times[np.arange(iterations) % len(times)].max(axis=1)


def replay(path: Path, columns: dict, scale: float, workers: int, iterations: int) -> np.ndarray:
    trace = {"path": str(path), "columns": columns, "time_scale": scale}
    p = point(workers=workers, iterations=iterations, compute={"trace": trace}, variants=[{"scheme": "uncoded"}])
    iterations_table, _ = simulate_points([p])
    return iterations_table["duration"].to_numpy()


def test_replay_reproduces_the_shipped_trace_exactly():
    path = ROOT / "scenarios" / "traces" / "synthetic_trace.csv"
    columns = {"worker": "worker", "iteration": "iteration", "time": "time"}
    expected = independent_wait_all(path, columns, 1.0, 12, 250)  # wraps past 200 iterations
    np.testing.assert_array_equal(replay(path, columns, 1.0, 12, 250), expected)


@pytest.mark.parametrize("job", [1, 2, 3, 4])
def test_replay_reproduces_the_alibaba_traces_exactly(shared_data, job):
    path = shared_data / "traces" / "alibaba-pai-2020" / f"job_{job}_norm.csv"
    columns = {"worker": "worker", "iteration": "time", "time": "batch_time_norm"}
    expected = independent_wait_all(path, columns, 0.001, 10, 300)
    np.testing.assert_array_equal(replay(path, columns, 0.001, 10, 300), expected)
