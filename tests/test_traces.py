"""Trace replay: the stated missing/duplicate policy, and exact reproduction of an independent computation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.errors import GcbenchError
from gcbench.models.traces import Trace, trace_matrix
from gcbench.sim.runner import simulate_points

from simhelpers import point

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


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
    with pytest.raises(GcbenchError, match="the trace has 2 workers with times, the scenario needs 3"):
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


SCENARIO = "name: t\nworkers: 3\niterations: 5\ncompute: {trace: {path: %s}}\nvariants: [{scheme: uncoded}]\n"


def write_case(tmp_path: Path, rows: str, trace: str = "trace.csv") -> Path:
    (tmp_path / "trace.csv").write_text("worker,iteration,time\n" + rows)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO % trace)
    return scenario


def test_times_that_are_not_numbers_say_so_with_a_row(tmp_path):
    scenario = write_case(tmp_path, "0,0,a\n1,0,b\n2,0,c\n0,1,x\n")
    for check in ([], ["--check"]):
        done = runner.invoke(app, ["simulate", *check, str(scenario), "--out", str(tmp_path / "o")])
        assert done.exit_code == 2 and done.stderr == (
            f"error: {scenario}: compute.trace: the times in column 'time' of trace.csv are not numbers "
            "(e.g. worker 0, iteration 0, time 'a'); check compute.trace.columns.time.\n"
        )


def test_a_partly_garbage_trace_reports_what_was_dropped_and_imputed(tmp_path):
    rows = "0,0,1\n1,0,2\n2,0,x\n0,1,1\n1,1,-2\n2,1,3\n0,2,1\n0,2,3\n1,2,1\n,3,1\n"
    scenario = write_case(tmp_path, rows)
    done = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "o")], env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    assert (
        "trace trace.csv: 10 rows, 3 iterations replayed: 1 rows without a worker or an iteration number dropped, "
        "1 rows whose time is not a number, 1 rows whose time is negative or too large, 1 duplicated rows merged, "
        "3 missing entries filled with the worker's median." in " ".join(done.output.split())
    )
    meta = json.loads((tmp_path / "o" / "run.json").read_text())
    assert meta["trace_cleaning"] == {
        str(tmp_path / "trace.csv"): {
            "rows": 10,
            "rows_without_id": 1,
            "rows_not_numbers": 1,
            "rows_out_of_range": 1,
            "duplicates_merged": 1,
            "entries_imputed": 3,
            "iterations_dropped": 0,
            "iterations": 3,
        }
    }
    check = runner.invoke(app, ["simulate", "--check", str(scenario)], env={"COLUMNS": "300"})
    assert check.exit_code == 0
    assert "3 missing entries filled with the worker's median" in " ".join(check.output.split())


def test_a_missing_trace_names_the_scenario_file_and_the_resolved_path(tmp_path):
    scenario = write_case(tmp_path, "0,0,1\n", trace="sub/absent.csv")
    done = runner.invoke(app, ["simulate", "--check", str(scenario)])
    assert done.exit_code == 2 and done.stderr == (
        f"error: {scenario}: compute.trace.path: no such file: {tmp_path}/sub/absent.csv "
        "('sub/absent.csv' relative to the scenario's folder).\n"
    )


# What the duplicate and missing policies do to the real Alibaba traces (counted independently with pandas:
# job 2 has iterations with missing workers and one duplicated pair, jobs 3 and 4 miss one entry each).
ALIBABA_CLEANING = {1: (0, 0, 300), 2: (1, None, 254), 3: (0, 1, 249), 4: (0, 1, 2183)}


@pytest.mark.parametrize("job", [1, 2, 3, 4])
def test_the_alibaba_traces_report_their_cleaning(shared_data, job):
    path = shared_data / "traces" / "alibaba-pai-2020" / f"job_{job}_norm.csv"
    raw = pd.read_csv(path)
    counts = raw.groupby(["time", "worker"]).size()
    table = raw.groupby(["time", "worker"])["batch_time_norm"].mean().unstack()
    trace = Trace(path=str(path), columns={"worker": "worker", "iteration": "time", "time": "batch_time_norm"})
    _, cleaning = trace.cleaned(10)
    assert cleaning.rows == len(raw) and cleaning.duplicates_merged == int((counts - 1).sum())
    assert cleaning.entries_imputed == int(table.isna().sum().sum()) and cleaning.iterations == len(table)
    duplicates, imputed, iterations = ALIBABA_CLEANING[job]
    assert cleaning.duplicates_merged == duplicates and cleaning.iterations == iterations
    assert imputed is None or cleaning.entries_imputed == imputed
